// The annealing core of the searches (see annealer.h).
#include "annealer.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "placer/env/environment.h"

namespace placer {

Annealer::Annealer(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start, double temperature)
    : ctx_(ctx),
      p_(p),
      rng_(ctx.seed),
      movable_(movable_groups(p)),
      cur_(std::move(start)),
      used_(p.k, 0),
      temperature_(temperature) {
  for (int32_t g = 0; g < p.groups(); ++g) used_[cur_[g]] += p.group_mem[g];
}

void Annealer::run(const AnnealingSchedule& schedule) {
  constexpr int64_t kMaxStalls = 100'000;
  best_ = cur_;
  best_score_ = score(cur_);
  cur_r_ = start_r_ = best_score_.reward;
  t0_ = std::max(1e-12, temperature_ * std::fabs(cur_r_));
  const double t_end = t0_ * 1e-3;
  int64_t stalls = 0;
  while (p_.k > 1 && stalls < kMaxStalls) {
    const std::optional<double> frac = schedule.progress(evaluations_);
    if (!frac) break;
    const double temp = t0_ * std::pow(t_end / t0_, *frac);
    const GroupMove move = propose();
    if (move.empty()) {
      ++stalls;
      continue;
    }
    stalls = 0;
    try_move(move, temp);
  }
}

int32_t Annealer::random_group() {
  return movable_[std::uniform_int_distribution<size_t>(0, movable_.size() - 1)(rng_)];
}

SearchScore Annealer::score(const std::vector<int32_t>& group_device) {
  ++evaluations_;
  return search_score(*ctx_.env, group_placement(p_, group_device));
}

void Annealer::try_move(const GroupMove& move, double temp) {
  std::vector<int32_t> old;
  for (auto [g, d] : move) old.push_back(cur_[g]), cur_[g] = d;
  const SearchScore scored = score(cur_);
  const double delta = scored.reward - cur_r_;
  if (delta >= 0 || uniform() < std::exp(delta / temp)) {
    cur_r_ = scored.reward;
    ++accepted_;
    for (size_t i = 0; i < move.size(); ++i) {
      used_[old[i]] -= p_.group_mem[move[i].first];
      used_[move[i].second] += p_.group_mem[move[i].first];
    }
    if (better_score(scored, best_score_)) best_score_ = scored, best_ = cur_;  // a feasible best stays
  } else {
    for (size_t i = 0; i < move.size(); ++i) cur_[move[i].first] = old[i];
  }
  evaluated(move, delta);
}

PlaceResult anneal(const PlaceContext& ctx, const UnitProblem& p, const std::string& method, Clock::time_point started,
                   const std::function<std::unique_ptr<Annealer>(std::vector<int32_t>)>& make) {
  const int64_t budget = std::max<int64_t>(1, ctx.sample_budget);
  const AnnealingStart start = annealing_start(ctx, p, budget);
  if (budget <= start.simulated) return start_as_answer(ctx, p, start, method, started);
  const std::unique_ptr<Annealer> annealer = make(start.group_device);
  annealer->run(AnnealingSchedule(ctx, started, budget - start.simulated));
  PlaceResult out = finish(ctx, expand_groups(p, annealer->best()), method, started, annealer->note(start));
  out.evaluations = start.simulated + annealer->evaluations();
  out.stats["best_reward"] = annealer->best_reward();
  out.stats["start_reward"] = annealer->start_reward();
  out.stats["start_candidates"] = start.simulated;
  return out;
}

}  // namespace placer
