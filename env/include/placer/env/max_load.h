// The max-load objective of Tarnawski et al. (NeurIPS 2020) on a Workload
// (graphs/workload.h), as their code computes it (throughput-dp/dp.cpp,
// computeLoadForResultOrg), so that one placement gets one number:
// - an accelerator's load is the latency of its nodes on an accelerator plus
//   the cost of every node whose output crosses into or out of it: a node u
//   with an out-edge to another device costs out_cost(u) once on its own
//   device and once on each other device that receives it (not per edge);
// - a CPU's load is the CPU latency of its nodes; CPUs pay no transfers;
// - the time per sample is the largest load (a pipeline runs at the pace of
//   its slowest stage).
// The paper's evaluator puts every CPU node into one group; placer keeps each
// CPU a device of its own, as the paper's DP does. Every published workload
// has one CPU, where the two agree.
#pragma once

#include <cstdint>
#include <vector>

#include "placer/graphs/workload.h"

namespace placer {

struct MaxLoadReport {
  double max_load = 0.0;
  std::vector<double> load;   // per device, accelerators first
  std::vector<double> bytes;  // per device: sizes of its nodes
  int32_t busiest = 0;        // a device whose load is max_load
  // Every accelerator holds at most cluster.accelerator_bytes and only nodes
  // supported on it. The paper's evaluator only warns about memory; its DP,
  // and placer's placers, keep to both.
  bool feasible = true;
};

// Throws PlacementError naming the node: a placement of the wrong length, a
// device the workload lacks, a colocation class split over devices.
void check_workload_placement(const Workload& w, const WorkloadPlacement& p);

// Checks, then evaluates.
MaxLoadReport max_load(const Workload& w, const WorkloadPlacement& p);

// The same objective for many placements of one workload (local search):
// the successor lists built once, no checks.
class MaxLoadEvaluator {
 public:
  explicit MaxLoadEvaluator(const Workload& w);
  // The max load of `p`; per-device loads into *load when given.
  double evaluate(const WorkloadPlacement& p, std::vector<double>* load = nullptr) const;
  // Accelerator bytes and support kept (see MaxLoadReport::feasible).
  bool feasible(const WorkloadPlacement& p) const;

 private:
  const Workload& w_;
  std::vector<int32_t> succ_begin_, succ_;  // CSR successor lists
};

}  // namespace placer
