// "Run these placers and compare": every caller that puts several placers
// side by side (`placer baseline`, the service's fast path and `baselines`,
// the trainer's warm start and its final comparison) runs them through here.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/env/environment.h"

namespace placer {

// One placer's answer and how it scored in the context's environment.
struct Compared {
  std::string method;
  bool placed = false;  // false: `error` says why (NoFeasiblePlacement, or any error with catch_all)
  std::string error;
  PlaceResult result;          // placement, note and stats of the placer
  double seconds = 0.0;        // wall time of place()
  double score_seconds = 0.0;  // wall time of scoring the placement
  Evaluation evaluation;       // the placement's step (evaluation.result), and reward when scored by evaluate()

  const StepResult& step() const { return evaluation.result; }
  bool ok() const { return placed && evaluation.result.ok(); }
};

enum class CompareScoring {
  Simulate,  // env.simulate(): the simulator's figure, whatever the env's reward mode
  Evaluate,  // env.evaluate(): the env's reward mode (measured, hybrid, ...), reward included
};

struct CompareOptions {
  CompareScoring scoring = CompareScoring::Simulate;
  // NoFeasiblePlacement always becomes the entry's error; with catch_all any
  // std::exception does (a trainer's warm start outlives a failing method).
  bool catch_all = false;
  std::function<void(const std::string& method)> on_start;  // before each placer runs
  std::function<void(Compared& entry)> on_done;             // after each is placed and scored (or failed)
};

// Runs each method, in the given order, on the context (graph, cluster, env,
// seed, budgets, options). Throws InputError for an unknown method name.
// A cancel (context.cancel) ends it before the next placer: fewer entries.
std::vector<Compared> compare_placers(const std::vector<std::string>& methods, const PlaceContext& context,
                                      const CompareOptions& options = {});

// The index of the entry with the fastest ok step (the first of equals), -1 if none is ok.
int fastest(const std::vector<Compared>& entries);
// Entry indices by step: ok ones fastest first (stable), then the others in their order.
std::vector<int> ranking(const std::vector<Compared>& entries);

// "all" (every registered placer) or a comma-separated list of names; throws
// InputError for an unknown name or an empty list.
std::vector<std::string> parse_method_list(const std::string& list);

// A placer's own estimate of its placement's step time (its model), when its
// stats hold one: list schedulers' planned step (their placement replayed as
// the runtime dispatches, on their own model), dp's objective, ilp's
// planned step with its model's makespan and the problem it solved. seconds
// is NaN when there is none.
struct OwnEstimate {
  double seconds = NAN;
  std::string kind;  // what the estimate is
};
OwnEstimate own_estimate(const PlaceResult& result);

}  // namespace placer
