// learned for the max-load objective (agent/max_load.h): a gnn policy over
// the workload's colocation classes, warm-started by cloning the best cheap
// split and trained by REINFORCE on -max_load (agent/src/learned_max_load.cc).
// It needs LibTorch, so it lives in placer_agent, not in the LibTorch-free
// placer_agent_max_load that place_max_load() belongs to.
#pragma once

#include <string>
#include <vector>

#include "placer/agent/max_load.h"

namespace placer {

// Its warm start: options.warm when given (checked), else dp's split
// (within options.max_ideals); single's when it fits and is better. Trains
// until options.samples placements were sampled or options.time_limit_s
// (warm start included) has passed. The result is the best split that keeps
// to memory and support, the warm start's included (found_by names it).
// Throws InputError for samples < 32, a time limit <= 0, more than 16 devices.
MaxLoadResult max_load_learned(const Workload& w, const MaxLoadOptions& options);
// The same checks of its options alone (InputError), before anything runs.
void check_max_load_learned_options(const Workload& w, const MaxLoadOptions& options);

// max_load_methods() and learned; place_max_load() for them all.
const std::vector<std::string>& max_load_methods_with_learned();
MaxLoadResult place_max_load_or_learned(const Workload& w, const std::string& method, const MaxLoadOptions& options);

}  // namespace placer
