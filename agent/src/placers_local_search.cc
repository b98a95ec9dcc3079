// Simulated annealing over co-location groups with the environment's reward
// (in measured and hybrid mode the calibrated simulator's: search_score), given the
// same evaluation budget (PlaceContext::sample_budget) as the learned placer; the
// start's candidates simulated count in it and in the result's `evaluations`.
// Starts from the fastest of m_etf, heft, dp and expert (or PlaceContext::start);
// moves one group to another device or swaps two groups, within device memory.
// Its best is the best by better_score: a feasible placement beats a failed one.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <utility>

#include "local_search_start.h"
#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer {
namespace {

// Simulated annealing over group devices, within device memory.
class Annealing {
 public:
  Annealing(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start)
      : ctx_(ctx), p_(p), rng_(ctx.seed), movable_(movable_groups(p)), cur_(std::move(start)), used_(p.k, 0) {
    best_ = cur_;
    best_score_ = score(cur_);
    cur_r_ = start_r_ = best_score_.reward;
    for (int32_t g = 0; g < p.groups(); ++g) used_[cur_[g]] += p.group_mem[g];
  }

  // Runs until the schedule ends (its budget of evaluations, the start's
  // score included; a given start's time limit; a cancel or stop_at). The
  // initial temperature is a fraction of the start's reward: a move that costs
  // that fraction of the reward is accepted with probability 1/e. Proposals
  // that break the memory rule are not evaluations: after kMaxStalls of them in
  // a row the run ends (where no move fits, it spun forever).
  void run(const AnnealingSchedule& schedule) {
    constexpr int64_t kMaxStalls = 100'000;
    const double t0 = std::max(1e-12, option_double(ctx_, "temperature", 0.001, 0.0) * std::fabs(cur_r_));
    const double t_end = t0 * 1e-3;
    int64_t stalls = 0;
    while (p_.k > 1 && stalls < kMaxStalls) {
      const std::optional<double> frac = schedule.progress(evaluations_);
      if (!frac) break;
      const double temp = t0 * std::pow(t_end / t0, *frac);
      const std::vector<std::pair<int32_t, int32_t>> changes = propose();
      if (changes.empty()) {
        ++stalls;
        continue;
      }
      stalls = 0;
      try_move(changes, temp);
    }
  }

  const std::vector<int32_t>& best() const { return best_; }
  double best_reward() const { return best_score_.reward; }
  double start_reward() const { return start_r_; }
  int64_t evaluations() const { return evaluations_; }
  int64_t accepted() const { return accepted_; }

 private:
  SearchScore score(const std::vector<int32_t>& gd) {
    ++evaluations_;
    return search_score(*ctx_.env, group_placement(p_, gd));
  }

  // A random move as (group, new device) pairs: one group to another device
  // (70%) or two groups on different devices swapped; none when it would
  // overfill a device or the two share one.
  std::vector<std::pair<int32_t, int32_t>> propose() {
    const int32_t a = movable_[std::uniform_int_distribution<size_t>(0, movable_.size() - 1)(rng_)];
    if (unit_(rng_) < 0.7) {
      int32_t d = std::uniform_int_distribution<int32_t>(0, p_.k - 2)(rng_);
      if (d >= cur_[a]) ++d;
      if (used_[d] + p_.group_mem[a] > p_.capacity[d]) return {};
      return {{a, d}};
    }
    const int32_t b = movable_[std::uniform_int_distribution<size_t>(0, movable_.size() - 1)(rng_)];
    if (cur_[a] == cur_[b]) return {};
    const int32_t da = cur_[a], db = cur_[b];
    if (used_[db] - p_.group_mem[b] + p_.group_mem[a] > p_.capacity[db] ||
        used_[da] - p_.group_mem[a] + p_.group_mem[b] > p_.capacity[da])
      return {};
    return {{a, db}, {b, da}};
  }

  // Evaluates the move; keeps it if better, or by the Metropolis rule at temp.
  void try_move(const std::vector<std::pair<int32_t, int32_t>>& changes, double temp) {
    std::vector<int32_t> old;
    for (auto [g, d] : changes) old.push_back(cur_[g]), cur_[g] = d;
    const SearchScore scored = score(cur_);
    const double r = scored.reward;
    if (r >= cur_r_ || unit_(rng_) < std::exp((r - cur_r_) / temp)) {
      cur_r_ = r;
      ++accepted_;
      for (size_t i = 0; i < changes.size(); ++i) {
        used_[old[i]] -= p_.group_mem[changes[i].first];
        used_[changes[i].second] += p_.group_mem[changes[i].first];
      }
      if (better_score(scored, best_score_)) best_score_ = scored, best_ = cur_;  // a feasible best stays
    } else {
      for (size_t i = 0; i < changes.size(); ++i) cur_[changes[i].first] = old[i];
    }
  }

  const PlaceContext& ctx_;
  const UnitProblem& p_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  const std::vector<int32_t> movable_;
  std::vector<int32_t> cur_, best_;
  std::vector<int64_t> used_;
  SearchScore best_score_;
  double cur_r_ = 0.0, start_r_ = 0.0;
  int64_t evaluations_ = 0, accepted_ = 0;
};

class LocalSearchPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "local_search"; }
  std::vector<std::string> option_keys() const override { return {"temperature"}; }
  bool stochastic() const override { return true; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const int64_t budget = std::max<int64_t>(1, ctx.sample_budget);
    const AnnealingStart start = annealing_start(ctx, p, budget);
    if (budget <= start.simulated) return start_as_answer(ctx, p, start, name(), started);
    Annealing annealing(ctx, p, start.group_device);
    annealing.run(AnnealingSchedule(ctx, started, budget - start.simulated));
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "local_search: simulated annealing from %s, %lld evaluations, %lld accepted, reward %.6g -> %.6g",
                  start.name().c_str(), static_cast<long long>(annealing.evaluations()),
                  static_cast<long long>(annealing.accepted()), annealing.start_reward(), annealing.best_reward());
    PlaceResult out = finish(ctx, expand_groups(p, annealing.best()), name(), started, buf);
    out.evaluations = start.simulated + annealing.evaluations();
    out.stats["best_reward"] = annealing.best_reward();
    out.stats["start_reward"] = annealing.start_reward();
    out.stats["start_candidates"] = start.simulated;
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_local_search() { return std::make_unique<LocalSearchPlacer>(); }

}  // namespace placer
