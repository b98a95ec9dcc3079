// Private to the runtime: the pieces runtime.cc wires together.
//   devices.cc   DeviceCtx (a torch device, its stream and thread share), copies
//   kernels.cc   OpCall: one graph op turned into a dispatcher call
//   plan.cc      KernelPlan: the shared execution rules (graphs/exec_plan.h) plus kernels and autograd state
//   executor.cc  Executor (threads, steps)
//   probe.cc     the cross-core probe (runtime.h: cache_line_round_trip_s)
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "placer/graphs/aten_dtype.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/stats.h"
#include "placer/graphs/timing.h"
#include "placer/runtime/runtime.h"

#ifdef PLACER_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace placer {

// ---------------------------------------------------------------- devices.cc

#ifdef PLACER_WITH_CUDA
// A pair of timing events around one op's kernels on its device's stream.
struct OpEvents {
  at::cuda::CUDAEvent begin{cudaEventDefault};
  at::cuda::CUDAEvent end{cudaEventDefault};
  bool recorded = false;
};
#endif

struct DeviceCtx {
  int index = 0;     // in the cluster
  std::string name;  // "cpu:1", "cuda:0"
  std::string lane;  // trace lane: the name, plus "(virtual, on cuda:0)" for a virtual GPU
  DeviceKind kind = DeviceKind::Cpu;
  c10::Device torch_device{c10::kCPU};
  int threads = 1;         // intra-op threads of its executor
  std::vector<int> cores;  // CPU devices: the cores its executor thread is pinned to (empty = not pinned)
  int64_t capacity = 0;    // Device::memory_bytes
#ifdef PLACER_WITH_CUDA
  std::optional<c10::cuda::CUDAStream> stream;       // compute
  std::optional<c10::cuda::CUDAStream> copy_stream;  // incoming transfers
  bool shares_gpu = false;                           // another device of the cluster is the same physical GPU
  // Per op id: its timing events on this device (touched by this device's
  // worker during a step, read by the measuring thread after it).
  std::shared_ptr<std::vector<OpEvents>> op_events = std::make_shared<std::vector<OpEvents>>();
  std::shared_ptr<at::cuda::CUDAEvent> step_begin = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);
#endif
};

// Builds the contexts; throws InputError for a device this build or machine
// cannot run (cuda without PLACER_CUDA, a GPU index the machine lacks).
std::vector<DeviceCtx> make_devices(const Cluster& cluster);
// The cores this thread may run on (its affinity mask: taskset, a container's cpuset), which CPU devices'
// intra-op threads are sized from; not the machine's (hardware_concurrency counts every online CPU: cpu:2
// under `taskset -c 0,1` on 8 cores gave each device 4 threads on its one core).
int usable_cores();

// Called first thing on every executor/channel thread: gives the thread its
// own intra-op thread count (OpenMP's is per thread), pins it to the device's
// cores (cpu:N) and, on CUDA devices, makes the device's stream current.
void enter_device_thread(const DeviceCtx& device, int threads);

// Copies `src` (produced on `from`) to `to`, as the transfer channel does:
// a real copy even between two CPU devices so each device owns its memory.
// On CUDA the copy waits for `ready` (the producer's event) and records
// `done` on the destination side for the consumers.
at::Tensor copy_to_device(const at::Tensor& src, const DeviceCtx& from, const DeviceCtx& to);

// Waits until all work queued on the device is done (CUDA: its streams).
// Throws c10::Error for an asynchronous kernel failure.
void synchronize_device(const DeviceCtx& device);

// GPU-side timing of the ops of a step (no-ops on CPU devices and in builds
// without CUDA). step_begun() marks the step's start on the device stream;
// op_begun()/op_ended() put events around one op's kernels; after the step
// is synchronized, op_span() gives that op's [start, end) in seconds since
// the step's start mark, and clears it (false if it was not recorded).
void step_begun(const DeviceCtx& device);
void op_begun(const DeviceCtx& device, int32_t op);
void op_ended(const DeviceCtx& device, int32_t op);
bool op_span(const DeviceCtx& device, int32_t op, double& start_s, double& end_s);

// Memory the device's allocator really used at its peak since reset_peak()
// (CUDA devices that are the only user of their GPU), or -1 where only our
// own accounting knows (CPU devices, virtual GPUs). reset_peak returns what the
// allocator holds at the reset (every session's tensors on that GPU), or -1 there.
int64_t reset_peak(const DeviceCtx& device);
int64_t allocator_peak(const DeviceCtx& device);
// After a failed step: give cached GPU blocks back so the next step starts clean.
void release_cached_memory(const DeviceCtx& device);

bool cuda_runtime_available();
int cuda_runtime_device_count();

// ---------------------------------------------------------------- kernels.cc

enum class OpKind : uint8_t { Input, Param, Backward, Sgd, Aten };

// How one schema argument is filled at call time.
struct ArgSlot {
  enum class From : uint8_t { Constant, Tensor, TensorList, OptionalTensorList, Device };
  From from = From::Constant;
  int64_t input = -1;           // Tensor: index into Op::inputs
  std::vector<int64_t> inputs;  // TensorList: indices (-1 = None)
  bool cloned = false;          // the kernel writes this tensor: pass a private copy
};

// A graph op bound to its ATen kernel. Built once per op type and arguments.
struct OpCall {
  std::optional<c10::OperatorHandle> handle;
  std::vector<c10::IValue> constants;  // one per schema argument (placeholders for tensors)
  std::vector<ArgSlot> slots;
};

// Resolves the schema by Op::type and checks/converts the arguments. Throws
// GraphError naming the op for an unknown type or unusable arguments.
OpCall bind_op(const Op& op);

// Runs the kernel. `inputs` are the op's input tensors on its device.
std::vector<at::Tensor> call_op(const OpCall& call, const Op& op, const std::vector<at::Tensor>& inputs,
                                const c10::Device& device);

// Seeded creation of placer::input / placer::param values (on the CPU with a
// per-op generator, then moved: identical values on every device).
at::Tensor make_input(const Op& op, uint64_t seed, const c10::Device& device);
at::Tensor make_param(const Op& op, uint64_t seed, const c10::Device& device);

// Autograd state a forward op keeps for its placer::backward op.
struct ForwardState {
  std::vector<at::Tensor> leaves;   // per Op::inputs index (undefined if not differentiated)
  std::vector<at::Tensor> outputs;  // forward outputs, attached to the graph
};

// Gradient of one forward op (see op_types::kBackward).
std::vector<at::Tensor> run_backward(const Op& backward, const Op& forward, ForwardState& state,
                                     const std::vector<at::Tensor>& inputs, bool is_loss, bool retain_graph);

// The gradients of `leaves` from `outs` seeded with `grads`, by running their
// autograd nodes in this thread (local_backward.cc); what
// torch::autograd::grad(outs, leaves, grads, retain_graph, false, true) returns.
std::vector<at::Tensor> grad_in_this_thread(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& grads,
                                            const std::vector<at::Tensor>& leaves, bool retain_graph);

void run_sgd(const Op& sgd, const std::vector<at::Tensor>& inputs);

std::string shape_string(at::IntArrayRef sizes);
std::string shape_string(const std::vector<int64_t>& sizes);

// ---------------------------------------------------------------- plan.cc, executor.cc

// Where a tensor lives during a step: one output of one op on one device.
struct SlotPlan {
  int32_t op = -1;
  int32_t output = 0;
  int32_t device = 0;
  int64_t bytes = 0;               // accounted on `device` while live (0 for views)
  int32_t refs = 0;                // uses before it is freed
  bool persistent = false;         // params and inputs: kept across steps
  int32_t view_of = -1;            // slot whose storage it shares (released with it)
  std::vector<int32_t> waiters;    // ops on `device` reading it, one per input position
  std::vector<int32_t> transfers;  // transfers that copy it out
};

struct TransferPlan {
  int32_t src = -1;
  int32_t dst = -1;
  int32_t channel = -1;  // from * devices + to
};

struct OpPlan {
  OpKind kind = OpKind::Aten;
  int32_t device = 0;
  const OpCall* call = nullptr;
  std::vector<int32_t> in_slots;     // per Op::inputs position
  // Each input slot once (an op reading one tensor at two positions, mul(r, r), is one use of it, as the
  // plan counts uses: released per position, r was freed while a later op still needed it).
  std::vector<int32_t> release_slots;
  std::vector<int32_t> out_slots;    // per output
  int64_t new_bytes = 0;             // reserved before it runs
  int32_t backward = -1;             // forward op: its placer::backward op
  std::vector<int32_t> leaf_inputs;  // forward op: Op::inputs positions to differentiate
  int32_t state = -1;                // forward op with backward (and that backward): ForwardState index
  bool is_loss = false;              // backward op of the loss: seeds ones
  std::vector<int32_t> holds;        // backward op: slots its forward kept alive for it
  bool retain = false;               // run_once: keep the outputs for StepValues
};

// A forward op whose placer::backward runs later: its kernel runs under
// autograd on detached leaves, `state` keeps the leaves and the attached
// outputs, and the step gets the outputs detached (kernels.cc).
std::vector<at::Tensor> run_kept_forward(const OpPlan& p, const Op& op, const std::vector<at::Tensor>& in,
                                         const c10::Device& device, ForwardState& state);

struct KernelPlan {
  const Graph* graph = nullptr;
  std::vector<std::unique_ptr<OpCall>> calls;  // per op (Aten ops only)
  std::vector<OpPlan> ops;
  std::vector<SlotPlan> slots;
  std::vector<TransferPlan> transfers;
  std::vector<int32_t> deps;  // per op: input positions to wait for
  int32_t states = 0;
  int32_t devices = 0;
};

// Binds every op to its kernel and lays out slots, refcounts and transfers.
// Throws GraphError naming an op the runtime cannot execute.
KernelPlan make_plan(const Graph& graph, const Placement& placement, int32_t devices, bool retain_sinks);

struct StepOutcome {
  StepStatus status = StepStatus::Ok;
  std::string message;
  double step_s = 0.0;
  std::vector<double> busy_s;       // per device
  std::vector<int64_t> peak_bytes;  // per device
  int64_t transfer_bytes = 0;
  std::string oom_device;
  int64_t oom_needed = 0;
  int64_t oom_capacity = 0;
};

// What survives from step to step while one plan is measured: params,
// inputs and the bytes they hold.
struct Session {
  const KernelPlan* plan = nullptr;
  uint64_t seed = 0;
  std::vector<at::Tensor> persistent;     // per op (params, inputs)
  std::vector<at::Tensor> initial;        // run_once: given values of inputs/params (CPU), per op; else drawn
  std::vector<int64_t> persistent_bytes;  // per device
  // Per device (empty: none): other sessions' params and inputs, resident beside this one's (placements measured
  // together), counted with this session's bytes against the device's capacity.
  std::vector<int64_t> beside_bytes;
  bool check_memory = true;
  int profile_reps = 0;                         // > 0: each op's kernel runs this often, timed
  std::vector<std::vector<double>> op_seconds;  // profile: per op samples
  // When sized to the plan's ops: each op's time in the last step, as it ran
  // there (caches, allocator and neighbours as in a real step).
  std::vector<double> step_op_seconds;
  std::vector<at::Tensor> retained;  // per slot, when the plan retains it
};

// A session for one plan: no values yet, nothing resident.
Session new_session(const KernelPlan& plan, uint64_t seed, int devices);

class Executor {
 public:
  explicit Executor(std::vector<DeviceCtx> devices);
  ~Executor();
  const std::vector<DeviceCtx>& devices() const { return devices_; }
  double spin_s() const { return spin_s_; }  // how long an idle worker spins before it sleeps
  // A copy between two CPU devices is made by the destination's own executor
  // thread, ahead of its queued ops (a memcpy needs a core, and the
  // destination's is the one that waits for it); other pairs use the link's
  // channel thread. The simulator follows the same rule, and also charges a
  // CPU<->GPU copy to its destination where the profile fitted a cost per such
  // copy (CostModel::cross_copies_on_destination: what it costs, not how).
  bool copies_on_destination(int32_t from, int32_t to) const {
    return devices_[from].kind == DeviceKind::Cpu && devices_[to].kind == DeviceKind::Cpu;
  }

  // One step; never throws for execution failures (they are the outcome). It begins with the set-up pass
  // (prepare), outside its time and its time limit.
  StepOutcome run_step(Session& session, double timeout_s, std::vector<TimelineEvent>* timeline);
  // The set-up pass: the session's params and inputs not made yet, each made (given or drawn) by its device's
  // worker and its bytes reserved, untimed. Ok (peak_bytes: what the session holds), or the failure a step would
  // report (out of memory at that op).
  StepOutcome prepare(Session& session);

 private:
  struct Worker;
  struct Step;
  void worker_loop(Worker* w);
  void push(int32_t worker, int32_t item);
  // One op, as named steps: its inputs, its kernel (run_guarded: a kernel's
  // exception becomes the step's outcome; run_reps: repeated and timed when
  // profiling; run_kernel: one run by op kind), its outputs checked and stored,
  // its time recorded, then its inputs released and its outputs published.
  // The bool steps return false when the step failed there.
  void run_op(Step& s, int32_t op, int32_t device);
  bool run_guarded(Step& s, int32_t op, int32_t device, const std::function<bool()>& body);
  bool run_reps(Step& s, int32_t op, int32_t device, const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out);
  bool run_kernel(Step& s, int32_t op, int32_t device, const std::vector<at::Tensor>& in, bool last_rep,
                  std::vector<at::Tensor>& out);
  // placer::input / placer::param in the set-up pass: the session's value made (given or drawn) and its
  // memory reserved. set_up runs the pass on a step's workers; false when it failed.
  bool make_persistent(Step& s, int32_t op, int32_t device);
  bool set_up(Step& s);
  bool store_outputs(Step& s, int32_t op, std::vector<at::Tensor>& out);
  // A CPU op's busy time, per-op time and trace span (GPU ops: gpu_times()).
  void record_cpu_op(Step& s, int32_t op, int32_t device, Clock::time_point t0, Clock::time_point t1);
  void run_transfer(Step& s, int32_t transfer);
  void publish(Step& s, int32_t slot);
  void release(Step& s, int32_t slot);
  bool reserve(Step& s, int32_t device, int64_t bytes, const std::string& what);
  // What the device holds now: the step's live bytes and the sessions' resident beside it.
  int64_t held(Step& s, int32_t device) const;
  // The step's first failure, if it is this one (out of memory: on `oom_device`, needing `needed` bytes).
  void fail(Step& s, StepStatus status, const std::string& message, int32_t oom_device = -1, int64_t needed = 0);
  void fail_oom(Step& s, int32_t device, const std::string& message, int64_t needed) {
    fail(s, StepStatus::Oom, message, device, needed);
  }
  void finish_item(Step& s);
  // Takes a worker's lowest queued item it may run now (false: none; the
  // queue is left as it was): 1F1B holds a micro-batch back until its device
  // has a slot (graphs/pipeline.h); an aborted step runs nothing, so it holds
  // nothing back. Called under the worker's lock. wake_workers lets
  // held-back workers see an abort.
  bool take_item(Worker& w, int32_t* item);
  void wake_workers();
  // run_step's named steps: the set-up pass, the devices started, then (the clock started) seed the ready ops
  // and wait for the last item (or the time limit), synchronize the devices (true if one is a GPU), the
  // outcome, the values run_once keeps, the trace.
  void run_until_done(Step& s, double timeout_s);
  // Queues `items` (op ids) on their devices' workers and waits for the last to finish, or until `timeout_s`
  // after `from` (then a timeout: the workers skip what is queued; an op already running finishes first).
  void run_items(Step& s, const std::vector<int32_t>& items, Clock::time_point from, double timeout_s);
  // Resets each device's allocator peak and marks the step's start on its stream; false (the step failed,
  // naming the device) when a device refuses, as a CUDA context poisoned by an earlier fault does.
  bool start_devices(Step& s);
  // A device's peak bytes in this step: its allocator's own (this step's, not the other sessions' resident
  // tensors) where it has one to itself, else our accounting.
  int64_t step_peak(const Step& s, size_t device) const;
  bool synchronize_all(Step& s);
  StepOutcome outcome_of(Step& s, double elapsed);
  void retain_values(Step& s);
  void collect_timeline(std::vector<TimelineEvent>& timeline);
  void gpu_times(Step& s);  // after synchronization: GPU ops' event times

  std::vector<DeviceCtx> devices_;
  double spin_s_ = 0.0;                           // how long an idle worker spins before it sleeps (PLACER_SPIN_US)
  std::vector<std::unique_ptr<Worker>> workers_;  // devices first, then channels
  Step* current_ = nullptr;
  std::atomic<bool> setting_up_{false};  // the workers' items are set-up pass items (set_up)
};

// ---------------------------------------------------------------- runtime.cc

struct Runtime::Impl {
  Cluster cluster;
  Executor executor;
  std::mutex mu;  // one measurement at a time: the executor threads are shared
  Impl(Cluster c, std::vector<DeviceCtx> devices) : cluster(std::move(c)), executor(std::move(devices)) {}
};

// ---------------------------------------------------------------- profile.cc

// The cross-core probe (probe.cc) on this executor's cores: one reading between
// the first cores of the first two pinned CPU devices, taken once the executor's
// idle threads there have stopped spinning; -1 with fewer than two such devices.
double read_core_probe(const Executor& ex);
// Those two cores; empty with fewer than two pinned CPU devices.
std::vector<int> probe_cores(const Executor& ex);

// Runtime::profile on the runtime's executor (one measurement at a time: the
// caller holds its lock). Throws InputError when a profiling step fails.
Profile profile_graph(Executor& executor, const Cluster& cluster, const Graph& graph, const ProfileOptions& options);
// The measurement protocol's steps (warm-up, shuffled interleaved rounds, the
// adaptive stop) on an executor the caller holds; inputs not checked.
// Runtime::measure and measure_interleaved check and lock, then call it; the
// profile calls it for the steps it compares with the simulator.
std::vector<StepResult> protocol_steps(Executor& ex, const Cluster& cluster, const Graph& graph,
                                       const std::vector<Placement>& placements, const MeasureOptions& o,
                                       const std::vector<std::vector<double>>* prior = nullptr,
                                       std::vector<TimelineEvent>* trace = nullptr);

}  // namespace placer
