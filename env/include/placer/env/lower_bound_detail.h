#pragma once
// For tests only: the critical path with joins (env/src/lower_bound.cc) with a
// chosen cone size, and with the branch and bound's cuts on or off (off: every
// choice of every cone is tried), so that a test can check that the cuts never
// change the least. Production code calls lower_bound() (simulator.h).
#include <cstdint>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"

namespace placer::detail {

double joins_bound_for_tests(const Graph& graph, const Cluster& cluster, const CostModel& costs, int32_t cone,
                             bool prune);

}  // namespace placer::detail
