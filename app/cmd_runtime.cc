// placer measure / placer profile: run a placed graph for real.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "placer/env/cost_model.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

namespace placer::cli {

namespace {

struct MeasureArgs {
  std::string graph, placement, devices = "cpu:2", trace, json;
  std::vector<std::string> compare;
  MeasureOptions protocol;
  ObjectiveArgs objective;
};

struct ProfileArgs {
  std::string graph, devices = "cpu:2", out;
  int repetitions = 5;
  double timeout_s = ProfileOptions{}.timeout_s;
};

// The median's interval at the level it reaches (interval_level_label: 3 steps reach 75%, never 95% regardless).
std::string interval(const StepResult& r) {
  char b[160];
  std::snprintf(b, sizeof b, "%.6f s, %s interval [%.6f, %.6f] (+-%.1f%%), %zu steps, stopped: %s", r.step_s,
                interval_level_label(r.ci_level).c_str(), r.ci_low_s, r.ci_high_s,
                r.step_s > 0 ? 50 * (r.ci_high_s - r.ci_low_s) / r.step_s : 0.0, r.samples_s.size(), r.stop.c_str());
  return b;
}

// The cross-core probe's reading over a measurement (StepResult::core_rtt_s); "" where it was not probed.
std::string core_probe_text(const StepResult& r) {
  const CoreRttRange c = core_rtt_range(r.core_rtt_readings());
  if (!c.read()) return "";
  char b[200];
  std::snprintf(b, sizeof b,
                "cross-core round trip %.0f ns (median; %.0f-%.0f ns over its steps): copies between CPU devices cost "
                "more while it is high",
                c.median_s * 1e9, c.low_s * 1e9, c.high_s * 1e9);
  return b;
}

// "B is slower than A by 1.3% paired (Hodges-Lehmann; 95% interval 0.4% to 2.1%)": a
// PairedTest of B's rounds against A's, said from B's side.
std::string paired_text(const PairedTest& t, const std::string& b, const std::string& a) {
  char out[512];
  const bool slower = t.ratio >= 1.0;
  const double by = slower ? t.ratio - 1 : 1 - t.ratio;
  const double lo = slower ? t.ratio_low - 1 : 1 - t.ratio_high, hi = slower ? t.ratio_high - 1 : 1 - t.ratio_low;
  std::snprintf(out, sizeof out, "%s is %s than %s by %.1f%% paired (Hodges-Lehmann; %s interval %.1f%% to %.1f%%)",
                b.c_str(), slower ? "slower" : "faster", a.c_str(), 100 * by,
                interval_level_label(t.ratio_level).c_str(), 100 * lo, 100 * hi);
  return out;
}

// One placement against the fastest: the rank test of their samples, then their rounds paired (each
// round's two steps ran back to back, so the machine's drift cancels in their ratio); printed and in `j`.
void report_against_fastest(const StepResult& fastest, const StepResult& r, const std::string& fastest_label,
                            const std::string& label, JsonWriter& j) {
  const RankTest t = mann_whitney(fastest.samples_s, r.samples_s);
  const bool significant = t.significant();
  char medians[160];
  if (r.step_s == fastest.step_s)  // a significant test then says the spreads differ, not the middles
    std::snprintf(medians, sizeof medians, "%s and %s have equal medians", fastest_label.c_str(), label.c_str());
  else
    std::snprintf(medians, sizeof medians, "%s is faster than %s by %.1f%% (medians)", fastest_label.c_str(),
                  label.c_str(), 100 * (r.step_s / fastest.step_s - 1));
  std::printf("%s; Mann-Whitney U p = %.3g%s: %s at %g%%\n", medians, t.p_value, t.exact ? " (exact)" : "",
              significant ? "significant" : "NOT significant", 100 * kRankTestLevel);
  j.field("slower_than_fastest", r.step_s / fastest.step_s - 1).field("p_value", t.p_value);
  j.field("significant", significant);
  // The rounds paired: each round's two steps ran back to back, so the machine's drift cancels in their ratio.
  if (const std::optional<PairedTest> pt = paired_by_round(fastest, r)) {
    std::printf("  paired by round (%lld rounds): %s; Wilcoxon signed-rank p = %.3g%s: %s at %g%%\n",
                static_cast<long long>(pt->pairs), paired_text(*pt, label, fastest_label).c_str(), pt->p_value,
                pt->exact ? " (exact)" : "", pt->significant() ? "significant" : "NOT significant",
                100 * kRankTestLevel);
    j.paired("paired", *pt);
  }
}

// placer measure --compare A B ...: interleaved, then each against the fastest by a rank test.
void run_compare(const MeasureArgs& a, const Graph& base, const RunGraph& mg, const Cluster& cluster,
                 Runtime& runtime) {
  if (a.compare.size() < 2) throw InputError("measure: --compare needs two or more placement files");
  std::vector<Placement> placements;
  for (const std::string& f : a.compare) placements.push_back(mg.at(placement_from_file(base, cluster, f)));
  // A file given twice (an A/A check of the measurement) is told apart by its place in --compare.
  std::vector<std::string> label(a.compare);
  for (size_t i = 0; i < label.size(); ++i)
    if (std::count(a.compare.begin(), a.compare.end(), a.compare[i]) > 1)
      label[i] += " (#" + std::to_string(i + 1) + ")";
  // Every measured step in the order taken, with its placement: what ran just before a step is part of its figure.
  std::vector<std::pair<size_t, double>> taken;
  MeasureOptions o = a.protocol;
  o.lockstep = true;  // every placement takes every round until all have enough: one span of time, every round paired
  o.on_step = [&](size_t placement, double step_s) { taken.emplace_back(placement, step_s); };
  const std::vector<StepResult> rs = runtime.measure_interleaved(mg.graph(), placements, o);
  size_t best = rs.size();
  for (size_t i = 0; i < rs.size(); ++i) {
    std::printf("%-32s %s\n", label[i].c_str(),
                rs[i].ok() ? interval(rs[i]).c_str()
                           : (std::string(step_status_name(rs[i].status)) + ": " + rs[i].message).c_str());
    if (const std::string probe = rs[i].ok() ? core_probe_text(rs[i]) : ""; !probe.empty())
      std::printf("%-32s %s\n", "", probe.c_str());
    if (rs[i].ok() && (best == rs.size() || rs[i].step_s < rs[best].step_s)) best = i;
  }
  if (best == rs.size()) throw InputError("measure: no placement ran");
  JsonWriter j;
  j.begin()
      .field("format", "placer.compare")
      .field("fastest", a.compare[best])
      .field("fastest_index", static_cast<int64_t>(best))
      .begin_array("placements");
  for (size_t i = 0; i < rs.size(); ++i) {
    j.begin()
        .field("file", a.compare[i])
        .field("index", static_cast<int64_t>(i))
        .field("status", step_status_name(rs[i].status));
    if (rs[i].ok()) {
      j.field("step_s", rs[i].step_s).field("ci_low_s", rs[i].ci_low_s).field("ci_high_s", rs[i].ci_high_s);
      j.field("ci_level", rs[i].ci_level);  // the interval's coverage, as measure --json and the text give it
      if (mg.spec()) write_pipeline_figures(j, "pipeline", pipeline_figures(rs[i], *mg.spec()));
      j.field("steps", static_cast<int64_t>(rs[i].samples_s.size())).field("stop", rs[i].stop);
      j.begin_array("samples_s");  // every measured step, in the order taken
      for (double v : rs[i].samples_s) j.num(v);
      j.end_array().begin_array("core_rtt_s");  // the cross-core probe before each of those steps
      for (double v : rs[i].core_rtt_s) j.num(v);
      j.end_array();
      if (i != best) report_against_fastest(rs[best], rs[i], label[best], label[i], j);
    }
    j.end();
  }
  j.end_array().begin_array("steps_in_order");  // [placement index in --compare, step seconds]
  for (const auto& [placement, step_s] : taken)
    j.begin_array().num(static_cast<double>(placement)).num(step_s).end_array();
  j.end_array().end();
  if (!a.json.empty()) write_file_atomic(a.json, with_invocation(j.text()) + "\n");
}

void run_measure(const MeasureArgs& a) {
  const Graph base = load_graph(a.graph);
  const RunGraph mg(base, a.objective);
  const Graph& graph = mg.graph();
  const Cluster cluster = parse_device_list(a.devices);
  Runtime runtime(cluster);
  if (!a.compare.empty()) return run_compare(a, base, mg, cluster, runtime);
  if (a.placement.empty()) throw InputError("measure: --placement FILE (or --compare A B ...) is required");
  const Placement placement = mg.at(placement_from_file(base, cluster, a.placement));
  MeasureOptions o = a.protocol;
  o.timeline = !a.trace.empty();
  std::vector<TimelineEvent> events;
  const StepResult r = runtime.measure(graph, placement, o, o.timeline ? &events : nullptr);
  if (!a.json.empty())
    write_file_atomic(a.json, with_invocation(mg.spec() ? with_pipeline_figures(step_result_to_json(r), r, *mg.spec())
                                                        : step_result_to_json(r)));
  if (o.timeline && r.ok()) write_chrome_trace(events, a.trace, &r);
  if (!r.ok()) {
    std::fprintf(stderr, "measure: %s: %s\n", step_status_name(r.status), r.message.c_str());
    throw CLI::RuntimeError(1);
  }
  std::printf("graph %s on %s: step %s; IQR %.6f s, transfers %lld bytes\n", graph.name.c_str(), cluster.name.c_str(),
              interval(r).c_str(), r.iqr_s, static_cast<long long>(r.transfer_bytes));
  if (mg.spec()) std::printf("pipeline: %s\n", pipeline_figures_text(pipeline_figures(r, *mg.spec())).c_str());
  if (const std::string probe = core_probe_text(r); !probe.empty()) std::printf("%s\n", probe.c_str());
  for (const DeviceStats& d : r.devices)
    std::printf("  %-8s busy %.6f s  peak %lld bytes\n", d.device.c_str(), d.busy_s,
                static_cast<long long>(d.peak_bytes));
  if (o.timeline) std::printf("trace: %s (%zu events)\n", a.trace.c_str(), events.size());
}

void run_profile(const ProfileArgs& a) {
  const Graph graph = load_graph(a.graph);
  Runtime runtime(parse_device_list(a.devices));
  ProfileOptions o;
  o.repetitions = a.repetitions;
  o.timeout_s = a.timeout_s;
  const Profile p = runtime.profile(graph, o);
  save_profile(p, a.out);
  std::printf("profiled %zu op timings, %zu links, executor overhead %.2f us/op -> %s\n", p.ops.size(), p.links.size(),
              p.per_op_overhead_s * 1e6, a.out.c_str());
  if (p.gpu_op_overhead_s >= 0)
    std::printf("GPU: overhead %.2f us/op, ops timed alone scaled x%.3f, fitted to a step of %.4g s on the GPU\n",
                p.gpu_op_overhead_s * 1e6, p.gpu_op_scale, p.gpu_step_s);
  // What the simulator makes of the profile, as every simulation with it will: the copy cost fitted on the mixed
  // step, and the anchor of the device steps.
  const CostModel costs = p.mixed.step_s > 0 || !p.cpu_steps.empty()
                              ? CostModel::calibrated(graph, runtime.cluster(), p)
                              : CostModel::roofline(graph, runtime.cluster());
  if (p.mixed.step_s > 0) {
    std::string over;
    for (const std::string& d : p.mixed.devices) over += (over.empty() ? "" : ", ") + d;
    char fitted[128];
    if (costs.cross_copy_s() > 0)
      std::snprintf(fitted, sizeof fitted, "%.4g us per CPU<->GPU copy beyond the links", costs.cross_copy_s() * 1e6);
    else if (costs.group_copy_s_per_byte() > 0)
      std::snprintf(fitted, sizeof fitted, "%.4g ms per MB beyond the links", costs.group_copy_s_per_byte() * 1e9);
    else
      std::snprintf(fitted, sizeof fitted, "none (the simulation already reaches the step)");
    std::printf("mixed step (groups dealt round robin over %s): %.6f s; copies fitted: %s\n", over.c_str(),
                p.mixed.step_s, fitted);
    if (p.mixed.core_rtt_s > 0)
      std::printf(
          "  cross-core round trip %.0f ns while it ran (placer measure prints it too: copies cost more while "
          "it is high)\n",
          p.mixed.core_rtt_s * 1e9);
  }
  if (!p.cpu_steps.empty()) {
    std::printf("each CPU device alone, interleaved:");
    for (size_t k = 0; k < p.cpu_steps.size(); ++k)
      std::printf("%s %s %.3f ms (x%.3f)", k ? "," : "", p.cpu_steps[k].device.c_str(), p.cpu_steps[k].step_s * 1e3,
                  p.cpu_steps[k].step_s / p.cpu_steps.front().step_s);
    // How far the ops timed one by one fall short of the whole step: what the anchor makes up.
    const double anchor = costs.cpu_step_anchor();
    if (anchor != 1.0)
      std::printf(
          "; the simulator scales each device's ops to simulate its step alone (the ops timed one by one "
          "simulate their device's step at %.1f%% of it)\n",
          100 / anchor);
    else
      std::printf("; the simulator scales each device's ops to simulate its step alone\n");
  }
}

}  // namespace

void add_measure_protocol_options(CLI::App* cmd, MeasureOptions* o) {
  cmd->add_option("--warmup", o->warmup_steps, "Warm-up steps (per placement)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--steps", o->measured_steps, "Measured steps, at least")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-steps", o->max_steps, "Measured steps, at most (<= --steps: exactly --steps)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option(
         "--target", o->target_halfwidth,
         "Stop when the median's " + interval_confidence_label() + " interval is within this fraction of it (0: never)")
      ->capture_default_str()
      ->check(finite_range(0.0, 0.5));
  cmd->add_option("--min-time", o->min_time_s,
                  "Measure each placement for at least this many seconds of steps, past --max-steps if need be")
      ->capture_default_str()
      ->check(finite_range(0.0, 3600.0));
  cmd->add_option("--rewarm", o->rewarm_steps,
                  "Interleaved placements: unmeasured steps each one takes right before each of its measured steps, "
                  "so that a measured step follows its own placement's step")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd->add_option("--timeout", o->timeout_s, "Per-step time limit in seconds")
      ->capture_default_str()
      ->check(finite_range(1e-3, 1e7));
}

void add_measure_options(CLI::App* cmd, MeasureOptions* o) {
  add_measure_protocol_options(cmd, o);
  cmd->add_option("--budget", o->budget_s, "Stop after this many measured seconds, all placements together (0: none)")
      ->capture_default_str()
      ->check(nonnegative_number());
  cmd->add_option("--seed", o->seed, "Seed of inputs and parameters")
      ->capture_default_str()
      ->check(nonnegative_integer());
}

void add_runtime_commands(CLI::App& app) {
  auto margs = std::make_shared<MeasureArgs>();
  CLI::App* measure = app.add_subcommand("measure", "Run a placed graph for real and measure its step time");
  measure->add_option("--graph", margs->graph, "Graph file (.json or binary)")->required();
  CLI::Option* one =
      measure->add_option("--placement", margs->placement, "Placement file (JSON: op name -> device name)");
  CLI::Option* compare = measure->add_option("--compare", margs->compare,
                   "Two or more placement files: measured interleaved, each against the fastest by a rank test (a "
                   "file given twice is measured twice, and named with its place: an A/A check of the measurement)")
      ->excludes(one);
  measure->add_option("--devices", margs->devices, "Devices: cpu:N, cpu,cuda:0, cuda:0,cuda:1, vcuda:N")
      ->capture_default_str();
  add_measure_options(measure, &margs->protocol);
  add_objective_options(measure, &margs->objective);
  measure->add_option("--trace", margs->trace, "Write the last step as a Chrome trace (Perfetto) JSON file")
      ->check(output_file())
      ->excludes(compare);  // (it was accepted with --compare, and no trace was written)
  measure->add_option("--json", margs->json, "Write the result as JSON")->check(output_file());
  measure->callback([margs, measure] {
    refuse_pipeline_options(*measure, margs->objective.pipeline());
    run_measure(*margs);
  });

  auto pargs = std::make_shared<ProfileArgs>();
  CLI::App* profile =
      app.add_subcommand("profile", "Measure per-op times and link latency/bandwidth for the simulator");
  profile->add_option("--graph", pargs->graph, "Graph file (.json or binary)")->required();
  profile->add_option("--devices", pargs->devices, "Devices: cpu:N, cpu,cuda:0, ...")->capture_default_str();
  profile->add_option("-o,--out", pargs->out, "Profile file to write (JSON)")->required()->check(output_file());
  profile->add_option("--repetitions", pargs->repetitions, "Runs per op (median kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  profile->add_option("--timeout", pargs->timeout_s, "Per-step time limit in seconds: a step past it fails the profile")
      ->capture_default_str()
      ->check(finite_range(1e-3, 1e7));
  profile->callback([pargs] { run_profile(*pargs); });
}

}  // namespace placer::cli
