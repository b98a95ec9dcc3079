// The annealing searches' start (see local_search_start.h).
#include "local_search_start.h"

#include <algorithm>
#include <chrono>

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

namespace {

// Whether best_start stops before its next candidate (never before the first).
bool start_done(const PlaceContext& ctx, const StartLimits& limits, const AnnealingStart& start) {
  if (start.simulated == 0) return false;
  return start.simulated >= limits.max_simulated || (limits.stoppable && stop_requested(ctx));
}

// offload_updates' move on the fastest candidate, kept where it is faster.
void try_moving_updates(const PlaceContext& ctx, const UnitProblem& p, const StepResult& start_step,
                        AnnealingStart& start) {
  std::vector<int32_t> moved = start.group_device;
  const int32_t n = move_updates_off(*ctx.graph, p, start_step, &moved);
  if (n == 0) return;
  const StepResult s = ctx.env->simulate(group_placement(p, moved));
  ++start.simulated;
  if (s.ok() && s.step_s < start_step.step_s) start.group_device = std::move(moved), start.updates_moved = n;
}

}  // namespace

AnnealingStart best_start(const PlaceContext& ctx, const UnitProblem& p, const StartLimits& limits) {
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
    if (start_done(ctx, limits, start)) break;
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
  if (!start.group_device.empty() && !start_done(ctx, limits, start)) try_moving_updates(ctx, p, start_step, start);
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

AnnealingStart annealing_start(const PlaceContext& ctx, const UnitProblem& p, int64_t budget) {
  if (ctx.start) return given_start(p, *ctx.start);
  return best_start(ctx, p, StartLimits{budget, true});
}

PlaceResult start_as_answer(const PlaceContext& ctx, const UnitProblem& p, const AnnealingStart& start,
                            const std::string& method, Clock::time_point started) {
  PlaceResult out = finish(ctx, expand_groups(p, start.group_device), method, started,
                           method + ": the budget went on the start candidates; " + start.name());
  out.evaluations = start.simulated;
  out.stats["start_candidates"] = start.simulated;
  return out;
}

AnnealingSchedule::AnnealingSchedule(const PlaceContext& ctx, Clock::time_point started, int64_t budget)
    : ctx_(ctx), budget_(std::max<int64_t>(1, budget)) {
  if (!ctx.start) return;
  limit_s_ = std::max(1e-3, ctx.time_limit_s);
  deadline_ = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s_));
}

std::optional<double> AnnealingSchedule::progress(int64_t evaluations) const {
  if (evaluations >= budget_ || stop_requested(ctx_)) return std::nullopt;
  double frac = static_cast<double>(evaluations) / static_cast<double>(budget_);
  if (deadline_) {
    const double left = std::chrono::duration<double>(*deadline_ - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    frac = std::max(frac, 1.0 - left / limit_s_);
  }
  return frac;
}

}  // namespace placer
