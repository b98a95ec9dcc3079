// A workload as a learned policy's placement problem (learned_max_load_units.h).
#include "learned_max_load_units.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"

namespace placer {

namespace {

float clip(double v, double lo, double hi) { return static_cast<float>(std::min(hi, std::max(lo, v))); }

// Kahn's order of the workload's nodes (the file is checked to be acyclic), lowest index first.
std::vector<int32_t> topological_rank(const Workload& w) {
  const size_t n = w.nodes.size();
  std::vector<std::vector<int32_t>> succ(n);
  std::vector<int32_t> indegree(n, 0), rank(n, 0), ready;
  for (const WorkloadEdge& e : w.edges) {
    succ[static_cast<size_t>(e.from)].push_back(e.to);
    ++indegree[static_cast<size_t>(e.to)];
  }
  for (size_t u = 0; u < n; ++u)
    if (indegree[u] == 0) ready.push_back(static_cast<int32_t>(u));
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  for (int32_t next = 0; !ready.empty(); ++next) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const int32_t u = ready.back();
    ready.pop_back();
    rank[static_cast<size_t>(u)] = next;
    for (int32_t v : succ[static_cast<size_t>(u)])
      if (--indegree[static_cast<size_t>(v)] == 0) {
        ready.push_back(v);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
  }
  return rank;
}

// Units (colocation classes) ordered by their first node in topological order.
void make_units(const Workload& w, MaxLoadUnits* m, std::vector<int32_t>* unit_of_node) {
  int32_t classes = 0;
  const std::vector<int32_t> cls = w.colocation_classes(&classes);
  const std::vector<int32_t> rank = topological_rank(w);
  std::vector<int32_t> first(static_cast<size_t>(classes), w.size());
  for (int32_t u = 0; u < w.size(); ++u) {
    int32_t& f = first[static_cast<size_t>(cls[static_cast<size_t>(u)])];
    f = std::min(f, rank[static_cast<size_t>(u)]);
  }
  std::vector<int32_t> order(static_cast<size_t>(classes));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  std::vector<int32_t> unit_of_class(static_cast<size_t>(classes));
  for (int32_t i = 0; i < classes; ++i) unit_of_class[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
  m->members.assign(static_cast<size_t>(classes), {});
  m->bytes.assign(static_cast<size_t>(classes), 0.0);
  m->accelerator_ok.assign(static_cast<size_t>(classes), 1);
  unit_of_node->resize(w.nodes.size());
  for (int32_t u = 0; u < w.size(); ++u) {
    const int32_t k = unit_of_class[static_cast<size_t>(cls[static_cast<size_t>(u)])];
    (*unit_of_node)[static_cast<size_t>(u)] = k;
    m->members[static_cast<size_t>(k)].push_back(u);
    m->bytes[static_cast<size_t>(k)] += w.nodes[static_cast<size_t>(u)].size;
    if (!w.nodes[static_cast<size_t>(u)].accelerator_ok) m->accelerator_ok[static_cast<size_t>(k)] = 0;
  }
}

// Unit costs (the decoder's dynamic features): latency per device and the
// transfer cost of each edge between units, relative to `scale`.
void make_costs(const Workload& w, const std::vector<int32_t>& unit_of_node, double scale, MaxLoadUnits* m) {
  PolicyInput& p = m->input;
  UnitCosts& c = p.costs;
  c.units = p.n;
  c.devices = p.d;
  c.cost.assign(static_cast<size_t>(p.n) * p.d, 0.f);
  for (int32_t u = 0; u < w.size(); ++u) {
    const WorkloadNode& node = w.nodes[static_cast<size_t>(u)];
    const size_t k = static_cast<size_t>(unit_of_node[static_cast<size_t>(u)]);
    for (int32_t d = 0; d < p.d; ++d)
      c.cost[k * p.d + d] +=
          static_cast<float>((d < w.cluster.accelerators ? node.accelerator_latency : node.cpu_latency) / scale);
  }
  c.mem_bytes = m->bytes;
  double total_bytes = 1.0;
  for (double b : m->bytes) total_bytes += b;
  for (int32_t d = 0; d < p.d; ++d)
    c.capacity.push_back(d < w.cluster.accelerators ? w.cluster.accelerator_bytes : 2.0 * total_bytes);
  // Edges between units in unit order (the decoder needs src < dst), each with the
  // transfer cost of the outputs that cross it; parents for message passing.
  std::map<std::pair<int32_t, int32_t>, double> xfer;
  for (const WorkloadEdge& e : w.edges) {
    int32_t a = unit_of_node[static_cast<size_t>(e.from)], b = unit_of_node[static_cast<size_t>(e.to)];
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    xfer[{a, b}] += w.out_cost[static_cast<size_t>(e.from)];
  }
  std::vector<double> incoming(static_cast<size_t>(p.n), 0.0);
  std::vector<int32_t> count(static_cast<size_t>(p.n), 0);
  for (const auto& [ab, x] : xfer) {
    incoming[static_cast<size_t>(ab.second)] += x;
    ++count[static_cast<size_t>(ab.second)];
  }
  for (const auto& [ab, x] : xfer) {
    const double in = incoming[static_cast<size_t>(ab.second)];
    c.edge_src.push_back(ab.first);
    c.edge_dst.push_back(ab.second);
    c.edge_w.push_back(static_cast<float>(in > 0 ? x / in : 1.0 / count[static_cast<size_t>(ab.second)]));
    c.edge_xfer.push_back(static_cast<float>(x / scale));
    p.parent_src.push_back(ab.first);
    p.parent_dst.push_back(ab.second);
  }
}

// Numeric unit features, a type per unit (forward, training, backward only), device features.
void make_features(const Workload& w, double scale, MaxLoadUnits* m) {
  PolicyInput& p = m->input;
  const UnitCosts& c = p.costs;
  std::vector<double> out_x(static_cast<size_t>(p.n), 0.0), in_x(static_cast<size_t>(p.n), 0.0);
  std::vector<int32_t> out_deg(static_cast<size_t>(p.n), 0), in_deg(static_cast<size_t>(p.n), 0);
  for (size_t e = 0; e < c.edge_src.size(); ++e) {
    out_x[static_cast<size_t>(c.edge_src[e])] += c.edge_xfer[e];
    in_x[static_cast<size_t>(c.edge_dst[e])] += c.edge_xfer[e];
    ++out_deg[static_cast<size_t>(c.edge_src[e])];
    ++in_deg[static_cast<size_t>(c.edge_dst[e])];
  }
  const double cap = std::max(1.0, w.cluster.accelerator_bytes);
  p.x.assign(static_cast<size_t>(p.n) * kUnitFeatures, 0.f);
  for (int32_t k = 0; k < p.n; ++k) {
    const auto& members = m->members[static_cast<size_t>(k)];
    int32_t backward = 0;
    double cpu = 0.0;
    for (int32_t u : members) {
      backward += w.nodes[static_cast<size_t>(u)].backward ? 1 : 0;
      cpu += w.nodes[static_cast<size_t>(u)].cpu_latency;
    }
    float* f = &p.x[static_cast<size_t>(k) * kUnitFeatures];
    f[0] = clip(w.cluster.accelerators > 0 ? c.cost[static_cast<size_t>(k) * p.d] : 0.0, 0.0, 4.0);
    f[1] = clip(cpu / scale, 0.0, 4.0);
    f[2] = clip(m->bytes[static_cast<size_t>(k)] / cap, 0.0, 2.0);
    f[3] = clip(out_x[static_cast<size_t>(k)], 0.0, 4.0);
    f[4] = clip(in_x[static_cast<size_t>(k)], 0.0, 4.0);
    f[5] = clip(static_cast<double>(members.size()) / 16.0, 0.0, 4.0);
    f[6] = static_cast<float>(backward) / static_cast<float>(members.size());
    f[7] = m->accelerator_ok[static_cast<size_t>(k)] ? 1.f : 0.f;
    f[8] = static_cast<float>(k) / static_cast<float>(std::max(1, p.n - 1));
    f[9] = clip(out_deg[static_cast<size_t>(k)] / 8.0, 0.0, 2.0);
    f[10] = clip(in_deg[static_cast<size_t>(k)] / 8.0, 0.0, 2.0);
    const char* type = backward == 0                                      ? "max_load:forward"
                       : backward == static_cast<int32_t>(members.size()) ? "max_load:backward"
                                                                          : "max_load:forward+backward";
    p.type.push_back(op_type_bucket(type));
  }
  double need = 1.0;
  for (double b : m->bytes) need += b;
  p.dev.assign(static_cast<size_t>(p.d) * kDeviceFeatures, 0.f);
  for (int32_t d = 0; d < p.d; ++d) {
    float* f = &p.dev[static_cast<size_t>(d) * kDeviceFeatures];
    f[0] = d < w.cluster.accelerators ? 0.f : 1.f;
    f[1] = d < w.cluster.accelerators ? 1.f : 0.f;
    f[4] = clip(c.capacity[static_cast<size_t>(d)] / need, 0.0, 4.0);
    f[7] = static_cast<float>(p.d) / kMaxDevices;
  }
}

}  // namespace

MaxLoadUnits make_max_load_units(const Workload& w) {
  if (w.cluster.devices() > kMaxDevices)
    throw InputError(detail::concat("learned: the policies place on at most ", kMaxDevices,
                                    " devices, the cluster has ", w.cluster.devices(), " (--accelerators + --cpus)"));
  if (w.nodes.empty()) throw InputError("learned: the workload has no nodes");
  MaxLoadUnits m;
  std::vector<int32_t> unit_of_node;
  make_units(w, &m, &unit_of_node);
  PolicyInput& p = m.input;
  p.n = static_cast<int32_t>(m.members.size());
  p.d = w.cluster.devices();
  p.peers.assign(static_cast<size_t>(p.n), {});
  // Costs relative to an accelerator's fair share of the work (its ideal load).
  double total = 0.0;
  for (const WorkloadNode& node : w.nodes)
    total += w.cluster.accelerators > 0 ? node.accelerator_latency : node.cpu_latency;
  const double scale = std::max(1e-12, total / std::max(1, w.cluster.accelerators > 0 ? w.cluster.accelerators : p.d));
  make_costs(w, unit_of_node, scale, &m);
  make_features(w, scale, &m);
  return m;
}

WorkloadPlacement MaxLoadUnits::expand(const std::vector<int32_t>& unit_device) const {
  size_t nodes = 0;
  for (const auto& ms : members) nodes += ms.size();
  WorkloadPlacement p(nodes, 0);
  for (size_t k = 0; k < members.size(); ++k)
    for (int32_t u : members[k]) p[static_cast<size_t>(u)] = unit_device[k];
  return p;
}

std::vector<int32_t> MaxLoadUnits::contract(const WorkloadPlacement& p) const {
  std::vector<int32_t> out(members.size());
  for (size_t k = 0; k < members.size(); ++k) out[k] = p[static_cast<size_t>(members[k].front())];
  return out;
}

double MaxLoadUnits::excess(const Workload& w, const std::vector<int32_t>& unit_device) const {
  std::vector<double> used(static_cast<size_t>(std::max(0, w.cluster.accelerators)), 0.0);
  double out = 0.0;
  for (size_t k = 0; k < members.size(); ++k) {
    const int32_t d = unit_device[k];
    if (d >= w.cluster.accelerators) continue;
    used[static_cast<size_t>(d)] += bytes[k];
    if (!accelerator_ok[k]) out += 1.0;
  }
  const double cap = std::max(1.0, w.cluster.accelerator_bytes);
  for (double b : used) out += std::max(0.0, b - w.cluster.accelerator_bytes) / cap;
  return out;
}

}  // namespace placer
