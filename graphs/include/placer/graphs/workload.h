// A workload of the max-load (pipelined throughput) placement problem of
// Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph
// Operators" (NeurIPS 2020), in the JSON format of their public code
// (msr-fiddle/dnn-partitioning, throughput-inputs/):
//   {"maxSizePerFPGA": bytes, "maxFPGAs": k, "maxCPUs": l,
//    "nodes": [{"id", "supportedOnFpga", "cpuLatency", "fpgaLatency",
//               "isBackwardNode", "colorClass"?, "size"?, "name"?, "layerId"?}],
//    "edges": [{"sourceId", "destId", "cost", "size"?}]}
// Its costs are given, not derived: a node's latency on an accelerator
// ("FPGA" in the file: any accelerator) and on a CPU, its size in bytes, and
// the time to move its output between an accelerator and CPU memory (the
// cost of each edge leaving it, the same for all of them). Nodes of one
// colorClass share a device; a backward node belongs to the forward node(s)
// of its class. This is a value type of its own rather than a placer Graph
// because nothing in it is an ATen op: the objective (env/max_load.h) and
// its placers (agent/max_load.h) read it directly. Its files are read and
// written by frontends/workload_json.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace placer {

struct WorkloadNode {
  int64_t id = 0;              // the file's id (any integer, unique)
  std::string name;            // optional in the file
  bool accelerator_ok = true;  // supportedOnFpga
  double cpu_latency = 0.0;
  double accelerator_latency = 0.0;
  double size = 0.0;  // bytes held on its device
  bool backward = false;
  std::optional<int64_t> color_class;  // absent: a class of its own
};

struct WorkloadEdge {
  int32_t from = 0;  // node indices
  int32_t to = 0;
};

// What the file names: maxFPGAs accelerators of maxSizePerFPGA bytes and
// maxCPUs CPUs (no memory limit, as in the paper's code).
struct WorkloadCluster {
  int32_t accelerators = 0;
  int32_t cpus = 0;
  double accelerator_bytes = 0.0;
  int32_t devices() const { return accelerators + cpus; }
};

struct Workload {
  // Devices of one workload are numbered accelerators first, then CPUs; at
  // most kMaxDevices in all (placers keep device sets as 64-bit masks).
  static constexpr int32_t kMaxDevices = 64;

  std::string name;  // the file's stem
  WorkloadCluster cluster;
  std::vector<WorkloadNode> nodes;  // file order
  std::vector<WorkloadEdge> edges;  // file order
  std::vector<double> out_cost;     // per node: the cost of each edge leaving it (0: none)

  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  std::optional<int32_t> index_of(int64_t id) const;
  // Per node, a dense colocation class in [0, classes): nodes with the same
  // colorClass share one; a node without one has its own.
  std::vector<int32_t> colocation_classes(int32_t* classes = nullptr) const;
  bool is_training() const;  // has backward nodes
};

// A device index per node, accelerators first (see Workload).
using WorkloadPlacement = std::vector<int32_t>;

}  // namespace placer
