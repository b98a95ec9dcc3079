// The placement environment: one interface the learned placer and the
// baselines both use to turn a placement into a result and a reward.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"

namespace placer {

enum class RewardMode : uint8_t { Measured, Simulated, Hybrid };
const char* reward_mode_name(RewardMode mode);
RewardMode parse_reward_mode(const std::string& name);  // throws InputError

struct RewardOptions {
  // reward = -pow(step_s, exponent); 0.5 is the papers' -sqrt(seconds).
  double exponent = 0.5;
  // A failed/OOM step counts as failure_penalty_s plus, for OOM, the overflow
  // ratio times overflow_penalty_s, so less overflow still ranks better.
  double failure_penalty_s = 100.0;
  double overflow_penalty_s = 100.0;
};

class RemoteEvaluator;  // env/remote.h

struct EnvOptions {
  RewardMode mode = RewardMode::Simulated;
  RewardOptions reward;
  int measure_warmup = 2;
  int measure_steps = 5;
  int hybrid_measure_top = 1;      // hybrid: measure the best N of each batch and every new best
  int threads = 0;                 // simulated batch evaluation threads (0 = cores)
  std::optional<Profile> profile;  // calibrates the cost model when given
  // Evaluates uncached placements elsewhere (env/remote.h): every one in
  // simulated and measured mode; in hybrid mode only the measurements (the
  // simulation stays here, where the calibration lives). Null = here.
  std::shared_ptr<RemoteEvaluator> remote;
};

struct Evaluation {
  StepResult result;
  double reward = 0.0;
  bool cached = false;
  bool measured = false;  // result came from the runtime
};

class Environment {
 public:
  Environment(Graph graph, Cluster cluster, EnvOptions options = {});
  ~Environment();

  const Graph& graph() const;
  const Cluster& cluster() const;
  const CostModel& costs() const;
  const EnvOptions& options() const;
  double lower_bound() const;

  Evaluation evaluate(const Placement& placement);
  std::vector<Evaluation> evaluate_batch(const std::vector<Placement>& placements);
  // Simulated result regardless of mode (for cheap ranking).
  StepResult simulate(const Placement& placement) const;
  double reward_of(const StepResult& result) const;

  struct Stats {
    int64_t evaluations = 0;
    int64_t cache_hits = 0;
    int64_t measurements = 0;
    int64_t remote = 0;        // evaluations (simulations or measurements) done by options.remote
    int64_t calibrations = 0;  // hybrid: times the simulator was refit to measurements
    double step_scale = 1.0;   // hybrid: the current measured / simulated step factor
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
