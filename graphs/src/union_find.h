// Private to graphs/src: the union-find and the forward-edge test that
// co-location (algorithms.cc) and coarsening (coarsen.cc) share.
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer::detail {

struct UnionFind {
  std::vector<int32_t> parent;
  explicit UnionFind(int32_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  // The smaller root wins, so a root is its group's first op.
  void unite(int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent[b] = a;
  }
};

// Acyclicity is defined on forward edges (algorithms.cc's header comment).
inline bool is_forward_edge(const Graph& graph, OpId from, OpId to) {
  return graph.op(from).phase == Phase::Forward && graph.op(to).phase == Phase::Forward;
}

}  // namespace placer::detail
