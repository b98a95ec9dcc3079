// Event-driven simulation of one training step.
//
// Devices run one op at a time; among the ops whose inputs are present on a
// device the lowest op id runs first (the runtime executor's rule). A tensor
// needed on another device is sent once per (tensor, destination device) on
// the directed link's channel, FIFO, costing alpha + bytes / beta. Events at
// the same instant are all applied before idle devices pick their next op, so
// frees happen before allocations and the choice sees every op made ready.
// A pipelined mini-batch under 1F1B also holds a micro-batch's ops back until
// its device has a slot for it (graphs/pipeline.h, MicrobatchGate).
//
// Tensor lifetimes, transfers and memory follow the execution rules the
// runtime's executor uses (graphs/exec_plan.h): this file only adds time.
#include "placer/env/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"

namespace placer {

double LowerBound::value() const { return std::max({critical_path_s, joins_s, average_work_s, lp_s, group_s}); }

namespace {

struct Event {
  double time;
  // < ops: op id finished; else transfer id + ops arrived (op finishes sort first: frees before allocations)
  int32_t id;
  bool operator>(const Event& o) const { return time > o.time || (time == o.time && id > o.id); }
};

// Reused buffers: one set per thread, so batch simulation allocates nothing per call.
struct Workspace {
  StepPlan plan;
  std::vector<int32_t> pending;
  std::vector<int32_t> local_uses;      // [tensors]: uses left of the producer's copy
  std::vector<int32_t> xfer_remaining;  // [transfers]: uses left of the copy on the destination
  std::vector<double> chan_free;        // [devices * devices]
  std::vector<double> busy;
  std::vector<int64_t> cur_bytes;
  std::vector<int64_t> peak_bytes;
  std::vector<uint8_t> running;
  std::vector<std::vector<int32_t>> ready;  // per-device min-heaps of op ids
  std::vector<int32_t> held;                // pop_item: ready ops the gate holds back
  std::vector<Event> events;
  // Contention (CostModel::has_contention): the running op's remaining
  // fraction, its current duration at the present rate, and when it started.
  std::vector<int32_t> run_op;
  std::vector<double> frac, dur, last, finish, started;
  std::vector<int32_t> group_of;  // [devices]: contention group (host), -1 = none
  std::vector<int32_t> group_size, group_busy;
  std::vector<uint8_t> group_changed;
};

// Ready items: op ids, and copies made on their destination device (CPU to
// CPU; CPU<->GPU where the cost model says so), kCopyItem + transfer index,
// which sort before every op.
constexpr int32_t kCopyItem = std::numeric_limits<int32_t>::min();
constexpr int32_t kNoItem = std::numeric_limits<int32_t>::max();  // no op id is this large

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

// One simulation run: the state of the event loop and its steps.
class Simulation {
 public:
  Simulation(const SimContext& ctx, const Cluster& cluster, const CostModel& costs, const SimOptions& options,
             std::vector<TimelineEvent>* timeline)
      : ctx_(ctx),
        graph_(*ctx.graph),
        cluster_(cluster),
        costs_(costs),
        timeline_(timeline),
        mem_(options.track_memory),
        n_(ctx.ops),
        D_(cluster.size()),
        ws_(workspace()) {}

  // The placement as a device index per op; throws PlacementError for one
  // that does not fit.
  void place(const Placement& placement);
  StepResult run();

 private:
  void start();
  void pick_items();
  void retime_groups();
  void op_finished(int32_t o);
  void send_output(int32_t o, int32_t t);
  void transfer_arrived(int32_t x);
  StepResult result() const;

  // Memory and uses.
  void alloc(int32_t d, int64_t bytes) {
    cur_[d] += bytes;
    if (cur_[d] > peak_[d]) peak_[d] = cur_[d];
  }
  void release_slot(int32_t slot);
  void free_tensor(int32_t t);
  void release_tensor(int32_t t) {
    if (--ws_.local_uses[t] == 0) free_tensor(t);
  }

  // Ready items and events.
  void push_item(int32_t d, int32_t item) {
    auto& q = ws_.ready[d];
    q.push_back(item);
    std::push_heap(q.begin(), q.end(), std::greater<int32_t>());
  }
  void push_ready(int32_t o) { push_item(dev_[o], o); }
  // The lowest ready item of device d that the gate lets run, or kNoItem (the others stay ready).
  int32_t pop_item(int32_t d) {
    auto& q = ws_.ready[d];
    int32_t found = kNoItem;
    while (!q.empty()) {
      std::pop_heap(q.begin(), q.end(), std::greater<int32_t>());
      const int32_t item = q.back();
      q.pop_back();
      if (item < 0 || gate_.admits(item)) {
        found = item;
        break;
      }
      ws_.held.push_back(item);
    }
    for (const int32_t item : ws_.held) push_item(d, item);
    ws_.held.clear();
    return found;
  }
  void push_event(double time, int32_t id) {
    ws_.events.push_back(Event{time, id});
    std::push_heap(ws_.events.begin(), ws_.events.end(), std::greater<Event>());
  }
  // The event that ends a ready item: an op's id, or n + transfer index.
  int32_t event_id(int32_t item) const { return item >= 0 ? item : n_ + (item - kCopyItem); }
  // A copy between two CPU devices of one host is made by the destination
  // device itself, ahead of its ops, oldest transfer first (the runtime's
  // rule). So is a copy between a CPU device and a GPU where the profile's fit
  // says so (CostModel::cross_copies_on_destination): the copy and the cost per
  // copy fitted with it hold up the destination's own work (on an H200,
  // placements' measured steps fit this far better than copies beside it:
  // bench/results/gpu_crossings.md; the executor makes them on a channel
  // thread, and what they cost is modelled, not their mechanics).
  // Other pairs copy on the link's channel.
  bool on_destination(int32_t from, int32_t to) const {
    if (costs_.cross_copies_on_destination() && cluster_.devices[from].kind != cluster_.devices[to].kind) return true;
    return group_of_[from] >= 0 && group_of_[from] == group_of_[to] && cluster_.devices[from].kind == DeviceKind::Cpu &&
           cluster_.devices[to].kind == DeviceKind::Cpu;
  }
  double item_seconds(int32_t item, int32_t d) const;
  double duration_now(int32_t item, int32_t d) const;
  std::string item_name(int32_t item, int32_t d, std::string* lane) const;
  const char* item_category(int32_t item) const {
    return item >= 0 ? phase_name(graph_.op(OpId(item)).phase) : "transfer";
  }
  bool finish_item(int32_t d, int32_t item);

  const SimContext& ctx_;
  const Graph& graph_;
  const Cluster& cluster_;
  const CostModel& costs_;
  std::vector<TimelineEvent>* timeline_;
  const bool mem_;
  const int32_t n_;
  const int32_t D_;
  Workspace& ws_;
  const int32_t* dev_ = nullptr;
  const int32_t* group_of_ = nullptr;
  int64_t* cur_ = nullptr;
  int64_t* peak_ = nullptr;
  bool contention_ = false;
  int64_t transfer_bytes_ = 0;
  int32_t finished_ = 0;
  double now_ = 0.0;
  double makespan_ = 0.0;
  MicrobatchGate gate_;  // 1F1B's micro-batches in flight (graphs/pipeline.h)
};

void Simulation::place(const Placement& placement) {
  if (D_ <= 0) throw PlacementError("cluster '" + cluster_.name + "' has no devices");
  if (static_cast<int64_t>(placement.device_of.size()) != n_)
    throw PlacementError("placement has " + std::to_string(placement.device_of.size()) + " ops, graph '" + graph_.name +
                         "' has " + std::to_string(n_));
  if (costs_.devices() != D_ || costs_.ops() != n_)
    throw InputError("cost model is for " + std::to_string(costs_.ops()) + " ops x " +
                     std::to_string(costs_.devices()) + " devices, not " + std::to_string(n_) + " x " +
                     std::to_string(D_));
  ws_.pending.resize(n_);  // scratch for the device indices
  for (int32_t o = 0; o < n_; ++o) {
    const int32_t d = placement.device_of[o].value;
    if (d < 0 || d >= D_)
      throw PlacementError("op '" + graph_.op(OpId(o)).name + "' is placed on device " + std::to_string(d) +
                           ", the cluster has " + std::to_string(D_));
    ws_.pending[o] = d;
  }
  plan_step(ctx_, ws_.pending.data(), D_, ws_.plan);
  gate_ = MicrobatchGate(graph_, placement.device_of, D_);
  dev_ = ws_.plan.device.data();
}

double Simulation::item_seconds(int32_t item, int32_t d) const {
  if (item >= 0) return costs_.op_seconds(OpId(item), DeviceId(d));
  const int32_t t = ws_.plan.xfer_tensor[item - kCopyItem];
  return costs_.transfer_seconds(DeviceId(dev_[ctx_.tensor_op[t]]), DeviceId(d), ctx_.tensor_bytes[t]);
}

// Contention: an op's duration depends on how many devices of its group are busy.
double Simulation::duration_now(int32_t item, int32_t d) const {
  const double alone = item_seconds(item, d);
  const int32_t g = group_of_[d];
  if (g < 0 || ws_.group_size[g] < 2) return alone;
  // A copy from outside the group (from a GPU): its fitted cost is per copy, not a memcpy that contends.
  if (item < 0 && group_of_[dev_[ctx_.tensor_op[ws_.plan.xfer_tensor[item - kCopyItem]]]] != g) return alone;
  const double share = static_cast<double>(ws_.group_busy[g] - 1) / static_cast<double>(ws_.group_size[g] - 1);
  const double contended =
      item >= 0 ? costs_.contended_seconds(OpId(item), DeviceId(d)) : alone * costs_.copy_contention(DeviceId(d));
  return alone + (contended - alone) * share;
}

std::string Simulation::item_name(int32_t item, int32_t d, std::string* lane) const {
  if (item >= 0) {
    *lane = cluster_.devices[d].name;
    return graph_.op(OpId(item)).name;
  }
  const int32_t t = ws_.plan.xfer_tensor[item - kCopyItem];
  const int32_t p = ctx_.tensor_op[t];
  *lane = cluster_.devices[dev_[p]].name + "->" + cluster_.devices[d].name;
  return *lane + " " + graph_.op(OpId(p)).name + ":" + std::to_string(t - ctx_.out_begin[p]);
}

// Releases one use of an op's input slot (the local tensor or the
// transferred copy); a freed view releases its base in turn.
void Simulation::release_slot(int32_t slot) {
  for (;;) {
    const int32_t x = ws_.plan.slot_xfer[slot];
    if (x >= 0) {
      if (--ws_.xfer_remaining[x] == 0 && mem_)
        cur_[ws_.plan.xfer_dst[x]] -= ctx_.tensor_bytes[ws_.plan.xfer_tensor[x]];
      return;
    }
    const int32_t t = ctx_.in_tensor[slot];
    if (--ws_.local_uses[t] != 0) return;
    const int32_t p = ctx_.tensor_op[t];
    if (ctx_.resident[p]) return;
    if (mem_) cur_[dev_[p]] -= ctx_.alloc_bytes[t];
    slot = ctx_.view_base[t];
    if (slot < 0) return;
  }
}

// Frees the producer's copy of tensor t.
void Simulation::free_tensor(int32_t t) {
  const int32_t p = ctx_.tensor_op[t];
  if (ctx_.resident[p]) return;
  if (mem_) cur_[dev_[p]] -= ctx_.alloc_bytes[t];
  if (ctx_.view_base[t] >= 0) release_slot(ctx_.view_base[t]);
}

// Buffers, resident memory, the first ready ops and the contention groups.
void Simulation::start() {
  ws_.local_uses = ws_.plan.tensor_uses;
  ws_.xfer_remaining = ws_.plan.xfer_uses;
  ws_.cur_bytes.assign(D_, 0);
  ws_.peak_bytes.assign(D_, 0);
  ws_.busy.assign(D_, 0.0);
  ws_.running.assign(D_, 0);
  ws_.chan_free.assign(static_cast<size_t>(D_) * D_, 0.0);
  ws_.ready.resize(std::max<size_t>(ws_.ready.size(), D_));
  for (int32_t d = 0; d < D_; ++d) ws_.ready[d].clear();
  ws_.events.clear();
  cur_ = ws_.cur_bytes.data();
  peak_ = ws_.peak_bytes.data();
  ws_.group_of.resize(D_);
  int32_t groups = 0;
  for (int32_t d = 0; d < D_; ++d) {
    ws_.group_of[d] = costs_.contention_group(DeviceId(d));
    groups = std::max(groups, ws_.group_of[d] + 1);
  }
  group_of_ = ws_.group_of.data();

  for (int32_t o = 0; o < n_; ++o) {
    ws_.pending[o] = ctx_.in_begin[o + 1] - ctx_.in_begin[o];
    if (mem_ && ctx_.resident[o])
      for (int32_t t = ctx_.out_begin[o]; t < ctx_.out_begin[o + 1]; ++t) alloc(dev_[o], ctx_.alloc_bytes[t]);
  }
  for (int32_t o = 0; o < n_; ++o)
    if (ws_.pending[o] == 0) push_ready(o);

  contention_ = costs_.has_contention();
  if (contention_) {
    ws_.run_op.assign(D_, -1);
    ws_.frac.assign(D_, 0.0);
    ws_.dur.assign(D_, 0.0);
    ws_.last.assign(D_, 0.0);
    ws_.finish.assign(D_, 0.0);
    ws_.started.assign(D_, 0.0);
    ws_.group_size.assign(groups, 0);
    for (int32_t d = 0; d < D_; ++d)
      if (group_of_[d] >= 0) ++ws_.group_size[group_of_[d]];
    ws_.group_busy.assign(groups, 0);
    ws_.group_changed.assign(groups, 0);
  }
}

// Idle devices pick their lowest ready item.
void Simulation::pick_items() {
  for (int32_t d = 0; d < D_; ++d) {
    if (ws_.running[d] || ws_.ready[d].empty()) continue;
    const int32_t o = pop_item(d);
    if (o == kNoItem) continue;  // 1F1B: every ready op's micro-batch waits for a slot
    ws_.running[d] = 1;
    if (o >= 0) gate_.started(o);
    if (o >= 0 && mem_ && !ctx_.resident[o])
      for (int32_t t = ctx_.out_begin[o]; t < ctx_.out_begin[o + 1]; ++t) alloc(d, ctx_.alloc_bytes[t]);
    if (contention_) {
      // Timed by retime_groups(), once every device has picked its op.
      ws_.run_op[d] = o;
      ws_.frac[d] = 1.0;
      ws_.dur[d] = 0.0;
      ws_.last[d] = now_;
      ws_.started[d] = now_;
      if (group_of_[d] >= 0) {
        ++ws_.group_busy[group_of_[d]];
        ws_.group_changed[group_of_[d]] = 1;
      } else {
        ws_.dur[d] = item_seconds(o, d);
        ws_.finish[d] = now_ + ws_.dur[d];
        push_event(ws_.finish[d], event_id(o));
      }
      continue;
    }
    const double cost = item_seconds(o, d);
    if (o >= 0) ws_.busy[d] += cost;
    if (timeline_) {
      std::string lane;
      std::string name = item_name(o, d, &lane);
      timeline_->push_back(TimelineEvent{std::move(name), std::move(lane), now_, cost, item_category(o)});
    }
    push_event(now_ + cost, event_id(o));
  }
}

// Contention: re-times every running op of a group whose number of busy devices changed.
void Simulation::retime_groups() {
  for (int32_t d = 0; d < D_; ++d) {
    const int32_t g = group_of_[d];
    if (g < 0 || !ws_.group_changed[g] || !ws_.running[d]) continue;
    if (ws_.dur[d] > 0) ws_.frac[d] = std::max(0.0, ws_.frac[d] - (now_ - ws_.last[d]) / ws_.dur[d]);
    ws_.last[d] = now_;
    ws_.dur[d] = duration_now(ws_.run_op[d], d);
    ws_.finish[d] = now_ + ws_.frac[d] * ws_.dur[d];
    push_event(ws_.finish[d], event_id(ws_.run_op[d]));
  }
  std::fill(ws_.group_changed.begin(), ws_.group_changed.end(), 0);
}

// Contention: ends the item running on d at now, or returns false for a
// stale event (the item was re-timed after this event was queued).
bool Simulation::finish_item(int32_t d, int32_t item) {
  if (!ws_.running[d] || ws_.run_op[d] != item || ws_.finish[d] != now_) return false;
  const double took = now_ - ws_.started[d];
  if (item >= 0) ws_.busy[d] += took;
  if (timeline_) {
    std::string lane;
    std::string name = item_name(item, d, &lane);
    timeline_->push_back(TimelineEvent{std::move(name), std::move(lane), ws_.started[d], took, item_category(item)});
  }
  if (group_of_[d] >= 0) {
    --ws_.group_busy[group_of_[d]];
    ws_.group_changed[group_of_[d]] = 1;
  }
  return true;
}

// Output t of op o is ready on its device: local consumers may run, and its
// transfers start (on the channel, or queued on a CPU destination).
void Simulation::send_output(int32_t o, int32_t t) {
  const int32_t d = dev_[o];
  for (int32_t c = ctx_.cons_begin[t]; c < ctx_.cons_begin[t + 1]; ++c) {
    const int32_t co = ctx_.cons_op[c];
    if (dev_[co] == d && --ws_.pending[co] == 0) push_ready(co);
  }
  for (int32_t x = ws_.plan.xfer_begin[t]; x < ws_.plan.xfer_begin[t + 1]; ++x) {
    const int32_t dst = ws_.plan.xfer_dst[x];
    const int64_t bytes = ctx_.tensor_bytes[t];
    if (on_destination(d, dst)) {
      transfer_bytes_ += bytes;
      push_item(dst, kCopyItem + x);
      continue;
    }
    double& free_at = ws_.chan_free[static_cast<size_t>(d) * D_ + dst];
    const double start = std::max(now_, free_at);
    const double dur = costs_.transfer_seconds(DeviceId(d), DeviceId(dst), bytes);
    free_at = start + dur;
    transfer_bytes_ += bytes;
    if (timeline_) {
      const std::string lane = cluster_.devices[d].name + "->" + cluster_.devices[dst].name;
      const Op& op = graph_.op(OpId(o));
      timeline_->push_back(TimelineEvent{lane + " " + op.name + ":" + std::to_string(t - ctx_.out_begin[o]), lane,
                                         start, dur, "transfer"});
    }
    push_event(start + dur, n_ + x);
  }
  if (ws_.local_uses[t] == 0) free_tensor(t);  // nobody reads it
}

void Simulation::op_finished(int32_t o) {
  const int32_t d = dev_[o];
  if (contention_ && !finish_item(d, o)) return;  // re-timed since: a stale event
  ws_.running[d] = 0;
  gate_.finished(o);
  ++finished_;
  makespan_ = std::max(makespan_, now_);
  for (int32_t t = ctx_.out_begin[o]; t < ctx_.out_begin[o + 1]; ++t) send_output(o, t);
  for (int32_t e = ctx_.extra_begin[o]; e < ctx_.extra_begin[o + 1]; ++e) {
    const int32_t h = ctx_.extra_hold[e];
    if (h >= 0)
      release_tensor(h);
    else
      release_slot(~h);
  }
  for (int32_t s = ctx_.in_begin[o]; s < ctx_.in_begin[o + 1]; ++s) release_slot(s);
}

void Simulation::transfer_arrived(int32_t x) {
  const int32_t dst = ws_.plan.xfer_dst[x];
  const int32_t t = ws_.plan.xfer_tensor[x];
  if (on_destination(dev_[ctx_.tensor_op[t]], dst)) {  // the copy ran on dst itself
    if (contention_ && !finish_item(dst, kCopyItem + x)) return;
    ws_.running[dst] = 0;
  }
  if (mem_) alloc(dst, ctx_.tensor_bytes[t]);
  release_tensor(t);
  for (int32_t c = ctx_.cons_begin[t]; c < ctx_.cons_begin[t + 1]; ++c) {
    const int32_t co = ctx_.cons_op[c];
    if (dev_[co] == dst && --ws_.pending[co] == 0) push_ready(co);
  }
}

StepResult Simulation::run() {
  start();
  for (;;) {
    pick_items();
    if (contention_) retime_groups();
    if (ws_.events.empty()) break;
    now_ = ws_.events.front().time;
    while (!ws_.events.empty() && ws_.events.front().time == now_) {
      std::pop_heap(ws_.events.begin(), ws_.events.end(), std::greater<Event>());
      const int32_t id = ws_.events.back().id;
      ws_.events.pop_back();
      if (id < n_)
        op_finished(id);
      else
        transfer_arrived(id - n_);
    }
  }
  PLACER_CHECK(finished_ == n_, "simulation stalled: ", finished_, " of ", n_, " ops ran");
  return result();
}

StepResult Simulation::result() const {
  StepResult result;
  result.step_s = makespan_;
  result.samples_s = {makespan_};
  result.ci_low_s = result.ci_high_s = makespan_;
  result.transfer_bytes = transfer_bytes_;
  result.devices.resize(D_);
  double worst_ratio = 0.0;
  for (int32_t d = 0; d < D_; ++d) {
    const Device& device = cluster_.devices[d];
    result.devices[d].device = device.name;
    result.devices[d].busy_s = ws_.busy[d];
    result.devices[d].peak_bytes = mem_ ? peak_[d] : 0;
    if (mem_ && device.memory_bytes > 0 && peak_[d] > device.memory_bytes) {
      const double ratio =
          static_cast<double>(peak_[d] - device.memory_bytes) / static_cast<double>(device.memory_bytes);
      if (result.status != StepStatus::Oom || ratio > worst_ratio) {
        worst_ratio = ratio;
        result.status = StepStatus::Oom;
        result.oom_device = device.name;
        result.oom_needed_bytes = peak_[d];
        result.oom_capacity_bytes = device.memory_bytes;
      }
    }
  }
  if (result.status == StepStatus::Oom)
    result.message = "out of memory on " + result.oom_device + ": peak " + std::to_string(result.oom_needed_bytes) +
                     " bytes, capacity " + std::to_string(result.oom_capacity_bytes) + " bytes (simulated)";
  return result;
}

}  // namespace

StepResult simulate(const SimContext& ctx, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options, std::vector<TimelineEvent>* timeline) {
  Simulation sim(ctx, cluster, costs, options, timeline);
  sim.place(placement);
  return sim.run();
}

StepResult simulate(const Graph& graph, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options, std::vector<TimelineEvent>* timeline) {
  const SimContext context(graph);
  return simulate(context, placement, cluster, costs, options, timeline);
}

}  // namespace placer
