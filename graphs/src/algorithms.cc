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
#include "union_find.h"

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

using detail::is_forward_edge;
using detail::UnionFind;

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
