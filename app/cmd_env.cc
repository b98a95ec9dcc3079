// placer simulate: one placed step in the simulator (its measured error: cmd_fidelity.cc).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/env/cost_model.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"

namespace placer::cli {

namespace {

struct SimulateArgs {
  std::string graph, placement, cluster = "cpu:2", profile, trace, json, split_spec;
  bool no_memory = false;
  bool per_copy = false;  // the CPU copy cost fitted per copy instead of per byte (CostModel::GroupCopyPricing)
  ObjectiveArgs objective;
};

// What `placer simulate` runs (the graph, or under --objective pipeline its
// unrolled mini-batch) and its costs.
struct SimulatedProblem {
  RunGraph run;
  CostModel costs;
  bool calibrated = false;

  SimulatedProblem(const Graph& base, const Cluster& cluster, const SimulateArgs& a)
      : run(base, a.objective), calibrated(!a.profile.empty()) {
    costs = calibrated ? run.calibrated(cluster, load_profile(a.profile), a.per_copy)
                       : CostModel::roofline(run.graph(), cluster);
  }
};

std::string simulate_json(const SimulatedProblem& sp, const Cluster& cluster, const StepResult& r, const LowerBound& lb,
                          double gap) {
  std::string result = step_result_to_json(r);
  while (!result.empty() && (result.back() == '\n' || result.back() == ' ')) result.pop_back();
  // JSON has no inf or nan: null (a step the simulator could not finish has no gap).
  auto num = [](double v, int precision = 9) { return std::isfinite(v) ? format_number(v, precision) : "null"; };
  std::ostringstream o;
  o << "{\n\"graph\": " << json_quote(sp.run.graph().name) << ",\n\"cluster\": " << json_quote(cluster.name)
    << ",\n\"cost_model\": \"" << (sp.calibrated ? "calibrated" : "roofline")
    << "\",\n\"calibrated_fraction\": " << num(sp.costs.calibrated_fraction(), 6)
    << ",\n\"copy_s_per_byte\": " << num(sp.costs.group_copy_s_per_byte())
    << ",\n\"copy_s_per_copy\": " << num(sp.costs.group_copy_s())
    << ",\n\"cross_copy_s\": " << num(sp.costs.cross_copy_s()) << ",\n\"lower_bound_s\": " << num(lb.value())
    << ",\n\"lower_bound\": {\"critical_path_s\": " << num(lb.critical_path_s) << ", \"joins_s\": " << num(lb.joins_s)
    << ", \"average_work_s\": " << num(lb.average_work_s) << ", \"lp_s\": " << num(lb.lp_s)
    << ", \"group_s\": " << num(lb.group_s) << "},\n\"gap\": " << num(gap) << ",\n\"result\": " << result << "\n}\n";
  return sp.run.spec() ? with_pipeline_figures(o.str(), r, *sp.run.spec()) : o.str();
}

void print_simulated(const SimulatedProblem& sp, const Cluster& cluster, const StepResult& r, const LowerBound& lb,
                     double gap) {
  const Graph& graph = sp.run.graph();
  std::printf("graph %s (%lld ops) on %s, %s costs%s\n", graph.name.c_str(), static_cast<long long>(graph.size()),
              cluster.name.c_str(), sp.calibrated ? "calibrated" : "roofline",
              sp.calibrated ? measured_ops_note(sp.costs).c_str() : "");
  std::printf("status: %s%s%s\n", step_status_name(r.status), r.message.empty() ? "" : ": ", r.message.c_str());
  // The LP is solved only where devices differ in speed (else it is the average work): 0 then, not shown.
  char lp[48] = "";
  if (lb.lp_s > 0) std::snprintf(lp, sizeof lp, ", LP %.6g", lb.lp_s);
  std::printf(
      "step: %.6g s   lower bound: %.6g s (critical path %.6g, with joins %.6g, average work %.6g%s, "
      "co-location group %.6g)   gap: %.2f%%%s\n",
      r.step_s, lb.value(), lb.critical_path_s, lb.joins_s, lb.average_work_s, lp, lb.group_s, 100 * gap,
      r.ok() ? bound_note(r.step_s, lb.value()) : "");
  if (sp.run.spec()) std::printf("pipeline: %s\n", pipeline_figures_text(pipeline_figures(r, *sp.run.spec())).c_str());
  std::printf("transfers: %lld bytes\n", static_cast<long long>(r.transfer_bytes));
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    const int64_t cap = cluster.devices[d].memory_bytes;
    std::printf("  %-8s busy %.6g s (%5.1f%%)  peak %lld bytes", s.device.c_str(), s.busy_s,
                r.step_s > 0 ? 100 * s.busy_s / r.step_s : 0.0, static_cast<long long>(s.peak_bytes));
    if (cap > 0) std::printf(" of %lld (%.1f%%)", static_cast<long long>(cap), 100.0 * s.peak_bytes / cap);
    std::printf("\n");
  }
}

void run_simulate(const SimulateArgs& a) {
  const Graph graph = load_graph(a.graph);
  const Cluster cluster = cluster_option("--cluster", a.cluster);
  check_split_spec_graph(a.split_spec, graph);
  const Placement placement = placement_from_file(graph, cluster, a.placement);
  const SimulatedProblem sp(graph, cluster, a);
  SimOptions options;
  options.track_memory = !a.no_memory;
  std::vector<TimelineEvent> events;
  const SimContext context(sp.run.graph());
  const StepResult r =
      simulate(context, sp.run.at(placement), cluster, sp.costs, options, a.trace.empty() ? nullptr : &events);
  const LowerBound lb = lower_bound_parts(sp.run.graph(), cluster, sp.costs);
  const double gap = lb.value() > 0 ? r.step_s / lb.value() - 1.0 : 0.0;

  if (!a.json.empty()) write_file_atomic(a.json, with_invocation(simulate_json(sp, cluster, r, lb, gap)));
  if (!a.trace.empty()) write_chrome_trace(events, a.trace);
  if (!a.split_spec.empty()) {
    write_split_spec(a.split_spec, graph, cluster, placement, [&](const Placement& p) {
      return simulate(context, sp.run.at(p), cluster, sp.costs, options).step_s;
    });
  }
  print_simulated(sp, cluster, r, lb, gap);
  if (!a.trace.empty()) std::printf("trace: %s (%zu events)\n", a.trace.c_str(), events.size());
  if (!r.ok()) throw CLI::RuntimeError(1);
}

}  // namespace

void add_env_commands(CLI::App& app) {
  auto sargs = std::make_shared<SimulateArgs>();
  CLI::App* sim = app.add_subcommand("simulate", "Simulate one training step of a placed graph on a cluster");
  sim->add_option("--graph", sargs->graph, "Graph file (.json or binary)")->required();
  sim->add_option("--placement", sargs->placement, "Placement file (JSON: op name -> device name)")->required();
  sim->add_option("--cluster", sargs->cluster,
                  "A preset (k80x2, k80x4, k80x8, p100x4, p100x8, h100x8, cpu+k80x2), a cluster JSON file, or a device "
                  "list (cpu:2)")
      ->capture_default_str();
  sim->add_option("--profile", sargs->profile, "Profile from `placer profile` calibrating op and link costs");
  sim->add_option("--trace", sargs->trace, "Write the simulated step as a Chrome trace (Perfetto) JSON file")
      ->check(output_file());
  sim->add_option("--json", sargs->json, "Write the result, lower bound and gap as JSON")->check(output_file());
  sim->add_flag("--no-memory", sargs->no_memory, "Do not track memory (no peaks, no OOM)");
  sim->add_flag("--copy-per-copy", sargs->per_copy,
                "Fit the profile's copy cost between CPU devices per copy instead of per byte (as placer fidelity "
                "reports beside the default); needs --profile")
      ->needs(sim->get_option("--profile"));
  add_split_spec_option(sim, &sargs->split_spec);
  add_objective_options(sim, &sargs->objective);
  sim->callback([sargs, sim] {
    refuse_pipeline_options(*sim, sargs->objective.pipeline());
    run_simulate(*sargs);
  });
}

}  // namespace placer::cli
