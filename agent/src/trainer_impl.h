// The Trainer and its per-graph Task, shared by the training loop
// (trainer.cc), checkpoints (trainer_checkpoint.cc) and run outputs
// (trainer_outputs.cc). Private to agent/src: never include it elsewhere.
#pragma once

#include <torch/optim.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "placer/agent/compare.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "policy.h"
#include "trainer.h"

namespace YAML {
class Node;
}

namespace placer {

using Clock = std::chrono::steady_clock;

// The placements (unit devices) a task's updates sampled, at most `cap` of them: past
// that the oldest are dropped (a long run's record grew without bound, and every
// checkpoint rewrote all of it). Iterates oldest first.
class SampledSet {
 public:
  static constexpr size_t kDefaultCap = 100000;
  explicit SampledSet(size_t cap = kDefaultCap) : cap_(std::max<size_t>(1, cap)) {}
  // True when `units` was not held (it is now, the oldest dropped past the cap).
  bool insert(const std::vector<int32_t>& units);
  size_t size() const { return set_.size(); }
  bool contains(const std::vector<int32_t>& units) const { return set_.count(units) > 0; }
  int64_t dropped() const { return dropped_; }  // distinct placements dropped for the cap
  void clear();
  template <typename F>
  void for_each(F&& f) const {
    for (const std::vector<int32_t>* u : order_) f(*u);
  }

 private:
  size_t cap_;
  std::unordered_set<std::vector<int32_t>, UnitsHash> set_;
  std::deque<const std::vector<int32_t>*> order_;  // into set_ (its elements never move)
  int64_t dropped_ = 0;
};

struct Task {
  GraphSource source;
  std::unique_ptr<Environment> env;
  PolicyInput problem;
  Placement warm;
  bool has_warm = false;
  std::string warm_method;
  double warm_step_s = 0.0;
  double baseline = 0.0;
  bool baseline_init = false;
  double best_reward = -std::numeric_limits<double>::infinity();
  double best_step_s = 0.0;
  bool best_measured = false;
  int64_t best_at = 0;
  Placement best;
  std::vector<BaselineResult> warm_results;
  std::vector<std::pair<double, Placement>> warm_placements;  // reward and placement of each placed baseline
  // The best distinct placements found (OptimizerConfig::elites), best first,
  // with their teacher-forced rollouts.
  struct Elite {
    double reward;
    std::vector<int32_t> units;
    Rollout rollout;
    int64_t at = 0;  // the sample that found it (0: not sampled by the policy: a warm start's baseline)
  };
  std::vector<Elite> elites;
  int64_t samples = 0;  // the run's samples drawn on this task (a family run's compare gets graph 0's)
  // The environment's counters (cache hits, measurements, measured steps, calibrations) of the run's
  // earlier sessions, from the checkpoint: a resumed run's figures cover the whole run, as its samples do.
  EvalStats earlier;
  // Every placement (unit devices) the run's updates sampled: the rows
  // OptimizerConfig::distinct_redraws draws again; checkpoints keep it.
  SampledSet sampled;
  int32_t fine_units = 0;           // the last stage's unit count (OptimizerConfig::unit_stages), once known
  int64_t sampled_earlier = 0;      // distinct placements sampled in earlier stages (`sampled` holds this stage's)
  mutable std::string fingerprint;  // of the graph and cluster (problem_fingerprint), once asked for
};

// Rows (unit devices) of a batch evaluated, not yet applied to their task: their placements and the
// environment's answers.
struct ScoredRows {
  std::vector<Placement> placements;
  std::vector<Evaluation> evals;
};

class Trainer {
 public:
  Trainer(const TrainConfig& c, MetricsSink* sink, const TrainControls& ctl) : c_(c), sink_(sink), ctl_(ctl) {}
  TrainResult run();

 private:
  // run()'s steps (trainer.cc).
  EnvOptions setup();
  void start();
  bool update_until_budget();  // sets ended_by_
  void warm_start(Task& t);
  // The warm start's choice of the placement to clone, so far.
  struct WarmChoice {
    double reward = -std::numeric_limits<double>::infinity();
    bool heuristic = false, ok = false;
  };
  void offer_warm(Task& t, const Compared& c, WarmChoice& w);
  bool cancelled() const { return ctl_.cancel && ctl_.cancel->load(); }
  void behaviour_clone();
  void one_update();
  // Coarse to fine (OptimizerConfig::unit_stages): the stage of the budget used so far, the
  // task's policy input at a stage, and the switch to a stage (elites and best re-cut to its units).
  int stage_now() const;
  int64_t part_used(int64_t parts) const;
  PolicyInput stage_input(Task& t, int stage);
  void enter_stage(int stage);
  // one_update()'s steps.
  struct Advantages {
    torch::Tensor A, W;  // per row: the clipped advantage and the mask of stochastic rows
    int32_t n;           // the number of stochastic rows
  };
  // New placements in place of the rows past the greedy ones that repeat a sampled placement (distinct_redraws).
  std::vector<std::vector<int32_t>> redraw_repeats(Task& t, const Rollout& r, SampleOptions so,
                                                   std::vector<int32_t>* slots);
  // Evaluated rows (unit devices) applied to the task: its elites and best. Their rewards; adds their step
  // times to *step_sum.
  std::vector<double> apply_scores(Task& t, const std::vector<std::vector<int32_t>>& rows, const ScoredRows& s,
                                   double* step_sum, const std::vector<int32_t>* slots = nullptr);
  // The batch and its redraws evaluated, then applied and recorded as sampled: a batch given up
  // (EvaluationCancelled) leaves the task's record, best and elites as they were. The batch's rewards; its
  // step times' sum.
  std::vector<double> score_batch(Task& t, const Rollout& r, const SampleOptions& so, double* step_sum);
  // The elite pool seeded with the warm start's placements (a cancel ends the seeding and the run).
  void seed_elites();
  Advantages advantages(Task& t, const std::vector<double>& reward, int32_t greedy);
  std::pair<double, double> policy_step(Task& t, const Rollout& r, const Advantages& adv);
  void report_update(const Task& t, const LogRow& row);
  void print_progress(const LogRow& row, double session_s, int32_t K);
  // Offers a placement (unit devices) to the task's elite pool; `at`: the sample that found it (0: none).
  void offer_elite(Task& t, double reward, const std::vector<int32_t>& units, int64_t at = 0);
  // Offers an op-level placement, cut to the task's units: `reward` stands when the cut
  // leaves it unchanged; otherwise (or without one) the cut placement is evaluated.
  void offer_placement(Task& t, const Placement& placement, std::optional<double> reward, int64_t at = 0);
  // The self-imitation loss of the task's elites (a zero tensor when there are none).
  torch::Tensor elite_loss(Task& t);
  void save_checkpoint();
  void load_checkpoint(const std::string& path);
  std::string state_json() const;
  void write_outputs(TrainResult* result);
  // The rows the result is chosen from besides the policy's best (the warm
  // start's, with `compare` the config's compare methods, controls.seen).
  void compare_baselines(TrainResult* result, bool compare);
  void refine(TrainResult* result);
  BaselineResult evaluated_row(const std::string& method, const Placement& placement, const std::string& note);
  // The result: the policy's best, or a faster row (ties go to the row). With
  // `measure`, in a mode that measures, every row is first measured side by
  // side (measure_rows; trainer_outputs.cc).
  void final_table(TrainResult* result, bool measure);
  // Measured and hybrid runs (reward.finalists): the policy's best and its next sampled elites measured side
  // by side, the fastest median kept as the policy's best before the final table measures it afresh.
  void pick_finalist(TrainResult* result);
  void see_zero_shot_answer();
  void measure_rows(TrainResult* result);
  void retake_in_a_spell(const std::vector<Placement>& rows, std::vector<StepResult>& results, TrainResult* result);
  // Resuming: the warm-start placements stored in the checkpoint.
  void restore_warm_starts(const std::string& ckpt);
  void restore_warm_starts(const std::string& ckpt, const YAML::Node& state);
  // Fine-tuning: the policy's weights from another run's checkpoint (policy.init_from).
  // Returns the most devices that checkpoint's policy trained on (0: unknown).
  int32_t init_weights(const std::string& from);
  // Sets trained_devices_ and refuses a held-out cluster of more devices.
  void check_held_out_devices(int32_t inherited);
  // gnn: held-out graphs, placed by the trained policy with no training.
  void place_held_out(const EnvOptions& eo, TrainResult* result);
  void write_summary(const TrainResult& result);
  std::string pipeline_summary(const TrainResult& result) const;

  const TrainConfig& c_;
  MetricsSink* sink_;
  TrainControls ctl_;
  Cluster cluster_;
  // c_.held_out's graphs and clusters, loaded and checked at setup (they are placed after training).
  std::vector<std::pair<Graph, Cluster>> held_out_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::shared_ptr<PolicyImpl> policy_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::mt19937_64 rng_;
  int64_t update_ = 0, samples_ = 0;
  double rl_seconds_ = 0.0;  // cumulated over resumed sessions
  double session_start_rl_ = 0.0;
  int64_t session_start_samples_ = 0;
  int64_t session_start_update_ = 0;
  Clock::time_point session_t0_;
  std::vector<LogRow> rows_;
  std::string dir_;
  std::string profile_content_;  // of reward.profile, read once at setup (checkpoints keep it; a resume compares)
  bool tty_ = false;
  int64_t printed_twentieth_ = -1;  // progress lines off a terminal: the last twentieth of the budget printed
  std::string unprinted_progress_;  // off a terminal: the last update's line, when not printed yet
  // The most devices the policy trains on (kTrainedDevicesKey): this run's tasks' and policy.init_from's.
  int32_t trained_devices_ = 0;
  int stage_ = 0;  // the units' stage of the tasks' current policy inputs
  int bc_steps_used_ = 0;
  bool bc_reproduced_ = false;
  bool bc_cancelled_ = false;  // cut short by a cancel (a server stopping): a resume clones again
  bool warm_cut_ = false;      // the warm start cut short by a cancel: no checkpoint, a resume starts it again
  std::string ended_by_;       // what ended the policy updates (TrainResult::ended_by)
};

// Shared by the three trainer files.
PolicyOptions policy_options(const TrainConfig& c);
// A compared placer as the run reports it (summary.json, the metrics sink).
BaselineResult baseline_result(const Compared& c);
// A double as JSON, infinities clamped to +-1e308.
std::string num(double v);
// A placement as a JSON list of device indices.
std::string placement_json(const Placement& p);
// The profile file's identity for a resume: its bytes' FNV-1a, "" for none (an unreadable file: its path).
std::string profile_content(const std::string& path);
// The task's evaluation counters over the whole run: this session's and its earlier sessions' (Task::earlier).
EvalStats run_stats(const Task& t);

}  // namespace placer
