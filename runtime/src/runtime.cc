// The Runtime API: measure, run_once and profile on top of the executor.
#include "placer/runtime/runtime.h"

#include <torch/csrc/api/include/torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "internal.h"
#include "placer/graphs/error.h"

namespace placer {

using namespace rt;

namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Session new_session(const Plan& plan, uint64_t seed, int devices) {
  Session s;
  s.plan = &plan;
  s.seed = seed;
  s.persistent.assign(plan.ops.size(), at::Tensor());
  s.persistent_bytes.assign(devices, 0);
  return s;
}

std::string signature_of(const Graph& graph, const Op& op) {
  std::string sig = op.type + "(";
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorSpec& t = graph.op(op.inputs[i].op).outputs[op.inputs[i].output];
    sig += (i ? "," : "") + std::string(dtype_name(t.dtype)) + shape_string(t.shape);
  }
  if (op.inputs.empty() && !op.outputs.empty())
    sig += std::string(dtype_name(op.outputs[0].dtype)) + shape_string(op.outputs[0].shape);
  return sig + ")";
}

std::string host_description() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return std::string(host) + ", LibTorch " + TORCH_VERSION + ", " + std::to_string(std::thread::hardware_concurrency()) +
         " cores";
}

}  // namespace

struct Runtime::Impl {
  Cluster cluster;
  Executor executor;
  std::mutex mu;  // one measurement at a time: the executor threads are shared
  Impl(Cluster c, std::vector<DeviceCtx> devices) : cluster(std::move(c)), executor(std::move(devices)) {}
};

Runtime::Runtime(Cluster cluster) {
  validate_cluster(cluster);
  auto devices = make_devices(cluster);
  impl_ = std::make_unique<Impl>(std::move(cluster), std::move(devices));
}

Runtime::~Runtime() = default;

const Cluster& Runtime::cluster() const { return impl_->cluster; }

StepResult Runtime::measure(const Graph& graph, const Placement& placement, const MeasureOptions& options,
                            std::vector<TimelineEvent>* timeline) {
  if (options.warmup_steps < 0) throw InputError("measure: warmup_steps must be >= 0");
  if (options.measured_steps < 1) throw InputError("measure: measured_steps must be >= 1");
  if (!(options.timeout_s > 0)) throw InputError("measure: timeout_s must be > 0");
  validate_placement(graph, impl_->cluster, placement);
  std::lock_guard<std::mutex> lk(impl_->mu);
  const int d = impl_->cluster.size();
  const Plan plan = make_plan(graph, placement, d, false);
  Session session = new_session(plan, options.seed, d);

  StepResult result;
  result.devices.resize(d);
  for (int i = 0; i < d; ++i) result.devices[i].device = impl_->cluster.devices[i].name;
  std::vector<std::vector<double>> busy(d);
  const int total = options.warmup_steps + options.measured_steps;
  for (int step = 0; step < total; ++step) {
    const bool last = step + 1 == total;
    std::vector<TimelineEvent> events;
    StepOutcome o = impl_->executor.run_step(session, options.timeout_s,
                                             (last && (options.timeline || timeline)) ? &events : nullptr);
    for (int i = 0; i < d; ++i)
      result.devices[i].peak_bytes = std::max(result.devices[i].peak_bytes, o.peak_bytes[i]);
    if (o.status != StepStatus::Ok) {
      result.status = o.status;
      result.message = o.message;
      result.oom_device = o.oom_device;
      result.oom_needed_bytes = o.oom_needed;
      result.oom_capacity_bytes = o.oom_capacity;
      result.transfer_bytes = o.transfer_bytes;
      return result;
    }
    if (step >= options.warmup_steps) {
      result.samples_s.push_back(o.step_s);
      for (int i = 0; i < d; ++i) busy[i].push_back(o.busy_s[i]);
      result.transfer_bytes = o.transfer_bytes;
    }
    if (last && timeline) *timeline = std::move(events);
  }
  result.step_s = quantile(result.samples_s, 0.5);
  result.iqr_s = quantile(result.samples_s, 0.75) - quantile(result.samples_s, 0.25);
  for (int i = 0; i < d; ++i) result.devices[i].busy_s = quantile(busy[i], 0.5);
  return result;
}

StepValues Runtime::run_once(const Graph& graph, const Placement& placement, uint64_t seed) {
  validate_placement(graph, impl_->cluster, placement);
  std::lock_guard<std::mutex> lk(impl_->mu);
  const int d = impl_->cluster.size();
  const Plan plan = make_plan(graph, placement, d, true);
  Session session = new_session(plan, seed, d);
  session.retained.assign(plan.slots.size(), at::Tensor());
  const StepOutcome o = impl_->executor.run_step(session, 1e9, nullptr);
  if (o.status != StepStatus::Ok)
    throw std::runtime_error(std::string("run_once: ") + step_status_name(o.status) + ": " + o.message);
  StepValues values;
  auto flat = [](const at::Tensor& t) {
    at::Tensor c = t.detach().to(at::kCPU).to(at::kFloat).contiguous().reshape({-1});
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const SlotPlan& sp = plan.slots[i];
    if (!session.retained[i].defined() || sp.device != plan.ops[sp.op].device) continue;
    const Op& op = graph.op(OpId(sp.op));
    const std::string key = op.outputs.size() == 1 ? op.name : op.name + ":" + std::to_string(sp.output);
    values.tensors[key] = flat(session.retained[i]);
  }
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (plan.ops[i].kind == OpKind::Param && session.persistent[i].defined())
      values.tensors[graph.op(OpId(static_cast<int32_t>(i))).name] = flat(session.persistent[i]);
  return values;
}

Profile Runtime::profile(const Graph& graph, const ProfileOptions& options) {
  if (options.repetitions < 1) throw InputError("profile: repetitions must be >= 1");
  for (int64_t b : options.transfer_sizes)
    if (b < 4 || b > (int64_t{1} << 34)) throw InputError("profile: transfer size " + std::to_string(b) + " out of range");
  std::lock_guard<std::mutex> lk(impl_->mu);
  const Cluster& cluster = impl_->cluster;
  const auto& devices = impl_->executor.devices();
  const int d = cluster.size();
  Profile prof;
  prof.graph = graph.name;
  prof.devices = cluster.name;
  prof.host = host_description();

  // Each op in isolation (repeated on its real inputs) on the first device of each kind.
  std::vector<bool> kind_done(2, false);
  for (int dev = 0; dev < d; ++dev) {
    const int kind = static_cast<int>(cluster.devices[dev].kind);
    if (kind_done[kind]) continue;
    kind_done[kind] = true;
    const Placement placement = single_device(graph, DeviceId(dev));
    const Plan plan = make_plan(graph, placement, d, false);
    Session session = new_session(plan, 0, d);
    session.check_memory = false;
    session.profile_reps = options.repetitions;
    session.op_seconds.resize(plan.ops.size());
    const StepOutcome o = impl_->executor.run_step(session, 1e9, nullptr);
    if (o.status != StepStatus::Ok)
      throw std::runtime_error(std::string("profile on ") + cluster.devices[dev].name + ": " + step_status_name(o.status) +
                               ": " + o.message);
    for (int32_t i = 0; i < graph.size(); ++i) {
      const Op& op = graph.op(OpId(i));
      OpTiming t;
      t.op = op.name;
      t.signature = signature_of(graph, op);
      t.device = cluster.devices[dev].name;
      t.device_kind = device_kind_name(cluster.devices[dev].kind);
      t.seconds = quantile(session.op_seconds[i], 0.5);
      prof.ops.push_back(std::move(t));
    }
  }

  // Links: copies as a transfer channel makes them, on a thread set up like one.
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b) {
      if (a == b) continue;
      LinkFit fit;
      fit.from = cluster.devices[a].name;
      fit.to = cluster.devices[b].name;
      std::string error;
      std::thread worker([&] {
        try {
          enter_device_thread(devices[b], 1);
          for (int64_t bytes : options.transfer_sizes) {
            at::Tensor src = at::ones({std::max<int64_t>(1, bytes / 4)}, at::TensorOptions().dtype(at::kFloat))
                                 .to(devices[a].torch_device);
            synchronize_device(devices[a]);
            copy_to_device(src, devices[a], devices[b]);  // warm-up
            synchronize_device(devices[b]);
            std::vector<double> samples;
            for (int r = 0; r < options.repetitions; ++r) {
              const Clock::time_point t0 = Clock::now();
              at::Tensor dst = copy_to_device(src, devices[a], devices[b]);
              synchronize_device(devices[b]);
              samples.push_back(seconds_since(t0));
            }
            fit.samples.emplace_back(bytes, quantile(samples, 0.5));
          }
        } catch (const std::exception& e) {
          error = e.what();
        }
      });
      worker.join();
      if (!error.empty()) throw std::runtime_error("profile link " + fit.from + "->" + fit.to + ": " + error);
      // Least squares t = alpha + bytes / beta.
      double mx = 0, my = 0;
      for (auto& [x, y] : fit.samples) {
        mx += static_cast<double>(x);
        my += y;
      }
      const double n = static_cast<double>(fit.samples.size());
      mx /= n;
      my /= n;
      double sxy = 0, sxx = 0;
      for (auto& [x, y] : fit.samples) {
        sxy += (static_cast<double>(x) - mx) * (y - my);
        sxx += (static_cast<double>(x) - mx) * (static_cast<double>(x) - mx);
      }
      const double slope = sxx > 0 ? sxy / sxx : 0.0;
      fit.beta_Bps = slope > 0 ? 1.0 / slope : 1e15;
      fit.alpha_s = std::max(0.0, my - slope * mx);
      prof.links.push_back(std::move(fit));
    }

  // Executor overhead per op: a chain of tiny adds, run by the executor,
  // minus the same kernels timed in isolation.
  {
    Graph chain;
    chain.name = "overhead_chain";
    Op in;
    in.name = "x";
    in.type = op_types::kInput;
    in.outputs = {TensorSpec{{16}, DType::Float32}};
    chain.add_op(in);
    const int kOps = 200;
    for (int i = 0; i < kOps; ++i) {
      Op add;
      add.name = "add" + std::to_string(i);
      add.type = "aten::add.Tensor";
      add.inputs = {TensorRef{OpId(i), 0}, TensorRef{OpId(0), 0}};
      add.args = {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)};
      add.outputs = {TensorSpec{{16}, DType::Float32}};
      chain.add_op(add);
    }
    const Plan plan = make_plan(chain, single_device(chain, DeviceId(0)), d, false);
    Session iso = new_session(plan, 0, d);
    iso.check_memory = false;
    iso.profile_reps = std::max(5, options.repetitions);
    iso.op_seconds.resize(plan.ops.size());
    impl_->executor.run_step(iso, 1e9, nullptr);
    double kernels = 0;
    for (int i = 1; i <= kOps; ++i) kernels += quantile(iso.op_seconds[i], 0.5);
    Session run = new_session(plan, 0, d);
    std::vector<double> steps;
    for (int r = 0; r < 7; ++r) steps.push_back(impl_->executor.run_step(run, 1e9, nullptr).step_s);
    prof.per_op_overhead_s = std::max(0.0, (quantile(steps, 0.5) - kernels) / kOps);
  }
  return prof;
}

bool cuda_available() { return cuda_runtime_available(); }
int cuda_device_count() { return cuda_runtime_device_count(); }

}  // namespace placer
