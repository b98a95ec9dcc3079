// TrainConfig: YAML/JSON parsing with errors that name the file and field,
// and the JSON form stored next to every result.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "placer/agent/train.h"
#include "placer/graphs/builders.h"
#include "placer/graphs/error.h"
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

std::string kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "null";
    default: return "'" + n.Scalar() + "'";
  }
}

// Reads one map, remembering which keys were used so unknown ones are errors.
class Section {
 public:
  Section(const YAML::Node& node, std::string origin, std::string path)
      : node_(node), origin_(std::move(origin)), path_(std::move(path)) {
    if (node_ && !node_.IsNull() && !node_.IsMap())
      fail(path_.empty() ? "(top level)" : path_, "expected a map, got " + kind_name(node_));
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(origin_ + ": " + field + ": " + what);
  }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  YAML::Node get(const std::string& key) {
    used_.insert(key);
    if (!node_ || node_.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& map = node_;  // const access: a missing key reads as undefined
    return map[key];
  }

  void str(const std::string& key, std::string* out) {
    YAML::Node n = get(key);
    if (!n) return;
    if (!n.IsScalar()) fail(field(key), "expected a string, got " + kind_name(n));
    *out = n.Scalar();
  }
  void real(const std::string& key, double* out, double lo, double hi) {
    YAML::Node n = get(key);
    if (!n) return;
    double v;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v))
      fail(field(key), "expected a number, got " + kind_name(n));
    if (v < lo || v > hi) fail(field(key), "must be in [" + num(lo) + ", " + num(hi) + "], got " + num(v));
    *out = v;
  }
  template <typename Int>
  void integer(const std::string& key, Int* out, int64_t lo, int64_t hi) {
    YAML::Node n = get(key);
    if (!n) return;
    int64_t v;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v))
      fail(field(key), "expected an integer, got " + kind_name(n));
    if (v < lo || v > hi)
      fail(field(key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    *out = static_cast<Int>(v);
  }
  void boolean(const std::string& key, bool* out) {
    YAML::Node n = get(key);
    if (!n) return;
    bool v;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
      fail(field(key), "expected true or false, got " + kind_name(n));
    *out = v;
  }
  void strings(const std::string& key, std::vector<std::string>* out) {
    YAML::Node n = get(key);
    if (!n) return;
    if (n.IsScalar()) {  // "a,b,c" is accepted too
      out->clear();
      std::stringstream ss(n.Scalar());
      std::string item;
      while (std::getline(ss, item, ','))
        if (!item.empty()) out->push_back(item);
      return;
    }
    if (n.IsNull()) {
      out->clear();
      return;
    }
    if (!n.IsSequence()) fail(field(key), "expected a list of strings, got " + kind_name(n));
    out->clear();
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar())
        fail(field(key) + "[" + std::to_string(i) + "]", "expected a string, got " + kind_name(n[i]));
      out->push_back(n[i].Scalar());
    }
  }
  void finish() const {
    if (!node_ || !node_.IsMap()) return;
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (!used_.count(key)) {
        std::string known;
        for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
        fail(field(key), "unknown field (known here: " + known + ")");
      }
    }
  }
  const std::string& origin() const { return origin_; }

 private:
  static std::string num(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
  }
  YAML::Node node_;
  std::string origin_, path_;
  std::set<std::string> used_;
};

GraphSource parse_graph_source(const YAML::Node& node, const std::string& origin, const std::string& path) {
  GraphSource g;
  if (node.IsScalar()) {  // "nmt" or "path/to/graph.json"
    const std::string s = node.Scalar();
    if (s.find('/') != std::string::npos || s.find('.') != std::string::npos)
      g.file = s;
    else
      g.builder = s;
    return g;
  }
  Section sec(node, origin, path);
  sec.str("builder", &g.builder);
  sec.str("file", &g.file);
  sec.boolean("forward_only", &g.forward_only);
  YAML::Node opts = sec.get("options");
  if (opts && !opts.IsNull()) {
    if (!opts.IsMap()) sec.fail(sec.field("options"), "expected a map of integers, got " + kind_name(opts));
    for (const auto& kv : opts) {
      int64_t v;
      if (!kv.second.IsScalar() || !YAML::convert<int64_t>::decode(kv.second, v))
        sec.fail(sec.field("options." + kv.first.Scalar()), "expected an integer, got " + kind_name(kv.second));
      g.options[kv.first.Scalar()] = v;
    }
  }
  sec.finish();
  if (g.builder.empty() == g.file.empty()) sec.fail(path, "give exactly one of 'builder' or 'file'");
  return g;
}

std::vector<GraphSource> parse_graph_list(const YAML::Node& node, const std::string& origin, const std::string& path) {
  std::vector<GraphSource> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence())
    throw InputError(origin + ": " + path + ": expected a list of graphs, got " + kind_name(node));
  for (size_t i = 0; i < node.size(); ++i)
    out.push_back(parse_graph_source(node[i], origin, path + "[" + std::to_string(i) + "]"));
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
  Section top(root, origin, "");
  top.str("name", &c.name);
  top.str("cluster", &c.cluster);
  if (YAML::Node g = top.get("graph")) c.graph = parse_graph_source(g, origin, "graph");
  c.family = parse_graph_list(top.get("family"), origin, "family");
  c.held_out = parse_graph_list(top.get("held_out"), origin, "held_out");
  top.strings("compare", &c.compare);

  Section policy(top.get("policy"), origin, "policy");
  policy.str("type", &c.policy);
  policy.integer("hidden", &c.hidden, 2, 4096);
  policy.integer("type_embedding", &c.type_embedding, 1, 1024);
  policy.integer("max_groups", &c.max_groups, 0, 100000);
  policy.integer("grouper_groups", &c.grouper_groups, 0, 4096);
  policy.integer("gnn_layers", &c.gnn_layers, 1, 16);
  policy.integer("place_samples", &c.place_samples, 1, 4096);
  policy.str("decoder", &c.decoder);
  policy.finish();

  Section reward(top.get("reward"), origin, "reward");
  reward.str("mode", &c.reward_mode);
  reward.real("exponent", &c.reward_exponent, 0.01, 4.0);
  reward.real("failure_penalty_s", &c.failure_penalty_s, 0.0, 1e6);
  reward.integer("measure_warmup", &c.measure_warmup, 0, 1000);
  reward.integer("measure_steps", &c.measure_steps, 1, 1000);
  reward.integer("hybrid_measure_top", &c.hybrid_measure_top, 0, 1000);
  reward.str("profile", &c.profile);
  reward.finish();

  Section tr(top.get("train"), origin, "train");
  tr.str("algorithm", &c.algorithm);
  tr.integer("updates", &c.updates, 0, 100000000);
  tr.integer("samples_per_update", &c.samples_per_update, 1, 4096);
  tr.integer("max_samples", &c.max_samples, 0, 1000000000000LL);
  tr.real("time_limit_s", &c.time_limit_s, 0.0, 1e9);
  tr.real("lr", &c.lr, 0.0, 10.0);
  tr.real("lr_decay", &c.lr_decay, 0.0, 1.0);
  tr.integer("lr_decay_every", &c.lr_decay_every, 1, 100000000);
  tr.real("entropy_weight", &c.entropy_weight, 0.0, 100.0);
  tr.real("baseline_decay", &c.baseline_decay, 0.0, 1.0);
  tr.real("grad_clip", &c.grad_clip, 0.0, 1e6);
  tr.real("temperature", &c.temperature, 1e-3, 1e3);
  tr.real("logit_noise", &c.logit_noise, 0.0, 100.0);
  tr.real("logit_noise_decay", &c.logit_noise_decay, 0.0, 1.0);
  tr.boolean("greedy_sample", &c.greedy_sample);
  tr.integer("ppo_epochs", &c.ppo_epochs, 1, 100);
  tr.real("ppo_clip", &c.ppo_clip, 0.0, 10.0);
  tr.finish();

  Section ws(top.get("warm_start"), origin, "warm_start");
  ws.strings("methods", &c.warm_start);
  ws.integer("bc_steps", &c.bc_steps, 0, 100000);
  ws.real("bc_lr", &c.bc_lr, 0.0, 10.0);
  ws.finish();

  Section run(top.get("run"), origin, "run");
  run.integer("seed", &c.seed, 0, INT64_MAX);
  run.integer("threads", &c.threads, 1, 256);
  run.integer("env_threads", &c.env_threads, 0, 256);
  run.integer("checkpoint_every", &c.checkpoint_every, 1, 100000000);
  run.str("output_dir", &c.output_dir);
  run.finish();
  top.finish();

  if (c.name.empty()) top.fail("name", "must not be empty");
  if (c.policy != "seq2seq" && c.policy != "hierarchical" && c.policy != "gnn")
    top.fail("policy.type", "unknown policy '" + c.policy + "' (known: seq2seq, hierarchical, gnn)");
  if (c.decoder != "lstm" && c.decoder != "pointwise")
    top.fail("policy.decoder", "unknown decoder '" + c.decoder + "' (known: lstm, pointwise)");
  if (c.reward_mode != "simulated" && c.reward_mode != "measured" && c.reward_mode != "hybrid")
    top.fail("reward.mode", "unknown mode '" + c.reward_mode + "' (known: simulated, measured, hybrid)");
  if (c.algorithm != "reinforce" && c.algorithm != "ppo")
    top.fail("train.algorithm", "unknown algorithm '" + c.algorithm + "' (known: reinforce, ppo)");
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

std::string q(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      o += '\\', o += ch;
    else if (ch == '\n')
      o += "\\n";
    else if (static_cast<unsigned char>(ch) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", ch);
      o += b;
    } else
      o += ch;
  }
  return o + "\"";
}
std::string d(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
std::string list(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + q(v[i]);
  return o + "]";
}
std::string source(const GraphSource& g) {
  if (!g.file.empty()) return "{\"file\": " + q(g.file) + "}";
  std::string o = "{\"builder\": " + q(g.builder) + ", \"forward_only\": " + (g.forward_only ? "true" : "false") +
                  ", \"options\": {";
  bool first = true;
  for (const auto& [k, v] : g.options) {
    o += (first ? "" : ", ") + q(k) + ": " + std::to_string(v);
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
  o << "{\n  \"name\": " << q(c.name) << ",\n";
  if (!c.graph.builder.empty() || !c.graph.file.empty()) o << "  \"graph\": " << source(c.graph) << ",\n";
  o << "  \"family\": " << sources(c.family) << ",\n  \"held_out\": " << sources(c.held_out) << ",\n";
  o << "  \"cluster\": " << q(c.cluster) << ",\n  \"compare\": " << list(c.compare) << ",\n";
  o << "  \"policy\": {\"type\": " << q(c.policy) << ", \"hidden\": " << c.hidden
    << ", \"type_embedding\": " << c.type_embedding << ", \"max_groups\": " << c.max_groups
    << ", \"grouper_groups\": " << c.grouper_groups << ", \"gnn_layers\": " << c.gnn_layers
    << ", \"place_samples\": " << c.place_samples << ", \"decoder\": " << q(c.decoder) << "},\n";
  o << "  \"reward\": {\"mode\": " << q(c.reward_mode) << ", \"exponent\": " << d(c.reward_exponent)
    << ", \"failure_penalty_s\": " << d(c.failure_penalty_s) << ", \"measure_warmup\": " << c.measure_warmup
    << ", \"measure_steps\": " << c.measure_steps << ", \"hybrid_measure_top\": " << c.hybrid_measure_top
    << ", \"profile\": " << q(c.profile) << "},\n";
  o << "  \"train\": {\"algorithm\": " << q(c.algorithm) << ", \"updates\": " << c.updates
    << ", \"samples_per_update\": " << c.samples_per_update << ", \"max_samples\": " << c.max_samples
    << ", \"time_limit_s\": " << d(c.time_limit_s) << ", \"lr\": " << d(c.lr) << ", \"lr_decay\": " << d(c.lr_decay)
    << ", \"lr_decay_every\": " << c.lr_decay_every << ", \"entropy_weight\": " << d(c.entropy_weight)
    << ", \"baseline_decay\": " << d(c.baseline_decay) << ", \"grad_clip\": " << d(c.grad_clip)
    << ", \"temperature\": " << d(c.temperature) << ", \"logit_noise\": " << d(c.logit_noise)
    << ", \"logit_noise_decay\": " << d(c.logit_noise_decay)
    << ", \"greedy_sample\": " << (c.greedy_sample ? "true" : "false") << ", \"ppo_epochs\": " << c.ppo_epochs
    << ", \"ppo_clip\": " << d(c.ppo_clip) << "},\n";
  o << "  \"warm_start\": {\"methods\": " << list(c.warm_start) << ", \"bc_steps\": " << c.bc_steps
    << ", \"bc_lr\": " << d(c.bc_lr) << "},\n";
  o << "  \"run\": {\"seed\": " << c.seed << ", \"threads\": " << c.threads << ", \"env_threads\": " << c.env_threads
    << ", \"checkpoint_every\": " << c.checkpoint_every << ", \"output_dir\": " << q(c.output_dir) << "}\n}\n";
  return o.str();
}

}  // namespace placer
