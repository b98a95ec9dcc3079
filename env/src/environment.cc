// The environment: placements in, results and rewards out, with a cache, a
// thread pool for simulated batches, and hybrid calibration from measurements.
#include "placer/env/environment.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "placer/env/remote.h"
#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "placer/runtime/runtime.h"

namespace placer {

const char* reward_mode_name(RewardMode mode) {
  switch (mode) {
    case RewardMode::Measured: return "measured";
    case RewardMode::Simulated: return "simulated";
    case RewardMode::Hybrid: return "hybrid";
  }
  return "simulated";
}

RewardMode parse_reward_mode(const std::string& name) {
  if (name == "measured") return RewardMode::Measured;
  if (name == "simulated") return RewardMode::Simulated;
  if (name == "hybrid") return RewardMode::Hybrid;
  throw InputError("reward mode: unknown '" + name + "' (measured, simulated, hybrid)");
}

namespace {

// Step time equivalent of a result: failures cost a penalty, OOMs more the
// more they overflow, so a search still sees which failure is closer to fitting.
double penalty_seconds(const StepResult& result, const RewardOptions& options) {
  switch (result.status) {
    case StepStatus::Ok: return std::max(0.0, result.step_s);
    case StepStatus::Oom: {
      double ratio = 1.0;
      if (result.oom_capacity_bytes > 0 && result.oom_needed_bytes > result.oom_capacity_bytes)
        ratio = static_cast<double>(result.oom_needed_bytes - result.oom_capacity_bytes) /
                static_cast<double>(result.oom_capacity_bytes);
      return options.failure_penalty_s + options.overflow_penalty_s * ratio;
    }
    case StepStatus::Timeout:
    case StepStatus::Error: return options.failure_penalty_s;
  }
  return options.failure_penalty_s;
}

// A measured and a simulated (uncorrected) result of one placement.
struct CalibrationSample {
  Placement placement;
  StepResult simulated;
  StepResult measured;
};

}  // namespace

struct Environment::Impl {
  Graph graph;
  Cluster cluster;
  EnvOptions options;
  std::unique_ptr<SimContext> context;
  CostModel base_costs;

  // Hybrid corrections; `costs` is base_costs with per-device scales applied.
  mutable std::mutex calib_mu;
  std::shared_ptr<const CostModel> costs;
  std::vector<std::shared_ptr<const CostModel>> retired;  // keeps references from costs() valid
  double step_scale = 1.0;
  std::vector<CalibrationSample> samples;
  double best_reward = -std::numeric_limits<double>::infinity();  // best simulated reward seen (hybrid)
  int64_t calibrations = 0;

  mutable std::once_flag lb_once;
  mutable double lb = 0.0;

  std::mutex cache_mu;
  int64_t cache_calibrations = 0;  // calibrations the cached simulated entries were made with
  std::unordered_map<uint64_t, std::vector<std::pair<Placement, Evaluation>>> cache;
  std::atomic<int64_t> evaluations{0};
  std::atomic<int64_t> hits{0};
  std::atomic<int64_t> measurements{0};
  std::atomic<int64_t> remote_evaluations{0};
  std::mutex remote_mu;
  std::shared_ptr<const RemoteProblem> remote_problems[2];  // simulated, measured; prepared on first use

  std::mutex runtime_mu;
  std::unique_ptr<Runtime> runtime;

  double reward_of(const StepResult& r) const {
    return -std::pow(penalty_seconds(r, options.reward), options.reward.exponent);
  }

  std::pair<std::shared_ptr<const CostModel>, double> current_costs() const {
    std::lock_guard<std::mutex> lock(calib_mu);
    return {costs, step_scale};
  }

  StepResult simulate(const Placement& p) const {
    auto [model, scale] = current_costs();
    StepResult r = placer::simulate(*context, p, cluster, *model);
    if (scale != 1.0) {
      r.step_s *= scale;
      for (double& s : r.samples_s) s *= scale;
    }
    return r;
  }

  StepResult measure(const Placement& p) {
    std::lock_guard<std::mutex> lock(runtime_mu);
    if (!runtime) runtime = std::make_unique<Runtime>(cluster);
    MeasureOptions mo;
    mo.warmup_steps = options.measure_warmup;
    mo.measured_steps = options.measure_steps;
    ++measurements;
    return runtime->measure(graph, p, mo);
  }

  // The placements at `indices`, evaluated by options.remote in one batch.
  std::vector<StepResult> evaluate_remotely(RewardMode mode, const std::vector<Placement>& placements,
                                            const std::vector<size_t>& indices) {
    std::shared_ptr<const RemoteProblem> problem;
    {
      std::lock_guard<std::mutex> lock(remote_mu);
      auto& slot = remote_problems[mode == RewardMode::Measured ? 1 : 0];
      if (!slot) {
        RemoteSettings settings;
        settings.mode = mode;
        settings.measure_warmup = options.measure_warmup;
        settings.measure_steps = options.measure_steps;
        settings.profile = options.profile ? &*options.profile : nullptr;
        slot = options.remote->prepare(graph, cluster, settings);
      }
      problem = slot;
    }
    std::vector<Placement> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(placements[i]);
    std::vector<StepResult> results = options.remote->evaluate(*problem, batch);
    PLACER_CHECK(results.size() == batch.size(), "remote evaluator returned ", results.size(), " results for ",
                 batch.size(), " placements");
    remote_evaluations += static_cast<int64_t>(batch.size());
    if (mode == RewardMode::Measured) measurements += static_cast<int64_t>(batch.size());
    return results;
  }

  // Refits the corrections from every measured sample: per device, measured
  // busy time over simulated busy time (that device's op costs); then one
  // factor, the median of measured / corrected simulated step time, for what
  // remains (transfers, contention, executor overheads).
  void recalibrate(const Placement& p, const StepResult& measured) {
    if (!measured.ok() || measured.step_s <= 0) return;
    CalibrationSample sample{p, placer::simulate(*context, p, cluster, base_costs), measured};
    std::lock_guard<std::mutex> lock(calib_mu);
    samples.push_back(std::move(sample));
    auto model = std::make_shared<CostModel>(base_costs);
    const size_t D = static_cast<size_t>(cluster.size());
    for (size_t d = 0; d < D; ++d) {
      double sim = 0.0, real = 0.0;
      for (const auto& s : samples) {
        if (s.measured.devices.size() != D || s.simulated.devices.size() != D) continue;
        sim += s.simulated.devices[d].busy_s;
        real += s.measured.devices[d].busy_s;
      }
      if (sim > 0 && real > 0) model->scale_device(DeviceId(static_cast<int32_t>(d)), real / sim);
    }
    std::vector<double> ratios;
    for (const auto& s : samples) {
      const double sim = placer::simulate(*context, s.placement, cluster, *model).step_s;
      if (sim > 0) ratios.push_back(s.measured.step_s / sim);
    }
    if (!ratios.empty()) {
      std::sort(ratios.begin(), ratios.end());
      const size_t m = ratios.size();
      step_scale = m % 2 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
    }
    retired.push_back(costs);
    costs = std::move(model);
    ++calibrations;
  }
};

}  // namespace placer

namespace placer {
namespace {

// Runs fn(i) for i in [0, count) on up to `threads` threads; rethrows the first error.
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& fn) {
  const size_t workers = std::min<size_t>(count, static_cast<size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mu);
          if (!error) error = std::current_exception();
          next = count;
        }
      }
    });
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

Environment::Environment(Graph graph, Cluster cluster, EnvOptions options) : impl_(std::make_unique<Impl>()) {
  validate_cluster(cluster);
  if (options.reward.exponent <= 0 || !std::isfinite(options.reward.exponent))
    throw InputError("reward.exponent must be > 0, got " + std::to_string(options.reward.exponent));
  if (options.reward.failure_penalty_s < 0 || options.reward.overflow_penalty_s < 0)
    throw InputError("reward penalties must be >= 0");
  if (options.measure_steps < 1 || options.measure_warmup < 0)
    throw InputError("measure_steps must be >= 1 and measure_warmup >= 0");
  if (options.hybrid_measure_top < 0) throw InputError("hybrid_measure_top must be >= 0");
  impl_->graph = std::move(graph);
  impl_->cluster = std::move(cluster);
  impl_->options = std::move(options);
  if (impl_->options.threads <= 0)
    impl_->options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->context = std::make_unique<SimContext>(impl_->graph);
  impl_->base_costs = impl_->options.profile
                          ? CostModel::calibrated(impl_->graph, impl_->cluster, *impl_->options.profile)
                          : CostModel::roofline(impl_->graph, impl_->cluster);
  impl_->costs = std::make_shared<CostModel>(impl_->base_costs);
}

Environment::~Environment() = default;

const Graph& Environment::graph() const { return impl_->graph; }
const Cluster& Environment::cluster() const { return impl_->cluster; }
const EnvOptions& Environment::options() const { return impl_->options; }

const CostModel& Environment::costs() const {
  std::lock_guard<std::mutex> lock(impl_->calib_mu);
  return *impl_->costs;
}

double Environment::lower_bound() const {
  std::call_once(impl_->lb_once,
                 [&] { impl_->lb = placer::lower_bound(impl_->graph, impl_->cluster, impl_->base_costs); });
  return impl_->lb;
}

StepResult Environment::simulate(const Placement& placement) const {
  validate_placement(impl_->graph, impl_->cluster, placement);
  return impl_->simulate(placement);
}

double Environment::reward_of(const StepResult& result) const { return impl_->reward_of(result); }

Environment::Stats Environment::stats() const {
  Stats s;
  s.evaluations = impl_->evaluations.load();
  s.cache_hits = impl_->hits.load();
  s.measurements = impl_->measurements.load();
  s.remote = impl_->remote_evaluations.load();
  std::lock_guard<std::mutex> lock(impl_->calib_mu);
  s.calibrations = impl_->calibrations;
  s.step_scale = impl_->step_scale;
  return s;
}

Evaluation Environment::evaluate(const Placement& placement) { return evaluate_batch({placement}).front(); }

std::vector<Evaluation> Environment::evaluate_batch(const std::vector<Placement>& placements) {
  Impl& im = *impl_;
  for (const Placement& p : placements) validate_placement(im.graph, im.cluster, p);
  im.evaluations += static_cast<int64_t>(placements.size());
  std::vector<Evaluation> out(placements.size());

  // Cache lookups; repeated placements inside the batch are evaluated once.
  std::vector<uint64_t> hashes(placements.size());
  std::vector<size_t> todo;                             // indices evaluated now
  std::vector<int64_t> same_as(placements.size(), -1);  // index of an earlier equal placement in the batch
  {
    std::unordered_map<uint64_t, std::vector<size_t>> in_batch;
    std::lock_guard<std::mutex> lock(im.cache_mu);
    for (size_t i = 0; i < placements.size(); ++i) {
      hashes[i] = placement_hash(placements[i]);
      bool hit = false;
      if (auto it = im.cache.find(hashes[i]); it != im.cache.end())
        for (const auto& [p, e] : it->second)
          if (p == placements[i]) {
            out[i] = e;
            out[i].cached = true;
            hit = true;
            break;
          }
      if (!hit)
        for (size_t j : in_batch[hashes[i]])
          if (placements[j] == placements[i]) {
            same_as[i] = static_cast<int64_t>(j);
            hit = true;
            break;
          }
      if (hit) {
        ++im.hits;
        continue;
      }
      in_batch[hashes[i]].push_back(i);
      todo.push_back(i);
    }
  }

  auto fill = [&](size_t i, StepResult r, bool measured) {
    out[i].result = std::move(r);
    out[i].reward = im.reward_of(out[i].result);
    out[i].measured = measured;
    out[i].cached = false;
  };

  if (im.options.mode == RewardMode::Measured) {
    if (im.options.remote && !todo.empty()) {
      std::vector<StepResult> results = im.evaluate_remotely(RewardMode::Measured, placements, todo);
      for (size_t k = 0; k < todo.size(); ++k) fill(todo[k], std::move(results[k]), true);
    } else {
      for (size_t i : todo) fill(i, im.measure(placements[i]), true);
    }
  } else if (im.options.mode == RewardMode::Simulated && im.options.remote) {
    if (!todo.empty()) {
      std::vector<StepResult> results = im.evaluate_remotely(RewardMode::Simulated, placements, todo);
      for (size_t k = 0; k < todo.size(); ++k) fill(todo[k], std::move(results[k]), false);
    }
  } else {
    parallel_for(todo.size(), im.options.threads,
                 [&](size_t k) { fill(todo[k], im.simulate(placements[todo[k]]), false); });
    if (im.options.mode == RewardMode::Hybrid && !todo.empty()) {
      // Measure the batch's best N (batches of one: only a new best) and
      // every candidate whose simulated reward beats the best seen so far.
      std::vector<size_t> order = todo;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out[a].reward > out[b].reward; });
      double best;
      {
        std::lock_guard<std::mutex> lock(im.calib_mu);
        best = im.best_reward;
      }
      const size_t top = todo.size() > 1 ? static_cast<size_t>(im.options.hybrid_measure_top) : 0;
      std::vector<size_t> to_measure;
      for (size_t r = 0; r < order.size(); ++r) {
        const bool new_best = std::isfinite(best) ? out[order[r]].reward > best : r == 0;
        if (r < top || new_best)
          to_measure.push_back(order[r]);
        else
          break;
      }
      if (im.options.remote && !to_measure.empty()) {
        // Measuring does not depend on the calibration: one remote batch,
        // then the refits in order, give what one by one would.
        std::vector<StepResult> measured = im.evaluate_remotely(RewardMode::Measured, placements, to_measure);
        for (size_t k = 0; k < to_measure.size(); ++k) {
          im.recalibrate(placements[to_measure[k]], measured[k]);
          fill(to_measure[k], std::move(measured[k]), true);
        }
      } else {
        for (size_t i : to_measure) {
          StepResult measured = im.measure(placements[i]);
          im.recalibrate(placements[i], measured);
          fill(i, std::move(measured), true);
        }
      }
      if (!to_measure.empty()) {
        // The rest were simulated before this recalibration: simulate again.
        std::vector<size_t> rest;
        for (size_t i : todo)
          if (!out[i].measured) rest.push_back(i);
        parallel_for(rest.size(), im.options.threads,
                     [&](size_t k) { fill(rest[k], im.simulate(placements[rest[k]]), false); });
      }
      std::lock_guard<std::mutex> lock(im.calib_mu);
      for (size_t i : todo) im.best_reward = std::max(im.best_reward, out[i].reward);
    }
  }

  {
    std::lock_guard<std::mutex> lock(im.cache_mu);
    if (im.options.mode == RewardMode::Hybrid) {
      // Simulated entries from before a recalibration are stale.
      int64_t calibrations;
      {
        std::lock_guard<std::mutex> calib_lock(im.calib_mu);
        calibrations = im.calibrations;
      }
      if (calibrations != im.cache_calibrations) {
        for (auto& [h, entries] : im.cache)
          entries.erase(
              std::remove_if(entries.begin(), entries.end(), [](const auto& pe) { return !pe.second.measured; }),
              entries.end());
        im.cache_calibrations = calibrations;
      }
    }
    for (size_t i : todo) im.cache[hashes[i]].emplace_back(placements[i], out[i]);
  }
  for (size_t i = 0; i < placements.size(); ++i)
    if (same_as[i] >= 0) {
      out[i] = out[static_cast<size_t>(same_as[i])];
      out[i].cached = true;
    }
  return out;
}

}  // namespace placer
