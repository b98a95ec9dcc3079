// Placers for the max-load objective (env/max_load.h) on a Workload
// (graphs/workload.h), the NeurIPS 2020 yardstick:
// - dp: the optimum over contiguous splits, as the paper's DP finds it (the
//   same contraction of the workload, the same chains of ideals);
// - ilp: a mixed-integer program over every split of the colocation classes
//   (CBC), warm-started, within a time limit;
// - local_search: moves of one colocation class at a time, from the warm
//   start and from random starts, within a time limit and, when given, an
//   evaluation budget (MaxLoadOptions::evaluations);
// - single: every node on one accelerator (the paper's one-device figure);
// - learned (agent/max_load_learned.h, in placer_agent: it needs LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placer/graphs/workload.h"

namespace placer {

struct MaxLoadOptions {
  uint64_t seed = 0;
  double time_limit_s = 60.0;    // ilp and local_search
  int64_t max_ideals = 200'000;  // dp gives up above this many ideals (the paper's code: 60,000)
  int64_t samples = 2000;        // learned (agent/max_load_learned.h): placements the policy may sample
  int64_t evaluations = 0;       // local_search: max-load evaluations it may spend (0: its time limit alone)
  // ilp and local_search start from this placement when it is given (e.g. dp's).
  WorkloadPlacement warm;
  std::string warm_from;  // the method that found `warm` (learned's found_by names it)
};

struct MaxLoadResult {
  std::string method;
  WorkloadPlacement placement;  // empty: the method found none (see note)
  double max_load = 0.0;        // max_load() of the placement, in the workload's time unit
  double seconds = 0.0;         // the method's run time
  bool optimal = false;         // proven optimal over its search space (dp: contiguous splits)
  double bound = 0.0;           // ilp: a lower bound on every split's max load; dp: its own optimum value
  int64_t ideals = 0;           // dp: ideals of the contracted forward order
  std::string found_by;         // learned: "policy", or the warm start's method when the policy found nothing better
  double warm_max_load = 0.0;   // learned: its warm start's max load (0: none fits)
  std::string note;
};

const std::vector<std::string>& max_load_methods();  // dp, local_search, ilp, single
// Throws InputError for an unknown method, naming the known ones.
MaxLoadResult place_max_load(const Workload& w, const std::string& method, const MaxLoadOptions& options);

}  // namespace placer
