// The paper's contraction of a workload for the max-load DP (max_load_contract.h).
#include "max_load_contract.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"

namespace placer {

namespace {

// The paper's code treats latencies below this as zero.
constexpr double kZero = 1e-6;

class UnionFind {
 public:
  explicit UnionFind(int32_t n) : parent_(static_cast<size_t>(n)) { std::iota(parent_.begin(), parent_.end(), 0); }
  int32_t find(int32_t a) {
    while (parent_[static_cast<size_t>(a)] != a)
      a = parent_[static_cast<size_t>(a)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(a)])];
    return a;
  }
  void merge_into(int32_t a, int32_t b) { parent_[static_cast<size_t>(find(a))] = find(b); }

 private:
  std::vector<int32_t> parent_;
};

using Edge = std::pair<int32_t, int32_t>;

// Classes as they are merged: a node's class is uf.find(base[node]).
struct Classes {
  const Workload& w;
  std::vector<int32_t> base;
  int32_t count = 0;
  UnionFind uf{0};
  std::vector<char> artificial;        // per base class: it has an artificial forward node
  std::vector<Edge> artificial_edges;  // between base classes' forward parts

  explicit Classes(const Workload& workload) : w(workload) {
    base = w.colocation_classes(&count);
    uf = UnionFind(count);
    artificial.assign(static_cast<size_t>(count), 0);
  }
  int32_t of(int32_t node) { return uf.find(base[static_cast<size_t>(node)]); }
};

// The contracted graph at one moment: one forward and one backward part per class.
struct View {
  std::vector<char> has_forward, has_backward;
  std::vector<double> forward_cpu, forward_accelerator, backward_latency, bytes;  // bytes: the whole class's
  std::vector<char> accelerator_ok;               // per class: every node of it runs on an accelerator
  std::set<Edge> forward_edges;                   // class -> class, forward parts (true and artificial)
  std::set<Edge> true_forward_edges, artificial;  // the two kinds apart (the paper counts both)
  std::vector<int32_t> backward_touches;          // per class: true edges between its forward part and a backward part
};

View view_of(Classes& c) {
  View v;
  const size_t n = static_cast<size_t>(c.count);
  v.has_forward.assign(n, 0);
  v.has_backward.assign(n, 0);
  v.forward_cpu.assign(n, 0.0);
  v.forward_accelerator.assign(n, 0.0);
  v.backward_latency.assign(n, 0.0);
  v.backward_touches.assign(n, 0);
  v.bytes.assign(n, 0.0);
  v.accelerator_ok.assign(n, 1);
  for (int32_t u = 0; u < c.w.size(); ++u) {
    const WorkloadNode& node = c.w.nodes[static_cast<size_t>(u)];
    const size_t k = static_cast<size_t>(c.of(u));
    v.bytes[k] += node.size;
    if (!node.accelerator_ok) v.accelerator_ok[k] = 0;
    if (node.backward) {
      v.has_backward[k] = 1;
      v.backward_latency[k] += node.cpu_latency + node.accelerator_latency;
    } else {
      v.has_forward[k] = 1;
      v.forward_cpu[k] += node.cpu_latency;
      v.forward_accelerator[k] += node.accelerator_latency;
    }
  }
  for (int32_t k = 0; k < c.count; ++k)
    if (c.artificial[static_cast<size_t>(k)]) v.has_forward[static_cast<size_t>(c.uf.find(k))] = 1;
  std::set<std::pair<Edge, int>>
      mixed;  // (classes, which side is backward): distinct true edges touching a backward part
  for (const WorkloadEdge& e : c.w.edges) {
    const bool bf = c.w.nodes[static_cast<size_t>(e.from)].backward, bt = c.w.nodes[static_cast<size_t>(e.to)].backward;
    const Edge classes{c.of(e.from), c.of(e.to)};
    if (!bf && !bt) {
      if (classes.first != classes.second) v.true_forward_edges.insert(classes);
    } else if (!bf && bt) {
      mixed.insert({classes, 1});  // forward part of `first` touches a backward part (never itself: distinct parts)
    }
  }
  for (const auto& [classes, side] : mixed) {
    (void)side;
    ++v.backward_touches[static_cast<size_t>(classes.first)];
  }
  for (const Edge& e : c.artificial_edges) {
    const Edge classes{c.uf.find(e.first), c.uf.find(e.second)};
    if (classes.first != classes.second) v.artificial.insert(classes);
  }
  v.forward_edges = v.true_forward_edges;
  v.forward_edges.insert(v.artificial.begin(), v.artificial.end());
  return v;
}

// Step 2: an artificial forward node for each class with backward nodes only.
void add_artificial_forward_nodes(Classes& c) {
  const View v = view_of(c);
  for (int32_t k = 0; k < c.count; ++k)
    if (v.has_backward[static_cast<size_t>(k)] && !v.has_forward[static_cast<size_t>(k)])
      c.artificial[static_cast<size_t>(k)] = 1;
  for (const WorkloadEdge& e : c.w.edges) {
    if (!c.w.nodes[static_cast<size_t>(e.from)].backward || !c.w.nodes[static_cast<size_t>(e.to)].backward) continue;
    const int32_t a = c.of(e.from), b = c.of(e.to);
    if (a == b) continue;
    if (c.artificial[static_cast<size_t>(a)] || c.artificial[static_cast<size_t>(b)])
      c.artificial_edges.push_back({b, a});
  }
}

// Step 3: fuse the strongly connected components of the classes' forward order,
// each into the member the search reached first.
void fuse_cycles(Classes& c) {
  const View v = view_of(c);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(c.count));
  for (const Edge& e : v.forward_edges) out[static_cast<size_t>(e.first)].push_back(e.second);
  const StronglyConnected scc = strongly_connected_components(out);
  for (int32_t k = 0; k < c.count; ++k) c.uf.merge_into(k, scc.root[static_cast<size_t>(scc.component_of[k])]);
}

// Step 4: one class that costs nothing and hangs off a single forward neighbour, or -1. Unlike the
// paper's code, a class that an accelerator cannot run while its neighbour can stays apart (joined, it
// would keep the neighbour off every accelerator), and one that takes memory joins only if
// `join_memory` (as the paper's: where memory binds, apart it could sit on another device).
std::pair<int32_t, int32_t> trivial_merge(const View& v, bool join_memory) {
  std::vector<int32_t> degree(v.has_forward.size(), 0), neighbour(v.has_forward.size(), -1);
  for (const std::set<Edge>* edges : {&v.true_forward_edges, &v.artificial})
    for (const Edge& e : *edges) {
      ++degree[static_cast<size_t>(e.first)];
      neighbour[static_cast<size_t>(e.first)] = e.second;
      ++degree[static_cast<size_t>(e.second)];
      neighbour[static_cast<size_t>(e.second)] = e.first;
    }
  for (size_t k = 0; k < v.has_forward.size(); ++k) {
    if (!v.has_forward[k] || v.forward_cpu[k] >= kZero || v.forward_accelerator[k] >= kZero) continue;
    if (v.backward_touches[k] != 0 || degree[k] != 1 || v.backward_latency[k] >= kZero) continue;
    const size_t into = static_cast<size_t>(neighbour[k]);
    if ((!join_memory && v.bytes[k] >= kZero) || (!v.accelerator_ok[k] && v.accelerator_ok[into])) continue;
    return {static_cast<int32_t>(k), neighbour[k]};
  }
  return {-1, -1};
}

DpGroups groups_of(Classes& c) {
  const View v = view_of(c);
  const size_t n = static_cast<size_t>(c.count);
  std::vector<int32_t> dense(n, -1);  // class root -> group, in topological order (Kahn)
  std::vector<int32_t> indegree(n, 0);
  std::vector<std::vector<int32_t>> out(n);
  for (const Edge& e : v.forward_edges) {
    out[static_cast<size_t>(e.first)].push_back(e.second);
    ++indegree[static_cast<size_t>(e.second)];
  }
  std::vector<int32_t> ready, order;
  for (size_t k = 0; k < n; ++k)
    if (v.has_forward[k] && indegree[k] == 0) ready.push_back(static_cast<int32_t>(k));
  std::reverse(ready.begin(), ready.end());
  while (!ready.empty()) {
    const int32_t k = ready.back();
    ready.pop_back();
    dense[static_cast<size_t>(k)] = static_cast<int32_t>(order.size());
    order.push_back(k);
    for (int32_t x : out[static_cast<size_t>(k)])
      if (--indegree[static_cast<size_t>(x)] == 0) ready.push_back(x);
  }
  const size_t forward_parts = static_cast<size_t>(std::count(v.has_forward.begin(), v.has_forward.end(), 1));
  PLACER_CHECK(order.size() == forward_parts, "the fused forward order still has a cycle");
  DpGroups g;
  const size_t m = order.size();
  g.members.resize(m);
  g.preds.resize(m);
  g.cpu_latency.assign(m, 0.0);
  g.accelerator_latency.assign(m, 0.0);
  g.bytes.assign(m, 0.0);
  g.accelerator_ok.assign(m, 1);
  for (int32_t u = 0; u < c.w.size(); ++u) {
    const int32_t k = dense[static_cast<size_t>(c.of(u))];
    PLACER_CHECK(k >= 0, "a class without a forward part after step 2");
    const WorkloadNode& node = c.w.nodes[static_cast<size_t>(u)];
    const size_t gk = static_cast<size_t>(k);
    g.members[gk].push_back(u);
    g.cpu_latency[gk] += node.cpu_latency;
    g.accelerator_latency[gk] += node.accelerator_latency;
    g.bytes[gk] += node.size;
    if (!node.accelerator_ok) g.accelerator_ok[gk] = 0;
  }
  for (const Edge& e : v.forward_edges)
    g.preds[static_cast<size_t>(dense[static_cast<size_t>(e.second)])].push_back(dense[static_cast<size_t>(e.first)]);
  return g;
}

}  // namespace

DpGroups contract_for_dp(const Workload& w, bool join_memory) {
  Classes c(w);
  add_artificial_forward_nodes(c);
  fuse_cycles(c);
  bool joined_memory = false;
  for (;;) {
    const View v = view_of(c);
    const auto [from, into] = trivial_merge(v, join_memory);
    if (from < 0) break;
    joined_memory = joined_memory || v.bytes[static_cast<size_t>(from)] >= kZero;
    c.uf.merge_into(from, into);
  }
  DpGroups groups = groups_of(c);
  groups.joined_memory = joined_memory;
  return groups;
}

}  // namespace placer
