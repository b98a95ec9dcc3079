// The placement environment: one interface the learned placer and the
// baselines both use to turn a placement into a result and a reward. It
// validates placements and hands them to the evaluator its options choose
// (env/evaluator.h), behind a cache; the graph, the cluster and what is derived
// from them are a PreparedProblem, shared by pointer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/env/evaluator.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"
#include "placer/runtime/runtime.h"

namespace placer {

class RemoteEvaluator;  // env/remote.h

// How a placement is scored: the part of the options a trainer's config
// (agent/train.h RewardConfig) holds as it is.
struct RewardSettings {
  RewardMode mode = RewardMode::Simulated;
  RewardOptions reward;
  MeasureOptions measure;      // the measurement protocol of measured and hybrid rewards (runtime.h)
  int hybrid_measure_top = 1;  // hybrid: measure the best N of each batch and every new best
  // Measured and hybrid: each measured batch beside a reference placement, and
  // a placement's step the reference's times its ratio to it, round by round
  // (the Hodges-Lehmann estimate; MeasuredEvaluator). Not with remote evaluation (InputError).
  bool paired = false;
  // What a placement is judged by (graphs/pipeline.h): one training step, or
  // one mini-batch of pipeline.microbatches micro-batches under pipeline.schedule.
  Objective objective = Objective::Step;
  PipelineSpec pipeline;
};

struct EnvOptions : RewardSettings {
  int threads = 0;  // simulated batch evaluation threads (0 = cores)
  // Calibrates the cost model when given; with a PreparedProblem, give the
  // profile to PreparedProblem::make instead.
  std::optional<Profile> profile;
  // Evaluates uncached placements elsewhere (env/remote.h): every one in
  // simulated and measured mode; in hybrid mode only the measurements (the
  // simulation stays here, where the calibration lives). Null = here.
  std::shared_ptr<RemoteEvaluator> remote;
  // Set to give up a remote batch waiting for workers (a trainer's cancel): the
  // batch throws EvaluationCancelled (env/remote.h). Null = never.
  const std::atomic<bool>* cancel = nullptr;
};

class Environment {
 public:
  Environment(Graph graph, Cluster cluster, EnvOptions options = {});
  // Shares `problem` (built once, e.g. cached by the service); options.profile
  // must be empty (InputError): the problem carries the profile.
  explicit Environment(std::shared_ptr<const PreparedProblem> problem, EnvOptions options = {});
  ~Environment();

  // The problem placements are of: its graph is graph(), the training graph
  // placers and policies place, under either objective.
  const std::shared_ptr<const PreparedProblem>& problem() const;
  // The problem evaluations run: problem(), or under the pipeline objective
  // problem()->pipelined(options().pipeline), the unrolled mini-batch (the
  // environment expands each placement to it).
  const std::shared_ptr<const PreparedProblem>& evaluated_problem() const;
  const Graph& graph() const;
  const Cluster& cluster() const;
  // graph()'s costs (hybrid step objective: as recalibrated so far), held:
  // a later recalibration does not change them.
  std::shared_ptr<const CostModel> costs() const;
  const EnvOptions& options() const;
  // Of the objective: one step's, or under pipeline the unrolled mini-batch's.
  double lower_bound() const;

  Evaluation evaluate(const Placement& placement);
  std::vector<Evaluation> evaluate_batch(const std::vector<Placement>& placements);
  // Measures the placements side by side on this machine's devices, now,
  // interleaved with the protocol of options().measure: the fair comparison
  // for a final table. Unless `fresh`, a placement this environment measured
  // before keeps its samples (they narrow its interval). Throws InputError
  // when the cluster's devices cannot run here. max_steps > 0: at most that
  // many steps per placement instead of options().measure.max_steps; target > 0:
  // until each median's 95% interval is within that share of it instead of
  // options().measure.target_halfwidth.
  std::vector<StepResult> measure_side_by_side(const std::vector<Placement>& placements, bool fresh = false,
                                               int max_steps = 0, double target = 0);
  // The lowest cross-core probe reading of what this environment measured so
  // far (training's measurements and earlier side-by-side ones, each one's
  // median); 0 when nothing was measured or the probe was not read.
  double quietest_core_rtt_s() const;
  // Simulated result regardless of mode (for cheap ranking).
  StepResult simulate(const Placement& placement) const;
  double reward_of(const StepResult& result) const;

  using Stats = EvalStats;
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
