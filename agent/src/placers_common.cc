// Shared helpers of the algorithmic placers: options, messages and finish().
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
#include "placer/graphs/json_writer.h"

namespace placer {

PlaceResult UnitPlacer::place(const PlaceContext& context) {
  const auto started = Clock::now();
  const UnitProblem p = make_unit_problem(context, kMemoryFraction);
  check_groups_fit(p);
  return place_units(context, p, started);
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

SearchScore search_score(Environment& env, const Placement& placement) {
  if (env.options().mode != RewardMode::Simulated) {
    const StepResult sim = env.simulate(placement);
    return {env.reward_of(sim), sim.ok()};
  }
  const Evaluation e = env.evaluate(placement);
  return {e.reward, e.result.ok()};
}

bool better_score(const SearchScore& a, const SearchScore& b) {
  if (a.ok != b.ok) return a.ok;
  return a.reward > b.reward;
}

bool stop_requested(const PlaceContext& context) {
  if (context.cancel && context.cancel->load(std::memory_order_relaxed)) return true;
  return context.stop_at && Clock::now() >= *context.stop_at;
}

double option_double(const PlaceContext& context, const std::string& key, double fallback, double lo, double hi) {
  auto it = context.options.find(key);
  if (it == context.options.end()) return fallback;
  double v = 0.0;
  try {
    size_t pos = 0;
    v = std::stod(it->second, &pos);
    if (pos != it->second.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError("option '" + key + "': expected a number, got '" + it->second + "'");
  }
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError("option '" + key + "': must be a finite number " +
                     (hi < std::numeric_limits<double>::max()
                          ? "in [" + format_number(lo, 6) + ", " + format_number(hi, 6) + "]"
                          : ">= " + format_number(lo, 6)) +
                     ", got '" + it->second + "'");
  return v;
}

int64_t option_int(const PlaceContext& context, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  auto it = context.options.find(key);
  if (it == context.options.end()) return fallback;
  long long v = 0;
  try {
    size_t pos = 0;
    v = std::stoll(it->second, &pos);
    if (pos != it->second.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError("option '" + key + "': expected an integer, got '" + it->second + "'");
  }
  if (v < lo || v > hi)
    throw InputError("option '" + key + "': must be an integer " +
                     (hi < std::numeric_limits<int64_t>::max()
                          ? "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"
                          : ">= " + std::to_string(lo)) +
                     ", got '" + it->second + "'");
  return v;
}

std::string option_string(const PlaceContext& context, const std::string& key, const std::string& fallback) {
  auto it = context.options.find(key);
  return it == context.options.end() ? fallback : it->second;
}

namespace {

Placement to_placement(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method) {
  Placement placement;
  placement.device_of.resize(op_device.size());
  for (size_t i = 0; i < op_device.size(); ++i) {
    PLACER_CHECK(op_device[i] >= 0 && op_device[i] < context.cluster->size(), method, ": op ", i, " on device ",
                 op_device[i]);
    placement.device_of[i] = DeviceId(op_device[i]);
  }
  return placement;
}

std::string overflow_text(const StepResult& oom) {
  return "device " + oom.oom_device + " (needs " + format_bytes(oom.oom_needed_bytes) + ", has " +
         format_bytes(oom.oom_capacity_bytes) + ")";
}

// The simulator found a device short (the placers' estimate leaves out the
// tensors a device receives): moves groups (repair_memory) to fit ever lower
// shares of device memory until the simulator fits the placement. Its step;
// NoFeasiblePlacement naming the first overflow if no share does.
StepResult refit_memory(const PlaceContext& context, const std::string& method, const StepResult& oom,
                        Placement* placement, std::string* note) {
  UnitProblem p = make_unit_problem(context, kMemoryFraction);
  std::vector<int32_t> gd(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) gd[g] = placement->device_of[p.members[g][0]].value;
  for (double fraction : {0.75, 0.6, 0.45, 0.3, 0.15}) {
    set_memory_fraction(p, *context.cluster, fraction);
    if (!repair_memory(p, gd)) break;
    Placement moved = to_placement(context, expand_groups(p, gd), method);
    const StepResult sim = context.env->simulate(moved);
    if (sim.status == StepStatus::Oom) continue;
    *placement = std::move(moved);
    *note += (note->empty() ? "" : "; ") + std::string("the simulator found ") + overflow_text(oom) +
             " short: moved groups to fit " + format_number(100 * fraction, 3) + "% of device memory";
    return sim;
  }
  throw NoFeasiblePlacement(method + ": the placement overflows " + overflow_text(oom));
}

}  // namespace

bool simulator_fits(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method) {
  return context.env->simulate(to_placement(context, op_device, method)).status != StepStatus::Oom;
}

PlaceResult finish(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method,
                   Clock::time_point started, std::string note) {
  const Graph& graph = *context.graph;
  PLACER_CHECK(static_cast<int64_t>(op_device.size()) == graph.size(), method, ": placement size ", op_device.size());
  PlaceResult result;
  result.method = method;
  result.placement = to_placement(context, op_device, method);
  result.place_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  validate_placement(graph, *context.cluster, result.placement);
  StepResult sim = context.env->simulate(result.placement);
  if (sim.status == StepStatus::Oom) sim = refit_memory(context, method, sim, &result.placement, &note);
  result.stats["sim_step_s"] = sim.step_s;
  result.stats["transfer_bytes"] = static_cast<double>(sim.transfer_bytes);
  std::vector<char> used(context.cluster->size(), 0);
  for (DeviceId d : result.placement.device_of) used[d.value] = 1;
  result.stats["devices_used"] = static_cast<double>(std::count(used.begin(), used.end(), 1));
  result.note = std::move(note);
  return result;
}

}  // namespace placer
