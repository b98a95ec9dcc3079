// The runtime: executes a placed graph for real with LibTorch kernels and
// measures it. No LibTorch types in this header (STYLE.md): other folders
// include it.
#pragma once

#include <cstdint>
#include <functional>
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

// The measurement protocol, one for every caller (measure, fidelity, measured
// and hybrid rewards, service jobs, rollout workers). After `warmup_steps`
// unmeasured steps it takes at least `measured_steps` steps and goes on until
// the 95% interval of the median step is within `target_halfwidth` of the
// median ("target"), `max_steps` steps are taken ("max_steps") or `budget_s`
// seconds of measured steps have passed ("budget"). max_steps <= measured_steps
// takes exactly measured_steps ("steps"). Several placements are measured
// interleaved, one step of each per round, so a shared machine's drift falls on
// all alike; each round's order is drawn afresh from `seed` (A C B, B A C, ...),
// so the carry-over of one step into the next falls on all alike too.
struct MeasureOptions {
  int warmup_steps = 2;
  int measured_steps = 5;          // at least
  int max_steps = 30;              // at most
  double target_halfwidth = 0.02;  // of the median; 0: until max_steps or the budget
  double budget_s = 0.0;           // measured seconds, all placements together; 0: none
  // Each placement measured for at least this many seconds of steps, past
  // max_steps if need be (stop "min_time"); the budget still ends it. A
  // machine whose speed moves between levels every second or so (an H200's
  // VM: a launch-bound step at 5.5 or 8.6 ms, bench/results/gpu_h200_r5.md)
  // gives a short run's median one level at random; a longer span gives the
  // levels in proportion.
  double min_time_s = 0.0;
  // Interleaved runs: unmeasured steps a placement takes right before each of
  // its measured steps, so that the measured one follows its own step rather
  // than another placement's (0: none). Among nine placements interleaved, one
  // or two measured 10-28% slower than at other times; one re-warming step removed
  // that in one run of two, and later runs found the cost of copies between cores
  // moving from minute to minute, alone or interleaved (bench/results/rewarm_cpu2.md).
  // Not shown to help, so not the default.
  int rewarm_steps = 0;
  // Interleaved runs: every placement keeps taking every round until each has
  // measured enough (or failed, or the budget ends them all), so that their
  // medians cover one span of time and every round pairs. Each keeps the stop
  // reason it met first. Without it a placement that meets its target stops,
  // and on a drifting machine rows stopped at different times compare the
  // machine's minutes: in one final table on cpu:2 a row that stopped early
  // read 6.4% faster than the policy's best by medians and was 9.0% slower
  // paired by the rounds both took (nmt, bench/results/learned_measured_cpu2.md).
  bool lockstep = false;
  double timeout_s = 120.0;  // per step; past it the result is Timeout
  uint64_t seed = 0;         // inputs and params are drawn from it
  bool timeline = false;     // record a TimelineEvent per op and transfer
  // Called after every measured step: the placement's index and its step time
  // (progress reports; tests check the interleaving with it).
  std::function<void(size_t placement, double step_s)> on_step;
};
// InputError naming the option for a bad value.
void validate(const MeasureOptions& options);

struct ProfileOptions {
  int repetitions = 5;  // per op, median kept
  std::vector<int64_t> transfer_sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
  double timeout_s = 120.0;  // per step (MeasureOptions::timeout_s); a step past it fails the profile
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
  // With a timeline, one more step after the measured ones is recorded (not a sample).
  StepResult measure(const Graph& graph, const Placement& placement, const MeasureOptions& options,
                     std::vector<TimelineEvent>* timeline = nullptr);

  // The protocol over several placements, interleaved; one result each, in
  // order. `prior`, when given, holds samples already taken of each placement
  // (same size as `placements`): they count towards the interval and the stop
  // rule and come back in samples_s, so a placement measured again narrows its
  // interval instead of starting over.
  std::vector<StepResult> measure_interleaved(const Graph& graph, const std::vector<Placement>& placements,
                                              const MeasureOptions& options,
                                              const std::vector<std::vector<double>>* prior = nullptr);

  // One step from fixed seeded inputs and params; returns the values. `feed`
  // gives some inputs' and params' values by op name (flattened, converted to
  // the op's dtype), e.g. the weights of a PyTorch model to compare with eager.
  StepValues run_once(const Graph& graph, const Placement& placement, uint64_t seed = 0,
                      const StepValues* feed = nullptr);

  // Per-op times on each device kind and link alpha/beta fits. Throws
  // InputError when a profiling step fails: the graph does not fit a device's
  // memory (checked before it is allocated), a step runs past options.timeout_s.
  Profile profile(const Graph& graph, const ProfileOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Asks LibTorch for transparent huge pages for large CPU tensors and, where
// glibc's malloc is the process's (no tcmalloc linked), keeps freed host memory
// in the process, so that a CPU step's time does not depend on page faults and
// what ran before (runtime.cc says why). PLACER_MALLOC=system turns it off.
// Call it before any LibTorch allocation (main() does); Runtime's constructor
// calls it too.
void configure_host_memory();

// The malloc this process runs on: "tcmalloc" (linked where installed, see
// CMakeLists.txt) or "glibc". Reports name it beside the host.
const char* host_malloc();

// The median round trip of a cache line passed between two spinning threads
// pinned to core_a and core_b, in `batches` of `trips_per_batch`: where the two
// cores sit now. The measurement protocol reads it beside every round on two or
// more pinned CPU devices (StepResult::core_rtt_s). On the 2-core VM it read
// ~88 ns, and 350-430 ns in spells in which copies between cpu:0 and cpu:1
// cost more (bench/results/copy_probe_cpu2.md).
// -1 where it cannot be read: two equal cores, a core it cannot pin to, or
// trips that take the scheduler's time slices (a 50 ms bound on the whole).
double cache_line_round_trip_s(int core_a, int core_b, int batches = 4, int trips_per_batch = 250);

// The intra-op threads each device of `cluster` gets in this process: a CPU device's share of the cores this
// thread may run on (its affinity mask: taskset, a container's cpuset), or the cluster's `threads` where
// smaller; a CUDA device's thread, 1.
std::vector<int> device_threads(const Cluster& cluster);

// The memory limit the runtime holds device `device` of `cluster` to: its memory_bytes, but for a CUDA device
// of a device list (parse_device_list, which cannot query a GPU and gives each 80 GiB, split N ways for
// vcuda:N) the memory of the GPU it runs on (gpu_bytes[K] for cuda:K: totalGlobalMem), split evenly among the
// list's devices on that GPU. A GPU gpu_bytes lacks, or a limit set on the cluster since, is kept.
int64_t gpu_memory_limit(const Cluster& cluster, int device, const std::vector<int64_t>& gpu_bytes);

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
  std::string malloc_name;  // host_malloc(): "tcmalloc" or "glibc"
};
BuildInfo build_info();
// One line per fact, for `placer --version`.
std::string describe(const BuildInfo& info);

}  // namespace placer
