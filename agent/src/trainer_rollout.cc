// A batch's sampled placements scored: repeats redrawn with more logit noise, rewards, the task's best
// and elites, applied only once the whole batch is evaluated (the rest of the update is trainer.cc).
#include <algorithm>
#include <cmath>
#include <optional>

#include "placer/env/environment.h"
#include "placer/env/remote.h"
#include "policy.h"
#include "trainer.h"
#include "trainer_impl.h"

namespace placer {

bool SampledSet::insert(const std::vector<int32_t>& units) {
  const auto [it, fresh] = set_.insert(units);
  if (!fresh) return false;
  order_.push_back(&*it);
  if (order_.size() > cap_) {
    set_.erase(*order_.front());
    order_.pop_front();
    ++dropped_;
  }
  return true;
}

void SampledSet::clear() {
  order_.clear();
  set_.clear();
  dropped_ = 0;
}

// A budget counts sampled placements; a repeat tells the search nothing new
// (the environment's cache answers it for free). A collapsed policy (entropy
// near zero after cloning its elites) repeats most of a batch. The policy
// gradient keeps the batch as sampled (repeats included: on-policy, at no
// cost), and each repeat's evaluation goes to a new placement instead: drawn
// from the same policy with more logit noise at each try (0.25, 1, 4, 16: near
// its choices first, then further). The new placements count toward the best
// and the elites, not the gradient. Returns their unit devices, and in *slots
// the batch row each one stands in for (its sample number: a new best found by
// a redraw is credited to the repeat it replaced, not to batch row 0, 1, ...).
std::vector<std::vector<int32_t>> Trainer::redraw_repeats(Task& t, const Rollout& r, SampleOptions so,
                                                          std::vector<int32_t>* slots) {
  int redraws = c_.optimizer.distinct_redraws;
  if (redraws < 0) redraws = c_.reward.mode == RewardMode::Measured || tasks_.size() > 1 ? 0 : 4;
  // Recorded as sampled once evaluated (score_batch): `batch` holds this batch's until then.
  std::unordered_set<std::vector<int32_t>, UnitsHash> batch;
  auto fresh_row = [&](const std::vector<int32_t>& units) {
    return !t.sampled.contains(units) && batch.insert(units).second;
  };
  std::vector<int32_t> repeated;
  for (int32_t b = 0; b < r.batch; ++b)
    if (!fresh_row(r.unit_device[b]) && b >= so.greedy_rows) repeated.push_back(b);
  int32_t repeats = static_cast<int32_t>(repeated.size());
  std::vector<std::vector<int32_t>> fresh;
  so.greedy_rows = 0;
  so.noise = std::max(so.noise, 0.25);
  for (int i = 0; i < redraws && repeats > 0; ++i, so.noise *= 4)
    for (std::vector<int32_t>& units : policy_->sample(t.problem, repeats, so, rng_).unit_device)
      if (repeats > 0 && fresh_row(units)) {
        slots->push_back(repeated[fresh.size()]);
        fresh.push_back(std::move(units));
        --repeats;
      }
  return fresh;
}

namespace {

// The rows (unit devices) as placements, evaluated: nothing of the task changes (apply_scores records them).
ScoredRows evaluate_rows(const Task& t, const std::vector<std::vector<int32_t>>& rows) {
  ScoredRows s;
  s.placements.reserve(rows.size());
  for (const auto& row : rows) s.placements.push_back(t.problem.expand(row));
  s.evals = t.env->evaluate_batch(s.placements);
  return s;
}

}  // namespace

// `slots` (redrawn rows): the batch row each row stands in for; else row b is batch row b.
std::vector<double> Trainer::apply_scores(Task& t, const std::vector<std::vector<int32_t>>& rows, const ScoredRows& s,
                                          double* step_sum, const std::vector<int32_t>* slots) {
  const int32_t K = static_cast<int32_t>(rows.size());
  std::vector<double> reward(K);
  for (int32_t b = 0; b < K; ++b) {
    const Evaluation& e = s.evals[b];
    reward[b] = e.reward;
    const int64_t at = samples_ + (slots ? (*slots)[b] : b) + 1;
    if (e.result.ok()) offer_elite(t, reward[b], rows[b], at);
    *step_sum += e.step_s;
    // A failed placement (out of memory) is never the best, however small its penalty: every sample of a
    // run failing made the penalty the policy's "step", and its placement the result.
    if (e.result.ok() && reward[b] > t.best_reward) {
      t.best_reward = reward[b];
      t.best_step_s = e.step_s;
      t.best_measured = e.measured;
      t.best = s.placements[b];
      t.best_at = at;
    }
  }
  return reward;
}

// A batch given up at a cancel or shutdown drops its update (update_until_budget): nothing of it stays. The
// batch and its redraws are all evaluated before any is applied, so a cancel (EvaluationCancelled) in either
// leaves the task's record, best and elites as they were.
std::vector<double> Trainer::score_batch(Task& t, const Rollout& r, const SampleOptions& so, double* step_sum) {
  std::vector<int32_t> fresh_slots;
  const std::vector<std::vector<int32_t>> fresh = redraw_repeats(t, r, so, &fresh_slots);
  const ScoredRows batch = evaluate_rows(t, r.unit_device);
  const ScoredRows redrawn = fresh.empty() ? ScoredRows{} : evaluate_rows(t, fresh);
  std::vector<double> reward = apply_scores(t, r.unit_device, batch, step_sum);
  double fresh_sum = 0;
  apply_scores(t, fresh, redrawn, &fresh_sum, &fresh_slots);
  for (const std::vector<int32_t>& units : r.unit_device) t.sampled.insert(units);
  for (const std::vector<int32_t>& units : fresh) t.sampled.insert(units);
  return reward;
}

}  // namespace placer
