// Per-op and per-link costs: roofline from the cluster's constants, or the
// measured times of a Profile.
#include "placer/env/cost_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "op_times.h"
#include "placer/env/simulator.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/exec_plan.h"
#include "placer/graphs/json_writer.h"

namespace placer {
namespace {

bool is_free_op(const Op& op) { return op.type == op_types::kParam || op.type == op_types::kInput; }

// Bytes an op reads and writes: every input tensor once plus every output.
double bytes_touched(const Graph& graph, const Op& op) {
  double bytes = 0.0;
  for (const TensorRef& in : op.inputs) {
    const Op& producer = graph.op(in.op);
    if (in.output >= 0 && in.output < static_cast<int32_t>(producer.outputs.size()))
      bytes += static_cast<double>(producer.outputs[in.output].bytes());
  }
  for (const TensorSpec& out : op.outputs) bytes += static_cast<double>(out.bytes());
  return bytes;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Every pair's link constants, [from * devices + to]: the cluster's link for the pair, else its default
// link; 0 from a device to itself. Each link set directly (Cluster::link for every pair scanned every
// link: O(devices^4)); of a pair given twice the first is kept, as Cluster::link keeps it.
void set_links(const Cluster& cluster, std::vector<double>& alpha_s, std::vector<double>& beta_Bps) {
  const size_t d = static_cast<size_t>(cluster.size());
  alpha_s.assign(d * d, cluster.default_link.latency_s);
  beta_Bps.assign(d * d, cluster.default_link.bandwidth_Bps);
  std::unordered_map<std::string, std::vector<size_t>> index;  // by name, as Cluster::link matches
  for (size_t k = 0; k < d; ++k) index[cluster.devices[k].name].push_back(k);
  std::vector<char> set(d * d, 0);
  for (size_t k = 0; k < d; ++k) set[k * d + k] = 1;
  for (const Link& l : cluster.links) {
    const auto from = index.find(l.from), to = index.find(l.to);
    if (from == index.end() || to == index.end()) continue;
    for (size_t a : from->second)
      for (size_t b : to->second)
        if (!set[a * d + b]) {
          set[a * d + b] = 1;
          alpha_s[a * d + b] = l.latency_s;
          beta_Bps[a * d + b] = l.bandwidth_Bps;
        }
  }
  for (size_t k = 0; k < d; ++k) alpha_s[k * d + k] = beta_Bps[k * d + k] = 0.0;
}

}  // namespace

double roofline_seconds(const Graph& graph, OpId id, const Device& device) {
  const Op& op = graph.op(id);
  if (is_free_op(op)) return 0.0;
  const double compute = device.peak_flops > 0 ? op.flops / device.peak_flops : 0.0;
  const double memory = device.mem_bandwidth > 0 ? bytes_touched(graph, op) / device.mem_bandwidth : 0.0;
  return std::max(compute, memory) + device.op_overhead_s;
}

CostModel CostModel::roofline(const Graph& graph, const Cluster& cluster) {
  CostModel model;
  const int32_t d = cluster.size();
  model.devices_ = d;
  for (const Device& dev : cluster.devices) model.kinds_.push_back(static_cast<int8_t>(dev.kind));
  model.op_s_.assign(static_cast<size_t>(graph.size()) * d, 0.0);
  for (int64_t o = 0; o < graph.size(); ++o)
    for (int32_t k = 0; k < d; ++k)
      model.op_s_[o * d + k] = roofline_seconds(graph, OpId(static_cast<int32_t>(o)), cluster.devices[k]);
  set_links(cluster, model.alpha_s_, model.beta_Bps_);
  return model;
}

namespace {

using detail::describe_graph_mismatch;
using detail::OpTimes;
using detail::timing_kind;

// The ops' side of a calibration: measured times replace the model's roofline ones.
struct OpCalibration {
  const Graph& graph;
  const Cluster& cluster;
  OpTimes& times;
  double overhead;                // the profile's executor overhead per op (>= 0)
  double gpu_overhead;            // the same on a GPU device; < 0: `overhead` applies there too
  double gpu_scale;               // a GPU op's measured time is scaled by this (Profile::gpu_op_scale)
  std::vector<double>& op_s;      // [op * devices + device]
  std::vector<double> contended;  // [op * devices + device], -1 = not measured; empty: none measured
  std::set<std::string> timed_kinds;  // the device kinds the profile timed ops on
};

// One op on one device; true if the profile measured it.
bool calibrate_op(OpCalibration& c, int64_t o, int32_t k) {
  const int32_t d = c.cluster.size();
  const Device& dev = c.cluster.devices[k];
  const std::string kind = device_kind_name(dev.kind);
  const bool free_op = is_free_op(c.graph.op(OpId(static_cast<int32_t>(o))));
  // The profile fits the executor overhead per op that is not free (a param or an input: Profiler::time_ops
  // divides by those), so a free op is charged its own time only, measured or not.
  const double overhead = free_op                                               ? 0.0
                          : dev.kind == DeviceKind::Cuda && c.gpu_overhead >= 0 ? c.gpu_overhead
                                                                                : c.overhead;
  if (const std::vector<double>* samples = c.times.alone(o, dev, kind)) {
    c.op_s[o * d + k] = median(*samples) * (dev.kind == DeviceKind::Cuda ? c.gpu_scale : 1.0) + overhead;
    const std::vector<double>* cont = dev.kind == DeviceKind::Cpu ? c.times.contended(o, kind) : nullptr;
    if (cont) {
      if (c.contended.empty()) c.contended.assign(c.op_s.size(), -1.0);
      c.contended[o * d + k] = median(*cont) + overhead;
    }
    return true;
  }
  if (overhead > 0.0 && c.timed_kinds.count(kind)) {
    // Roofline already holds the device's own op_overhead_s; the measured
    // executor overhead replaces it for a device kind the profile timed
    // (a CPU executor's overhead says nothing of a GPU's launch path).
    c.op_s[o * d + k] = std::max(0.0, c.op_s[o * d + k] - dev.op_overhead_s) + overhead;
  }
  return false;
}

// Every op on every device; returns the fraction of the ops that cost
// something (not inputs or params) measured on at least one device.
double calibrate_ops(OpCalibration& c) {
  int64_t hits = 0, counted = 0;
  for (int64_t o = 0; o < c.graph.size(); ++o) {
    bool any = false;
    for (int32_t k = 0; k < c.cluster.size(); ++k) any = calibrate_op(c, o, k) || any;
    if (!is_free_op(c.graph.op(OpId(static_cast<int32_t>(o))))) {
      ++counted;
      hits += any ? 1 : 0;
    }
  }
  return counted ? static_cast<double>(hits) / static_cast<double>(counted) : 0.0;
}

std::vector<DeviceId> cpu_devices(const Cluster& cluster) {
  std::vector<DeviceId> cpus;
  for (int32_t k = 0; k < cluster.size(); ++k)
    if (cluster.devices[k].kind == DeviceKind::Cpu) cpus.push_back(DeviceId(k));
  return cpus;
}

// Not measured: as alone. Measured below alone (noise): alone.
std::vector<double> contended_times(const std::vector<double>& op_s, const std::vector<double>& measured) {
  std::vector<double> out(op_s.size());
  for (size_t i = 0; i < op_s.size(); ++i) out[i] = measured[i] < 0 ? op_s[i] : std::max(measured[i], op_s[i]);
  return out;
}

// Copies are memory-bound like most ops: they slow down by the typical
// (median) contended / alone ratio of the profiled ops (none: no ratio).
std::optional<double> copy_slowdown(const std::vector<double>& op_s, const std::vector<double>& contended_s,
                                    const std::vector<double>& measured) {
  std::vector<double> ratios;
  for (size_t i = 0; i < op_s.size(); ++i)
    if (measured[i] >= 0 && op_s[i] > 1e-5) ratios.push_back(contended_s[i] / op_s[i]);
  if (ratios.empty()) return std::nullopt;
  return std::max(1.0, median(ratios));
}

// The profile's alpha/beta fits for the links of this cluster.
void apply_link_fits(const Cluster& cluster, const Profile& profile, CostModel& model) {
  for (const LinkFit& fit : profile.links) {
    auto from = cluster.find(fit.from);
    auto to = cluster.find(fit.to);
    if (!from || !to || *from == *to) continue;  // a link of another machine
    if (!(fit.alpha_s >= 0.0) || !(fit.beta_Bps > 0.0) || !std::isfinite(fit.alpha_s) || !std::isfinite(fit.beta_Bps))
      throw InputError("profile: link " + fit.from + "->" + fit.to + " has a bad fit (alpha_s >= 0, beta_Bps > 0)");
    model.set_link(*from, *to, fit.alpha_s, fit.beta_Bps);
  }
}

// The smallest x >= 0 at which step(x) reaches target (the step grows with
// x): the bracket [0, hi] doubled at most 20 times, then bisected to 1e-6 of
// it. nullopt when even the largest bracket stays below the target: what is
// missing there is not the cost being fitted.
std::optional<double> smallest_reaching(const std::function<double(double)>& step, double target, double hi) {
  double lo = 0.0;
  for (int i = 0; i < 20 && step(hi) < target; ++i) {
    lo = hi;
    hi *= 2;
  }
  if (step(hi) < target) return std::nullopt;
  for (int i = 0; i < 20; ++i) {
    const double mid = 0.5 * (lo + hi);
    (step(mid) < target ? lo : hi) = mid;
  }
  return hi;
}

// The copies a placement makes, as the step's plan makes them (plan_step: the
// simulator's and the executor's): between devices of different kinds
// (cross_kind), else between devices of one kind.
int64_t copies_between(const SimContext& context, const Placement& placement, const Cluster& cluster, bool cross_kind) {
  std::vector<int32_t> device(placement.device_of.size());
  for (size_t i = 0; i < device.size(); ++i) device[i] = placement.device_of[i].value;
  StepPlan plan;
  plan_step(context, device.data(), cluster.size(), plan);
  int64_t copies = 0;
  for (int32_t x = 0; x < plan.transfers(); ++x)
    copies += (cluster.devices[device[context.tensor_op[plan.xfer_tensor[x]]]].kind !=
               cluster.devices[plan.xfer_dst[x]].kind) == cross_kind;
  return copies;
}

// Whether the profile timed every op of this graph on `device` (not a graph
// that only shares its name). Ops, not entries: an op timed twice made up for
// another not timed at all.
bool timed_every_op(const Graph& graph, const Profile& profile, const std::string& device) {
  std::vector<char> timed(static_cast<size_t>(graph.size()), 0);
  int64_t count = 0;
  for (const OpTiming& t : profile.ops) {
    if (t.device != device) continue;
    const std::optional<OpId> op = graph.find(t.op);
    if (op && !timed[op->value]) {
      timed[op->value] = 1;
      ++count;
    }
  }
  return count == static_cast<int64_t>(graph.size());
}

// The profile's mixed step (groups dealt round robin over mixed_step_devices)
// fits what a copy between those devices costs inside a step beyond the links'
// fit: the smallest value at which the simulated step reaches the measured one.
// Every CPU device: per byte between CPU devices (group_copy_s_per_byte), or
// per copy (group_copy_s) where `pricing` says so.
// Every CPU device and a GPU: per copy between devices of different kinds
// (cross_copy_s), those copies then made on their destination device; where
// that alone reaches the measurement, at no cost per copy, or on the channel,
// whichever simulates closer to it. (A profile over one CPU device and a GPU,
// taken before the step spanned every CPU device, is not fitted: the copies
// cost a tenth as much with the other devices idle, gpu_crossings.md.)
// Simulated at or above the measurement already, or nothing moved: 0. Only for
// the graph the profile measured, on devices of this cluster.
void fit_mixed_step(const Graph& graph, const Cluster& cluster, const Profile& profile,
                    CostModel::GroupCopyPricing pricing, CostModel& model) {
  if (profile.mixed.step_s <= 0) return;
  std::vector<DeviceId> devices;
  for (const std::string& name : profile.mixed.devices) {
    const std::optional<DeviceId> dev = cluster.find(name);
    if (!dev) return;  // measured on another machine
    devices.push_back(*dev);
  }
  if (devices.size() < 2) return;
  if (!timed_every_op(graph, profile, profile.mixed.devices[0])) return;
  const bool cpus = std::all_of(devices.begin(), devices.end(), [&](DeviceId d) {
    return cluster.devices[d.value].kind == DeviceKind::Cpu && model.contention_group(d) >= 0;
  });
  auto is_cpu = [&](DeviceId d) { return cluster.devices[d.value].kind == DeviceKind::Cpu; };
  const auto cpu_devices = std::count_if(devices.begin(), devices.end(), is_cpu);
  int64_t cluster_cpus = 0;
  for (const Device& d : cluster.devices) cluster_cpus += d.kind == DeviceKind::Cpu;
  const bool cpu_gpu = !cpus && cpu_devices == cluster_cpus && cpu_devices < static_cast<int64_t>(devices.size());
  if (!cpus && !cpu_gpu) return;
  const Placement placement = round_robin_groups(graph, devices);
  const SimContext context(graph);
  SimOptions options;
  options.track_memory = false;
  const bool per_copy = cpus && pricing == CostModel::GroupCopyPricing::PerCopy;
  auto set = [&](double cost) {
    if (per_copy)
      model.set_group_copy_s(cost);
    else if (cpus)
      model.set_group_copy_s_per_byte(cost);
    else
      model.set_cross_copy_s(cost);
  };
  auto step = [&](double cost) {
    set(cost);
    return simulate(context, placement, cluster, model, options).step_s;
  };
  set(0.0);
  const StepResult base = simulate(context, placement, cluster, model, options);
  const double target = profile.mixed.step_s;
  // What is fitted is counted in bytes (or copies) between CPU devices, in copies between kinds.
  const int64_t units = per_copy ? copies_between(context, placement, cluster, false)
                        : cpus   ? base.transfer_bytes
                                 : copies_between(context, placement, cluster, true);
  if (base.step_s >= target || units <= 0) return;  // left at 0
  double from = base.step_s;
  if (cpu_gpu) {
    model.set_cross_copies_on_destination(true);
    from = simulate(context, placement, cluster, model, options).step_s;
    if (from >= target) {  // made on the destination, the copies alone reach the step
      model.set_cross_copies_on_destination(from - target < target - base.step_s);
      return;
    }
  }
  const std::optional<double> cost = smallest_reaching(step, target, (target - from) / static_cast<double>(units));
  set(cost.value_or(0.0));
  if (!cost) model.set_cross_copies_on_destination(false);  // no fit: what is missing is not the copies
}

// The profile's CPU device steps (Profile::cpu_steps): each CPU device's op
// times scaled so that the placement of every op on it simulates at its step
// alone. The ops are timed one at a time on one device (timed_on), and their
// sum there falls short of that device's whole step (by 0-24% on cpu:2,
// fidelity_s36/), so each device is scaled by its step over the simulated
// single-device step on timed_on. Left unanchored (the other devices scaled by
// their step over timed_on's, timed_on as timed) where the profile timed only
// some of the graph's ops. Before, the mixed step's copy cost was fitted
// against the absolute step and took up that shortfall as well. Only for the
// graph the profile measured, on devices of this cluster. Returns the anchor
// (CostModel::cpu_step_anchor), 1 where none.
double apply_cpu_steps(const Graph& graph, const Cluster& cluster, const Profile& profile, CostModel& model,
                       std::vector<double>* scales) {
  if (profile.cpu_steps.size() < 2) return 1.0;
  std::string timed_on;
  for (const OpTiming& t : profile.ops)
    if (timing_kind(t) == "cpu" && graph.find(t.op)) {
      timed_on = t.device;
      break;
    }
  double base = 0.0;
  for (const DeviceStep& s : profile.cpu_steps) base = s.device == timed_on ? s.step_s : base;
  const std::optional<DeviceId> timed_dev = cluster.find(timed_on);
  if (!(base > 0) || !timed_dev) return 1.0;
  double anchor = 1.0;  // timed_on's step over its simulated single-device step
  if (timed_every_op(graph, profile, timed_on)) {
    SimOptions options;
    options.track_memory = false;
    const double simulated =
        simulate(SimContext(graph), single_device(graph, *timed_dev), cluster, model, options).step_s;
    if (simulated > 0) anchor = base / simulated;
    // Ops timed one by one fall short of a step by up to a quarter on the 2-core VM; a thousandfold is not the
    // same measurement (and would scale the ops out of the simulator's range).
    if (!(anchor >= 1e-3 && anchor <= 1e3))
      throw InputError("profile: cpu_steps: " + timed_on + "'s step of the graph alone (" + format_number(base, 6) +
                       " s) is " + format_number(anchor, 3) + " times its ops as timed (" +
                       format_number(simulated, 6) + " s simulated): the profile's steps and op times disagree");
  }
  std::vector<char> scaled(static_cast<size_t>(cluster.size()), 0);
  for (const DeviceStep& s : profile.cpu_steps) {
    const std::optional<DeviceId> dev = cluster.find(s.device);
    if (dev && cluster.devices[dev->value].kind == DeviceKind::Cpu && !scaled[dev->value]) {
      scales->resize(static_cast<size_t>(cluster.size()), 1.0);
      (*scales)[dev->value] = anchor * s.step_s / base;
      model.scale_device(*dev, (*scales)[dev->value]);
      scaled[dev->value] = 1;
    }
  }
  // A CPU device the profile has no step of takes timed_on's times, at the anchor's level too (it was left
  // as timed: a cpu:4 cluster on a cpu:2 profile had cpu:2 and cpu:3 6% faster than the others).
  for (int32_t d = 0; d < cluster.size(); ++d)
    if (cluster.devices[d].kind == DeviceKind::Cpu && !scaled[d]) {
      scales->resize(static_cast<size_t>(cluster.size()), 1.0);
      (*scales)[d] = anchor;
      model.scale_device(DeviceId(d), anchor);
    }
  return anchor;
}

// The devices a profile was taken on, each once: its device spec's in its order ("cpu:2": cpu:0 and
// cpu:1), else every device it names, sorted (ops are timed on one device of a kind).
std::vector<std::string> profiled_devices(const Profile& profile) {
  std::vector<std::string> listed;
  try {
    for (const Device& d : parse_device_list(profile.devices).devices) listed.push_back(d.name);
    return listed;
  } catch (const InputError&) {
    // not a device list (a cluster file's profile, an older one): what it names
  }
  std::set<std::string> names;
  for (const OpTiming& t : profile.ops) names.insert(t.device);
  for (const LinkFit& l : profile.links) names.insert({l.from, l.to});
  for (const DeviceStep& d : profile.cpu_steps) names.insert(d.device);
  names.insert(profile.mixed.devices.begin(), profile.mixed.devices.end());
  return {names.begin(), names.end()};
}

// The names in `names`, ", "-separated.
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "" when the profile was taken on the cluster's devices; else what differs, both ways: the cluster's
// devices the profile lacks, and the profile's the cluster lacks (a cpu:4 profile on cpu:2 was used silently).
std::string describe_profile_mismatch(const Cluster& cluster, const Profile& profile) {
  const std::vector<std::string> profiled_list = profiled_devices(profile);
  const std::set<std::string> profiled(profiled_list.begin(), profiled_list.end());
  std::vector<std::string> clustered, missing, extra;
  for (const Device& d : cluster.devices) {
    clustered.push_back(d.name);
    if (!profiled.count(d.name)) missing.push_back(d.name);
  }
  for (const std::string& name : profiled_list)
    if (std::find(clustered.begin(), clustered.end(), name) == clustered.end()) extra.push_back(name);
  bool device_list = true;  // the cluster is real devices ("cpu:2"), not a preset's or a file's model
  try {
    parse_device_list(cluster.name);
  } catch (const InputError&) {
    device_list = false;
  }
  if (missing.empty() && extra.empty() && device_list) return "";
  std::string out =
      "taken on " + (profile.devices.empty() ? std::string("unnamed devices") : "'" + profile.devices + "'");
  if (!extra.empty()) out += " (" + name_list(profiled_list) + ")";
  if (!missing.empty()) out += "; " + name_list(missing) + " not in it";
  if (!extra.empty()) out += "; " + name_list(extra) + " not in the cluster (" + name_list(clustered) + ")";
  if (missing.empty() && extra.empty()) out += ", not on cluster '" + cluster.name + "'";
  return out;
}

// What a profile that names no graph leaves unused: its whole-graph steps, which it cannot say are this
// graph's ("" when it names one, or has none).
std::string describe_unused_steps(const Profile& profile) {
  if (!profile.graph.empty()) return "";
  std::string steps;
  if (!profile.cpu_steps.empty()) steps = "cpu_steps";
  if (profile.mixed.step_s > 0) steps += (steps.empty() ? "" : ", ") + std::string("mixed_step");
  return steps;
}

}  // namespace

CostModel CostModel::calibrated(const Graph& graph, const Cluster& cluster, const Profile& profile,
                                GroupCopyPricing pricing) {
  CostModel model = roofline(graph, cluster);
  model.graph_mismatch_ = describe_graph_mismatch(graph, profile);
  if (!profile.graph.empty() && profile.graph != graph.name) model.profile_of_graph_ = profile.graph;
  // Its ops by name, and its whole-graph steps, only where the profile is of this very graph.
  const bool names_match = (profile.graph.empty() || profile.graph == graph.name) && model.graph_mismatch_.empty();
  const bool same_graph = names_match && profile.graph == graph.name;
  OpTimes times(graph, profile, names_match);
  OpCalibration ops{graph,
                    cluster,
                    times,
                    std::max(0.0, profile.per_op_overhead_s),
                    profile.gpu_op_overhead_s,
                    profile.gpu_op_scale,
                    model.op_s_,
                    {},
                    {}};
  for (const OpTiming& t : profile.ops) ops.timed_kinds.insert(timing_kind(t));
  model.calibrated_fraction_ = calibrate_ops(ops);
  model.profile_mismatch_ = describe_profile_mismatch(cluster, profile);
  model.unused_steps_ = describe_unused_steps(profile);
  const std::vector<DeviceId> cpus = cpu_devices(cluster);
  if (!ops.contended.empty() && cpus.size() >= 2) {
    model.contended_s_ = contended_times(model.op_s_, ops.contended);
    model.set_contention_group(cpus);
    if (const std::optional<double> slowdown = copy_slowdown(model.op_s_, model.contended_s_, ops.contended))
      for (DeviceId dev : cpus) model.set_copy_contention(dev, *slowdown);
  }
  if (same_graph) model.cpu_step_anchor_ = apply_cpu_steps(graph, cluster, profile, model, &model.cpu_step_scale_);
  apply_link_fits(cluster, profile, model);
  if (same_graph) fit_mixed_step(graph, cluster, profile, pricing, model);
  return model;
}

CostModel CostModel::calibrated_copies(const Graph& graph, const Graph& measured, const Cluster& cluster,
                                       const Profile& profile, GroupCopyPricing pricing) {
  CostModel model = calibrated(graph, cluster, profile, pricing);
  if (profile.graph != measured.name || !model.graph_mismatch_.empty()) return model;  // not the measured graph's ops
  // The copies' own step fits ran unanchored (their names are not the steps' ops): each device takes the
  // measured graph's scale instead of its own, and the copy costs its mixed step fits.
  const CostModel fit = calibrated(measured, cluster, profile, pricing);
  for (int32_t d = 0; d < cluster.size(); ++d) {
    const auto scale = [d](const std::vector<double>& s) { return d < static_cast<int32_t>(s.size()) ? s[d] : 1.0; };
    const double to = scale(fit.cpu_step_scale_), from = scale(model.cpu_step_scale_);
    if (to != from) model.scale_device(DeviceId(d), to / from);
  }
  model.cpu_step_scale_ = fit.cpu_step_scale_;
  model.cpu_step_anchor_ = fit.cpu_step_anchor_;
  model.group_copy_s_per_byte_ = fit.group_copy_s_per_byte_;
  model.group_copy_s_ = fit.group_copy_s_;
  model.cross_copy_s_ = fit.cross_copy_s_;
  model.cross_on_destination_ = fit.cross_on_destination_;
  return model;
}

std::string CostModel::profile_warning() const {
  std::string out;
  if (!profile_mismatch_.empty())
    out = "the profile was " + profile_mismatch_ +
          ": ops take a profiled device's times of their kind, else the roofline's; profile these devices";
  if (!graph_mismatch_.empty())
    out += (out.empty() ? "" : "; and ") + std::string("the profile is of another graph of this name (") +
           graph_mismatch_ +
           "): ops take the times of profiled ops of the same signature, else the roofline's, and its steps are not "
           "used; profile this graph";
  if (!unused_steps_.empty())
    out += (out.empty() ? "" : "; and ") + std::string("the profile names no graph: its whole-graph steps (") +
           unused_steps_ + ") are not used, not being known to be this graph's; profile this graph";
  return out;
}

double CostModel::transfer_seconds(DeviceId from, DeviceId to, int64_t bytes) const {
  if (from == to) return 0.0;
  const size_t i = static_cast<size_t>(from.value) * devices_ + to.value;
  double t = alpha_s_[i] + (beta_Bps_[i] > 0 ? static_cast<double>(bytes) / beta_Bps_[i] : 0.0);
  if ((group_copy_s_per_byte_ > 0 || group_copy_s_ > 0) && !group_.empty() && group_[from.value] >= 0 &&
      group_[from.value] == group_[to.value])
    t += group_copy_s_per_byte_ * static_cast<double>(bytes) + group_copy_s_;
  if (cross_copy_s_ > 0 && !kinds_.empty() && kinds_[from.value] != kinds_[to.value]) t += cross_copy_s_;
  return t;
}

void CostModel::set_group_copy_s_per_byte(double seconds) {
  PLACER_CHECK(seconds >= 0 && std::isfinite(seconds), "group copy cost ", seconds);
  group_copy_s_per_byte_ = seconds;
}

void CostModel::set_group_copy_s(double seconds) {
  PLACER_CHECK(seconds >= 0 && std::isfinite(seconds), "group copy cost per copy ", seconds);
  group_copy_s_ = seconds;
}

void CostModel::set_op_seconds(OpId op, DeviceId device, double seconds) {
  PLACER_CHECK(op.value >= 0 && op.value < ops() && device.value >= 0 && device.value < devices_, "op ", op.value,
               " device ", device.value);
  op_s_[static_cast<size_t>(op.value) * devices_ + device.value] = seconds;
}

void CostModel::set_contended_seconds(OpId op, DeviceId device, double seconds) {
  PLACER_CHECK(op.value >= 0 && op.value < ops() && device.value >= 0 && device.value < devices_, "op ", op.value,
               " device ", device.value);
  if (contended_s_.empty()) contended_s_ = op_s_;
  contended_s_[static_cast<size_t>(op.value) * devices_ + device.value] = seconds;
}

void CostModel::set_copy_contention(DeviceId device, double factor) {
  PLACER_CHECK(device.value >= 0 && device.value < devices_ && factor >= 1.0, "device ", device.value, " factor ",
               factor);
  if (copy_factor_.empty()) copy_factor_.assign(devices_, 1.0);
  copy_factor_[device.value] = factor;
}

void CostModel::set_contention_group(const std::vector<DeviceId>& devices) {
  if (group_.empty()) group_.assign(devices_, -1);
  if (contended_s_.empty()) contended_s_ = op_s_;
  for (DeviceId dev : devices) {
    PLACER_CHECK(dev.value >= 0 && dev.value < devices_, "device ", dev.value);
    group_[dev.value] = groups_;
  }
  ++groups_;
}

void CostModel::set_link(DeviceId from, DeviceId to, double alpha_s, double beta_Bps) {
  PLACER_CHECK(from.value >= 0 && from.value < devices_ && to.value >= 0 && to.value < devices_, "link ", from.value,
               "->", to.value);
  alpha_s_[static_cast<size_t>(from.value) * devices_ + to.value] = alpha_s;
  beta_Bps_[static_cast<size_t>(from.value) * devices_ + to.value] = beta_Bps;
}

CostModel CostModel::uniform(int64_t ops, int32_t devices, double op_seconds) {
  CostModel model;
  model.devices_ = devices;
  model.op_s_.assign(static_cast<size_t>(ops) * devices, op_seconds);
  model.alpha_s_.assign(static_cast<size_t>(devices) * devices, 0.0);
  model.beta_Bps_.assign(static_cast<size_t>(devices) * devices, 0.0);
  return model;
}

void CostModel::scale_device(DeviceId device, double factor) {
  PLACER_CHECK(device.value >= 0 && device.value < devices_ && factor > 0, "device ", device.value, " factor ", factor);
  for (size_t i = device.value; i < op_s_.size(); i += devices_) op_s_[i] *= factor;
  for (size_t i = device.value; i < contended_s_.size(); i += devices_) contended_s_[i] *= factor;
}

void CostModel::scale_link(DeviceId from, DeviceId to, double factor) {
  PLACER_CHECK(factor > 0, "factor ", factor);
  const size_t i = static_cast<size_t>(from.value) * devices_ + to.value;
  alpha_s_[i] *= factor;
  if (beta_Bps_[i] > 0) beta_Bps_[i] /= factor;
}

void CostModel::scale_cross_links(const Cluster& cluster, double factor) {
  PLACER_CHECK(cluster.size() == devices_, "cluster of ", cluster.size(), " devices, cost model of ", devices_);
  for (const auto& [from, to] : cross_kind_links(cluster)) scale_link(from, to, factor);
}

void CostModel::set_cross_copy_s(double seconds) {
  PLACER_CHECK(seconds >= 0 && std::isfinite(seconds), "cross copy cost ", seconds);
  cross_copy_s_ = seconds;
}

std::vector<std::pair<DeviceId, DeviceId>> cross_kind_links(const Cluster& cluster) {
  std::vector<std::pair<DeviceId, DeviceId>> links;
  for (int32_t a = 0; a < cluster.size(); ++a)
    for (int32_t b = 0; b < cluster.size(); ++b)
      if (cluster.devices[a].kind != cluster.devices[b].kind) links.emplace_back(DeviceId(a), DeviceId(b));
  return links;
}

}  // namespace placer
