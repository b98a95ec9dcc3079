// The environment: placements in, results and rewards out. It validates, and
// leaves the work to an evaluator stack chosen by the options (env/evaluator.h):
// a cache over a simulated, measured or hybrid evaluator, remote or local.
#include "placer/env/environment.h"

#include <cmath>
#include <thread>

#include "placer/env/remote.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

void check_options(const EnvOptions& options) {
  if (options.reward.exponent <= 0 || !std::isfinite(options.reward.exponent))
    throw InputError("reward.exponent must be > 0, got " + std::to_string(options.reward.exponent));
  if (options.reward.failure_penalty_s < 0 || options.reward.overflow_penalty_s < 0)
    throw InputError("reward penalties must be >= 0");
  validate(options.measure);
  if (options.hybrid_measure_top < 0) throw InputError("hybrid_measure_top must be >= 0");
  if (options.paired && options.remote && options.mode != RewardMode::Simulated)
    throw InputError(
        "reward.paired: pairing with a reference placement needs the measurements made here, not by remote workers");
}

// What measures: the runtime here (also kept in *local), or options.remote.
std::unique_ptr<Evaluator> make_measurer(const std::shared_ptr<const PreparedProblem>& problem, const EnvOptions& o,
                                         MeasuredEvaluator** local) {
  if (!o.remote) {
    auto m = std::make_unique<MeasuredEvaluator>(problem, o.reward, o.measure, o.paired);
    *local = m.get();
    return m;
  }
  RemoteSettings settings;
  settings.mode = RewardMode::Measured;
  settings.measure = o.measure;
  settings.cancel = o.cancel;
  return std::make_unique<DistributedEvaluator>(problem, o.remote, settings, o.reward);
}

// The pipeline objective: placements of the training graph in, each one's
// expansion to the unrolled mini-batch (PreparedProblem::pipelined) evaluated
// by `inner`, a evaluator of that problem. Below the cache, so the cache keys
// stay the training graph's placements.
class ExpandingEvaluator : public Evaluator {
 public:
  ExpandingEvaluator(std::shared_ptr<const PreparedProblem> unrolled, std::unique_ptr<Evaluator> inner)
      : unrolled_(std::move(unrolled)), inner_(std::move(inner)) {}
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override {
    std::vector<Placement> expanded;
    expanded.reserve(placements.size());
    for (const Placement& p : placements) expanded.push_back(unrolled_->expand(p));
    return inner_->evaluate(expanded);
  }
  int64_t generation() const override { return inner_->generation(); }
  void add_stats(EvalStats& stats) const override { inner_->add_stats(stats); }

 private:
  std::shared_ptr<const PreparedProblem> unrolled_;
  std::unique_ptr<Evaluator> inner_;
};

// The evaluator for the options' mode, behind a cache. Remote evaluation
// takes every placement in simulated and measured mode and only the
// measurements in hybrid mode (the calibration lives here). The calibration's
// problem is the one evaluated: the unrolled mini-batch under the pipeline
// objective, whose placements are expanded from the training graph's.
std::unique_ptr<Evaluator> make_evaluator(const std::shared_ptr<Calibration>& calibration, const EnvOptions& o,
                                          MeasuredEvaluator** local) {
  const auto& problem = calibration->problem_ptr();
  std::unique_ptr<Evaluator> inner;
  switch (o.mode) {
    case RewardMode::Measured: inner = make_measurer(problem, o, local); break;
    case RewardMode::Simulated:
      // A worker simulates the unrolled mini-batch it is sent with the profile as of a plain graph: the
      // copies' CPU anchors and copy-cost fits (CostModel::calibrated_copies) are lost, >10% off a local
      // run on the same placements. Refused until the worker is sent the training graph and the spec.
      if (o.remote && problem->pipeline_spec() && problem->profile())
        throw InputError(
            "remote workers: a simulated pipeline objective with a profile is evaluated here only (a worker "
            "would simulate the unrolled mini-batch without the profile's fits of its copies)");
      if (o.remote) {
        RemoteSettings settings;
        settings.mode = RewardMode::Simulated;
        settings.measure = o.measure;
        settings.cancel = o.cancel;
        inner = std::make_unique<DistributedEvaluator>(problem, o.remote, settings, o.reward);
      } else {
        inner = std::make_unique<SimulatedEvaluator>(calibration, o.reward, o.threads);
      }
      break;
    case RewardMode::Hybrid:
      inner = std::make_unique<HybridEvaluator>(calibration, make_measurer(problem, o, local), o.reward, o.threads,
                                                o.hybrid_measure_top);
      break;
  }
  if (problem->pipeline_spec()) inner = std::make_unique<ExpandingEvaluator>(problem, std::move(inner));
  return std::make_unique<CachingEvaluator>(std::move(inner));
}

}  // namespace

struct Environment::Impl {
  std::shared_ptr<const PreparedProblem> problem;
  // What evaluations run: `problem`, or under the pipeline objective its unrolled mini-batch.
  std::shared_ptr<const PreparedProblem> evaluated;
  EnvOptions options;
  std::shared_ptr<Calibration> calibration;  // hybrid refits it; simulate() and costs() read it
  std::unique_ptr<Evaluator> evaluator;
  MeasuredEvaluator* measurer = nullptr;            // inside `evaluator` when it measures here
  std::unique_ptr<MeasuredEvaluator> own_measurer;  // measure_side_by_side's otherwise

  void start() {
    if (options.threads <= 0) options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    evaluated = options.objective == Objective::Pipeline ? problem->pipelined(options.pipeline) : problem;
    calibration = std::make_shared<Calibration>(evaluated);
    evaluator = make_evaluator(calibration, options, &measurer);
  }
  // The placement of the evaluated graph.
  Placement evaluated_placement(const Placement& p) const { return evaluated == problem ? p : evaluated->expand(p); }
};

Environment::Environment(Graph graph, Cluster cluster, EnvOptions options) : impl_(std::make_unique<Impl>()) {
  validate_cluster(cluster);
  check_options(options);
  impl_->problem = PreparedProblem::make(std::move(graph), std::move(cluster), options.profile);
  impl_->options = std::move(options);
  impl_->start();
}

Environment::Environment(std::shared_ptr<const PreparedProblem> problem, EnvOptions options)
    : impl_(std::make_unique<Impl>()) {
  PLACER_CHECK(problem != nullptr, "Environment needs a prepared problem");
  check_options(options);
  if (options.profile) throw InputError("profile: an environment over a prepared problem uses the problem's profile");
  impl_->problem = std::move(problem);
  impl_->options = std::move(options);
  impl_->start();
}

Environment::~Environment() = default;

const std::shared_ptr<const PreparedProblem>& Environment::problem() const { return impl_->problem; }
const Graph& Environment::graph() const { return impl_->problem->graph(); }
const Cluster& Environment::cluster() const { return impl_->problem->cluster(); }
const EnvOptions& Environment::options() const { return impl_->options; }
// Under the pipeline objective the calibration is the unrolled graph's: the
// training graph's placers get the problem's base costs.
std::shared_ptr<const CostModel> Environment::costs() const {
  if (impl_->evaluated == impl_->problem) return impl_->calibration->costs();
  return {impl_->problem, &impl_->problem->base_costs()};  // aliases the problem, which owns them
}
double Environment::lower_bound() const { return impl_->evaluated->lower_bound(); }

const std::shared_ptr<const PreparedProblem>& Environment::evaluated_problem() const { return impl_->evaluated; }

StepResult Environment::simulate(const Placement& placement) const {
  validate_placement(graph(), cluster(), placement);
  return impl_->calibration->simulate(impl_->evaluated_placement(placement));
}

double Environment::reward_of(const StepResult& result) const {
  return placer::reward_of(result, impl_->options.reward);
}

Environment::Stats Environment::stats() const {
  Stats s;
  impl_->evaluator->add_stats(s);
  return s;
}

std::vector<StepResult> Environment::measure_side_by_side(const std::vector<Placement>& placements, bool fresh,
                                                          int max_steps, double target) {
  std::vector<Placement> evaluated;
  evaluated.reserve(placements.size());
  for (const Placement& p : placements) {
    validate_placement(graph(), cluster(), p);
    evaluated.push_back(impl_->evaluated_placement(p));
  }
  if (!impl_->measurer) {
    if (!impl_->own_measurer)
      impl_->own_measurer =
          std::make_unique<MeasuredEvaluator>(impl_->evaluated, impl_->options.reward, impl_->options.measure);
    return impl_->own_measurer->measure_side_by_side(evaluated, fresh, max_steps, target);
  }
  return impl_->measurer->measure_side_by_side(evaluated, fresh, max_steps, target);
}

double Environment::quietest_core_rtt_s() const {
  const MeasuredEvaluator* m = impl_->measurer ? impl_->measurer : impl_->own_measurer.get();
  return m ? m->quietest_core_rtt_s() : 0.0;
}

Evaluation Environment::evaluate(const Placement& placement) { return evaluate_batch({placement}).front(); }

std::vector<Evaluation> Environment::evaluate_batch(const std::vector<Placement>& placements) {
  for (const Placement& p : placements) validate_placement(graph(), cluster(), p);
  return impl_->evaluator->evaluate(placements);
}

}  // namespace placer
