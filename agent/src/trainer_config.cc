// TrainConfig: YAML/JSON parsing with errors that name the file and field,
// and the JSON form stored next to every result.
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "placer/agent/train.h"
#include "placer/env/pipeline_objective.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/yaml_reader.h"

namespace placer {

Graph GraphSource::load() const {
  if (value) return *value;
  if (!file.empty()) return load_graph(file);
  BuilderOptions o;
  o.values = options;
  o.forward_only = forward_only;
  return build_graph(builder, o);
}

std::string GraphSource::describe() const {
  const std::string on = cluster.empty() ? "" : " on " + cluster;
  if (!file.empty()) return file + on;
  std::string s = builder + "(";
  bool first = true;
  for (const auto& [k, v] : options) {
    s += (first ? "" : ",") + k + "=" + std::to_string(v);
    first = false;
  }
  if (forward_only) s += std::string(first ? "" : ",") + "forward_only";
  return s + ")" + on;
}

const char* policy_type_name(PolicyType type) {
  switch (type) {
    case PolicyType::Seq2Seq: return "seq2seq";
    case PolicyType::Hierarchical: return "hierarchical";
    case PolicyType::Gnn: return "gnn";
  }
  return "seq2seq";
}

const char* decoder_name(DecoderKind decoder) { return decoder == DecoderKind::Pointwise ? "pointwise" : "lstm"; }

const char* algorithm_name(Algorithm algorithm) { return algorithm == Algorithm::Ppo ? "ppo" : "reinforce"; }

PolicyType parse_policy_type(const std::string& name) {
  for (PolicyType t : {PolicyType::Seq2Seq, PolicyType::Hierarchical, PolicyType::Gnn})
    if (name == policy_type_name(t)) return t;
  throw InputError(unknown_name("policy", name, {"seq2seq", "hierarchical", "gnn"}));
}

DecoderKind parse_decoder(const std::string& name) {
  for (DecoderKind d : {DecoderKind::Lstm, DecoderKind::Pointwise})
    if (name == decoder_name(d)) return d;
  throw InputError(unknown_name("decoder", name, {"lstm", "pointwise"}));
}

Algorithm parse_algorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::Reinforce, Algorithm::Ppo})
    if (name == algorithm_name(a)) return a;
  throw InputError(unknown_name("algorithm", name, {"reinforce", "ppo"}));
}

namespace {

// A list of strings, or one string "a,b,c".
template <class Node>
void read_names(FieldReader<Node>& sec, const std::string& key, std::vector<std::string>* out) {
  const Node n = sec.get(key);
  if (!n.present()) return;
  if (n.is_list() || n.is_null()) {
    *out = sec.strings(n, sec.path(key));
    return;
  }
  const std::string text = sec.string(n, sec.path(key));
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out->push_back(item);
}

template <class Node>
GraphSource parse_graph_source(const Node& node, const FieldFail& fail, const std::string& path) {
  GraphSource g;
  if (const std::optional<std::string> scalar = node.string()) {  // "nmt" or "path/to/graph.json"
    const std::string& s = *scalar;
    if (s.find('/') != std::string::npos || s.find('.') != std::string::npos)
      g.file = s;
    else
      g.builder = s;
    return g;
  }
  FieldReader<Node> sec(node, path, fail);
  sec.read("builder", &g.builder);
  sec.read("file", &g.file);
  sec.read("forward_only", &g.forward_only);
  sec.read("cluster", &g.cluster);
  const Node opts = sec.get("options");
  if (opts.present() && !opts.is_null()) {
    if (!opts.is_map()) sec.fail(sec.path("options"), "expected a map of integers, got " + opts.describe());
    for (const std::string& key : opts.keys())
      g.options[key] = sec.integer(opts.member(key), sec.path("options." + key));
  }
  sec.finish();
  if (g.builder.empty() == g.file.empty()) sec.fail(path, "give exactly one of 'builder' or 'file'");
  return g;
}

template <class Node>
std::vector<GraphSource> parse_graph_list(const Node& node, const FieldFail& fail, const std::string& path) {
  std::vector<GraphSource> out;
  if (!node.present() || node.is_null()) return out;
  if (!node.is_list()) fail(path, "expected a list of graphs, got " + node.describe(), FieldProblem::Invalid);
  for (size_t i = 0; i < node.size(); ++i) out.push_back(parse_graph_source(node.at(i), fail, index_path(path, i)));
  return out;
}

// The names of a config's enum fields, read before the unknown-field checks
// and turned into enums after them (errors come in that order); unset when
// the config leaves the field out.
struct ChoiceNames {
  std::optional<std::string> policy_type, decoder, reward_mode, algorithm, objective, schedule;
};

template <class Node>
void read_choice(FieldReader<Node>& sec, const std::string& key, std::optional<std::string>* out) {
  std::string name;
  if (sec.read(key, &name)) *out = name;
}

template <class Node>
void read_policy(FieldReader<Node> policy, PolicyConfig& p, ChoiceNames& names) {
  read_choice(policy, "type", &names.policy_type);
  policy.read("hidden", &p.hidden, 2, 4096);
  policy.read("type_embedding", &p.type_embedding, 1, 1024);
  policy.read("max_groups", &p.max_groups, 0, 100000);
  policy.read("state_units", &p.state_units);
  policy.read("layer_units", &p.layer_units);
  policy.read("grouper_groups", &p.grouper_groups, 0, 4096);
  policy.read("gnn_layers", &p.gnn_layers, 1, 16);
  policy.read("place_samples", &p.place_samples, 1, 4096);
  policy.read("place_levels", &p.place_levels, 1, 8);
  policy.read("place_around", &p.place_around, 0.0, 1.0);
  policy.read("init_from", &p.init_from);
  policy.read("init_answer_s", &p.init_answer_s, 0.0, 3600.0);
  read_choice(policy, "decoder", &names.decoder);
  policy.finish();
}

template <class Node>
void read_reward(FieldReader<Node> reward, RewardConfig& rw, ChoiceNames& names) {
  read_choice(reward, "mode", &names.reward_mode);
  reward.read("exponent", &rw.reward.exponent, 0.01, 4.0);
  reward.read("failure_penalty_s", &rw.reward.failure_penalty_s, 0.0, 1e6);
  reward.read("measure_warmup", &rw.measure.warmup_steps, 0, 1000);
  reward.read("measure_steps", &rw.measure.measured_steps, 1, 1000);
  reward.read("measure_max_steps", &rw.measure.max_steps, 0, 100000);
  reward.read("measure_target", &rw.measure.target_halfwidth, 0.0, 0.5);
  reward.read("measure_budget_s", &rw.measure.budget_s, 0.0, 1e6);
  reward.read("hybrid_measure_top", &rw.hybrid_measure_top, 0, 1000);
  reward.read("paired", &rw.paired);
  reward.read("final_max_steps", &rw.final_max_steps, 0, 100000);
  reward.read("final_target", &rw.final_target, 0.0, 0.5);
  reward.read("finalists", &rw.finalists, 0, 64);
  reward.read("final_retakes", &rw.final_retakes, 0, 10);
  reward.read("spell_ratio", &rw.spell_ratio, 1.0, 1000.0);
  reward.read("profile", &rw.profile);
  read_choice(reward, "objective", &names.objective);
  reward.read("microbatches", &rw.pipeline.microbatches, 1, 1024);
  read_choice(reward, "schedule", &names.schedule);
  reward.finish();
}

template <class Node>
void read_optimizer(FieldReader<Node> tr, OptimizerConfig& o, ChoiceNames& names) {
  read_choice(tr, "algorithm", &names.algorithm);
  tr.read("updates", &o.updates, 0, 100000000);
  tr.read("samples_per_update", &o.samples_per_update, 1, 4096);
  tr.read("max_samples", &o.max_samples, 0, 1000000000000LL);
  tr.read("time_limit_s", &o.time_limit_s, 0.0, 1e9);
  tr.read("lr", &o.lr, 0.0, 10.0);
  tr.read("lr_decay", &o.lr_decay, 0.0, 1.0);
  tr.read("lr_decay_every", &o.lr_decay_every, 1, 100000000);
  tr.read("entropy_weight", &o.entropy_weight, 0.0, 100.0);
  tr.read("baseline_decay", &o.baseline_decay, 0.0, 1.0);
  tr.read("grad_clip", &o.grad_clip, 0.0, 1e6);
  tr.read("temperature", &o.temperature, 1e-3, 1e3);
  tr.read("logit_noise", &o.logit_noise, 0.0, 100.0);
  tr.read("logit_noise_decay", &o.logit_noise_decay, 0.0, 1.0);
  tr.read("greedy_sample", &o.greedy_sample);
  tr.read("distinct_redraws", &o.distinct_redraws, -1, 64);
  tr.read("ppo_epochs", &o.ppo_epochs, 1, 100);
  tr.read("ppo_clip", &o.ppo_clip, 0.0, 10.0);
  tr.read("elites", &o.elites, 0, 64);
  tr.read("elite_weight", &o.elite_weight, 0.0, 100.0);
  tr.read("refine_evaluations", &o.refine_evaluations, 0, 1000000000000LL);
  tr.read("unit_stages", &o.unit_stages, 1, 8);
  tr.finish();
}

template <class Node>
void read_warm_start(FieldReader<Node> ws, WarmStartConfig& w) {
  read_names(ws, "methods", &w.methods);
  ws.read("bc_steps", &w.bc_steps, 0, 100000);
  ws.read("bc_lr", &w.bc_lr, 0.0, 10.0);
  ws.read("clone_search", &w.clone_search);
  ws.read("split_units", &w.split_units);
  ws.finish();
}

template <class Node>
void read_run(FieldReader<Node> run, RunConfig& r) {
  run.read("seed", &r.seed, 0, INT64_MAX);
  run.read("threads", &r.threads, 1, 256);
  run.read("env_threads", &r.env_threads, 0, 256);
  run.read("checkpoint_every", &r.checkpoint_every, 1, 100000000);
  run.read("output_dir", &r.output_dir);
  run.finish();
}

// An enum field's name as its enum (unchanged when the config left it out).
template <class Node, class Enum, class Parse>
void choose(const FieldReader<Node>& top, const char* field, Parse parse, const std::optional<std::string>& name,
            Enum* out) {
  if (!name) return;
  try {
    *out = parse(*name);
  } catch (const InputError& e) {
    top.fail(top.path(field), e.what());
  }
}

}  // namespace

template <class Node>
TrainConfig read_train_config(const Node& node, const std::string& path, const FieldFail& fail) {
  TrainConfig c;
  FieldReader<Node> top(node, path, fail);
  top.read("name", &c.name);
  top.read("cluster", &c.cluster);
  if (const Node g = top.get("graph"); g.present()) c.graph = parse_graph_source(g, fail, top.path("graph"));
  c.family = parse_graph_list(top.get("family"), fail, top.path("family"));
  c.held_out = parse_graph_list(top.get("held_out"), fail, top.path("held_out"));
  read_names(top, "compare", &c.compare);
  ChoiceNames names;
  read_policy(top.section("policy"), c.policy, names);
  read_reward(top.section("reward"), c.reward, names);
  read_optimizer(top.section("train"), c.optimizer, names);
  read_warm_start(top.section("warm_start"), c.warm_start);
  read_run(top.section("run"), c.run);
  top.finish();

  if (c.name.empty()) top.fail(top.path("name"), "must not be empty");
  choose(top, "policy.type", parse_policy_type, names.policy_type, &c.policy.type);
  choose(top, "policy.decoder", parse_decoder, names.decoder, &c.policy.decoder);
  choose(top, "reward.mode", parse_reward_mode, names.reward_mode, &c.reward.mode);
  choose(top, "reward.objective", objective_named, names.objective, &c.reward.objective);
  choose(top, "reward.schedule", schedule_named, names.schedule, &c.reward.pipeline.schedule);
  choose(top, "train.algorithm", parse_algorithm, names.algorithm, &c.optimizer.algorithm);
  if (c.policy.hidden % 2 != 0)
    top.fail(top.path("policy.hidden"), "must be even, got " + std::to_string(c.policy.hidden));
  return c;
}

template TrainConfig read_train_config<YamlNode>(const YamlNode&, const std::string&, const FieldFail&);
template TrainConfig read_train_config<JsonNode>(const JsonNode&, const std::string&, const FieldFail&);

void complete_train_config(TrainConfig& c, const std::string& path, const FieldFail& fail) {
  const auto missing = [&](const char* field, const std::string& problem) {
    fail(field_path(path, field), problem, FieldProblem::Invalid);
    throw InputError("", field_path(path, field), problem);  // a FieldFail that returned
  };
  if (c.policy.type == PolicyType::Gnn && !c.family.empty()) {
    if (c.graph.builder.empty() && c.graph.file.empty() && !c.graph.value) c.graph = c.family.front();
  } else if (c.graph.builder.empty() && c.graph.file.empty() && !c.graph.value) {
    missing("graph", "missing (a builder with options, or a file)");
  }
  if (c.cluster.empty() && !c.cluster_value) missing("cluster", "missing (a preset, a cluster file or a device list)");
  if (c.run.output_dir.empty()) c.run.output_dir = "runs/" + c.name;
}

TrainConfig parse_train_config(const std::string& text, const std::string& origin) {
  YamlNode root;
  try {
    root = parse_yaml(text);
  } catch (const YamlSyntaxError& e) {
    throw InputError(origin + ": not valid YAML/JSON: line " + std::to_string(e.line()) + ": " + e.problem());
  }
  if (!root.present() || root.is_null()) throw InputError(origin + ": empty config");
  const FieldFail fail = throw_field_error<InputError>(origin);
  TrainConfig c = read_train_config(root, "", fail);
  complete_train_config(c, "", fail);
  c.source_text = text;
  return c;
}

TrainConfig load_train_config(const std::string& path) {
  TrainConfig c = parse_train_config(read_file(path), path);
  c.source_path = path;
  return c;
}

namespace {

std::string list(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + json_quote(v[i]);
  return o + "]";
}
std::string source(const GraphSource& g) {
  const std::string on = g.cluster.empty() ? "" : ", \"cluster\": " + json_quote(g.cluster);
  if (!g.file.empty()) return "{\"file\": " + json_quote(g.file) + on + "}";
  std::string o = "{\"builder\": " + json_quote(g.builder) + on +
                  ", \"forward_only\": " + (g.forward_only ? "true" : "false") + ", \"options\": {";
  bool first = true;
  for (const auto& [k, v] : g.options) {
    o += (first ? "" : ", ") + json_quote(k) + ": " + std::to_string(v);
    first = false;
  }
  return o + "}}";
}
std::string sources(const std::vector<GraphSource>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + source(v[i]);
  return o + "]";
}

}  // namespace

std::string train_config_to_json(const TrainConfig& c) {
  std::ostringstream o;
  o << "{\n  \"name\": " << json_quote(c.name) << ",\n";
  if (!c.graph.builder.empty() || !c.graph.file.empty()) o << "  \"graph\": " << source(c.graph) << ",\n";
  o << "  \"family\": " << sources(c.family) << ",\n  \"held_out\": " << sources(c.held_out) << ",\n";
  o << "  \"cluster\": " << json_quote(c.cluster) << ",\n  \"compare\": " << list(c.compare) << ",\n";
  o << "  \"policy\": {\"type\": " << json_quote(policy_type_name(c.policy.type)) << ", \"hidden\": " << c.policy.hidden
    << ", \"type_embedding\": " << c.policy.type_embedding << ", \"max_groups\": " << c.policy.max_groups
    << ", \"state_units\": " << (c.policy.state_units ? "true" : "false")
    << ", \"layer_units\": " << (c.policy.layer_units ? "true" : "false")
    << ", \"grouper_groups\": " << c.policy.grouper_groups << ", \"gnn_layers\": " << c.policy.gnn_layers
    << ", \"place_samples\": " << c.policy.place_samples << ", \"place_levels\": " << c.policy.place_levels
    << ", \"place_around\": " << json_number(c.policy.place_around)
    << ", \"init_from\": " << json_quote(c.policy.init_from)
    << ", \"init_answer_s\": " << json_number(c.policy.init_answer_s)
    << ", \"decoder\": " << json_quote(decoder_name(c.policy.decoder)) << "},\n";
  o << "  \"reward\": {\"mode\": " << json_quote(reward_mode_name(c.reward.mode))
    << ", \"exponent\": " << json_number(c.reward.reward.exponent)
    << ", \"failure_penalty_s\": " << json_number(c.reward.reward.failure_penalty_s)
    << ", \"measure_warmup\": " << c.reward.measure.warmup_steps
    << ", \"measure_steps\": " << c.reward.measure.measured_steps
    << ", \"measure_max_steps\": " << c.reward.measure.max_steps
    << ", \"measure_target\": " << json_number(c.reward.measure.target_halfwidth)
    << ", \"measure_budget_s\": " << json_number(c.reward.measure.budget_s)
    << ", \"hybrid_measure_top\": " << c.reward.hybrid_measure_top
    << ", \"final_max_steps\": " << c.reward.final_max_steps
    << ", \"final_target\": " << json_number(c.reward.final_target) << ", \"finalists\": " << c.reward.finalists
    << ", \"profile\": " << json_quote(c.reward.profile);
  const RewardConfig defaults;
  if (c.reward.final_retakes != defaults.final_retakes || c.reward.spell_ratio != defaults.spell_ratio)
    o << ", \"final_retakes\": " << c.reward.final_retakes  // only then, so a default run's config reads as before
      << ", \"spell_ratio\": " << json_number(c.reward.spell_ratio);
  if (c.reward.paired) o << ", \"paired\": true";  // only then, so a default run's config reads as before
  if (c.reward.objective == Objective::Pipeline)   // only then, so a step run's config reads as before
    o << ", \"objective\": " << json_quote(objective_name(c.reward.objective))
      << ", \"microbatches\": " << c.reward.pipeline.microbatches
      << ", \"schedule\": " << json_quote(schedule_name(c.reward.pipeline.schedule));
  o << "},\n";
  o << "  \"train\": {\"algorithm\": " << json_quote(algorithm_name(c.optimizer.algorithm))
    << ", \"updates\": " << c.optimizer.updates << ", \"samples_per_update\": " << c.optimizer.samples_per_update
    << ", \"max_samples\": " << c.optimizer.max_samples
    << ", \"time_limit_s\": " << json_number(c.optimizer.time_limit_s) << ", \"lr\": " << json_number(c.optimizer.lr)
    << ", \"lr_decay\": " << json_number(c.optimizer.lr_decay) << ", \"lr_decay_every\": " << c.optimizer.lr_decay_every
    << ", \"entropy_weight\": " << json_number(c.optimizer.entropy_weight)
    << ", \"baseline_decay\": " << json_number(c.optimizer.baseline_decay)
    << ", \"grad_clip\": " << json_number(c.optimizer.grad_clip)
    << ", \"temperature\": " << json_number(c.optimizer.temperature)
    << ", \"logit_noise\": " << json_number(c.optimizer.logit_noise)
    << ", \"logit_noise_decay\": " << json_number(c.optimizer.logit_noise_decay)
    << ", \"greedy_sample\": " << (c.optimizer.greedy_sample ? "true" : "false")
    << ", \"distinct_redraws\": " << c.optimizer.distinct_redraws << ", \"ppo_epochs\": " << c.optimizer.ppo_epochs
    << ", \"ppo_clip\": " << json_number(c.optimizer.ppo_clip) << ", \"elites\": " << c.optimizer.elites
    << ", \"elite_weight\": " << json_number(c.optimizer.elite_weight)
    << ", \"refine_evaluations\": " << c.optimizer.refine_evaluations
    << ", \"unit_stages\": " << c.optimizer.unit_stages << "},\n";
  o << "  \"warm_start\": {\"methods\": " << list(c.warm_start.methods) << ", \"bc_steps\": " << c.warm_start.bc_steps
    << ", \"bc_lr\": " << json_number(c.warm_start.bc_lr)
    << ", \"clone_search\": " << (c.warm_start.clone_search ? "true" : "false")
    << ", \"split_units\": " << (c.warm_start.split_units ? "true" : "false") << "},\n";
  o << "  \"run\": {\"seed\": " << c.run.seed << ", \"threads\": " << c.run.threads
    << ", \"env_threads\": " << c.run.env_threads << ", \"checkpoint_every\": " << c.run.checkpoint_every
    << ", \"output_dir\": " << json_quote(c.run.output_dir) << "}\n}\n";
  return o.str();
}

}  // namespace placer
