// The graph the max-load DP splits (private to agent/src): the paper's code's
// contraction of a workload (throughput-dp/dp.cpp, main() up to runDP), so
// that the DP searches the same space and finds the same optimum.
// 1. One group per colocation class: its forward and backward nodes share a device.
// 2. A class with backward nodes only ("orphaned", e.g. a loss's gradient
//    nodes) gets an artificial forward node of no cost, ordered by mirroring
//    the backward edges that touch the class (a -> b becomes fwd(b) -> fwd(a)).
// 3. Classes whose forward nodes are mutually reachable are fused (a cycle of
//    classes has no contiguous split).
// 4. A class whose forward part costs nothing, touches no backward node, has
//    one forward neighbour and backward work of no cost joins that neighbour
//    (the paper's "trivial node optimizations"; repeated until none is left),
//    unless an accelerator cannot run it while it can run the neighbour (the
//    paper's code merges those too, and misses splits). One that takes memory
//    joins only with `join_memory` (the paper's way; apart, the lattice of a
//    model with many weight classes, gnmt's, grows past any limit): where
//    memory binds, it could have sat on another device.
// A contiguous split is then a chain of ideals (downward-closed sets) of the
// groups' forward order; each difference of two ideals is one device's set.
#pragma once

#include <cstdint>
#include <vector>

#include "placer/graphs/workload.h"

namespace placer {

struct DpGroups {
  // Groups in topological order of their forward parts.
  std::vector<std::vector<int32_t>> members;  // original node indices, forward and backward
  std::vector<std::vector<int32_t>> preds;    // forward predecessors (true and artificial edges), unique
  std::vector<double> cpu_latency, accelerator_latency, bytes;
  std::vector<char> accelerator_ok;
  bool joined_memory = false;  // a free class that takes memory joined its neighbour
  int32_t size() const { return static_cast<int32_t>(members.size()); }
};

DpGroups contract_for_dp(const Workload& w, bool join_memory = true);

}  // namespace placer
