// Event-driven simulation of one training step.
//
// Devices run one op at a time; among the ops whose inputs are present on a
// device the lowest op id runs first (the runtime executor's rule). A tensor
// needed on another device is sent once per (tensor, destination device) on
// the directed link's channel, FIFO, costing alpha + bytes / beta. Events at
// the same instant are all applied before idle devices pick their next op, so
// frees happen before allocations and the choice sees every op made ready.
//
// Memory, as the runtime's executor counts it: param and input outputs are
// resident for the whole step. Any other output is allocated when its op
// starts and freed when its last use ends: a consumer op on its device, an
// outgoing transfer, a view of it, or the backward op of its producer or of
// an op that differentiates it (autograd keeps a forward op's outputs and
// differentiated inputs until its backward ran). A transferred copy is
// allocated on arrival and freed after its last use on the destination.
// Views (aten::view, transpose, chunk, ...) and placer::sgd outputs take no
// new memory and keep their base alive.
#include "placer/env/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>

#include "placer/graphs/error.h"

namespace placer {

SimContext::SimContext(const Graph& g) : graph(&g) {
  PLACER_CHECK(g.size() < (int64_t{1} << 30), "graph too large for the simulator: ", g.size());
  ops = static_cast<int32_t>(g.size());
  out_begin.resize(ops + 1);
  int32_t t = 0;
  for (int32_t o = 0; o < ops; ++o) {
    out_begin[o] = t;
    t += static_cast<int32_t>(g.op(OpId(o)).outputs.size());
  }
  out_begin[ops] = t;
  tensors = t;
  tensor_op.resize(tensors);
  tensor_bytes.resize(tensors);
  resident.assign(ops, 0);
  for (int32_t o = 0; o < ops; ++o) {
    const Op& op = g.op(OpId(o));
    resident[o] = op.type == op_types::kParam || op.type == op_types::kInput;
    for (int32_t k = 0; k < static_cast<int32_t>(op.outputs.size()); ++k) {
      tensor_op[out_begin[o] + k] = o;
      tensor_bytes[out_begin[o] + k] = op.outputs[k].bytes();
    }
  }

  // Unique inputs per op, and the consumer lists (ascending op id since ops
  // are visited in id order).
  in_begin.resize(ops + 1);
  std::vector<int32_t> cons_count(tensors + 1, 0);
  std::vector<int32_t> last_seen(tensors, -1);
  for (int32_t o = 0; o < ops; ++o) {
    in_begin[o] = static_cast<int32_t>(in_tensor.size());
    for (const TensorRef& in : g.op(OpId(o)).inputs) {
      const int32_t tid = out_begin[in.op.value] + in.output;
      if (last_seen[tid] == o) continue;
      last_seen[tid] = o;
      in_tensor.push_back(tid);
      ++cons_count[tid];
    }
  }
  in_begin[ops] = static_cast<int32_t>(in_tensor.size());
  alloc_bytes = tensor_bytes;
  cons_begin.assign(tensors + 1, 0);
  for (int32_t i = 0; i < tensors; ++i) cons_begin[i + 1] = cons_begin[i] + cons_count[i];
  cons_op.resize(in_tensor.size());
  cons_slot.resize(in_tensor.size());
  std::vector<int32_t> fill(cons_begin.begin(), cons_begin.end() - 1);
  for (int32_t o = 0; o < ops; ++o)
    for (int32_t s = in_begin[o]; s < in_begin[o + 1]; ++s) {
      const int32_t pos = fill[in_tensor[s]]++;
      cons_op[pos] = o;
      cons_slot[pos] = s;
    }

  // Views: an output aliasing an input takes no memory and keeps the input alive.
  view_base.assign(tensors, -1);
  for (int32_t o = 0; o < ops; ++o) {
    const Op& op = g.op(OpId(o));
    const bool sgd = op.type == op_types::kSgd;
    if ((!sgd && !is_view_op(op.type)) || in_begin[o] == in_begin[o + 1]) continue;
    for (int32_t tid = out_begin[o]; tid < out_begin[o + 1]; ++tid) {
      view_base[tid] = slot_of(o, 0);
      alloc_bytes[tid] = 0;
    }
  }

  // A backward op holds its forward op's outputs and differentiated inputs
  // (args[1]: the forward input index of each gradient it returns).
  extra_begin.resize(ops + 1);
  for (int32_t o = 0; o < ops; ++o) {
    extra_begin[o] = static_cast<int32_t>(extra_hold.size());
    const Op& op = g.op(OpId(o));
    if (op.type != op_types::kBackward || !op.forward.valid() || op.forward.value >= o) continue;
    const int32_t f = op.forward.value;
    const Op& fwd = g.op(op.forward);
    std::vector<int32_t> slots;
    if (op.args.size() > 1)
      for (int64_t pos : op.args[1].ints)
        if (pos >= 0 && pos < static_cast<int64_t>(fwd.inputs.size()))
          slots.push_back(slot_of(f, static_cast<int32_t>(pos)));
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (int32_t slot : slots) extra_hold.push_back(~slot);
    for (int32_t tid = out_begin[f]; tid < out_begin[f + 1]; ++tid) extra_hold.push_back(tid);
  }
  extra_begin[ops] = static_cast<int32_t>(extra_hold.size());
}

int32_t SimContext::slot_of(int32_t op, int32_t position) const {
  const TensorRef& ref = graph->op(OpId(op)).inputs[position];
  const int32_t tid = out_begin[ref.op.value] + ref.output;
  for (int32_t s = in_begin[op]; s < in_begin[op + 1]; ++s)
    if (in_tensor[s] == tid) return s;
  PLACER_CHECK(false, "input ", position, " of op ", op, " has no slot");
  return -1;
}

bool is_view_op(std::string_view type) {
  // ATen ops whose schema returns an alias of an input (Tensor(a) / Tensor(a)[]).
  static const char* const kViews[] = {
      "aten::view",      "aten::view_as",    "aten::reshape",      "aten::reshape_as",       "aten::t",
      "aten::transpose", "aten::permute",    "aten::expand",       "aten::expand_as",        "aten::select",
      "aten::slice",     "aten::chunk",      "aten::split",        "aten::split_with_sizes", "aten::tensor_split",
      "aten::unbind",    "aten::unsqueeze",  "aten::squeeze",      "aten::flatten",          "aten::unflatten",
      "aten::narrow",    "aten::as_strided", "aten::alias",        "aten::detach",           "aten::contiguous",
      "aten::diagonal",  "aten::movedim",    "aten::swapaxes",     "aten::unfold",           "aten::numpy_T",
      "aten::mT",        "aten::matrix_H",   "aten::view_as_real", "aten::view_as_complex"};
  const std::string_view base = type.substr(0, type.find('.'));
  for (const char* v : kViews)
    if (base == v) return true;
  return false;
}

double LowerBound::value() const { return std::max({critical_path_s, average_work_s, lp_s}); }

namespace {

struct Event {
  double time;
  int32_t
      id;  // < ops: op id finished; else transfer id - ops arrived (op finishes sort first: frees before allocations)
  bool operator>(const Event& o) const { return time > o.time || (time == o.time && id > o.id); }
};

// Reused buffers: one set per thread, so batch simulation allocates nothing per call.
struct Workspace {
  std::vector<int32_t> dev;
  std::vector<int32_t> pending;
  std::vector<int32_t> local_uses;  // [tensors]
  std::vector<int32_t> xfer_begin;  // [tensors + 1]
  std::vector<int32_t> xfer_dst;
  std::vector<int32_t> xfer_tensor;
  std::vector<int32_t> xfer_remaining;
  std::vector<int32_t> slot_xfer;  // [in_tensor.size()]: transfer feeding that input, -1 = local
  std::vector<int32_t> dev_tag;    // [devices]: tensor id whose transfer to this device was made last
  std::vector<int32_t> dev_xfer;   // [devices]
  std::vector<double> chan_free;   // [devices * devices]
  std::vector<double> busy;
  std::vector<int64_t> cur_bytes;
  std::vector<int64_t> peak_bytes;
  std::vector<uint8_t> running;
  std::vector<std::vector<int32_t>> ready;  // per-device min-heaps of op ids
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
// CPU), kCopyItem + transfer index, which sort before every op.
constexpr int32_t kCopyItem = std::numeric_limits<int32_t>::min();

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

const char* phase_category(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Update: return "update";
  }
  return "forward";
}

}  // namespace

StepResult simulate(const SimContext& ctx, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options, std::vector<TimelineEvent>* timeline) {
  const Graph& graph = *ctx.graph;
  const int32_t n = ctx.ops;
  const int32_t D = cluster.size();
  if (D <= 0) throw PlacementError("cluster '" + cluster.name + "' has no devices");
  if (static_cast<int64_t>(placement.device_of.size()) != n)
    throw PlacementError("placement has " + std::to_string(placement.device_of.size()) + " ops, graph '" + graph.name +
                         "' has " + std::to_string(n));
  if (costs.devices() != D || costs.ops() != n)
    throw InputError("cost model is for " + std::to_string(costs.ops()) + " ops x " + std::to_string(costs.devices()) +
                     " devices, not " + std::to_string(n) + " x " + std::to_string(D));

  Workspace& ws = workspace();
  ws.dev.resize(n);
  for (int32_t o = 0; o < n; ++o) {
    const int32_t d = placement.device_of[o].value;
    if (d < 0 || d >= D)
      throw PlacementError("op '" + graph.op(OpId(o)).name + "' is placed on device " + std::to_string(d) +
                           ", the cluster has " + std::to_string(D));
    ws.dev[o] = d;
  }
  const int32_t* dev = ws.dev.data();

  // Transfers of this placement: one per (tensor, remote device with consumers).
  const int32_t T = ctx.tensors;
  ws.local_uses.assign(T, 0);
  ws.xfer_begin.resize(T + 1);
  ws.xfer_dst.clear();
  ws.xfer_tensor.clear();
  ws.xfer_remaining.clear();
  ws.slot_xfer.resize(ctx.in_tensor.size());
  ws.dev_tag.assign(D, -1);
  ws.dev_xfer.assign(D, -1);
  for (int32_t t = 0; t < T; ++t) {
    ws.xfer_begin[t] = static_cast<int32_t>(ws.xfer_dst.size());
    const int32_t dp = dev[ctx.tensor_op[t]];
    int32_t uses = 0;
    for (int32_t c = ctx.cons_begin[t]; c < ctx.cons_begin[t + 1]; ++c) {
      const int32_t dc = dev[ctx.cons_op[c]];
      if (dc == dp) {
        ++uses;
        ws.slot_xfer[ctx.cons_slot[c]] = -1;
        continue;
      }
      if (ws.dev_tag[dc] != t) {
        ws.dev_tag[dc] = t;
        ws.dev_xfer[dc] = static_cast<int32_t>(ws.xfer_dst.size());
        ws.xfer_dst.push_back(dc);
        ws.xfer_tensor.push_back(t);
        ws.xfer_remaining.push_back(0);
        ++uses;  // the outgoing transfer reads the source copy
      }
      ++ws.xfer_remaining[ws.dev_xfer[dc]];
      ws.slot_xfer[ctx.cons_slot[c]] = ws.dev_xfer[dc];
    }
    ws.local_uses[t] = uses;
  }
  ws.xfer_begin[T] = static_cast<int32_t>(ws.xfer_dst.size());
  // Holds beyond consumers: views on their base, backward ops on forward state.
  auto hold_slot = [&](int32_t slot) {
    const int32_t x = ws.slot_xfer[slot];
    if (x < 0)
      ++ws.local_uses[ctx.in_tensor[slot]];
    else
      ++ws.xfer_remaining[x];
  };
  for (int32_t t = 0; t < T; ++t)
    if (ctx.view_base[t] >= 0) hold_slot(ctx.view_base[t]);
  for (int32_t e = 0; e < static_cast<int32_t>(ctx.extra_hold.size()); ++e) {
    const int32_t h = ctx.extra_hold[e];
    if (h >= 0)
      ++ws.local_uses[h];
    else
      hold_slot(~h);
  }

  const bool mem = options.track_memory;
  ws.cur_bytes.assign(D, 0);
  ws.peak_bytes.assign(D, 0);
  ws.busy.assign(D, 0.0);
  ws.running.assign(D, 0);
  ws.chan_free.assign(static_cast<size_t>(D) * D, 0.0);
  ws.ready.resize(std::max<size_t>(ws.ready.size(), D));
  for (int32_t d = 0; d < D; ++d) ws.ready[d].clear();
  ws.events.clear();
  ws.pending.resize(n);
  int64_t* cur = ws.cur_bytes.data();
  int64_t* peak = ws.peak_bytes.data();
  auto alloc = [&](int32_t d, int64_t bytes) {
    cur[d] += bytes;
    if (cur[d] > peak[d]) peak[d] = cur[d];
  };
  auto push_item = [&](int32_t d, int32_t item) {
    auto& q = ws.ready[d];
    q.push_back(item);
    std::push_heap(q.begin(), q.end(), std::greater<int32_t>());
  };
  auto push_ready = [&](int32_t o) { push_item(dev[o], o); };
  // Devices of one contention group share a host (cpu:N). The runtime's rule
  // there: a copy between two CPU devices is made by the destination device
  // itself, ahead of its ops, oldest transfer first (a ready item
  // kCopyItem + x sorts below every op id). Other pairs copy on the link's channel.
  ws.group_of.resize(D);
  int32_t groups = 0;
  for (int32_t d = 0; d < D; ++d) {
    ws.group_of[d] = costs.contention_group(DeviceId(d));
    groups = std::max(groups, ws.group_of[d] + 1);
  }
  const int32_t* group_of = ws.group_of.data();
  auto on_destination = [&](int32_t from, int32_t to) {
    return group_of[from] >= 0 && group_of[from] == group_of[to] && cluster.devices[from].kind == DeviceKind::Cpu &&
           cluster.devices[to].kind == DeviceKind::Cpu;
  };
  // The event that ends a ready item: an op's id, or n + transfer index.
  auto event_id = [&](int32_t item) { return item >= 0 ? item : n + (item - kCopyItem); };
  // Cost of a ready item on device d: an op, or a copy made there.
  auto item_seconds = [&](int32_t item, int32_t d) {
    if (item >= 0) return costs.op_seconds(OpId(item), DeviceId(d));
    const int32_t x = item - kCopyItem;
    const int32_t t = ws.xfer_tensor[x];
    return costs.transfer_seconds(DeviceId(dev[ctx.tensor_op[t]]), DeviceId(d), ctx.tensor_bytes[t]);
  };
  auto item_name = [&](int32_t item, int32_t d, std::string* lane) {
    if (item >= 0) {
      *lane = cluster.devices[d].name;
      return graph.op(OpId(item)).name;
    }
    const int32_t t = ws.xfer_tensor[item - kCopyItem];
    const int32_t p = ctx.tensor_op[t];
    *lane = cluster.devices[dev[p]].name + "->" + cluster.devices[d].name;
    return *lane + " " + graph.op(OpId(p)).name + ":" + std::to_string(t - ctx.out_begin[p]);
  };
  auto item_category = [&](int32_t item) {
    return item >= 0 ? phase_category(graph.op(OpId(item)).phase) : "transfer";
  };
  auto push_event = [&](double time, int32_t id) {
    ws.events.push_back(Event{time, id});
    std::push_heap(ws.events.begin(), ws.events.end(), std::greater<Event>());
  };

  for (int32_t o = 0; o < n; ++o) {
    ws.pending[o] = ctx.in_begin[o + 1] - ctx.in_begin[o];
    if (mem && ctx.resident[o])
      for (int32_t t = ctx.out_begin[o]; t < ctx.out_begin[o + 1]; ++t) alloc(dev[o], ctx.alloc_bytes[t]);
  }
  for (int32_t o = 0; o < n; ++o)
    if (ws.pending[o] == 0) push_ready(o);

  // Releases one use of an op's input slot (the local tensor or the
  // transferred copy); a freed view releases its base in turn.
  auto release_slot = [&](int32_t slot) {
    for (;;) {
      const int32_t x = ws.slot_xfer[slot];
      if (x >= 0) {
        if (--ws.xfer_remaining[x] == 0 && mem) cur[ws.xfer_dst[x]] -= ctx.tensor_bytes[ws.xfer_tensor[x]];
        return;
      }
      const int32_t t = ctx.in_tensor[slot];
      if (--ws.local_uses[t] != 0) return;
      const int32_t p = ctx.tensor_op[t];
      if (ctx.resident[p]) return;
      if (mem) cur[dev[p]] -= ctx.alloc_bytes[t];
      slot = ctx.view_base[t];
      if (slot < 0) return;
    }
  };
  // Frees the producer's copy of tensor t.
  auto free_tensor = [&](int32_t t) {
    const int32_t p = ctx.tensor_op[t];
    if (ctx.resident[p]) return;
    if (mem) cur[dev[p]] -= ctx.alloc_bytes[t];
    if (ctx.view_base[t] >= 0) release_slot(ctx.view_base[t]);
  };
  auto release_tensor = [&](int32_t t) {
    if (--ws.local_uses[t] == 0) free_tensor(t);
  };

  // Contention: an op's duration depends on how many devices of its group
  // are busy; when that number changes, running ops are re-timed.
  const bool contention = costs.has_contention();
  if (contention) {
    ws.run_op.assign(D, -1);
    ws.frac.assign(D, 0.0);
    ws.dur.assign(D, 0.0);
    ws.last.assign(D, 0.0);
    ws.finish.assign(D, 0.0);
    ws.started.assign(D, 0.0);
    ws.group_size.assign(groups, 0);
    for (int32_t d = 0; d < D; ++d)
      if (group_of[d] >= 0) ++ws.group_size[group_of[d]];
    ws.group_busy.assign(groups, 0);
    ws.group_changed.assign(groups, 0);
  }
  auto duration_now = [&](int32_t o, int32_t d) {
    const double alone = item_seconds(o, d);
    const int32_t g = group_of[d];
    if (g < 0 || ws.group_size[g] < 2) return alone;
    const double share = static_cast<double>(ws.group_busy[g] - 1) / static_cast<double>(ws.group_size[g] - 1);
    const double contended =
        o >= 0 ? costs.contended_seconds(OpId(o), DeviceId(d)) : alone * costs.copy_contention(DeviceId(d));
    return alone + (contended - alone) * share;
  };

  int64_t transfer_bytes = 0;
  int32_t finished = 0;
  double now = 0.0;
  double makespan = 0.0;
  // Contention: ends the item running on d at `now`, or returns false for a
  // stale event (the item was re-timed after this event was queued).
  auto finish_item = [&](int32_t d, int32_t item) {
    if (!ws.running[d] || ws.run_op[d] != item || ws.finish[d] != now) return false;
    const double took = now - ws.started[d];
    if (item >= 0) ws.busy[d] += took;
    if (timeline) {
      std::string lane;
      std::string name = item_name(item, d, &lane);
      timeline->push_back(TimelineEvent{std::move(name), std::move(lane), ws.started[d], took, item_category(item)});
    }
    if (group_of[d] >= 0) {
      --ws.group_busy[group_of[d]];
      ws.group_changed[group_of[d]] = 1;
    }
    return true;
  };
  for (;;) {
    // Idle devices pick their lowest ready op.
    for (int32_t d = 0; d < D; ++d) {
      if (ws.running[d] || ws.ready[d].empty()) continue;
      auto& q = ws.ready[d];
      std::pop_heap(q.begin(), q.end(), std::greater<int32_t>());
      const int32_t o = q.back();
      q.pop_back();
      ws.running[d] = 1;
      if (o >= 0 && mem && !ctx.resident[o])
        for (int32_t t = ctx.out_begin[o]; t < ctx.out_begin[o + 1]; ++t) alloc(d, ctx.alloc_bytes[t]);
      if (contention) {
        // Timed below, once every device has picked its op.
        ws.run_op[d] = o;
        ws.frac[d] = 1.0;
        ws.dur[d] = 0.0;
        ws.last[d] = now;
        ws.started[d] = now;
        if (group_of[d] >= 0) {
          ++ws.group_busy[group_of[d]];
          ws.group_changed[group_of[d]] = 1;
        } else {
          ws.dur[d] = item_seconds(o, d);
          ws.finish[d] = now + ws.dur[d];
          push_event(ws.finish[d], event_id(o));
        }
        continue;
      }
      const double cost = item_seconds(o, d);
      if (o >= 0) ws.busy[d] += cost;
      if (timeline) {
        std::string lane;
        std::string name = item_name(o, d, &lane);
        timeline->push_back(TimelineEvent{std::move(name), std::move(lane), now, cost, item_category(o)});
      }
      push_event(now + cost, event_id(o));
    }
    if (contention) {
      // Re-time every running op of a group whose number of busy devices changed.
      for (int32_t d = 0; d < D; ++d) {
        const int32_t g = group_of[d];
        if (g < 0 || !ws.group_changed[g] || !ws.running[d]) continue;
        if (ws.dur[d] > 0) ws.frac[d] = std::max(0.0, ws.frac[d] - (now - ws.last[d]) / ws.dur[d]);
        ws.last[d] = now;
        ws.dur[d] = duration_now(ws.run_op[d], d);
        ws.finish[d] = now + ws.frac[d] * ws.dur[d];
        push_event(ws.finish[d], event_id(ws.run_op[d]));
      }
      std::fill(ws.group_changed.begin(), ws.group_changed.end(), 0);
    }
    if (ws.events.empty()) break;
    now = ws.events.front().time;
    while (!ws.events.empty() && ws.events.front().time == now) {
      std::pop_heap(ws.events.begin(), ws.events.end(), std::greater<Event>());
      const int32_t id = ws.events.back().id;
      ws.events.pop_back();
      if (id < n) {
        const int32_t o = id;
        const int32_t d = dev[o];
        if (contention && !finish_item(d, o)) continue;  // re-timed since: a stale event
        ws.running[d] = 0;
        ++finished;
        makespan = std::max(makespan, now);
        for (int32_t t = ctx.out_begin[o]; t < ctx.out_begin[o + 1]; ++t) {
          for (int32_t c = ctx.cons_begin[t]; c < ctx.cons_begin[t + 1]; ++c) {
            const int32_t co = ctx.cons_op[c];
            if (dev[co] == d && --ws.pending[co] == 0) push_ready(co);
          }
          for (int32_t x = ws.xfer_begin[t]; x < ws.xfer_begin[t + 1]; ++x) {
            const int32_t dst = ws.xfer_dst[x];
            const int64_t bytes = ctx.tensor_bytes[t];
            if (on_destination(d, dst)) {
              transfer_bytes += bytes;
              push_item(dst, kCopyItem + x);
              continue;
            }
            double& free_at = ws.chan_free[static_cast<size_t>(d) * D + dst];
            const double start = std::max(now, free_at);
            const double dur = costs.transfer_seconds(DeviceId(d), DeviceId(dst), bytes);
            free_at = start + dur;
            transfer_bytes += bytes;
            if (timeline) {
              const std::string lane = cluster.devices[d].name + "->" + cluster.devices[dst].name;
              const Op& op = graph.op(OpId(o));
              timeline->push_back(TimelineEvent{lane + " " + op.name + ":" + std::to_string(t - ctx.out_begin[o]), lane,
                                                start, dur, "transfer"});
            }
            push_event(start + dur, n + x);
          }
          if (ws.local_uses[t] == 0) free_tensor(t);  // nobody reads it
        }
        for (int32_t e = ctx.extra_begin[o]; e < ctx.extra_begin[o + 1]; ++e) {
          const int32_t h = ctx.extra_hold[e];
          if (h >= 0)
            release_tensor(h);
          else
            release_slot(~h);
        }
        for (int32_t s = ctx.in_begin[o]; s < ctx.in_begin[o + 1]; ++s) release_slot(s);
      } else {
        const int32_t x = id - n;
        const int32_t dst = ws.xfer_dst[x];
        const int32_t t = ws.xfer_tensor[x];
        if (on_destination(dev[ctx.tensor_op[t]], dst)) {  // the copy ran on dst itself
          if (contention && !finish_item(dst, kCopyItem + x)) continue;
          ws.running[dst] = 0;
        }
        if (mem) alloc(dst, ctx.tensor_bytes[t]);
        release_tensor(t);
        for (int32_t c = ctx.cons_begin[t]; c < ctx.cons_begin[t + 1]; ++c) {
          const int32_t co = ctx.cons_op[c];
          if (dev[co] == dst && --ws.pending[co] == 0) push_ready(co);
        }
      }
    }
  }
  PLACER_CHECK(finished == n, "simulation stalled: ", finished, " of ", n, " ops ran");

  StepResult result;
  result.step_s = makespan;
  result.samples_s = {makespan};
  result.transfer_bytes = transfer_bytes;
  result.devices.resize(D);
  double worst_ratio = 0.0;
  for (int32_t d = 0; d < D; ++d) {
    const Device& device = cluster.devices[d];
    result.devices[d].device = device.name;
    result.devices[d].busy_s = ws.busy[d];
    result.devices[d].peak_bytes = mem ? peak[d] : 0;
    if (mem && device.memory_bytes > 0 && peak[d] > device.memory_bytes) {
      const double ratio =
          static_cast<double>(peak[d] - device.memory_bytes) / static_cast<double>(device.memory_bytes);
      if (result.status != StepStatus::Oom || ratio > worst_ratio) {
        worst_ratio = ratio;
        result.status = StepStatus::Oom;
        result.oom_device = device.name;
        result.oom_needed_bytes = peak[d];
        result.oom_capacity_bytes = device.memory_bytes;
      }
    }
  }
  if (result.status == StepStatus::Oom)
    result.message = "out of memory on " + result.oom_device + ": peak " + std::to_string(result.oom_needed_bytes) +
                     " bytes, capacity " + std::to_string(result.oom_capacity_bytes) + " bytes (simulated)";
  return result;
}

StepResult simulate(const Graph& graph, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options, std::vector<TimelineEvent>* timeline) {
  const SimContext context(graph);
  return simulate(context, placement, cluster, costs, options, timeline);
}

}  // namespace placer
