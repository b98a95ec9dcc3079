// Shared machinery of the algorithmic placers: the problem view, memory
// book-keeping and repair, schedules, the list schedulers and finish().
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

namespace placer::placers {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

double Problem::group_cost(int32_t g, int32_t device) const {
  double s = 0.0;
  for (int32_t u : members[g]) s += c(u, device);
  return s;
}

double Problem::mean_cost(int32_t unit) const {
  double s = 0.0;
  for (int32_t d = 0; d < k; ++d) s += c(unit, d);
  return k ? s / k : 0.0;
}

double Problem::mean_transfer(int64_t bytes) const {
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
  return op.param_bytes + op.output_bytes();
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

double option_double(const PlaceContext& context, const std::string& key, double fallback) {
  auto it = context.options.find(key);
  if (it == context.options.end()) return fallback;
  try {
    size_t pos = 0;
    double v = std::stod(it->second, &pos);
    if (pos != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    throw InputError("option '" + key + "': expected a number, got '" + it->second + "'");
  }
}

int64_t option_int(const PlaceContext& context, const std::string& key, int64_t fallback) {
  auto it = context.options.find(key);
  if (it == context.options.end()) return fallback;
  try {
    size_t pos = 0;
    long long v = std::stoll(it->second, &pos);
    if (pos != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    throw InputError("option '" + key + "': expected an integer, got '" + it->second + "'");
  }
}

std::string option_string(const PlaceContext& context, const std::string& key, const std::string& fallback) {
  auto it = context.options.find(key);
  return it == context.options.end() ? fallback : it->second;
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

Problem make_problem(const PlaceContext& context, double memory_fraction) {
  check_context(context);
  const Graph& graph = *context.graph;
  const Cluster& cluster = *context.cluster;
  const CostModel& costs = context.env->costs();
  Problem p;
  p.n = static_cast<int32_t>(graph.size());
  p.k = cluster.size();
  p.cost.resize(static_cast<size_t>(p.n) * p.k);
  p.mem.resize(p.n);
  p.preds.resize(p.n);
  p.succs.resize(p.n);
  p.unit_names.resize(p.n);
  for (int32_t i = 0; i < p.n; ++i) {
    const Op& op = graph.op(OpId(i));
    p.unit_names[i] = op.name;
    for (int32_t d = 0; d < p.k; ++d) p.cost[static_cast<size_t>(i) * p.k + d] = costs.op_seconds(OpId(i), DeviceId(d));
    p.mem[i] = op_memory_estimate(op);
    // Bytes per producer, each distinct tensor counted once.
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
  Grouping grouping = colocation_groups(graph);
  p.group_of = grouping.group_of;
  p.members.resize(grouping.members.size());
  p.group_mem.assign(grouping.members.size(), 0);
  for (size_t g = 0; g < grouping.members.size(); ++g) {
    for (OpId op : grouping.members[g]) {
      p.members[g].push_back(op.value);
      p.group_mem[g] += p.mem[op.value];
    }
    std::sort(p.members[g].begin(), p.members[g].end());
  }
  p.capacity.resize(p.k);
  p.device_names.resize(p.k);
  for (int32_t d = 0; d < p.k; ++d) {
    p.capacity[d] = static_cast<int64_t>(static_cast<double>(cluster.devices[d].memory_bytes) * memory_fraction);
    p.device_names[d] = cluster.devices[d].name;
  }
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
  bool same = true;
  for (int32_t d = 1; d < p.k && same; ++d) {
    if (p.capacity[d] != p.capacity[0]) same = false;
    for (int32_t i = 0; i < p.n && same; ++i)
      if (p.c(i, d) != p.c(i, 0)) same = false;
  }
  for (int32_t a = 0; a < p.k && same; ++a)
    for (int32_t b = 0; b < p.k && same; ++b)
      if (a != b &&
          (p.alpha[a * p.k + b] != p.alpha[0 * p.k + 1] || p.inv_beta[a * p.k + b] != p.inv_beta[0 * p.k + 1]))
        same = false;
  p.identical_devices = same;
  return p;
}

namespace {

// Merges the groups on each cycle of the quotient graph (Tarjan's strongly
// connected components), so the quotient is a DAG whatever grouping came in.
Grouping merge_cycles(const Problem& o, const Grouping& in) {
  const int32_t G = in.size();
  std::vector<std::vector<int32_t>> out(G);
  for (int32_t v = 0; v < o.n; ++v)
    for (const Edge& e : o.preds[v]) {
      const int32_t a = in.group_of[e.op], b = in.group_of[v];
      if (a != b) out[a].push_back(b);
    }
  std::vector<int32_t> index(G, -1), low(G, 0), comp(G, -1), stack;
  std::vector<char> on_stack(G, 0);
  int32_t counter = 0, comps = 0;
  // Iterative Tarjan.
  std::vector<std::pair<int32_t, size_t>> call;
  for (int32_t root = 0; root < G; ++root) {
    if (index[root] >= 0) continue;
    call.push_back({root, 0});
    while (!call.empty()) {
      auto& [v, next] = call.back();
      if (next == 0 && index[v] < 0) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = 1;
      }
      if (next < out[v].size()) {
        const int32_t w = out[v][next++];
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
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
      const int32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  if (comps == G) return in;
  Grouping merged;
  merged.group_of.resize(o.n);
  merged.members.resize(comps);
  for (int32_t v = 0; v < o.n; ++v) {
    merged.group_of[v] = comp[in.group_of[v]];
    merged.members[merged.group_of[v]].push_back(OpId(v));
  }
  return merged;
}

}  // namespace

Problem make_group_problem(const Problem& op_problem, const Grouping& grouping_in, std::vector<int32_t>* unit_of_op) {
  const Problem& o = op_problem;
  const Grouping grouping = merge_cycles(o, grouping_in);
  const int32_t G = grouping.size();
  // Group adjacency and a topological order (Kahn, smallest first member first).
  std::vector<std::unordered_map<int32_t, int64_t>> out(G);
  std::vector<int32_t> indeg(G, 0);
  for (int32_t v = 0; v < o.n; ++v)
    for (const Edge& e : o.preds[v]) {
      const int32_t a = grouping.group_of[e.op], b = grouping.group_of[v];
      if (a == b) continue;
      auto [it, inserted] = out[a].emplace(b, 0);
      it->second += e.bytes;
      if (inserted) ++indeg[b];
    }
  std::vector<int32_t> first(G, std::numeric_limits<int32_t>::max());
  for (int32_t v = 0; v < o.n; ++v) first[grouping.group_of[v]] = std::min(first[grouping.group_of[v]], v);
  using Item = std::pair<int32_t, int32_t>;  // (first member, group)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (int32_t g = 0; g < G; ++g)
    if (indeg[g] == 0) ready.push({first[g], g});
  std::vector<int32_t> unit_of_group(G, -1);
  int32_t next = 0;
  while (!ready.empty()) {
    const int32_t g = ready.top().second;
    ready.pop();
    unit_of_group[g] = next++;
    for (auto& [b, bytes] : out[g])
      if (--indeg[b] == 0) ready.push({first[b], b});
  }
  PLACER_CHECK(next == G, "coarsened grouping has a cyclic quotient graph");
  Problem p;
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
    p.mem[u] += o.mem[v];
    if (p.unit_names[u].empty()) p.unit_names[u] = o.unit_names[v];
  }
  for (int32_t g = 0; g < G; ++g)
    for (auto& [b, bytes] : out[g]) {
      p.succs[unit_of_group[g]].push_back({unit_of_group[b], bytes});
      p.preds[unit_of_group[b]].push_back({unit_of_group[g], bytes});
    }
  // Units holding ops of one co-location group must share a device.
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
    p.group_mem[p.group_of[u]] += p.mem[u];
  }
  p.capacity = o.capacity;
  p.alpha = o.alpha;
  p.inv_beta = o.inv_beta;
  p.device_names = o.device_names;
  p.identical_devices = o.identical_devices;
  if (unit_of_op) {
    unit_of_op->resize(o.n);
    for (int32_t v = 0; v < o.n; ++v) (*unit_of_op)[v] = unit_of_group[grouping.group_of[v]];
  }
  return p;
}

void check_groups_fit(const Problem& p) {
  const int64_t largest = *std::max_element(p.capacity.begin(), p.capacity.end());
  for (int32_t g = 0; g < p.groups(); ++g)
    if (p.group_mem[g] > largest)
      throw NoFeasiblePlacement("op '" + p.unit_names[p.members[g][0]] + "' and its co-located ops need " +
                                format_bytes(p.group_mem[g]) + ", the largest device allows " + format_bytes(largest));
  int64_t total = 0, cap = 0;
  for (int64_t m : p.group_mem) total += m;
  for (int64_t c : p.capacity) cap += c;
  if (total > cap)
    throw NoFeasiblePlacement("the graph needs " + format_bytes(total) + " in all, the devices allow " +
                              format_bytes(cap) + " together");
}

std::vector<int32_t> expand_groups(const Problem& p, const std::vector<int32_t>& group_device) {
  std::vector<int32_t> dev(p.n);
  for (int32_t u = 0; u < p.n; ++u) dev[u] = group_device[p.group_of[u]];
  return dev;
}

bool fits_memory(const Problem& p, const std::vector<int32_t>& group_device) {
  std::vector<int64_t> used(p.k, 0);
  for (int32_t g = 0; g < p.groups(); ++g) used[group_device[g]] += p.group_mem[g];
  for (int32_t d = 0; d < p.k; ++d)
    if (used[d] > p.capacity[d]) return false;
  return true;
}

bool repair_memory(const Problem& p, std::vector<int32_t>& group_device) {
  std::vector<int64_t> used(p.k, 0);
  for (int32_t g = 0; g < p.groups(); ++g) used[group_device[g]] += p.group_mem[g];
  for (int32_t d = 0; d < p.k; ++d) {
    if (used[d] <= p.capacity[d]) continue;
    // Move the latest groups first: keeps the early part of a pipeline intact.
    for (int32_t g = p.groups() - 1; g >= 0 && used[d] > p.capacity[d]; --g) {
      if (group_device[g] != d || p.group_mem[g] == 0) continue;
      std::vector<double> affinity(p.k, 0.0);
      for (int32_t u : p.members[g]) {
        for (const Edge& e : p.preds[u]) affinity[group_device[p.group_of[e.op]]] += e.bytes;
        for (const Edge& e : p.succs[u]) affinity[group_device[p.group_of[e.op]]] += e.bytes;
      }
      int32_t best = -1;
      for (int32_t t = 0; t < p.k; ++t) {
        if (t == d || used[t] + p.group_mem[g] > p.capacity[t]) continue;
        if (best < 0 || affinity[t] > affinity[best] ||
            (affinity[t] == affinity[best] && p.capacity[t] - used[t] > p.capacity[best] - used[best]))
          best = t;
      }
      if (best < 0) continue;
      group_device[g] = best;
      used[d] -= p.group_mem[g];
      used[best] += p.group_mem[g];
    }
  }
  if (fits_memory(p, group_device)) return true;
  // Moves alone did not do it: repack first-fit decreasing by size, keeping
  // each group on its planned device when it fits there, else on the device
  // with the most room.
  std::vector<int32_t> order(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.group_mem[a] > p.group_mem[b]; });
  std::fill(used.begin(), used.end(), 0);
  for (int32_t g : order) {
    int32_t d = group_device[g];
    if (used[d] + p.group_mem[g] > p.capacity[d]) {
      d = -1;
      for (int32_t t = 0; t < p.k; ++t)
        if (used[t] + p.group_mem[g] <= p.capacity[t] && (d < 0 || p.capacity[t] - used[t] > p.capacity[d] - used[d]))
          d = t;
      if (d < 0) return false;
    }
    group_device[g] = d;
    used[d] += p.group_mem[g];
  }
  return true;
}

double LinkBook::data_ready(int32_t v, int32_t d, const std::vector<int32_t>& dev, const std::vector<double>& finish,
                            bool commit) {
  const Problem& p = *p_;
  order_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(p.preds[v].size()); ++i) order_.push_back({finish[p.preds[v][i].op], i});
  std::sort(order_.begin(), order_.end());  // FIFO: the earliest finished input goes first
  if (!commit) {
    tmp_free_.resize(p.k);
    for (int32_t f = 0; f < p.k; ++f) tmp_free_[f] = chan_free_[static_cast<size_t>(f) * p.k + d];
  }
  double ready = 0.0;
  for (const auto& [done, i] : order_) {
    const int32_t u = p.preds[v][i].op;
    const int64_t bytes = p.preds[v][i].bytes;
    const int32_t from = dev[u];
    if (from == d) {
      ready = std::max(ready, done);
      continue;
    }
    const int64_t key = static_cast<int64_t>(u) * p.k + d;
    auto it = sent_.find(key);
    int64_t have = it == sent_.end() ? 0 : it->second.bytes;
    double arrival = it == sent_.end() ? 0.0 : it->second.arrival;
    if (bytes > have || it == sent_.end()) {
      double& chan = commit ? chan_free_[static_cast<size_t>(from) * p.k + d] : tmp_free_[from];
      const double start = std::max(done, chan);
      arrival = start + p.transfer(from, d, bytes - have);
      chan = arrival;
      if (commit) sent_[key] = {std::max(bytes, have), arrival};
    }
    ready = std::max(ready, arrival);
  }
  return ready;
}

Schedule schedule_in_order(const Problem& p, const std::vector<int32_t>& dev, const std::vector<int32_t>& order) {
  Schedule s;
  s.start.assign(p.n, 0.0);
  s.finish.assign(p.n, 0.0);
  std::vector<double> free(p.k, 0.0);
  LinkBook links(p);
  for (int32_t u : order) {
    const int32_t d = dev[u];
    const double ready = links.data_ready(u, d, dev, s.finish, true);
    s.start[u] = std::max(ready, free[d]);
    s.finish[u] = s.start[u] + p.c(u, d);
    free[d] = s.finish[u];
    s.makespan = std::max(s.makespan, s.finish[u]);
  }
  return s;
}

Schedule schedule_ready_order(const Problem& p, const std::vector<int32_t>& dev, bool link_channels) {
  Schedule s;
  s.start.assign(p.n, 0.0);
  s.finish.assign(p.n, 0.0);
  std::vector<int32_t> missing(p.n);
  std::vector<double> arrival(p.n, 0.0);
  std::vector<std::vector<int32_t>> pending(p.k);
  std::vector<double> busy(p.k, 0.0);
  LinkBook links(p);
  using Done = std::pair<double, int32_t>;
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> running;
  for (int32_t u = 0; u < p.n; ++u) {
    missing[u] = static_cast<int32_t>(p.preds[u].size());
    if (missing[u] == 0) pending[dev[u]].push_back(u);
  }
  int32_t started = 0;
  while (started < p.n || !running.empty()) {
    double best_t = kInf;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p.k; ++d) {
      if (pending[d].empty()) continue;
      double earliest = kInf;
      for (int32_t u : pending[d]) earliest = std::min(earliest, arrival[u]);
      const double t = std::max(busy[d], earliest);
      if (t < best_t) best_t = t, best_d = d;
    }
    if (!running.empty() && running.top().first <= best_t) {
      const int32_t u = running.top().second;
      running.pop();
      for (const Edge& e : p.succs[u]) {
        const int32_t v = e.op;
        if (!link_channels) arrival[v] = std::max(arrival[v], s.finish[u] + p.transfer(dev[u], dev[v], e.bytes));
        if (--missing[v] == 0) {
          if (link_channels) arrival[v] = links.data_ready(v, dev[v], dev, s.finish, true);
          pending[dev[v]].push_back(v);
        }
      }
      continue;
    }
    PLACER_CHECK(best_d >= 0, "schedule_ready_order: nothing runnable");
    auto& q = pending[best_d];
    size_t pick = q.size();
    for (size_t i = 0; i < q.size(); ++i)
      if (arrival[q[i]] <= best_t && (pick == q.size() || q[i] < q[pick])) pick = i;
    const int32_t u = q[pick];
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(pick));
    s.start[u] = best_t;
    s.finish[u] = best_t + p.c(u, best_d);
    busy[best_d] = s.finish[u];
    s.makespan = std::max(s.makespan, s.finish[u]);
    running.push({s.finish[u], u});
    ++started;
  }
  return s;
}

namespace {

// Upward rank with mean costs: the length of the longest path to a sink.
std::vector<double> upward_rank(const Problem& p) {
  std::vector<double> rank(p.n, 0.0);
  for (int32_t u = p.n - 1; u >= 0; --u) {
    double tail = 0.0;
    for (const Edge& e : p.succs[u]) tail = std::max(tail, p.mean_transfer(e.bytes) + rank[e.op]);
    rank[u] = p.mean_cost(u) + tail;
  }
  return rank;
}

[[noreturn]] void out_of_memory(const Problem& p, const MemoryBook& book, int32_t unit, const char* method) {
  const int32_t g = p.group_of[unit];
  std::string msg = std::string(method) + ": op '" + p.unit_names[unit] + "' (with its co-located ops " +
                    format_bytes(p.group_mem[g]) + ") fits on no device; free:";
  for (int32_t d = 0; d < p.k; ++d) msg += " " + p.device_names[d] + " " + format_bytes(book.free(d));
  throw NoFeasiblePlacement(msg);
}

}  // namespace

ListResult list_etf(const Problem& p, const std::vector<int32_t>* favourite_parent) {
  ListResult r;
  r.unit_device.assign(p.n, -1);
  r.schedule.start.assign(p.n, 0.0);
  r.schedule.finish.assign(p.n, 0.0);
  std::vector<int32_t> pinned(p.groups(), -1);
  MemoryBook book(p);
  std::vector<double> free(p.k, 0.0);
  std::vector<int32_t> missing(p.n);
  std::vector<char> done(p.n, 0);
  const std::vector<double> rank = upward_rank(p);
  // Per device: ready units keyed by (data-ready time on that device plus a
  // preference penalty, -rank, id). m_sct's penalty: off its favourite
  // parent's device a unit counts as ready later by that edge's mean transfer.
  struct Key {
    double ready;
    double penalty;
    double neg_rank;
    int32_t unit;
    double order() const { return ready + penalty; }
    bool operator>(const Key& o) const {
      if (order() != o.order()) return order() > o.order();
      if (neg_rank != o.neg_rank) return neg_rank > o.neg_rank;
      return unit > o.unit;
    }
  };
  std::vector<std::priority_queue<Key, std::vector<Key>, std::greater<Key>>> heaps(p.k);
  LinkBook links(p);
  auto data_ready = [&](int32_t u, int32_t d) {
    return links.data_ready(u, d, r.unit_device, r.schedule.finish, false);
  };
  auto allowed = [&](int32_t u, int32_t d) {
    const int32_t g = p.group_of[u];
    return pinned[g] >= 0 ? pinned[g] == d : book.fits(g, d);
  };
  auto make_ready = [&](int32_t u) {
    const int32_t g = p.group_of[u];
    const int32_t only = pinned[g];
    int32_t favourite = -1;
    double penalty = 0.0;
    if (only < 0 && favourite_parent && (*favourite_parent)[u] >= 0) {
      const int32_t parent = (*favourite_parent)[u];
      favourite = r.unit_device[parent];
      for (const Edge& e : p.preds[u])
        if (e.op == parent) penalty = p.mean_transfer(e.bytes);
    }
    bool any = false;
    for (int32_t d = 0; d < p.k; ++d) {
      if ((only >= 0 && d != only) || !allowed(u, d)) continue;
      heaps[d].push({data_ready(u, d), favourite >= 0 && d != favourite ? penalty : 0.0, -rank[u], u});
      any = true;
    }
    if (!any) out_of_memory(p, book, u, favourite_parent ? "m_sct" : "m_etf");
  };
  for (int32_t u = 0; u < p.n; ++u) {
    missing[u] = static_cast<int32_t>(p.preds[u].size());
    if (missing[u] == 0) make_ready(u);
  }
  int32_t scheduled = 0;
  while (scheduled < p.n) {
    double best_t = kInf;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p.k; ++d) {
      auto& h = heaps[d];
      // Channels only fill up, so a key may be stale (too early): refresh the
      // top until it is current (lazy updates keep the heap's minimum right).
      for (;;) {
        // A unit is on every allowed device's heap: drop the done and the no longer allowed.
        while (!h.empty() && (done[h.top().unit] || !allowed(h.top().unit, d))) h.pop();
        if (h.empty()) break;
        Key top = h.top();
        const double now = data_ready(top.unit, d);
        if (now <= top.ready) break;
        h.pop();
        top.ready = now;
        h.push(top);
      }
      if (h.empty()) continue;
      const double t = std::max(free[d], h.top().order());
      if (t < best_t) best_t = t, best_d = d;
    }
    if (best_d < 0) {
      // Every ready unit lost its devices to memory filled meanwhile.
      for (int32_t u = 0; u < p.n; ++u)
        if (!done[u] && missing[u] == 0) out_of_memory(p, book, u, favourite_parent ? "m_sct" : "m_etf");
      PLACER_CHECK(false, "list_etf: no ready unit");
    }
    const int32_t u = heaps[best_d].top().unit;
    best_t = std::max(free[best_d], heaps[best_d].top().ready);  // the penalty ranks; it does not delay
    heaps[best_d].pop();
    const int32_t g = p.group_of[u];
    if (pinned[g] < 0) {
      pinned[g] = best_d;
      book.add(g, best_d);
    }
    r.unit_device[u] = best_d;
    links.data_ready(u, best_d, r.unit_device, r.schedule.finish, true);  // book its transfers
    r.schedule.start[u] = best_t;
    r.schedule.finish[u] = best_t + p.c(u, best_d);
    free[best_d] = r.schedule.finish[u];
    r.schedule.makespan = std::max(r.schedule.makespan, r.schedule.finish[u]);
    done[u] = 1;
    ++scheduled;
    for (const Edge& e : p.succs[u])
      if (--missing[e.op] == 0) make_ready(e.op);
  }
  return r;
}

ListResult list_heft(const Problem& p) {
  ListResult r;
  r.unit_device.assign(p.n, -1);
  r.schedule.start.assign(p.n, 0.0);
  r.schedule.finish.assign(p.n, 0.0);
  const std::vector<double> rank = upward_rank(p);
  std::vector<int32_t> pinned(p.groups(), -1);
  MemoryBook book(p);
  std::vector<double> free(p.k, 0.0);
  std::vector<int32_t> missing(p.n);
  LinkBook links(p);
  std::priority_queue<std::pair<double, int32_t>> ready;  // (rank, -id): highest rank first
  for (int32_t u = 0; u < p.n; ++u) {
    missing[u] = static_cast<int32_t>(p.preds[u].size());
    if (missing[u] == 0) ready.push({rank[u], -u});
  }
  while (!ready.empty()) {
    const int32_t u = -ready.top().second;
    ready.pop();
    const int32_t g = p.group_of[u];
    double best_f = kInf, best_s = 0.0;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p.k; ++d) {
      if (pinned[g] >= 0 ? pinned[g] != d : !book.fits(g, d)) continue;
      const double t = std::max(free[d], links.data_ready(u, d, r.unit_device, r.schedule.finish, false));
      const double f = t + p.c(u, d);
      if (f < best_f) best_f = f, best_s = t, best_d = d;
    }
    if (best_d < 0) out_of_memory(p, book, u, "heft");
    if (pinned[g] < 0) {
      pinned[g] = best_d;
      book.add(g, best_d);
    }
    r.unit_device[u] = best_d;
    links.data_ready(u, best_d, r.unit_device, r.schedule.finish, true);
    r.schedule.start[u] = best_s;
    r.schedule.finish[u] = best_f;
    free[best_d] = best_f;
    r.schedule.makespan = std::max(r.schedule.makespan, best_f);
    for (const Edge& e : p.succs[u])
      if (--missing[e.op] == 0) ready.push({rank[e.op], -e.op});
  }
  return r;
}

ListResult list_topo(const Problem& p) {
  // Baechi's m-TOPO: groups in topological order (of their first op) fill one
  // device up to an equal share of the total memory, then the next.
  std::vector<int32_t> order(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.members[a][0] < p.members[b][0]; });
  int64_t total = 0;
  for (int64_t m : p.group_mem) total += m;
  double total_work = 0.0;
  for (int32_t u = 0; u < p.n; ++u) total_work += p.mean_cost(u);
  // Share by memory, as Baechi; when memory is light, by work so that the
  // devices still split the graph.
  const double mem_share = static_cast<double>(total) / p.k;
  const double work_share = total_work / p.k;
  MemoryBook book(p);
  std::vector<int32_t> group_device(p.groups(), -1);
  int32_t d = 0;
  double work_on_d = 0.0;
  for (int32_t g : order) {
    double work = 0.0;
    for (int32_t u : p.members[g]) work += p.mean_cost(u);
    auto over_share = [&](int32_t dev) {
      return static_cast<double>(book.used(dev) + p.group_mem[g]) > mem_share * 1.0001 + 1 &&
             work_on_d + work > work_share * 1.0001;
    };
    if (d < p.k - 1 && book.used(d) > 0 && over_share(d)) {
      ++d;
      work_on_d = 0.0;
    }
    int32_t target = d;
    if (!book.fits(g, target)) {
      target = -1;
      for (int32_t t = 0; t < p.k; ++t)
        if (book.fits(g, t) && (target < 0 || book.free(t) > book.free(target))) target = t;
      if (target < 0) out_of_memory(p, book, p.members[g][0], "m_topo");
    }
    group_device[g] = target;
    book.add(g, target);
    if (target == d) work_on_d += work;
  }
  ListResult r;
  r.unit_device = expand_groups(p, group_device);
  std::vector<int32_t> ids(p.n);
  for (int32_t u = 0; u < p.n; ++u) ids[u] = u;
  r.schedule = schedule_in_order(p, r.unit_device, ids);
  return r;
}

PlaceResult finish(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method,
                   Clock::time_point started, std::string note) {
  const Graph& graph = *context.graph;
  PLACER_CHECK(static_cast<int64_t>(op_device.size()) == graph.size(), method, ": placement size ", op_device.size());
  PlaceResult result;
  result.method = method;
  result.placement.device_of.resize(op_device.size());
  for (size_t i = 0; i < op_device.size(); ++i) {
    PLACER_CHECK(op_device[i] >= 0 && op_device[i] < context.cluster->size(), method, ": op ", i, " on device ",
                 op_device[i]);
    result.placement.device_of[i] = DeviceId(op_device[i]);
  }
  result.place_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  validate_placement(graph, *context.cluster, result.placement);
  const StepResult sim = context.env->simulate(result.placement);
  if (sim.status == StepStatus::Oom)
    throw NoFeasiblePlacement(method + ": the placement overflows device " + sim.oom_device + " (needs " +
                              format_bytes(sim.oom_needed_bytes) + ", has " + format_bytes(sim.oom_capacity_bytes) +
                              ")");
  result.stats["sim_step_s"] = sim.step_s;
  result.stats["transfer_bytes"] = static_cast<double>(sim.transfer_bytes);
  std::vector<char> used(context.cluster->size(), 0);
  for (int32_t d : op_device) used[d] = 1;
  result.stats["devices_used"] = static_cast<double>(std::count(used.begin(), used.end(), 1));
  result.note = std::move(note);
  return result;
}

}  // namespace placer::placers
