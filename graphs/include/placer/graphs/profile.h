// A profile measured on real devices by `placer profile`; the simulator is
// calibrated from it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer {

// "type(dtype[shape],...)": an op's type and its inputs' dtypes and shapes
// (an input op's: its output's), as OpTiming::signature holds it. It reuses a
// profile's timings across graphs that share operator shapes, and tells a
// profile of this graph from one of a graph with the same op names at another
// size (CostModel::calibrated).
std::string op_signature(const Graph& graph, OpId op);
// The same, less input `skip` (as if the op lacked it): a pipelined sgd's
// running sum of the earlier micro-batches' gradients, which the training
// graph it was profiled as lacks.
std::string op_signature(const Graph& graph, OpId op, size_t skip);

struct OpTiming {
  std::string op;         // op name in the profiled graph
  std::string signature;  // op type + input shapes, to reuse timings across graphs
  std::string device;     // device name it ran on ("cpu:0", "cuda:0")
  std::string device_kind;
  double seconds = 0.0;  // median over repetitions
  // CPU devices: the median while every other CPU device of the host runs
  // ops too (memory-system and core contention); 0 = not measured.
  double contended_seconds = 0.0;
};

// Transfer time fit t = alpha + bytes / beta between two devices.
struct LinkFit {
  std::string from;
  std::string to;
  double alpha_s = 0.0;
  double beta_Bps = 0.0;
  std::vector<std::pair<int64_t, double>> samples;  // (bytes, seconds)
};

// One step of the graph split over mixed_step_devices() (the host's CPU
// devices; or those and a GPU), co-location groups dealt round robin
// (round_robin_groups): of the simple placements, the one that moves the most
// between devices. The simulator fits on it what a copy between those devices
// costs inside a step beyond the links' fit (CostModel::calibrated): a cost
// per byte between CPU devices (group_copy_s_per_byte) or a cost per copy
// between a CPU device and a GPU (cross_copy_s).
struct MixedStep {
  std::vector<std::string> devices;  // the devices dealt to, in order
  double step_s = -1.0;              // median measured step; < 0: not measured
  // The cross-core probe while it was measured (StepResult::core_rtt_s's
  // median): the copy cost fitted on this step holds the cores' state then.
  // < 0: not probed (GPU splits, older profiles).
  double core_rtt_s = -1.0;
};

// One CPU device's step of the whole graph on it alone (the measurement
// protocol's median, every CPU device of the host interleaved in one run).
struct DeviceStep {
  std::string device;
  double step_s = 0.0;
};

struct Profile {
  int version = 1;
  std::string graph;    // graph name profiled
  std::string devices;  // device spec it was measured on ("cpu:2")
  std::string host;     // hostname and LibTorch version, informative
  std::vector<OpTiming> ops;
  std::vector<LinkFit> links;
  double per_op_overhead_s = 0.0;  // executor overhead per operator, measured
  // The same on a GPU device: its thread's launch path per op (events, stream
  // waits, dispatch) beyond the kernels' own times, measured from steps of the
  // graph on the GPU. < 0: not measured (older profiles, no GPU); then
  // per_op_overhead_s applies to every device.
  double gpu_op_overhead_s = -1.0;
  // A GPU op's time alone holds its launch latency, which a step hides once
  // the host runs ahead: when a step of the graph on the GPU is shorter than
  // its ops timed alone, their times are scaled by step / ops (in (0, 1]),
  // and gpu_op_overhead_s is 0. 1: no scale (older profiles, no GPU).
  double gpu_op_scale = 1.0;
  // The GPU step (every op on the first GPU, the measurement protocol's
  // median) that gpu_op_overhead_s and gpu_op_scale were fitted to, so a
  // later measurement can be set beside it. < 0: not measured.
  double gpu_step_s = -1.0;
  MixedStep mixed;  // measured where mixed_step_devices() names devices
  // Each CPU device's step alone, on a cluster of two or more CPU devices and
  // no GPU (the devices of its mixed step): CPU devices
  // of one class are not equally fast on a shared machine (on the 2-core VM
  // cpu:0's single-device step of inception_v3 measured 3-7% slower than
  // cpu:1's in every fidelity report, nmt's 0-8%), and the ops are timed on one
  // of them. The simulator scales each CPU device's op times by its step over
  // that device's (CostModel::calibrated). Empty: not measured.
  std::vector<DeviceStep> cpu_steps;
};

}  // namespace placer
