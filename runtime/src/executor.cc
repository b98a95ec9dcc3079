// The executor: one thread per device runs its ready ops lowest id first (a
// pipelined mini-batch under 1F1B: as long as its micro-batch has a slot); one
// thread per directed device pair (a transfer channel) copies tensors that
// cross devices. Readiness is a per-op counter of input positions still
// missing; memory is a per-slot refcount (uses left) and per-device live bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "executor_step.h"
#include "internal.h"
#include "placer/graphs/error.h"

namespace placer {

// ------------------------------------------------------------ the executor

namespace {
// A device worker's queue item for a copy it makes itself: sorts before every op id.
constexpr int32_t kCopyItem = std::numeric_limits<int32_t>::min();

// PLACER_SPIN_US (default 1000): how long an idle executor or channel thread
// spins before it sleeps; 0 turns spinning off. A value that is not a number
// of microseconds in [0, 1e6] is reported and the default kept.
double spin_seconds() {
  constexpr double kDefault = 1000e-6;
  const char* env = std::getenv("PLACER_SPIN_US");
  if (!env) return kDefault;
  char* end = nullptr;
  const double us = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(us >= 0 && us <= 1e6)) {
    std::fprintf(stderr, "placer: PLACER_SPIN_US='%s' is not a number of microseconds in [0, 1000000]; using 1000\n",
                 env);
    return kDefault;
  }
  return us * 1e-6;
}
}  // namespace

// A step's state at its start: every slot empty with its uses to come, every
// op waiting for its inputs, each device holding its session's resident bytes.
Executor::Step::Step(Session& run_session, int32_t devices, bool traced)
    : plan(run_session.plan), session(&run_session), timeline(traced) {
  slots.assign(plan->slots.size(), at::Tensor());
  refs.reset(new std::atomic<int32_t>[plan->slots.size()]);
  for (size_t i = 0; i < plan->slots.size(); ++i) refs[i].store(plan->slots[i].refs, std::memory_order_relaxed);
  deps.reset(new std::atomic<int32_t>[plan->ops.size()]);
  for (size_t i = 0; i < plan->ops.size(); ++i) deps[i].store(plan->deps[i], std::memory_order_relaxed);
  states.resize(plan->states);
  live.reset(new std::atomic<int64_t>[devices]);
  peak.reset(new std::atomic<int64_t>[devices]);
  for (int32_t i = 0; i < devices; ++i) {
    live[i].store(run_session.persistent_bytes[i]);
    peak[i].store(run_session.persistent_bytes[i]);
  }
  resident_at_start = run_session.persistent_bytes;
  allocated_at_start.assign(devices, -1);
  busy.assign(devices, 0.0);
  std::vector<DeviceId> device_of(plan->ops.size());
  for (size_t i = 0; i < plan->ops.size(); ++i) device_of[i] = DeviceId(plan->ops[i].device);
  gate = MicrobatchGate(*plan->graph, device_of, devices);
}

Executor::Executor(std::vector<DeviceCtx> devices) : devices_(std::move(devices)), spin_s_(spin_seconds()) {
  const int32_t d = static_cast<int32_t>(devices_.size());
  auto add = [this](int32_t device, int32_t to, std::string lane) {
    auto& w = workers_.emplace_back(std::make_unique<Worker>());
    w->id = static_cast<int32_t>(workers_.size()) - 1;
    w->device = device;
    w->to = to;
    w->lane = std::move(lane);
  };
  for (int32_t i = 0; i < d; ++i) add(i, -1, devices_[i].lane);
  for (int32_t a = 0; a < d; ++a)  // a == b: never used, keeps indexing simple
    for (int32_t b = 0; b < d; ++b) add(a, b, devices_[a].lane + "->" + devices_[b].lane);
  for (auto& w : workers_)
    if (w->to < 0 || (w->to != w->device && !copies_on_destination(w->device, w->to)))
      w->thread = std::thread([this, p = w.get()] { worker_loop(p); });
}

Executor::~Executor() {
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lk(w->mu);
    w->stop = true;
    w->cv.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void Executor::worker_loop(Worker* w) {
  const DeviceCtx& dev = devices_[w->to >= 0 ? w->to : w->device];
  // A channel copies with one thread, pinned to its destination device's
  // cores: measured on cpu:2, a floating copy thread preempts whichever device
  // it lands on and makes steps 25% slower and less repeatable.
  enter_device_thread(dev, w->to >= 0 ? 1 : dev.threads);
  const double spin_s = spin_s_;
  for (;;) {
    int32_t item;
    Step* s;
    // Spin (yielding the core) a little before sleeping: waking a sleeping
    // thread costs tens of microseconds, and far more on a VM whose idle vCPU
    // halted, on every cross-device hand-off.
    if (spin_s > 0 && w->queued.load(std::memory_order_acquire) == 0) {
      const Clock::time_point until =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spin_s));
      while (w->queued.load(std::memory_order_acquire) == 0 && Clock::now() < until) std::this_thread::yield();
    }
    {
      std::unique_lock<std::mutex> lk(w->mu);
      w->cv.wait(lk, [this, w, &item] { return w->stop || take_item(*w, &item); });
      if (w->stop) return;
      w->queued.fetch_sub(1, std::memory_order_relaxed);
      s = current_;
    }
    if (!s->aborted.load(std::memory_order_relaxed)) {
      if (w->to >= 0) {
        run_transfer(*s, item);
      } else if (item < 0) {
        run_transfer(*s, item - kCopyItem);  // a copy this device makes itself
      } else if (setting_up_.load()) {
        run_guarded(*s, item, w->device, [&] { return make_persistent(*s, item, w->device); });
      } else {
        s->gate.started(item);
        run_op(*s, item, w->device);
        s->gate.finished(item);
      }
    }
    finish_item(*s);
  }
}

void Executor::push(int32_t worker, int32_t item) {
  current_->outstanding.fetch_add(1, std::memory_order_relaxed);
  Worker& w = *workers_[worker];
  {
    std::lock_guard<std::mutex> lk(w.mu);
    if (w.to >= 0)
      w.fifo.push_back(item);
    else
      w.queue.push(item);
    w.queued.fetch_add(1, std::memory_order_release);
  }
  w.cv.notify_one();
}

bool Executor::take_item(Worker& w, int32_t* item) {
  // An empty queue first, before current_ is read: a worker woken by a failed or timed-out step (its queue
  // empty) read current_ while the main thread cleared it and destroyed the Step. A queued item is
  // outstanding, so the step is alive, and current_ was published to this thread through w.mu by push().
  if (w.to >= 0) {  // a link: its copies leave in the order they were sent, as the simulator has them
    if (w.fifo.empty()) return false;
    *item = w.fifo.front();
    w.fifo.pop_front();
    return true;
  }
  if (w.queue.empty()) return false;
  const Step* s = current_;
  const bool gated = s && s->gate.active() && !s->aborted.load(std::memory_order_relaxed) && !setting_up_.load();
  bool found = false;
  while (!w.queue.empty() && !found) {
    const int32_t top = w.queue.top();
    w.queue.pop();
    found = !gated || top < 0 || s->gate.admits(top);
    if (found)
      *item = top;
    else
      w.held.push_back(top);
  }
  for (const int32_t held : w.held) w.queue.push(held);
  w.held.clear();
  return found;
}

void Executor::wake_workers() {
  for (auto& w : workers_) {
    { std::lock_guard<std::mutex> lk(w->mu); }
    w->cv.notify_all();
  }
}

void Executor::finish_item(Step& s) {
  // Under the lock: once the count reaches zero the step may be destroyed.
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    s.end = Clock::now();
    s.cv.notify_all();
  }
}

void Executor::fail(Step& s, StepStatus status, const std::string& message, int32_t oom_device, int64_t needed) {
  {
    std::lock_guard<std::mutex> lk(s.mu);
    if (s.outcome.status == StepStatus::Ok) {
      s.outcome.status = status;
      s.outcome.message = message;
      if (oom_device >= 0) {
        s.outcome.oom_device = devices_[oom_device].name;
        s.outcome.oom_needed = needed;
        s.outcome.oom_capacity = devices_[oom_device].capacity;
      }
    }
    s.aborted.store(true);
  }
  wake_workers();
}

int64_t Executor::held(Step& s, int32_t device) const {
  return s.live[device].load() + (s.session->beside_bytes.empty() ? 0 : s.session->beside_bytes[device]);
}

// Each step counted only its own session's bytes: 12 candidates of a 48 MiB mlp grew the RSS by 480 MiB, unchecked.
bool Executor::reserve(Step& s, int32_t device, int64_t bytes, const std::string& what) {
  if (bytes <= 0) return true;
  const int64_t now = s.live[device].fetch_add(bytes) + bytes;
  const int64_t beside = s.session->beside_bytes.empty() ? 0 : s.session->beside_bytes[device];
  const int64_t capacity = devices_[device].capacity;
  if (s.session->check_memory && capacity > 0 && now + beside > capacity) {
    s.live[device].fetch_sub(bytes);
    std::string message = "device " + devices_[device].name + " out of memory at " + what + ": needs " +
                          std::to_string(now + beside) + " bytes, capacity " + std::to_string(capacity);
    if (beside > 0)
      message += " (" + std::to_string(beside) +
                 " of them the params and inputs of the other placements measured with it, resident beside its "
                 "own: measure fewer placements at once)";
    fail_oom(s, device, message, now + beside);
    return false;
  }
  int64_t prev = s.peak[device].load(std::memory_order_relaxed);
  while (now > prev && !s.peak[device].compare_exchange_weak(prev, now)) {}
  return true;
}

void Executor::release(Step& s, int32_t slot) {
  const SlotPlan& sp = s.plan->slots[slot];
  if (sp.persistent) return;
  if (s.refs[slot].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  s.slots[slot] = at::Tensor();
  s.live[sp.device].fetch_sub(sp.bytes);
  if (sp.view_of >= 0) release(s, sp.view_of);
}

void Executor::publish(Step& s, int32_t slot) {
  const SlotPlan& sp = s.plan->slots[slot];
  if (!sp.persistent && sp.refs == 0) {  // nobody reads it
    s.refs[slot].store(1);
    release(s, slot);
    return;
  }
  for (int32_t t : sp.transfers) {
    const TransferPlan& tr = s.plan->transfers[t];
    const int32_t to = s.plan->slots[tr.dst].device;
    if (copies_on_destination(sp.device, to))
      push(to, kCopyItem + t);  // ahead of every op in that device's queue, oldest first
    else
      push(static_cast<int32_t>(devices_.size()) + tr.channel, t);
  }
  for (int32_t op : sp.waiters)
    if (s.deps[op].fetch_sub(1, std::memory_order_acq_rel) == 1) push(s.plan->ops[op].device, op);
}

namespace {

bool is_oom_message(const std::string& m) {
  return m.find("out of memory") != std::string::npos || m.find("can't allocate memory") != std::string::npos ||
         m.find("Tried to allocate") != std::string::npos;
}

// "op 'name' (type)", how the step's errors name an op.
std::string op_label(const Op& op) { return "op '" + op.name + "' (" + op.type + ")"; }

// Where a kernel's output differs from the graph's TensorSpec: its shape (the simulator's costs would be
// wrong), or its dtype (the byte accounting would be); empty when it matches.
std::string output_mismatch(const at::Tensor& t, const TensorSpec& spec) {
  if (!t.defined() || t.sizes() != at::IntArrayRef(spec.shape))
    return " has shape " + (t.defined() ? shape_string(t.sizes()) : std::string("<none>")) + ", the graph says " +
           shape_string(spec.shape);
  const std::optional<DType> dtype = to_dtype(t.scalar_type());
  if (dtype != spec.dtype)
    return std::string(" has dtype ") + (dtype ? dtype_name(*dtype) : c10::toString(t.scalar_type())) +
           ", the graph says " + dtype_name(spec.dtype);
  return std::string();
}

}  // namespace

void Executor::run_op(Step& s, int32_t id, int32_t device) {
  const Op& op = s.plan->graph->op(OpId(id));
  const OpPlan& p = s.plan->ops[id];
  if (!reserve(s, device, p.new_bytes, "op '" + op.name + "'")) return;

  std::vector<at::Tensor> in(p.in_slots.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = s.slots[p.in_slots[i]];
  std::vector<at::Tensor> out;
  const Clock::time_point t0 = Clock::now();
  if (!s.started.load(std::memory_order_relaxed) && !s.started.exchange(true)) s.first_op = t0;
  if (!run_guarded(s, id, device, [&] { return run_reps(s, id, device, in, out); })) return;
  const Clock::time_point t1 = Clock::now();
  if (!store_outputs(s, id, out)) return;
  record_cpu_op(s, id, device, t0, t1);
  for (int32_t slot : p.holds) release(s, slot);
  for (int32_t slot : p.release_slots) release(s, slot);
  for (int32_t slot : p.out_slots) publish(s, slot);
  s.ops_done.fetch_add(1, std::memory_order_relaxed);
}

bool Executor::run_guarded(Step& s, int32_t id, int32_t device, const std::function<bool()>& body) {
  const Op& op = s.plan->graph->op(OpId(id));
  const DeviceCtx& dev = devices_[device];
  try {
    return body();
  } catch (const c10::Error& e) {
    const std::string m = e.what_without_backtrace();
    if (is_oom_message(m))
      fail_oom(s, device, "device " + dev.name + " out of memory in op '" + op.name + "': " + m,
               held(s, device));  // the op's new bytes are in it already (reserved before it ran)
    else
      fail(s, StepStatus::Error, op_label(op) + " on " + dev.name + ": " + m);
  } catch (const std::bad_alloc&) {
    fail_oom(s, device, "device " + dev.name + " out of memory in op '" + op.name + "'", held(s, device));
  } catch (const std::exception& e) {
    fail(s, StepStatus::Error, op_label(op) + " on " + dev.name + ": " + e.what());
  }
  return false;
}

bool Executor::run_reps(Step& s, int32_t id, int32_t device, const std::vector<at::Tensor>& in,
                        std::vector<at::Tensor>& out) {
  Session& session = *s.session;
  const DeviceCtx& dev = devices_[device];
  const bool gpu = dev.kind == DeviceKind::Cuda;
  const int reps = std::max(1, session.profile_reps);
  for (int rep = 0; rep < reps; ++rep) {
    const Clock::time_point r0 = Clock::now();
    // A GPU op is only queued here: events on its stream time its kernels.
    if (gpu) op_begun(dev, id);
    if (!run_kernel(s, id, device, in, rep + 1 == reps, out)) return false;
    if (gpu) op_ended(dev, id);
    if (session.profile_reps > 0) {
      synchronize_device(dev);
      double begin = 0, end = 0;
      session.op_seconds[id].push_back(gpu && op_span(dev, id, begin, end) ? end - begin : seconds_since(r0));
    }
  }
  return true;
}

bool Executor::run_kernel(Step& s, int32_t id, int32_t device, const std::vector<at::Tensor>& in, bool last_rep,
                          std::vector<at::Tensor>& out) {
  const Op& op = s.plan->graph->op(OpId(id));
  const OpPlan& p = s.plan->ops[id];
  const c10::Device& torch_device = devices_[device].torch_device;
  switch (p.kind) {
    case OpKind::Input:
    case OpKind::Param:  // made in the set-up pass, before the step
      out = {s.session->persistent[id]};
      return true;
    case OpKind::Aten:
      out = p.backward >= 0 ? run_kept_forward(p, op, in, torch_device, s.states[p.state])
                            : call_op(*p.call, op, in, torch_device);
      return true;
    case OpKind::Backward:
      out = run_backward(op, s.plan->graph->op(op.forward), s.states[p.state], in, p.is_loss, !last_rep);
      if (last_rep) s.states[p.state] = ForwardState();
      return true;
    case OpKind::Sgd:
      run_sgd(op, in);
      out.assign(op.outputs.size(), in[0]);
      return true;
  }
  return true;
}

bool Executor::make_persistent(Step& s, int32_t id, int32_t device) {
  const Op& op = s.plan->graph->op(OpId(id));
  const int64_t bytes = s.plan->slots[s.plan->ops[id].out_slots[0]].bytes;
  if (!reserve(s, device, bytes, "op '" + op.name + "'")) return false;
  Session& session = *s.session;
  const c10::Device& to = devices_[device].torch_device;
  if (static_cast<size_t>(id) < session.initial.size() && session.initial[id].defined())
    session.persistent[id] = session.initial[id].to(to).clone();
  else
    session.persistent[id] =
        s.plan->ops[id].kind == OpKind::Input ? make_input(op, session.seed, to) : make_param(op, session.seed, to);
  session.persistent_bytes[device] += bytes;  // each device's worker its own entry
  return true;
}

// Made lazily by the first step's ops, they were on its clock (448.89 ms, then 28.52 ms: a 48 MiB mlp on cpu:2).
bool Executor::set_up(Step& s) {
  std::vector<int32_t> missing;
  for (int32_t i = 0; i < static_cast<int32_t>(s.plan->ops.size()); ++i) {
    const OpKind k = s.plan->ops[i].kind;
    if ((k == OpKind::Input || k == OpKind::Param) && !s.session->persistent[i].defined()) missing.push_back(i);
  }
  s.resident_at_start = s.session->persistent_bytes;
  if (missing.empty()) return true;  // every step after the session's first: nothing to hand the workers
  current_ = &s;
  setting_up_.store(true);
  run_items(s, missing, Clock::now(), 1e7);
  setting_up_.store(false);
  s.resident_at_start = s.session->persistent_bytes;
  return s.outcome.status == StepStatus::Ok;
}

StepOutcome Executor::prepare(Session& session) {
  Step s(session, static_cast<int32_t>(devices_.size()), false);
  StepOutcome out = set_up(s) ? StepOutcome{} : outcome_of(s, 0.0);
  current_ = nullptr;
  if (out.status == StepStatus::Ok) out.peak_bytes = session.persistent_bytes;
  return out;
}

bool Executor::store_outputs(Step& s, int32_t id, std::vector<at::Tensor>& out) {
  const Op& op = s.plan->graph->op(OpId(id));
  const OpPlan& p = s.plan->ops[id];
  if (out.size() < op.outputs.size()) {
    fail(s, StepStatus::Error,
         op_label(op) + " returned " + std::to_string(out.size()) + " tensors, the graph says " +
             std::to_string(op.outputs.size()));
    return false;
  }
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const std::string mismatch = output_mismatch(out[k], op.outputs[k]);
    if (!mismatch.empty()) {
      fail(s, StepStatus::Error, op_label(op) + " output " + std::to_string(k) + mismatch);
      return false;
    }
    s.slots[p.out_slots[k]] = std::move(out[k]);
  }
  return true;
}

void Executor::run_transfer(Step& s, int32_t t) {
  const TransferPlan& tr = s.plan->transfers[t];
  const SlotPlan& src = s.plan->slots[tr.src];
  const SlotPlan& dst = s.plan->slots[tr.dst];
  const Op& op = s.plan->graph->op(OpId(src.op));
  const std::string what = "transfer of '" + op.name + "' to " + devices_[dst.device].name;
  if (!reserve(s, dst.device, dst.bytes, what)) return;
  const Clock::time_point t0 = Clock::now();
  try {
    s.slots[tr.dst] = copy_to_device(s.slots[tr.src], devices_[src.device], devices_[dst.device]);
  } catch (const std::exception& e) {
    const std::string m = e.what();
    if (is_oom_message(m))  // the copy's bytes are in the live count already (reserved above)
      fail_oom(s, dst.device, what + ": " + m, held(s, dst.device));
    else
      fail(s, StepStatus::Error, what + ": " + m);
    return;
  }
  const Clock::time_point t1 = Clock::now();
  s.transfer_bytes.fetch_add(dst.bytes, std::memory_order_relaxed);
  if (s.timeline) {
    Worker& w = *workers_[devices_.size() + tr.channel];
    TimelineEvent ev;
    ev.name = op.name + (src.output ? ":" + std::to_string(src.output) : std::string());
    ev.lane = w.lane;
    ev.start_s = std::chrono::duration<double>(t0 - s.start).count();
    ev.duration_s = std::chrono::duration<double>(t1 - t0).count();
    ev.category = "transfer";
    w.events.push_back(std::move(ev));
  }
  release(s, tr.src);
  publish(s, tr.dst);
}

StepOutcome Executor::run_step(Session& session, double timeout_s, std::vector<TimelineEvent>* timeline) {
  Step s(session, static_cast<int32_t>(devices_.size()), timeline != nullptr);
  for (auto& w : workers_) w->events.clear();
  current_ = &s;
  if (set_up(s) && start_devices(s))  // the set-up pass untimed: the clock and the time limit start after it
    run_until_done(s, std::min(timeout_s, 1e7));  // 1e10 s overflowed the deadline: every step timed out
  else
    s.start = s.end = Clock::now();
  // The step's makespan: first op start to last op end (CUDA: to the end of
  // the queued work). The hand-offs with this measuring thread are left out:
  // on a loaded machine their scheduler latency is not the placement's.
  const bool cuda = synchronize_all(s);
  const Clock::time_point first = s.started.load() ? s.first_op : s.start;
  const double elapsed = std::chrono::duration<double>((cuda ? Clock::now() : s.end) - first).count();
  current_ = nullptr;
  // The deadline bounds the host threads; a GPU's threads only queue its kernels, which run on after them
  // (and cannot be stopped: the streams are drained above, as a running CPU op is waited for). A step whose
  // devices finished past the limit is a timeout all the same.
  if (s.outcome.status == StepStatus::Ok && elapsed > timeout_s)
    fail(s, StepStatus::Timeout,
         "step ran past the time limit of " + std::to_string(timeout_s) + " s (its devices finished after " +
             std::to_string(elapsed) + " s)");
  // A failed step has no op times to read (after an asynchronous kernel fault every CUDA call throws, and
  // run_step, which never throws for a failed step, threw out of measure).
  if (cuda && s.outcome.status == StepStatus::Ok) {
    try {
      gpu_times(s);
    } catch (const std::exception& e) {
      fail(s, StepStatus::Error, std::string("reading the GPU's op times: ") + e.what());
    }
  }
  StepOutcome out = outcome_of(s, elapsed);
  if (out.status == StepStatus::Ok && !session.retained.empty()) retain_values(s);
  if (timeline) collect_timeline(*timeline);
  return out;
}

bool Executor::start_devices(Step& s) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    try {
      s.allocated_at_start[i] = reset_peak(devices_[i]);
      step_begun(devices_[i]);
    } catch (const std::exception& e) {  // a CUDA context poisoned by an earlier step's fault: every call throws
      fail(s, StepStatus::Error, "device " + devices_[i].name + ": starting the step: " + e.what());
      return false;
    }
  }
  return true;
}

void Executor::run_until_done(Step& s, double timeout_s) {
  s.start = Clock::now();
  std::vector<int32_t> ready;
  for (int32_t i = 0; i < static_cast<int32_t>(s.plan->ops.size()); ++i)
    if (s.plan->deps[i] == 0) ready.push_back(i);
  run_items(s, ready, s.start, timeout_s);
}

void Executor::run_items(Step& s, const std::vector<int32_t>& items, Clock::time_point from, double timeout_s) {
  const auto deadline = from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  // Keep the count above zero while seeding so no worker sees "done" early.
  s.outstanding.fetch_add(1);
  for (int32_t op : items) push(s.plan->ops[op].device, op);
  finish_item(s);
  std::unique_lock<std::mutex> lk(s.mu);
  if (s.cv.wait_until(lk, deadline, [&] { return s.outstanding.load() == 0; })) return;
  if (s.outcome.status == StepStatus::Ok) {
    s.outcome.status = StepStatus::Timeout;
    s.outcome.message = "step ran past the time limit of " + std::to_string(timeout_s) + " s";
  }
  s.aborted.store(true);
  wake_workers();
  // Workers skip what is queued; an op already running finishes first.
  s.cv.wait(lk, [&] { return s.outstanding.load() == 0; });
}

bool Executor::synchronize_all(Step& s) {
  bool cuda = false;
  for (const DeviceCtx& dev : devices_) {
    try {
      synchronize_device(dev);
    } catch (const std::exception& e) {  // an asynchronous kernel failure surfaces here
      fail(s, StepStatus::Error, "device " + dev.name + ": " + e.what());
    }
    cuda = cuda || dev.kind == DeviceKind::Cuda;
  }
  return cuda;
}

StepOutcome Executor::outcome_of(Step& s, double elapsed) {
  const size_t ops = s.plan->ops.size();
  StepOutcome out = std::move(s.outcome);
  if (out.status == StepStatus::Ok && s.ops_done.load() != static_cast<int32_t>(ops))
    out = StepOutcome{StepStatus::Error, "executor stopped after " + std::to_string(s.ops_done.load()) + " of " +
                                             std::to_string(ops) + " ops"};
  out.step_s = elapsed;
  out.busy_s = s.busy;
  out.transfer_bytes = s.transfer_bytes.load();
  out.peak_bytes.resize(devices_.size());
  if (out.status != StepStatus::Ok) {  // the failed step's tensors go before the cache is emptied of them
    s.slots.clear();
    s.states.clear();
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    try {
      out.peak_bytes[i] = step_peak(s, i);
      if (out.status != StepStatus::Ok) release_cached_memory(devices_[i]);
    } catch (const std::exception&) {  // a CUDA context poisoned by the failure: own accounting
      out.peak_bytes[i] = s.peak[i].load();
    }
  }
  return out;
}

int64_t Executor::step_peak(const Step& s, size_t device) const {
  // A GPU that is the device's alone: what its allocator really held at its peak, less what it held when the
  // step began (other sessions' params and inputs, resident while candidates are measured interleaved), plus
  // this session's own resident bytes then. Elsewhere our own accounting.
  const int64_t real = allocator_peak(devices_[device]);
  const int64_t before = s.allocated_at_start[device];
  if (real < 0 || before < 0) return s.peak[device].load();
  return std::max<int64_t>(0, real - before) + s.resident_at_start[device];
}

void Executor::retain_values(Step& s) {
  const KernelPlan& plan = *s.plan;
  for (size_t i = 0; i < plan.slots.size(); ++i)
    if (s.slots[i].defined() && plan.ops[plan.slots[i].op].retain) s.session->retained[i] = s.slots[i];
}

}  // namespace placer
