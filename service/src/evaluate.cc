// evaluate: a given placement, simulated, or measured on the server's own
// devices with the measurement protocol (runtime.h): the median step, its 95%
// interval and why measuring stopped, beside the simulator's figure.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "jobs.h"
#include "json_out.h"
#include "objective.h"
#include "placer/env/environment.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/placement.h"
#include "placer/service/service.h"
#include "prepared.h"

namespace placer::service {

namespace {

[[noreturn]] void bad_op(const std::string& op, const std::string& problem) {
  throw RequestError(codes::kBadPlacement, "placement.device." + op, problem);
}

// Each (op, device) pair, then each op of the graph: a placement for another graph or cluster is refused
// naming placement.device.<op> (from_named's errors all said "placement").
void check_pairs(const Request& r, const PreparedRequest& p) {
  for (const auto& [op, device] : r.placement) {
    if (!p.graph.find(op)) bad_op(op, "no op '" + op + "' in graph '" + p.graph.name + "'");
    if (!p.cluster.find(device)) {
      std::vector<std::string> names;
      for (const Device& d : p.cluster.devices) names.push_back(d.name);
      bad_op(op,
             "device '" + device + "' is not in cluster '" + p.cluster.name + "' (devices: " + join_names(names) + ")");
    }
  }
  for (const Op& op : p.graph.ops())
    if (!r.placement.count(op.name))
      bad_op(op.name, "missing: every op of graph '" + p.graph.name + "' needs a device (" +
                          std::to_string(r.placement.size()) + " of " + std::to_string(p.graph.size()) + " placed)");
}

// Ops that must share a device (a co-location group; a backward or update op and its forward op), checked
// after check_pairs: the op that breaks it is named.
void check_shared(const Request& r, const PreparedRequest& p) {
  std::map<std::string, std::string> group_device;
  for (const Op& op : p.graph.ops()) {
    const std::string& device = r.placement.at(op.name);
    if (!op.group.empty()) {
      const auto [it, inserted] = group_device.emplace(op.group, device);
      if (!inserted && p.cluster.find(it->second) != p.cluster.find(device))
        bad_op(op.name, "co-location group '" + op.group + "' is split: this op is on " + device +
                            ", another member on " + it->second);
    }
    if (!op.forward.valid()) continue;
    const std::string& forward = p.graph.op(op.forward).name;
    if (p.cluster.find(r.placement.at(forward)) != p.cluster.find(device))
      bad_op(op.name,
             "must share a device with '" + forward + "' (" + r.placement.at(forward) + "), but is on " + device);
  }
}

Placement placement_of(const Request& r, const PreparedRequest& p) {
  check_pairs(r, p);
  check_shared(r, p);
  NamedPlacement named;
  named.graph = p.graph.name;
  named.device = r.placement;
  try {
    return from_named(p.graph, p.cluster, named);
  } catch (const InputError& e) {
    throw RequestError(codes::kBadPlacement, "placement", e.what());
  }
}

// One fresh measurement, on devices this server holds alone meanwhile. A
// cluster this machine cannot run (a GPU preset on a CPU host) is bad_request at `measure`.
StepResult measure(const Request& r, const PreparedRequest& p, const Placement& placement, JobManager& jobs,
                   Clock::time_point deadline) {
  EnvOptions eo = simulated_env(r);
  eo.mode = RewardMode::Measured;
  eo.measure = *r.measure;
  StepResult result;
  jobs.with_devices("an evaluate request", deadline, [&] {
    // Within the deadline (measure.min_time 3600, or budget_s 0 with 1000 steps, held a request worker and
    // the server's devices for an hour, the deadline checked only afterwards): what is left of it bounds
    // the measured seconds, the minimum time and each step.
    const double left = std::max(1e-3, std::chrono::duration<double>(deadline - Clock::now()).count());
    MeasureOptions& m = eo.measure;
    m.budget_s = m.budget_s > 0 ? std::min(m.budget_s, left) : left;
    m.min_time_s = std::min(m.min_time_s, left);
    m.timeout_s = std::min(m.timeout_s, left);
    try {
      Environment env(p.prepared, eo);
      result = env.measure_side_by_side({placement}, /*fresh=*/true).at(0);
    } catch (const InputError& e) {
      throw RequestError(codes::kBadRequest, "measure", e.what());
    }
  });
  return result;
}

}  // namespace

std::string PlacementService::handle_evaluate(const Request& r, Clock::time_point deadline) {
  auto p = prepare(r);
  const Placement placement = placement_of(r, *p);
  Environment env(p->prepared, simulated_env(r));
  const StepResult simulated = env.simulate(placement);
  const StepResult result = r.measure ? measure(r, *p, placement, *jobs_, deadline) : simulated;
  JsonOut o;
  o.begin().field("graph", p->graph.name).field("cluster", p->cluster.name);
  write_objective(o, r.objective, r.pipeline);
  o.field("measured", r.measure.has_value());
  write_step(o, result);
  if (r.measure && simulated.ok()) o.field("simulated_step_s", simulated.step_s);
  write_pipeline_figures(o, r, result);
  o.field("lower_bound_s", p->lower_bound_s);
  o.field("transfer_bytes", result.transfer_bytes);
  if (!result.oom_device.empty()) o.field("oom_device", result.oom_device);
  o.end();
  return o.text();
}

}  // namespace placer::service
