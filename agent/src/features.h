// Features the learned policies read: one row per placement unit (a
// co-location group, possibly coarsened), one row per device, and the
// per-step "dynamic" features of a partial placement. Plain arrays, no
// LibTorch: the policies turn them into tensors.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer {

inline constexpr int kUnitFeatures = 34;    // numeric features per unit
inline constexpr int kDeviceFeatures = 8;   // numeric features per device
inline constexpr int kDynamicFeatures = 7;  // per (step, device) of a partial placement
inline constexpr int kTypeBuckets = 1024;   // hashed op-type vocabulary
inline constexpr int kMaxDevices = 16;      // device index embeddings

// Stable across runs and machines (FNV-1a), so checkpoints mean the same
// thing on another graph.
int64_t op_type_bucket(const std::string& type);

// Structure the dynamic features need: per-unit cost on each device, memory,
// and edges between units (src placed before dst).
struct UnitCosts {
  int32_t units = 0;
  int32_t devices = 0;
  std::vector<float> cost;                  // [unit * devices + device], relative to total / devices
  std::vector<double> mem_bytes;            // per unit
  std::vector<double> capacity;             // per device
  std::vector<int32_t> edge_src, edge_dst;  // src < dst
  std::vector<float> edge_w;                // share of dst's incoming bytes
  std::vector<float> edge_xfer;             // transfer time of the edge's bytes, relative to total / devices
};

// Dynamic features for step t given the devices of units 0..t-1.
// State is per sample; call step() in order.
class DynamicState {
 public:
  explicit DynamicState(const UnitCosts* costs);
  // Writes kDynamicFeatures x devices floats for unit t into out[d * kDynamicFeatures + f].
  void features(int32_t t, float* out) const;
  void place(int32_t t, int32_t device);

 private:
  const UnitCosts* c_;
  // Earliest finish of unit t on each device (list-scheduling estimate, as
  // Placeto's simulated start times): devices free at avail_, inputs arrive
  // at their producer's finish plus a transfer when on another device.
  void finish_times(int32_t t, float* eft) const;
  struct InEdge {
    int32_t src;
    float w, xfer;
  };
  std::vector<float> load_;
  std::vector<double> mem_;
  std::vector<int32_t> device_of_;
  std::vector<float> avail_, finish_;
  std::vector<std::vector<InEdge>> in_edges_;
};

// The placement problem for one graph on one cluster, at unit granularity.
struct PolicyInput {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  Grouping units;             // placement units, ordered by first op
  int32_t n = 0;              // units
  int32_t d = 0;              // devices
  std::vector<float> x;       // n * kUnitFeatures
  std::vector<int64_t> type;  // n, op_type_bucket of the unit's main op
  std::vector<float> dev;     // d * kDeviceFeatures
  UnitCosts costs;
  // Graph structure between units for message passing (deduplicated).
  std::vector<int32_t> parent_src, parent_dst;  // edge src -> dst
  std::vector<std::vector<int32_t>> peers;      // sampled parallel peers per unit (may be empty)

  Placement expand(const std::vector<int32_t>& unit_device) const;
  // Device of each unit under a placement (the device of its first op).
  std::vector<int32_t> contract(const Placement& placement) const;
};

struct PolicyInputOptions {
  int32_t max_units = 256;                // coarsen beyond this many co-location groups (0 = never)
  const Placement* keep_apart = nullptr;  // split units whose ops this placement separates
  CoarsenOptions coarsen;                 // how to coarsen beyond max_units (policy.state_units, policy.layer_units)
  int32_t max_peers = 8;
  uint64_t seed = 1;
};

// InputError when the policies cannot place on this cluster (none; more than kMaxDevices devices:
// PolicyOutOfRange, which a fast path answers instead of) or the graph has no ops.
void check_policy_problem(const Graph& graph, const Cluster& cluster);

// Throws InputError when the cluster has more devices than the policies support.
PolicyInput make_policy_input(const Graph& graph, const Cluster& cluster, const CostModel& costs,
                              const PolicyInputOptions& options);

// Unit costs for an arbitrary grouping of the problem's units (hierarchical
// policy: groups of units); groups are ordered by index.
UnitCosts group_costs(const PolicyInput& problem, const std::vector<int32_t>& group_of_unit, int32_t groups);

}  // namespace placer
