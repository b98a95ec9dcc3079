// Where the annealing searches start (internal to agent/src): local_search
// and guided_search start from the same placement and move the same groups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placers_common.h"

namespace placer {

// One device per group expanded to the op-level placement.
Placement group_placement(const UnitProblem& p, const std::vector<int32_t>& group_device);

struct AnnealingStart {
  std::vector<int32_t> group_device;
  std::string method;
  int32_t simulated = 0;  // candidate placements simulated to choose it
};

// The placers the annealing searches start from (and offload_updates builds on):
// m_etf, heft, dp, expert.
const std::vector<std::string>& start_methods();

// The fastest under the simulator of m_etf (its best replayed candidate),
// heft, dp and expert (a placer that cannot place this graph drops out);
// without any, every group on device 0, repaired to fit memory.
AnnealingStart best_start(const PlaceContext& ctx, const UnitProblem& p);

// A given placement (PlaceContext::start) as the start: each group on its first op's device.
AnnealingStart given_start(const UnitProblem& p, const Placement& placement);

// Groups that do work are the ones worth moving (all of them if none does).
std::vector<int32_t> movable_groups(const UnitProblem& p);

}  // namespace placer
