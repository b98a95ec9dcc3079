// Evaluators: placements in, evaluations (result, penalty, step seconds and
// reward) out. In the spirit of TVM auto_scheduler's ProgramMeasurer and
// Runner: one interface with a simulating, a measuring, a hybrid and a remote
// implementation (DistributedEvaluator, env/remote.h), and a caching wrapper.
// All of them share one PreparedProblem: the graph, the cluster and what is
// derived from them once (simulator context, base cost model, lower bound).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"
#include "placer/runtime/runtime.h"

namespace placer {

struct ExecRules;              // graphs/exec_plan.h
using SimContext = ExecRules;  // as env/simulator.h names it

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

// A graph and a cluster with what every evaluation of them needs, built once
// and shared read-only (by pointer) between environments and evaluators.
class PreparedProblem {
 public:
  // Validates the cluster (InputError). `profile` calibrates the base cost
  // model; without one it is the cluster's roofline.
  static std::shared_ptr<const PreparedProblem> make(Graph graph, Cluster cluster,
                                                     std::optional<Profile> profile = std::nullopt);
  ~PreparedProblem();
  PreparedProblem(const PreparedProblem&) = delete;
  PreparedProblem& operator=(const PreparedProblem&) = delete;

  const Graph& graph() const { return graph_; }
  const Cluster& cluster() const { return cluster_; }
  const Profile* profile() const { return profile_ ? &*profile_ : nullptr; }
  const SimContext& context() const { return *context_; }
  const CostModel& base_costs() const { return base_costs_; }
  double lower_bound() const;  // computed on first use

  // The pipeline objective's problem: this training graph unrolled into one
  // mini-batch of spec.microbatches micro-batches under spec.schedule
  // (graphs/pipeline.h), on the same cluster, with the same profile (a
  // micro-batch copy "x@mbK" takes the profile's times of "x"). Made on first
  // use per spec and kept, so environments sharing this problem share it.
  // Throws GraphError as make_pipeline_graph does.
  std::shared_ptr<const PreparedProblem> pipelined(const PipelineSpec& spec) const;
  // A problem made by pipelined(): its spec, and the placement of its
  // unrolled graph that puts every copy where `base` (a placement of the
  // training graph) puts its op. Null / PLACER_CHECK for other problems.
  const PipelineSpec* pipeline_spec() const { return unrolled_ ? &unrolled_->spec : nullptr; }
  Placement expand(const Placement& base) const;

 private:
  PreparedProblem() = default;
  void prepare(const Graph* measured = nullptr);  // context, base costs (measured: the graph copied, pipelined)
  Graph graph_;
  Cluster cluster_;
  std::optional<Profile> profile_;
  std::unique_ptr<SimContext> context_;
  CostModel base_costs_;
  mutable std::once_flag lb_once_;
  mutable double lb_ = 0.0;
  // pipelined(): its problems so far; of such a problem, how it maps back
  // (its graph moved to graph_).
  mutable std::mutex pipelined_mu_;
  mutable std::vector<std::pair<PipelineSpec, std::shared_ptr<const PreparedProblem>>> pipelined_;
  std::unique_ptr<PipelineGraph> unrolled_;
};

struct Evaluation {
  StepResult result;
  double reward = 0.0;
  double step_s = 0.0;     // the step time the reward counts: result.step_s when ok, else penalty_s
  double penalty_s = 0.0;  // a failure's step time equivalent (0 when ok)
  bool cached = false;
  bool measured = false;  // result came from the runtime
};

// Step time equivalent of a failure: failures cost a penalty, OOMs more the
// more they overflow, so a search still sees which failure is closer to fitting.
double failure_penalty_seconds(const StepResult& result, const RewardOptions& options);
double reward_of(const StepResult& result, const RewardOptions& options);
// The evaluation of a result: penalty, step seconds and reward.
Evaluation score(StepResult result, const RewardOptions& options, bool measured);

struct EvalStats {
  int64_t evaluations = 0;
  int64_t cache_hits = 0;
  int64_t measurements = 0;
  int64_t measured_steps = 0;  // steps run for measurements (warm-up excluded)
  int64_t remote = 0;          // evaluations (simulations or measurements) done by a RemoteEvaluator
  int64_t calibrations = 0;    // hybrid: times the simulator was refit to measurements
  double step_scale = 1.0;     // hybrid: the current measured / simulated step factor
  double link_factor = 1.0;    // hybrid: the current factor on CPU<->GPU link times
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // One evaluation per placement, in order. Placements are valid for the
  // problem (and, behind a CachingEvaluator, distinct and not cached).
  virtual std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) = 0;
  // Changes when unmeasured evaluations given before may differ from what
  // evaluate gives now (hybrid: after each recalibration).
  virtual int64_t generation() const { return 0; }
  // Adds this evaluator's counters (and those of evaluators it wraps).
  virtual void add_stats(EvalStats& stats) const { (void)stats; }
};

// The cost model an environment simulates with: the problem's base costs,
// refit to measurements in hybrid mode (per-device scales and one step factor).
class Calibration {
 public:
  explicit Calibration(std::shared_ptr<const PreparedProblem> problem);
  const PreparedProblem& problem() const { return *problem_; }
  const std::shared_ptr<const PreparedProblem>& problem_ptr() const { return problem_; }
  // With the current corrections. Does not validate the placement.
  StepResult simulate(const Placement& placement) const;
  // Refits the corrections with one more measured sample (ignored unless ok).
  void refit(const Placement& placement, const StepResult& measured);
  // The current model, held: a later refit replaces it without changing this one.
  std::shared_ptr<const CostModel> costs() const;
  int64_t refits() const;
  double step_scale() const;
  double link_factor() const;  // on CPU<->GPU link times (1: none, or not fitted yet)

 private:
  struct Sample {
    Placement placement;
    StepResult simulated;  // with the base costs
    StepResult measured;
  };
  std::pair<std::shared_ptr<const CostModel>, double> current() const;
  // The factor on CPU<->GPU link times that best explains the differences
  // between the measured placements (1 without such links or samples).
  double cross_link_factor(const CostModel& model) const;

  std::shared_ptr<const PreparedProblem> problem_;
  mutable std::mutex mu_;  // the current corrections (below), read by every simulate()
  std::mutex refit_mu_;    // one refit at a time; guards samples_ (fits run outside mu_)
  std::shared_ptr<const CostModel> costs_;
  double step_scale_ = 1.0;
  double link_factor_ = 1.0;
  std::vector<Sample> samples_;
  int64_t refits_ = 0;
};

// Simulates on up to `threads` threads with the calibration's current model.
class SimulatedEvaluator : public Evaluator {
 public:
  SimulatedEvaluator(std::shared_ptr<const Calibration> calibration, RewardOptions reward, int threads);
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override;

 private:
  std::shared_ptr<const Calibration> calibration_;
  RewardOptions reward_;
  int threads_;
};

// Runs a batch of placements on this machine's Runtime (made on first use),
// interleaved, with the measurement protocol. It keeps every placement's
// samples: one measured again (measure_side_by_side) adds to them, unless the
// run is fresh: that one starts from none and leaves the kept samples as they were.
//
// Paired (reward.paired): the first placement it evaluates is the reference,
// measured again beside every later batch. A placement's step is then the
// reference's median step at its first measurement times the median of the
// placement's per-round ratios to the reference, over every round of every
// batch it was measured in (its interval likewise): a shared machine's drift
// between batches (20-40% within minutes on the 2-core VM) falls on the
// reference alike and cancels, where raw medians of batches measured minutes
// apart rank by the machine's mood. Its samples_s stay the raw steps.
// Costs one more placement per batch.
class MeasuredEvaluator : public Evaluator {
 public:
  MeasuredEvaluator(std::shared_ptr<const PreparedProblem> problem, RewardOptions reward, MeasureOptions measure,
                    bool paired = false);
  ~MeasuredEvaluator() override;
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override;
  // max_steps > 0: at most that many steps per placement instead of the protocol's; target > 0: until the
  // median's 95% interval is within that share of it instead of the protocol's target_halfwidth.
  std::vector<StepResult> measure_side_by_side(const std::vector<Placement>& placements, bool fresh, int max_steps = 0,
                                               double target = 0);
  // The lowest cross-core probe reading of its measurements so far (each one's
  // median over its steps, StepResult::core_rtt_s); 0 when none was read.
  double quietest_core_rtt_s() const;
  void add_stats(EvalStats& stats) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Simulates everything, measures (with `measurer`) the best `measure_top` of
// each batch of two or more and every placement whose simulated reward beats
// the best seen so far, refits the calibration to each measurement, and
// simulates the rest again with the refit model.
class HybridEvaluator : public Evaluator {
 public:
  HybridEvaluator(std::shared_ptr<Calibration> calibration, std::unique_ptr<Evaluator> measurer, RewardOptions reward,
                  int threads, int measure_top);
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override;
  int64_t generation() const override;
  void add_stats(EvalStats& stats) const override;

 private:
  std::shared_ptr<Calibration> calibration_;
  std::unique_ptr<Evaluator> measurer_;
  SimulatedEvaluator simulator_;
  int measure_top_;
  std::mutex best_mu_;
  double best_reward_;  // best reward seen (simulated or measured); -inf at first
};

// Remembers evaluations by placement, the most recently used ones within
// `capacity_bytes` (placements and evaluations as held in memory, estimated:
// an inception_v3 entry is some 6 KB, so the default keeps ~10,000 of them; a
// local search of a million evaluations kept them all); a repeated placement
// (in the cache or earlier in the same batch) is a hit. Unmeasured entries are
// dropped when the inner evaluator's generation changes. Nothing is cached
// when it throws.
class CachingEvaluator : public Evaluator {
 public:
  static constexpr size_t kDefaultCapacityBytes = size_t{64} << 20;
  explicit CachingEvaluator(std::unique_ptr<Evaluator> inner, size_t capacity_bytes = kDefaultCapacityBytes);
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override;
  int64_t generation() const override { return inner_->generation(); }
  void add_stats(EvalStats& stats) const override;
  size_t cached_entries() const;
  size_t cached_bytes() const;  // as estimated, at most the capacity

 private:
  struct Entry {
    uint64_t hash;
    Placement placement;
    Evaluation evaluation;
    size_t bytes;
  };
  using Entries = std::list<Entry>;
  // Under mu_: the cached evaluation of `placement` (made the most recently used), or null.
  const Evaluation* find(uint64_t hash, const Placement& placement);
  // Under mu_: caches (or replaces) one, then evicts the least recently used past the capacity.
  void store(uint64_t hash, const Placement& placement, const Evaluation& evaluation);
  void erase(Entries::iterator it);
  void drop_unmeasured();

  std::unique_ptr<Evaluator> inner_;
  size_t capacity_bytes_;
  mutable std::mutex mu_;
  int64_t cached_generation_ = 0;  // generation the cached unmeasured entries were made in
  Entries entries_;                // the most recently used first
  std::unordered_map<uint64_t, std::vector<Entries::iterator>> index_;
  size_t bytes_ = 0;
  std::atomic<int64_t> evaluations_{0};
  std::atomic<int64_t> hits_{0};
};

}  // namespace placer
