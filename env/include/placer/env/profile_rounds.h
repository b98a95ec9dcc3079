// Several rounds of `Runtime::profile` on one graph combined into one profile
// (`placer fidelity` profiles once per round).
#pragma once

#include <vector>

#include "placer/graphs/profile.h"

namespace placer {

// Keeps, per op and link, the fastest of the rounds' profiles: `kept` becomes
// `p` when `first`, else each op's, link's, overhead's and CPU device step's
// minimum with `p`'s (devices matched by name); the GPU step with its fitted
// scale and overhead, and the mixed step with its probe reading, each of the
// round whose step was the fastest. The minimum of noisy medians, biased low:
// fidelity reports it beside the mean.
void merge_profile_minimum(Profile& kept, const Profile& p, bool first);

// The rounds' profiles averaged: each op's seconds (and contended seconds),
// each link's alpha and time per byte, the overheads, the GPU step's fit and
// the mixed step, each over the rounds that measured it (0, or < 0 where the
// field says so: not measured); the structure (ops, links, devices) of the
// first round. The CPU device steps: the first device's mean, each other's as
// the median over the rounds of its ratio to the first (robust to one round in
// a slow spell). What one profile estimates; fidelity calibrates on it.
// Throws InputError for no rounds.
Profile mean_profile(const std::vector<Profile>& rounds);

}  // namespace placer
