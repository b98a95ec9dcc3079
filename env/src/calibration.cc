// The hybrid reward's calibration: the simulator refitted on the placements measured so
// far (per-device busy-time scales, a CPU<->GPU link factor, one step scale).
#include <cmath>
#include <mutex>
#include <vector>

#include "placer/env/evaluator.h"
#include "placer/env/simulator.h"
#include "placer/graphs/stats.h"

namespace placer {

// Until the first refit, the problem's own base costs (aliased, not copied).
Calibration::Calibration(std::shared_ptr<const PreparedProblem> problem)
    : problem_(std::move(problem)), costs_(problem_, &problem_->base_costs()) {}

std::pair<std::shared_ptr<const CostModel>, double> Calibration::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {costs_, step_scale_};
}

StepResult Calibration::simulate(const Placement& placement) const {
  auto [model, scale] = current();
  StepResult r = placer::simulate(problem_->context(), placement, problem_->cluster(), *model);
  if (scale != 1.0) {
    r.step_s *= scale;
    r.ci_low_s *= scale;
    r.ci_high_s *= scale;
    for (double& s : r.samples_s) s *= scale;
  }
  return r;
}

// A profile's CPU<->GPU link fit can be far off what a dependency costs inside
// a step (on an H200, copies timed alone gave 11-23 us; a dependency cost ~60 us:
// bench/results/gpu_h200.md), and no busy time shows it. So one factor on those
// links' times: the one that minimizes the spread of log(measured / simulated)
// over the last samples (the level is the step scale's job; the spread is what
// ranks placements wrong), searched on [1/4, 64] by golden section, with a weak
// pull towards 1 so that a few samples cannot send it to an end. On top of
// the per-copy cost the profile's mixed step fitted (cross_copy_s).
double Calibration::cross_link_factor(const CostModel& model) const {
  const PreparedProblem& pp = *problem_;
  constexpr size_t kMinSamples = 3, kMaxSamples = 32;
  if (cross_kind_links(pp.cluster()).empty() || samples_.size() < kMinSamples) return 1.0;
  const size_t first = samples_.size() > kMaxSamples ? samples_.size() - kMaxSamples : 0;
  auto spread = [&](double log_factor) {
    CostModel scaled = model;
    scaled.scale_cross_links(pp.cluster(), std::exp(log_factor));
    std::vector<double> r;
    for (size_t i = first; i < samples_.size(); ++i) {
      const double sim = placer::simulate(pp.context(), samples_[i].placement, pp.cluster(), scaled).step_s;
      if (sim > 0) r.push_back(std::log(samples_[i].measured.step_s / sim));
    }
    if (r.size() < kMinSamples) return 0.0;
    double mean = 0, var = 0;
    for (double v : r) mean += v / static_cast<double>(r.size());
    for (double v : r) var += (v - mean) * (v - mean) / static_cast<double>(r.size());
    return var + 1e-4 * log_factor * log_factor;
  };
  double lo = std::log(0.25), hi = std::log(64.0);
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = spread(x1), f2 = spread(x2);
  for (int it = 0; it < 24; ++it) {
    if (f1 <= f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - g * (hi - lo), f1 = spread(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + g * (hi - lo), f2 = spread(x2);
    }
  }
  const double best = 0.5 * (lo + hi);
  return spread(best) < spread(0.0) ? std::exp(best) : 1.0;
}

// Per device, measured busy time over simulated busy time (that device's op
// costs); then CPU<->GPU links (cross_link_factor); then one factor, the median
// of measured / corrected simulated step time, for what remains (transfers,
// contention, executor overheads).
void Calibration::refit(const Placement& placement, const StepResult& measured) {
  if (!measured.ok() || measured.step_s <= 0) return;
  const PreparedProblem& pp = *problem_;
  Sample sample{placement, placer::simulate(pp.context(), placement, pp.cluster(), pp.base_costs()), measured};
  // The fit simulates every sample many times: readers (simulate()) wait for
  // the new corrections only while they are swapped in, not through the fit.
  std::lock_guard<std::mutex> serial(refit_mu_);
  // The fit re-simulates every sample: the latest kMaxFitSamples only, so that a long hybrid run's refits do not
  // grow with the square of its measurements.
  constexpr size_t kMaxFitSamples = 256;
  if (samples_.size() >= kMaxFitSamples) samples_.erase(samples_.begin());
  samples_.push_back(std::move(sample));
  auto model = std::make_shared<CostModel>(pp.base_costs());
  const size_t D = static_cast<size_t>(pp.cluster().size());
  for (size_t d = 0; d < D; ++d) {
    double sim = 0.0, real = 0.0;
    for (const auto& s : samples_) {
      if (s.measured.devices.size() != D || s.simulated.devices.size() != D) continue;
      sim += s.simulated.devices[d].busy_s;
      real += s.measured.devices[d].busy_s;
    }
    if (sim > 0 && real > 0) model->scale_device(DeviceId(static_cast<int32_t>(d)), real / sim);
  }
  const double factor = cross_link_factor(*model);
  if (factor != 1.0) model->scale_cross_links(pp.cluster(), factor);
  std::vector<double> ratios;
  for (const auto& s : samples_) {
    const double sim = placer::simulate(pp.context(), s.placement, pp.cluster(), *model).step_s;
    if (sim > 0) ratios.push_back(s.measured.step_s / sim);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!ratios.empty()) step_scale_ = quantile(ratios, 0.5);
  link_factor_ = factor;
  costs_ = std::move(model);
  ++refits_;
}

std::shared_ptr<const CostModel> Calibration::costs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return costs_;
}

int64_t Calibration::refits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refits_;
}

double Calibration::link_factor() const {
  std::lock_guard<std::mutex> lock(mu_);
  return link_factor_;
}

double Calibration::step_scale() const {
  std::lock_guard<std::mutex> lock(mu_);
  return step_scale_;
}

}  // namespace placer
