// Event-driven simulation of one training step of a placed graph.
#pragma once

#include <cstdint>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/exec_plan.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"

namespace placer {

struct SimOptions {
  bool track_memory = true;  // peak memory per device and OOM
};

// Per-graph structures the simulator needs, built once (O(ops + edges)) and
// reused across placements: the execution rules the runtime uses too.
// Holds a pointer to the graph, which must outlive it.
using SimContext = ExecRules;

// Same rule, with the per-graph part prepared once. Throws PlacementError
// if the placement or the cost model does not fit the graph and cluster.
StepResult simulate(const SimContext& context, const Placement& placement, const Cluster& cluster,
                    const CostModel& costs, const SimOptions& options = {},
                    std::vector<TimelineEvent>* timeline = nullptr);

// The parts of the lower bound, for reports.
struct LowerBound {
  double critical_path_s = 0.0;  // every op on its fastest device, transfers free
  // The same, where an op's inputs (and its ancestors) made on its own device
  // ran there one at a time and the others arrive after a transfer
  // (env/src/lower_bound.cc).
  double joins_s = 0.0;
  double average_work_s = 0.0;  // sum of fastest op times / devices
  double lp_s = 0.0;            // LP relaxation (devices of different speeds); 0 if all alike
  // A co-location group's work on one device, one op at a time, with the
  // longest path before its first member and the shortest after a member.
  double group_s = 0.0;
  double value() const;  // the max of the five
};
LowerBound lower_bound_parts(const Graph& graph, const Cluster& cluster, const CostModel& costs);

// Same rule as the runtime's executor: one op at a time per device in ready
// order (lowest op id first among ready ops), per-link transfer channels with
// alpha-beta cost, compute and transfers overlap. Deterministic.
StepResult simulate(const Graph& graph, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options = {}, std::vector<TimelineEvent>* timeline = nullptr);

// A lower bound on the step time of any placement of graph on cluster:
// max(critical path with every op on its fastest device and free transfers,
// the same with joins (inputs and ancestors on one device run in series,
// others pay a transfer), total work / devices, LP relaxation for heterogeneous devices, co-location
// group work in series with what must precede and follow it).
double lower_bound(const Graph& graph, const Cluster& cluster, const CostModel& costs);

}  // namespace placer
