// The measurement protocol (runtime.h): warm-up, then measured steps of every
// candidate placement interleaved (a shuffled order each round), until each one's median is known within
// the target, its step count runs out, or the shared budget does. One out of memory beside the others' params and
// inputs is then measured again alone (measure_alone).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "internal.h"
#include "placer/graphs/error.h"

namespace placer {

void validate(const MeasureOptions& o) {
  if (o.warmup_steps < 0) throw InputError("measure: warmup_steps must be >= 0");
  if (o.measured_steps < 1) throw InputError("measure: measured_steps must be >= 1");
  if (o.max_steps < 0) throw InputError("measure: max_steps must be >= 0");
  if (!(o.target_halfwidth >= 0 && o.target_halfwidth < 1))
    throw InputError("measure: target_halfwidth must be in [0, 1) (a fraction of the median)");
  if (!(o.budget_s >= 0)) throw InputError("measure: budget_s must be >= 0");
  if (!(o.min_time_s >= 0 && o.min_time_s <= 3600))
    throw InputError("measure: min_time_s must be in [0, 3600] seconds");
  if (!(o.timeout_s > 0)) throw InputError("measure: timeout_s must be > 0");
  if (o.rewarm_steps < 0 || o.rewarm_steps > 100) throw InputError("measure: rewarm_steps must be in [0, 100]");
}

namespace {

// One placement under measurement: its plan, its session (params stay
// resident between its steps) and what it measured so far.
struct Candidate {
  KernelPlan plan;
  Session session;
  StepResult result;
  std::vector<std::vector<double>> busy;  // per device, per measured step
  size_t index = 0;                       // in the caller's list
  bool active = true;
  bool enough = false;      // done() said so (result.stop set); under lockstep it steps on while others measure
  int measured = 0;         // steps taken now (prior samples not counted)
  double measured_s = 0.0;  // their seconds
};

// The params and inputs of every other candidate, resident beside c's while it steps (each keeps its own from
// its set-up to its end, or its failure): counted, per device, against the capacity with c's own bytes. An oom
// that counted them is not c's own: c is measured again alone (measure_alone).
void set_beside(const std::deque<Candidate>& cands, Candidate& c) {
  std::vector<int64_t>& beside = c.session.beside_bytes;
  beside.assign(c.session.persistent_bytes.size(), 0);
  for (const Candidate& other : cands)
    if (&other != &c)
      for (size_t i = 0; i < beside.size(); ++i) beside[i] += other.session.persistent_bytes[i];
}

// A candidate that failed holds nothing more: its params and inputs go, and stop counting beside the others'.
void drop_values(Session& session) {
  for (at::Tensor& t : session.persistent) t = at::Tensor();
  std::fill(session.persistent_bytes.begin(), session.persistent_bytes.end(), 0);
}

// What a step (or the set-up pass) of `c` gave; false (and c.result's status set) when it failed.
bool absorb(Candidate& c, const StepOutcome& out, bool sample) {
  if (out.status != StepStatus::Ok) drop_values(c.session);
  // A step taken after the measurement ended (lockstep, to pair another placement's rounds; the traced step):
  // its failure leaves the finished measurement as it was.
  if (out.status != StepStatus::Ok && c.enough) {
    c.active = false;
    return false;
  }
  StepResult& r = c.result;
  for (size_t i = 0; i < r.devices.size(); ++i)
    r.devices[i].peak_bytes = std::max(r.devices[i].peak_bytes, out.peak_bytes[i]);
  if (out.status != StepStatus::Ok) {
    c.active = false;
    r.status = out.status;
    r.message = out.message;
    r.oom_device = out.oom_device;
    r.oom_needed_bytes = out.oom_needed;
    r.oom_capacity_bytes = out.oom_capacity;
    r.transfer_bytes = out.transfer_bytes;
    return false;
  }
  r.transfer_bytes = out.transfer_bytes;
  if (sample) {
    r.samples_s.push_back(out.step_s);
    for (size_t i = 0; i < c.busy.size(); ++i) c.busy[i].push_back(out.busy_s[i]);
    ++c.measured;
    c.measured_s += out.step_s;
  }
  return true;
}

// Runs one step of `c`; false (and c.result's status set) when it failed.
bool step(Executor& executor, std::deque<Candidate>& cands, Candidate& c, const MeasureOptions& o, bool sample,
          std::vector<TimelineEvent>* timeline) {
  set_beside(cands, c);
  return absorb(c, executor.run_step(c.session, o.timeout_s, timeline), sample);
}

// Whether `c` has measured enough; sets result.stop when it has.
bool done(Candidate& c, const MeasureOptions& o) {
  StepResult& r = c.result;
  const int n = static_cast<int>(r.samples_s.size());
  if (c.measured < 1 || n < o.measured_steps) return false;
  if (c.measured_s < o.min_time_s) return false;
  if (o.min_time_s > 0 && n > std::max(o.max_steps, o.measured_steps)) {  // held past the count by min_time
    r.stop = "min_time";                                                  // summarized with the others in results()
    return true;
  }
  if (o.max_steps <= o.measured_steps) {
    r.stop = "steps";
    return true;
  }
  r.summarize();
  if (o.target_halfwidth > 0 && r.ci_level >= kIntervalConfidence &&
      0.5 * (r.ci_high_s - r.ci_low_s) <= o.target_halfwidth * r.step_s) {
    r.stop = "target";
    return true;
  }
  if (n >= o.max_steps) {
    r.stop = "max_steps";
    return true;
  }
  return false;
}

// PLACER_MEASURE_ORDER: "shuffled" (the default) or "fixed"; anything else is an error.
bool shuffled_rounds() {
  const char* env = std::getenv("PLACER_MEASURE_ORDER");
  const std::string order = env ? env : "shuffled";
  if (order != "shuffled" && order != "fixed")
    throw InputError("PLACER_MEASURE_ORDER: '" + order + "' is neither 'shuffled' (the default) nor 'fixed'");
  return order == "shuffled";
}

// The protocol's inputs, checked before the runtime is locked.
void check_inputs(const Cluster& cluster, const Graph& graph, const std::vector<Placement>& placements,
                  const MeasureOptions& o, const std::vector<std::vector<double>>* prior) {
  validate(o);
  shuffled_rounds();  // a bad PLACER_MEASURE_ORDER stops it before any step
  if (prior && prior->size() != placements.size())
    throw InputError("measure: the prior samples are for " + std::to_string(prior->size()) + " placements, not " +
                     std::to_string(placements.size()));
  for (const Placement& p : placements) validate_placement(graph, cluster, p);
}

// The candidate for placements[k], appended to `cands`: its plan, a fresh session and its prior samples.
// `cands` is a deque: sessions point at their plans.
Candidate& add_candidate(std::deque<Candidate>& cands, const Cluster& cluster, const Graph& graph,
                         const std::vector<Placement>& placements, size_t k, const MeasureOptions& o,
                         const std::vector<std::vector<double>>* prior) {
  const int d = cluster.size();
  Candidate& c = cands.emplace_back();
  c.index = k;
  c.plan = make_plan(graph, placements[k], d, false);
  c.session = new_session(c.plan, o.seed, d);
  c.result.devices.resize(d);
  for (int i = 0; i < d; ++i) c.result.devices[i].device = cluster.devices[i].name;
  c.busy.resize(d);
  if (prior) c.result.samples_s = (*prior)[k];
  c.result.prior_samples = static_cast<int64_t>(c.result.samples_s.size());
  return c;
}

// The set-up pass of every candidate, in order, before any step (untimed): its params and inputs made, counted
// beside those of the candidates before it. One that does not fit beside them is out of memory (and measured
// again alone at the end: measure_alone).
void set_up(Executor& ex, std::deque<Candidate>& cands) {
  for (Candidate& c : cands) {
    set_beside(cands, c);
    absorb(c, ex.prepare(c.session), false);
  }
}

// Warm-up: each candidate in turn (caches and the allocator warm).
void warm_up(Executor& ex, std::deque<Candidate>& cands, const MeasureOptions& o) {
  for (Candidate& c : cands)
    for (int w = 0; w < o.warmup_steps && c.active; ++w) step(ex, cands, c, o, false, nullptr);
}

// Whether the shared budget, `spent`, stops `c` (it has its minimum of samples); sets result.stop when it does,
// unless `c` already had enough (lockstep: it keeps the stop it met first).
bool out_of_budget(Candidate& c, const MeasureOptions& o, double spent) {
  if (o.budget_s > 0 && spent >= o.budget_s && c.measured > 0 &&
      static_cast<int>(c.result.samples_s.size()) >= o.measured_steps) {
    if (!c.enough) c.result.stop = "budget";
    return true;
  }
  return false;
}

// The cross-core probe (StepResult::core_rtt_s): the first cores of the first
// two pinned CPU devices, read at a round's start every kProbeEvery seconds
// (the spells it catches last seconds) once the executor's idle threads on
// those cores have stopped spinning, so that they do not share its cores.
// A reading that failed (other work held one of the cores for the probe's
// 50 ms) is taken again at the next round's start, up to kRetries rounds in a
// row, before the probe waits its period: one busy moment at a measurement's
// start left every step of a short measurement unread (CI, stop 55). Once a
// streak has used its retries, failures keep the period until a reading succeeds.
class CoreProbe {
 public:
  explicit CoreProbe(const Executor& ex) : ex_(ex), on_(!probe_cores(ex).empty()) {}
  bool on() const { return on_; }
  // The latest reading (-1: it could not be read), probing first when it is due.
  double read() {
    const auto now = std::chrono::steady_clock::now();
    const bool retry = last_ < 0 && failed_in_a_row_ <= kRetries;
    if (!read_ || retry || std::chrono::duration<double>(now - when_).count() >= kProbeEvery) {
      last_ = read_core_probe(ex_);
      when_ = std::chrono::steady_clock::now();
      read_ = true;
      failed_in_a_row_ = last_ < 0 ? failed_in_a_row_ + 1 : 0;
    }
    return last_;
  }

 private:
  static constexpr double kProbeEvery = 0.25;
  static constexpr int kRetries = 3;
  const Executor& ex_;
  bool on_;
  bool read_ = false;
  double last_ = -1;
  int failed_in_a_row_ = 0;
  std::chrono::steady_clock::time_point when_;
};

// Measured rounds: one step of each active candidate per round, until none is
// active. Each round takes the candidates in a fresh order drawn from the seed:
// a step can leave the machine worse for the next one (threads still spinning,
// caches and clocks changed), and in a fixed order A B C A B C that carry-over
// always lands on the same candidate (on an H200, one placement given twice
// measured 12% apart, p < 1e-4, bench/results/gpu_h200.md). Shuffled, every
// candidate follows every other alike, and the carry-over is shared noise.
// PLACER_MEASURE_ORDER=fixed brings the fixed order back, for that comparison
// (bench/run_order_effect.sh).
void measure_rounds(Executor& ex, std::deque<Candidate>& cands, const MeasureOptions& o) {
  double spent = 0.0;
  std::mt19937_64 rng(o.seed ^ 0x6d656173757265ULL);  // "measure": not the inputs' stream
  const bool shuffled = shuffled_rounds();
  std::vector<Candidate*> order;
  const Candidate* last = cands.empty() ? nullptr : &cands.back();  // whose step ran last (the warm-up's)
  CoreProbe probe(ex);
  for (bool any = true; any;) {
    any = false;
    const double rtt = probe.on() ? probe.read() : -1;
    order.clear();
    for (Candidate& c : cands)
      if (c.active) order.push_back(&c);
    if (shuffled) std::shuffle(order.begin(), order.end(), rng);
    for (Candidate* cp : order) {
      Candidate& c = *cp;
      if (out_of_budget(c, o, spent)) {
        c.active = false;
        continue;
      }
      // Another placement's step ran since this one's last: re-warm it first.
      if (last != &c)
        for (int w = 0; w < o.rewarm_steps && c.active; ++w) step(ex, cands, c, o, false, nullptr);
      last = &c;
      if (!c.active || !step(ex, cands, c, o, true, nullptr)) continue;
      spent += c.result.samples_s.back();
      if (probe.on()) c.result.core_rtt_s.push_back(std::max(rtt, 0.0));  // 0: not read this round
      if (o.on_step) o.on_step(c.index, c.result.samples_s.back());
      if (!c.enough) c.enough = done(c, o);
      if (c.enough && !o.lockstep)
        c.active = false;
      else if (!c.enough)
        any = true;
    }
  }
}

// Each candidate's result, summarized where it succeeded (median busy time per device).
std::vector<StepResult> results(std::deque<Candidate>& cands, int devices) {
  std::vector<StepResult> out;
  for (Candidate& c : cands) {
    if (c.result.ok()) {
      c.result.summarize();
      for (int i = 0; i < devices; ++i) c.result.devices[i].busy_s = quantile(c.busy[i], 0.5);
    }
    out.push_back(std::move(c.result));
  }
  return out;
}

// Set-up, warm-up and the measured rounds of the candidates, together.
void measure_together(Executor& ex, std::deque<Candidate>& cands, const MeasureOptions& o) {
  set_up(ex, cands);
  warm_up(ex, cands, o);
  measure_rounds(ex, cands, o);
}

// With a trace: one more step of the first candidate, on its warm session, recorded there (not a sample).
void trace_step(Executor& ex, std::deque<Candidate>& cands, const MeasureOptions& o,
                std::vector<TimelineEvent>* trace) {
  Candidate& c = cands.front();
  if (!c.result.ok()) return;
  // The traced step is one more, unmeasured: its failure (a timeout, traced steps being slower) must not
  // turn the measured steps' success into a failure. The measurement stands; the trace is dropped.
  c.enough = true;  // its measurement has ended (its stop is set)
  if (!step(ex, cands, c, o, false, trace)) trace->clear();
}

// Whether `c` failed out of memory with the other candidates' params and inputs counted beside its own on that
// device: an oom that measuring it together caused, or at least inflated (its needed bytes count theirs).
bool oom_beside_others(const Candidate& c) {
  if (c.result.status != StepStatus::Oom) return false;
  const std::vector<int64_t>& beside = c.session.beside_bytes;  // as its failed step (or set-up) counted them
  for (size_t i = 0; i < c.result.devices.size() && i < beside.size(); ++i)
    if (c.result.devices[i].device == c.result.oom_device) return beside[i] > 0;
  return false;
}

// After the rounds (and the trace): each candidate out of memory beside the others' params and inputs is
// measured again alone, one at a time, and that measurement replaces its result: a placement that fits alone is
// not failed for the company it was measured in (the trainer's measured rewards batch placements and cache what
// they measure for the whole run). The others have finished and hold nothing more; its set-up, warm-up and
// rounds are its own, under the same options (its own stop rule and budget), so its steps are not interleaved
// with theirs. If it fails alone too, that failure is its own and is reported, with its own bytes.
void measure_alone(Executor& ex, std::deque<Candidate>& cands, const Cluster& cluster, const Graph& graph,
                   const std::vector<Placement>& placements, const MeasureOptions& o,
                   const std::vector<std::vector<double>>* prior, std::vector<TimelineEvent>* trace) {
  bool dropped = false;
  for (Candidate& c : cands) {
    if (!oom_beside_others(c)) continue;
    if (!dropped)
      for (Candidate& other : cands) drop_values(other.session);
    dropped = true;
    std::deque<Candidate> alone;  // a fresh candidate: its result and counters reset
    add_candidate(alone, cluster, graph, placements, c.index, o, prior);
    measure_together(ex, alone, o);
    if (trace && &c == &cands.front()) trace_step(ex, alone, o, trace);
    c.result = std::move(alone.front().result);
    c.busy = std::move(alone.front().busy);
    c.active = false;
  }
}

// The protocol over the placements; with `trace`, one more step of the first
// placement, on its warm session, is recorded there (not a sample).
std::vector<StepResult> run_protocol(const Cluster& cluster, Executor& ex, std::mutex& mu, const Graph& graph,
                                     const std::vector<Placement>& placements, const MeasureOptions& o,
                                     const std::vector<std::vector<double>>* prior, std::vector<TimelineEvent>* trace) {
  check_inputs(cluster, graph, placements, o, prior);
  std::lock_guard<std::mutex> lk(mu);
  return protocol_steps(ex, cluster, graph, placements, o, prior, trace);
}

}  // namespace

std::vector<StepResult> protocol_steps(Executor& ex, const Cluster& cluster, const Graph& graph,
                                       const std::vector<Placement>& placements, const MeasureOptions& o,
                                       const std::vector<std::vector<double>>* prior,
                                       std::vector<TimelineEvent>* trace) {
  std::deque<Candidate> cands;
  for (size_t k = 0; k < placements.size(); ++k) add_candidate(cands, cluster, graph, placements, k, o, prior);
  measure_together(ex, cands, o);
  if (trace && !cands.empty()) trace_step(ex, cands, o, trace);
  measure_alone(ex, cands, cluster, graph, placements, o, prior, trace);
  return results(cands, cluster.size());
}

std::vector<StepResult> Runtime::measure_interleaved(const Graph& graph, const std::vector<Placement>& placements,
                                                     const MeasureOptions& o,
                                                     const std::vector<std::vector<double>>* prior) {
  return run_protocol(impl_->cluster, impl_->executor, impl_->mu, graph, placements, o, prior, nullptr);
}

StepResult Runtime::measure(const Graph& graph, const Placement& placement, const MeasureOptions& options,
                            std::vector<TimelineEvent>* timeline) {
  std::vector<TimelineEvent> events;
  const bool traced = options.timeline || timeline;
  StepResult r = run_protocol(impl_->cluster, impl_->executor, impl_->mu, graph, {placement}, options, nullptr,
                              traced ? &events : nullptr)
                     .front();
  if (timeline) *timeline = std::move(events);
  return r;
}

}  // namespace placer
