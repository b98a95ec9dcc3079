// Budgeted, cancellable search over placers (see search.h).
#include "placer/agent/search.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "placer/env/environment.h"
#include "placer/graphs/timing.h"

namespace placer {

namespace {

// One placer run's context: round r's seed, its share of the samples and time left, the search's cancel
// (the budget's, else the context's) and deadline (the earlier of the context's stop_at and the end of the
// time budget: a run's start candidates and annealing stop there), and with from_best the best so far as
// its start (res.best is not replaced while the run holds it).
PlaceContext run_context(const PlaceContext& context, const SearchOptions& options, int64_t round,
                         const SearchResult& res, Clock::time_point started) {
  const double elapsed_s = seconds_since(started);
  const SearchBudget& budget = options.budget;
  PlaceContext ctx = context;
  ctx.seed = context.seed + static_cast<uint64_t>(round);
  const int64_t left = budget.samples > 0 ? budget.samples - res.samples : options.run_samples;
  ctx.sample_budget = std::max<int64_t>(1, std::min(left, options.run_samples));
  const double time_left = budget.seconds > 0 ? budget.seconds - elapsed_s : options.run_seconds;
  ctx.time_limit_s = std::max(0.01, std::min(time_left, options.run_seconds));
  if (options.from_best && res.found) ctx.start = &res.best.placement;
  if (budget.cancel) ctx.cancel = budget.cancel;
  if (budget.seconds > 0) {
    const auto end =
        started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget.seconds));
    ctx.stop_at = ctx.stop_at ? std::min(*ctx.stop_at, end) : end;
  }
  return ctx;
}

// Whether the search ends before its next run: a cancel (the budget's or the context's: res.cancelled), the
// context's stop_at, or a spent sample or time budget.
bool search_ends(const PlaceContext& context, const SearchBudget& budget, Clock::time_point started,
                 SearchResult& res) {
  if ((budget.cancel && budget.cancel->load()) || (context.cancel && context.cancel->load())) res.cancelled = true;
  return res.cancelled || (context.stop_at && Clock::now() >= *context.stop_at) ||
         (budget.samples > 0 && res.samples >= budget.samples) ||
         (budget.seconds > 0 && seconds_since(started) >= budget.seconds);
}

}  // namespace

SearchResult search(const PlaceContext& context, const SearchOptions& options, const SearchCandidate* start,
                    const std::function<void(const SearchProgress&)>& on_progress) {
  std::vector<bool> stochastic;
  for (const auto& m : options.methods) stochastic.push_back(make_placer(m)->stochastic());  // checks the names
  const auto started = Clock::now();
  const SearchBudget& budget = options.budget;
  SearchResult res;
  if (start && start->result.ok()) {
    res.found = true;
    res.best = *start;
  }
  auto out_of_budget = [&] { return search_ends(context, budget, started, res); };
  for (int64_t round = 0; !out_of_budget() && (options.max_rounds <= 0 || round < options.max_rounds); ++round) {
    bool ran = false;
    for (size_t i = 0; i < options.methods.size(); ++i) {
      if (out_of_budget()) break;
      if (round > 0 && !stochastic[i]) continue;
      const std::string& method = options.methods[i];
      const PlaceContext ctx = run_context(context, options, round, res, started);
      PlaceResult placed;
      try {
        placed = make_placer(method)->place(ctx);
      } catch (const NoFeasiblePlacement&) {
        continue;  // this method cannot place the graph; others may
      }
      const StepResult r = ctx.env->simulate(placed.placement);
      ran = true;
      const bool improved = r.ok() && (!res.found || r.step_s < res.best.result.step_s);
      if (improved) {
        res.found = true;
        res.improved = true;
        res.best = {method, placed.placement, r};
      }
      res.samples += std::max<int64_t>(1, placed.evaluations);
      res.rounds = round + 1;
      res.elapsed_s = seconds_since(started);
      if (on_progress)
        on_progress(SearchProgress{method, placed.placement, r, improved, res.samples, res.rounds, res.elapsed_s});
    }
    if (!ran) break;  // only deterministic methods: one round is all there is
  }
  res.elapsed_s = seconds_since(started);
  return res;
}

}  // namespace placer
