// Devices: torch devices, per-thread core shares, streams and copies.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "internal.h"
#include "placer/graphs/error.h"

#include <torch/csrc/api/include/torch/version.h>

#include "placer/runtime/runtime.h"

#ifdef PLACER_WITH_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace placer {

namespace {

int parse_cuda_index(const Device& d) {
  const std::string& phys = d.physical.empty() ? d.name : d.physical;
  const size_t colon = phys.find(':');
  if (phys.rfind("cuda", 0) != 0)
    throw InputError("devices: '" + d.name + "' is a CUDA device with physical '" + phys + "'");
  if (colon == std::string::npos) return 0;
  try {
    return std::stoi(phys.substr(colon + 1));
  } catch (const std::exception&) {
    throw InputError("devices: bad CUDA device index in '" + phys + "'");
  }
}

// OpenMP keeps the intra-op thread count per thread (nthreads-var), so each
// executor can have its own share of cores. at::set_num_threads would also
// change the process-wide default, so call the OpenMP/MKL runtime LibTorch
// loaded (whatever its file name) directly.
using SetThreadsFn = void (*)(int);
using MklSetLocalFn = int (*)(int);
SetThreadsFn omp_set_threads() {
  static SetThreadsFn fn = reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return fn;
}
MklSetLocalFn mkl_set_local() {
  // MKL's C entry point (mkl.h maps mkl_set_num_threads_local to it). The
  // lower-case symbol is the Fortran one, which takes a pointer: calling it
  // with an int crashes (the MKL linked into torch 2.11 exports both).
  static MklSetLocalFn fn = reinterpret_cast<MklSetLocalFn>(dlsym(RTLD_DEFAULT, "MKL_Set_Num_Threads_Local"));
  return fn;
}

}  // namespace

bool cuda_runtime_available() {
#ifdef PLACER_WITH_CUDA
  return c10::cuda::device_count() > 0;
#else
  return false;
#endif
}

int cuda_runtime_device_count() {
#ifdef PLACER_WITH_CUDA
  return static_cast<int>(c10::cuda::device_count());
#else
  return 0;
#endif
}

BuildInfo build_info() {
  BuildInfo info;
  info.torch_version = TORCH_VERSION;
  info.malloc_name = host_malloc();
#ifdef PLACER_WITH_CUDA
  info.cuda_compiled = true;
  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess && version > 0)
    info.cuda_version = std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
  const int count = cuda_runtime_device_count();
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    GpuInfo g;
    g.name = "cuda:" + std::to_string(i);
    g.model = prop->name;
    g.memory_bytes = static_cast<int64_t>(prop->totalGlobalMem);
    g.capability_major = prop->major;
    g.capability_minor = prop->minor;
    info.gpus.push_back(std::move(g));
  }
#endif
  return info;
}

std::string describe(const BuildInfo& info) {
  std::string s = "LibTorch " + info.torch_version + "\n";
  s += "malloc: " + info.malloc_name + "\n";
  s += info.cuda_compiled ? "CUDA paths: compiled, CUDA runtime " +
                                (info.cuda_version.empty() ? std::string("unknown") : info.cuda_version) + "\n"
                          : std::string("CUDA paths: not compiled (LibTorch without CUDA)\n");
  if (info.gpus.empty()) {
    s += "GPUs: none visible\n";
  } else {
    s += "GPUs: " + std::to_string(info.gpus.size()) + "\n";
    for (const GpuInfo& g : info.gpus) {
      char line[256];
      std::snprintf(line, sizeof(line), "  %s  %s, %.1f GiB, sm_%d%d\n", g.name.c_str(), g.model.c_str(),
                    static_cast<double>(g.memory_bytes) / (1 << 30), g.capability_major, g.capability_minor);
      s += line;
    }
  }
  return s;
}

namespace {

#ifdef PLACER_WITH_CUDA
std::string visible_gpus() {
  const BuildInfo info = build_info();
  if (!info.cuda_compiled) return "this build has no CUDA paths";
  if (info.gpus.empty()) return "this machine has no visible CUDA GPU";
  std::string s = "this machine has " + std::to_string(info.gpus.size()) + ":";
  for (size_t i = 0; i < info.gpus.size(); ++i)
    s += (i ? ", " : " ") + info.gpus[i].name + " (" + info.gpus[i].model + ")";
  return s;
}
#endif

// The cores this process may run on (its affinity mask: a container's cpuset).
std::vector<int> allowed_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

}  // namespace

namespace {
// The cores of an affinity mask, or every online CPU where the mask could not be read.
int core_count(const std::vector<int>& allowed) {
  return allowed.empty() ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                         : static_cast<int>(allowed.size());
}

// What each device of a cluster gets of this process's cores. cpu:N with N > 1: each CPU device's executor
// thread gets its own slice of the allowed cores, so two devices never share a core and the OS cannot put
// both on one (their parallelism is then real and repeatable). Its intra-op threads: its share of the usable
// cores, or the cluster's count where that is smaller (more threads than cores only take turns on them:
// `taskset -c 0 placer measure --devices cpu:1` ran 2 threads on its one core). CUDA devices: one thread.
struct CoreShare {
  std::vector<int> cores;  // pinned to these (empty: not pinned)
  int threads = 1;
};
std::vector<CoreShare> core_shares(const Cluster& cluster, const std::vector<int>& allowed) {
  int cpu_devices = 0;
  for (const Device& d : cluster.devices) cpu_devices += d.kind == DeviceKind::Cpu;
  const int share = std::max(1, core_count(allowed) / std::max(1, cpu_devices));
  const bool pin = cpu_devices > 1 && static_cast<int>(allowed.size()) >= cpu_devices;
  std::vector<CoreShare> out(cluster.devices.size());
  int cpu_seen = 0;
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    const Device& d = cluster.devices[i];
    if (d.kind != DeviceKind::Cpu) continue;
    out[i].threads = d.threads > 0 ? std::min(d.threads, share) : share;
    if (pin)
      for (int c = cpu_seen * share; c < (cpu_seen + 1) * share; ++c) out[i].cores.push_back(allowed[c]);
    ++cpu_seen;
  }
  return out;
}

// graphs/src/cluster.cc's parse_device_list: the source it writes, and the memory it gives a CUDA device
// (split N ways for vcuda:N) since no GPU can be queried there.
constexpr const char* kDeviceListSource = "device list '";
constexpr int64_t kDeviceListGpuBytes = int64_t{80} << 30;

#ifdef PLACER_WITH_CUDA
// The total memory of each visible GPU, by index.
std::vector<int64_t> gpu_total_bytes() {
  std::vector<int64_t> out;
  for (int i = 0; i < cuda_runtime_device_count(); ++i)
    out.push_back(
        static_cast<int64_t>(at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i))->totalGlobalMem));
  return out;
}

// Device `i` of the cluster, a CUDA device: its GPU (which must be visible), streams and memory limit.
// `gpu_bytes`: each GPU's memory, read at the first CUDA device.
void open_cuda_device(const Cluster& cluster, int i, DeviceCtx& ctx, std::vector<int64_t>& gpu_bytes) {
  const Device& d = cluster.devices[i];
  const int index = parse_cuda_index(d);
  const int count = cuda_runtime_device_count();
  if (index < 0 || index >= count)
    throw InputError("devices: '" + d.name + "' needs cuda:" + std::to_string(index) + " but " + visible_gpus());
  // ATen initializes CUDA (the caching allocator among it) lazily, at the first CUDA
  // tensor; the allocator's statistics are read before that (reset_peak), and throw.
  at::globalContext().lazyInitDevice(c10::kCUDA);
  if (gpu_bytes.empty()) gpu_bytes = gpu_total_bytes();
  ctx.capacity = gpu_memory_limit(cluster, i, gpu_bytes);
  ctx.torch_device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  // Two streams each from torch's pool, which hands out its 32 per GPU in turn (kMaxDevicesPerGpu).
  int on_gpu = 0;
  for (const Device& other : cluster.devices)
    on_gpu += other.kind == DeviceKind::Cuda && parse_cuda_index(other) == index;
  if (on_gpu > kMaxDevicesPerGpu)
    throw InputError("devices: " + std::to_string(on_gpu) + " devices on cuda:" + std::to_string(index) + "; at most " +
                     std::to_string(kMaxDevicesPerGpu) + " (each takes two of the 32 streams torch keeps per GPU)");
  ctx.stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index));
  ctx.copy_stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index));
  const std::string physical = "cuda:" + std::to_string(index);
  if (physical != d.name) ctx.lane = d.name + " (virtual, on " + physical + ")";
  ctx.shares_gpu = on_gpu > 1;
}
#endif

}  // namespace

int usable_cores() { return core_count(allowed_cores()); }

std::vector<int> device_threads(const Cluster& cluster) {
  std::vector<int> out;
  for (const CoreShare& s : core_shares(cluster, allowed_cores())) out.push_back(s.threads);
  return out;
}

int64_t gpu_memory_limit(const Cluster& cluster, int device, const std::vector<int64_t>& gpu_bytes) {
  const Device& d = cluster.devices.at(static_cast<size_t>(device));
  if (d.kind != DeviceKind::Cuda || cluster.source.rfind(kDeviceListSource, 0) != 0) return d.memory_bytes;
  const int gpu = parse_cuda_index(d);
  if (gpu < 0 || gpu >= static_cast<int>(gpu_bytes.size()) || gpu_bytes[gpu] <= 0) return d.memory_bytes;
  int on_gpu = 0;
  for (const Device& other : cluster.devices)
    on_gpu += other.kind == DeviceKind::Cuda && parse_cuda_index(other) == gpu;
  // A limit the caller set on the list's cluster (a test's, say) is kept.
  if (d.memory_bytes != kDeviceListGpuBytes / on_gpu) return d.memory_bytes;
  return gpu_bytes[gpu] / on_gpu;
}

std::vector<DeviceCtx> make_devices(const Cluster& cluster) {
  std::vector<DeviceCtx> out;
  const std::vector<CoreShare> shares = core_shares(cluster, allowed_cores());  // the mask read once
  std::vector<int64_t> gpu_bytes;  // each GPU's memory, read at the first CUDA device
  for (int i = 0; i < cluster.size(); ++i) {
    const Device& d = cluster.devices[i];
    DeviceCtx ctx;
    ctx.index = i;
    ctx.name = d.name;
    ctx.lane = d.name;
    ctx.kind = d.kind;
    ctx.capacity = d.memory_bytes;
    ctx.threads = shares[i].threads;
    if (d.kind == DeviceKind::Cpu) {
      ctx.torch_device = c10::Device(c10::kCPU);
      ctx.cores = shares[i].cores;
    } else {
#ifdef PLACER_WITH_CUDA
      open_cuda_device(cluster, i, ctx, gpu_bytes);
#else
      (void)parse_cuda_index(d);
      (void)gpu_bytes;
      throw InputError(
          "devices: '" + d.name +
          "' is a CUDA device but this build has no CUDA (configure with -DPLACER_CUDA=ON against a CUDA LibTorch)");
#endif
    }
    out.push_back(std::move(ctx));
  }
  return out;
}

void enter_device_thread(const DeviceCtx& device, int threads) {
  // Let ATen's lazy per-thread init run first so it cannot undo our setting. Our copy of the inline
  // lazy_init_num_threads has its own thread-local flag, not libtorch's: libtorch's init then ran at the
  // thread's first parallel op and put back the process default (2 threads once a policy decode had set
  // it), and the second OpenMP/MKL thread spun on the executor's pinned core (the service measured a
  // step 0.164 s instead of 0.000133 s after a `place` with a policy). get_num_threads runs libtorch's.
  at::internal::lazy_init_num_threads();
  (void)at::get_num_threads();
  threads = std::max(1, threads);
  if (auto fn = omp_set_threads()) {
    fn(threads);
  } else {
    at::set_num_threads(threads);
  }
  if (auto fn = mkl_set_local()) fn(threads);
  if (!device.cores.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : device.cores) CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: unpinned on failure
  }
  // Executors run kernels without recording autograd graphs unless an op
  // needs its backward (then they turn it on around that one call).
  c10::GradMode::set_enabled(false);
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda) {
    c10::cuda::set_device(device.torch_device.index());
    c10::cuda::setCurrentCUDAStream(*device.stream);
  }
#endif
}

at::Tensor copy_to_device(const at::Tensor& src, const DeviceCtx& from, const DeviceCtx& to) {
  if (from.kind == DeviceKind::Cpu && to.kind == DeviceKind::Cpu) {
    // Two CPU devices share RAM but not memory accounting: a real copy.
    return src.clone(at::MemoryFormat::Contiguous);
  }
#ifdef PLACER_WITH_CUDA
  // Every copy runs on a copy stream, ordered by events, never by a device-wide
  // synchronization: it waits for the producer's compute stream (an event
  // recorded now, after the producing kernel was queued), and the consumer's
  // compute stream waits for the copy.
  if (from.kind == DeviceKind::Cuda && to.kind == DeviceKind::Cpu) {
    // GPU -> CPU: into a pinned buffer (a real async DMA); the CPU consumer
    // needs the bytes, so this thread waits for this one copy only.
    at::cuda::CUDAEvent produced;
    produced.record(*from.stream);
    c10::cuda::CUDAGuard guard(from.torch_device.index());
    c10::cuda::CUDAStreamGuard stream_guard(*from.copy_stream);
    produced.block(*from.copy_stream);
    at::Tensor dst = at::empty(src.sizes(), src.options().device(at::kCPU).pinned_memory(true));
    dst.copy_(src, /*non_blocking=*/true);
    src.record_stream(*from.copy_stream);
    at::cuda::CUDAEvent copied;
    copied.record(*from.copy_stream);
    copied.synchronize();
    return dst;
  }
  if (from.kind == DeviceKind::Cpu) {
    // CPU -> GPU: staged through a pinned buffer (unless the tensor is pinned
    // already), so the DMA is async on the copy stream. The caching host
    // allocator keeps the staging buffer until the copy has run.
    at::Tensor host = src;
    if (!src.is_pinned()) {
      host = at::empty(src.sizes(), src.options().pinned_memory(true));
      host.copy_(src);
    }
    c10::cuda::CUDAGuard guard(to.torch_device.index());
    c10::cuda::CUDAStreamGuard stream_guard(*to.copy_stream);
    at::Tensor dst = at::empty(src.sizes(), src.options().device(to.torch_device));
    dst.copy_(host, /*non_blocking=*/true);
    dst.record_stream(*to.stream);
    at::cuda::CUDAEvent copied;
    copied.record(*to.copy_stream);
    copied.block(*to.stream);
    return dst;
  }
  // GPU -> GPU: the destination's copy stream pulls the tensor. Across two
  // physical GPUs ATen's copy is a peer copy (cudaMemcpyPeerAsync) where peer
  // access exists and is staged by the driver otherwise; two virtual devices
  // on one GPU make a device-local copy.
  at::cuda::CUDAEvent produced;
  produced.record(*from.stream);
  produced.block(*to.copy_stream);
  c10::cuda::CUDAGuard guard(to.torch_device.index());
  c10::cuda::CUDAMultiStreamGuard streams(from.torch_device.index() == to.torch_device.index()
                                              ? std::vector<c10::cuda::CUDAStream>{*to.copy_stream}
                                              : std::vector<c10::cuda::CUDAStream>{*from.copy_stream, *to.copy_stream});
  if (from.torch_device.index() != to.torch_device.index()) produced.block(*from.copy_stream);
  at::Tensor dst = at::empty(src.sizes(), src.options().device(to.torch_device));
  dst.copy_(src, /*non_blocking=*/true);
  src.record_stream(*to.copy_stream);
  if (from.torch_device.index() != to.torch_device.index()) src.record_stream(*from.copy_stream);
  dst.record_stream(*to.stream);
  at::cuda::CUDAEvent copied;
  copied.record(*to.copy_stream);
  copied.block(*to.stream);
  return dst;
#else
  return src.to(to.torch_device, false, true);
#endif
}

void synchronize_device(const DeviceCtx& device) {
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda) {
    device.stream->synchronize();
    device.copy_stream->synchronize();
  }
#endif
}

void step_begun(const DeviceCtx& device) {
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda) device.step_begin->record(*device.stream);
#endif
}

void op_begun(const DeviceCtx& device, int32_t op) {
#ifdef PLACER_WITH_CUDA
  if (device.kind != DeviceKind::Cuda) return;
  auto& events = *device.op_events;
  if (static_cast<size_t>(op) >= events.size()) events.resize(static_cast<size_t>(op) + 1);
  events[op].begin.record(*device.stream);
#endif
}

void op_ended(const DeviceCtx& device, int32_t op) {
#ifdef PLACER_WITH_CUDA
  if (device.kind != DeviceKind::Cuda) return;
  OpEvents& e = (*device.op_events)[op];
  e.end.record(*device.stream);
  e.recorded = true;
#endif
}

bool op_span(const DeviceCtx& device, int32_t op, double& start_s, double& end_s) {
#ifdef PLACER_WITH_CUDA
  if (device.kind != DeviceKind::Cuda) return false;
  auto& events = *device.op_events;
  if (static_cast<size_t>(op) >= events.size() || !events[op].recorded) return false;
  OpEvents& e = events[op];
  e.recorded = false;
  start_s = device.step_begin->elapsed_time(e.begin) * 1e-3;
  end_s = device.step_begin->elapsed_time(e.end) * 1e-3;
  return true;
#else
  return false;
#endif
}

int64_t reset_peak(const DeviceCtx& device) {
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda && !device.shares_gpu) {
    const int index = device.torch_device.index();
    c10::cuda::CUDACachingAllocator::resetPeakStats(index);
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
  }
#endif
  return -1;
}

int64_t allocator_peak(const DeviceCtx& device) {
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda && !device.shares_gpu) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.torch_device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  return -1;
}

void release_cached_memory(const DeviceCtx& device) {
#ifdef PLACER_WITH_CUDA
  if (device.kind == DeviceKind::Cuda) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace placer
