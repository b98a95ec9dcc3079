// The max-load objective (env/max_load.h).
#include "placer/env/max_load.h"

#include <algorithm>
#include <map>

#include "placer/graphs/error.h"

namespace placer {

namespace {

std::string label(const Workload& w, size_t i) {
  const WorkloadNode& n = w.nodes[i];
  return n.name.empty() ? detail::concat("node ", n.id) : detail::concat("node ", n.id, " '", n.name, "'");
}

}  // namespace

void check_workload_placement(const Workload& w, const WorkloadPlacement& p) {
  if (p.size() != w.nodes.size())
    throw PlacementError(detail::concat("placement: ", p.size(), " devices for ", w.nodes.size(), " nodes"));
  const std::vector<int32_t> cls = w.colocation_classes();
  std::map<int32_t, size_t> first_of_class;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0 || p[i] >= w.cluster.devices())
      throw PlacementError(
          detail::concat(label(w, i), ": device ", p[i], " (the workload has ", w.cluster.devices(), ")"));
    auto [it, inserted] = first_of_class.emplace(cls[i], i);
    if (!inserted && p[it->second] != p[i])
      throw PlacementError(label(w, i) + " and " + label(w, it->second) +
                           " share a colorClass but are on different devices");
  }
}

MaxLoadReport max_load(const Workload& w, const WorkloadPlacement& p) {
  check_workload_placement(w, p);
  MaxLoadEvaluator eval(w);
  MaxLoadReport r;
  r.max_load = eval.evaluate(p, &r.load);
  r.busiest = static_cast<int32_t>(std::max_element(r.load.begin(), r.load.end()) - r.load.begin());
  r.bytes.assign(static_cast<size_t>(w.cluster.devices()), 0.0);
  for (size_t i = 0; i < p.size(); ++i) r.bytes[static_cast<size_t>(p[i])] += w.nodes[i].size;
  r.feasible = eval.feasible(p);
  return r;
}

MaxLoadEvaluator::MaxLoadEvaluator(const Workload& w) : w_(w) {
  succ_begin_.assign(w.nodes.size() + 1, 0);
  for (const WorkloadEdge& e : w.edges) ++succ_begin_[static_cast<size_t>(e.from) + 1];
  for (size_t i = 0; i < w.nodes.size(); ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(w.edges.size());
  std::vector<int32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (const WorkloadEdge& e : w.edges) succ_[static_cast<size_t>(fill[static_cast<size_t>(e.from)]++)] = e.to;
}

double MaxLoadEvaluator::evaluate(const WorkloadPlacement& p, std::vector<double>* load_out) const {
  const int32_t accelerators = w_.cluster.accelerators;
  std::vector<double> local;
  std::vector<double>& load = load_out ? *load_out : local;
  load.assign(static_cast<size_t>(w_.cluster.devices()), 0.0);
  for (size_t u = 0; u < p.size(); ++u) {
    const WorkloadNode& n = w_.nodes[u];
    load[static_cast<size_t>(p[u])] += p[u] < accelerators ? n.accelerator_latency : n.cpu_latency;
    // The devices u's output goes to, other than its own.
    uint64_t receivers = 0;
    for (int32_t k = succ_begin_[u]; k < succ_begin_[u + 1]; ++k)
      receivers |= uint64_t{1} << p[static_cast<size_t>(succ_[static_cast<size_t>(k)])];
    receivers &= ~(uint64_t{1} << p[u]);
    if (receivers == 0) continue;
    const double cost = w_.out_cost[u];
    if (p[u] < accelerators) load[static_cast<size_t>(p[u])] += cost;  // sends once
    for (int32_t d = 0; d < accelerators; ++d)
      if (receivers >> d & 1) load[static_cast<size_t>(d)] += cost;  // each accelerator receives once
  }
  return load.empty() ? 0.0 : *std::max_element(load.begin(), load.end());
}

bool MaxLoadEvaluator::feasible(const WorkloadPlacement& p) const {
  std::vector<double> bytes(static_cast<size_t>(w_.cluster.accelerators), 0.0);
  for (size_t u = 0; u < p.size(); ++u) {
    if (p[u] >= w_.cluster.accelerators) continue;
    if (!w_.nodes[u].accelerator_ok) return false;
    bytes[static_cast<size_t>(p[u])] += w_.nodes[u].size;
  }
  for (double b : bytes)
    if (b > w_.cluster.accelerator_bytes) return false;
  return true;
}

}  // namespace placer
