// Event-driven simulation of one training step of a placed graph.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"

namespace placer {

struct SimOptions {
  bool track_memory = true;  // peak memory per device and OOM
};

// Per-graph structures the simulator needs, built once (O(ops + edges)) and
// reused across placements: tensors, unique inputs, consumers, memory uses.
// Holds a pointer to the graph, which must outlive it.
struct SimContext {
  explicit SimContext(const Graph& graph);

  const Graph* graph = nullptr;
  int32_t ops = 0;
  int32_t tensors = 0;
  std::vector<int32_t> out_begin;     // [ops + 1]: op o's outputs are tensors out_begin[o]..out_begin[o+1)
  std::vector<int32_t> tensor_op;     // [tensors]: producer op
  std::vector<int64_t> tensor_bytes;  // [tensors]: bytes of the tensor (and of a transferred copy)
  std::vector<int64_t> alloc_bytes;   // [tensors]: new memory at its producer (0 for views)
  std::vector<int32_t> view_base;     // [tensors]: in_tensor slot of the input it aliases, -1 if none
  std::vector<int32_t> in_begin;      // [ops + 1]: into in_tensor
  std::vector<int32_t> in_tensor;     // unique input tensors of each op
  std::vector<int32_t> cons_begin;    // [tensors + 1]: into cons_op / cons_slot
  std::vector<int32_t> cons_op;       // consumer ops of a tensor, ascending
  std::vector<int32_t> cons_slot;     // the consumer's index into in_tensor
  std::vector<int32_t> extra_begin;   // [ops + 1]: into extra_hold
  std::vector<int32_t>
      extra_hold;  // backward op: forward outputs (tensor id) and forward input slots (~slot) it keeps alive
  std::vector<uint8_t> resident;  // [ops]: param/input op, outputs live for the whole step

  // The in_tensor slot of op's input `position`.
  int32_t slot_of(int32_t op, int32_t position) const;
};

// ATen ops whose outputs alias an input (no new memory): aten::view, t, chunk, ...
bool is_view_op(std::string_view type);

// Same rule, with the per-graph part prepared once. Throws PlacementError
// if the placement or the cost model does not fit the graph and cluster.
StepResult simulate(const SimContext& context, const Placement& placement, const Cluster& cluster,
                    const CostModel& costs, const SimOptions& options = {},
                    std::vector<TimelineEvent>* timeline = nullptr);

// The parts of the lower bound, for reports.
struct LowerBound {
  double critical_path_s = 0.0;  // every op on its fastest device, transfers free
  double average_work_s = 0.0;   // sum of fastest op times / devices
  double lp_s = 0.0;             // LP relaxation (devices of different speeds); 0 if all alike
  double value() const;          // the max of the three
};
LowerBound lower_bound_parts(const Graph& graph, const Cluster& cluster, const CostModel& costs);

// Same rule as the runtime's executor: one op at a time per device in ready
// order (lowest op id first among ready ops), per-link transfer channels with
// alpha-beta cost, compute and transfers overlap. Deterministic.
StepResult simulate(const Graph& graph, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                    const SimOptions& options = {}, std::vector<TimelineEvent>* timeline = nullptr);

// A lower bound on the step time of any placement of graph on cluster:
// max(critical path with every op on its fastest device and free transfers,
// total work / devices, LP relaxation for heterogeneous devices).
double lower_bound(const Graph& graph, const Cluster& cluster, const CostModel& costs);

}  // namespace placer
