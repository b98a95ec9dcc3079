// Graph algorithms shared by the simulator, the placers and the policies.
// Ops are stored in topological order (see Graph), so many of these are
// single passes in id order.
#pragma once

#include <functional>
#include <vector>

#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer {

std::vector<OpId> topological_order(const Graph& graph);  // id order; kept for clarity

// All ops from which `op` is reachable (excluding op), ascending.
std::vector<OpId> ancestors(const Graph& graph, OpId op);
// All ops reachable from `op` (excluding op), ascending.
std::vector<OpId> descendants(const Graph& graph, OpId op);

// Longest path where each op costs cost(op) and edges are free.
struct CriticalPath {
  double length = 0.0;
  std::vector<OpId> ops;  // the path, in order
};
CriticalPath critical_path(const Graph& graph, const std::function<double(OpId)>& cost);

double total_flops(const Graph& graph);
int64_t total_param_bytes(const Graph& graph);
// Bytes of all op outputs (an upper bound on activation memory).
int64_t total_output_bytes(const Graph& graph);

// Strongly connected components of a directed graph on nodes 0..n-1 given by
// successor lists (Tarjan's algorithm, iterative). The search starts from
// nodes in id order and follows each list in its order; components are
// numbered in the order it completes them (a component before every
// component that reaches it), and root[c] is the node of component c it
// reached first.
struct StronglyConnected {
  std::vector<int32_t> component_of;  // node -> component
  std::vector<int32_t> root;          // component -> its first-reached node
  int32_t size() const { return static_cast<int32_t>(root.size()); }
};
StronglyConnected strongly_connected_components(const std::vector<std::vector<int32_t>>& successors);

// Co-location: ops that must share a device end up in one group.
// Forced together: ops sharing Op::group, a Backward op with its forward op,
// an Update op with its param op.
struct Grouping {
  std::vector<int32_t> group_of;           // op -> group index
  std::vector<std::vector<OpId>> members;  // group -> ops, ascending
  int32_t size() const { return static_cast<int32_t>(members.size()); }
};
Grouping colocation_groups(const Graph& graph);

// Co-location groups in the order of their first op, dealt to `devices` in
// turn: the split that moves the most between devices while keeping groups
// together. The profile measures it (MixedStep); fidelity leaves it out.
Placement round_robin_groups(const Graph& graph, const std::vector<DeviceId>& devices);
// The devices the profile's mixed step deals the graph to: every device of a
// cluster of two or more CPU devices and nothing else; every CPU device and then
// the first other device (a GPU) of a cluster that has both (a copy between a
// CPU device and a GPU costs most while every CPU device works beside it:
// bench/results/gpu_crossings.md); empty otherwise.
std::vector<DeviceId> mixed_step_devices(const Cluster& cluster);

struct CoarsenOptions {
  // A group of only parameters and their updates (op types param and sgd)
  // merges only with another such group, never into the layer that reads the
  // parameter (its heaviest edge), so that a placement of the groups can still
  // keep a parameter and its update off its consumer's device; where no such
  // pair is left and there are still too many groups, any neighbours merge.
  bool state_apart = false;
  // Heavy edges inside one model block (Op::layer of the groups' forward ops)
  // merge first, so that a layer-wise placement (each LSTM layer on its own
  // device) stays expressible; edges across blocks merge only after those.
  bool layers_first = false;
};

// Coarsen to at most max_groups groups, merging along heavy edges while
// keeping the quotient graph acyclic and starting from colocation_groups().
Grouping coarsen(const Graph& graph, int32_t max_groups, const std::function<double(OpId)>& cost,
                 const CoarsenOptions& options = {});

// The quotient graph of a grouping: one op per group (flops, param bytes and
// output bytes summed; edges of cross-group tensors kept). Used by placers
// that work on groups; a group placement expands back with expand_placement.
Graph quotient_graph(const Graph& graph, const Grouping& grouping);

}  // namespace placer
