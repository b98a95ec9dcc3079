// Training the learned placer: configs, the training loop and its metrics.
// No LibTorch types here (the service and the CLI include this header).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placer/env/environment.h"
#include "placer/env/evaluator.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer {

class RemoteEvaluator;  // env/remote.h

// A graph to train on: a builder with options, or a graph file; or a graph
// given in memory (a service request's), which builder or file still name in
// the config's JSON.
struct GraphSource {
  std::string builder;                     // "nmt", "rnnlm", ... (see builders.h)
  std::map<std::string, int64_t> options;  // builder options
  bool forward_only = false;
  std::string file;                    // a graph file instead of a builder
  std::shared_ptr<const Graph> value;  // the graph itself (then neither built nor read)
  // family / held_out entries: the cluster this graph is placed on, when not
  // the config's `cluster` (a preset, cluster file or device list).
  std::string cluster;
  std::string describe() const;  // "nmt(layers=2,hidden=512)" or the file path; "... on p100x4" with a cluster
  Graph load() const;            // the value, or builds it, or reads the file
};

enum class PolicyType : uint8_t { Seq2Seq, Hierarchical, Gnn };
enum class DecoderKind : uint8_t { Lstm, Pointwise };
enum class Algorithm : uint8_t { Reinforce, Ppo };
// The names configs use ("seq2seq", "lstm", "reinforce"); parse_* throw
// InputError "unknown policy 'x' (expected ...)" without a field name.
const char* policy_type_name(PolicyType type);
const char* decoder_name(DecoderKind decoder);
const char* algorithm_name(Algorithm algorithm);
PolicyType parse_policy_type(const std::string& name);
DecoderKind parse_decoder(const std::string& name);
Algorithm parse_algorithm(const std::string& name);

// YAML section `policy`.
struct PolicyConfig {
  PolicyType type = PolicyType::Seq2Seq;
  int hidden = 64;          // LSTM / message-passing width
  int type_embedding = 16;  // op-type embedding width
  int max_groups = 256;     // seq2seq/gnn: coarsen co-location groups to at most this many
  // ... keeping each group of parameters and their updates a unit of its own
  // (coarsen's state_apart): at 256 units the pretrained gnn could not express
  // local_search's placement of the held-out transformer_mt (+17.7% cut to its
  // units, +0.0% with this; bench/results/learned_heldout.md).
  bool state_units = false;
  // ... and merging inside a model block (Op::layer) before across blocks
  // (coarsen's layers_first): at 256 units local_search's layer-wise placement
  // of nmt at sizes outside the family was 27-72% slower cut to the plain units.
  bool layer_units = false;
  int grouper_groups = 0;  // hierarchical: groups (0 = min(256, 20 x devices))
  int gnn_layers = 3;
  DecoderKind decoder = DecoderKind::Lstm;  // lstm (ColocRL) | pointwise (no recurrent state; for gnn families)
  // Placing without training (held-out graphs, `placer place --checkpoint`):
  // the greedy decode plus place_samples - 1 sampled ones; the simulator keeps
  // the fastest. 1 = greedy only.
  int place_samples = 16;
  // ... and as many again over 1/2, 1/4, ... of the units, place_levels
  // decodes in all (decode_levels; at least one unit per device): on the
  // held-out set the pretrained gnn placed mobilenet_v2 p100x4 26.7% behind
  // local_search with 1 level, 3.4% with 4 (bench/results/learned_heldout.md).
  int place_levels = 4;
  // ... and with time left (an anytime decode), this share of the further
  // rounds is drawn near the best so far: 1-8 units of it moved where the
  // policy draws them, given the rest (decode_levels, sample_around). The
  // policy proposes every placement; a search it guides. 0 = plain rounds only.
  // On the held-out set (5 pretraining seeds, the policy alone in 1 s), 0.5
  // placed 56 of 60 seed-cells within 5% of local_search@2,000, 0 placed 52
  // (transformer_mt k80x4 +6.4% -> +4.6%); 0.75 and 1 did no better there
  // (bench/results/learned_heldout.md, "Rounds near the best").
  double place_around = 0.5;
  // Fine-tuning (GDP's recipe: pretrain on a family, then train on a new
  // graph): start from the weights of this run folder's (or file's)
  // checkpoint instead of a random initialisation. Same policy type and sizes.
  std::string init_from;
  // ... and, on one graph, what the starting policy answers counts as seen, so
  // that fine-tuning never returns a slower placement than `placer place
  // --policy` would have: its default answer within this many seconds (the
  // policy, the fast path's heuristics, local_search from both; learned.h
  // place_with_policy). 0: the policy's fixed decode alone (the greedy decode and
  // samples at each unit level). Its evaluations are not the run's samples; the
  // result names who found it.
  double init_answer_s = 1.0;
};

// YAML section `reward`: how the environment scores a placement, as the
// environment takes it (env/environment.h RewardSettings: mode; reward.exponent
// and reward.failure_penalty_s; the measurement protocol, config keys
// measure_warmup, measure_steps (the minimum), measure_max_steps,
// measure_target, measure_budget_s; hybrid_measure_top), a profile, and the
// objective: objective (step | pipeline), microbatches, schedule (gpipe | 1f1b).
struct RewardConfig : RewardSettings {
  std::string profile;  // optional profile file calibrating the simulator
  // The final table's side-by-side measurement: at most this many steps per
  // row (its 95% interval is the reported one; 0: measure_max_steps).
  int final_max_steps = 60;
  // ... and until each row's median's 95% interval is within this share of it
  // (0: measure_target). The table's claims are differences between rows: a row
  // 1.5% faster than another is told apart only by intervals narrower than that.
  double final_target = 0;
  // Measured and hybrid runs: the policy's best is the fastest of noisy figures,
  // the more flattered the more placements were measured. Before the final table,
  // the policy's best and its next sampled elites, up to this many distinct
  // placements, are measured side by side (fresh, interleaved, up to
  // final_max_steps each) and the fastest median becomes the policy's best; the
  // final table then measures it afresh, so its figure is not the one it was
  // picked on. 0 or 1: the policy's best as it stands.
  int finalists = 4;
  // A final table whose cross-core probe read over spell_ratio times the
  // quietest reading of the run's earlier measurements ran in a slow spell of
  // copies between the cores, which slows copy-heavy rows more than the others
  // (bench/results/copy_probe_cpu2.md). It is measured again, 2 s later, at most
  // final_retakes times, and the take that read lower is kept. 0: never.
  int final_retakes = 1;
  double spell_ratio = kSpellRatio;
};

// YAML section `train`: the optimiser and the run's budgets.
struct OptimizerConfig {
  Algorithm algorithm = Algorithm::Reinforce;
  int64_t updates = 100;  // policy updates (the run stops at the first budget reached)
  int samples_per_update = 16;
  int64_t max_samples = 0;    // 0 = no sample budget
  double time_limit_s = 0.0;  // 0 = no time limit
  double lr = 0.01;
  double lr_decay = 1.0;  // multiplied into lr every lr_decay_every updates
  int lr_decay_every = 50;
  double entropy_weight = 0.01;
  double baseline_decay = 0.9;  // exponential moving average of the reward
  double grad_clip = 1.0;
  double temperature = 1.0;
  double logit_noise = 0.5;         // std of Gaussian logit noise at the start
  double logit_noise_decay = 0.97;  // per update
  bool greedy_sample = true;        // add the greedy decode to every update's samples
  // For each sampled placement the run already evaluated (or an earlier row
  // of the same batch holds), one more placement is drawn with more logit
  // noise and evaluated, so that every sample the budget counts is new: up to
  // distinct_redraws batches per update (logit noise max(noise, 0.25), then x4
  // per batch). The redrawn placements count toward the best and the elites;
  // the policy gradient keeps the batch as sampled. The greedy decode's
  // repeats are not replaced. 0 = off; -1 (default): 4 on one graph, 0 with
  // measured rewards (there the best of more noisy measurements is the more
  // flattered: on nmt cpu:2 the policy's best held up on 2 of 5 seeds with
  // redraws, 4 of 5 without; bench/results/learned_measured_cpu2.md) and 0 on
  // a family (pretraining: the redrawn elites it clones are each graph's own
  // noisy finds; configs/pretrain_gnn.yaml with redraws placed 6 of the 12
  // held-out cells within 5% of local_search zero-shot, 9 of 12 without;
  // bench/results/learned_heldout.md).
  int distinct_redraws = -1;
  int ppo_epochs = 4;
  double ppo_clip = 0.2;
  // Self-imitation from a population (CEM-like, after Post; SIL): the best
  // `elites` distinct placements found so far (the warm start's baselines
  // first) are cloned at every update with weight elite_weight beside the
  // policy-gradient loss. 0 = off (plain REINFORCE / PPO).
  int elites = 8;
  double elite_weight = 1.0;
  // After training, local_search's annealing from the fastest placement the
  // run evaluated (the policy's best or a warm-start baseline) for this many
  // evaluations; its placement is one more row of the final table, "refine".
  // The policy's own best stays apart from it. 0 = off.
  int64_t refine_evaluations = 0;
  // Coarse to fine (multilevel, as graph partitioners refine): the run's budget
  // in unit_stages equal stages (of the updates, samples or time, whichever is
  // furthest along; checkpoints keep the stage); stage s of S places units coarsened to the
  // finest unit count / 2^(S-1-s) (at least one per device), the last stage
  // the policy's own units (policy.max_groups). At each stage the task's
  // elites and best carry over (re-cut to the new units) and the policy's
  // weights go on: the coarse stages find where whole blocks go (a layer's
  // cells together), the later ones refine. seq2seq and gnn. 1 = off.
  int unit_stages = 1;
};

// YAML section `warm_start`: behaviour cloning the best of these algorithmic placements.
struct WarmStartConfig {
  std::vector<std::string> methods = {"m_etf", "m_topo", "expert"};
  int bc_steps = 200;
  double bc_lr = 0.01;
  // Which placement the policy clones: the best deterministic heuristic
  // (false; a search's placement only seeds the elite pool) or the best of
  // every method, a search's included (true).
  bool clone_search = false;
  // The policy's units are split where the cloned placement splits them, so
  // that it is exactly expressible (true). false: the units a zero-shot
  // placement of an unseen graph sees, which has no warm start to split by
  // (a family pretrained for unseen graphs: configs/pretrain_gnn.yaml).
  bool split_units = true;
};

// YAML section `run`.
struct RunConfig {
  uint64_t seed = 1;
  int threads = 1;            // LibTorch intra-op threads (the machine is small)
  int env_threads = 1;        // simulator batch threads
  int checkpoint_every = 10;  // updates
  std::string output_dir;     // default runs/<name>
};

struct TrainConfig {
  std::string name = "run";
  std::string source_text;  // the config file's text, copied into every result folder
  std::string source_path;

  // What to place.
  GraphSource graph;                             // the graph (policy seq2seq/hierarchical, gnn per-graph)
  std::vector<GraphSource> family;               // gnn: graphs trained on together
  std::vector<GraphSource> held_out;             // gnn: graphs placed without training after the run
  std::string cluster = "k80x2";                 // preset, cluster file or device list ("cpu:2")
  std::shared_ptr<const Cluster> cluster_value;  // the cluster itself, given in memory (`cluster` names it)
  // Baselines to report next to the result (`placer baseline` names); a
  // search among them (local_search) gets the samples the policy spent, run
  // again if the warm start ran it with its own budget (that row is then
  // "warm_start:local_search"). The two count alike but for repeats: a
  // policy's repeated sample is drawn again (train.distinct_redraws) and its
  // cache hit is free, while local_search counts every evaluation, one it
  // proposes again included.
  std::vector<std::string> compare;

  PolicyConfig policy;
  RewardConfig reward;
  OptimizerConfig optimizer;  // YAML section `train`
  WarmStartConfig warm_start;
  RunConfig run;
};

// YAML or JSON (by content; yaml-cpp reads both). Throws InputError naming the
// file and the field (e.g. "configs/x.yaml: train.lr: expected a number").
TrainConfig load_train_config(const std::string& path);
TrainConfig parse_train_config(const std::string& text, const std::string& origin = "config");

// The config's fields from a node of parsed input (a YamlNode, graphs/yaml_reader.h,
// or a JsonNode, graphs/json_reader.h; FieldReader's node adapters), every
// error reported through `fail` at `path`.field ("learned.train.lr"). The
// caller then fills in what the node may leave out and calls
// complete_train_config.
template <class Node>
TrainConfig read_train_config(const Node& node, const std::string& path, const FieldFail& fail);
// Checks that a graph and a cluster are given; the default output_dir.
void complete_train_config(TrainConfig& config, const std::string& path, const FieldFail& fail);
// The resolved config as JSON (stored in checkpoints and result folders).
std::string train_config_to_json(const TrainConfig& config);

struct UpdateMetrics {
  int64_t update = 0;
  double reward_mean = 0.0;
  double reward_best = 0.0;  // best reward of any sample so far
  double step_mean_s = 0.0;  // mean step time of this update's samples
  double best_step_s = 0.0;
  bool best_measured = false;  // best_step_s is a real run's (measured and hybrid rewards)
  double entropy = 0.0;
  double loss = 0.0;
  int64_t samples = 0;  // total so far
  double samples_per_s = 0.0;
  int64_t cache_hits = 0;
  double elapsed_s = 0.0;
  double lr = 0.0;
};

struct BaselineResult;

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void on_update(const UpdateMetrics& metrics) = 0;
  // Once, before the first update: what the run is compared with (the lower
  // bound and the warm start's baselines, evaluated in the run's environment).
  virtual void on_reference(double lower_bound_s, const std::vector<BaselineResult>& baselines) {}
};

// A placement found outside the run (e.g. the service's fast-path answer for
// the same graph and cluster): the run evaluates it in its own environment
// (measured side by side with the other rows when the mode measures), and its
// result is never worse than it.
struct SeenPlacement {
  std::string found_by;  // who found it, as the result names it ("fast_path:m_etf")
  Placement placement;
};

struct TrainControls {
  bool resume = false;                        // continue from output_dir/checkpoint.pt
  bool progress = true;                       // progress line on stderr
  int64_t stop_after_updates = -1;            // stop (with a checkpoint) after this many updates in total
  const std::atomic<bool>* cancel = nullptr;  // set to stop early (checkpoint written)
  // Evaluates the sampled placements elsewhere (e.g. service::WorkerPool: `placer
  // worker` processes); simulated and measured rewards are the same as here.
  std::shared_ptr<RemoteEvaluator> remote;
  std::vector<SeenPlacement> seen;  // placements found elsewhere that the result must not be worse than
};

struct BaselineResult {
  std::string method;
  double step_s = 0.0;
  bool ok = false;
  double seconds = 0.0;  // time to place
  std::string note;
  double ci_low_s = 0.0, ci_high_s = 0.0;  // measured side by side: the median's 95% interval
  Placement placement;                     // when placed
  // Measured side by side: the rank test's (Mann-Whitney) two-sided p of this row's
  // steps against the policy's best; -1 where not tested (simulated, or a row failed).
  double p_vs_policy = -1.0;
  // Measured side by side: this row's rounds paired with the policy's best's
  // (paired_by_round, graphs/measurement.h; ratio row / policy, > 1: the row is
  // slower). None where not paired (simulated, a row failed, fewer than
  // kMinPairedRounds rounds shared).
  std::optional<PairedTest> paired_vs_policy;
  // That test's verdict against the policy's best step: "no difference", "policy
  // faster", "row faster" or, for a significant test with equal medians, "differ,
  // equal medians" (at kRankTestLevel, graphs/stats.h); "" where not tested.
  const char* verdict_vs_policy(double policy_s) const;
};

struct TrainResult {
  std::string output_dir;
  int64_t updates = 0;
  // What ended the policy updates: "updates" (train.updates all ran), "max_samples",
  // "time_limit" (train.time_limit_s, before train.updates: a truncated run) or
  // "stopped" (controls.stop_after_updates or a cancel).
  std::string ended_by;
  std::vector<int32_t> stage_units;  // the policy's units in each stage (train.unit_stages), coarsest first
  int64_t samples = 0;
  // Distinct placements the updates sampled, redraws included (train.distinct_redraws).
  int64_t distinct_samples = 0;
  double seconds = 0.0;  // wall time of this invocation (including warm start)
  // The fastest placement evaluated, the warm start's, the baselines' and
  // controls.seen included ("never worse than what it saw"): best_found_by is
  // "policy", a baseline's method (the warm start's methods, then `compare`'s)
  // or a seen placement's found_by. The policy is credited only when strictly
  // faster than every other row: a tie goes to the other row (the policy did
  // not beat it), and between other rows to the first listed.
  double best_step_s = 0.0;
  bool best_measured = false;
  std::string best_found_by = "policy";
  double policy_best_step_s = 0.0;  // the policy's own best, never credited with a baseline's find
  double policy_ci_low_s = 0.0, policy_ci_high_s = 0.0;
  // The final table's status for the policy's best when its measurement failed
  // ("oom", "timeout", "error"; empty otherwise): policy_best_step_s is then the
  // failure penalty, which ranks it last, not a step time.
  std::string policy_failed;
  // The policy's own best step where it is one: 0 when the policy evaluated
  // nothing or its final measurement failed (then policy_best_step_s is a penalty).
  double policy_step_s() const {
    return policy_failed.empty() && policy_best_step_s > 0 && std::isfinite(policy_best_step_s) ? policy_best_step_s
                                                                                                : 0.0;
  }
  // reward.finalists: the placements measured to pick the policy's best, the
  // policy's best as training left it first; empty when none were measured.
  struct Finalist {
    double step_s = 0.0, ci_low_s = 0.0, ci_high_s = 0.0;
    int64_t found_at_sample = 0;
    bool ok = false, picked = false;
    // Its rounds paired with training's best's (the first finalist): the median
    // round's ratio (1 for that one); 0 where not paired. When every finalist
    // that ran is paired, the lowest ratio is picked, else the fastest median.
    double paired_ratio = 0.0;
  };
  std::vector<Finalist> finalists;
  // How the final table's rows were made: "simulated", or "measured side by
  // side" (one fresh interleaved run of every row, intervals in ci_*).
  std::string table = "simulated";
  // Measured side by side on two or more pinned CPU devices: the cross-core
  // probe over the table's steps (StepResult::core_rtt_s), median and range;
  // 0 where not probed. Copy-heavy rows are slower while it is high
  // (bench/results/copy_probe_cpu2.md), so the table says when it ran.
  CoreRttRange table_core_rtt;
  // The probe's quietest reading over the run's measurements before the table
  // (0: none), and the final table measured again in a spell, in order
  // (reward.final_retakes).
  double table_quiet_core_rtt_s = 0.0;
  struct TableRetake {
    double core_rtt_s = 0.0;         // the table's reading that was over the ratio
    double retake_core_rtt_s = 0.0;  // the retake's reading (0: not read)
    bool kept = false;               // the retake read lower and is the table
  };
  std::vector<TableRetake> table_retakes;
  int64_t measurements = 0;    // placements run for real during training (hybrid: the best of each batch, ...)
  int64_t measured_steps = 0;  // steps run for them (warm-up excluded)
  // Hybrid: how often the simulator was refit to measurements, its step scale
  // (measured / simulated) and its factor on CPU<->GPU link times, at the end.
  int64_t calibrations = 0;
  double step_scale = 1.0, link_factor = 1.0;
  int64_t best_found_at_sample = 0;  // the policy's sample that found the result; 0 where a baseline's is it
  int64_t policy_best_found_at_sample = 0;  // the sample that found the policy's own best
  NamedPlacement best_placement;
  double lower_bound_s = 0.0;
  std::string warm_start_method;  // the baseline cloned, empty if none
  double warm_start_step_s = 0.0;
  // The warm start's methods (a resumed run: the placement it cloned) and
  // config.compare, evaluated in the same env.
  std::vector<BaselineResult> baselines;
  std::vector<BaselineResult> seen;  // controls.seen, evaluated in the same env (method = found_by)
  // gnn: held-out graphs placed with no training: graph -> (step s, seconds to place).
  std::map<std::string, std::pair<double, double>> held_out;
  int64_t remote_evaluations = 0;  // evaluations done by controls.remote in this invocation
};

// Trains a policy as the config says; writes output_dir/{config.yaml,config.json,
// train.csv,reward.svg,checkpoint.pt,best_placement.json,summary.json}.
TrainResult train(const TrainConfig& config, MetricsSink* sink = nullptr, const TrainControls& controls = {});

// Writes `to` (a checkpoint file) with the policy of `from` (a run folder or
// its checkpoint.pt) alone: its config, state and weights, not the optimizer's
// moments nor the record of sampled placements. What `placer place --policy`,
// `policy.init_from` and the service read; a run cannot resume from it.
// Throws InputError naming the file.
struct ExportedPolicy {
  int64_t from_bytes = 0, to_bytes = 0;
};
ExportedPolicy export_policy(const std::string& from, const std::string& to);

}  // namespace placer
