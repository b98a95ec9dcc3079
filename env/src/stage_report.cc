// The stages of a pipelined placement (stage_report.h).
#include "placer/env/stage_report.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include "placer/graphs/error.h"

namespace placer {
namespace {

// Per device: its stage (-1: unused), the stages in order, and the ops' sums.
std::vector<ReportedStage> collect_stages(const Graph& g, const Placement& placement, const Cluster& cluster,
                                          const CostModel& costs, bool* contiguous) {
  const int32_t D = cluster.size();
  // A device's stage: the rank of its first stage op (on contiguous stages, the order of the 1F1B gate's
  // bounds, pipeline.h); a
  // device with none (inputs or backward ops only) after those, by its first op that is no param or update.
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  std::vector<std::pair<int32_t, int32_t>> first(D, {kNone, kNone});
  std::vector<ReportedStage> per_device(D);
  int32_t previous = -1;
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    const int32_t d = placement.device_of[v].value;
    ReportedStage& st = per_device[d];
    ++st.ops;
    const double t = costs.op_seconds(OpId(v), DeviceId(d));
    if (op.type != op_types::kParam)  // once per mini-batch, not per micro-batch: in no stage's time
      (op.phase == Phase::Forward ? st.forward_s : op.phase == Phase::Backward ? st.backward_s : st.update_s) += t;
    if (op.type != op_types::kParam && op.phase != Phase::Update) first[d].second = std::min(first[d].second, v);
    if (!is_stage_op(op)) continue;
    first[d].first = std::min(first[d].first, v);
    if (st.forward_ops++ == 0) st.first_op = op.name, st.first_layer = op.layer;
    st.last_op = op.name;
    st.last_layer = op.layer;
    if (d != previous) ++st.runs;
    previous = d;
  }
  std::vector<int32_t> order;
  for (int32_t d = 0; d < D; ++d)
    if (first[d].second != kNone) order.push_back(d);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first[a] < first[b]; });
  const size_t stages = order.size();
  for (int32_t d = 0; d < D; ++d)  // params and update ops only: no stage, but busy and idle as any device used
    if (first[d].second == kNone && per_device[d].ops > 0) order.push_back(d);
  std::vector<ReportedStage> out;
  *contiguous = true;
  for (int32_t d : order) {
    ReportedStage st = per_device[d];
    st.stage = out.size() < stages ? static_cast<int32_t>(out.size()) : -1;
    st.device = cluster.devices[d].name;
    *contiguous = *contiguous && st.runs <= 1;
    out.push_back(std::move(st));
  }
  return out;
}

// The estimate without a timeline (stage_report.h): stage s's last backward op ends
// sum + (M - 1) slowest - sum_{t<s} b_t in, then its updates run.
void estimate_bubble(StageReport* r) {
  const int32_t M = r->spec.microbatches;
  double sum = 0.0, slowest = 0.0;
  for (const ReportedStage& s : r->stages) {
    sum += s.forward_s + s.backward_s;
    slowest = std::max(slowest, s.forward_s + s.backward_s);
  }
  r->minibatch_s = 0.0;
  double after = 0.0;  // sum_{t<s} b_t
  for (const ReportedStage& s : r->stages) {
    r->minibatch_s = std::max(r->minibatch_s, sum + (M - 1) * slowest - after + s.update_s);
    after += s.backward_s;
  }
  double forward_before = 0.0, backward_before = 0.0;
  for (ReportedStage& s : r->stages) {
    s.busy_s = M * (s.forward_s + s.backward_s) + s.update_s;
    StageBubble& b = s.bubble;
    b.idle_s = std::max(0.0, r->minibatch_s - s.busy_s);
    b.warmup_s = std::min(forward_before, b.idle_s);
    b.cooldown_s = std::min(backward_before, b.idle_s - b.warmup_s);
    b.between_s = b.idle_s - b.warmup_s - b.cooldown_s;
    forward_before += s.forward_s;
    backward_before += s.backward_s;
  }
}

// Busy time of sorted, non-overlapping intervals within [from, to].
double busy_within(const std::vector<std::pair<double, double>>& spans, double from, double to) {
  double busy = 0.0;
  for (const auto& [a, b] : spans) busy += std::max(0.0, std::min(b, to) - std::max(a, from));
  return busy;
}

// Per op of the base graph: a split op (is_stage_op) that reads the model, a param or such an op. One fed
// by inputs alone (a loss's label reshaped) runs at the start on any stage, and ended its warm-up at 0.
std::vector<char> model_ops(const Graph& base) {
  std::vector<char> out(base.size(), 0);
  for (int32_t v = 0; v < base.size(); ++v) {
    const Op& op = base.op(OpId(v));
    if (!is_stage_op(op)) continue;
    for (const TensorRef& in : op.inputs)
      if (out[in.op.value] || base.op(in.op).type == op_types::kParam) out[v] = 1;
  }
  return out;
}

// Whether a timeline event runs a copy ("x@mb<k>") of one of the base graph's model ops.
bool runs_model_op(const Graph& base, const std::vector<char>& model, const std::string& event) {
  const size_t at = event.rfind("@mb");
  const auto op = base.find(std::string_view(event).substr(0, at));
  return op && model[op->value];
}

// The device a copy's event ("src->dst") holds up: its destination where the simulator made the copy there
// (Simulation::on_destination: two CPU devices of one contention group, or across kinds where the cost
// model says so); else "" (the link's channel, no device's time).
std::string copying_device(const std::string& lane, const Cluster& cluster, const CostModel& costs) {
  const size_t arrow = lane.find("->");
  if (arrow == std::string::npos) return "";
  const std::string_view from_name = std::string_view(lane).substr(0, arrow);
  const std::string_view to_name = std::string_view(lane).substr(arrow + 2);
  int32_t from = -1, to = -1;
  for (int32_t d = 0; d < cluster.size(); ++d) {
    if (cluster.devices[d].name == from_name) from = d;
    if (cluster.devices[d].name == to_name) to = d;
  }
  if (from < 0 || to < 0) return "";
  const Device& a = cluster.devices[from];
  const Device& b = cluster.devices[to];
  if (costs.cross_copies_on_destination() && a.kind != b.kind) return b.name;
  const int32_t group = costs.contention_group(DeviceId(from));
  const bool both_cpu = a.kind == DeviceKind::Cpu && b.kind == DeviceKind::Cpu;
  return group >= 0 && group == costs.contention_group(DeviceId(to)) && both_cpu ? b.name : "";
}

// A timeline by device: its busy intervals (ops, and copies made on it), its first model op's start, its
// first backward op's start and its last backward op's end.
struct Lanes {
  std::map<std::string, std::vector<std::pair<double, double>>> spans;
  std::map<std::string, double> first_forward, first_backward, last_backward_end;
  double end = 0.0;
};

Lanes read_lanes(const Graph& base, const Cluster& cluster, const CostModel& costs,
                 const std::vector<TimelineEvent>& timeline) {
  Lanes l;
  const std::vector<char> model = model_ops(base);
  const auto earliest = [](std::map<std::string, double>& at, const std::string& lane, double t) {
    if (!at.count(lane) || t < at[lane]) at[lane] = t;
  };
  for (const TimelineEvent& e : timeline) {
    const double stop = e.start_s + e.duration_s;
    l.end = std::max(l.end, stop);
    const bool copy = e.category == "transfer";
    const std::string lane = copy ? copying_device(e.lane, cluster, costs) : e.lane;
    if (lane.empty()) continue;
    l.spans[lane].emplace_back(e.start_s, stop);
    if (copy) continue;
    if (runs_model_op(base, model, e.name)) earliest(l.first_forward, lane, e.start_s);
    if (e.category != "backward") continue;
    earliest(l.first_backward, lane, e.start_s);
    l.last_backward_end[lane] = std::max(l.last_backward_end[lane], stop);
  }
  return l;
}

// Warm-up: idle before its first model op (a device without one: its first backward op); cool-down: idle
// after its last backward op; between: the rest. The three spans part [0, end], so they add up to idle_s.
void measure_bubble(const Graph& base, const Cluster& cluster, const CostModel& costs, StageReport* r,
                    const std::vector<TimelineEvent>& timeline) {
  Lanes l = read_lanes(base, cluster, costs, timeline);
  const double end = l.end;
  r->minibatch_s = end;
  const auto at = [](const std::map<std::string, double>& m, const std::string& lane, double otherwise) {
    const auto it = m.find(lane);
    return it == m.end() ? otherwise : it->second;
  };
  for (ReportedStage& s : r->stages) {
    auto& mine = l.spans[s.device];
    std::sort(mine.begin(), mine.end());
    s.busy_s = busy_within(mine, 0.0, end);
    StageBubble& b = s.bubble;
    b.idle_s = end - s.busy_s;
    const double bwd_end = at(l.last_backward_end, s.device, end);
    const double warm_end = std::min(bwd_end, at(l.first_forward, s.device, at(l.first_backward, s.device, end)));
    b.warmup_s = warm_end - busy_within(mine, 0.0, warm_end);
    b.cooldown_s = (end - bwd_end) - busy_within(mine, bwd_end, end);
    b.between_s = std::max(0.0, b.idle_s - b.warmup_s - b.cooldown_s);
  }
}

std::string ms(double s) { return format_number("%.3f", s * 1e3); }

}  // namespace

StageReport stage_report(const Graph& base, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                         const PipelineSpec& spec, const std::vector<TimelineEvent>* timeline) {
  validate_placement(base, cluster, placement);
  if (costs.ops() != base.size() || costs.devices() != cluster.size())
    throw PlacementError("stage report: the cost model is not of this graph and cluster");
  StageReport r;
  r.spec = spec;
  r.stages = collect_stages(base, placement, cluster, costs, &r.contiguous);
  r.simulated = timeline != nullptr;
  if (timeline)
    measure_bubble(base, cluster, costs, &r, *timeline);
  else
    estimate_bubble(&r);
  double idle = 0.0;
  for (const ReportedStage& s : r.stages) idle += s.bubble.idle_s;
  const double capacity = r.minibatch_s * static_cast<double>(r.stages.size());
  r.bubble_fraction = capacity > 0 ? idle / capacity : 0.0;
  return r;
}

std::string stage_report_text(const StageReport& r) {
  std::string out = std::string("pipeline: ") + schedule_name(r.spec.schedule) + ", " +
                    std::to_string(r.spec.microbatches) + " micro-batches, mini-batch " + ms(r.minibatch_s) + " ms (" +
                    (r.simulated ? "simulated" : "estimated, transfers left out") + "), bubble " +
                    format_number("%.1f", 100.0 * r.bubble_fraction) + "%, " +
                    (r.contiguous ? "contiguous stages" : "NOT contiguous (a device holds several runs of ops)") + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-10s %6s %10s %10s %10s %10s %10s %10s  %s\n", "stage", "device", "fwd ops",
                "fwd ms/mb", "bwd ms/mb", "idle ms", "warm-up", "between", "cool-down", "ops (first .. last)");
  out += line;
  for (const ReportedStage& s : r.stages) {
    std::string span = s.first_op + " .. " + s.last_op;
    if (!s.first_layer.empty() || !s.last_layer.empty()) span += " [" + s.first_layer + " .. " + s.last_layer + "]";
    if (s.runs > 1) span += " (" + std::to_string(s.runs) + " runs)";
    if (s.stage < 0) span = "(no stage: params and updates only)";
    const std::string stage = s.stage < 0 ? "-" : std::to_string(s.stage);
    std::snprintf(line, sizeof line, "%-5s %-10s %6lld %10s %10s %10s %10s %10s %10s  %s\n", stage.c_str(),
                  s.device.c_str(),
                  static_cast<long long>(s.forward_ops), ms(s.forward_s).c_str(), ms(s.backward_s).c_str(),
                  ms(s.bubble.idle_s).c_str(), ms(s.bubble.warmup_s).c_str(), ms(s.bubble.between_s).c_str(),
                  ms(s.bubble.cooldown_s).c_str(), span.c_str());
    out += line;
  }
  return out;
}

void write_stage_report(JsonWriter& w, std::string_view key, const StageReport& r) {
  w.begin_object(key);
  w.field("schedule", schedule_name(r.spec.schedule)).field("microbatches", r.spec.microbatches);
  w.field("contiguous", r.contiguous).field("simulated", r.simulated);
  w.field("minibatch_s", r.minibatch_s).field("bubble_fraction", r.bubble_fraction);
  w.begin_array("stages");
  for (const ReportedStage& s : r.stages) {
    w.begin();
    w.field("stage", s.stage).field("device", s.device).field("ops", s.ops).field("forward_ops", s.forward_ops);
    w.field("runs", s.runs).field("first_op", s.first_op).field("last_op", s.last_op);
    w.field("first_layer", s.first_layer).field("last_layer", s.last_layer);
    w.field("forward_s", s.forward_s).field("backward_s", s.backward_s).field("update_s", s.update_s);
    w.field("busy_s", s.busy_s);
    w.begin_object("bubble");
    w.field("idle_s", s.bubble.idle_s).field("warmup_s", s.bubble.warmup_s);
    w.field("between_s", s.bubble.between_s).field("cooldown_s", s.bubble.cooldown_s);
    w.end();
    w.end();
  }
  w.end_array();
  w.end();
}

}  // namespace placer
