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
}

// What measures: the runtime here (also kept in *local), or options.remote.
std::unique_ptr<Evaluator> make_measurer(const std::shared_ptr<const PreparedProblem>& problem, const EnvOptions& o,
                                         MeasuredEvaluator** local) {
  if (!o.remote) {
    auto m = std::make_unique<MeasuredEvaluator>(problem, o.reward, o.measure);
    *local = m.get();
    return m;
  }
  RemoteSettings settings;
  settings.mode = RewardMode::Measured;
  settings.measure = o.measure;
  return std::make_unique<DistributedEvaluator>(problem, o.remote, settings, o.reward);
}

// The evaluator for the options' mode, behind a cache. Remote evaluation
// takes every placement in simulated and measured mode and only the
// measurements in hybrid mode (the calibration lives here).
std::unique_ptr<Evaluator> make_evaluator(const std::shared_ptr<Calibration>& calibration, const EnvOptions& o,
                                          MeasuredEvaluator** local) {
  const auto& problem = calibration->problem_ptr();
  std::unique_ptr<Evaluator> inner;
  switch (o.mode) {
    case RewardMode::Measured: inner = make_measurer(problem, o, local); break;
    case RewardMode::Simulated:
      if (o.remote) {
        RemoteSettings settings;
        settings.mode = RewardMode::Simulated;
        settings.measure = o.measure;
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
  return std::make_unique<CachingEvaluator>(std::move(inner));
}

}  // namespace

struct Environment::Impl {
  std::shared_ptr<const PreparedProblem> problem;
  EnvOptions options;
  std::shared_ptr<Calibration> calibration;  // hybrid refits it; simulate() and costs() read it
  std::unique_ptr<Evaluator> evaluator;
  MeasuredEvaluator* measurer = nullptr;            // inside `evaluator` when it measures here
  std::unique_ptr<MeasuredEvaluator> own_measurer;  // measure_side_by_side's otherwise
};

Environment::Environment(Graph graph, Cluster cluster, EnvOptions options) : impl_(std::make_unique<Impl>()) {
  validate_cluster(cluster);
  check_options(options);
  impl_->problem = PreparedProblem::make(std::move(graph), std::move(cluster), options.profile);
  impl_->options = std::move(options);
  if (impl_->options.threads <= 0)
    impl_->options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->calibration = std::make_shared<Calibration>(impl_->problem);
  impl_->evaluator = make_evaluator(impl_->calibration, impl_->options, &impl_->measurer);
}

Environment::Environment(std::shared_ptr<const PreparedProblem> problem, EnvOptions options)
    : impl_(std::make_unique<Impl>()) {
  PLACER_CHECK(problem != nullptr, "Environment needs a prepared problem");
  check_options(options);
  if (options.profile) throw InputError("profile: an environment over a prepared problem uses the problem's profile");
  impl_->problem = std::move(problem);
  impl_->options = std::move(options);
  if (impl_->options.threads <= 0)
    impl_->options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->calibration = std::make_shared<Calibration>(impl_->problem);
  impl_->evaluator = make_evaluator(impl_->calibration, impl_->options, &impl_->measurer);
}

Environment::~Environment() = default;

const std::shared_ptr<const PreparedProblem>& Environment::problem() const { return impl_->problem; }
const Graph& Environment::graph() const { return impl_->problem->graph(); }
const Cluster& Environment::cluster() const { return impl_->problem->cluster(); }
const EnvOptions& Environment::options() const { return impl_->options; }
const CostModel& Environment::costs() const { return impl_->calibration->costs(); }
double Environment::lower_bound() const { return impl_->problem->lower_bound(); }

StepResult Environment::simulate(const Placement& placement) const {
  validate_placement(graph(), cluster(), placement);
  return impl_->calibration->simulate(placement);
}

double Environment::reward_of(const StepResult& result) const {
  return placer::reward_of(result, impl_->options.reward);
}

Environment::Stats Environment::stats() const {
  Stats s;
  impl_->evaluator->add_stats(s);
  return s;
}

std::vector<StepResult> Environment::measure_side_by_side(const std::vector<Placement>& placements, bool fresh) {
  for (const Placement& p : placements) validate_placement(graph(), cluster(), p);
  if (!impl_->measurer) {
    if (!impl_->own_measurer)
      impl_->own_measurer =
          std::make_unique<MeasuredEvaluator>(impl_->problem, impl_->options.reward, impl_->options.measure);
    return impl_->own_measurer->measure_side_by_side(placements, fresh);
  }
  return impl_->measurer->measure_side_by_side(placements, fresh);
}

Evaluation Environment::evaluate(const Placement& placement) { return evaluate_batch({placement}).front(); }

std::vector<Evaluation> Environment::evaluate_batch(const std::vector<Placement>& placements) {
  for (const Placement& p : placements) validate_placement(graph(), cluster(), p);
  return impl_->evaluator->evaluate(placements);
}

}  // namespace placer
