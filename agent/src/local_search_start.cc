// The annealing searches' start (see local_search_start.h).
#include "local_search_start.h"

#include "placer/env/environment.h"

namespace placer {

Placement group_placement(const UnitProblem& p, const std::vector<int32_t>& gd) {
  Placement pl;
  pl.device_of.resize(p.n);
  for (int32_t u = 0; u < p.n; ++u) pl.device_of[u] = DeviceId(gd[p.group_of[u]]);
  return pl;
}

const std::vector<std::string>& start_methods() {
  static const std::vector<std::string> methods = {"m_etf", "heft", "dp", "expert"};
  return methods;
}

AnnealingStart best_start(const PlaceContext& ctx, const UnitProblem& p) {
  const int32_t G = p.groups();
  AnnealingStart start;
  StepResult start_step;  // of start.group_device
  auto consider = [&](const std::string& method, const std::vector<int32_t>& gd) {
    StepResult s = ctx.env->simulate(group_placement(p, gd));
    ++start.simulated;
    if (s.ok() && (start.group_device.empty() || s.step_s < start_step.step_s))
      start_step = std::move(s), start.group_device = gd, start.method = method;
  };
  for (const std::string& method : start_methods()) {
    try {
      PlaceContext sub = ctx;
      sub.options.clear();
      const Placement placed = make_placer(method)->place(sub).placement;
      std::vector<int32_t> gd(G);
      for (int32_t g = 0; g < G; ++g) gd[g] = placed.device_of[p.members[g][0]].value;
      consider(method, gd);
    } catch (const NoFeasiblePlacement&) {
    } catch (const PlacementError&) {}
  }
  if (!start.group_device.empty()) {
    std::vector<int32_t> moved = start.group_device;
    const int32_t n = move_updates_off(*ctx.graph, p, start_step, &moved);
    if (n > 0) {
      const StepResult s = ctx.env->simulate(group_placement(p, moved));
      ++start.simulated;
      if (s.ok() && s.step_s < start_step.step_s) start.group_device = std::move(moved), start.updates_moved = n;
    }
  }
  if (start.group_device.empty()) {
    start.group_device.assign(G, 0);
    if (!repair_memory(p, start.group_device))
      throw NoFeasiblePlacement("local_search: found no memory-feasible start");
    start.method = "repaired single device";
  }
  return start;
}

AnnealingStart given_start(const UnitProblem& p, const Placement& placement) {
  if (static_cast<int32_t>(placement.device_of.size()) != p.n)
    throw PlacementError("local_search: the start placement has " + std::to_string(placement.device_of.size()) +
                         " ops, the graph " + std::to_string(p.n));
  AnnealingStart start;
  start.group_device.resize(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) start.group_device[g] = placement.device_of[p.members[g][0]].value;
  start.method = "the given start";
  return start;
}

std::vector<int32_t> movable_groups(const UnitProblem& p) {
  std::vector<int32_t> movable;
  for (int32_t g = 0; g < p.groups(); ++g)
    if (p.group_cost(g, 0) > 0 || p.group_mem[g] > 0) movable.push_back(g);
  if (movable.empty())
    for (int32_t g = 0; g < p.groups(); ++g) movable.push_back(g);
  return movable;
}

}  // namespace placer
