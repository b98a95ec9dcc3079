// "Search within a budget": placers run in rounds, stochastic ones again with
// a new seed each round, until the sample or time budget is spent or the
// search is cancelled; the fastest simulated placement is kept. The service's
// optimize jobs and the refinement of `place` replies run through here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/graphs/measurement.h"

namespace placer {

struct SearchBudget {
  int64_t samples = 0;   // evaluations in all (0 = no limit)
  double seconds = 0.0;  // wall time (0 = no limit)
  // Set to stop; checked before every placer run, and handed to each run (PlaceContext::cancel), which ends
  // with its best so far. The time budget is handed to each run as its PlaceContext::stop_at.
  const std::atomic<bool>* cancel = nullptr;
};

struct SearchOptions {
  std::vector<std::string> methods;  // run in this order in each round
  SearchBudget budget;
  // Each placer run gets at most this share of the budget, so a cancel or a
  // spent budget is noticed within about one run.
  int64_t run_samples = 200;
  double run_seconds = 0.5;
  int64_t max_rounds = 0;  // 0 = until the budget is spent
  // Each run starts from the best so far (PlaceContext::start: local_search
  // anneals from it, and run_seconds ends it as well as run_samples).
  bool from_best = false;
};

// A placement the search starts from (e.g. the best baseline): only a faster one replaces it.
struct SearchCandidate {
  std::string method;
  Placement placement;
  StepResult result;  // simulated
};

// Reported after every placer run.
struct SearchProgress {
  const std::string& method;
  const Placement& placement;
  const StepResult& result;  // simulated
  bool improved;             // this placement is the new best
  int64_t samples;           // spent so far (a run counts its evaluations, at least 1)
  int64_t rounds;            // rounds that have run a placer
  double elapsed_s;
};

struct SearchResult {
  bool found = false;  // best holds an ok placement (the start's or a search's)
  SearchCandidate best;
  bool improved = false;  // best came from the search, not from the start
  int64_t samples = 0;
  int64_t rounds = 0;
  double elapsed_s = 0.0;
  bool cancelled = false;
};

// Searches with context's graph, cluster and env (its simulator scores every
// placement); round r runs stochastic placers (Placer::stochastic()) with
// seed context.seed + r, deterministic ones only in round 0. A placer that
// finds no feasible placement is skipped. The search ends when the budget
// is spent, when it is cancelled (the budget's cancel or the context's), at
// the context's stop_at, after max_rounds, or after a round in which no
// placer ran. Throws InputError for an unknown method name.
SearchResult search(const PlaceContext& context, const SearchOptions& options, const SearchCandidate* start = nullptr,
                    const std::function<void(const SearchProgress&)>& on_progress = {});

}  // namespace placer
