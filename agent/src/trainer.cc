// The training loop: behaviour-cloning warm start, REINFORCE (or PPO) with a
// moving-average baseline and an entropy bonus, and the best placement found.
// Imitation (behaviour cloning, the elite pool) is in trainer_imitation.cc, checkpoints in
// trainer_checkpoint.cc, the run's outputs in trainer_outputs.cc, scoring a batch of samples in trainer_rollout.cc.
#include <ATen/Parallel.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>

#include "placer/agent/compare.h"
#include "placer/agent/learned.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/timing.h"
#include "policy.h"
#include "trainer.h"
#include "trainer_impl.h"

namespace placer {

namespace fs = std::filesystem;

namespace {

EnvOptions env_options(const TrainConfig& c) {
  EnvOptions o;
  static_cast<RewardSettings&>(o) = c.reward;  // the config's reward section is the env's reward settings
  o.threads = c.run.env_threads;
  if (!c.reward.profile.empty()) o.profile = load_profile(c.reward.profile);
  return o;
}

void check_method_names(const std::vector<std::string>& names, const std::string& field) {
  const std::vector<std::string> known = placer_names();
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end())
      throw InputError(field + ": " + unknown_name("method", n, known));
}

}  // namespace

PolicyOptions policy_options(const TrainConfig& c) {
  PolicyOptions p;
  p.kind = c.policy.type;
  p.hidden = c.policy.hidden;
  p.type_embedding = c.policy.type_embedding;
  p.grouper_groups = c.policy.grouper_groups;
  p.gnn_layers = c.policy.gnn_layers;
  p.decoder = c.policy.decoder;
  return p;
}

BaselineResult baseline_result(const Compared& c) {
  if (!c.placed) return {c.method, 0.0, false, 0.0, c.error};
  BaselineResult b{c.method, c.evaluation.step_s, c.evaluation.result.ok(), c.seconds, c.result.note};
  b.ci_low_s = c.evaluation.result.ci_low_s;
  b.ci_high_s = c.evaluation.result.ci_high_s;
  b.placement = c.result.placement;
  return b;
}

// A cancel stops the warm start between its placers, and a search within it (a service job's cancel and
// a server's SIGTERM waited for every placer of the list).
void Trainer::warm_start(Task& t) {
  PlaceContext ctx = PlaceContext::on(*t.env, c_.run.seed);
  ctx.cancel = ctl_.cancel;
  CompareOptions options;
  options.scoring = CompareScoring::Evaluate;
  options.catch_all = true;
  options.on_done = [&](const Compared& c) {
    if (!c.placed)
      std::fprintf(stderr, "warm start: %s failed on %s: %s\n", c.method.c_str(), t.env->graph().name.c_str(),
                   c.error.c_str());
  };
  WarmChoice w;
  for (const std::string& method : c_.warm_start.methods) {
    if (cancelled()) break;
    for (const Compared& c : compare_placers({method}, ctx, options)) offer_warm(t, c, w);
  }
  warm_cut_ = warm_cut_ || cancelled();
}

// The policy clones the best deterministic heuristic; a search's placement
// (a stochastic placer: local_search, random) seeds the elite pool, and is
// cloned only when no heuristic placed the graph. (Cloning an annealed
// placement left nmt_k80x4 at 0.194-0.199 s; the heuristics' 0.169-0.170 s.)
// warm_start.clone_search clones the best of all, a search's included.
// A placement whose evaluation failed (out of memory, a measured run's error) is cloned only where none
// ran: a heuristic's failed placement came before a search's that ran.
void Trainer::offer_warm(Task& t, const Compared& c, WarmChoice& w) {
  t.warm_results.push_back(baseline_result(c));
  const bool ok = c.placed && c.evaluation.result.ok();
  if (ok) t.warm_placements.push_back({c.evaluation.reward, c.result.placement});
  const bool heuristic = c_.warm_start.clone_search || !make_placer(c.method)->stochastic();
  if (!c.placed || (w.ok && !ok) || (w.ok == ok && w.heuristic && !heuristic)) return;
  if (t.has_warm && !(ok && !w.ok) && !(heuristic && !w.heuristic) && !(c.evaluation.reward > w.reward)) return;
  w = WarmChoice{c.evaluation.reward, heuristic, ok};
  t.has_warm = true;
  t.warm = c.result.placement;
  t.warm_method = c.method;
  t.warm_step_s = c.evaluation.step_s;
}

// The stage of the budget used so far: whichever budget (updates, samples,
// time) is furthest along decides, so that a run ended by its samples or time
// (a service job) also goes through every stage.
int Trainer::stage_now() const { return static_cast<int>(part_used(std::max(1, c_.optimizer.unit_stages))); }

// Of `parts` equal parts of the budget, the one the run is in (0 .. parts - 1), by whichever budget (updates,
// samples, time) is furthest along. In proportion: part k from used = k x limit / parts on. (ceil(limit /
// parts) updates a part left the last one, the policy's own units, unreached at 4 stages and 5, 6 or 9 updates.)
int64_t Trainer::part_used(int64_t parts) const {
  auto part = [&](int64_t used, int64_t limit) {
    return std::min<int64_t>(parts - 1, used * parts / std::max<int64_t>(1, limit));
  };
  int64_t s = part(update_, c_.optimizer.updates);
  if (c_.optimizer.max_samples > 0) s = std::max(s, part(samples_, c_.optimizer.max_samples));
  if (c_.optimizer.time_limit_s > 0) {
    const double used = (session_start_rl_ + seconds_since(session_t0_)) / c_.optimizer.time_limit_s;
    s = std::max(s, std::min<int64_t>(parts - 1, static_cast<int64_t>(used * static_cast<double>(parts))));
  }
  return s;
}

PolicyInput Trainer::stage_input(Task& t, int stage) {
  PolicyInputOptions po = unit_options(*policy_, c_, t.has_warm && c_.warm_start.split_units ? &t.warm : nullptr);
  const int halvings = std::max(1, c_.optimizer.unit_stages) - 1 - stage;
  if (halvings > 0) {
    if (t.fine_units == 0) t.fine_units = make_policy_input(t.env->graph(), t.env->cluster(), *t.env->costs(), po).n;
    po.max_units = std::max<int32_t>(t.env->cluster().size(), t.fine_units >> halvings);
  }
  return make_policy_input(t.env->graph(), t.env->cluster(), *t.env->costs(), po);
}

// The next stage's units: each task's elites and best, cut to the new units,
// seed the new pool with their rewards (evaluated again only where the cut
// changed the placement: a new unit that straddles two old ones); the sampled
// set starts empty (its rows were the old units').
void Trainer::enter_stage(int stage) {
  stage_ = stage;
  for (auto& tp : tasks_) {
    Task& t = *tp;
    struct Carried {
      double reward;
      Placement placement;
      int64_t at;
    };
    std::vector<Carried> carried;
    for (const auto& e : t.elites) carried.push_back({e.reward, t.problem.expand(e.units), e.at});
    if (!t.best.device_of.empty()) carried.push_back({t.best_reward, t.best, t.best_at});
    t.problem = stage_input(t, stage);
    t.elites.clear();
    t.sampled_earlier += static_cast<int64_t>(t.sampled.size()) + t.sampled.dropped();
    t.sampled.clear();
    for (const Carried& c : carried) offer_placement(t, c.placement, c.reward, c.at);
  }
}

void Trainer::offer_placement(Task& t, const Placement& placement, std::optional<double> reward, int64_t at) {
  const std::vector<int32_t> units = t.problem.contract(placement);
  const Placement cut = t.problem.expand(units);
  if (reward && cut == placement) {
    offer_elite(t, *reward, units, at);
    return;
  }
  const Evaluation e = t.env->evaluate(cut);
  if (e.result.ok()) offer_elite(t, e.reward, units, at);
}

void Trainer::one_update() {
  if (const int s = stage_now(); s > stage_) enter_stage(s);
  Task& t = *tasks_[update_ % tasks_.size()];
  const double lr =
      c_.optimizer.lr * std::pow(c_.optimizer.lr_decay, static_cast<double>(update_ / c_.optimizer.lr_decay_every));
  for (auto& g : opt_->param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
  const double noise =
      c_.optimizer.logit_noise * std::pow(c_.optimizer.logit_noise_decay, static_cast<double>(update_));
  int32_t K = c_.optimizer.samples_per_update;
  // The last update of a run bounded by train.max_samples takes the samples left (20 asked, 8 a batch: 24 ran).
  if (c_.optimizer.max_samples > 0)
    K = static_cast<int32_t>(std::clamp<int64_t>(c_.optimizer.max_samples - samples_, 1, K));
  const int32_t greedy = (c_.optimizer.greedy_sample && K >= 2) ? 1 : 0;
  SampleOptions so;
  so.temperature = c_.optimizer.temperature;
  so.noise = noise;
  so.greedy_rows = greedy;
  Rollout r = policy_->sample(t.problem, K, so, rng_);
  double step_sum = 0;
  const std::vector<double> reward = score_batch(t, r, so, &step_sum);
  const Advantages adv = advantages(t, reward, greedy);
  const auto [loss_v, ent_v] = policy_step(t, r, adv);
  samples_ += K;
  t.samples += K;
  ++update_;
  LogRow row;
  row.update = update_;
  row.samples = samples_;
  row.elapsed_s = session_start_rl_ + seconds_since(session_t0_);
  row.reward_mean = std::accumulate(reward.begin(), reward.end(), 0.0) / K;
  row.step_mean_s = step_sum / K;
  row.best_step_s = tasks_[0]->best_step_s;
  if (tasks_.size() > 1) row.best_step_s = t.best_step_s;
  row.entropy = ent_v;
  row.loss = loss_v;
  row.lr = lr;
  row.noise = noise;
  const double session_s = seconds_since(session_t0_);
  row.samples_per_s = session_s > 0 ? (samples_ - session_start_samples_) / session_s : 0.0;
  row.cache_hits = run_stats(t).cache_hits;
  row.task = static_cast<int32_t>((update_ - 1) % tasks_.size());
  rows_.push_back(row);
  rl_seconds_ = row.elapsed_s;
  {
    std::ofstream csv(dir_ + "/train.csv", std::ios::app);
    csv << csv_row(row) << "\n";
  }
  report_update(t, row);
  if (ctl_.progress) print_progress(row, session_s, K);
}

EvalStats run_stats(const Task& t) {
  EvalStats s = t.env->stats();
  s.cache_hits += t.earlier.cache_hits;
  s.measurements += t.earlier.measurements;
  s.measured_steps += t.earlier.measured_steps;
  s.calibrations += t.earlier.calibrations;
  return s;
}

// Advantages over the stochastic rows (the first `greedy` rows are masked out); moves the task's baseline.
Trainer::Advantages Trainer::advantages(Task& t, const std::vector<double>& reward, int32_t greedy) {
  const int32_t K = static_cast<int32_t>(reward.size());
  const int32_t n = K - greedy;
  double mean = 0, var = 0;
  for (int32_t b = greedy; b < K; ++b) mean += reward[b] / n;
  for (int32_t b = greedy; b < K; ++b) var += (reward[b] - mean) * (reward[b] - mean) / n;
  const double b_old = t.baseline_init ? t.baseline : mean;
  const double denom = std::max(std::sqrt(var), 1e-3 * std::abs(b_old) + 1e-12);
  std::vector<float> adv(K, 0.f), mask(K, 0.f);
  // With fewer than 2 stochastic rows there is no spread to standardize by (the divisor fell to
  // 1e-3 x |baseline| and the clip saturated at +-5): no policy-gradient term, the others kept.
  for (int32_t b = greedy; b < K; ++b) {
    if (n >= 2) adv[b] = static_cast<float>(std::max(-5.0, std::min(5.0, (reward[b] - b_old) / denom)));
    mask[b] = 1.f;
  }
  t.baseline =
      t.baseline_init ? c_.optimizer.baseline_decay * t.baseline + (1 - c_.optimizer.baseline_decay) * mean : mean;
  t.baseline_init = true;
  return Advantages{torch::tensor(adv), torch::tensor(mask), n};
}

// The policy-gradient (or PPO, over its epochs) steps of one update: the last epoch's loss and entropy.
std::pair<double, double> Trainer::policy_step(Task& t, const Rollout& r, const Advantages& adv) {
  const torch::Tensor& A = adv.A;
  const torch::Tensor& W = adv.W;
  const int32_t n = adv.n;
  double loss_v = 0, ent_v = 0;
  const int epochs = c_.optimizer.algorithm == Algorithm::Ppo ? c_.optimizer.ppo_epochs : 1;
  for (int e = 0; e < epochs; ++e) {
    LogProbs lp = policy_->evaluate(t.problem, r);
    torch::Tensor pg;
    if (c_.optimizer.algorithm == Algorithm::Ppo) {
      const torch::Tensor ratio = torch::exp(lp.logp - r.old_logp);
      const torch::Tensor a = A.unsqueeze(1);
      const torch::Tensor surr =
          torch::min(ratio * a, torch::clamp(ratio, 1 - c_.optimizer.ppo_clip, 1 + c_.optimizer.ppo_clip) * a);
      pg = -(surr.mean(1) * W).sum() / n;
    } else {
      pg = -(lp.logp.mean(1) * A).sum() / n;
    }
    const torch::Tensor ent = (lp.entropy.mean(1) * W).sum() / n;
    const torch::Tensor loss = pg - c_.optimizer.entropy_weight * ent + c_.optimizer.elite_weight * elite_loss(t);
    opt_->zero_grad();
    loss.backward();
    if (c_.optimizer.grad_clip > 0) torch::nn::utils::clip_grad_norm_(policy_->parameters(), c_.optimizer.grad_clip);
    opt_->step();
    loss_v = loss.item<double>();
    ent_v = ent.item<double>();
  }
  return {loss_v, ent_v};
}

// The update's figures to the metrics sink, if any.
void Trainer::report_update(const Task& t, const LogRow& row) {
  if (!sink_) return;
  UpdateMetrics m;
  m.update = row.update;
  m.reward_mean = row.reward_mean;
  m.reward_best = t.best_reward;
  m.step_mean_s = row.step_mean_s;
  m.best_step_s = t.best_step_s;
  m.best_measured = t.best_measured;
  m.entropy = row.entropy;
  m.loss = row.loss;
  m.samples = row.samples;
  m.samples_per_s = row.samples_per_s;
  m.cache_hits = row.cache_hits;
  m.elapsed_s = row.elapsed_s;
  m.lr = row.lr;
  sink_->on_update(m);
}

// The progress line on stderr with an ETA: redrawn on a terminal, every twentieth of the run otherwise.
void Trainer::print_progress(const LogRow& row, double session_s, int32_t K) {
  const double per_update = session_s / std::max<int64_t>(1, update_ - session_start_update_);
  double eta = per_update * static_cast<double>(c_.optimizer.updates - update_);
  if (c_.optimizer.max_samples > 0)
    eta = std::min(eta, per_update * static_cast<double>(c_.optimizer.max_samples - samples_) / K);
  if (c_.optimizer.time_limit_s > 0) eta = std::min(eta, c_.optimizer.time_limit_s - row.elapsed_s);
  std::string line = progress_line(row, c_.optimizer.updates, eta);
  // train.unit_stages: which stage the run is in, and the units the policy places there.
  if (c_.optimizer.unit_stages > 1)
    line += " | stage " + std::to_string(stage_ + 1) + "/" + std::to_string(c_.optimizer.unit_stages) + ", " +
            std::to_string(tasks_[0]->problem.n) + " units";
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
  } else if (const int64_t twentieth = part_used(20); twentieth > printed_twentieth_) {
    // Each twentieth of the budget that binds (a run ended by its time or samples, updates at 1e8, printed none).
    printed_twentieth_ = twentieth;
    std::fprintf(stderr, "%s\n", line.c_str());
    unprinted_progress_.clear();
  } else {
    unprinted_progress_ = line;  // printed when the updates end, so the log has the last update's line
  }
}

// The cluster, the seeded policy and optimiser, one environment per graph.
EnvOptions Trainer::setup() {
  at::set_num_threads(c_.run.threads);
  tty_ = isatty(fileno(stderr));
  check_method_names(c_.warm_start.methods, "warm_start.methods");
  check_method_names(c_.compare, "compare");
  dir_ = c_.run.output_dir;
  fs::create_directories(dir_);
  // The config's field in every error of what it names (a bad device list said "devices: ...", naming neither).
  auto in_field = [](const std::string& field, const auto& body) {
    try {
      return body();
    } catch (const InputError& e) {
      throw InputError(field + ": " + e.what());
    }
  };
  auto cluster_of = [&](const std::string& field, const std::string& spec) {
    return in_field(field, [&] {
      Cluster c = resolve_cluster(spec);
      validate_cluster(c);
      return c;
    });
  };
  cluster_ = c_.cluster_value ? in_field("cluster",
                                         [&] {
                                           validate_cluster(*c_.cluster_value);
                                           return *c_.cluster_value;
                                         })
                              : cluster_of("cluster", c_.cluster);
  // Held-out graphs are placed after training: loaded and checked now, not after the hours it takes.
  held_out_.clear();
  for (size_t i = 0; i < c_.held_out.size(); ++i) {
    const GraphSource& s = c_.held_out[i];
    const std::string field = "held_out[" + std::to_string(i) + "]";
    held_out_.emplace_back(in_field(field, [&] { return s.load(); }),
                           s.cluster.empty() ? cluster_ : cluster_of(field + ".cluster", s.cluster));
    // What the policy can place, too (a cluster of 17 devices failed after training, its outputs unwritten).
    in_field(field, [&] {
      check_policy_problem(held_out_.back().first, held_out_.back().second);
      return 0;
    });
  }
  EnvOptions eo = env_options(c_);
  profile_content_ = profile_content(c_.reward.profile);
  eo.remote = ctl_.remote;
  eo.cancel = ctl_.cancel;
  // The policy first: its kind decides the graphs and units it trains on (the
  // warm start's placers and make_policy_input draw from neither generator).
  rng_.seed(c_.run.seed);
  policy_ = make_policy(policy_options(c_), c_.run.seed);
  int32_t inherited = 0;  // the devices init_from's policy trained on
  if (!c_.policy.init_from.empty())
    inherited = init_weights(resolve_policy_dir(c_.policy.init_from));  // "pretrained": the shipped gnn
  opt_ = std::make_unique<torch::optim::Adam>(policy_->parameters(), torch::optim::AdamOptions(c_.optimizer.lr));
  const bool family = policy_->trains_on_family() && !c_.family.empty();
  if (!c_.family.empty() && !family)
    std::fprintf(stderr, "WARNING: family: left out; policy.type %s trains on `graph` alone (gnn trains on a family)\n",
                 policy_type_name(c_.policy.type));
  const std::vector<GraphSource> sources = family ? c_.family : std::vector<GraphSource>{c_.graph};
  for (size_t i = 0; i < sources.size(); ++i) {
    const GraphSource& s = sources[i];
    const std::string field = family ? "family[" + std::to_string(i) + "]" : std::string("graph");
    auto t = std::make_unique<Task>();
    t->source = s;
    // A family entry may name its own cluster (one policy for several clusters).
    const Cluster cluster = s.cluster.empty() ? cluster_ : cluster_of(field + ".cluster", s.cluster);
    t->env = std::make_unique<Environment>(in_field(field, [&] { return s.load(); }), cluster, eo);
    const std::string warning = eo.profile ? t->env->costs()->profile_warning() : "";
    if (!warning.empty())
      std::fprintf(stderr, "WARNING: reward.profile %s: %s\n", c_.reward.profile.c_str(), warning.c_str());
    tasks_.push_back(std::move(t));
  }
  check_held_out_devices(inherited);
  return eo;
}

// The most devices the policy trains on (this run's clusters, init_from's); a held-out cluster of more
// is refused now (its device embeddings beyond them stay untrained), not after the hours of training.
void Trainer::check_held_out_devices(int32_t inherited) {
  trained_devices_ = inherited;
  for (const auto& t : tasks_) trained_devices_ = std::max<int32_t>(trained_devices_, t->env->cluster().size());
  for (size_t i = 0; i < held_out_.size(); ++i) {
    try {
      check_trained_devices(held_out_[i].second, trained_devices_, *policy_, "the policy");
    } catch (const PolicyOutOfRange& e) {
      throw PolicyOutOfRange("held_out[" + std::to_string(i) + "]: " + e.what());
    }
  }
}

// Warm start (or the checkpoint's), the policy inputs, the run folder's
// config and log, behaviour cloning and the elite pool.
void Trainer::start() {
  const std::string ckpt = dir_ + "/" + kCheckpointFile;
  const bool resume = ctl_.resume && fs::exists(ckpt);
  if (ctl_.resume && !resume) std::fprintf(stderr, "resume: no checkpoint in %s, starting fresh\n", dir_.c_str());
  if (resume) {
    restore_warm_starts(ckpt);
  } else {
    for (auto& t : tasks_) warm_start(*t);
  }
  // A resumed run's inputs are those of its checkpoint's stage (restore_warm_starts read it).
  for (auto& t : tasks_) t->problem = stage_input(*t, stage_);
  if (sink_) sink_->on_reference(tasks_[0]->env->lower_bound(), tasks_[0]->warm_results);
  write_file_atomic(dir_ + "/config.json", train_config_to_json(c_));
  write_file_atomic(dir_ + "/config.yaml", c_.source_text.empty() ? train_config_to_json(c_) : c_.source_text);
  if (resume) {
    load_checkpoint(ckpt);
    rows_ = read_csv(dir_ + "/train.csv", update_);
    std::string csv = std::string(kCsvHeader) + "\n";
    for (const auto& r : rows_) csv += csv_row(r) + "\n";
    write_file_atomic(dir_ + "/train.csv", csv);
    // Cloning cut short by a cancel before the first update (a server stopping) is done again: the
    // checkpoint holds a policy that was never warm-started.
    if (bc_cancelled_ && update_ == 0) {
      bc_cancelled_ = false;
      behaviour_clone();
    }
  } else {
    write_file_atomic(dir_ + "/train.csv", std::string(kCsvHeader) + "\n");
    behaviour_clone();
  }
  // The elite pool starts from the warm start's baselines (a resumed run has its
  // pool from the checkpoint).
  if (!resume) seed_elites();
}

// Seeding evaluates a placement cut to the units: a remote batch given up at a cancel or shutdown ends it,
// and the run as stopped, as a cancel during the warm start does (its EvaluationCancelled went through train()).
void Trainer::seed_elites() {
  try {
    for (auto& t : tasks_)
      for (const auto& [reward, placement] : t->warm_placements) offer_placement(*t, placement, std::nullopt);
  } catch (const EvaluationCancelled&) {
    warm_cut_ = true;
  }
}

// Policy updates until a budget is reached, or stopped early (returns true).
bool Trainer::update_until_budget() {
  session_t0_ = Clock::now();
  session_start_rl_ = rl_seconds_;
  session_start_samples_ = samples_;
  session_start_update_ = update_;
  ended_by_ = "updates";
  if (warm_cut_) {  // no checkpoint: it would keep the cut warm start's rows for good
    ended_by_ = "stopped";
    return true;
  }
  while (update_ < c_.optimizer.updates) {
    if (c_.optimizer.max_samples > 0 && samples_ >= c_.optimizer.max_samples) {
      ended_by_ = "max_samples";
      break;
    }
    if (c_.optimizer.time_limit_s > 0 && session_start_rl_ + seconds_since(session_t0_) >= c_.optimizer.time_limit_s) {
      ended_by_ = "time_limit";
      // Said, not silent: a truncated run is another policy (a busy machine ends it sooner).
      std::fprintf(stderr,
                   "train: train.time_limit_s (%g s) ended the policy updates after %lld of %lld "
                   "(--time-limit raises it)\n",
                   c_.optimizer.time_limit_s, static_cast<long long>(update_),
                   static_cast<long long>(c_.optimizer.updates));
      break;
    }
    if ((ctl_.stop_after_updates >= 0 && update_ >= ctl_.stop_after_updates) || (ctl_.cancel && ctl_.cancel->load())) {
      ended_by_ = "stopped";
      break;
    }
    try {
      one_update();
    } catch (const EvaluationCancelled&) {  // a remote batch given up at a cancel or shutdown: the update is dropped
      ended_by_ = "stopped";
      break;
    }
    if (update_ % c_.run.checkpoint_every == 0) save_checkpoint();
  }
  if (ctl_.progress && tty_) std::fprintf(stderr, "\n");
  if (ctl_.progress && !unprinted_progress_.empty()) std::fprintf(stderr, "%s\n", unprinted_progress_.c_str());
  unprinted_progress_.clear();
  save_checkpoint();
  return ended_by_ == "stopped";
}

// Fine-tuning (policy.init_from on one graph): what the starting policy
// answers counts as seen, so that the run never returns a slower placement than
// the one it started from: by default what `placer place --policy` answers
// within policy.init_answer_s (the policy, the fast path's heuristics,
// local_search from both), else the policy's fixed decode alone. The seen row
// names who found it; the policy's own best stays apart from it.
void Trainer::see_zero_shot_answer() {
  if (c_.policy.init_from.empty() || tasks_.size() != 1) return;
  const PlaceContext ctx = PlaceContext::on(*tasks_[0]->env, c_.run.seed);
  try {
    const auto policy = load_named_policy(c_.policy.init_from);
    Placement placement;
    std::string what = " (zero-shot)";
    if (c_.policy.init_answer_s > 0) {
      const PolicyAnswer a =
          place_with_policy(*policy, ctx, c_.policy.init_answer_s, /*refine=*/true, policy_fast_path());
      placement = a.placement;
      what = " (zero-shot answer: " + a.found_by + ")";
      if (ctl_.progress)
        std::fprintf(stderr,
                     "fine-tuning: the starting policy's answer, as `placer place --policy`: %.6g s per step, found by "
                     "%s in %.2f s (%lld local_search evaluations, not the run's samples)\n",
                     a.step_s, a.found_by.c_str(), a.seconds, static_cast<long long>(a.refine_evaluations));
    } else {
      placement = policy->place(ctx).placement;
    }
    if (tasks_[0]->env->simulate(placement).ok())
      ctl_.seen.push_back({"init_from:" + c_.policy.init_from + what, std::move(placement)});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fine-tuning: the starting policy's zero-shot answer is left out: %s\n", e.what());
  }
}

TrainResult Trainer::run() {
  const auto t_start = Clock::now();
  const EnvOptions eo = setup();
  see_zero_shot_answer();
  start();
  const bool stopped_early = update_until_budget();

  TrainResult res;
  res.ended_by = ended_by_;
  compare_baselines(&res, /*compare=*/!stopped_early);  // stopped early: the warm start still counts
  final_table(&res, /*measure=*/!stopped_early);
  if (!stopped_early) place_held_out(eo, &res);
  write_outputs(&res);
  res.seconds = seconds_since(t_start);
  for (const auto& t : tasks_) res.remote_evaluations += t->env->stats().remote;
  write_summary(res);
  return res;
}

TrainResult train(const TrainConfig& config, MetricsSink* sink, const TrainControls& controls) {
  Trainer trainer(config, sink, controls);
  return trainer.run();
}

}  // namespace placer
