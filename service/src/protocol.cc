// Request parsing with rapidjson (the JSON engine cereal uses), checking every
// field's presence, type and range before anything is built.
#include "placer/service/protocol.h"

// cereal first: it configures rapidjson (assertions throw) the same way in every file.
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cereal/archives/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "placer/graphs/fields.h"
#include "placer/graphs/json_reader.h"
#include "raw_json.h"
#include "request_text.h"

namespace placer::service {
namespace {

using Value = rapidjson::Value;

const char* kTypeNames[kRequestTypes] = {"health",   "policies", "baselines", "place", "evaluate",
                                         "optimize", "status",   "result",    "cancel"};

[[noreturn]] void bad(const std::string& field, const std::string& message) {
  throw RequestError(codes::kBadRequest, field, message);
}

// How an error shows a value: "\"text\"" (cut at 40 characters), 7, true, "an array", ...
std::string describe(const Value& v) { return JsonNode(&v).describe(); }

std::string to_text(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Request errors: kTooLarge for values over a limit, kBadRequest otherwise.
FieldFail request_fail() {
  return [](const std::string& path, const std::string& problem, FieldProblem kind) {
    throw RequestError(kind == FieldProblem::TooLarge ? codes::kTooLarge : codes::kBadRequest, path, problem);
  };
}

// One object of a request, read with FieldReader (graphs/fields.h). Unknown
// keys are not errors here: clients may send fields of newer versions.
class Fields {
 public:
  Fields(const Value& object, std::string prefix, const ProtocolLimits& limits)
      : reader_(JsonNode(&object), std::move(prefix), request_fail()), limits_(limits) {}

  std::string path(const char* name) const { return reader_.path(name); }
  const Value* find(const char* name) const { return reader_.get(name).value(); }
  const Value& need(const char* name) const { return *reader_.need(name).value(); }
  std::string string(const char* name, bool required, const std::string& fallback = "") const {
    const JsonNode v = required ? reader_.need(name) : reader_.get(name);
    if (!v.present()) return fallback;
    std::string s = reader_.string(v, path(name));
    if (s.size() > static_cast<size_t>(limits_.max_string))
      throw RequestError(codes::kTooLarge, path(name),
                         "longer than " + std::to_string(limits_.max_string) + " characters");
    return s;
  }
  int64_t integer(const char* name, bool required, int64_t fallback, int64_t lo, int64_t hi) const {
    const JsonNode v = required ? reader_.need(name) : reader_.get(name);
    if (!v.present()) return fallback;
    return checked_integer(*v.value(), path(name), lo, hi);
  }
  // A seed: any 64-bit unsigned integer (as the CLI's --seed), 0 when not given.
  uint64_t seed(const char* name) const {
    const JsonNode v = reader_.get(name);
    if (!v.present()) return 0;
    if (v.value()->IsUint64()) return v.value()->GetUint64();  // past 2^63-1 too
    // Else: negative, fractional or past 2^64-1 (a double), said as any integer field says it.
    const double d = v.value()->IsNumber() ? v.value()->GetDouble() : 0.0;
    if (d >= 18446744073709551616.0)
      reader_.fail(path(name), "must be <= 18446744073709551615", FieldProblem::TooLarge);
    if (d >= 9.2e18) return static_cast<uint64_t>(d);  // an integral double in range (1.8e19)
    return static_cast<uint64_t>(checked_integer(*v.value(), path(name), 0, INT64_MAX));
  }
  double number(const char* name, double fallback, double lo, double hi) const {
    const JsonNode v = reader_.get(name);
    return v.present() ? reader_.number(v, path(name), lo, hi) : fallback;
  }
  bool boolean(const char* name, bool fallback) const {
    const JsonNode v = reader_.get(name);
    return v.present() ? reader_.boolean(v, path(name)) : fallback;
  }
  // For an object whose every key is this server's (no newer client adds one): refuses the keys not read.
  void finish() const { reader_.finish(); }

  // An integer, also written as an integral number (1e3).
  static int64_t checked_integer(const Value& v, const std::string& path, int64_t lo, int64_t hi) {
    const FieldReader<JsonNode> checks(JsonNode(), "", request_fail());
    if (!v.IsNumber()) checks.fail(path, "expected an integer, got " + describe(v));
    if (v.IsUint64() && !v.IsInt64()) checks.fail(path, "must be <= " + std::to_string(hi), FieldProblem::TooLarge);
    int64_t i = 0;
    if (v.IsInt64()) {
      i = v.GetInt64();
    } else {
      const double d = v.GetDouble();
      if (d != std::floor(d) || !std::isfinite(d)) checks.fail(path, "expected an integer, got " + json_number(d));
      if (d >= 9.2e18) checks.fail(path, "must be <= " + std::to_string(hi), FieldProblem::TooLarge);
      if (d <= -9.2e18) checks.fail(path, "must be >= " + std::to_string(lo));
      i = static_cast<int64_t>(d);
    }
    checks.check_range(i, path, lo, hi);
    return i;
  }

 private:
  mutable FieldReader<JsonNode> reader_;
  const ProtocolLimits& limits_;
};

// RFC 4648 base64 (padding optional; no whitespace). Throws naming `field`
// and the first bad character.
std::string decode_base64(std::string_view text, const std::string& field) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) bad(field, "not base64: its length is impossible");
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int v = value(text[i]);
    if (v < 0) bad(field, "not base64: character " + std::to_string(i) + " is not in the base64 alphabet");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Builder options that multiply the number of operators.
bool is_structural_option(const std::string& key) {
  static const std::set<std::string> kKeys = {"layers", "blocks", "depth",   "steps", "seq",     "seq_len",   "length",
                                              "heads",  "stages", "repeats", "cells", "modules", "num_layers"};
  return kKeys.count(key) > 0;
}

// graph.pt2: a torch.export archive in base64, with optional input shapes.
void parse_pt2_graph(const Fields& f, GraphSpec& spec) {
  const Value& b = *f.find("pt2");
  if (!b.IsString()) bad("graph.pt2", std::string("expected the base64 text of a .pt2 archive, got ") + describe(b));
  spec.pt2 = decode_base64(std::string_view(b.GetString(), b.GetStringLength()), "graph.pt2");
  if (spec.pt2.empty()) bad("graph.pt2", "empty archive");
  spec.forward_only = f.boolean("forward_only", false);
  const Value* in = f.find("inputs");
  if (!in) return;
  if (!in->IsArray())
    bad("graph.inputs", std::string("expected an array of \"NAME:SHAPE:DTYPE\" strings, got ") + describe(*in));
  if (in->Size() > 64) throw RequestError(codes::kTooLarge, "graph.inputs", "more than 64 inputs");
  for (unsigned i = 0; i < in->Size(); ++i) {
    const Value& e = (*in)[i];
    const std::string path = "graph.inputs[" + std::to_string(i) + "]";
    if (!e.IsString() || e.GetStringLength() == 0 || e.GetStringLength() > 256)
      bad(path, "expected a NAME:SHAPE:DTYPE string");
    spec.inputs.emplace_back(e.GetString(), e.GetStringLength());
  }
}

// graph.inline: kept as the client's bytes. raw_inline: those bytes when the
// request was parsed with that object replaced by {} (then it is parsed once,
// on a cache miss); otherwise they are found in the raw text.
void parse_inline_graph(const Fields& f, GraphSpec& spec, std::string_view raw, std::string_view raw_inline) {
  const Value& g = *f.find("inline");
  if (!g.IsObject()) bad("graph.inline", std::string("expected a graph object, got ") + describe(g));
  std::string_view span;
  if (!raw_inline.empty())
    spec.inline_json = std::string(raw_inline);
  else if (RawScanner(raw).find({"graph", "inline"}, &span) && !span.empty() && span.front() == '{')
    spec.inline_json = std::string(span);
  else
    spec.inline_json = to_text(g);
}

// graph.options: integers. The builder checks each option's own range; here
// only what could make the server build an enormous graph before it can count the ops.
void parse_builder_options(const Value& o, GraphSpec& spec, const ProtocolLimits& limits) {
  if (!o.IsObject()) bad("graph.options", std::string("expected an object of integers, got ") + describe(o));
  if (o.MemberCount() > 64) throw RequestError(codes::kTooLarge, "graph.options", "more than 64 options");
  int64_t structure = 1;
  std::string structural;
  for (auto it = o.MemberBegin(); it != o.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    if (key.size() > 64) throw RequestError(codes::kTooLarge, "graph.options", "option name longer than 64 characters");
    int64_t hi = is_structural_option(key) ? limits.max_builder_structure : limits.max_builder_option;
    int64_t value = Fields::checked_integer(it->value, "graph.options." + key, 0, hi);
    spec.options[key] = value;
    if (!is_structural_option(key)) continue;
    structure *= std::max<int64_t>(1, value);
    structural += (structural.empty() ? "" : " x ") + key;
    if (structure > limits.max_builder_structure)
      throw RequestError(codes::kTooLarge, "graph.options",
                         structural + " = " + std::to_string(structure) + " exceeds the limit " +
                             std::to_string(limits.max_builder_structure) + " on the graph's repeated structure");
  }
}

void parse_graph(const Value& v, GraphSpec& spec, const ProtocolLimits& limits, std::string_view raw,
                 std::string_view raw_inline) {
  if (!v.IsObject())
    bad("graph", std::string("expected an object with \"builder\", \"inline\" or \"pt2\", got ") + describe(v));
  Fields f(v, "graph", limits);
  const bool has_builder = f.find("builder"), has_inline = f.find("inline"), has_pt2 = f.find("pt2");
  if (has_builder + has_inline + has_pt2 != 1) bad("graph", "give exactly one of \"builder\", \"inline\" and \"pt2\"");
  if (has_pt2) return parse_pt2_graph(f, spec);
  if (has_inline) return parse_inline_graph(f, spec, raw, raw_inline);
  spec.builder = f.string("builder", true);
  if (spec.builder.empty()) bad("graph.builder", "empty name");
  spec.forward_only = f.boolean("forward_only", false);
  if (const Value* o = f.find("options")) parse_builder_options(*o, spec, limits);
}

void parse_cluster(const Fields& f, ClusterSpec& spec, const ProtocolLimits& limits) {
  const Value* c = f.find("cluster");
  const Value* d = f.find("devices");
  if (!c && !d)
    bad("cluster", "missing: give \"cluster\" (a preset name or cluster object) or \"devices\" (\"cpu:2\")");
  if (c && d) bad("cluster", "give only one of \"cluster\" and \"devices\"");
  if (d) {
    spec.devices = f.string("devices", true);
    if (spec.devices.empty()) bad("devices", "empty device list");
    return;
  }
  if (c->IsString()) {
    spec.preset = f.string("cluster", true);
    if (spec.preset.empty()) bad("cluster", "empty preset name");
    return;
  }
  if (!c->IsObject()) bad("cluster", std::string("expected a preset name or a cluster object, got ") + describe(*c));
  spec.inline_json = to_text(*c);
}

std::vector<std::string> parse_methods(const Fields& f, const ProtocolLimits& limits) {
  std::vector<std::string> out;
  const Value* m = f.find("methods");
  if (!m) return out;
  if (!m->IsArray()) bad("methods", std::string("expected an array of placer names, got ") + describe(*m));
  if (m->Size() > static_cast<unsigned>(limits.max_methods))
    throw RequestError(codes::kTooLarge, "methods", "more than " + std::to_string(limits.max_methods) + " names");
  for (unsigned i = 0; i < m->Size(); ++i) {
    const Value& s = (*m)[i];
    std::string path = "methods[" + std::to_string(i) + "]";
    if (!s.IsString()) bad(path, std::string("expected a string, got ") + describe(s));
    if (s.GetStringLength() == 0 || s.GetStringLength() > 64) bad(path, "bad placer name length");
    out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

}  // namespace

const char* request_type_name(RequestType type) { return kTypeNames[static_cast<int>(type)]; }

std::string GraphSpec::cache_key() const {
  if (!inline_json.empty()) return "inline:" + inline_json;
  if (!pt2.empty()) {
    std::string key = "pt2:" + pt2 + (forward_only ? ":fwd" : ":train");
    for (const auto& in : inputs) key += ":" + in;
    return key;
  }
  std::string key = "builder:" + builder + (forward_only ? ":fwd" : ":train");
  for (const auto& [k, v] : options) key += ":" + k + "=" + std::to_string(v);
  return key;
}

std::string ClusterSpec::cache_key() const {
  if (!preset.empty()) return "preset:" + preset;
  if (!devices.empty()) return "devices:" + devices;
  return "inline:" + inline_json;
}

namespace {

// What every request has: id, version, type, deadline, seed, include_placement.
// *type (when given) is set once the type is read, before the fields after it.
Request parse_envelope(const Fields& f, const ProtocolLimits& limits, std::optional<RequestType>* type_seen) {
  Request r;
  if (const Value* id = f.find("id")) {
    const std::optional<RequestId> read = request_id_of(JsonNode(id));
    if (!read) bad("id", "expected a string or an integer up to 18446744073709551615, got " + describe(*id));
    r.id = *read;
    if (!r.id.integer) r.id.text = f.string("id", true);  // its length checked
  }
  const Value& version = f.need("version");
  if (!version.IsInt64()) bad("version", std::string("expected an integer, got ") + describe(version));
  r.version = static_cast<int>(version.GetInt64());
  if (version.GetInt64() != kProtocolVersion)
    throw RequestError(codes::kBadVersion, "version",
                       "protocol version " + std::to_string(version.GetInt64()) +
                           " is not supported; this server speaks " + std::to_string(kProtocolVersion));
  std::string type = f.string("type", true);
  int found = -1;
  for (int i = 0; i < kRequestTypes; ++i)
    if (type == kTypeNames[i]) found = i;
  if (found < 0) throw RequestError(codes::kUnknownType, "type", unknown_name("request type", type, kTypeNames));
  r.type = static_cast<RequestType>(found);
  if (type_seen) *type_seen = r.type;
  r.deadline_ms = f.integer("deadline_ms", false, 0, 1, limits.max_deadline_ms);
  r.seed = f.seed("seed");
  r.include_placement = f.boolean("include_placement", true);
  return r;
}

// status, result, cancel.
void parse_job_ref(const Fields& f, Request& r) {
  r.job_id = f.string("job_id", true);
  if (r.job_id.empty()) bad("job_id", "empty job id");
}

// baselines, place, evaluate, optimize: the graph, the cluster, the methods.
void parse_problem(const Fields& f, Request& r, const ProtocolLimits& limits, std::string_view text,
                   std::string_view raw_inline) {
  parse_graph(f.need("graph"), r.graph, limits, text, raw_inline);
  parse_cluster(f, r.cluster, limits);
  r.methods = parse_methods(f, limits);
  if (f.find("methods") && r.type != RequestType::Baselines && r.type != RequestType::Optimize)
    bad("methods", std::string("only baselines and optimize requests take methods, not ") + request_type_name(r.type));
}

void parse_place(const Fields& f, Request& r, const ProtocolLimits& limits) {
  r.policy = f.string("policy", false);
  r.refine_samples = f.integer("refine_samples", false, 0, 0, limits.max_refine_samples);
}

// evaluate's "measure": true (the protocol's defaults, at most 30 s of
// measured steps), false, or {warmup_steps, measured_steps, max_steps,
// target, budget_s, seed}.
std::optional<MeasureOptions> parse_measure(const Value& v, const ProtocolLimits& limits) {
  MeasureOptions m;
  m.budget_s = 30.0;
  if (v.IsBool()) return v.GetBool() ? std::optional<MeasureOptions>(m) : std::nullopt;
  if (!v.IsObject())
    bad("measure",
        "expected true, false or an object {warmup_steps, measured_steps, max_steps, target, budget_s, "
        "min_time, seed}, got " +
            describe(v));
  Fields mf(v, "measure", limits);
  m.warmup_steps = static_cast<int>(mf.integer("warmup_steps", false, m.warmup_steps, 0, 100));
  m.measured_steps = static_cast<int>(mf.integer("measured_steps", false, m.measured_steps, 1, 1000));
  m.max_steps = static_cast<int>(mf.integer("max_steps", false, std::max(m.max_steps, m.measured_steps), 1, 1000));
  m.target_halfwidth = mf.number("target", m.target_halfwidth, 0.0, 0.5);
  m.budget_s = mf.number("budget_s", m.budget_s, 0.0, limits.max_budget_seconds);
  m.min_time_s = mf.number("min_time", m.min_time_s, 0.0, limits.max_budget_seconds);
  m.seed = mf.seed("seed");
  mf.finish();  // a typo ("max_step") ran the defaults in silence
  return m;
}

void parse_evaluate(const Fields& f, Request& r, const ProtocolLimits& limits) {
  if (const Value* m = f.find("measure")) r.measure = parse_measure(*m, limits);
  const Value& p = f.need("placement");
  if (!p.IsObject()) bad("placement", std::string("expected an object {\"device\": {op: device}}, got ") + describe(p));
  Fields pf(p, "placement", limits);
  const Value& dev = pf.need("device");
  if (!dev.IsObject())
    bad("placement.device", std::string("expected an object mapping op names to device names, got ") + describe(dev));
  for (auto it = dev.MemberBegin(); it != dev.MemberEnd(); ++it) {
    std::string op(it->name.GetString(), it->name.GetStringLength());
    if (!it->value.IsString())
      bad("placement.device." + op, std::string("expected a device name, got ") + describe(it->value));
    r.placement.emplace(op, std::string(it->value.GetString(), it->value.GetStringLength()));  // each op once
  }
}

// optimize's "learned": a policy type, or a train-config object (read by the
// job, from this very node).
void parse_learned(const Fields& f, Request& r, const std::shared_ptr<rapidjson::Document>& doc) {
  const Value* l = f.find("learned");
  if (!l) {
    if (!r.reward_mode.empty() && r.reward_mode != "simulated")
      bad("reward_mode", "only learned jobs measure; a search job with methods is simulated");
    return;
  }
  if (l->IsString()) {
    std::string type(l->GetString(), l->GetStringLength());
    if (type != "seq2seq" && type != "hierarchical" && type != "gnn")
      bad("learned", "'" + type + "': expected a policy type (seq2seq, hierarchical, gnn) or a train-config object");
    r.learned_policy = type;
  } else if (l->IsObject()) {
    r.learned = JsonNode(l);
    r.document = doc;
  } else {
    bad("learned", std::string("expected a policy type or a train-config object, got ") + describe(*l));
  }
  if (!r.methods.empty()) bad("methods", "give either methods (a search job) or learned (a learned job), not both");
}

void parse_save_as(const Fields& f, Request& r) {
  r.save_as = f.string("save_as", false);
  if (r.save_as.empty()) return;
  if (!r.is_learned()) bad("save_as", "only a learned job's result can be kept as a policy");
  const auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  };
  if (r.save_as.size() > 64 || !std::all_of(r.save_as.begin(), r.save_as.end(), allowed) || r.save_as.front() == '.')
    bad("save_as",
        "'" + r.save_as + "': a policy name is 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'");
}

void parse_optimize(const Fields& f, Request& r, const ProtocolLimits& limits,
                    const std::shared_ptr<rapidjson::Document>& doc) {
  const Value& b = f.need("budget");
  if (!b.IsObject())
    bad("budget", std::string("expected an object {\"samples\": N, \"seconds\": S}, got ") + describe(b));
  Fields bf(b, "budget", limits);
  r.budget.samples = bf.integer("samples", false, 0, 0, limits.max_budget_samples);
  r.budget.seconds = bf.number("seconds", 0.0, 0.0, limits.max_budget_seconds);
  if (r.budget.samples == 0 && r.budget.seconds == 0.0) bad("budget", "give samples > 0 or seconds > 0");
  r.reward_mode = f.string("reward_mode", false, "");
  if (!r.reward_mode.empty() && r.reward_mode != "simulated" && r.reward_mode != "measured" &&
      r.reward_mode != "hybrid")
    bad("reward_mode", "'" + r.reward_mode + "': expected simulated, measured or hybrid");
  parse_learned(f, r, doc);
  parse_save_as(f, r);
}

// objective, microbatches, schedule as a request, or a learned config's
// reward section, gives them (nullopt: left out).
struct ObjectiveFields {
  std::optional<Objective> objective;
  std::optional<int64_t> microbatches;
  std::optional<PipelineSchedule> schedule;
};

ObjectiveFields read_objective_fields(const Fields& f, const ProtocolLimits& limits) {
  ObjectiveFields out;
  if (f.find("objective")) {
    const std::string name = f.string("objective", true);
    out.objective = parse_objective(name);
    if (!out.objective) bad(f.path("objective"), unknown_name("objective", name, {"step", "pipeline"}));
  }
  if (f.find("microbatches")) out.microbatches = f.integer("microbatches", true, 0, 1, limits.max_microbatches);
  if (f.find("schedule")) {
    const std::string name = f.string("schedule", true);
    out.schedule = parse_schedule(name);
    if (!out.schedule) bad(f.path("schedule"), unknown_name("schedule", name, {"gpipe", "1f1b"}));
  }
  return out;
}

// The request's objective: its own fields, else what a learned config's
// reward section says, else the defaults. Where both give one, they must agree.
void read_objective(const Fields& f, Request& r, const ProtocolLimits& limits) {
  const ObjectiveFields top = read_objective_fields(f, limits);
  ObjectiveFields learned;
  const JsonNode reward = r.learned.member("reward");
  if (reward.is_map()) learned = read_objective_fields(Fields(*reward.value(), "learned.reward", limits), limits);
  const auto disagree = [](const char* key, const std::string& theirs, const std::string& ours) {
    bad(std::string("learned.reward.") + key,
        theirs + " disagrees with the request's " + key + " " + ours + ": give it in one place, or the same in both");
  };
  if (top.objective && learned.objective && *top.objective != *learned.objective)
    disagree("objective", objective_name(*learned.objective), objective_name(*top.objective));
  if (top.microbatches && learned.microbatches && *top.microbatches != *learned.microbatches)
    disagree("microbatches", std::to_string(*learned.microbatches), std::to_string(*top.microbatches));
  if (top.schedule && learned.schedule && *top.schedule != *learned.schedule)
    disagree("schedule", schedule_name(*learned.schedule), schedule_name(*top.schedule));
  const PipelineSpec defaults;
  r.objective = top.objective.value_or(learned.objective.value_or(Objective::Step));
  r.pipeline.microbatches =
      static_cast<int>(top.microbatches.value_or(learned.microbatches.value_or(defaults.microbatches)));
  r.pipeline.schedule = top.schedule.value_or(learned.schedule.value_or(defaults.schedule));
  if (r.objective == Objective::Pipeline) return;
  if (top.microbatches) bad("microbatches", "only with \"objective\": \"pipeline\"");
  if (top.schedule) bad("schedule", "only with \"objective\": \"pipeline\"");
}

// The requests that time placements (and so take an objective).
bool judges_placements(RequestType type) {
  return type == RequestType::Baselines || type == RequestType::Place || type == RequestType::Evaluate ||
         type == RequestType::Optimize;
}

}  // namespace

std::string Request::objective_key() const {
  if (objective == Objective::Step) return objective_name(objective);
  return std::string(objective_name(objective)) + ":" + std::to_string(pipeline.microbatches) + ":" +
         schedule_name(pipeline.schedule);
}

Request parse_request(std::string_view text, const ProtocolLimits& limits) {
  return parse_request(text, limits, nullptr);
}

Request parse_request(std::string_view text, const ProtocolLimits& limits, std::optional<RequestType>* type) {
  check_size(text, limits);
  const Stripped stripped = strip_inline_graph(text);
  const std::shared_ptr<rapidjson::Document> doc = parse_document(text, stripped);
  const Fields f(*doc, "", limits);
  Request r = parse_envelope(f, limits, type);
  refuse_repeated_keys(*doc);  // after the envelope: the error reply can say the type
  switch (r.type) {
    case RequestType::Health:
    case RequestType::Policies: break;
    case RequestType::Status:
    case RequestType::Result:
    case RequestType::Cancel: parse_job_ref(f, r); break;
    case RequestType::Baselines: parse_problem(f, r, limits, text, stripped.inline_graph); break;
    case RequestType::Place:
      parse_problem(f, r, limits, text, stripped.inline_graph);
      parse_place(f, r, limits);
      break;
    case RequestType::Evaluate:
      parse_problem(f, r, limits, text, stripped.inline_graph);
      parse_evaluate(f, r, limits);
      break;
    case RequestType::Optimize:
      parse_problem(f, r, limits, text, stripped.inline_graph);
      parse_optimize(f, r, limits, doc);
      break;
  }
  if (judges_placements(r.type)) read_objective(f, r, limits);
  return r;
}

}  // namespace placer::service
