// Event-driven simulation of one training step of a placed graph.
#pragma once

#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"

namespace placer {

struct SimOptions {
  bool track_memory = true;  // peak memory per device and OOM
};

// Same rule as the runtime's executor: one op at a time per device in ready
// order (lowest op id first among ready ops), per-link transfer channels with
// alpha-beta cost, compute and transfers overlap. Deterministic.
StepResult simulate(const Graph& graph, const Placement& placement, const Cluster& cluster,
                    const CostModel& costs, const SimOptions& options = {},
                    std::vector<TimelineEvent>* timeline = nullptr);

// A lower bound on the step time of any placement of graph on cluster:
// max(critical path with every op on its fastest device and free transfers,
// total work / devices, LP relaxation for heterogeneous devices).
double lower_bound(const Graph& graph, const Cluster& cluster, const CostModel& costs);

}  // namespace placer
