// A workload (graphs/workload.h) as the learned policies see a placement
// problem (features.h), private to agent/src: one unit per colocation class
// (the classes that local_search and ilp move), ordered by the class's first
// node in a topological order of the workload, so that the policy's
// decisions are exactly the splits the max-load placers consider. Unit
// costs are the nodes' latencies on each device and the transfer costs of
// the outputs that leave the unit, relative to an accelerator's fair share of
// the work; CPUs have no memory limit, as in the paper.
#pragma once

#include <cstdint>
#include <vector>

#include "features.h"
#include "placer/graphs/workload.h"

namespace placer {

struct MaxLoadUnits {
  PolicyInput input;                          // graph and cluster are null: no placer Graph here
  std::vector<std::vector<int32_t>> members;  // per unit, node indices ascending
  std::vector<double> bytes;                  // per unit, the sizes of its nodes
  std::vector<char> accelerator_ok;           // per unit: every node is supported on an accelerator

  // One device per node from one per unit, and back (the device of each unit's first node).
  WorkloadPlacement expand(const std::vector<int32_t>& unit_device) const;
  std::vector<int32_t> contract(const WorkloadPlacement& p) const;
  // 0 when every accelerator keeps to its memory and holds only supported
  // units; else the bytes over memory as a share of it, plus one per unit an
  // accelerator does not support.
  double excess(const Workload& w, const std::vector<int32_t>& unit_device) const;
};

// Throws InputError when the workload has more devices than the policies support.
MaxLoadUnits make_max_load_units(const Workload& w);

}  // namespace placer
