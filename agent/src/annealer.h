// The annealing core of the searches (internal to agent/src): local_search and
// guided_search anneal alike (start, temperature schedule, Metropolis rule,
// best kept, evaluations counted) and differ in their moves alone, which each
// draws in its own subclass of Annealer, within device memory by its own rule
// (used() is each device's bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "local_search_start.h"
#include "placers_common.h"

namespace placer {

// A move: (group, new device) pairs.
using GroupMove = std::vector<std::pair<int32_t, int32_t>>;

// Simulated annealing over group devices, within device memory, scored by
// search_score; its best is the best by better_score (a feasible placement
// beats a failed one). A search derives from it with its proposals.
class Annealer {
 public:
  // `temperature`: the initial temperature as a fraction of the start's reward (a move that costs that
  // fraction of the reward is accepted with probability 1/e); it falls to a thousandth of that.
  Annealer(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start, double temperature);
  virtual ~Annealer() = default;

  // Scores the start, then anneals until the schedule ends (its budget of evaluations, the start's score
  // included; a given start's time limit; a cancel or stop_at). Empty proposals (the memory rule broken) are
  // not evaluations: after 100,000 of them in a row the run ends (where no move fits, it spun forever).
  void run(const AnnealingSchedule& schedule);

  const std::vector<int32_t>& best() const { return best_; }
  double best_reward() const { return best_score_.reward; }
  double start_reward() const { return start_r_; }
  int64_t evaluations() const { return evaluations_; }
  int64_t accepted() const { return accepted_; }
  // The result's note, after the run from `start`.
  virtual std::string note(const AnnealingStart& start) const = 0;

 protected:
  // A random move; empty when it would overfill a device or moves nothing (a stall, not an evaluation).
  virtual GroupMove propose() = 0;
  // After each evaluated move, kept or not: its reward change over the current placement's.
  virtual void evaluated(const GroupMove& /*move*/, double /*delta*/) {}

  const UnitProblem& problem() const { return p_; }
  const std::vector<int32_t>& current() const { return cur_; }  // each group's device
  const std::vector<int64_t>& used() const { return used_; }    // each device's bytes under current()
  std::mt19937_64& rng() { return rng_; }
  double uniform() { return unit_(rng_); }  // in [0, 1)
  int32_t random_group();                   // a movable group, uniformly
  double initial_temperature() const { return t0_; }

 private:
  SearchScore score(const std::vector<int32_t>& group_device);
  // Evaluates the move; keeps it if better, or by the Metropolis rule at temp.
  void try_move(const GroupMove& move, double temp);

  const PlaceContext& ctx_;
  const UnitProblem& p_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  const std::vector<int32_t> movable_;
  std::vector<int32_t> cur_, best_;
  std::vector<int64_t> used_;
  SearchScore best_score_;
  double temperature_ = 0.0, cur_r_ = 0.0, start_r_ = 0.0, t0_ = 1e-12;
  int64_t evaluations_ = 0, accepted_ = 0;
};

// An annealing search's place_units: the start (annealing_start within the context's sample_budget, its
// candidates counted in it), then the annealer `make` builds from the start's group devices for the rest of the
// budget; the answer is its best with its note, and `evaluations` counts the start's candidates too.
PlaceResult anneal(const PlaceContext& ctx, const UnitProblem& p, const std::string& method, Clock::time_point started,
                   const std::function<std::unique_ptr<Annealer>(std::vector<int32_t>)>& make);

}  // namespace placer
