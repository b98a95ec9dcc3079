// Checkpoints: the trainer's state as JSON next to the model and optimizer,
// written atomically and read back so a resumed run continues exactly.
#include <torch/serialize.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "placer/agent/learned.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/fnv.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/serialize.h"
#include "policy.h"
#include "trainer.h"
#include "trainer_impl.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

// LibTorch's message for an unreadable file, its first line, whole words (a cut at 200 characters ended
// "...there is a high likelihood that your checkpoint file is").
std::string torch_error_text(const std::exception& e) {
  constexpr size_t kMax = 300;
  std::string text(e.what());
  text = text.substr(0, text.find('\n'));
  if (text.size() > kMax) text = text.substr(0, text.rfind(' ', kMax)) + " ...";
  return text;
}

// What a task places, as text a checkpoint keeps: the graph's name and op count and a hash (FNV-1a) of
// the graph and the cluster. A resume on another problem (another cluster of as many devices, a graph
// of as many ops) passed every check and kept the other problem's best and step times.
const std::string& problem_fingerprint(const Task& t) {
  if (t.fingerprint.empty()) {
    const uint64_t h = fnv1a(cluster_to_json(t.env->cluster()), fnv1a(graph_to_binary(t.env->graph())));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    t.fingerprint = t.env->graph().name + " (" + std::to_string(t.env->graph().size()) + " ops) on " +
                    t.env->cluster().name + " #" + hex;
  }
  return t.fingerprint;
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

// The names a module keeps in its archive (Module::save): its parameters, buffers and serializable children.
std::vector<std::string> archived_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters(false)) names.push_back(p.key());
  for (const auto& b : m.named_buffers(false)) names.push_back(b.key());
  for (const auto& c : m.named_children())
    if (c.value()->is_serializable()) names.push_back(c.key());
  return names;
}

// The first weight where the file and the module differ, "" where they agree: Module::load reads what the
// module has and drops the rest (a hierarchical policy's weights loaded as a seq2seq one, a 3-layer gnn's
// as a 1-layer one).
std::string first_weight_mismatch(const torch::nn::Module& m, torch::serialize::InputArchive& a,
                                  const std::string& prefix) {
  const std::vector<std::string> want = archived_names(m);
  const std::vector<std::string> have = a.keys();
  auto holds = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  for (const std::string& k : have)
    if (!holds(want, k)) return "parameter '" + prefix + k + "' is in the file but not in";
  for (const std::string& k : want)
    if (!holds(have, k)) return "parameter '" + prefix + k + "' is missing from the file for";
  for (const auto& c : m.named_children()) {
    torch::serialize::InputArchive sub;
    if (!c.value()->is_serializable() || !a.try_read(c.key(), sub)) continue;
    const std::string why = first_weight_mismatch(*c.value(), sub, prefix + c.key() + ".");
    if (!why.empty()) return why;
  }
  return "";
}

// Module::load resizes parameters to whatever the file holds; check the
// names and shapes so a checkpoint from another policy shape is a clear error.
void load_model_checked(PolicyImpl& policy, torch::serialize::InputArchive& model, const std::string& path) {
  if (const std::string why = first_weight_mismatch(policy, model, ""); !why.empty())
    throw InputError(path + ": field 'model': " + why + " the " + policy.kind() +
                     " policy its config builds (a checkpoint of another policy type or size?)");
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
  // A file whose bytes were damaged can still load (the archive checks no sums): weights of NaN
  // or inf would place by noise and say nothing.
  for (const auto& p : policy.named_parameters())
    if (!torch::isfinite(p.value()).all().item<bool>())
      throw InputError(path + ": field 'model': parameter '" + p.key() +
                       "' holds values that are not finite numbers (a damaged file?)");
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
    throw InputError(path + ": not a readable checkpoint (" + torch_error_text(e) + ")");
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

// The clusters a config's run trains on: the family's (gnn) or the config's cluster, resolved; 0 when one
// cannot be resolved here (a cluster file gone, a cluster given in memory): unknown.
int32_t config_trained_devices(const TrainConfig& c) {
  std::vector<std::string> specs;
  if (c.policy.type == PolicyType::Gnn && !c.family.empty())
    for (const GraphSource& s : c.family) specs.push_back(s.cluster.empty() ? c.cluster : s.cluster);
  else
    specs.push_back(c.cluster);
  int32_t most = 0;
  for (const std::string& spec : specs) {
    try {
      most = std::max<int32_t>(most, resolve_cluster(spec).size());
    } catch (const std::exception&) {
      return 0;
    }
  }
  return most;
}

// The most devices the checkpoint's policy trained on (kTrainedDevicesKey), or for a checkpoint made
// before it was kept, what its config's clusters say (0: unknown).
int32_t archive_trained_devices(LoadedArchive& la, const TrainConfig& config) {
  c10::IValue v;
  if (!la.archive.try_read(kTrainedDevicesKey, v)) return config_trained_devices(config);
  if (!v.isInt() || v.toInt() < 1 || v.toInt() > kMaxDevices)
    throw InputError(std::string("field '") + kTrainedDevicesKey + "': expected an integer in 1.." +
                     std::to_string(kMaxDevices) + " (the learned policies' device limit), got " +
                     (v.isInt() ? std::to_string(v.toInt()) : "a " + v.tagKind()));
  return static_cast<int32_t>(v.toInt());
}

// Task i's sampled placements (OptimizerConfig::distinct_redraws): an N x units int32 tensor.
std::string sampled_key(size_t i) { return "sampled_" + std::to_string(i); }

torch::Tensor sampled_tensor(const Task& t) {
  torch::Tensor out = torch::empty({static_cast<int64_t>(t.sampled.size()), t.problem.n}, torch::kInt32);
  int32_t* row = out.data_ptr<int32_t>();
  t.sampled.for_each([&](const std::vector<int32_t>& u) { row = std::copy(u.begin(), u.end(), row); });
  return out;
}

void restore_sampled(const torch::Tensor& s, const std::string& path, Task* t) {
  const std::string where = path + ": field 'sampled': ";
  if (s.dim() != 2 || s.scalar_type() != torch::kInt32 || s.size(1) != t->problem.n)
    throw InputError(where + "expected an int32 tensor of " + std::to_string(t->problem.n) + " columns");
  const torch::Tensor c = s.contiguous();
  const int32_t* v = c.data_ptr<int32_t>();
  t->sampled.clear();
  for (int64_t r = 0; r < c.size(0); ++r, v += t->problem.n) {
    for (int64_t u = 0; u < t->problem.n; ++u)
      if (v[u] < 0 || v[u] >= t->problem.d)
        throw InputError(where + "device " + std::to_string(v[u]) + " out of range");
    t->sampled.insert(std::vector<int32_t>(v, v + t->problem.n));  // oldest first: an older record keeps its last
  }
}

// What the run's rewards judge, as the state keeps it: a resume under another objective mixed step and
// pipeline times in its best and its final table. Checkpoints made before it was kept: the step objective.
std::string objective_json(const RewardSettings& r) {
  std::string o = std::string("\"objective\": ") + json_quote(objective_name(r.objective));
  if (r.objective == Objective::Pipeline)
    o += ", \"microbatches\": " + std::to_string(r.pipeline.microbatches) +
         ", \"schedule\": " + json_quote(schedule_name(r.pipeline.schedule));
  return o;
}

// A resume that judges otherwise than its checkpoint: the field (its flag, if any) and both values.
[[noreturn]] void refuse(const std::string& field, const std::string& flag, const std::string& had,
                         const std::string& asks) {
  throw InputError("reward." + field + (flag.empty() ? "" : " (" + flag + ")") + ": the checkpoint trained for " + had +
                   ", this run asks " + asks + " (its best and step times are of the checkpoint's: give that, " +
                   "or a fresh run.output_dir)");
}

void check_objective(const YAML::Node& s, const RewardSettings& r) {
  auto refuse = [](const std::string& field, const std::string& had, const std::string& asks) {
    placer::refuse(field, "--" + field, had, asks);
  };
  const std::string objective = s["objective"].as<std::string>("step");
  if (objective != objective_name(r.objective)) refuse("objective", objective, objective_name(r.objective));
  if (r.objective != Objective::Pipeline) return;
  const int microbatches = s["microbatches"].as<int>();
  if (microbatches != r.pipeline.microbatches)
    refuse("microbatches", std::to_string(microbatches), std::to_string(r.pipeline.microbatches));
  const std::string schedule = s["schedule"].as<std::string>();
  if (schedule != schedule_name(r.pipeline.schedule)) refuse("schedule", schedule, schedule_name(r.pipeline.schedule));
}

// A task's samples and evaluation counters over the run so far (a resume adds its session's to them).
std::string counters_json(const Task& t) {
  const EvalStats s = run_stats(t);
  return ", \"samples\": " + std::to_string(t.samples) + ", \"cache_hits\": " + std::to_string(s.cache_hits) +
         ", \"measurements\": " + std::to_string(s.measurements) +
         ", \"measured_steps\": " + std::to_string(s.measured_steps) +
         ", \"calibrations\": " + std::to_string(s.calibrations);
}

// Absent in checkpoints made before they were kept: the counters from 0, the samples an equal share.
void restore_counters(const YAML::Node& n, int64_t share, Task* t) {
  t->samples = n["samples"].as<int64_t>(share);
  t->earlier = EvalStats{};
  t->earlier.cache_hits = n["cache_hits"].as<int64_t>(0);
  t->earlier.measurements = n["measurements"].as<int64_t>(0);
  t->earlier.measured_steps = n["measured_steps"].as<int64_t>(0);
  t->earlier.calibrations = n["calibrations"].as<int64_t>(0);
}

// The rewards' scale, as the state keeps it: its best, baseline and elites are rewards (-pow(step, exponent),
// a failure at the penalty) of the mode's and profile's step times, paired or not. A resume on another scale
// compared them with its own (exponent 0.5, then 4: its best lost to a slower placement).
std::string reward_scale_json(const RewardConfig& r, const std::string& profile_content) {
  return std::string(", \"mode\": ") + json_quote(reward_mode_name(r.mode)) +
         ", \"exponent\": " + json_number(r.reward.exponent) +
         ", \"failure_penalty_s\": " + json_number(r.reward.failure_penalty_s) +
         ", \"profile\": " + json_quote(r.profile) + ", \"profile_content\": " + json_quote(profile_content) +
         ", \"paired\": " + (r.paired ? "true" : "false");
}

// Checkpoints made before the scale was kept: any scale resumes.
void check_reward_scale(const YAML::Node& s, const RewardConfig& r, const std::string& profile_content) {
  auto same = [&](const char* field, const char* flag, const std::string& asks) {
    if (s[field] && s[field].as<std::string>() != asks) refuse(field, flag, s[field].as<std::string>(), asks);
  };
  same("mode", "--reward-mode", reward_mode_name(r.mode));
  auto same_number = [&](const char* field, double asks) {
    if (s[field] && s[field].as<double>() != asks)
      refuse(field, "", json_number(s[field].as<double>()), json_number(asks));
  };
  same_number("exponent", r.reward.exponent);
  same_number("failure_penalty_s", r.reward.failure_penalty_s);
  if (s["profile_content"] && s["profile_content"].as<std::string>() != profile_content)
    refuse("profile", "--profile", s["profile"] ? "'" + s["profile"].as<std::string>() + "'" : "another profile",
           r.profile.empty() ? "none" : "'" + r.profile + "' (another file's contents)");
  same("paired", "--paired", r.paired ? "true" : "false");
}

}  // namespace

// A profile is the same by its bytes, not its path ("prof.json" and its absolute path are one profile; another
// profile written over the file is not): their FNV-1a, "" for none (an unreadable file: its path).
std::string profile_content(const std::string& path) {
  if (path.empty()) return "";
  try {
    return "fnv1a:" + std::to_string(fnv1a(read_file(path)));
  } catch (const std::exception&) {
    return path;
  }
}

std::string Trainer::state_json() const {
  std::ostringstream rng;
  rng << rng_;
  std::ostringstream o;
  o << "{\"update\": " << update_ << ", \"samples\": " << samples_ << ", \"stage\": " << stage_
    << ", \"bc_steps\": " << bc_steps_used_ << ", \"bc_reproduced\": " << (bc_reproduced_ ? "true" : "false")
    << ", \"bc_cancelled\": " << (bc_cancelled_ ? "true" : "false") << ", \"rl_seconds\": " << num(rl_seconds_) << ", "
    << objective_json(c_.reward) << reward_scale_json(c_.reward, profile_content_)
    << ", \"rng\": " << json_quote(rng.str()) << ", \"tasks\": [";
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = *tasks_[i];
    o << (i ? ", " : "") << "{\"graph\": " << json_quote(t.env->graph().name)
      << ", \"problem\": " << json_quote(problem_fingerprint(t)) << ", \"baseline\": " << num(t.baseline)
      << ", \"baseline_init\": " << (t.baseline_init ? "true" : "false") << ", \"best_reward\": " << num(t.best_reward)
      << ", \"best_step_s\": " << num(t.best_step_s) << ", \"best_measured\": " << (t.best_measured ? "true" : "false")
      << ", \"best_at\": " << t.best_at << ", \"sampled_earlier\": " << t.sampled_earlier + t.sampled.dropped()
      << ", \"warm_method\": " << json_quote(t.warm_method) << ", \"warm_step_s\": " << num(t.warm_step_s)
      << ", \"has_warm\": " << (t.has_warm ? "true" : "false") << counters_json(t);
    if (t.has_warm) o << ", \"warm\": " << placement_json(t.warm);
    if (!t.best.device_of.empty()) o << ", \"best\": " << placement_json(t.best);
    // Every warm-start row: a resumed run's result is chosen among them too (never worse than what it saw).
    o << ", \"warm_results\": [";
    for (size_t r = 0; r < t.warm_results.size(); ++r) {
      const BaselineResult& b = t.warm_results[r];
      o << (r ? ", " : "") << "{\"method\": " << json_quote(b.method) << ", \"step_s\": " << num(b.step_s)
        << ", \"ok\": " << (b.ok ? "true" : "false") << ", \"seconds\": " << num(b.seconds)
        << ", \"note\": " << json_quote(b.note) << ", \"ci_s\": [" << num(b.ci_low_s) << ", " << num(b.ci_high_s)
        << "]";
      if (!b.placement.device_of.empty()) o << ", \"placement\": " << placement_json(b.placement);
      o << "}";
    }
    o << "]";
    o << ", \"elites\": [";
    for (size_t e = 0; e < t.elites.size(); ++e) {
      o << (e ? ", " : "") << "{\"reward\": " << num(t.elites[e].reward) << ", \"units\": [";
      for (size_t u = 0; u < t.elites[e].units.size(); ++u) o << (u ? "," : "") << t.elites[e].units[u];
      o << "], \"at\": " << t.elites[e].at << "}";
    }
    o << "]}";
  }
  o << "]}";
  return o.str();
}

void Trainer::save_checkpoint() {
  torch::serialize::OutputArchive a;
  a.write("format", c10::IValue(std::string(kCheckpointFormat)));
  a.write("config", c10::IValue(train_config_to_json(c_)));
  a.write("state", c10::IValue(state_json()));
  a.write(kTrainedDevicesKey, c10::IValue(static_cast<int64_t>(trained_devices_)));
  torch::serialize::OutputArchive model, optimizer;
  policy_->save(model);
  opt_->save(optimizer);
  a.write("model", model);
  a.write("optimizer", optimizer);
  for (size_t i = 0; i < tasks_.size(); ++i) a.write(sampled_key(i), sampled_tensor(*tasks_[i]));
  std::ostringstream bytes;
  a.save_to(bytes);
  // On the disk before the run goes on: a resume, or a service restart, reads it back after a crash.
  write_file_durable(dir_ + "/" + kCheckpointFile, bytes.str());
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
    for (size_t i = 0; i < tasks_.size(); ++i) {
      torch::Tensor sampled;
      // Absent in checkpoints made before distinct_redraws: nothing sampled is remembered.
      if (la.archive.try_read(sampled_key(i), sampled)) restore_sampled(sampled, path, tasks_[i].get());
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'model': does not match the config's policy (" +
                     torch_error_text(e) + ")");
  }
  YAML::Node s;
  try {
    s = YAML::Load(la.state_json);
    check_objective(s, c_.reward);
    check_reward_scale(s, c_.reward, profile_content_);
    update_ = s["update"].as<int64_t>();
    samples_ = s["samples"].as<int64_t>();
    rl_seconds_ = s["rl_seconds"].as<double>();
    bc_steps_used_ = s["bc_steps"].as<int>(0);  // absent in checkpoints made before they were kept
    bc_reproduced_ = s["bc_reproduced"].as<bool>(false);
    bc_cancelled_ = s["bc_cancelled"].as<bool>(false);
    std::istringstream in(s["rng"].as<std::string>());
    in >> rng_;
    if (!in) throw InputError("rng");
    const YAML::Node ts = s["tasks"];
    if (!ts.IsSequence() || ts.size() != tasks_.size())
      throw InputError("tasks: expected " + std::to_string(tasks_.size()) + " entries");
    for (size_t i = 0; i < tasks_.size(); ++i) {
      Task& t = *tasks_[i];
      const YAML::Node n = ts[i];
      // (Absent in checkpoints made before it was kept.)
      if (n["problem"] && n["problem"].as<std::string>() != problem_fingerprint(t))
        throw InputError("tasks[" + std::to_string(i) + "]: trained on " + n["problem"].as<std::string>() +
                         ", the config places " + problem_fingerprint(t) +
                         " (another graph or cluster: give a fresh run.output_dir)");
      t.baseline = n["baseline"].as<double>();
      t.baseline_init = n["baseline_init"].as<bool>();
      t.best_reward = n["best_reward"].as<double>();
      t.best_step_s = n["best_step_s"].as<double>();
      t.best_measured = n["best_measured"].as<bool>();
      t.best_at = n["best_at"].as<int64_t>();
      t.sampled_earlier = n["sampled_earlier"].as<int64_t>(0);
      restore_counters(n, samples_ / static_cast<int64_t>(tasks_.size()), &t);
      if (n["best"])
        t.best = placement_from_node(n["best"], t.env->graph(), t.env->cluster(), path + ": state.tasks.best");
      t.elites.clear();
      for (const YAML::Node& e : n["elites"]) {
        std::vector<int32_t> units = e["units"].as<std::vector<int32_t>>();
        if (units.size() != static_cast<size_t>(t.problem.n))
          throw InputError("tasks.elites.units: expected " + std::to_string(t.problem.n) + " units");
        for (int32_t d : units)
          if (d < 0 || d >= t.problem.d)
            throw InputError("tasks.elites.units: device " + std::to_string(d) + " out of range");
        offer_elite(t, e["reward"].as<double>(), units, e["at"].as<int64_t>(0));
      }
    }
  } catch (const InputError& e) {
    throw InputError(path + ": field 'state': " + e.what());
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'state': malformed (" + std::string(e.what()) + ")");
  }
}

void Trainer::restore_warm_starts(const std::string& ckpt) {
  // Warm-start placements come from the checkpoint: the units must be the same.
  LoadedArchive la;
  open_checkpoint(ckpt, &la);
  try {
    restore_warm_starts(ckpt, YAML::Load(la.state_json));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {  // yaml-cpp's, unnamed: a state that is not what this code wrote
    throw InputError(ckpt + ": field 'state': malformed (" + std::string(e.what()) + ")");
  }
}

void Trainer::restore_warm_starts(const std::string& ckpt, const YAML::Node& s) {
  const YAML::Node ts = s["tasks"];
  if (!ts.IsSequence() || ts.size() != tasks_.size())
    throw InputError(ckpt + ": field 'state.tasks': does not match the config's graphs");
  stage_ = s["stage"].as<int>(0);  // the units' stage (unit_stages) the checkpoint's elites and samples are in
  if (stage_ < 0 || stage_ >= std::max(1, c_.optimizer.unit_stages))
    throw InputError(ckpt + ": field 'state.stage': " + std::to_string(stage_) + " is not a stage of the config's " +
                     "train.unit_stages (" + std::to_string(c_.optimizer.unit_stages) + ")");
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = *tasks_[i];
    t.has_warm = ts[i]["has_warm"].as<bool>(false);
    t.warm_method = ts[i]["warm_method"].as<std::string>("");
    t.warm_step_s = ts[i]["warm_step_s"].as<double>(0.0);
    if (t.has_warm)
      t.warm = placement_from_node(ts[i]["warm"], t.env->graph(), t.env->cluster(), ckpt + ": state.tasks.warm");
    t.warm_results.clear();  // absent in checkpoints made before they were kept: the cloned one only
    for (const YAML::Node& r : ts[i]["warm_results"]) {
      BaselineResult b;
      b.method = r["method"].as<std::string>();
      b.step_s = r["step_s"].as<double>();
      b.ok = r["ok"].as<bool>();
      b.seconds = r["seconds"].as<double>(0.0);
      b.note = r["note"].as<std::string>("");
      if (const YAML::Node ci = r["ci_s"]; ci && ci.IsSequence() && ci.size() == 2) {
        b.ci_low_s = ci[0].as<double>();
        b.ci_high_s = ci[1].as<double>();
      }
      if (r["placement"])
        b.placement = placement_from_node(r["placement"], t.env->graph(), t.env->cluster(),
                                          ckpt + ": state.tasks.warm_results.placement");
      t.warm_results.push_back(std::move(b));
    }
  }
}

std::string policy_differences(const TrainConfig& want_config, const TrainConfig& have_config,
                               const std::string& want_name) {
  const PolicyOptions want = policy_options(want_config), have = policy_options(have_config);
  std::string differs;
  auto compare = [&](const char* field, const std::string& a, const std::string& b) {
    if (a != b)
      differs += std::string(differs.empty() ? "" : ", ") + field + " " + b + " (" + want_name + ": " + a + ")";
  };
  compare("type", policy_type_name(want.kind), policy_type_name(have.kind));
  compare("hidden", std::to_string(want.hidden), std::to_string(have.hidden));
  compare("type_embedding", std::to_string(want.type_embedding), std::to_string(have.type_embedding));
  compare("decoder", decoder_name(want.decoder), decoder_name(have.decoder));
  if (want.kind == PolicyType::Gnn)
    compare("gnn_layers", std::to_string(want.gnn_layers), std::to_string(have.gnn_layers));
  if (want.kind == PolicyType::Hierarchical)
    compare("grouper_groups", std::to_string(want.grouper_groups), std::to_string(have.grouper_groups));
  return differs;
}

TrainConfig read_checkpoint_config(const std::string& path) {
  LoadedArchive la;
  open_checkpoint(path, &la);
  return parse_train_config(la.config_json, path + " (field 'config')");
}

// Loads the checkpoint's policy (used by place_with_checkpoint); the most devices it trained on (0: unknown).
int32_t Trainer::init_weights(const std::string& from) {
  std::string path = from;
  LoadedArchive la;
  try {
    // A folder's checkpoint.pt, or an ensemble folder's first member.
    path = is_ensemble_folder(from) ? ensemble_members(from).front() : policy_files(from).front();
    open_checkpoint(path, &la);
  } catch (const InputError& e) {
    throw InputError("policy.init_from: " + std::string(e.what()));
  }
  // The same policy: type, sizes and decoder (a hierarchical policy's weights loaded into a seq2seq one
  // whose parameters have its names and shapes, and a 3-layer gnn's into a 2-layer one, dropping a layer).
  TrainConfig have;
  try {
    have = parse_train_config(la.config_json, path + " (field 'config')");
  } catch (const InputError& e) {
    throw InputError("policy.init_from: " + std::string(e.what()));
  }
  if (const std::string differs = policy_differences(c_, have, "the config"); !differs.empty())
    throw InputError("policy.init_from: " + path + " holds another policy: " + differs);
  try {
    torch::serialize::InputArchive model;
    if (!la.archive.try_read("model", model)) throw InputError(path + ": field 'model' missing");
    load_model_checked(*policy_, model, path);
  } catch (const InputError& e) {
    throw InputError("policy.init_from: " + std::string(e.what()));
  } catch (const std::exception& e) {
    throw InputError("policy.init_from: " + path + ": field 'model': does not match the config's policy (" +
                     torch_error_text(e) + ")");
  }
  try {
    return archive_trained_devices(la, have);
  } catch (const InputError& e) {  // (it named neither the file nor policy.init_from)
    throw InputError("policy.init_from: " + path + ": " + e.what());
  }
}

namespace {

// The policy of an opened checkpoint, its config in *config.
std::shared_ptr<PolicyImpl> policy_of(LoadedArchive& la, const std::string& path, TrainConfig* config,
                                      int32_t* trained_devices = nullptr) {
  *config = parse_train_config(la.config_json, path + " (field 'config')");
  try {
    if (trained_devices) *trained_devices = archive_trained_devices(la, *config);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  PolicyOptions p = policy_options(*config);
  auto policy = make_policy(p, 0);  // its weights are read next
  try {
    torch::serialize::InputArchive model;
    if (!la.archive.try_read("model", model)) throw InputError(path + ": field 'model' missing");
    load_model_checked(*policy, model, path);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": field 'model': does not match the config's policy (" +
                     torch_error_text(e) + ")");
  }
  policy->eval();
  return policy;
}

}  // namespace

std::shared_ptr<PolicyImpl> load_policy(const std::string& path, TrainConfig* config, int32_t* trained_devices) {
  LoadedArchive la;
  open_checkpoint(path, &la);
  return policy_of(la, path, config, trained_devices);
}

// The policy alone, for shipping (issue 25: "a small file"): the checkpoint's
// format, config, state and model, without the optimizer's moments and the
// record of sampled placements (most of a run's checkpoint). `--policy`,
// `policy.init_from` and place_with_checkpoint read it; a run cannot resume
// from it (its optimizer is missing, and resuming says so).
ExportedPolicy export_policy(const std::string& from, const std::string& to) {
  const std::string path = fs::is_directory(from) ? (fs::path(from) / kCheckpointFile).string() : from;
  std::error_code ec;  // (false where either is missing)
  if (fs::path(path).lexically_normal() == fs::path(to).lexically_normal() || fs::equivalent(path, to, ec))
    throw InputError("-o " + to + ": is the checkpoint it exports (" + path +
                     "): the run could not resume from the policy alone; write it elsewhere");
  LoadedArchive la;
  open_checkpoint(path, &la);
  TrainConfig config;
  int32_t trained = 0;
  const std::shared_ptr<PolicyImpl> policy = policy_of(la, path, &config, &trained);
  torch::serialize::OutputArchive a, model;
  a.write("format", c10::IValue(std::string(kCheckpointFormat)));
  a.write("config", c10::IValue(la.config_json));
  a.write("state", c10::IValue(la.state_json));
  if (trained > 0) a.write(kTrainedDevicesKey, c10::IValue(static_cast<int64_t>(trained)));
  policy->save(model);
  a.write("model", model);
  std::ostringstream bytes;
  a.save_to(bytes);
  write_file_atomic(to, bytes.str());  // "cannot write 'PATH': why", as every output
  return ExportedPolicy{static_cast<int64_t>(fs::file_size(path)), static_cast<int64_t>(bytes.str().size())};
}

}  // namespace placer
