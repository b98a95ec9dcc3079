// The runtime: executes a placed graph for real with LibTorch kernels and
// measures it. No LibTorch types in this header (STYLE.md): other folders
// include it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"

namespace placer {

struct MeasureOptions {
  int warmup_steps = 2;
  int measured_steps = 5;
  double timeout_s = 120.0;  // per step; past it the result is Timeout
  uint64_t seed = 0;         // inputs and params are drawn from it
  bool timeline = false;     // record a TimelineEvent per op and transfer
};

struct ProfileOptions {
  int repetitions = 5;  // per op, median kept
  std::vector<int64_t> transfer_sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
};

// The values a step computed, for correctness checks across placements:
// every graph output (sinks) and every parameter after the update, flattened
// to float, by op name.
struct StepValues {
  std::map<std::string, std::vector<float>> tensors;
  // run_once: an execution failure (OOM, kernel error) is a status, as in StepResult.
  StepStatus status = StepStatus::Ok;
  std::string message;
};

class Runtime {
 public:
  // Starts one executor per device of the cluster. cpu:N devices split this
  // machine's cores; cuda devices need a build with PLACER_CUDA. Throws
  // InputError naming a device this build or machine cannot run.
  explicit Runtime(Cluster cluster);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Cluster& cluster() const;

  // Warm-up then measured steps. Failures (OOM, timeout, kernel errors) come
  // back as a status. A placement that misses an op or names a device the
  // cluster lacks throws PlacementError (it is bad input, not an execution).
  StepResult measure(const Graph& graph, const Placement& placement, const MeasureOptions& options,
                     std::vector<TimelineEvent>* timeline = nullptr);

  // One step from fixed seeded inputs and params; returns the values. `feed`
  // gives some inputs' and params' values by op name (flattened, converted to
  // the op's dtype), e.g. the weights of a PyTorch model to compare with eager.
  StepValues run_once(const Graph& graph, const Placement& placement, uint64_t seed = 0,
                      const StepValues* feed = nullptr);

  // Per-op times on each device kind and link alpha/beta fits. Throws
  // InputError when a profiling step fails (the graph does not fit, say).
  Profile profile(const Graph& graph, const ProfileOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build/machine can run CUDA devices.
bool cuda_available();
int cuda_device_count();

// What this build runs on: the LibTorch it was built against, whether its CUDA
// paths are compiled in (and the CUDA version), and the GPUs it sees now.
struct GpuInfo {
  std::string name;   // "cuda:0"
  std::string model;  // "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;
  int capability_major = 0, capability_minor = 0;
};
struct BuildInfo {
  std::string torch_version;   // "2.11.0"
  bool cuda_compiled = false;  // PLACER_CUDA
  std::string cuda_version;    // the CUDA toolkit LibTorch was built with ("13.0"), empty without
  std::vector<GpuInfo> gpus;
};
BuildInfo build_info();
// One line per fact, for `placer --version`.
std::string describe(const BuildInfo& info);

}  // namespace placer
