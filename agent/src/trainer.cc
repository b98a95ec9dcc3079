// The training loop: behaviour-cloning warm start, REINFORCE (or PPO) with a
// moving-average baseline and an entropy bonus, the best placement found,
// atomic checkpoints that resume exactly, the CSV log and the SVG plot.
#include <ATen/Parallel.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/serialize.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "placer/agent/compare.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/timing.h"
#include "policy.h"
#include "trainer.h"

namespace placer {
namespace learned {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

EnvOptions env_options(const TrainConfig& c) {
  EnvOptions o;
  o.mode = parse_reward_mode(c.reward_mode);
  o.reward.exponent = c.reward_exponent;
  o.reward.failure_penalty_s = c.failure_penalty_s;
  o.measure_warmup = c.measure_warmup;
  o.measure_steps = c.measure_steps;
  o.hybrid_measure_top = c.hybrid_measure_top;
  o.threads = c.env_threads;
  if (!c.profile.empty()) o.profile = load_profile(c.profile);
  return o;
}

PolicyOptions policy_options(const TrainConfig& c) {
  PolicyOptions p;
  p.kind = c.policy;
  p.hidden = c.hidden;
  p.type_embedding = c.type_embedding;
  p.grouper_groups = c.grouper_groups;
  p.gnn_layers = c.gnn_layers;
  p.decoder = c.decoder;
  return p;
}

void check_method_names(const std::vector<std::string>& names, const std::string& field) {
  const std::vector<std::string> known = placer_names();
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end())
      throw InputError(field + ": " + unknown_name("method", n, known));
}

// A compared placer as the run reports it (summary.json, the metrics sink).
BaselineResult baseline_result(const Compared& c) {
  if (!c.placed) return {c.method, 0.0, false, 0.0, c.error};
  return {c.method, c.evaluation.step_s, c.evaluation.result.ok(), c.seconds, c.result.note};
}

std::string num(double v) {
  if (!std::isfinite(v)) return v > 0 ? "1e308" : "-1e308";
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

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
};

std::string placement_json(const Placement& p) {
  std::string o = "[";
  for (size_t i = 0; i < p.device_of.size(); ++i) o += (i ? "," : "") + std::to_string(p.device_of[i].value);
  return o + "]";
}

Placement placement_from_node(const YAML::Node& n, const Graph& g, const Cluster& c, const std::string& where) {
  if (!n.IsSequence() || static_cast<int64_t>(n.size()) != g.size())
    throw InputError(where + ": expected " + std::to_string(g.size()) + " device indices for graph '" + g.name + "'");
  Placement p;
  for (size_t i = 0; i < n.size(); ++i) {
    const int v = n[i].as<int>();
    if (v < 0 || v >= c.size())
      throw InputError(where + "[" + std::to_string(i) + "]: device " + std::to_string(v) + " out of range");
    p.device_of.push_back(DeviceId(v));
  }
  return p;
}

class Trainer {
 public:
  Trainer(const TrainConfig& c, MetricsSink* sink, const TrainControls& ctl) : c_(c), sink_(sink), ctl_(ctl) {}
  TrainResult run();

 private:
  void warm_start(Task& t);
  void behaviour_clone();
  void one_update();
  void save_checkpoint();
  void load_checkpoint(const std::string& path);
  std::string state_json() const;
  void write_outputs(TrainResult* result);
  void compare_baselines(TrainResult* result);

  const TrainConfig& c_;
  MetricsSink* sink_;
  TrainControls ctl_;
  Cluster cluster_;
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
  bool tty_ = false;
  int bc_steps_used_ = 0;
  bool bc_reproduced_ = false;
};

void Trainer::warm_start(Task& t) {
  PlaceContext ctx;
  ctx.graph = &t.env->graph();
  ctx.cluster = &t.env->cluster();
  ctx.env = t.env.get();
  ctx.seed = c_.seed;
  CompareOptions options;
  options.scoring = CompareScoring::Evaluate;
  options.catch_all = true;
  options.on_done = [&](const Compared& c) {
    if (!c.placed)
      std::fprintf(stderr, "warm start: %s failed on %s: %s\n", c.method.c_str(), t.env->graph().name.c_str(),
                   c.error.c_str());
  };
  double best_reward = -std::numeric_limits<double>::infinity();
  for (const Compared& c : compare_placers(c_.warm_start, ctx, options)) {
    t.warm_results.push_back(baseline_result(c));
    if (c.placed && (!t.has_warm || c.evaluation.reward > best_reward)) {
      t.has_warm = true;
      t.warm = c.result.placement;
      t.warm_method = c.method;
      t.warm_step_s = c.evaluation.step_s;
      best_reward = c.evaluation.reward;
    }
  }
}

void Trainer::behaviour_clone() {
  if (!policy_->clones_placements() || c_.bc_steps <= 0) return;
  struct Target {
    Task* task;
    std::vector<int32_t> units;
    Rollout rollout;
  };
  std::vector<Target> targets;
  for (auto& t : tasks_)
    if (t->has_warm) {
      Target tg{t.get(), t->problem.contract(t->warm), {}};
      SampleOptions so;
      so.temperature = c_.temperature;
      tg.rollout = policy_->sample(t->problem, 1, so, rng_, &tg.units);
      targets.push_back(std::move(tg));
    }
  if (targets.empty()) return;
  torch::optim::Adam bc(policy_->parameters(), torch::optim::AdamOptions(c_.bc_lr));
  // p > 0.5 for every target decision means greedy decoding reproduces it.
  const double threshold = std::log(0.55);
  int step = 0;
  double worst = -1e9;
  for (; step < c_.bc_steps; ++step) {
    if (ctl_.cancel && ctl_.cancel->load()) break;  // a cancelled job stops within one step
    bc.zero_grad();
    worst = 0;
    torch::Tensor loss = torch::zeros({});
    for (auto& tg : targets) {
      LogProbs lp = policy_->evaluate(tg.task->problem, tg.rollout);
      loss = loss - lp.logp.mean();
      worst = std::min(worst, lp.logp.min().item<double>());
    }
    if (worst > threshold) break;
    loss.backward();
    torch::nn::utils::clip_grad_norm_(policy_->parameters(), std::max(1e-6, c_.grad_clip));
    bc.step();
  }
  bc_steps_used_ = step;
  bc_reproduced_ = worst > threshold;
  if (!bc_reproduced_)
    std::fprintf(stderr,
                 "warm start: behaviour cloning stopped after %d steps before reproducing the baseline exactly "
                 "(least likely target decision p=%.3f)\n",
                 step, std::exp(worst));
}

void Trainer::one_update() {
  Task& t = *tasks_[update_ % tasks_.size()];
  const double lr = c_.lr * std::pow(c_.lr_decay, static_cast<double>(update_ / c_.lr_decay_every));
  for (auto& g : opt_->param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
  const double noise = c_.logit_noise * std::pow(c_.logit_noise_decay, static_cast<double>(update_));
  const int32_t K = c_.samples_per_update;
  const int32_t greedy = (c_.greedy_sample && K >= 2) ? 1 : 0;
  SampleOptions so;
  so.temperature = c_.temperature;
  so.noise = noise;
  so.greedy_rows = greedy;
  Rollout r = policy_->sample(t.problem, K, so, rng_);
  std::vector<Placement> placements;
  placements.reserve(K);
  for (const auto& row : r.unit_device) placements.push_back(t.problem.expand(row));
  const std::vector<Evaluation> evals = t.env->evaluate_batch(placements);
  std::vector<double> reward(K);
  double step_sum = 0;
  for (int32_t b = 0; b < K; ++b) {
    reward[b] = evals[b].reward;
    const double step = evals[b].step_s;
    step_sum += step;
    if (reward[b] > t.best_reward) {
      t.best_reward = reward[b];
      t.best_step_s = step;
      t.best_measured = evals[b].measured;
      t.best = placements[b];
      t.best_at = samples_ + b + 1;
    }
  }
  // Advantages over the stochastic rows.
  const int32_t n = K - greedy;
  double mean = 0, var = 0;
  for (int32_t b = greedy; b < K; ++b) mean += reward[b] / n;
  for (int32_t b = greedy; b < K; ++b) var += (reward[b] - mean) * (reward[b] - mean) / n;
  const double b_old = t.baseline_init ? t.baseline : mean;
  const double denom = std::max(std::sqrt(var), 1e-3 * std::abs(b_old) + 1e-12);
  std::vector<float> adv(K, 0.f), mask(K, 0.f);
  for (int32_t b = greedy; b < K; ++b) {
    adv[b] = static_cast<float>(std::max(-5.0, std::min(5.0, (reward[b] - b_old) / denom)));
    mask[b] = 1.f;
  }
  t.baseline = t.baseline_init ? c_.baseline_decay * t.baseline + (1 - c_.baseline_decay) * mean : mean;
  t.baseline_init = true;
  const torch::Tensor A = torch::tensor(adv), W = torch::tensor(mask);
  double loss_v = 0, ent_v = 0;
  const int epochs = c_.algorithm == "ppo" ? c_.ppo_epochs : 1;
  for (int e = 0; e < epochs; ++e) {
    LogProbs lp = policy_->evaluate(t.problem, r);
    torch::Tensor pg;
    if (c_.algorithm == "ppo") {
      const torch::Tensor ratio = torch::exp(lp.logp - r.old_logp);
      const torch::Tensor a = A.unsqueeze(1);
      const torch::Tensor surr = torch::min(ratio * a, torch::clamp(ratio, 1 - c_.ppo_clip, 1 + c_.ppo_clip) * a);
      pg = -(surr.mean(1) * W).sum() / n;
    } else {
      pg = -(lp.logp.mean(1) * A).sum() / n;
    }
    const torch::Tensor ent = (lp.entropy.mean(1) * W).sum() / n;
    const torch::Tensor loss = pg - c_.entropy_weight * ent;
    opt_->zero_grad();
    loss.backward();
    if (c_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(policy_->parameters(), c_.grad_clip);
    opt_->step();
    loss_v = loss.item<double>();
    ent_v = ent.item<double>();
  }
  samples_ += K;
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
  row.cache_hits = t.env->stats().cache_hits;
  row.task = static_cast<int32_t>((update_ - 1) % tasks_.size());
  rows_.push_back(row);
  rl_seconds_ = row.elapsed_s;
  {
    std::ofstream csv(dir_ + "/train.csv", std::ios::app);
    csv << csv_row(row) << "\n";
  }
  if (sink_) {
    UpdateMetrics m;
    m.update = row.update;
    m.reward_mean = row.reward_mean;
    m.reward_best = t.best_reward;
    m.step_mean_s = row.step_mean_s;
    m.best_step_s = t.best_step_s;
    m.entropy = row.entropy;
    m.loss = row.loss;
    m.samples = row.samples;
    m.samples_per_s = row.samples_per_s;
    m.cache_hits = row.cache_hits;
    m.elapsed_s = row.elapsed_s;
    m.lr = lr;
    sink_->on_update(m);
  }
  if (ctl_.progress) {
    const double per_update = session_s / std::max<int64_t>(1, update_ - session_start_update_);
    double eta = per_update * static_cast<double>(c_.updates - update_);
    if (c_.max_samples > 0) eta = std::min(eta, per_update * static_cast<double>(c_.max_samples - samples_) / K);
    if (c_.time_limit_s > 0) eta = std::min(eta, c_.time_limit_s - row.elapsed_s);
    const std::string line = progress_line(row, c_.updates, eta);
    if (tty_)
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else if (update_ % std::max<int64_t>(1, c_.updates / 20) == 0)
      std::fprintf(stderr, "%s\n", line.c_str());
  }
}

std::string Trainer::state_json() const {
  std::ostringstream rng;
  rng << rng_;
  std::ostringstream o;
  o << "{\"update\": " << update_ << ", \"samples\": " << samples_ << ", \"rl_seconds\": " << num(rl_seconds_)
    << ", \"rng\": " << json_quote(rng.str()) << ", \"tasks\": [";
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = *tasks_[i];
    o << (i ? ", " : "") << "{\"graph\": " << json_quote(t.env->graph().name) << ", \"baseline\": " << num(t.baseline)
      << ", \"baseline_init\": " << (t.baseline_init ? "true" : "false") << ", \"best_reward\": " << num(t.best_reward)
      << ", \"best_step_s\": " << num(t.best_step_s) << ", \"best_measured\": " << (t.best_measured ? "true" : "false")
      << ", \"best_at\": " << t.best_at << ", \"warm_method\": " << json_quote(t.warm_method)
      << ", \"warm_step_s\": " << num(t.warm_step_s) << ", \"has_warm\": " << (t.has_warm ? "true" : "false");
    if (t.has_warm) o << ", \"warm\": " << placement_json(t.warm);
    if (!t.best.device_of.empty()) o << ", \"best\": " << placement_json(t.best);
    o << "}";
  }
  o << "]}";
  return o.str();
}

void Trainer::save_checkpoint() {
  torch::serialize::OutputArchive a;
  a.write("format", c10::IValue(std::string(kCheckpointFormat)));
  a.write("config", c10::IValue(train_config_to_json(c_)));
  a.write("state", c10::IValue(state_json()));
  torch::serialize::OutputArchive model, optimizer;
  policy_->save(model);
  opt_->save(optimizer);
  a.write("model", model);
  a.write("optimizer", optimizer);
  const std::string path = dir_ + "/" + kCheckpointFile, tmp = path + ".tmp";
  a.save_to(tmp);
  fs::rename(tmp, path);
}

// Module::load resizes parameters to whatever the file holds; check the
// shapes so a checkpoint from another policy shape is a clear error.
void load_model_checked(PolicyImpl& policy, torch::serialize::InputArchive& model, const std::string& path) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> want;
  for (const auto& p : policy.named_parameters()) want.push_back({p.key(), p.value().sizes().vec()});
  policy.load(model);
  for (const auto& [name, shape] : want) {
    const auto got = policy.named_parameters()[name].sizes().vec();
    if (got != shape) {
      auto str = [](const std::vector<int64_t>& v) {
        std::string o = "[";
        for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
        return o + "]";
      };
      throw InputError(path + ": field 'model': parameter '" + name + "' has shape " + str(got) + ", the " +
                       policy.kind() + " policy expects " + str(shape) + " (a checkpoint of another version?)");
    }
  }
}

struct LoadedArchive {
  torch::serialize::InputArchive archive;
  std::string config_json, state_json;
};

void open_checkpoint(const std::string& path, LoadedArchive* out) {
  if (!fs::exists(path)) throw InputError(path + ": no checkpoint here");
  try {
    out->archive.load_from(path);
  } catch (const std::exception& e) {
    throw InputError(path + ": not a readable checkpoint (" + std::string(e.what()).substr(0, 200) + ")");
  }
  c10::IValue v;
  if (!out->archive.try_read("format", v) || !v.isString() || v.toStringRef() != kCheckpointFormat)
    throw InputError(path + ": field 'format': not a placer learned-placer checkpoint (expected " + kCheckpointFormat +
                     ")");
  if (!out->archive.try_read("config", v) || !v.isString()) throw InputError(path + ": field 'config' missing");
  out->config_json = v.toStringRef();
  if (!out->archive.try_read("state", v) || !v.isString()) throw InputError(path + ": field 'state' missing");
  out->state_json = v.toStringRef();
}

void Trainer::load_checkpoint(const std::string& path) {
  LoadedArchive la;
  open_checkpoint(path, &la);
  try {
    torch::serialize::InputArchive model, optimizer;
    if (!la.archive.try_read("model", model)) throw InputError(path + ": field 'model' missing");
    load_model_checked(*policy_, model, path);
    if (!la.archive.try_read("optimizer", optimizer)) throw InputError(path + ": field 'optimizer' missing");
    opt_->load(optimizer);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'model': does not match the config's policy (" +
                     std::string(e.what()).substr(0, 200) + ")");
  }
  YAML::Node s;
  try {
    s = YAML::Load(la.state_json);
    update_ = s["update"].as<int64_t>();
    samples_ = s["samples"].as<int64_t>();
    rl_seconds_ = s["rl_seconds"].as<double>();
    std::istringstream in(s["rng"].as<std::string>());
    in >> rng_;
    if (!in) throw InputError("rng");
    const YAML::Node ts = s["tasks"];
    if (!ts.IsSequence() || ts.size() != tasks_.size())
      throw InputError("tasks: expected " + std::to_string(tasks_.size()) + " entries");
    for (size_t i = 0; i < tasks_.size(); ++i) {
      Task& t = *tasks_[i];
      const YAML::Node n = ts[i];
      t.baseline = n["baseline"].as<double>();
      t.baseline_init = n["baseline_init"].as<bool>();
      t.best_reward = n["best_reward"].as<double>();
      t.best_step_s = n["best_step_s"].as<double>();
      t.best_measured = n["best_measured"].as<bool>();
      t.best_at = n["best_at"].as<int64_t>();
      if (n["best"]) t.best = placement_from_node(n["best"], t.env->graph(), cluster_, path + ": state.tasks.best");
    }
  } catch (const InputError& e) {
    throw InputError(path + ": field 'state': " + e.what());
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'state': malformed (" + std::string(e.what()) + ")");
  }
}

void Trainer::write_outputs(TrainResult* res) {
  const Task& t0 = *tasks_[0];
  res->output_dir = dir_;
  res->updates = update_;
  res->samples = samples_;
  res->best_step_s = t0.best_step_s;
  res->best_measured = t0.best_measured;
  res->best_found_at_sample = t0.best_at;
  res->lower_bound_s = t0.env->lower_bound();
  res->warm_start_method = t0.warm_method;
  res->warm_start_step_s = t0.warm_step_s;
  if (!t0.best.device_of.empty()) {
    res->best_placement = to_named(t0.env->graph(), cluster_, t0.best);
    save_placement(res->best_placement, dir_ + "/best_placement.json");
  }
  if (t0.has_warm) save_placement(to_named(t0.env->graph(), cluster_, t0.warm), dir_ + "/warm_start_placement.json");
  write_file_atomic(dir_ + "/reward.svg",
                    reward_svg(rows_, c_.name + ": " + t0.env->graph().name + " on " + cluster_.name,
                               res->lower_bound_s, t0.warm_step_s, "warm start (" + t0.warm_method + ")"));
}

// The warm start's baselines, then the config's compare methods it did not run.
void Trainer::compare_baselines(TrainResult* res) {
  const Task& t0 = *tasks_[0];
  res->baselines = t0.warm_results;
  std::vector<std::string> more;  // the compare methods the warm start did not run
  for (const std::string& m : c_.compare)
    if (std::none_of(res->baselines.begin(), res->baselines.end(),
                     [&](const BaselineResult& b) { return b.method == m; }) &&
        std::find(more.begin(), more.end(), m) == more.end())
      more.push_back(m);
  PlaceContext ctx;
  ctx.graph = &t0.env->graph();
  ctx.cluster = &cluster_;
  ctx.env = t0.env.get();
  ctx.seed = c_.seed;
  CompareOptions options;
  options.scoring = CompareScoring::Evaluate;
  options.catch_all = true;
  for (const Compared& c : compare_placers(more, ctx, options))
    res->baselines.push_back(baseline_result(c));
}

TrainResult Trainer::run() {
  const auto t_start = Clock::now();
  at::set_num_threads(c_.threads);
  tty_ = isatty(fileno(stderr));
  check_method_names(c_.warm_start, "warm_start.methods");
  check_method_names(c_.compare, "compare");
  dir_ = c_.output_dir;
  fs::create_directories(dir_);
  cluster_ = resolve_cluster(c_.cluster);
  validate_cluster(cluster_);
  EnvOptions eo = env_options(c_);
  eo.remote = ctl_.remote;
  // The policy first: its kind decides the graphs and units it trains on (the
  // warm start's placers and make_policy_input draw from neither generator).
  torch::manual_seed(c_.seed);
  rng_.seed(c_.seed);
  policy_ = make_policy(policy_options(c_));
  opt_ = std::make_unique<torch::optim::Adam>(policy_->parameters(), torch::optim::AdamOptions(c_.lr));
  std::vector<GraphSource> sources =
      (policy_->trains_on_family() && !c_.family.empty()) ? c_.family : std::vector<GraphSource>{c_.graph};
  for (const auto& s : sources) {
    auto t = std::make_unique<Task>();
    t->source = s;
    t->env = std::make_unique<Environment>(s.load(), cluster_, eo);
    tasks_.push_back(std::move(t));
  }
  const std::string ckpt = dir_ + "/" + kCheckpointFile;
  const bool resume = ctl_.resume && fs::exists(ckpt);
  if (ctl_.resume && !resume) std::fprintf(stderr, "resume: no checkpoint in %s, starting fresh\n", dir_.c_str());
  if (resume) {
    // Warm-start placements come from the checkpoint: the units must be the same.
    LoadedArchive la;
    open_checkpoint(ckpt, &la);
    YAML::Node s = YAML::Load(la.state_json);
    const YAML::Node ts = s["tasks"];
    if (!ts.IsSequence() || ts.size() != tasks_.size())
      throw InputError(ckpt + ": field 'state.tasks': does not match the config's graphs");
    for (size_t i = 0; i < tasks_.size(); ++i) {
      Task& t = *tasks_[i];
      t.has_warm = ts[i]["has_warm"].as<bool>(false);
      t.warm_method = ts[i]["warm_method"].as<std::string>("");
      t.warm_step_s = ts[i]["warm_step_s"].as<double>(0.0);
      if (t.has_warm)
        t.warm = placement_from_node(ts[i]["warm"], t.env->graph(), cluster_, ckpt + ": state.tasks.warm");
    }
  } else {
    for (auto& t : tasks_) warm_start(*t);
  }
  for (auto& t : tasks_) {
    PolicyInputOptions po;
    po.max_units = policy_->unit_limit(c_.max_groups);
    po.keep_apart = t->has_warm ? &t->warm : nullptr;
    po.seed = c_.seed;
    t->problem = make_policy_input(t->env->graph(), t->env->cluster(), t->env->costs(), po);
  }
  if (sink_) sink_->on_reference(tasks_[0]->env->lower_bound(), tasks_[0]->warm_results);
  write_file_atomic(dir_ + "/config.json", train_config_to_json(c_));
  write_file_atomic(dir_ + "/config.yaml", c_.source_text.empty() ? train_config_to_json(c_) : c_.source_text);
  if (resume) {
    load_checkpoint(ckpt);
    rows_ = read_csv(dir_ + "/train.csv", update_);
    std::string csv = std::string(kCsvHeader) + "\n";
    for (const auto& r : rows_) csv += csv_row(r) + "\n";
    write_file_atomic(dir_ + "/train.csv", csv);
  } else {
    write_file_atomic(dir_ + "/train.csv", std::string(kCsvHeader) + "\n");
    behaviour_clone();
  }
  session_t0_ = Clock::now();
  session_start_rl_ = rl_seconds_;
  session_start_samples_ = samples_;
  session_start_update_ = update_;
  bool stopped_early = false;
  while (update_ < c_.updates) {
    if (c_.max_samples > 0 && samples_ >= c_.max_samples) break;
    if (c_.time_limit_s > 0 && session_start_rl_ + seconds_since(session_t0_) >= c_.time_limit_s) break;
    if ((ctl_.stop_after_updates >= 0 && update_ >= ctl_.stop_after_updates) || (ctl_.cancel && ctl_.cancel->load())) {
      stopped_early = true;
      break;
    }
    one_update();
    if (update_ % c_.checkpoint_every == 0) save_checkpoint();
  }
  if (ctl_.progress && tty_) std::fprintf(stderr, "\n");
  save_checkpoint();

  TrainResult res;
  write_outputs(&res);
  if (!stopped_early) {
    compare_baselines(&res);
    // gnn: held-out graphs, placed by the trained policy with no training.
    for (const GraphSource& s : c_.held_out) {
      Environment env(s.load(), cluster_, eo);
      const auto t1 = Clock::now();
      PolicyInputOptions po;
      po.max_units = c_.max_groups;
      po.seed = c_.seed;
      PolicyInput p = make_policy_input(env.graph(), env.cluster(), env.costs(), po);
      const bool was_training = policy_->is_training();
      policy_->eval();
      Placement placement = decode_best(*policy_, p, env, c_.place_samples, c_.temperature, c_.seed);
      policy_->train(was_training);
      const double secs = seconds_since(t1);
      const Evaluation e = env.evaluate(placement);
      res.held_out[s.describe()] = {e.step_s, secs};
    }
  }
  res.seconds = seconds_since(t_start);
  for (const auto& t : tasks_) res.remote_evaluations += t->env->stats().remote;
  // summary.json
  std::ostringstream o;
  o << "{\n  \"name\": " << json_quote(c_.name) << ",\n  \"graph\": " << json_quote(tasks_[0]->env->graph().name)
    << ",\n  \"ops\": " << tasks_[0]->env->graph().size() << ",\n  \"units\": " << tasks_[0]->problem.n
    << ",\n  \"cluster\": " << json_quote(cluster_.name) << ",\n  \"policy\": " << json_quote(c_.policy)
    << ",\n  \"reward_mode\": " << json_quote(c_.reward_mode) << ",\n  \"updates\": " << res.updates
    << ",\n  \"samples\": " << res.samples << ",\n  \"train_seconds\": " << num(rl_seconds_)
    << ",\n  \"remote_evaluations\": " << res.remote_evaluations << ",\n  \"best_step_s\": " << num(res.best_step_s)
    << ",\n  \"best_measured\": " << (res.best_measured ? "true" : "false")
    << ",\n  \"best_found_at_sample\": " << res.best_found_at_sample
    << ",\n  \"lower_bound_s\": " << num(res.lower_bound_s)
    << ",\n  \"warm_start\": {\"method\": " << json_quote(res.warm_start_method)
    << ", \"step_s\": " << num(res.warm_start_step_s) << ", \"bc_steps\": " << bc_steps_used_
    << ", \"bc_reproduced\": " << (bc_reproduced_ ? "true" : "false") << "},\n  \"baselines\": [";
  for (size_t i = 0; i < res.baselines.size(); ++i) {
    const auto& b = res.baselines[i];
    o << (i ? ",\n    " : "\n    ") << "{\"method\": " << json_quote(b.method)
      << ", \"ok\": " << (b.ok ? "true" : "false") << ", \"step_s\": " << num(b.step_s)
      << ", \"seconds\": " << num(b.seconds) << ", \"note\": " << json_quote(b.note) << "}";
  }
  o << "],\n  \"held_out\": [";
  bool first = true;
  for (const auto& [g, v] : res.held_out) {
    o << (first ? "\n    " : ",\n    ") << "{\"graph\": " << json_quote(g) << ", \"step_s\": " << num(v.first)
      << ", \"place_seconds\": " << num(v.second) << "}";
    first = false;
  }
  o << "]\n}\n";
  write_file_atomic(dir_ + "/summary.json", o.str());
  return res;
}

}  // namespace

TrainConfig read_checkpoint_config(const std::string& path) {
  LoadedArchive la;
  open_checkpoint(path, &la);
  return parse_train_config(la.config_json, path + " (field 'config')");
}

// Loads the checkpoint's policy (used by place_with_checkpoint).
std::shared_ptr<PolicyImpl> load_policy(const std::string& path, TrainConfig* config) {
  LoadedArchive la;
  open_checkpoint(path, &la);
  *config = parse_train_config(la.config_json, path + " (field 'config')");
  PolicyOptions p = policy_options(*config);
  auto policy = make_policy(p);
  try {
    torch::serialize::InputArchive model;
    if (!la.archive.try_read("model", model)) throw InputError(path + ": field 'model' missing");
    load_model_checked(*policy, model, path);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'model': does not match the config's policy (" +
                     std::string(e.what()).substr(0, 200) + ")");
  }
  policy->eval();
  return policy;
}

}  // namespace learned

TrainResult train(const TrainConfig& config, MetricsSink* sink, const TrainControls& controls) {
  learned::Trainer trainer(config, sink, controls);
  return trainer.run();
}

}  // namespace placer
