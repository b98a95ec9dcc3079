// The Runtime API: run_once and profile (profile.cc) on top of the executor; measure is in measure.cc.
#include "placer/runtime/runtime.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "internal.h"
#include "placer/graphs/error.h"

namespace placer {

Session new_session(const KernelPlan& plan, uint64_t seed, int devices) {
  Session s;
  s.plan = &plan;
  s.seed = seed;
  s.persistent.assign(plan.ops.size(), at::Tensor());
  s.persistent_bytes.assign(devices, 0);
  return s;
}

// How the host's memory is handed to steps decides much of a CPU step's time
// on a VM, where a page fault or a TLB miss walks two page tables
// (bench/results/measure_noise.md, allocator_cpu2.md; nmt on cpu:2):
// - The malloc: tcmalloc where the build links it (CMakeLists.txt). With
//   glibc's, every executor thread but the main one allocates from an arena of
//   its own, whose heaps grow and shrink with the steps: nmt's single-device
//   placement took 24-31% longer on cpu:1 than on cpu:0, by an amount that
//   depended on which placements ran before it.
// - Without tcmalloc, glibc's malloc would give memory back to the kernel as a
//   step frees it (the top of a heap past 128 KiB is trimmed; blocks over a
//   threshold that adapts to the process's history are mmapped and unmapped
//   each time), so every step page-faults its activations in again. Kept: no
//   trim, a fixed 32 MiB mmap threshold.
// - 4 KiB pages: LibTorch's CPU allocator asks for transparent huge pages for
//   tensors of 2 MiB or more when THP_MEM_ALLOC_ENABLE is set; it reads the
//   variable once, at its first allocation, so main() calls this first.
// PLACER_MALLOC=system, or the user's own MALLOC_TRIM_THRESHOLD_ /
// MALLOC_MMAP_THRESHOLD_ / THP_MEM_ALLOC_ENABLE, keeps those defaults.
void configure_host_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* mode = std::getenv("PLACER_MALLOC");
    if (mode && std::string(mode) == "system") return;
    setenv("THP_MEM_ALLOC_ENABLE", "1", /*overwrite=*/0);
    if (std::string(host_malloc()) != "glibc") return;
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_MMAP_THRESHOLD_")) return;
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  });
}

// tcmalloc's malloc is an alias of its tc_malloc: the process runs on it when
// the first malloc of the global scope is that one (tcmalloc linked, or
// preloaded; a preloaded libc.so.6 puts glibc's first again).
const char* host_malloc() {
  static const char* name = [] {
    void* tc = dlsym(RTLD_DEFAULT, "tc_malloc");
    return tc != nullptr && dlsym(RTLD_DEFAULT, "malloc") == tc ? "tcmalloc" : "glibc";
  }();
  return name;
}

Runtime::Runtime(Cluster cluster) {
  validate_cluster(cluster);
  configure_host_memory();
  auto devices = make_devices(cluster);
  impl_ = std::make_unique<Impl>(std::move(cluster), std::move(devices));
}

Runtime::~Runtime() = default;

const Cluster& Runtime::cluster() const { return impl_->cluster; }

StepValues Runtime::run_once(const Graph& graph, const Placement& placement, uint64_t seed, const StepValues* feed) {
  validate_placement(graph, impl_->cluster, placement);
  std::lock_guard<std::mutex> lk(impl_->mu);
  const int d = impl_->cluster.size();
  const KernelPlan plan = make_plan(graph, placement, d, true);
  Session session = new_session(plan, seed, d);
  if (feed) {
    session.initial.assign(plan.ops.size(), at::Tensor());
    for (const auto& [name, values] : feed->tensors) {
      const auto id = graph.find(name);
      if (!id) throw InputError("run_once: the values given name op '" + name + "', which the graph lacks");
      const Op& op = graph.op(*id);
      const OpKind kind = plan.ops[id->value].kind;
      if (kind != OpKind::Input && kind != OpKind::Param)
        throw InputError("run_once: op '" + name + "' is not an input or parameter; its value cannot be given");
      const TensorSpec& spec = op.outputs.at(0);
      if (static_cast<int64_t>(values.size()) != spec.numel())
        throw InputError(detail::concat("run_once: op '", name, "' has ", spec.numel(), " elements; ", values.size(),
                                        " values given"));
      session.initial[id->value] = at::tensor(values, at::kFloat).reshape(spec.shape).to(to_scalar_type(spec.dtype));
    }
  }
  session.retained.assign(plan.slots.size(), at::Tensor());
  const StepOutcome o = impl_->executor.run_step(session, 1e9, nullptr);
  StepValues values;
  if (o.status != StepStatus::Ok) {
    values.status = o.status;
    values.message = "run_once: " + o.message;
    return values;
  }
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
  std::lock_guard<std::mutex> lk(impl_->mu);
  return profile_graph(impl_->executor, impl_->cluster, graph, options);
}

bool cuda_available() { return cuda_runtime_available(); }
int cuda_device_count() { return cuda_runtime_device_count(); }

}  // namespace placer
