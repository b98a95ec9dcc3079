// Graph algorithms over the IR. Ops are stored in topological order, so most
// are one pass in id order.
//
// Co-location and coarsening. In a training step every backward op shares a
// device with its forward op and every update op with its param, so the
// quotient of a training graph by these groups always has cycles through the
// gradients (f -> g forward, g' -> f' backward, {f,f'} <-> {g,g'}). Acyclicity
// is therefore defined on FORWARD edges (between two forward-phase ops): the
// backward pass mirrors them. For a forward-only graph that is every edge.
#include "placer/graphs/algorithms.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <unordered_map>

#include "placer/graphs/error.h"

namespace placer {

std::vector<OpId> topological_order(const Graph& graph) {
  std::vector<OpId> order;
  order.reserve(graph.ops().size());
  for (int32_t i = 0; i < graph.size(); ++i) order.emplace_back(i);
  return order;
}

std::vector<OpId> ancestors(const Graph& graph, OpId op) {
  std::vector<char> seen(graph.size(), 0);
  std::vector<int32_t> stack = {op.value};
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    for (const TensorRef& in : graph.op(OpId(v)).inputs)
      if (!seen[in.op.value]) {
        seen[in.op.value] = 1;
        stack.push_back(in.op.value);
      }
  }
  std::vector<OpId> out;
  for (int32_t i = 0; i < graph.size(); ++i)
    if (seen[i] && i != op.value) out.emplace_back(i);
  return out;
}

std::vector<OpId> descendants(const Graph& graph, OpId op) {
  std::vector<char> seen(graph.size(), 0);
  std::vector<int32_t> stack = {op.value};
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    for (OpId c : graph.consumers(OpId(v)))
      if (!seen[c.value]) {
        seen[c.value] = 1;
        stack.push_back(c.value);
      }
  }
  std::vector<OpId> out;
  for (int32_t i = 0; i < graph.size(); ++i)
    if (seen[i] && i != op.value) out.emplace_back(i);
  return out;
}

CriticalPath critical_path(const Graph& graph, const std::function<double(OpId)>& cost) {
  const int32_t n = static_cast<int32_t>(graph.size());
  CriticalPath result;
  if (n == 0) return result;
  std::vector<double> finish(n, 0.0);
  std::vector<int32_t> pred(n, -1);
  int32_t end = 0;
  for (int32_t i = 0; i < n; ++i) {
    double start = 0.0;
    for (const TensorRef& in : graph.op(OpId(i)).inputs)
      if (finish[in.op.value] > start || (pred[i] < 0 && finish[in.op.value] == start)) {
        start = finish[in.op.value];
        pred[i] = in.op.value;
      }
    finish[i] = start + cost(OpId(i));
    if (finish[i] > finish[end]) end = i;
  }
  result.length = finish[end];
  for (int32_t v = end; v >= 0; v = pred[v]) result.ops.emplace_back(v);
  std::reverse(result.ops.begin(), result.ops.end());
  return result;
}

double total_flops(const Graph& graph) {
  double total = 0.0;
  for (const Op& op : graph.ops()) total += op.flops;
  return total;
}

int64_t total_param_bytes(const Graph& graph) {
  int64_t total = 0;
  for (const Op& op : graph.ops()) total += op.param_bytes;
  return total;
}

int64_t total_output_bytes(const Graph& graph) {
  int64_t total = 0;
  for (const Op& op : graph.ops()) total += op.output_bytes();
  return total;
}

StronglyConnected strongly_connected_components(const std::vector<std::vector<int32_t>>& successors) {
  const int32_t n = static_cast<int32_t>(successors.size());
  StronglyConnected out;
  out.component_of.assign(n, -1);
  std::vector<int32_t> index(n, -1), low(n, 0), stack;
  std::vector<char> on_stack(n, 0);
  int32_t counter = 0;
  std::vector<std::pair<int32_t, size_t>> call;  // (node, next successor to follow)
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    call.push_back({root, 0});
    while (!call.empty()) {
      auto& [v, next] = call.back();
      if (next == 0 && index[v] < 0) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = 1;
      }
      if (next < successors[v].size()) {
        const int32_t w = successors[v][next++];
        if (index[w] < 0)
          call.push_back({w, 0});
        else if (on_stack[w])
          low[v] = std::min(low[v], index[w]);
        continue;
      }
      if (low[v] == index[v]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          out.component_of[w] = out.size();
        } while (w != v);
        out.root.push_back(v);
      }
      const int32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  return out;
}

namespace {

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

// Groups from a union-find, numbered by their first op.
Grouping grouping_from(UnionFind& uf, int32_t n) {
  Grouping g;
  g.group_of.assign(n, -1);
  std::vector<int32_t> index_of_root(n, -1);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t r = uf.find(i);
    if (index_of_root[r] < 0) {
      index_of_root[r] = g.size();
      g.members.emplace_back();
    }
    g.group_of[i] = index_of_root[r];
    g.members[index_of_root[r]].emplace_back(i);
  }
  return g;
}

bool is_forward_edge(const Graph& graph, OpId from, OpId to) {
  return graph.op(from).phase == Phase::Forward && graph.op(to).phase == Phase::Forward;
}

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

}  // namespace

Grouping colocation_groups(const Graph& graph) {
  const int32_t n = static_cast<int32_t>(graph.size());
  UnionFind uf(n);
  std::unordered_map<std::string, int32_t> first_of_group;
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(OpId(i));
    if (!op.group.empty()) {
      auto [it, inserted] = first_of_group.emplace(op.group, i);
      if (!inserted) uf.unite(it->second, i);
    }
    if (op.phase != Phase::Forward && op.forward.valid() && op.forward.value < n) uf.unite(i, op.forward.value);
  }
  return grouping_from(uf, n);
}

Placement round_robin_groups(const Graph& graph, const std::vector<DeviceId>& devices) {
  if (devices.empty()) throw InputError("round_robin_groups: needs at least one device");
  const Grouping groups = colocation_groups(graph);  // numbered in order of their first op (grouping_from)
  Placement placement;
  placement.device_of.resize(graph.size());
  for (int32_t k = 0; k < groups.size(); ++k)
    for (OpId op : groups.members[k]) placement.device_of[op.value] = devices[k % devices.size()];
  return placement;
}

std::vector<DeviceId> mixed_step_devices(const Cluster& cluster) {
  std::vector<DeviceId> cpus, others;
  for (int32_t d = 0; d < cluster.size(); ++d)
    (cluster.devices[d].kind == DeviceKind::Cpu ? cpus : others).push_back(DeviceId(d));
  if (others.empty()) return cpus.size() >= 2 ? cpus : std::vector<DeviceId>{};
  if (cpus.empty()) return {};
  cpus.push_back(others.front());
  return cpus;
}

namespace {

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

// Groups in topological order over forward edges (smallest index first); groups left on a cycle
// follow in index order. Returns the order; pos[g] is g's place in it.
std::vector<int32_t> quotient_order(const Graph& graph, const Grouping& grouping, std::vector<int32_t>& pos) {
  const int32_t n = static_cast<int32_t>(graph.size());
  const int32_t k = grouping.size();
  std::vector<std::set<int32_t>> succ(k);
  std::vector<int32_t> pending(k, 0);
  for (int32_t v = 0; v < n; ++v)
    for (const TensorRef& in : graph.op(OpId(v)).inputs) {
      const int32_t a = grouping.group_of[in.op.value], b = grouping.group_of[v];
      if (a != b && is_forward_edge(graph, in.op, OpId(v)) && succ[a].insert(b).second) ++pending[b];
    }
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ready;
  for (int32_t g = 0; g < k; ++g)
    if (pending[g] == 0) ready.push(g);
  std::vector<int32_t> order;
  pos.assign(k, -1);
  while (!ready.empty()) {
    const int32_t g = ready.top();
    ready.pop();
    pos[g] = static_cast<int32_t>(order.size());
    order.push_back(g);
    for (int32_t s : succ[g])
      if (--pending[s] == 0) ready.push(s);
  }
  for (int32_t g = 0; g < k; ++g)
    if (pos[g] < 0) {
      pos[g] = static_cast<int32_t>(order.size());
      order.push_back(g);
    }
  return order;
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

Graph quotient_graph(const Graph& graph, const Grouping& grouping) {
  const int32_t n = static_cast<int32_t>(graph.size());
  const int32_t k = grouping.size();
  PLACER_CHECK(static_cast<int32_t>(grouping.group_of.size()) == n, "grouping covers ", grouping.group_of.size(),
               " ops, graph has ", n);
  std::vector<int32_t> pos;
  const std::vector<int32_t> order = quotient_order(graph, grouping, pos);

  // Cross-group tensors that go forward in that order become edges; each is
  // one output of its producer group. Tensors that would point backwards (the
  // gradients of a training step) and tensors inside a group count in one
  // extra "internal" uint8 output, so output bytes still sum to the graph's.
  std::map<std::pair<int32_t, int32_t>, int32_t> tensor_index;  // (op, output) -> output index of its group op
  std::vector<std::vector<TensorSpec>> outputs(k);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> inputs(k);  // (producer group, its output index)
  std::vector<std::set<std::pair<int32_t, int32_t>>> seen_inputs(k);
  std::vector<int64_t> exported_bytes(k, 0);
  for (int32_t v = 0; v < n; ++v)
    for (const TensorRef& in : graph.op(OpId(v)).inputs) {
      const int32_t a = grouping.group_of[in.op.value], b = grouping.group_of[v];
      if (a == b || pos[a] > pos[b]) continue;
      auto key = std::make_pair(in.op.value, in.output);
      auto it = tensor_index.find(key);
      if (it == tensor_index.end()) {
        const TensorSpec& t = graph.op(in.op).outputs[in.output];
        it = tensor_index.emplace(key, static_cast<int32_t>(outputs[a].size())).first;
        outputs[a].push_back(t);
        exported_bytes[a] += t.bytes();
      }
      if (seen_inputs[b].insert({a, it->second}).second) inputs[b].emplace_back(a, it->second);
    }

  Graph q;
  q.name = graph.name + "/groups";
  q.attrs["quotient_of"] = graph.name;
  q.attrs["groups"] = std::to_string(k);
  std::vector<OpId> id_of(k);
  for (int32_t g : order) {
    Op op;
    op.name = "group" + std::to_string(g);
    op.type = "placer::group";
    int64_t bytes = 0;
    for (size_t m = 0; m < grouping.members[g].size(); ++m) {
      const Op& member = graph.op(grouping.members[g][m]);
      op.flops += member.flops;
      op.param_bytes += member.param_bytes;
      bytes += member.output_bytes();
      op.layer = m == 0 ? member.layer : (op.layer == member.layer ? op.layer : "");
    }
    for (auto [producer, output] : inputs[g]) op.inputs.push_back(TensorRef{id_of[producer], output});
    op.outputs = outputs[g];
    if (bytes > exported_bytes[g]) op.outputs.push_back(TensorSpec{{bytes - exported_bytes[g]}, DType::UInt8});
    id_of[g] = q.add_op(std::move(op));
  }
  return q;
}

}  // namespace placer
