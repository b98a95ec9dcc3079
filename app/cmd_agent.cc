// `placer place` (one placement by an algorithmic method or a trained
// checkpoint) and `placer baseline` (the comparison table of the methods).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "place_args.h"
#include "placer/agent/compare.h"
#include "placer/agent/learned.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/env/stage_report.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/runtime/runtime.h"

namespace placer::cli {

Cluster cluster_of(const PlaceArgs& a) {
  if (a.cluster.empty() == a.devices.empty()) throw InputError("give exactly one of --cluster or --devices");
  return a.cluster.empty() ? cluster_option("--devices", a.devices) : cluster_option("--cluster", a.cluster);
}

Cluster cluster_option(const char* option, const std::string& value) {
  try {
    return resolve_cluster(value);
  } catch (const InputError& e) {
    throw InputError(std::string(option) + " " + value + ": " + e.what());
  }
}

std::map<std::string, std::string> parse_options(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--option '" + item + "': expected KEY=VALUE");
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
      throw InputError("--option " + item.substr(0, eq) + ": given twice");
  }
  return out;
}

void add_common(CLI::App* cmd, PlaceArgs& a) {
  cmd->add_option("--graph", a.graph, "Graph file (.json or binary)")->required();
  cmd->add_option("--cluster", a.cluster, "Cluster preset (k80x4, p100x4, ...) or cluster JSON file");
  cmd->add_option("--devices", a.devices, "Device list instead of --cluster, e.g. cpu:2");
  cmd->add_option("--seed", a.seed, "Random seed (random, local_search, mincut)")->check(nonnegative_integer());
  cmd->add_option("--profile", a.profile,
                  "Profile from `placer profile` (of this graph on these devices): every method places and is judged "
                  "in the simulator calibrated on it (measured op times, link and copy costs) instead of the roofline")
      ->check(CLI::ExistingFile);
  cmd->add_option("--time-limit", a.time_limit_s,
                  "Seconds a solver may take (ilp; max_load: ilp, local_search, learned)")
      ->check(finite_range(1e-3, 1e7));
  cmd->add_option("--budget", a.budget,
                  "Evaluations a search may spend (local_search, guided_search; place --policy --no-refine: "
                  "placements the policy samples, whatever the time, so a seed gives the same placement on any "
                  "machine; max_load: learned's placements sampled and, when given, local_search's evaluations)")
      ->check(positive_number());
  cmd->add_option(
      "--option", a.options,
      "Method option KEY=VALUE, repeatable; a key no method here reads is an error (dp: "
      "objective=step|throughput|latency, max_ideals=3000, max_units=128 (--objective pipeline); mincut: "
      "imbalance=0.05; m_sct: sct_lp_max_ops=600; ilp: "
      "max_ops=40, max_groups=24, channels=1 (op level; 0 on coarsened units), channel_pairs=3000; local_search: "
      "temperature=0.001; guided_search: temperature, policy_lr, follow, chain, swap (shares of the moves, adding up "
      "to at most 1), max_chain)");
}

PlaceContext context_of(const PlaceArgs& a, const Graph& graph, const Cluster& cluster, Environment& env) {
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.seed = a.seed;
  ctx.sample_budget = a.budget;
  ctx.time_limit_s = a.time_limit_s;
  ctx.options = parse_options(a.options);
  return ctx;
}

EnvOptions env_options(const PlaceArgs& a) {
  EnvOptions o;
  apply_objective(a.objective, &o);
  if (!a.profile.empty()) o.profile = load_profile(a.profile);
  return o;
}

// "roofline costs", or "costs calibrated on P (N% of ops measured)": which simulator judged the placements.
std::string costs_note(const PlaceArgs& a, const Environment& env) {
  return a.profile.empty() ? "roofline costs" : "costs calibrated on " + a.profile + measured_ops_note(*env.costs());
}

namespace {

// "step", or under the pipeline objective "mini-batch".
const char* unit_of(const Environment& env) {
  return env.options().objective == Objective::Pipeline ? "mini-batch" : "step";
}

// The stages of a placement under the pipeline objective: which ops, which
// device, forward and backward time per micro-batch, and where each device
// idles, from the simulated mini-batch's timeline (env/stage_report.h).
void print_stages(const Environment& env, const Placement& placement) {
  const PreparedProblem& run = *env.evaluated_problem();
  std::vector<TimelineEvent> timeline;
  simulate(run.context(), run.expand(placement), run.cluster(), run.base_costs(), {}, &timeline);
  std::printf("\n%s", stage_report_text(stage_report(env.graph(), placement, env.cluster(), *env.costs(),
                                                     env.options().pipeline, &timeline))
                          .c_str());
}

// "+1.23% vs WHAT"; no percentage of a step of 0 s (a graph of inputs only: it printed "-nan%").
std::string percent_vs(double step_s, double reference_s, const char* what) {
  if (reference_s > 0.0) return format_number("%+.2f%%", 100.0 * (step_s / reference_s - 1.0)) + " vs " + what;
  return std::string("no percentage: ") + what + " takes 0 s";
}

// `placer place --policy NAME|DIR`: the policy alone and, beside it, the fast
// path's heuristics; then local_search from the faster for the rest of
// --time-budget (counted from when the command began reading the graph:
// `setup_s` already spent). Each printed apart; `method` names who found the
// answer.
PlaceResult place_with_named_policy(const PlaceArgs& a, const PlaceContext& ctx, double setup_s, std::string* report) {
  static const std::vector<std::string> kNone;
  const bool fast_path = !a.no_refine && !a.no_fast_path;
  const int64_t placements = a.budget_given ? a.budget : 0;  // --no-refine only (the callback refuses it else)
  const PolicyAnswer pa = place_with_policy(a.policy, ctx, a.time_budget_s - setup_s, !a.no_refine,
                                            fast_path ? policy_fast_path() : kNone, placements);
  PlaceResult r = pa.policy;
  const bool by_policy = pa.found_by.rfind("policy", 0) == 0;  // "policy" or "policy+local_search"
  r.method = by_policy ? "policy:" + a.policy + pa.found_by.substr(6) : pa.found_by;
  r.placement = pa.placement;
  r.place_seconds = pa.seconds;
  r.note.clear();  // in the "policy alone" line
  char line[512];
  // (The note is appended whole: a long policy path cut it at 512 characters.)
  std::snprintf(line, sizeof line, "%.6g s per step%s, placed in %.3f s (", pa.policy_step_s,
                pa.policy_ok ? "" : " (failed)", pa.policy.place_seconds);
  // (A skipped policy, a cluster larger than it trained on, has no step: it printed "0 s per step (failed)".)
  const bool skipped = pa.policy.note.rfind("skipped: ", 0) == 0;
  *report = "policy alone  " + (skipped ? pa.policy.note : std::string(line) + pa.policy.note + ")") + "\n";
  if (!fast_path) {
    *report += std::string("fast path     not run (") + (a.no_refine ? "--no-refine" : "--no-fast-path") + ")\n";
  } else if (pa.fast_path_method.empty()) {
    std::snprintf(line, sizeof line, "no heuristic placed it (%.3f s)", pa.fast_path_seconds);
    *report += "fast path     " + std::string(line) + "\n";
  } else {
    // (A failed policy has no step to compare with: "+0.00% vs the policy" said they tied.)
    const std::string versus = pa.policy_ok ? percent_vs(pa.fast_path_step_s, pa.policy_step_s, "the policy")
                                            : std::string("the policy failed");
    std::snprintf(line, sizeof line, "%s %.6g s per step (%s), the fastest of %zu heuristics in %.3f s",
                  pa.fast_path_method.c_str(), pa.fast_path_step_s, versus.c_str(), policy_fast_path().size(),
                  pa.fast_path_seconds);
    *report += "fast path     " + std::string(line) + "\n";
  }
  if (!pa.refined) {
    // (It said "no time left in the budget" also where local_search placed nothing, after half a second.)
    *report += std::string("refinement    not run (") + (a.no_refine ? "--no-refine" : pa.refine_note) + ")\n";
  } else if (pa.refine_starts == std::vector<std::string>{"its own start"}) {  // no placement so far fits
    std::snprintf(line, sizeof line, "local_search from its own start (no placement so far fits memory): %.6g s per "
                  "step%s, %lld evaluations in %.3f s", pa.step_s, pa.improved ? "" : " (placed nothing that fits)",
                  static_cast<long long>(pa.refine_evaluations), pa.refine_seconds);
    *report += "refinement    " + std::string(line) + "\n";
  } else {
    std::string from;
    for (const std::string& s : pa.refine_starts)
      from += (from.empty() ? "" : " and ") + (s == "policy" ? std::string("the policy") : s) + "'s";
    const double start_s = pa.policy_ok && !pa.fast_path_method.empty()
                               ? std::min(pa.policy_step_s, pa.fast_path_step_s)
                           : pa.policy_ok ? pa.policy_step_s
                                          : pa.fast_path_step_s;
    std::snprintf(
        line, sizeof line, "local_search from %s placement%s: %.6g s per step (%s), %lld evaluations in %.3f s%s",
        from.c_str(), pa.refine_starts.size() > 1 ? "s, the time split" : "", pa.step_s,
        percent_vs(pa.step_s, start_s, "the faster start").c_str(), static_cast<long long>(pa.refine_evaluations),
        pa.refine_seconds, pa.improved ? "" : ", nothing faster");
    *report += "refinement    " + std::string(line) + (pa.refine_note.empty() ? "" : "; " + pa.refine_note) + "\n";
  }
  *report += "found by      " + pa.found_by + "\n";
  std::snprintf(line, sizeof line,
                "graph read and set up in %.3f s, checkpoint loaded in %.3f s, policy %.3f s, fast path %.3f s, "
                "refinement %.3f s (%.3f s in all; budget %s)",
                setup_s, pa.load_seconds, pa.policy.place_seconds, pa.fast_path_seconds, pa.refine_seconds,
                setup_s + pa.seconds,
                placements > 0 ? (std::to_string(placements) + " placements").c_str()
                               : format_number("%.3g s", a.time_budget_s).c_str());
  *report += "timing        " + std::string(line) + "\n";
  return r;
}

void run_place(const PlaceArgs& a) {
  const auto started = std::chrono::steady_clock::now();
  if ((!a.method.empty()) + (!a.checkpoint.empty()) + (!a.policy.empty()) != 1)
    throw InputError("give exactly one of --method, --checkpoint or --policy");
  if (a.policy.empty() && (a.no_refine || a.no_fast_path))
    throw InputError(std::string(a.no_refine ? "--no-refine" : "--no-fast-path") + " applies to --policy only");
  if (a.method.empty() && !a.options.empty()) throw InputError("--option applies to --method only");
  if (!a.method.empty()) check_method_options({a.method}, parse_options(a.options));
  const Graph graph = load_graph(a.graph);
  const Cluster cluster = cluster_of(a);
  check_split_spec_graph(a.split_spec, graph);
  Environment env(graph, cluster, env_options(a));
  const PlaceContext ctx = context_of(a, graph, cluster, env);
  PlaceResult r;
  std::string policy_report;
  try {
    if (!a.policy.empty())
      r = place_with_named_policy(
          a, ctx, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), &policy_report);
    else
      r = a.checkpoint.empty() ? make_placer(a.method)->place(ctx) : place_with_checkpoint(a.checkpoint, ctx);
  } catch (const NoFeasiblePlacement& e) {
    throw std::runtime_error(std::string("no feasible placement: ") + e.what());
  }
  save_placement(to_named(graph, cluster, r.placement), a.output);
  const StepResult s = env.simulate(r.placement);
  const double lb = env.lower_bound();
  std::printf("method        %s\n", r.method.c_str());
  std::printf("graph         %s (%lld ops) on %s (%d devices)\n", graph.name.c_str(),
              static_cast<long long>(graph.size()), cluster.name.c_str(), cluster.size());
  std::printf("simulated     %.6g s per %s (%s; %s)\n", s.step_s, unit_of(env), step_status_name(s.status),
              costs_note(a, env).c_str());
  if (env.options().objective == Objective::Pipeline)
    std::printf("pipeline      %s\n", pipeline_figures_text(pipeline_figures(s, env.options().pipeline)).c_str());
  std::printf("lower bound   %.6g s (gap %.1f%%)%s\n", lb, lb > 0 ? 100.0 * (s.step_s - lb) / lb : 0.0,
              s.ok() ? bound_note(s.step_s, lb) : "");
  std::printf("placed in     %.3f s\n", r.place_seconds);
  std::printf("%s", policy_report.c_str());
  if (!r.note.empty()) std::printf("note          %s\n", r.note.c_str());
  std::printf("wrote         %s\n", a.output.c_str());
  if (env.options().objective == Objective::Pipeline) print_stages(env, r.placement);
  if (a.split_spec.empty()) return;
  write_split_spec(a.split_spec, graph, cluster, r.placement,
                   [&](const Placement& p) { return env.simulate(p).step_s; });
  std::printf("wrote         %s\n", a.split_spec.c_str());
}

void add_place_command(CLI::App& app) {
  auto place_args = std::make_shared<PlaceArgs>();
  CLI::App* place = app.add_subcommand("place", "Place a graph with an algorithmic method or a trained checkpoint");
  place->add_option("--method", place_args->method,
                    "Placement method: single, round_robin, random, expert, mincut, "
                    "m_topo, m_etf, m_sct, heft, offload_updates (the best list scheduler's placement with the "
                    "parameters and their SGD updates spread to the least busy devices), dp, ilp, local_search, "
                    "guided_search");
  place->add_option("--checkpoint", place_args->checkpoint, "A `placer train` result folder (learned placer)");
  place->add_option("--policy", place_args->policy,
                    "A learned policy, zero-shot: 'pretrained' (policies/pretrained, or $PLACER_PRETRAINED) or a "
                    "`placer train` result folder; its proposals (sampled for half of --time-budget) and the fast "
                    "path's heuristics beside them, then local_search from both for the rest (`method` and `found by` "
                    "name who found it)");
  place
      ->add_option("--time-budget", place_args->time_budget_s,
                   "--policy: wall seconds for loading, the policy, the fast path and the refinement")
      ->capture_default_str()
      ->check(finite_range(1e-6, 1e6));
  place->add_flag("--no-refine", place_args->no_refine,
                  "--policy: the policy alone (no fast path, no local_search after it), sampling more "
                  "placements for as much of --time-budget as it has (or until --budget placements, whatever the "
                  "time), half of those rounds near its best so far (policy.place_around)");
  place->add_flag("--no-fast-path", place_args->no_fast_path,
                  "--policy: no heuristics beside the policy (local_search starts from the policy's placement)");
  add_common(place, *place_args);
  add_objective_options(place, &place_args->objective);
  place->add_option("-o,--output", place_args->output, "Placement file to write (JSON)")
      ->required()
      ->check(output_file());
  add_split_spec_option(place, &place_args->split_spec);
  place->callback([place_args, place] {
    refuse_pipeline_options(*place, place_args->objective.pipeline());
    // (local_search read --time-limit only as --policy's refinement, a run of 3e6 evaluations took 2.8 s of 0.5)
    if (place_args->method != "ilp")
      refuse_given(*place, {"--time-limit"},
                   "applies to --method ilp only (the searches stop at --budget, --policy at --time-budget)");
    const bool search = place_args->method == "local_search" || place_args->method == "guided_search";
    if (place_args->policy.empty())
      refuse_given(*place, {"--time-budget"}, "applies to --policy only (--method and --checkpoint take no budget)");
    if (place_args->policy.empty() && !search)  // (dp, ilp, offload_updates ran as if it were not given)
      refuse_given(*place, {"--budget"}, "applies to the searches only (--method local_search or guided_search)");
    else if (!place_args->policy.empty() && !place_args->no_refine)  // (its refinement: time ends it)
      refuse_given(*place, {"--budget"},
                   "with --policy, applies to the policy alone (--no-refine): the refinement runs for what is left of "
                   "--time-budget");
    place_args->budget_given = place->get_option("--budget")->count() > 0;
    if (!place_args->policy.empty() && place_args->budget_given)
      refuse_given(*place, {"--time-budget"},
                   "give one budget: --budget counts the policy's placements, --time-budget seconds");
    run_place(*place_args);
  });
}

}  // namespace

void add_agent_commands(CLI::App& app) {
  add_place_command(app);
  add_baseline_command(app);
}

}  // namespace placer::cli
