// The unit problem (internal to agent/src): every algorithmic placer works on
// units (operators, or co-location groups of a coarsened graph) in
// topological order with a cost per device, a memory estimate, edges with
// bytes, and co-location groups that must share a device. Decisions are made
// per group; results expand to one device per op.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/env/cost_model.h"
#include "placer/graphs/algorithms.h"

namespace placer {

// a + b for byte counts, saturating at the int64 limits: sums over many devices or groups
// can pass 2^63 (devices of up to 2^60 bytes each).
inline int64_t add_bytes(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

struct Edge {
  int32_t op;     // the other end
  int64_t bytes;  // bytes of the tensors between the two ops
};

struct UnitProblem {
  int32_t n = 0;                         // units, topologically ordered (every pred has a smaller id)
  int32_t k = 0;                         // devices
  std::vector<double> cost;              // [unit * k + device] seconds
  std::vector<int64_t> mem;              // per unit, bytes (params + activations estimate)
  std::vector<std::vector<Edge>> preds;  // per unit, unique
  std::vector<std::vector<Edge>> succs;
  std::vector<int32_t> group_of;              // unit -> group
  std::vector<std::vector<int32_t>> members;  // group -> units ascending
  std::vector<int64_t> group_mem;
  std::vector<int64_t> capacity;        // per device, bytes usable by placers
  std::vector<double> alpha;            // [from * k + to] seconds
  std::vector<double> inv_beta;         // [from * k + to] seconds per byte
  std::vector<std::string> unit_names;  // for messages
  std::vector<std::string> device_names;
  bool identical_devices = false;  // same costs, memory and links everywhere

  int32_t groups() const { return static_cast<int32_t>(members.size()); }
  double c(int32_t unit, int32_t device) const { return cost[static_cast<size_t>(unit) * k + device]; }
  double transfer(int32_t from, int32_t to, int64_t bytes) const {
    if (from == to) return 0.0;
    return alpha[from * k + to] + static_cast<double>(bytes) * inv_beta[from * k + to];
  }
  double group_cost(int32_t g, int32_t device) const;
  double mean_cost(int32_t unit) const;
  double mean_transfer(int64_t bytes) const;  // average over ordered device pairs
};

// Memory estimate of one op: its parameters plus the outputs it produces
// (kept alive until the backward pass in the worst case). Conservative.
int64_t op_memory_estimate(const Op& op);

// The op-level problem of context.graph on context.cluster with env costs.
// memory_fraction: share of each device's memory the placers may fill.
UnitProblem make_unit_problem(const PlaceContext& context, double memory_fraction);
// The same from its parts (the learned policies' features: agent/src/features.cc).
UnitProblem make_op_problem(const Graph& graph, const Cluster& cluster, const CostModel& costs, double memory_fraction);

// Sets each device's capacity to `memory_fraction` of its memory.
void set_memory_fraction(UnitProblem& p, const Cluster& cluster, double memory_fraction);

// A problem whose units are the parts of `grouping` (parts on a cycle of the
// quotient graph are merged first); units holding ops of one co-location
// group form one group. unit_of_op[v] is the unit of op v.
UnitProblem make_group_problem(const UnitProblem& op_problem, const Grouping& grouping,
                               std::vector<int32_t>* unit_of_op);

// Whether every link between two devices costs what link 0 -> 1 does (alpha and inv_beta): within a relative
// `tolerance`, or exactly equal at 0.
bool uniform_links(const UnitProblem& p, double tolerance);

// Validates the context (non-null, non-empty) and throws NoFeasiblePlacement
// if some group fits on no device.
void check_context(const PlaceContext& context);
void check_groups_fit(const UnitProblem& problem);

std::vector<int32_t> expand_groups(const UnitProblem& p, const std::vector<int32_t>& group_device);

// The groups ordered by their first op (a topological order of the groups).
std::vector<int32_t> groups_by_first_op(const UnitProblem& p);

}  // namespace placer
