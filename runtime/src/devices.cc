// Devices: torch devices, per-thread core shares, streams and copies.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>
#include <cstdlib>

#include "internal.h"
#include "placer/graphs/error.h"

#ifdef PLACER_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace placer::rt {

namespace {

int parse_cuda_index(const Device& d) {
  const std::string& phys = d.physical.empty() ? d.name : d.physical;
  const size_t colon = phys.find(':');
  if (phys.rfind("cuda", 0) != 0) throw InputError("devices: '" + d.name + "' is a CUDA device with physical '" + phys + "'");
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
  static MklSetLocalFn fn = reinterpret_cast<MklSetLocalFn>(dlsym(RTLD_DEFAULT, "mkl_set_num_threads_local"));
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

std::vector<DeviceCtx> make_devices(const Cluster& cluster) {
  std::vector<DeviceCtx> out;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  int cpu_devices = 0;
  for (const Device& d : cluster.devices) cpu_devices += d.kind == DeviceKind::Cpu;
  // cpu:N with N > 1: each CPU device's executor thread gets its own slice of
  // the allowed cores, so two devices never share a core and the OS cannot
  // put both on one (their parallelism is then real and repeatable).
  const std::vector<int> allowed = allowed_cores();
  const bool pin = cpu_devices > 1 && static_cast<int>(allowed.size()) >= cpu_devices;
  int cpu_seen = 0;
  for (int i = 0; i < cluster.size(); ++i) {
    const Device& d = cluster.devices[i];
    DeviceCtx ctx;
    ctx.index = i;
    ctx.name = d.name;
    ctx.kind = d.kind;
    ctx.capacity = d.memory_bytes;
    if (d.kind == DeviceKind::Cpu) {
      ctx.torch_device = c10::Device(c10::kCPU);
      ctx.threads = d.threads > 0 ? d.threads : std::max(1, cores / std::max(1, cpu_devices));
      if (pin) {
        const size_t per = allowed.size() / cpu_devices;
        for (size_t c = cpu_seen * per; c < (cpu_seen + 1) * per; ++c) ctx.cores.push_back(allowed[c]);
      }
      ++cpu_seen;
    } else {
#ifdef PLACER_WITH_CUDA
      const int index = parse_cuda_index(d);
      const int count = cuda_runtime_device_count();
      if (index < 0 || index >= count)
        throw InputError("devices: '" + d.name + "' needs cuda:" + std::to_string(index) + " but this machine has " +
                         std::to_string(count) + " GPU(s)");
      ctx.torch_device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
      ctx.threads = 1;
      ctx.stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index));
      ctx.copy_stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index));
#else
      (void)parse_cuda_index(d);
      throw InputError("devices: '" + d.name + "' is a CUDA device but this build has no CUDA (configure with -DPLACER_CUDA=ON against a CUDA LibTorch)");
#endif
    }
    out.push_back(std::move(ctx));
  }
  return out;
}

void enter_device_thread(const DeviceCtx& device, int threads) {
  // Let ATen's lazy per-thread init run first so it cannot undo our setting.
  at::internal::lazy_init_num_threads();
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
  c10::AutogradState::set_tls_state(c10::AutogradState(/*grad_mode=*/false, /*inference_mode=*/false,
                                                       /*fw_grad_mode=*/false));
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
  // Conservative ordering: the copy waits for everything queued so far on the
  // producer's compute stream; consumers' stream waits for the copy.
  if (from.kind == DeviceKind::Cuda) {
    at::cuda::CUDAEvent produced;
    produced.record(*from.stream);
    const DeviceCtx& side = to.kind == DeviceKind::Cuda ? to : from;
    c10::cuda::CUDAGuard guard(side.torch_device.index());
    c10::cuda::CUDAStreamGuard stream_guard(*side.copy_stream);
    produced.block(*side.copy_stream);
    at::Tensor dst;
    if (to.kind == DeviceKind::Cpu) {
      dst = src.to(to.torch_device, /*non_blocking=*/false, /*copy=*/true);  // synchronous on copy stream
    } else {
      dst = src.to(to.torch_device, /*non_blocking=*/true, /*copy=*/true);
      src.record_stream(*side.copy_stream);
      dst.record_stream(*to.stream);
      at::cuda::CUDAEvent copied;
      copied.record(*to.copy_stream);
      copied.block(*to.stream);
    }
    return dst;
  }
  // CPU -> CUDA
  c10::cuda::CUDAGuard guard(to.torch_device.index());
  c10::cuda::CUDAStreamGuard stream_guard(*to.copy_stream);
  at::Tensor dst = src.to(to.torch_device, /*non_blocking=*/false, /*copy=*/true);
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

}  // namespace placer::rt
