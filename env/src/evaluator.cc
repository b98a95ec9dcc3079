// The evaluators: simulated, measured, hybrid and the caching wrapper, over
// one prepared problem (env/evaluator.h).
#include "placer/env/evaluator.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <thread>

#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/stats.h"
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
  throw InputError(unknown_name("mode", name, {"simulated", "measured", "hybrid"}));
}

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

std::vector<Placement> pick(const std::vector<Placement>& placements, const std::vector<size_t>& indices) {
  std::vector<Placement> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(placements[i]);
  return out;
}

}  // namespace

// ---- PreparedProblem ----

std::shared_ptr<const PreparedProblem> PreparedProblem::make(Graph graph, Cluster cluster,
                                                             std::optional<Profile> profile) {
  validate_cluster(cluster);
  std::shared_ptr<PreparedProblem> p(new PreparedProblem());
  p->graph_ = std::move(graph);
  p->cluster_ = std::move(cluster);
  p->profile_ = std::move(profile);
  p->prepare();
  return p;
}

void PreparedProblem::prepare(const Graph* measured) {
  context_ = std::make_unique<SimContext>(graph_);
  base_costs_ = !profile_  ? CostModel::roofline(graph_, cluster_)
                : measured ? CostModel::calibrated_copies(graph_, *measured, cluster_, *profile_)
                           : CostModel::calibrated(graph_, cluster_, *profile_);
}

PreparedProblem::~PreparedProblem() = default;

std::shared_ptr<const PreparedProblem> PreparedProblem::pipelined(const PipelineSpec& spec) const {
  std::lock_guard<std::mutex> lock(pipelined_mu_);
  for (const auto& [s, problem] : pipelined_)
    if (s == spec) return problem;
  auto unrolled = std::make_unique<PipelineGraph>(make_pipeline_graph(graph_, spec));
  std::shared_ptr<PreparedProblem> p(new PreparedProblem());
  p->graph_ = std::move(unrolled->graph);
  p->cluster_ = cluster_;
  p->profile_ = profile_;
  p->unrolled_ = std::move(unrolled);
  p->prepare(&graph_);  // the profile measured graph_: its steps' fits carry over to the copies
  pipelined_.emplace_back(spec, p);
  return p;
}

Placement PreparedProblem::expand(const Placement& base) const {
  PLACER_CHECK(unrolled_ != nullptr, "expand: not a pipelined problem");
  return unrolled_->expand(base);
}

double PreparedProblem::lower_bound() const {
  std::call_once(lb_once_, [&] { lb_ = placer::lower_bound(graph_, cluster_, base_costs_); });
  return lb_;
}

// ---- Scoring ----

namespace {

bool says_overflow(const StepResult& result) {
  return result.oom_capacity_bytes > 0 && result.oom_needed_bytes > result.oom_capacity_bytes;
}

// How far past its capacity an out-of-memory result is (1 where it does not say).
double overflow_ratio(const StepResult& result) {
  if (says_overflow(result))
    return static_cast<double>(result.oom_needed_bytes - result.oom_capacity_bytes) /
           static_cast<double>(result.oom_capacity_bytes);
  return 1.0;
}

}  // namespace

double failure_penalty_seconds(const StepResult& result, const RewardOptions& options) {
  switch (result.status) {
    case StepStatus::Ok: return 0.0;
    case StepStatus::Oom: return options.failure_penalty_s + options.overflow_penalty_s * overflow_ratio(result);
    case StepStatus::Timeout:
    case StepStatus::Error: return options.failure_penalty_s;
  }
  return options.failure_penalty_s;
}

double reward_of(const StepResult& result, const RewardOptions& options) {
  const double seconds = result.ok() ? std::max(0.0, result.step_s) : failure_penalty_seconds(result, options);
  return -std::pow(seconds, options.exponent);
}

Evaluation score(StepResult result, const RewardOptions& options, bool measured) {
  Evaluation e;
  e.penalty_s = failure_penalty_seconds(result, options);
  e.step_s = result.ok() ? result.step_s : e.penalty_s;
  e.reward = reward_of(result, options);
  e.measured = measured;
  e.result = std::move(result);
  return e;
}

// ---- SimulatedEvaluator ----

SimulatedEvaluator::SimulatedEvaluator(std::shared_ptr<const Calibration> calibration, RewardOptions reward,
                                       int threads)
    : calibration_(std::move(calibration)), reward_(reward), threads_(threads) {}

std::vector<Evaluation> SimulatedEvaluator::evaluate(const std::vector<Placement>& placements) {
  std::vector<Evaluation> out(placements.size());
  parallel_for(placements.size(), threads_,
               [&](size_t i) { out[i] = score(calibration_->simulate(placements[i]), reward_, false); });
  return out;
}

// ---- MeasuredEvaluator ----

struct MeasuredEvaluator::Impl {
  std::shared_ptr<const PreparedProblem> problem;
  RewardOptions reward;
  MeasureOptions measure;
  std::mutex mu;
  std::unique_ptr<Runtime> runtime;
  using ByPlacement = std::unordered_map<uint64_t, std::vector<std::pair<Placement, std::vector<double>>>>;
  ByPlacement samples;  // by placement hash
  std::atomic<int64_t> measurements{0};
  std::atomic<int64_t> steps{0};
  double quietest_rtt = 0.0;  // under mu
  // Paired: the reference, its median step at its first measurement, and each
  // placement's step over the reference's in the rounds they shared.
  bool paired = false;
  std::optional<Placement> reference;
  double reference_level = 0.0;
  ByPlacement ratios;

  static std::vector<double>& of(ByPlacement& map, const Placement& p) {
    auto& bucket = map[placement_hash(p)];
    for (auto& [q, s] : bucket)
      if (q == p) return s;
    return bucket.emplace_back(p, std::vector<double>{}).second;
  }
  std::vector<double>& kept(const Placement& p) { return of(samples, p); }

  // Each of `unique`'s results beside the reference's (at `ref`) in this run:
  // the ratios of the rounds both took kept, and its step and interval the
  // reference level times their Hodges-Lehmann estimate's. A failed reference leaves the raw figures.
  void pair_with_reference(const std::vector<Placement>& unique, std::vector<StepResult>& results, size_t ref) {
    const StepResult& r = results[ref];
    if (!r.ok() || r.samples_s.size() <= static_cast<size_t>(r.prior_samples)) return;
    const std::vector<double> ref_new(r.samples_s.begin() + r.prior_samples, r.samples_s.end());
    if (reference_level <= 0) reference_level = quantile(ref_new, 0.5);
    for (size_t u = 0; u < unique.size(); ++u) {
      StepResult& x = results[u];
      if (!x.ok()) continue;
      std::vector<double>& mine = of(ratios, unique[u]);
      const size_t from = static_cast<size_t>(x.prior_samples);
      for (size_t k = 0; k < ref_new.size() && from + k < x.samples_s.size(); ++k)
        mine.push_back(x.samples_s[from + k] / ref_new[k]);
      if (mine.empty()) continue;
      // The ratios' Hodges-Lehmann estimate and its interval, the signed-rank
      // test's: what `placer measure --compare` says of the same rounds.
      const PairedTest t = paired_rounds(std::vector<double>(mine.size(), 1.0), mine);
      x.step_s = reference_level * t.ratio;
      x.ci_low_s = reference_level * t.ratio_low;
      x.ci_high_s = reference_level * t.ratio_high;
      x.ci_level = t.ratio_level;
    }
  }

  // A reference that failed at its first measurement (out of memory, say) pairs nothing: the first placement of
  // this run that ran takes its place, from this run's rounds (each one's new samples were taken beside its).
  size_t replace_reference(const std::vector<Placement>& unique, const std::vector<StepResult>& results,
                           const std::vector<std::vector<double>>& prior, size_t failed) {
    reference.reset();
    for (size_t u = 0; u < unique.size(); ++u)
      if (u != failed && results[u].ok() && results[u].samples_s.size() > prior[u].size()) {
        reference = unique[u];
        return u;
      }
    return unique.size();
  }

  // The run's samples kept per placement, and training's counters (`count`).
  void keep(const std::vector<Placement>& unique, const std::vector<StepResult>& results,
            const std::vector<std::vector<double>>& prior, size_t ref, bool fresh, bool count) {
    for (size_t u = 0; u < unique.size(); ++u) {
      if (count) ++measurements;
      if (!results[u].ok()) continue;
      if (count) steps += static_cast<int64_t>(results[u].samples_s.size() - prior[u].size());
      // A fresh run is a measurement apart (a final table, or its retake when
      // the probe read a spell): the kept samples stay those of the others.
      // The reference ran from none, unless it replaced a failed one: then its samples start with its kept ones.
      if (u == ref) {
        std::vector<double>& k = kept(unique[u]);
        k.insert(k.end(), results[u].samples_s.begin() + static_cast<std::ptrdiff_t>(prior[u].size()),
                 results[u].samples_s.end());
      } else if (!fresh) {
        kept(unique[u]) = results[u].samples_s;
      }
    }
  }

  // The protocol over the placements; each one's earlier samples count. A
  // placement given twice (two baselines that agree) is measured once and both
  // get its figure: the same work never gets two answers, nor costs twice.
  // `count`: training's runs (add_stats); side-by-side tables and retakes are not.
  std::vector<StepResult> run(const std::vector<Placement>& placements, bool fresh = false, int max_steps = 0,
                              double target = 0, bool pair = false, bool count = false) {
    std::lock_guard<std::mutex> lock(mu);
    if (!runtime) runtime = std::make_unique<Runtime>(problem->cluster());
    std::vector<Placement> unique;
    std::vector<size_t> slot(placements.size());
    std::unordered_map<uint64_t, std::vector<size_t>> by_hash;
    for (size_t i = 0; i < placements.size(); ++i) {
      std::vector<size_t>& same_hash = by_hash[placement_hash(placements[i])];
      auto it = std::find_if(same_hash.begin(), same_hash.end(), [&](size_t u) { return unique[u] == placements[i]; });
      if (it == same_hash.end()) {
        same_hash.push_back(unique.size());
        unique.push_back(placements[i]);
        slot[i] = unique.size() - 1;
      } else {
        slot[i] = *it;
      }
    }
    // Paired: the reference joins the run (the first placement evaluated is
    // it), from no samples, so that it steps beside every round of the others.
    size_t ref = unique.size();
    if (pair && !placements.empty()) {
      if (!reference) reference = placements.front();
      ref = static_cast<size_t>(std::find(unique.begin(), unique.end(), *reference) - unique.begin());
      if (ref == unique.size()) unique.push_back(*reference);
    }
    std::vector<std::vector<double>> prior;
    for (size_t u = 0; u < unique.size(); ++u)
      prior.push_back(fresh || u == ref ? std::vector<double>{} : kept(unique[u]));
    MeasureOptions m = measure;
    if (max_steps > 0) m.max_steps = std::max(max_steps, m.measured_steps);
    if (target > 0) m.target_halfwidth = target;
    // A fresh run is a table whose rows are set side by side (the final table,
    // the finalists): every row takes every round until all have enough.
    if (fresh) m.lockstep = true;
    std::vector<StepResult> results = runtime->measure_interleaved(problem->graph(), unique, m, &prior);
    const double rtt = core_rtt_range(core_rtt_readings(results)).median_s;
    if (rtt > 0 && (quietest_rtt <= 0 || rtt < quietest_rtt)) quietest_rtt = rtt;
    if (ref < unique.size() && !results[ref].ok() && reference_level <= 0)
      ref = replace_reference(unique, results, prior, ref);
    keep(unique, results, prior, ref, fresh, count);
    if (ref < unique.size()) pair_with_reference(unique, results, ref);
    std::vector<StepResult> out;
    out.reserve(placements.size());
    for (size_t i = 0; i < placements.size(); ++i) out.push_back(results[slot[i]]);
    return out;
  }
};

MeasuredEvaluator::MeasuredEvaluator(std::shared_ptr<const PreparedProblem> problem, RewardOptions reward,
                                     MeasureOptions measure, bool paired)
    : impl_(std::make_unique<Impl>()) {
  validate(measure);
  impl_->problem = std::move(problem);
  impl_->reward = reward;
  impl_->measure = measure;
  impl_->paired = paired;
}

MeasuredEvaluator::~MeasuredEvaluator() = default;

std::vector<Evaluation> MeasuredEvaluator::evaluate(const std::vector<Placement>& placements) {
  std::vector<Evaluation> out;
  out.reserve(placements.size());
  std::vector<StepResult> results = impl_->run(placements, false, 0, 0, impl_->paired, /*count=*/true);
  for (size_t i = 0; i < results.size(); ++i) {
    StepResult& r = results[i];
    // The executor stops at the first allocation past capacity, so a measured out-of-memory says little of how far
    // over the placement is (or nothing: an allocator's own failure); the simulator's peak does, and ranks
    // overflows as simulated ones are ranked.
    if (r.status == StepStatus::Oom) {
      const PreparedProblem& pp = *impl_->problem;
      const StepResult sim = placer::simulate(pp.context(), placements[i], pp.cluster(), pp.base_costs());
      if (sim.status == StepStatus::Oom && (!says_overflow(r) || overflow_ratio(sim) > overflow_ratio(r))) {
        r.oom_needed_bytes = sim.oom_needed_bytes;
        r.oom_capacity_bytes = sim.oom_capacity_bytes;
      }
    }
    out.push_back(score(std::move(r), impl_->reward, true));
  }
  return out;
}

std::vector<StepResult> MeasuredEvaluator::measure_side_by_side(const std::vector<Placement>& placements, bool fresh,
                                                                int max_steps, double target) {
  return impl_->run(placements, fresh, max_steps, target);
}

double MeasuredEvaluator::quietest_core_rtt_s() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->quietest_rtt;
}

void MeasuredEvaluator::add_stats(EvalStats& stats) const {
  stats.measurements += impl_->measurements.load();
  stats.measured_steps += impl_->steps.load();
}

// ---- HybridEvaluator ----

HybridEvaluator::HybridEvaluator(std::shared_ptr<Calibration> calibration, std::unique_ptr<Evaluator> measurer,
                                 RewardOptions reward, int threads, int measure_top)
    : calibration_(std::move(calibration)),
      measurer_(std::move(measurer)),
      simulator_(calibration_, reward, threads),
      measure_top_(measure_top),
      best_reward_(-std::numeric_limits<double>::infinity()) {}

std::vector<Evaluation> HybridEvaluator::evaluate(const std::vector<Placement>& placements) {
  std::vector<Evaluation> out = simulator_.evaluate(placements);
  if (out.empty()) return out;
  // Measure the batch's best N (batches of one: only a new best) and every
  // candidate whose simulated reward beats the best seen so far.
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out[a].reward > out[b].reward; });
  double best;
  {
    std::lock_guard<std::mutex> lock(best_mu_);
    best = best_reward_;
  }
  const size_t top = out.size() > 1 ? static_cast<size_t>(measure_top_) : 0;
  std::vector<size_t> to_measure;
  for (size_t r = 0; r < order.size(); ++r) {
    const bool new_best = std::isfinite(best) ? out[order[r]].reward > best : r == 0;
    if (r < top || new_best)
      to_measure.push_back(order[r]);
    else
      break;
  }
  if (!to_measure.empty()) {
    // Measuring does not depend on the calibration: one batch, then the
    // refits in order, give what one by one would.
    const std::vector<Placement> batch = pick(placements, to_measure);
    std::vector<Evaluation> measured = measurer_->evaluate(batch);
    PLACER_CHECK(measured.size() == batch.size(), "measurer returned ", measured.size(), " results for ", batch.size(),
                 " placements");
    std::vector<bool> is_measured(out.size(), false);
    for (size_t k = 0; k < to_measure.size(); ++k) {
      calibration_->refit(batch[k], measured[k].result);
      out[to_measure[k]] = std::move(measured[k]);
      out[to_measure[k]].measured = true;
      out[to_measure[k]].cached = false;
      is_measured[to_measure[k]] = true;
    }
    // The rest were simulated before this recalibration: simulate again.
    std::vector<size_t> rest;
    for (size_t i = 0; i < out.size(); ++i)
      if (!is_measured[i]) rest.push_back(i);
    std::vector<Evaluation> again = simulator_.evaluate(pick(placements, rest));
    for (size_t k = 0; k < rest.size(); ++k) out[rest[k]] = std::move(again[k]);
  }
  std::lock_guard<std::mutex> lock(best_mu_);
  for (const Evaluation& e : out) best_reward_ = std::max(best_reward_, e.reward);
  return out;
}

int64_t HybridEvaluator::generation() const { return calibration_->refits(); }

void HybridEvaluator::add_stats(EvalStats& stats) const {
  measurer_->add_stats(stats);
  stats.calibrations += calibration_->refits();
  stats.step_scale = calibration_->step_scale();
  stats.link_factor = calibration_->link_factor();
}

// ---- CachingEvaluator ----

CachingEvaluator::CachingEvaluator(std::unique_ptr<Evaluator> inner, size_t capacity_bytes)
    : inner_(std::move(inner)), capacity_bytes_(capacity_bytes) {}

namespace {

// What an entry holds in memory, roughly: the placement, the evaluation with
// what its result points to, and the list node and index slot that keep it.
size_t entry_bytes(const Placement& placement, const Evaluation& e) {
  const StepResult& r = e.result;
  size_t bytes = sizeof(Placement) + sizeof(Evaluation) + 8 * sizeof(void*);
  bytes += placement.device_of.capacity() * sizeof(DeviceId);
  bytes += (r.samples_s.capacity() + r.core_rtt_s.capacity()) * sizeof(double);
  bytes += r.message.capacity() + r.stop.capacity() + r.oom_device.capacity();
  bytes += r.devices.capacity() * sizeof(DeviceStats);
  for (const DeviceStats& d : r.devices) bytes += d.device.capacity();
  return bytes;
}

// out[i] for each i of `indices`: the inner evaluator's figure for placements[i], not cached.
void evaluate_indices(Evaluator& inner, const std::vector<Placement>& placements, const std::vector<size_t>& indices,
                      std::vector<Evaluation>& out) {
  std::vector<Evaluation> fresh = inner.evaluate(pick(placements, indices));
  PLACER_CHECK(fresh.size() == indices.size(), "evaluator returned ", fresh.size(), " results for ", indices.size(),
               " placements");
  for (size_t k = 0; k < indices.size(); ++k) {
    out[indices[k]] = std::move(fresh[k]);
    out[indices[k]].cached = false;
  }
}

}  // namespace

std::vector<Evaluation> CachingEvaluator::evaluate(const std::vector<Placement>& placements) {
  evaluations_ += static_cast<int64_t>(placements.size());
  std::vector<Evaluation> out(placements.size());

  // Cache lookups; repeated placements inside the batch are evaluated once.
  std::vector<uint64_t> hashes(placements.size());
  std::vector<size_t> todo;                             // indices evaluated now
  std::vector<size_t> simulated_hits;                   // hits that a recalibration in this batch makes stale
  std::vector<int64_t> same_as(placements.size(), -1);  // index of an earlier equal placement in the batch
  int64_t looked_up_at = 0;
  {
    std::unordered_map<uint64_t, std::vector<size_t>> in_batch;
    std::lock_guard<std::mutex> lock(mu_);
    looked_up_at = cached_generation_;
    for (size_t i = 0; i < placements.size(); ++i) {
      hashes[i] = placement_hash(placements[i]);
      bool hit = false;
      if (const Evaluation* e = find(hashes[i], placements[i])) {
        out[i] = *e;
        out[i].cached = true;
        hit = true;
        if (!e->measured) simulated_hits.push_back(i);
      }
      if (!hit)
        for (size_t j : in_batch[hashes[i]])
          if (placements[j] == placements[i]) {
            same_as[i] = static_cast<int64_t>(j);
            hit = true;
            break;
          }
      if (hit) {
        ++hits_;
        continue;
      }
      in_batch[hashes[i]].push_back(i);
      todo.push_back(i);
    }
  }

  if (!todo.empty()) {
    evaluate_indices(*inner_, placements, todo, out);
    // The batch recalibrated the simulator (hybrid): the simulated hits were scored on the model before it, the
    // rest of the batch on the new one. One batch, one scale: they are evaluated again, and cached anew.
    if (!simulated_hits.empty() && inner_->generation() != looked_up_at) {
      evaluate_indices(*inner_, placements, simulated_hits, out);
      todo.insert(todo.end(), simulated_hits.begin(), simulated_hits.end());
      hits_ -= static_cast<int64_t>(simulated_hits.size());
    }
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t generation = inner_->generation();
    if (generation != cached_generation_) {
      drop_unmeasured();  // from an earlier generation: stale
      cached_generation_ = generation;
    }
    for (size_t i : todo) store(hashes[i], placements[i], out[i]);
  }
  for (size_t i = 0; i < placements.size(); ++i)
    if (same_as[i] >= 0) {
      out[i] = out[static_cast<size_t>(same_as[i])];
      out[i].cached = true;
    }
  return out;
}

const Evaluation* CachingEvaluator::find(uint64_t hash, const Placement& placement) {
  const auto it = index_.find(hash);
  if (it == index_.end()) return nullptr;
  for (Entries::iterator e : it->second)
    if (e->placement == placement) {
      entries_.splice(entries_.begin(), entries_, e);  // iterators stay valid
      return &e->evaluation;
    }
  return nullptr;
}

void CachingEvaluator::store(uint64_t hash, const Placement& placement, const Evaluation& evaluation) {
  const size_t bytes = entry_bytes(placement, evaluation);
  if (find(hash, placement)) {  // another batch stored it meanwhile: it is the front one now
    bytes_ -= entries_.front().bytes;
    entries_.front().evaluation = evaluation;
    entries_.front().bytes = bytes;
  } else {
    entries_.push_front(Entry{hash, placement, evaluation, bytes});
    index_[hash].push_back(entries_.begin());
  }
  bytes_ += bytes;
  while (bytes_ > capacity_bytes_ && !entries_.empty()) erase(std::prev(entries_.end()));
}

void CachingEvaluator::erase(Entries::iterator it) {
  auto slot = index_.find(it->hash);
  std::vector<Entries::iterator>& same_hash = slot->second;
  same_hash.erase(std::find(same_hash.begin(), same_hash.end(), it));
  if (same_hash.empty()) index_.erase(slot);
  bytes_ -= it->bytes;
  entries_.erase(it);
}

void CachingEvaluator::drop_unmeasured() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto next = std::next(it);
    if (!it->evaluation.measured) erase(it);
    it = next;
  }
}

size_t CachingEvaluator::cached_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t CachingEvaluator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void CachingEvaluator::add_stats(EvalStats& stats) const {
  stats.evaluations += evaluations_.load();
  stats.cache_hits += hits_.load();
  inner_->add_stats(stats);
}

}  // namespace placer
