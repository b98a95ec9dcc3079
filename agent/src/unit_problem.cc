// The unit problem every algorithmic placer works on: units with costs per
// device, memory, edges and co-location groups, at op or coarsened granularity.
#include "placers_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"

namespace placer {

double UnitProblem::group_cost(int32_t g, int32_t device) const {
  double s = 0.0;
  for (int32_t u : members[g]) s += c(u, device);
  return s;
}

double UnitProblem::mean_cost(int32_t unit) const {
  double s = 0.0;
  for (int32_t d = 0; d < k; ++d) s += c(unit, d);
  return k ? s / k : 0.0;
}

double UnitProblem::mean_transfer(int64_t bytes) const {
  if (k < 2) return 0.0;
  double s = 0.0;
  for (int32_t a = 0; a < k; ++a)
    for (int32_t b = 0; b < k; ++b)
      if (a != b) s += transfer(a, b, bytes);
  return s / (k * (k - 1));
}

int64_t op_memory_estimate(const Op& op) {
  if (op.type == op_types::kParam) return std::max(op.param_bytes, op.output_bytes());
  if (op.type == op_types::kSgd) return 0;  // updates its param in place
  return add_bytes(op.param_bytes, op.output_bytes());
}

void check_context(const PlaceContext& context) {
  if (!context.graph) throw InputError("place: no graph given");
  if (!context.cluster) throw InputError("place: no cluster given");
  if (!context.env) throw InputError("place: no environment given");
  if (context.graph->size() == 0) throw InputError("place: graph '" + context.graph->name + "' has no ops");
  if (context.cluster->size() == 0) throw InputError("place: cluster '" + context.cluster->name + "' has no devices");
  if (context.env->graph().size() != context.graph->size() || context.env->cluster().size() != context.cluster->size())
    throw InputError("place: the environment was built for another graph or cluster");
}

void set_memory_fraction(UnitProblem& p, const Cluster& cluster, double memory_fraction) {
  p.capacity.resize(p.k);
  for (int32_t d = 0; d < p.k; ++d)
    p.capacity[d] = static_cast<int64_t>(static_cast<double>(cluster.devices[d].memory_bytes) * memory_fraction);
}

UnitProblem make_unit_problem(const PlaceContext& context, double memory_fraction) {
  check_context(context);
  return make_op_problem(*context.graph, *context.cluster, *context.env->costs(), memory_fraction);
}

namespace {

// Per op: its name, cost on each device, memory estimate, and the bytes from
// each producer (each distinct tensor counted once).
void add_ops(const Graph& graph, const CostModel& costs, UnitProblem& p) {
  for (int32_t i = 0; i < p.n; ++i) {
    const Op& op = graph.op(OpId(i));
    p.unit_names[i] = op.name;
    for (int32_t d = 0; d < p.k; ++d) p.cost[static_cast<size_t>(i) * p.k + d] = costs.op_seconds(OpId(i), DeviceId(d));
    p.mem[i] = op_memory_estimate(op);
    std::vector<TensorRef> seen;
    for (const TensorRef& in : op.inputs) {
      if (std::find(seen.begin(), seen.end(), in) != seen.end()) continue;
      seen.push_back(in);
      const Op& src = graph.op(in.op);
      const int64_t bytes =
          in.output >= 0 && in.output < static_cast<int32_t>(src.outputs.size()) ? src.outputs[in.output].bytes() : 0;
      auto it = std::find_if(p.preds[i].begin(), p.preds[i].end(), [&](const Edge& e) { return e.op == in.op.value; });
      if (it == p.preds[i].end())
        p.preds[i].push_back({in.op.value, bytes});
      else
        it->bytes += bytes;
    }
    for (const Edge& e : p.preds[i]) p.succs[e.op].push_back({i, e.bytes});
  }
}

void add_colocation_groups(const Graph& graph, UnitProblem& p) {
  Grouping grouping = colocation_groups(graph);
  p.group_of = grouping.group_of;
  p.members.resize(grouping.members.size());
  p.group_mem.assign(grouping.members.size(), 0);
  for (size_t g = 0; g < grouping.members.size(); ++g) {
    for (OpId op : grouping.members[g]) {
      p.members[g].push_back(op.value);
      p.group_mem[g] = add_bytes(p.group_mem[g], p.mem[op.value]);
    }
    std::sort(p.members[g].begin(), p.members[g].end());
  }
}

// Usable memory, names and alpha-beta links (fitted on two probes of the cost model).
void add_devices(const Cluster& cluster, const CostModel& costs, double memory_fraction, UnitProblem& p) {
  set_memory_fraction(p, cluster, memory_fraction);
  p.device_names.resize(p.k);
  for (int32_t d = 0; d < p.k; ++d) p.device_names[d] = cluster.devices[d].name;
  p.alpha.assign(static_cast<size_t>(p.k) * p.k, 0.0);
  p.inv_beta.assign(static_cast<size_t>(p.k) * p.k, 0.0);
  constexpr double kProbe = 1e9;
  for (int32_t a = 0; a < p.k; ++a)
    for (int32_t b = 0; b < p.k; ++b) {
      if (a == b) continue;
      const double t0 = costs.transfer_seconds(DeviceId(a), DeviceId(b), 0);
      const double t1 = costs.transfer_seconds(DeviceId(a), DeviceId(b), static_cast<int64_t>(kProbe));
      p.alpha[a * p.k + b] = t0;
      p.inv_beta[a * p.k + b] = std::max(0.0, (t1 - t0) / kProbe);
    }
}

bool identical_devices(const UnitProblem& p) {
  for (int32_t d = 1; d < p.k; ++d) {
    if (p.capacity[d] != p.capacity[0]) return false;
    for (int32_t i = 0; i < p.n; ++i)
      if (p.c(i, d) != p.c(i, 0)) return false;
  }
  return uniform_links(p, 0.0);
}

}  // namespace

bool uniform_links(const UnitProblem& p, double tolerance) {
  // Tolerance 0 compares with ==: |a - b| <= 0 would call two infinite links different.
  const auto same = [&](double a, double b) {
    return tolerance == 0.0 ? a == b : std::abs(a - b) <= tolerance * std::max(std::abs(a), std::abs(b));
  };
  for (int32_t a = 0; a < p.k; ++a)
    for (int32_t b = 0; b < p.k; ++b)
      if (a != b && (!same(p.alpha[a * p.k + b], p.alpha[1]) || !same(p.inv_beta[a * p.k + b], p.inv_beta[1])))
        return false;
  return true;
}

UnitProblem make_op_problem(const Graph& graph, const Cluster& cluster, const CostModel& costs,
                            double memory_fraction) {
  UnitProblem p;
  p.n = static_cast<int32_t>(graph.size());
  p.k = cluster.size();
  p.cost.resize(static_cast<size_t>(p.n) * p.k);
  p.mem.resize(p.n);
  p.preds.resize(p.n);
  p.succs.resize(p.n);
  p.unit_names.resize(p.n);
  add_ops(graph, costs, p);
  add_colocation_groups(graph, p);
  add_devices(cluster, costs, memory_fraction, p);
  p.identical_devices = identical_devices(p);
  return p;
}

namespace {

// Merges the groups on each cycle of the quotient graph (Tarjan's strongly
// connected components), so the quotient is a DAG whatever grouping came in.
Grouping merge_cycles(const UnitProblem& o, const Grouping& in) {
  const int32_t G = in.size();
  std::vector<std::vector<int32_t>> out(G);
  for (int32_t v = 0; v < o.n; ++v)
    for (const Edge& e : o.preds[v]) {
      const int32_t a = in.group_of[e.op], b = in.group_of[v];
      if (a != b) out[a].push_back(b);
    }
  const StronglyConnected scc = strongly_connected_components(out);
  if (scc.size() == G) return in;
  Grouping merged;
  merged.group_of.resize(o.n);
  merged.members.resize(scc.size());
  for (int32_t v = 0; v < o.n; ++v) {
    merged.group_of[v] = scc.component_of[in.group_of[v]];
    merged.members[merged.group_of[v]].push_back(OpId(v));
  }
  return merged;
}

// The quotient of the ops by a grouping whose quotient is a DAG: bytes from
// each group to each other, and the groups numbered in a topological order
// (Kahn, smallest first member first).
struct QuotientOrder {
  std::vector<std::unordered_map<int32_t, int64_t>> out;
  std::vector<int32_t> unit_of_group;
};

QuotientOrder order_groups(const UnitProblem& o, const Grouping& grouping) {
  const int32_t G = grouping.size();
  QuotientOrder q;
  q.out.resize(G);
  std::vector<int32_t> indeg(G, 0);
  for (int32_t v = 0; v < o.n; ++v)
    for (const Edge& e : o.preds[v]) {
      const int32_t a = grouping.group_of[e.op], b = grouping.group_of[v];
      if (a == b) continue;
      auto [it, inserted] = q.out[a].emplace(b, 0);
      it->second += e.bytes;
      if (inserted) ++indeg[b];
    }
  std::vector<int32_t> first(G, std::numeric_limits<int32_t>::max());
  for (int32_t v = 0; v < o.n; ++v) first[grouping.group_of[v]] = std::min(first[grouping.group_of[v]], v);
  using Item = std::pair<int32_t, int32_t>;  // (first member, group)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (int32_t g = 0; g < G; ++g)
    if (indeg[g] == 0) ready.push({first[g], g});
  q.unit_of_group.assign(G, -1);
  int32_t next = 0;
  while (!ready.empty()) {
    const int32_t g = ready.top().second;
    ready.pop();
    q.unit_of_group[g] = next++;
    for (auto& [b, bytes] : q.out[g])
      if (--indeg[b] == 0) ready.push({first[b], b});
  }
  PLACER_CHECK(next == G, "coarsened grouping has a cyclic quotient graph");
  return q;
}

// The units' costs, memory, names and edges, summed over their ops.
void add_units(const UnitProblem& o, const Grouping& grouping, const QuotientOrder& q, UnitProblem& p) {
  const int32_t G = grouping.size();
  const std::vector<int32_t>& unit_of_group = q.unit_of_group;
  p.n = G;
  p.k = o.k;
  p.cost.assign(static_cast<size_t>(G) * o.k, 0.0);
  p.mem.assign(G, 0);
  p.preds.resize(G);
  p.succs.resize(G);
  p.unit_names.resize(G);
  for (int32_t v = 0; v < o.n; ++v) {
    const int32_t u = unit_of_group[grouping.group_of[v]];
    for (int32_t d = 0; d < o.k; ++d) p.cost[static_cast<size_t>(u) * o.k + d] += o.c(v, d);
    p.mem[u] = add_bytes(p.mem[u], o.mem[v]);
    if (p.unit_names[u].empty()) p.unit_names[u] = o.unit_names[v];
  }
  for (int32_t g = 0; g < G; ++g)
    for (auto& [b, bytes] : q.out[g]) {
      p.succs[unit_of_group[g]].push_back({unit_of_group[b], bytes});
      p.preds[unit_of_group[b]].push_back({unit_of_group[g], bytes});
    }
}

// Units holding ops of one co-location group must share a device: the
// groups of units, numbered by their first unit.
void colocate_units(const UnitProblem& o, const Grouping& grouping, const std::vector<int32_t>& unit_of_group,
                    UnitProblem& p) {
  const int32_t G = grouping.size();
  std::vector<int32_t> parent(G);
  for (int32_t u = 0; u < G; ++u) parent[u] = u;
  std::function<int32_t(int32_t)> root = [&](int32_t u) { return parent[u] == u ? u : parent[u] = root(parent[u]); };
  std::vector<int32_t> unit_of_cgroup(o.groups(), -1);
  for (int32_t v = 0; v < o.n; ++v) {
    const int32_t u = unit_of_group[grouping.group_of[v]];
    int32_t& seen = unit_of_cgroup[o.group_of[v]];
    if (seen < 0)
      seen = u;
    else
      parent[root(u)] = root(seen);
  }
  p.group_of.assign(G, -1);
  std::vector<int32_t> index_of_root(G, -1);
  for (int32_t u = 0; u < G; ++u) {
    const int32_t r = root(u);
    if (index_of_root[r] < 0) {
      index_of_root[r] = static_cast<int32_t>(p.members.size());
      p.members.emplace_back();
      p.group_mem.push_back(0);
    }
    p.group_of[u] = index_of_root[r];
    p.members[p.group_of[u]].push_back(u);
    p.group_mem[p.group_of[u]] = add_bytes(p.group_mem[p.group_of[u]], p.mem[u]);
  }
}

}  // namespace

UnitProblem make_group_problem(const UnitProblem& op_problem, const Grouping& grouping_in,
                               std::vector<int32_t>* unit_of_op) {
  const UnitProblem& o = op_problem;
  const Grouping grouping = merge_cycles(o, grouping_in);
  const QuotientOrder q = order_groups(o, grouping);
  UnitProblem p;
  add_units(o, grouping, q, p);
  colocate_units(o, grouping, q.unit_of_group, p);
  p.capacity = o.capacity;
  p.alpha = o.alpha;
  p.inv_beta = o.inv_beta;
  p.device_names = o.device_names;
  p.identical_devices = o.identical_devices;
  if (unit_of_op) {
    unit_of_op->resize(o.n);
    for (int32_t v = 0; v < o.n; ++v) (*unit_of_op)[v] = q.unit_of_group[grouping.group_of[v]];
  }
  return p;
}

void check_groups_fit(const UnitProblem& p) {
  const int64_t largest = *std::max_element(p.capacity.begin(), p.capacity.end());
  for (int32_t g = 0; g < p.groups(); ++g)
    if (p.group_mem[g] > largest)
      throw NoFeasiblePlacement("op '" + p.unit_names[p.members[g][0]] + "' and its co-located ops need " +
                                format_bytes(p.group_mem[g]) + ", the largest device allows " + format_bytes(largest));
  int64_t total = 0, cap = 0;
  for (int64_t m : p.group_mem) total = add_bytes(total, m);
  for (int64_t c : p.capacity) cap = add_bytes(cap, c);
  if (total > cap)
    throw NoFeasiblePlacement("the graph needs " + format_bytes(total) + " in all, the devices allow " +
                              format_bytes(cap) + " together");
}

std::vector<int32_t> expand_groups(const UnitProblem& p, const std::vector<int32_t>& group_device) {
  std::vector<int32_t> dev(p.n);
  for (int32_t u = 0; u < p.n; ++u) dev[u] = group_device[p.group_of[u]];
  return dev;
}

std::vector<int32_t> groups_by_first_op(const UnitProblem& p) {
  std::vector<int32_t> order(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.members[a][0] < p.members[b][0]; });
  return order;
}

}  // namespace placer
