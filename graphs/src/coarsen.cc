// Coarsening: co-location groups merged into at most max_groups, keeping the
// quotient acyclic on forward edges (algorithms.cc's header comment says why
// forward edges), parameters and their updates apart on request, and layers
// merged first on request.
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "union_find.h"

namespace placer {
namespace {

using detail::is_forward_edge;
using detail::UnionFind;

// A mutable DAG over groups, for coarsening: forward-edge adjacency, edge
// weights (bytes crossing in either direction, any phase) and a topological
// position per live node that merges keep valid.
class GroupDag {
 public:
  GroupDag(const Graph& graph, const Grouping& start, const std::function<double(OpId)>& cost)
      : n_(start.size()), uf_(start.size()), out_(n_), in_(n_), weight_(n_), cost_(n_, 0.0) {
    for (int32_t g = 0; g < n_; ++g)
      for (OpId op : start.members[g]) cost_[g] += cost(op);
    for (int32_t v = 0; v < graph.size(); ++v) {
      const Op& op = graph.op(OpId(v));
      for (const TensorRef& in : op.inputs) {
        const int32_t a = start.group_of[in.op.value], b = start.group_of[v];
        if (a == b) continue;
        const double bytes = static_cast<double>(graph.op(in.op).outputs[in.output].bytes());
        weight_[a][b] += bytes;
        weight_[b][a] += bytes;
        if (is_forward_edge(graph, in.op, OpId(v))) {
          out_[a].insert(b);
          in_[b].insert(a);
        }
      }
    }
    live_ = n_;
  }

  int32_t live() const { return live_; }

  // Kahn order of live nodes (ties: smaller id). Returns false on a cycle.
  bool compute_order() {
    std::vector<int32_t> pending(n_, 0);
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ready;
    order_.clear();
    for (int32_t v = 0; v < n_; ++v) {
      if (!alive(v)) continue;
      pending[v] = static_cast<int32_t>(in_[v].size());
      if (pending[v] == 0) ready.push(v);
    }
    while (!ready.empty()) {
      const int32_t v = ready.top();
      ready.pop();
      order_.push_back(v);
      for (int32_t w : out_[v])
        if (--pending[w] == 0) ready.push(w);
    }
    pos_.assign(n_, -1);
    for (size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = static_cast<int32_t>(k);
    return static_cast<int32_t>(order_.size()) == live_;
  }

  // Strongly connected components (over forward edges) merged into one node.
  void collapse_cycles() {
    if (compute_order()) return;
    std::vector<std::vector<int32_t>> successors(n_);
    for (int32_t v = 0; v < n_; ++v) successors[v].assign(out_[v].begin(), out_[v].end());
    const StronglyConnected scc = strongly_connected_components(successors);
    std::vector<std::pair<int32_t, int32_t>> merges;
    for (int32_t v = 0; v < n_; ++v) {
      const int32_t root = scc.root[scc.component_of[v]];
      if (alive(v) && root != v) merges.emplace_back(root, v);
    }
    for (auto [a, b] : merges) merge(find(a), find(b));
    const bool acyclic = compute_order();
    PLACER_CHECK(acyclic, "collapsing strongly connected components left a cycle");
  }

  // Merging a and b (a != b) keeps the DAG acyclic iff no path a ~> b or
  // b ~> a other than a direct edge. Nodes strictly between them in the
  // topological order are the only ones such a path can use.
  bool safe_to_merge(int32_t a, int32_t b) const {
    if (pos_[a] > pos_[b]) std::swap(a, b);
    // Ancestors of b strictly after a in the order.
    std::vector<int32_t> stack = {b};
    std::set<int32_t> seen;
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      for (int32_t u : in_[v]) {
        if (pos_[u] <= pos_[a] || seen.count(u)) continue;
        seen.insert(u);
        stack.push_back(u);
      }
    }
    for (int32_t s : out_[a])
      if (s != b && seen.count(s)) return false;
    return true;
  }

  // Merges b into a (or a into b, whichever has the smaller id survives) and
  // keeps pos_/order_ a valid topological order when the merge is safe.
  int32_t merge(int32_t a, int32_t b) {
    if (a == b) return a;
    const bool have_order = !pos_.empty() && pos_[a] >= 0 && pos_[b] >= 0;
    int32_t first = a, second = b;
    if (have_order && pos_[first] > pos_[second]) std::swap(first, second);
    std::vector<int32_t> before_merged;  // ancestors of `second` between the two
    if (have_order) {
      std::vector<int32_t> stack = {second};
      std::set<int32_t> seen;
      while (!stack.empty()) {
        const int32_t v = stack.back();
        stack.pop_back();
        for (int32_t u : in_[v]) {
          if (pos_[u] <= pos_[first] || seen.count(u)) continue;
          seen.insert(u);
          stack.push_back(u);
        }
      }
      // Reorder the interval [pos(first), pos(second)]: the ancestors of
      // `second` first, then the merged node, then the rest.
      const int32_t lo = pos_[first], hi = pos_[second];
      std::vector<int32_t> head, tail;
      for (int32_t k = lo + 1; k < hi; ++k) (seen.count(order_[k]) ? head : tail).push_back(order_[k]);
      const int32_t keep = std::min(a, b);
      int32_t k = lo;
      for (int32_t v : head) order_[k++] = v;
      order_[k++] = keep;
      for (int32_t v : tail) order_[k++] = v;
      order_[k++] = -1;  // the absorbed node's slot, dropped below
      order_.erase(std::remove(order_.begin(), order_.end(), -1), order_.end());
      for (size_t p = 0; p < order_.size(); ++p) pos_[order_[p]] = static_cast<int32_t>(p);
    }
    const int32_t keep = std::min(a, b), gone = std::max(a, b);
    uf_.parent[gone] = keep;
    cost_[keep] += cost_[gone];
    for (int32_t w : out_[gone]) {
      in_[w].erase(gone);
      if (w != keep) {
        out_[keep].insert(w);
        in_[w].insert(keep);
      }
    }
    for (int32_t u : in_[gone]) {
      out_[u].erase(gone);
      if (u != keep) {
        in_[keep].insert(u);
        out_[u].insert(keep);
      }
    }
    out_[keep].erase(gone);
    in_[keep].erase(gone);
    out_[gone].clear();
    in_[gone].clear();
    for (auto& [w, bytes] : weight_[gone]) {
      weight_[w].erase(gone);
      if (w == keep) continue;
      weight_[keep][w] += bytes;
      weight_[w][keep] += bytes;
    }
    weight_[gone].clear();
    weight_[keep].erase(keep);
    if (!pos_.empty()) pos_[gone] = -1;
    --live_;
    return keep;
  }

  bool alive(int32_t v) const { return uf_.parent[v] == v; }
  int32_t find(int32_t v) { return uf_.find(v); }
  double cost(int32_t v) const { return cost_[v]; }
  const std::set<int32_t>& out(int32_t v) const { return out_[v]; }
  const std::set<int32_t>& in(int32_t v) const { return in_[v]; }
  const std::map<int32_t, double>& weights(int32_t v) const { return weight_[v]; }
  const std::vector<int32_t>& order() const { return order_; }
  int32_t pos(int32_t v) const { return pos_[v]; }

 private:
  int32_t n_;
  int32_t live_ = 0;
  UnionFind uf_;
  std::vector<std::set<int32_t>> out_, in_;
  std::vector<std::map<int32_t, double>> weight_;
  std::vector<double> cost_;
  std::vector<int32_t> order_, pos_;
};

// state[g]: whether node g holds only parameters and their updates, at least
// one update (empty: no node is kept apart). Indexed by the DAG's node ids.
std::vector<char> state_groups(const Graph& graph, const Grouping& start, GroupDag& dag) {
  std::vector<char> updates(start.size(), 0), only_state(start.size(), 1);
  for (int32_t g = 0; g < start.size(); ++g) {
    const int32_t root = dag.find(g);
    for (OpId op : start.members[g]) {
      const std::string& type = graph.op(op).type;
      updates[root] |= type == op_types::kSgd;
      only_state[root] &= type == op_types::kSgd || type == op_types::kParam;
    }
  }
  std::vector<char> state(start.size(), 0);
  for (int32_t g = 0; g < start.size(); ++g) state[g] = updates[g] && only_state[g];
  return state;
}

bool same_kind(const std::vector<char>& state, int32_t a, int32_t b) { return state.empty() || state[a] == state[b]; }

// The kind of a merged node: state only when both were.
void state_of_merged(std::vector<char>& state, int32_t keep, int32_t a, int32_t b) {
  state[keep] = state[a] && state[b];
}

// The model block of each live node: the Op::layer its forward ops share (""
// when they have none or disagree). Indexed by the DAG's node ids.
std::vector<std::string> node_layers(const Graph& graph, const Grouping& start, GroupDag& dag) {
  std::vector<std::string> layer(start.size());
  std::vector<char> mixed(start.size(), 0);
  for (int32_t g = 0; g < start.size(); ++g) {
    const int32_t root = dag.find(g);
    for (OpId op : start.members[g]) {
      const Op& o = graph.op(op);
      if (o.phase != Phase::Forward || o.layer.empty()) continue;
      if (layer[root].empty()) layer[root] = o.layer;
      mixed[root] |= layer[root] != o.layer;
    }
  }
  for (int32_t g = 0; g < start.size(); ++g)
    if (mixed[g]) layer[g].clear();
  return layer;
}

// Coarsening phase 1: heavy edges first, but no group above twice the average share,
// so one group does not swallow the graph; with state_apart, only pairs of one kind;
// with `layers` (node_layers), only pairs inside one block.
void merge_heavy_edges(GroupDag& dag, int32_t groups, int32_t max_groups, const std::vector<char>& state,
                       const std::vector<std::string>* layers = nullptr) {
  double total = 0.0;
  double largest = 0.0;
  for (int32_t g = 0; g < groups; ++g) {
    if (!dag.alive(g)) continue;
    total += dag.cost(g);
    largest = std::max(largest, dag.cost(g));
  }
  const double cap = std::max(largest, 2.0 * total / max_groups);
  if (dag.live() <= max_groups) return;
  // Candidate forward edges by weight (bytes), heaviest first; stale
  // entries are skipped when popped.
  using Entry = std::tuple<double, int32_t, int32_t>;  // weight, -a, -b (ties: smaller ids first)
  std::priority_queue<Entry> heap;
  auto weight = [&](int32_t a, int32_t b) {
    auto it = dag.weights(a).find(b);
    return it == dag.weights(a).end() ? 0.0 : it->second;
  };
  auto push_edges = [&](int32_t v) {
    for (int32_t w : dag.out(v)) heap.emplace(weight(v, w), -v, -w);
  };
  for (int32_t v = 0; v < groups; ++v)
    if (dag.alive(v)) push_edges(v);
  while (dag.live() > max_groups && !heap.empty()) {
    auto [w, na, nb] = heap.top();
    heap.pop();
    const int32_t a = -na, b = -nb;
    if (!dag.alive(a) || !dag.alive(b) || !dag.out(a).count(b)) continue;
    if (weight(a, b) != w) continue;  // stale weight
    if (dag.cost(a) + dag.cost(b) > cap) continue;
    if (!same_kind(state, a, b)) continue;
    if (layers && ((*layers)[a].empty() || (*layers)[a] != (*layers)[b])) continue;
    if (!dag.safe_to_merge(a, b)) continue;
    const int32_t keep = dag.merge(a, b);
    push_edges(keep);
    for (int32_t v : dag.in(keep)) heap.emplace(weight(v, keep), -v, -keep);
  }
}

// Coarsening phase 2: merge neighbours in topological order, the cheapest pair first.
// A contiguous run of a topological order never closes a cycle.
// Pairs of one kind first (state_apart); any pair where none is left.
void merge_cheapest_neighbours(GroupDag& dag, int32_t max_groups, std::vector<char>& state) {
  while (dag.live() > max_groups) {
    const auto& order = dag.order();
    size_t best = 0;
    double best_cost = 0.0;
    bool found = false, best_same = false;
    for (size_t k = 0; k + 1 < order.size(); ++k) {
      const bool same = same_kind(state, order[k], order[k + 1]);
      const double c = dag.cost(order[k]) + dag.cost(order[k + 1]);
      if (!found || (same && !best_same) || (same == best_same && c < best_cost)) {
        best = k;
        best_cost = c;
        best_same = same;
        found = true;
      }
    }
    const int32_t a = order[best], b = order[best + 1];
    const int32_t keep = dag.merge(a, b);
    if (!state.empty()) state_of_merged(state, keep, a, b);
  }
}

// The final groups, numbered in topological order of the quotient.
Grouping numbered_groups(const Graph& graph, const Grouping& start, GroupDag& dag) {
  const auto& order = dag.order();
  std::vector<int32_t> index_of(start.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) index_of[order[k]] = static_cast<int32_t>(k);
  Grouping result;
  result.members.resize(order.size());
  result.group_of.assign(graph.size(), -1);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const int32_t g = index_of[dag.find(start.group_of[v])];
    result.group_of[v] = g;
    result.members[g].emplace_back(v);
  }
  return result;
}

}  // namespace

Grouping coarsen(const Graph& graph, int32_t max_groups, const std::function<double(OpId)>& cost,
                 const CoarsenOptions& options) {
  if (max_groups < 1) throw InputError(detail::concat("coarsen: max_groups must be >= 1, got ", max_groups));
  const Grouping start = colocation_groups(graph);
  const std::function<double(OpId)> op_cost =
      cost ? cost : std::function<double(OpId)>([&](OpId op) { return graph.op(op).flops; });
  GroupDag dag(graph, start, op_cost);
  dag.collapse_cycles();
  std::vector<char> state;
  if (options.state_apart) state = state_groups(graph, start, dag);
  if (options.layers_first) {
    // A merged node keeps the block of the node that survives (the smaller
    // id): both had it, since only pairs of one block merge here.
    const std::vector<std::string> layers = node_layers(graph, start, dag);
    merge_heavy_edges(dag, start.size(), max_groups, state, &layers);
  }
  merge_heavy_edges(dag, start.size(), max_groups, state);
  merge_cheapest_neighbours(dag, max_groups, state);
  return numbered_groups(graph, start, dag);
}

}  // namespace placer
