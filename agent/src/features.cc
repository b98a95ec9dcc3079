#include "features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "placer/agent/learned.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fnv.h"
#include "placers_common.h"
#include "unit_problem.h"

namespace placer {

int64_t op_type_bucket(const std::string& type) { return static_cast<int64_t>(fnv1a(type) % kTypeBuckets); }

namespace {

float log_scaled(double v, double scale) { return static_cast<float>(std::log10(1.0 + std::max(0.0, v)) / scale); }
float clip(double v, double lo, double hi) { return static_cast<float>(std::min(hi, std::max(lo, v))); }

// Units ordered by their first op, so unit order is a topological-ish order.
Grouping sorted_grouping(const Graph& graph, Grouping g) {
  std::vector<int32_t> order(g.members.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return g.members[a].front().value < g.members[b].front().value; });
  Grouping out;
  out.members.reserve(order.size());
  out.group_of.assign(graph.size(), -1);
  for (int32_t i = 0; i < static_cast<int32_t>(order.size()); ++i) {
    if (g.members[order[i]].empty()) continue;
    out.members.push_back(std::move(g.members[order[i]]));
    for (OpId op : out.members.back()) out.group_of[op.value] = static_cast<int32_t>(out.members.size()) - 1;
  }
  return out;
}

Grouping split_by_placement(const Graph& graph, const Grouping& g, const Placement& placement) {
  Grouping out;
  out.group_of.assign(graph.size(), -1);
  for (const auto& members : g.members) {
    std::map<int32_t, std::vector<OpId>> by_device;
    for (OpId op : members) by_device[placement[op].value].push_back(op);
    for (auto& [dev, ops] : by_device) {
      out.members.push_back(std::move(ops));
      for (OpId op : out.members.back()) out.group_of[op.value] = static_cast<int32_t>(out.members.size()) - 1;
    }
  }
  return sorted_grouping(graph, std::move(out));
}

}  // namespace

DynamicState::DynamicState(const UnitCosts* costs)
    : c_(costs),
      load_(costs->devices, 0.f),
      mem_(costs->devices, 0.0),
      device_of_(costs->units, -1),
      avail_(costs->devices, 0.f),
      finish_(costs->units, 0.f),
      in_edges_(costs->units) {
  for (size_t e = 0; e < c_->edge_src.size(); ++e)
    in_edges_[c_->edge_dst[e]].push_back(
        {c_->edge_src[e], c_->edge_w[e], c_->edge_xfer.empty() ? 0.f : c_->edge_xfer[e]});
}

void DynamicState::finish_times(int32_t t, float* eft) const {
  const int32_t D = c_->devices;
  for (int32_t d = 0; d < D; ++d) {
    float ready = avail_[d];
    for (const InEdge& e : in_edges_[t]) {
      const int32_t dev = device_of_[e.src];
      if (dev >= 0) ready = std::max(ready, finish_[e.src] + (dev == d ? 0.f : e.xfer));
    }
    eft[d] = ready + c_->cost[static_cast<size_t>(t) * D + d];
  }
}

void DynamicState::features(int32_t t, float* out) const {
  const int32_t D = c_->devices;
  float max_load = 0.f, mean_cost = 0.f;
  for (int32_t d = 0; d < D; ++d) {
    max_load = std::max(max_load, load_[d]);
    mean_cost += c_->cost[static_cast<size_t>(t) * D + d] / D;
  }
  std::vector<float> in_frac(D, 0.f), eft(D);
  for (const InEdge& e : in_edges_[t]) {
    const int32_t dev = device_of_[e.src];
    if (dev >= 0) in_frac[dev] += e.w;
  }
  finish_times(t, eft.data());
  const float min_eft = *std::min_element(eft.begin(), eft.end());
  for (int32_t d = 0; d < D; ++d) {
    float* f = out + d * kDynamicFeatures;
    const float cost = c_->cost[static_cast<size_t>(t) * D + d];
    const double cap = std::max(1.0, c_->capacity[d]);
    f[0] = load_[d];
    f[1] = clip(mem_[d] / cap, 0.0, 4.0);
    f[2] = (mem_[d] + c_->mem_bytes[t] > cap) ? 1.f : 0.f;
    f[3] = in_frac[d];
    f[4] = mean_cost > 0 ? clip(cost / mean_cost - 1.0, -4.0, 4.0) : 0.f;
    f[5] = clip(load_[d] + cost - max_load, -4.0, 4.0);
    f[6] = clip(eft[d] - min_eft, 0.0, 4.0);
  }
}

void DynamicState::place(int32_t t, int32_t device) {
  std::vector<float> eft(c_->devices);
  finish_times(t, eft.data());
  finish_[t] = eft[device];
  avail_[device] = eft[device];
  device_of_[t] = device;
  load_[device] += c_->cost[static_cast<size_t>(t) * c_->devices + device];
  mem_[device] += c_->mem_bytes[t];
}

Placement PolicyInput::expand(const std::vector<int32_t>& unit_device) const {
  PLACER_CHECK(static_cast<int32_t>(unit_device.size()) == n, "expand: ", unit_device.size(), " != ", n);
  Placement p;
  p.device_of.assign(graph->size(), DeviceId(0));
  for (int32_t u = 0; u < n; ++u)
    for (OpId op : units.members[u]) p.device_of[op.value] = DeviceId(unit_device[u]);
  return p;
}

std::vector<int32_t> PolicyInput::contract(const Placement& placement) const {
  std::vector<int32_t> out(n);
  for (int32_t u = 0; u < n; ++u) out[u] = placement[units.members[u].front()].value;
  return out;
}

namespace {

// Unit costs of a grouping of the op problem's ops: the placers' own per-device
// op costs, memory estimate (op_memory_estimate), edge bytes (each distinct
// tensor once) and transfer times (unit_problem.h), scaled by fair_share_s.
UnitCosts unit_costs_for(const UnitProblem& ops, const std::vector<int32_t>& unit_of_op, int32_t units,
                         double fair_share_s) {
  UnitCosts uc;
  uc.units = units;
  uc.devices = ops.k;
  uc.cost.assign(static_cast<size_t>(units) * uc.devices, 0.f);
  uc.mem_bytes.assign(units, 0.0);
  for (int64_t c : ops.capacity) uc.capacity.push_back(static_cast<double>(c));
  std::map<std::pair<int32_t, int32_t>, double> edge_bytes;
  std::vector<double> in_bytes(units, 0.0);
  for (int32_t i = 0; i < ops.n; ++i) {
    const int32_t u = unit_of_op[i];
    for (int32_t d = 0; d < uc.devices; ++d)
      uc.cost[static_cast<size_t>(u) * uc.devices + d] += static_cast<float>(ops.c(i, d) / fair_share_s);
    uc.mem_bytes[u] += static_cast<double>(ops.mem[i]);
    for (const Edge& in : ops.preds[i]) {
      const int32_t s = unit_of_op[in.op];
      if (s == u) continue;
      in_bytes[u] += static_cast<double>(in.bytes);
      if (s < u) edge_bytes[{s, u}] += static_cast<double>(in.bytes);
    }
  }
  for (const auto& [k, b] : edge_bytes) {
    uc.edge_src.push_back(k.first);
    uc.edge_dst.push_back(k.second);
    uc.edge_w.push_back(in_bytes[k.second] > 0 ? static_cast<float>(b / in_bytes[k.second]) : 0.f);
    uc.edge_xfer.push_back(static_cast<float>(ops.mean_transfer(static_cast<int64_t>(b)) / fair_share_s));
  }
  return uc;
}

// Edges between units (deduplicated), the bytes into and out of each unit.
void unit_adjacency(const UnitProblem& ops, PolicyInput* p, std::vector<std::vector<int32_t>>* parents,
                    std::vector<std::vector<int32_t>>* children, std::vector<double>* in_b,
                    std::vector<double>* out_b) {
  std::map<std::pair<int32_t, int32_t>, bool> seen;
  for (int32_t i = 0; i < ops.n; ++i) {
    const int32_t u = p->units.group_of[i];
    for (const Edge& in : ops.preds[i]) {
      const int32_t s = p->units.group_of[in.op];
      if (s == u) continue;
      (*in_b)[u] += static_cast<double>(in.bytes);
      (*out_b)[s] += static_cast<double>(in.bytes);
      if (seen.emplace(std::make_pair(s, u), true).second) {
        (*parents)[u].push_back(s);
        (*children)[s].push_back(u);
        p->parent_src.push_back(s);
        p->parent_dst.push_back(u);
      }
    }
  }
}

void device_rows(const Cluster& cluster, PolicyInput* p) {
  // Devices: kind, speed, memory relative to what the graph needs.
  double need = 0;
  for (double b : p->costs.mem_bytes) need += b;
  need = std::max(1.0, need);
  double max_flops = 1, max_bw = 1;
  for (const auto& dev : cluster.devices) {
    max_flops = std::max(max_flops, dev.peak_flops);
    max_bw = std::max(max_bw, dev.mem_bandwidth);
  }
  p->dev.assign(static_cast<size_t>(p->d) * kDeviceFeatures, 0.f);
  for (int32_t d = 0; d < p->d; ++d) {
    const Device& dev = cluster.devices[d];
    float* f = &p->dev[static_cast<size_t>(d) * kDeviceFeatures];
    f[0] = dev.kind == DeviceKind::Cpu ? 1.f : 0.f;
    f[1] = dev.kind == DeviceKind::Cuda ? 1.f : 0.f;
    f[2] = static_cast<float>(dev.peak_flops / max_flops);
    f[3] = static_cast<float>(dev.mem_bandwidth / max_bw);
    f[4] = clip(p->costs.capacity[d] / need, 0.0, 4.0);  // what the placers may fill
    f[5] = log_scaled(static_cast<double>(dev.memory_bytes), 11.0);
    f[6] = static_cast<float>(std::log10(1.0 + dev.op_overhead_s * 1e6) / 3.0);
    f[7] = static_cast<float>(p->d) / kMaxDevices;
  }
}

void sample_peers(const std::vector<std::vector<int32_t>>& parents, const std::vector<std::vector<int32_t>>& children,
                  const PolicyInputOptions& options, PolicyInput* p) {
  const int32_t n = p->n;
  // Parallel peers (Placeto): units neither ancestors nor descendants, on the
  // unit graph restricted to forward edges (src < dst), sampled.
  p->peers.assign(n, {});
  if (options.max_peers > 0 && n <= 4096) {
    const int32_t words = (n + 63) / 64;
    std::vector<uint64_t> anc(static_cast<size_t>(n) * words, 0), desc(static_cast<size_t>(n) * words, 0);
    for (int32_t u = 0; u < n; ++u)
      for (int32_t s : parents[u])
        if (s < u) {
          for (int32_t w = 0; w < words; ++w) anc[u * words + w] |= anc[s * words + w];
          anc[u * words + s / 64] |= 1ULL << (s % 64);
        }
    for (int32_t u = n - 1; u >= 0; --u)
      for (int32_t c : children[u])
        if (c > u) {
          for (int32_t w = 0; w < words; ++w) desc[u * words + w] |= desc[c * words + w];
          desc[u * words + c / 64] |= 1ULL << (c % 64);
        }
    std::mt19937_64 rng(options.seed);
    std::vector<int32_t> cand;
    for (int32_t u = 0; u < n; ++u) {
      cand.clear();
      for (int32_t v = 0; v < n; ++v) {
        if (v == u) continue;
        const uint64_t bit = 1ULL << (v % 64);
        if ((anc[u * words + v / 64] & bit) || (desc[u * words + v / 64] & bit)) continue;
        cand.push_back(v);
      }
      // Nearest in order first (the ones that actually compete for time), then sampled.
      std::sort(cand.begin(), cand.end(), [u](int32_t a, int32_t b) { return std::abs(a - u) < std::abs(b - u); });
      if (static_cast<int32_t>(cand.size()) > options.max_peers) {
        const int32_t near = options.max_peers / 2;
        std::shuffle(cand.begin() + near, cand.end(), rng);
        cand.resize(options.max_peers);
      }
      p->peers[u] = cand;
    }
  }
}


// The policy's units: colocation groups, coarsened to at most max_units, split by keep_apart.
Grouping policy_units(const Graph& graph, const std::vector<double>& op_cost, const PolicyInputOptions& options) {
  Grouping g = sorted_grouping(graph, colocation_groups(graph));
  if (options.max_units > 0 && g.size() > options.max_units)
    g = sorted_grouping(graph,
                        coarsen(
                            graph, options.max_units, [&](OpId op) { return op_cost[op.value]; }, options.coarsen));
  if (options.keep_apart) g = split_by_placement(graph, g, *options.keep_apart);
  return g;
}

// Op-level top and bottom levels (longest paths with mean costs) and the critical path.
struct OpLevels {
  std::vector<double> top, bottom;
  double cp = 0;
};

OpLevels op_levels(const Graph& graph, const std::vector<double>& op_cost) {
  OpLevels l;
  l.top.assign(graph.size(), 0.0);
  l.bottom.assign(graph.size(), 0.0);
  for (int32_t i = 0; i < graph.size(); ++i) {
    double t = 0;
    for (const TensorRef& in : graph.op(OpId(i)).inputs) t = std::max(t, l.top[in.op.value]);
    l.top[i] = t + op_cost[i];
  }
  for (int32_t i = static_cast<int32_t>(graph.size()) - 1; i >= 0; --i) {
    double b = 0;
    for (OpId c : graph.consumers(OpId(i))) b = std::max(b, l.bottom[c.value]);
    l.bottom[i] = b + op_cost[i];
  }
  l.cp = std::max(1e-12, *std::max_element(l.top.begin(), l.top.end()));
  return l;
}

// Model blocks (Op::layer, e.g. "lstm1", "attention") in order of first
// appearance: a block's ordinal is what lets a policy map "layer k of L"
// to devices on graphs of the family it has not seen.
std::map<std::string, int32_t> layer_ranks(const Graph& graph) {
  std::map<std::string, int32_t> layer_rank;
  for (const Op& op : graph.ops())
    if (!op.layer.empty() && op.phase == Phase::Forward)
      layer_rank.emplace(op.layer, static_cast<int32_t>(layer_rank.size()));
  return layer_rank;
}

// What the unit rows are computed from.
struct UnitRowInputs {
  const Graph& graph;
  const UnitProblem& ops;
  const std::vector<double>& op_cost;
  const OpLevels& levels;
  const std::vector<std::vector<int32_t>>& parents;
  const std::vector<std::vector<int32_t>>& children;
  const std::vector<double>& in_b;
  const std::vector<double>& out_b;
  const std::map<std::string, int32_t>& layer_rank;
  double layers, fair_share, mean_unit_cost, min_capacity;
};

// Sums over a unit's member ops; `main` is its forward op with the most FLOPs.
struct UnitSums {
  double c = 0, flops = 0, params = 0, outb = 0, tmin = 1e30, bmax = 0;
  int fwd = 0, bwd = 0, upd = 0;
  OpId main;
};

UnitSums unit_sums(const UnitRowInputs& in, const std::vector<OpId>& members) {
  UnitSums s;
  s.main = members.front();
  double main_flops = -1;
  for (OpId op : members) {
    const Op& o = in.graph.op(op);
    s.c += in.op_cost[op.value];
    s.flops += o.flops;
    s.params += static_cast<double>(o.param_bytes);
    s.outb += static_cast<double>(o.output_bytes());
    s.tmin = std::min(s.tmin, in.levels.top[op.value] - in.op_cost[op.value]);
    s.bmax = std::max(s.bmax, in.levels.bottom[op.value]);
    if (o.phase == Phase::Forward) {
      ++s.fwd;
      if (o.flops > main_flops) {
        main_flops = o.flops;
        s.main = op;
      }
    } else if (o.phase == Phase::Backward) {
      ++s.bwd;
    } else {
      ++s.upd;
    }
  }
  return s;
}

// Unit u's row of p->x and its type bucket.
void unit_row(const UnitRowInputs& in, int32_t u, PolicyInput* p) {
  const int32_t n = p->n;
  const auto& members = p->units.members[u];
  const UnitSums s = unit_sums(in, members);
  const Op& m = in.graph.op(s.main);
  p->type[u] = op_type_bucket(m.type);
  float* f = &p->x[static_cast<size_t>(u) * kUnitFeatures];
  const double k = static_cast<double>(members.size());
  f[0] = clip(s.c / in.fair_share, 0.0, 4.0);
  f[1] = static_cast<float>(std::log1p(s.c / in.mean_unit_cost) / 3.0);
  f[2] = clip((std::log10(s.c + 1e-9) + 6.0) / 3.0, -1.0, 3.0);
  f[3] = log_scaled(s.flops, 12.0);
  f[4] = log_scaled(in.in_b[u], 10.0);
  f[5] = log_scaled(in.out_b[u], 10.0);
  f[6] = log_scaled(s.params, 10.0);
  f[7] = clip(p->costs.mem_bytes[u] / in.min_capacity, 0.0, 2.0);
  const double xfer = in.out_b[u] > 0 ? in.ops.mean_transfer(static_cast<int64_t>(in.out_b[u])) : 0.0;
  f[8] = static_cast<float>(std::log1p(xfer / in.mean_unit_cost) / 3.0);
  f[9] = static_cast<float>(std::log1p(static_cast<double>(in.parents[u].size())) / 3.0);
  f[10] = static_cast<float>(std::log1p(static_cast<double>(in.children[u].size())) / 3.0);
  f[11] = static_cast<float>(u) / n;
  f[12] = static_cast<float>(s.tmin / in.levels.cp);
  f[13] = static_cast<float>(s.bmax / in.levels.cp);
  f[14] = static_cast<float>(std::log1p(k) / 5.0);
  f[15] = static_cast<float>(s.fwd / k);
  f[16] = static_cast<float>(s.bwd / k);
  f[17] = static_cast<float>(s.upd / k);
  // Output shape of the main op: up to 2 outputs x 4 dims.
  for (size_t o = 0; o < std::min<size_t>(2, m.outputs.size()); ++o)
    for (size_t dim = 0; dim < std::min<size_t>(4, m.outputs[o].shape.size()); ++dim)
      f[18 + o * 4 + dim] = static_cast<float>(std::log2(1.0 + std::max<int64_t>(0, m.outputs[o].shape[dim])) / 16.0);
  // Adjacency: up to 3 parents and 3 children, relative positions.
  for (size_t j = 0; j < std::min<size_t>(3, in.parents[u].size()); ++j)
    f[26 + j] = static_cast<float>(in.parents[u][j] - u) / n;
  for (size_t j = 0; j < std::min<size_t>(3, in.children[u].size()); ++j)
    f[29 + j] = static_cast<float>(in.children[u][j] - u) / n;
  const std::string& layer = m.layer.empty() ? in.graph.op(members.front()).layer : m.layer;
  const auto it = in.layer_rank.find(layer);
  if (it != in.layer_rank.end()) {
    f[32] = static_cast<float>((it->second + 0.5) / in.layers);
    f[33] = 1.f;
  }
}

}  // namespace

void check_policy_problem(const Graph& graph, const Cluster& cluster) {
  if (cluster.size() < 1) throw InputError("cluster '" + cluster.name + "' has no devices");
  if (cluster.size() > kMaxDevices)
    throw PolicyOutOfRange("cluster '" + cluster.name + "' has " + std::to_string(cluster.size()) +
                           " devices; the learned policies support at most " + std::to_string(kMaxDevices));
  if (graph.size() == 0) throw InputError("graph '" + graph.name + "' has no ops");
}

PolicyInput make_policy_input(const Graph& graph, const Cluster& cluster, const CostModel& costs,
                              const PolicyInputOptions& options) {
  check_policy_problem(graph, cluster);
  PolicyInput p;
  p.graph = &graph;
  p.cluster = &cluster;
  p.d = cluster.size();
  // The placers' op-level problem: costs, memory and edges come from it.
  const UnitProblem ops = make_op_problem(graph, cluster, costs, kMemoryFraction);
  std::vector<double> op_cost(ops.n);
  for (int32_t i = 0; i < ops.n; ++i) op_cost[i] = ops.mean_cost(i);
  p.units = policy_units(graph, op_cost, options);
  p.n = p.units.size();
  const int32_t n = p.n;

  const double total_cost = std::max(1e-12, std::accumulate(op_cost.begin(), op_cost.end(), 0.0));
  const double fair_share = total_cost / p.d;
  const double mean_unit_cost = total_cost / n;
  p.costs = unit_costs_for(ops, p.units.group_of, n, fair_share);
  const OpLevels levels = op_levels(graph, op_cost);
  const double min_capacity = std::max(1.0, *std::min_element(p.costs.capacity.begin(), p.costs.capacity.end()));

  // Unit-level adjacency (deduplicated, both directions kept as parent/child).
  std::vector<std::vector<int32_t>> parents(n), children(n);
  std::vector<double> in_b(n, 0.0), out_b(n, 0.0);
  unit_adjacency(ops, &p, &parents, &children, &in_b, &out_b);

  const std::map<std::string, int32_t> layer_rank = layer_ranks(graph);
  const double layers = std::max<size_t>(1, layer_rank.size());
  const UnitRowInputs in{graph, ops,        op_cost, levels,     parents,        children,    in_b,
                         out_b, layer_rank, layers,  fair_share, mean_unit_cost, min_capacity};
  p.x.assign(static_cast<size_t>(n) * kUnitFeatures, 0.f);
  p.type.assign(n, 0);
  for (int32_t u = 0; u < n; ++u) unit_row(in, u, &p);

  device_rows(cluster, &p);
  sample_peers(parents, children, options, &p);
  return p;
}

UnitCosts group_costs(const PolicyInput& problem, const std::vector<int32_t>& group_of_unit, int32_t groups) {
  const UnitCosts& uc = problem.costs;
  UnitCosts g;
  g.units = groups;
  g.devices = uc.devices;
  g.capacity = uc.capacity;
  g.cost.assign(static_cast<size_t>(groups) * uc.devices, 0.f);
  g.mem_bytes.assign(groups, 0.0);
  for (int32_t u = 0; u < uc.units; ++u) {
    const int32_t k = group_of_unit[u];
    for (int32_t d = 0; d < uc.devices; ++d)
      g.cost[static_cast<size_t>(k) * uc.devices + d] += uc.cost[static_cast<size_t>(u) * uc.devices + d];
    g.mem_bytes[k] += uc.mem_bytes[u];
  }
  // Edges: unit edges mapped to groups; weight = share of the group's incoming edge weight.
  std::map<std::pair<int32_t, int32_t>, std::pair<float, float>> w;  // (share, transfer)
  std::vector<float> in(groups, 0.f);
  for (size_t e = 0; e < uc.edge_src.size(); ++e) {
    const int32_t s = group_of_unit[uc.edge_src[e]], t = group_of_unit[uc.edge_dst[e]];
    if (s == t) continue;
    in[t] += uc.edge_w[e];
    if (s < t) {
      auto& v = w[{s, t}];
      v.first += uc.edge_w[e];
      v.second += uc.edge_xfer.empty() ? 0.f : uc.edge_xfer[e];
    }
  }
  for (const auto& [k, v] : w) {
    g.edge_src.push_back(k.first);
    g.edge_dst.push_back(k.second);
    g.edge_w.push_back(in[k.second] > 0 ? v.first / in[k.second] : 0.f);
    g.edge_xfer.push_back(v.second);
  }
  return g;
}

}  // namespace placer
