// TrainConfig: YAML/JSON parsing with errors that name the file and field,
// and the JSON form stored next to every result.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "placer/agent/train.h"
#include "placer/agent/yaml_node.h"
#include "placer/graphs/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"

namespace placer {

Graph GraphSource::load() const {
  if (!file.empty()) return load_graph(file);
  BuilderOptions o;
  o.values = options;
  o.forward_only = forward_only;
  return build_graph(builder, o);
}

std::string GraphSource::describe() const {
  if (!file.empty()) return file;
  std::string s = builder + "(";
  bool first = true;
  for (const auto& [k, v] : options) {
    s += (first ? "" : ",") + k + "=" + std::to_string(v);
    first = false;
  }
  if (forward_only) s += std::string(first ? "" : ",") + "forward_only";
  return s + ")";
}

namespace {

// A list of strings, or one string "a,b,c".
void read_names(YamlFields& sec, const std::string& key, std::vector<std::string>* out) {
  const YamlNode n = sec.get(key);
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

GraphSource parse_graph_source(const YamlNode& node, const FieldFail& fail, const std::string& path) {
  GraphSource g;
  if (node.yaml().IsScalar()) {  // "nmt" or "path/to/graph.json"
    const std::string s = node.yaml().Scalar();
    if (s.find('/') != std::string::npos || s.find('.') != std::string::npos)
      g.file = s;
    else
      g.builder = s;
    return g;
  }
  YamlFields sec(node, path, fail);
  sec.read("builder", &g.builder);
  sec.read("file", &g.file);
  sec.read("forward_only", &g.forward_only);
  const YamlNode opts = sec.get("options");
  if (opts.present() && !opts.is_null()) {
    if (!opts.is_map()) sec.fail(sec.path("options"), "expected a map of integers, got " + opts.describe());
    for (const std::string& key : opts.keys())
      g.options[key] = sec.integer(opts.member(key), sec.path("options." + key));
  }
  sec.finish();
  if (g.builder.empty() == g.file.empty()) sec.fail(path, "give exactly one of 'builder' or 'file'");
  return g;
}

std::vector<GraphSource> parse_graph_list(const YamlNode& node, const FieldFail& fail, const std::string& path) {
  std::vector<GraphSource> out;
  if (!node.present() || node.is_null()) return out;
  if (!node.is_list()) fail(path, "expected a list of graphs, got " + node.describe(), FieldProblem::Invalid);
  for (size_t i = 0; i < node.size(); ++i) out.push_back(parse_graph_source(node.at(i), fail, index_path(path, i)));
  return out;
}

}  // namespace

TrainConfig parse_train_config(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(origin + ": not valid YAML/JSON: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root || root.IsNull()) throw InputError(origin + ": empty config");
  TrainConfig c;
  c.source_text = text;
  const FieldFail fail = throw_field_error<InputError>(origin);
  YamlFields top(YamlNode(root), "", fail);
  top.read("name", &c.name);
  top.read("cluster", &c.cluster);
  if (const YamlNode g = top.get("graph"); g.present()) c.graph = parse_graph_source(g, fail, "graph");
  c.family = parse_graph_list(top.get("family"), fail, "family");
  c.held_out = parse_graph_list(top.get("held_out"), fail, "held_out");
  read_names(top, "compare", &c.compare);

  YamlFields policy = top.section("policy");
  policy.read("type", &c.policy);
  policy.read("hidden", &c.hidden, 2, 4096);
  policy.read("type_embedding", &c.type_embedding, 1, 1024);
  policy.read("max_groups", &c.max_groups, 0, 100000);
  policy.read("grouper_groups", &c.grouper_groups, 0, 4096);
  policy.read("gnn_layers", &c.gnn_layers, 1, 16);
  policy.read("place_samples", &c.place_samples, 1, 4096);
  policy.read("decoder", &c.decoder);
  policy.finish();

  YamlFields reward = top.section("reward");
  reward.read("mode", &c.reward_mode);
  reward.read("exponent", &c.reward_exponent, 0.01, 4.0);
  reward.read("failure_penalty_s", &c.failure_penalty_s, 0.0, 1e6);
  reward.read("measure_warmup", &c.measure_warmup, 0, 1000);
  reward.read("measure_steps", &c.measure_steps, 1, 1000);
  reward.read("hybrid_measure_top", &c.hybrid_measure_top, 0, 1000);
  reward.read("profile", &c.profile);
  reward.finish();

  YamlFields tr = top.section("train");
  tr.read("algorithm", &c.algorithm);
  tr.read("updates", &c.updates, 0, 100000000);
  tr.read("samples_per_update", &c.samples_per_update, 1, 4096);
  tr.read("max_samples", &c.max_samples, 0, 1000000000000LL);
  tr.read("time_limit_s", &c.time_limit_s, 0.0, 1e9);
  tr.read("lr", &c.lr, 0.0, 10.0);
  tr.read("lr_decay", &c.lr_decay, 0.0, 1.0);
  tr.read("lr_decay_every", &c.lr_decay_every, 1, 100000000);
  tr.read("entropy_weight", &c.entropy_weight, 0.0, 100.0);
  tr.read("baseline_decay", &c.baseline_decay, 0.0, 1.0);
  tr.read("grad_clip", &c.grad_clip, 0.0, 1e6);
  tr.read("temperature", &c.temperature, 1e-3, 1e3);
  tr.read("logit_noise", &c.logit_noise, 0.0, 100.0);
  tr.read("logit_noise_decay", &c.logit_noise_decay, 0.0, 1.0);
  tr.read("greedy_sample", &c.greedy_sample);
  tr.read("ppo_epochs", &c.ppo_epochs, 1, 100);
  tr.read("ppo_clip", &c.ppo_clip, 0.0, 10.0);
  tr.finish();

  YamlFields ws = top.section("warm_start");
  read_names(ws, "methods", &c.warm_start);
  ws.read("bc_steps", &c.bc_steps, 0, 100000);
  ws.read("bc_lr", &c.bc_lr, 0.0, 10.0);
  ws.finish();

  YamlFields run = top.section("run");
  run.read("seed", &c.seed, 0, INT64_MAX);
  run.read("threads", &c.threads, 1, 256);
  run.read("env_threads", &c.env_threads, 0, 256);
  run.read("checkpoint_every", &c.checkpoint_every, 1, 100000000);
  run.read("output_dir", &c.output_dir);
  run.finish();
  top.finish();

  if (c.name.empty()) top.fail("name", "must not be empty");
  if (c.policy != "seq2seq" && c.policy != "hierarchical" && c.policy != "gnn")
    top.fail("policy.type", unknown_name("policy", c.policy, {"seq2seq", "hierarchical", "gnn"}));
  if (c.decoder != "lstm" && c.decoder != "pointwise")
    top.fail("policy.decoder", unknown_name("decoder", c.decoder, {"lstm", "pointwise"}));
  if (c.reward_mode != "simulated" && c.reward_mode != "measured" && c.reward_mode != "hybrid")
    top.fail("reward.mode", unknown_name("mode", c.reward_mode, {"simulated", "measured", "hybrid"}));
  if (c.algorithm != "reinforce" && c.algorithm != "ppo")
    top.fail("train.algorithm", unknown_name("algorithm", c.algorithm, {"reinforce", "ppo"}));
  if (c.hidden % 2 != 0) top.fail("policy.hidden", "must be even, got " + std::to_string(c.hidden));
  if (c.policy == "gnn" && !c.family.empty()) {
    if (c.graph.builder.empty() && c.graph.file.empty()) c.graph = c.family.front();
  } else if (c.graph.builder.empty() && c.graph.file.empty()) {
    top.fail("graph", "missing (a builder with options, or a file)");
  }
  if (c.cluster.empty()) top.fail("cluster", "missing (a preset, a cluster file or a device list)");
  if (c.output_dir.empty()) c.output_dir = "runs/" + c.name;
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
  if (!g.file.empty()) return "{\"file\": " + json_quote(g.file) + "}";
  std::string o = "{\"builder\": " + json_quote(g.builder) +
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
  o << "  \"policy\": {\"type\": " << json_quote(c.policy) << ", \"hidden\": " << c.hidden
    << ", \"type_embedding\": " << c.type_embedding << ", \"max_groups\": " << c.max_groups
    << ", \"grouper_groups\": " << c.grouper_groups << ", \"gnn_layers\": " << c.gnn_layers
    << ", \"place_samples\": " << c.place_samples << ", \"decoder\": " << json_quote(c.decoder) << "},\n";
  o << "  \"reward\": {\"mode\": " << json_quote(c.reward_mode) << ", \"exponent\": " << json_number(c.reward_exponent)
    << ", \"failure_penalty_s\": " << json_number(c.failure_penalty_s) << ", \"measure_warmup\": " << c.measure_warmup
    << ", \"measure_steps\": " << c.measure_steps << ", \"hybrid_measure_top\": " << c.hybrid_measure_top
    << ", \"profile\": " << json_quote(c.profile) << "},\n";
  o << "  \"train\": {\"algorithm\": " << json_quote(c.algorithm) << ", \"updates\": " << c.updates
    << ", \"samples_per_update\": " << c.samples_per_update << ", \"max_samples\": " << c.max_samples
    << ", \"time_limit_s\": " << json_number(c.time_limit_s) << ", \"lr\": " << json_number(c.lr)
    << ", \"lr_decay\": " << json_number(c.lr_decay) << ", \"lr_decay_every\": " << c.lr_decay_every
    << ", \"entropy_weight\": " << json_number(c.entropy_weight)
    << ", \"baseline_decay\": " << json_number(c.baseline_decay) << ", \"grad_clip\": " << json_number(c.grad_clip)
    << ", \"temperature\": " << json_number(c.temperature) << ", \"logit_noise\": " << json_number(c.logit_noise)
    << ", \"logit_noise_decay\": " << json_number(c.logit_noise_decay)
    << ", \"greedy_sample\": " << (c.greedy_sample ? "true" : "false") << ", \"ppo_epochs\": " << c.ppo_epochs
    << ", \"ppo_clip\": " << json_number(c.ppo_clip) << "},\n";
  o << "  \"warm_start\": {\"methods\": " << list(c.warm_start) << ", \"bc_steps\": " << c.bc_steps
    << ", \"bc_lr\": " << json_number(c.bc_lr) << "},\n";
  o << "  \"run\": {\"seed\": " << c.seed << ", \"threads\": " << c.threads << ", \"env_threads\": " << c.env_threads
    << ", \"checkpoint_every\": " << c.checkpoint_every << ", \"output_dir\": " << json_quote(c.output_dir) << "}\n}\n";
  return o.str();
}

}  // namespace placer
