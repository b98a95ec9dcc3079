// Clusters, placements, profiles and step results as JSON: written with
// cereal archives, read with JsonReader (json_reader.h).
#include <algorithm>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cmath>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>

#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"
#include "serialize_common.h"

namespace placer {

using namespace detail;

// ---------------------------------------------------------------------------
// Cluster

namespace {
struct JsonDevice {
  const Device* d = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("name", d->name), make_nvp("kind", std::string(device_kind_name(d->kind))),
       make_nvp("physical", d->physical), make_nvp("memory_bytes", d->memory_bytes),
       make_nvp("peak_flops", d->peak_flops), make_nvp("mem_bandwidth", d->mem_bandwidth),
       make_nvp("op_overhead_s", d->op_overhead_s), make_nvp("threads", d->threads));
  }
};
struct JsonLink {
  const Link* l = nullptr;
  bool endpoints = true;
  template <class A>
  void save(A& ar) const {
    if (endpoints) ar(make_nvp("from", l->from), make_nvp("to", l->to));
    ar(make_nvp("latency_s", l->latency_s), make_nvp("bandwidth_Bps", l->bandwidth_Bps));
  }
};

Link parse_link(const JsonReader<PlacementError>& r, const rj::Value& v, const std::string& where, bool endpoints) {
  r.object(v, where, "");
  if (endpoints)
    r.known(v, {"from", "to", "latency_s", "bandwidth_Bps"}, where);
  else
    r.known(v, {"latency_s", "bandwidth_Bps"}, where);
  Link l;
  if (endpoints) {
    l.from = r.string(r.require(v, "from", where), where, "from");
    l.to = r.string(r.require(v, "to", where), where, "to");
  }
  l.latency_s = r.opt_number(v, "latency_s", where, l.latency_s);
  l.bandwidth_Bps = r.opt_number(v, "bandwidth_Bps", where, l.bandwidth_Bps);
  return l;
}
}  // namespace

std::string cluster_to_json(const Cluster& cluster) {
  std::vector<JsonDevice> devices;
  for (const Device& d : cluster.devices) devices.push_back({&d});
  std::vector<JsonLink> links;
  for (const Link& l : cluster.links) links.push_back({&l});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.cluster")), make_nvp("version", kGraphFormatVersion),
       make_nvp("name", cluster.name), make_nvp("source", cluster.source), make_nvp("devices", devices),
       make_nvp("links", links), make_nvp("default_link", JsonLink{&cluster.default_link, false}));
  });
}

Cluster cluster_from_json(const std::string& text) {
  JsonReader<PlacementError> r{"cluster"};
  const rj::Document doc = r.parse(text, "placer.cluster");
  r.known(doc, {"format", "version", "name", "source", "devices", "links", "default_link"}, "");
  Cluster c;
  c.name = r.opt_string(doc, "name", "");
  c.source = r.opt_string(doc, "source", "");
  const rj::Value& devices = r.array(r.require(doc, "devices", ""), "", "devices");
  if (devices.Size() > 4096) r.fail("", "devices", "more than 4096 devices");
  for (rj::SizeType i = 0; i < devices.Size(); ++i) {
    std::string where = detail::concat("devices[", i, "]");
    const rj::Value& v = r.object(devices[i], where, "");
    Device d;
    d.name = r.string(r.require(v, "name", where), where, "name");
    where += " '" + d.name + "'";
    r.known(v, {"name", "kind", "physical", "memory_bytes", "peak_flops", "mem_bandwidth", "op_overhead_s", "threads"},
            where);
    const std::string kind = r.opt_string(v, "kind", where, d.name.rfind("cuda", 0) == 0 ? "cuda" : "cpu");
    if (kind == "cpu")
      d.kind = DeviceKind::Cpu;
    else if (kind == "cuda")
      d.kind = DeviceKind::Cuda;
    else
      r.fail(where, "kind", unknown_name("device kind", kind, {"cpu", "cuda"}));
    d.physical = r.opt_string(v, "physical", where);
    d.memory_bytes = r.integer(r.require(v, "memory_bytes", where), where, "memory_bytes");
    d.peak_flops = r.opt_number(v, "peak_flops", where, d.peak_flops);
    d.mem_bandwidth = r.opt_number(v, "mem_bandwidth", where, d.mem_bandwidth);
    d.op_overhead_s = r.opt_number(v, "op_overhead_s", where, d.op_overhead_s);
    const int64_t threads = r.opt_integer(v, "threads", where, 0);
    if (threads < 0 || threads > 1 << 20)
      r.fail(where, "threads", detail::concat("must be in [0, ", 1 << 20, "], got ", threads));
    d.threads = static_cast<int32_t>(threads);
    c.devices.push_back(std::move(d));
  }
  if (const rj::Value* links = r.member(doc, "links")) {
    r.array(*links, "", "links");
    if (links->Size() > 4096u * 4096u) r.fail("", "links", "too many links");
    for (rj::SizeType i = 0; i < links->Size(); ++i)
      c.links.push_back(parse_link(r, (*links)[i], detail::concat("links[", i, "]"), true));
  }
  if (const rj::Value* dl = r.member(doc, "default_link")) c.default_link = parse_link(r, *dl, "default_link", false);
  validate_cluster(c);
  return c;
}

void save_cluster(const Cluster& cluster, const std::string& path) {
  write_file_atomic(path, cluster_to_json(cluster));
}

Cluster load_cluster(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<PlacementError>(path, [&] { return cluster_from_json(contents); });
}

// ---------------------------------------------------------------------------
// Placement

std::string placement_to_json(const NamedPlacement& placement) {
  JsonStringMap map;
  map.entries.assign(placement.device.begin(), placement.device.end());
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.placement")), make_nvp("version", kGraphFormatVersion),
       make_nvp("graph", placement.graph), make_nvp("placement", map));
  });
}

NamedPlacement placement_from_json(const std::string& text) {
  JsonReader<PlacementError> r{"placement"};
  const rj::Document doc = r.parse(text, "placer.placement");
  r.known(doc, {"format", "version", "graph", "placement"}, "");
  NamedPlacement p;
  p.graph = r.opt_string(doc, "graph", "");
  const rj::Value& map = r.object(r.require(doc, "placement", ""), "", "placement");
  for (auto it = map.MemberBegin(); it != map.MemberEnd(); ++it) {
    std::string op(it->name.GetString(), it->name.GetStringLength());
    const std::string where = "placement: op '" + op + "'";
    if (!it->value.IsString())
      r.fail(where, "expected a device name (a string), got " + JsonReader<PlacementError>::describe(it->value));
    std::string device(it->value.GetString(), it->value.GetStringLength());
    if (!p.device.emplace(op, device).second) r.fail(where, "listed twice");
  }
  return p;
}

void save_placement(const NamedPlacement& placement, const std::string& path) {
  write_file_atomic(path, placement_to_json(placement));
}

NamedPlacement load_placement(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<PlacementError>(path, [&] { return placement_from_json(contents); });
}

// ---------------------------------------------------------------------------
// Profile

namespace {
struct JsonOpTiming {
  const OpTiming* t = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("op", t->op), make_nvp("signature", t->signature), make_nvp("device", t->device),
       make_nvp("device_kind", t->device_kind), make_nvp("seconds", t->seconds));
    if (t->contended_seconds > 0) ar(make_nvp("contended_seconds", t->contended_seconds));
  }
};
struct JsonSample {
  int64_t bytes = 0;
  double seconds = 0.0;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("bytes", bytes), make_nvp("seconds", seconds));
  }
};
struct JsonLinkFit {
  const LinkFit* l = nullptr;
  template <class A>
  void save(A& ar) const {
    std::vector<JsonSample> samples;
    for (const auto& [b, s] : l->samples) samples.push_back({b, s});
    ar(make_nvp("from", l->from), make_nvp("to", l->to), make_nvp("alpha_s", l->alpha_s),
       make_nvp("beta_Bps", l->beta_Bps), make_nvp("samples", samples));
  }
};
struct JsonDeviceStep {
  const DeviceStep* s = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("device", s->device), make_nvp("step_s", s->step_s));
  }
};
struct JsonMixedStep {
  const MixedStep* m = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("devices", m->devices), make_nvp("step_s", m->step_s));
    if (m->core_rtt_s >= 0) ar(make_nvp("core_rtt_s", m->core_rtt_s));
  }
};
}  // namespace

std::string profile_to_json(const Profile& profile) {
  std::vector<JsonOpTiming> ops;
  for (const OpTiming& t : profile.ops) ops.push_back({&t});
  std::vector<JsonLinkFit> links;
  for (const LinkFit& l : profile.links) links.push_back({&l});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.profile")), make_nvp("version", profile.version),
       make_nvp("graph", profile.graph), make_nvp("devices", profile.devices), make_nvp("host", profile.host),
       make_nvp("per_op_overhead_s", profile.per_op_overhead_s));
    if (profile.gpu_op_overhead_s >= 0) ar(make_nvp("gpu_op_overhead_s", profile.gpu_op_overhead_s));
    if (profile.gpu_op_scale != 1.0) ar(make_nvp("gpu_op_scale", profile.gpu_op_scale));
    if (profile.gpu_step_s >= 0) ar(make_nvp("gpu_step_s", profile.gpu_step_s));
    if (profile.mixed.step_s >= 0) ar(make_nvp("mixed_step", JsonMixedStep{&profile.mixed}));
    if (!profile.cpu_steps.empty()) {
      std::vector<JsonDeviceStep> steps;
      for (const DeviceStep& s : profile.cpu_steps) steps.push_back({&s});
      ar(make_nvp("cpu_steps", steps));
    }
    ar(make_nvp("ops", ops), make_nvp("links", links));
  });
}

namespace {

// A profile's times: finite, in [lo, kMaxProfileSeconds]. A step or op time of
// 1e200 s made the simulation spin (time stopped advancing by the sizes of the
// other ops), 1e-200 s a device scale of 0.
constexpr double kMaxProfileSeconds = 1e4;
constexpr double kMinStepSeconds = 1e-9;

void check_seconds(const JsonReader<InputError>& r, double v, double lo, const std::string& where, const char* field,
                   const char* note = "") {
  const std::string problem = range_problem(v, lo, kMaxProfileSeconds, "s");
  if (!problem.empty()) r.fail(where, field, problem + note);
}

// The profile's mixed step, where measured.
void read_mixed_step(const JsonReader<InputError>& r, const rj::Document& doc, Profile& p) {
  if (const rj::Value* mixed = r.member(doc, "mixed_step")) {
    r.object(*mixed, "mixed_step", "");
    r.known(*mixed, {"step_s", "devices", "core_rtt_s"}, "mixed_step");
    p.mixed.step_s = r.number(r.require(*mixed, "step_s", "mixed_step"), "mixed_step", "step_s");
    check_seconds(r, p.mixed.step_s, kMinStepSeconds, "mixed_step", "step_s",
                  " (leave mixed_step out when not measured)");
    const rj::Value& devices = r.array(r.require(*mixed, "devices", "mixed_step"), "mixed_step", "devices");
    for (rj::SizeType i = 0; i < devices.Size(); ++i)
      p.mixed.devices.push_back(r.string(devices[i], detail::concat("mixed_step devices[", i, "]"), "device"));
    if (p.mixed.devices.size() < 2) r.fail("mixed_step", "devices", "needs at least two devices");
    if (mixed->HasMember("core_rtt_s")) {
      p.mixed.core_rtt_s = r.number((*mixed)["core_rtt_s"], "mixed_step", "core_rtt_s");
      if (!(p.mixed.core_rtt_s > 0 && p.mixed.core_rtt_s < 0.1))
        r.fail("mixed_step", "core_rtt_s", "must be a number of seconds in (0, 0.1) (leave it out when not probed)");
    }
    std::unordered_set<std::string> names;
    for (const std::string& d : p.mixed.devices)
      if (!names.insert(d).second) r.fail("mixed_step", "devices", "names '" + d + "' twice");
  }
}

// Each CPU device's step alone, where measured.
void read_cpu_steps(const JsonReader<InputError>& r, const rj::Document& doc, Profile& p) {
  if (const rj::Value* steps = r.member(doc, "cpu_steps")) {
    r.array(*steps, "", "cpu_steps");
    std::unordered_set<std::string> names;
    size_t fastest = 0, slowest = 0;  // indices into p.cpu_steps
    for (rj::SizeType i = 0; i < steps->Size(); ++i) {
      const std::string where = detail::concat("cpu_steps[", i, "]");
      const rj::Value& v = r.object((*steps)[i], where, "");
      r.known(v, {"device", "step_s"}, where);
      DeviceStep s;
      s.device = r.string(r.require(v, "device", where), where, "device");
      s.step_s = r.number(r.require(v, "step_s", where), where, "step_s");
      check_seconds(r, s.step_s, kMinStepSeconds, where, "step_s");
      if (!names.insert(s.device).second) r.fail(where, "device", "names '" + s.device + "' twice");
      // One host's CPU devices: the simulator scales each by its step over the others'. Checked against the
      // fastest and the slowest so far, not every pair (80,000 entries took minutes).
      if (!p.cpu_steps.empty())
        for (const DeviceStep& o : {p.cpu_steps[fastest], p.cpu_steps[slowest]})
          if (s.step_s > 100 * o.step_s || o.step_s > 100 * s.step_s)
            r.fail(where, "step_s",
                   format_number(s.step_s, 6) + " s is over 100 times apart from " + o.device + "'s " +
                       format_number(o.step_s, 6) + " s (the CPU devices of one host)");
      p.cpu_steps.push_back(std::move(s));
      const size_t k = p.cpu_steps.size() - 1;
      if (p.cpu_steps[k].step_s < p.cpu_steps[fastest].step_s) fastest = k;
      if (p.cpu_steps[k].step_s > p.cpu_steps[slowest].step_s) slowest = k;
    }
  }
}

// An op timing's device kind: one of the cluster's kinds (cluster.h), or empty (absent or "": the
// device name's prefix then says it). Free text such as "gpu" matched no device and was ignored.
std::string read_device_kind(const JsonReader<InputError>& r, const rj::Value& v, const std::string& where) {
  const std::string kind = r.opt_string(v, "device_kind", where);
  if (kind.empty()) return kind;
  for (DeviceKind k : {DeviceKind::Cpu, DeviceKind::Cuda})
    if (kind == device_kind_name(k)) return kind;
  r.fail(where, "device_kind",
         unknown_name("device kind", kind, {device_kind_name(DeviceKind::Cpu), device_kind_name(DeviceKind::Cuda)}));
}

// An op's time with every CPU device busy is its own time slowed (0.7x to 4x on the 2-core VM): over a
// thousandfold apart either way it is no such time (1e4 s against 1e-5 s simulated a step of 145816 s). An op
// timed at 0 s is compared as if 1 ns.
void check_contended(const JsonReader<InputError>& r, const OpTiming& t, const std::string& where) {
  constexpr double kMaxRatio = 1000.0, kFloorSeconds = 1e-9;
  if (!(t.contended_seconds > 0)) return;
  const double ratio = t.contended_seconds / std::max(t.seconds, kFloorSeconds);
  if (ratio >= 1.0 / kMaxRatio && ratio <= kMaxRatio) return;
  const std::string op = "op '" + (t.op.empty() ? t.signature : t.op) + "'";
  const std::string c = format_number(t.contended_seconds, 6) + " s";
  if (t.seconds <= 0)
    r.fail(where, "contended_seconds",
           c + " for " + op + ", whose seconds is 0 (over " + format_number(kMaxRatio, 6) +
               " times 1 ns: a time with every CPU device busy is the op's own, slowed)");
  const std::string times = ratio > 1 ? format_number(ratio, 6) + " times" : "1/" + format_number(1 / ratio, 6) + " of";
  r.fail(where, "contended_seconds",
         c + " is " + times + " " + op + "'s seconds (" + format_number(t.seconds, 6) + " s): over " +
             format_number(kMaxRatio, 6) + "x apart (a time with every CPU device busy is the op's own, slowed)");
}

// Every op's time.
void read_op_timings(const JsonReader<InputError>& r, const rj::Document& doc, Profile& p) {
  const rj::Value& ops = r.array(r.require(doc, "ops", ""), "", "ops");
  for (rj::SizeType i = 0; i < ops.Size(); ++i) {
    const std::string where = detail::concat("ops[", i, "]");
    const rj::Value& v = r.object(ops[i], where, "");
    r.known(v, {"op", "signature", "device", "device_kind", "seconds", "contended_seconds"}, where);
    OpTiming t;
    t.op = r.opt_string(v, "op", where);
    t.signature = r.opt_string(v, "signature", where);
    t.device = r.string(r.require(v, "device", where), where, "device");
    t.device_kind = read_device_kind(r, v, where);
    t.seconds = r.number(r.require(v, "seconds", where), where, "seconds");
    if (t.op.empty() && t.signature.empty()) r.fail(where, "needs field 'op' or 'signature'");
    check_seconds(r, t.seconds, 0.0, where, "seconds");
    t.contended_seconds = r.opt_number(v, "contended_seconds", where, 0.0);
    check_seconds(r, t.contended_seconds, 0.0, where, "contended_seconds");
    check_contended(r, t, where);
    p.ops.push_back(std::move(t));
  }
}

// A link fit's samples, where given.
void read_link_samples(const JsonReader<InputError>& r, const rj::Value& v, const std::string& where, LinkFit& l) {
  if (const rj::Value* samples = r.member(v, "samples")) {
    r.array(*samples, where, "samples");
    for (rj::SizeType k = 0; k < samples->Size(); ++k) {
      const std::string sw = detail::concat(where, " samples[", k, "]");
      const rj::Value& s = r.object((*samples)[k], sw, "");
      r.known(s, {"bytes", "seconds"}, sw);
      l.samples.emplace_back(r.integer(r.require(s, "bytes", sw), sw, "bytes"),
                             r.number(r.require(s, "seconds", sw), sw, "seconds"));
      if (l.samples.back().first < 0) r.fail(sw, "bytes", "must be >= 0");
      check_seconds(r, l.samples.back().second, 0.0, sw, "seconds");
    }
  }
}

LinkFit read_link_fit(const JsonReader<InputError>& r, const rj::Value& links, rj::SizeType i) {
  const std::string where = detail::concat("links[", i, "]");
  const rj::Value& v = r.object(links[i], where, "");
  r.known(v, {"from", "to", "alpha_s", "beta_Bps", "samples"}, where);
  LinkFit l;
  l.from = r.string(r.require(v, "from", where), where, "from");
  l.to = r.string(r.require(v, "to", where), where, "to");
  l.alpha_s = r.number(r.require(v, "alpha_s", where), where, "alpha_s");
  l.beta_Bps = r.number(r.require(v, "beta_Bps", where), where, "beta_Bps");
  if (l.from == l.to) r.fail(where, "to", "a link from '" + l.from + "' to itself");
  check_seconds(r, l.alpha_s, 0.0, where, "alpha_s");
  const std::string beta = range_problem(l.beta_Bps, kMinRate, kMaxRate, "bytes/s");
  if (!beta.empty()) r.fail(where, "beta_Bps", beta);
  read_link_samples(r, v, where, l);
  return l;
}

// The links' alpha/beta fits and their samples, one fit per direction (of a fit given twice the
// last was kept, silently).
void read_link_fits(const JsonReader<InputError>& r, const rj::Document& doc, Profile& p) {
  if (const rj::Value* links = r.member(doc, "links")) {
    r.array(*links, "", "links");
    std::map<std::pair<std::string, std::string>, rj::SizeType> seen;
    for (rj::SizeType i = 0; i < links->Size(); ++i) {
      LinkFit l = read_link_fit(r, *links, i);
      const auto [at, fresh] = seen.emplace(std::make_pair(l.from, l.to), i);
      if (!fresh)
        r.fail(detail::concat("links[", i, "]"), detail::concat("the link fit from '", l.from, "' to '", l.to,
                                                                "' is given twice (first at links[", at->second, "])"));
      p.links.push_back(std::move(l));
    }
  }
}

}  // namespace

Profile profile_from_json(const std::string& text) {
  JsonReader<InputError> r{"profile"};
  const rj::Document doc = r.parse(text, "placer.profile");
  r.known(doc,
          {"format", "version", "graph", "devices", "host", "per_op_overhead_s", "gpu_op_overhead_s", "gpu_op_scale",
           "gpu_step_s", "mixed_step", "cpu_steps", "ops", "links"},
          "");
  Profile p;
  p.version = static_cast<int>(r.integer(doc["version"], "", "version"));
  p.graph = r.opt_string(doc, "graph", "");
  p.devices = r.opt_string(doc, "devices", "");
  p.host = r.opt_string(doc, "host", "");
  p.per_op_overhead_s = r.opt_number(doc, "per_op_overhead_s", "", 0.0);
  check_seconds(r, p.per_op_overhead_s, 0.0, "", "per_op_overhead_s");
  if (doc.HasMember("gpu_op_overhead_s")) {
    p.gpu_op_overhead_s = r.opt_number(doc, "gpu_op_overhead_s", "", -1.0);
    check_seconds(r, p.gpu_op_overhead_s, 0.0, "", "gpu_op_overhead_s", " (leave it out when not measured)");
  }
  p.gpu_op_scale = r.opt_number(doc, "gpu_op_scale", "", 1.0);
  if (!(p.gpu_op_scale > 0 && p.gpu_op_scale <= 1))
    r.fail("", "gpu_op_scale", "must be a number in (0, 1] (leave it out for no scale)");
  if (doc.HasMember("gpu_step_s")) {
    p.gpu_step_s = r.opt_number(doc, "gpu_step_s", "", -1.0);
    check_seconds(r, p.gpu_step_s, kMinStepSeconds, "", "gpu_step_s", " (leave it out when not measured)");
  }
  read_mixed_step(r, doc, p);
  read_cpu_steps(r, doc, p);
  read_op_timings(r, doc, p);
  read_link_fits(r, doc, p);
  return p;
}

void save_profile(const Profile& profile, const std::string& path) {
  write_file_atomic(path, profile_to_json(profile));
}

Profile load_profile(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<InputError>(path, [&] { return profile_from_json(contents); });
}

// ---------------------------------------------------------------------------
// StepResult

namespace {
struct JsonDeviceStats {
  const DeviceStats* d = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("device", d->device), make_nvp("busy_s", d->busy_s), make_nvp("peak_bytes", d->peak_bytes));
  }
};
}  // namespace

std::string step_result_to_json(const StepResult& result) {
  std::vector<JsonDeviceStats> devices;
  for (const DeviceStats& d : result.devices) devices.push_back({&d});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.step_result")), make_nvp("version", kGraphFormatVersion),
       make_nvp("status", std::string(step_status_name(result.status))), make_nvp("message", result.message),
       make_nvp("step_s", result.step_s), make_nvp("iqr_s", result.iqr_s), make_nvp("ci_low_s", result.ci_low_s),
       make_nvp("ci_high_s", result.ci_high_s), make_nvp("ci_level", result.ci_level), make_nvp("stop", result.stop),
       make_nvp("steps", static_cast<int64_t>(result.samples_s.size())), make_nvp("samples_s", result.samples_s),
       make_nvp("prior_samples", result.prior_samples), make_nvp("devices", devices),
       make_nvp("transfer_bytes", result.transfer_bytes), make_nvp("oom_device", result.oom_device),
       make_nvp("oom_needed_bytes", result.oom_needed_bytes), make_nvp("oom_capacity_bytes", result.oom_capacity_bytes),
       make_nvp("core_rtt_s", result.core_rtt_s));
  });
}

namespace {

// A step result's times and sizes: finite and >= 0 (NaN, negative and infinite ones scored as rewards and
// summed into reports).
void check_time(const JsonReader<InputError>& r, double v, const std::string& where, const char* field) {
  if (!(std::isfinite(v) && v >= 0))
    r.fail(where, field, "must be a finite number of seconds >= 0, got " + format_number(v, 6));
}
double read_time(const JsonReader<InputError>& r, const rj::Value& obj, const char* key, const std::string& where,
                 double fallback) {
  const double v = r.opt_number(obj, key, where, fallback);
  check_time(r, v, where, key);
  return v;
}
int64_t read_size(const JsonReader<InputError>& r, const rj::Value& obj, const char* key, const std::string& where) {
  const int64_t v = r.opt_integer(obj, key, where, 0);
  if (v < 0) r.fail(where, key, detail::concat("must be >= 0, got ", v));
  return v;
}
std::vector<double> read_times(const JsonReader<InputError>& r, const rj::Document& doc, const char* key) {
  std::vector<double> out;
  if (const rj::Value* v = r.member(doc, key)) out = r.numbers(*v, "", key);
  for (size_t k = 0; k < out.size(); ++k) check_time(r, out[k], "", index_path(key, k).c_str());
  return out;
}

StepStatus read_status(const JsonReader<InputError>& r, const rj::Document& doc) {
  const std::string status = r.string(r.require(doc, "status", ""), "", "status");
  for (StepStatus st : {StepStatus::Ok, StepStatus::Oom, StepStatus::Timeout, StepStatus::Error})
    if (status == step_status_name(st)) return st;
  r.fail("", "status", unknown_name("status", status, {"ok", "oom", "timeout", "error"}));
}

// The step, its spread and interval, and the samples.
void read_step_times(const JsonReader<InputError>& r, const rj::Document& doc, StepResult& s) {
  s.step_s = r.opt_number(doc, "step_s", "", 0.0);
  // An ok result is a step: a missing, 0 or non-finite one scored as the best reward there is.
  if (s.status == StepStatus::Ok && !(std::isfinite(s.step_s) && s.step_s > 0))
    r.fail("", "step_s", "an ok result needs a finite step above 0");
  check_time(r, s.step_s, "", "step_s");
  s.iqr_s = read_time(r, doc, "iqr_s", "", 0.0);
  s.ci_low_s = read_time(r, doc, "ci_low_s", "", s.step_s);
  s.ci_high_s = read_time(r, doc, "ci_high_s", "", s.step_s);
  s.ci_level = r.opt_number(doc, "ci_level", "", 0.0);
  if (!(s.ci_level >= 0 && s.ci_level <= 1))
    r.fail("", "ci_level", "must be a coverage in [0, 1], got " + format_number(s.ci_level, 6));
  s.samples_s = read_times(r, doc, "samples_s");
  s.core_rtt_s = read_times(r, doc, "core_rtt_s");
  s.prior_samples = r.opt_integer(doc, "prior_samples", "", 0);
  if (s.prior_samples < 0 || s.prior_samples > static_cast<int64_t>(s.samples_s.size()))
    r.fail("", "prior_samples",
           detail::concat(s.prior_samples, " is not between 0 and samples_s's ", s.samples_s.size()));
  if (s.core_rtt_s.size() > s.samples_s.size())
    r.fail("", "core_rtt_s",
           detail::concat("has ", s.core_rtt_s.size(), " entries, more than samples_s's ", s.samples_s.size(),
                          " (one per step this measurement took)"));
}

void read_device_stats(const JsonReader<InputError>& r, const rj::Document& doc, StepResult& s) {
  if (const rj::Value* devices = r.member(doc, "devices")) {
    r.array(*devices, "", "devices");
    for (rj::SizeType i = 0; i < devices->Size(); ++i) {
      const std::string where = detail::concat("devices[", i, "]");
      const rj::Value& v = r.object((*devices)[i], where, "");
      r.known(v, {"device", "busy_s", "peak_bytes"}, where);
      DeviceStats d;
      d.device = r.string(r.require(v, "device", where), where, "device");
      d.busy_s = read_time(r, v, "busy_s", where, 0.0);
      d.peak_bytes = read_size(r, v, "peak_bytes", where);
      s.devices.push_back(std::move(d));
    }
  }
}

}  // namespace

StepResult step_result_from_json(const std::string& text) {
  JsonReader<InputError> r{"step result"};
  const rj::Document doc = r.parse(text, "placer.step_result");
  r.known(doc,
          {"format", "version", "status", "message", "step_s", "iqr_s", "ci_low_s", "ci_high_s", "ci_level", "stop",
           "steps", "samples_s", "prior_samples", "devices", "transfer_bytes", "oom_device", "oom_needed_bytes",
           "oom_capacity_bytes", "core_rtt_s"},
          "");
  StepResult s;
  s.status = read_status(r, doc);
  s.message = r.opt_string(doc, "message", "");
  read_step_times(r, doc, s);
  s.stop = r.opt_string(doc, "stop", "");
  read_device_stats(r, doc, s);
  s.transfer_bytes = read_size(r, doc, "transfer_bytes", "");
  s.oom_device = r.opt_string(doc, "oom_device", "");
  s.oom_needed_bytes = read_size(r, doc, "oom_needed_bytes", "");
  s.oom_capacity_bytes = read_size(r, doc, "oom_capacity_bytes", "");
  return s;
}

}  // namespace placer
