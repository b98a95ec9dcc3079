// `placer baseline`: the comparison table of the methods on one graph and
// cluster (simulated; with --measure, every placement measured in one
// interleaved run), or the NeurIPS 2020 max-load table (--objective max_load).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "place_args.h"
#include "placer/agent/compare.h"
#include "placer/env/environment.h"
#include "placer/env/fidelity.h"
#include "placer/env/pipeline_objective.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/runtime/runtime.h"

namespace placer::cli {
namespace {

struct Row {
  std::string method;
  bool ok = false;
  std::string error;
  double sim_s = 0.0;
  std::string sim_status;   // the simulated step's: "ok", or "oom" (...) for a placement that does not run
  std::string sim_message;  // what failed, when not ok
  double measured_s = NAN;  // the median of the interleaved measurement, with its interval
  double ci_low_s = NAN, ci_high_s = NAN;
  double ci_level = NAN;  // the coverage the interval reaches (below 95% with few steps)
  int64_t measured_steps = 0;
  std::string measured_status;
  Placement placement;  // what was measured (under the pipeline objective: the unrolled mini-batch's)
  std::vector<int64_t> peak_bytes;
  double place_s = 0.0;
  double gap = 0.0;
  std::string note;
  double own_s = NAN;                       // the placer's own estimate of the step (its model), when it has one
  std::string own_kind;                     // what that estimate is
  std::optional<PipelineFigures> pipeline;  // the pipeline objective's figures of the simulated mini-batch
  // Placed and its simulated step ran: a placement whose step fails (oom) is no step to compare.
  bool feasible() const { return ok && sim_status == "ok"; }
  // "ok", "oom", "timeout", "error", or "unplaced" (the placer found none).
  const std::string& status() const {
    static const std::string unplaced = "unplaced";
    return ok ? sim_status : unplaced;
  }
};

std::string peaks_mib(const std::vector<int64_t>& peaks) {
  std::string s;
  for (size_t i = 0; i < peaks.size(); ++i)
    s += (i ? "/" : "") + format_number("%.0f", static_cast<double>(peaks[i]) / (1024.0 * 1024.0));
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

struct BaselineArgs {
  PlaceArgs place;
  std::string methods = "all";
  bool measure = false;
  MeasureOptions protocol;  // --measure's (its seed: --seed)
  std::string json, csv;
  bool json_given = false;  // a bare --json (or --json -): the JSON on stdout instead of the table
  bool markdown = false;
};

// --measure's runtime, made before any placer runs: devices that cannot run here are refused up front (each
// row said "unavailable" after every placer had run, and the command exited 0).
std::unique_ptr<Runtime> measuring_runtime(const Cluster& cluster) {
  try {
    return std::make_unique<Runtime>(cluster);
  } catch (const std::exception& e) {
    throw InputError("--measure: cannot run the devices of " + cluster.name + " here: " + e.what());
  }
}

// --measure: every placed row's placement measured in one interleaved, lockstep run after all placers
// ran (each row had been measured alone right after its placer, minutes apart on a drifting machine, with
// no interval). Rows that placed alike share one measurement.
void measure_rows(const BaselineArgs& b, Runtime& runtime, const PreparedProblem& run, std::vector<Row>& rows) {
  std::vector<Placement> unique;
  std::vector<size_t> which(rows.size(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].ok) continue;
    size_t k = 0;
    while (k < unique.size() && unique[k].device_of != rows[i].placement.device_of) ++k;
    if (k == unique.size()) unique.push_back(rows[i].placement);
    which[i] = k;
  }
  if (unique.empty()) return;
  MeasureOptions o = b.protocol;
  o.seed = b.place.seed;
  o.lockstep = true;  // every placement takes every round: one span of time
  std::fprintf(stderr, "measuring %zu distinct placement(s) interleaved...\n", unique.size());
  const std::vector<StepResult> rs = runtime.measure_interleaved(run.graph(), unique, o);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].ok) continue;
    const StepResult& m = rs[which[i]];
    Row& r = rows[i];
    r.measured_status = step_status_name(m.status);
    if (!m.ok()) continue;
    r.measured_s = m.step_s;
    r.ci_low_s = m.ci_low_s;
    r.ci_high_s = m.ci_high_s;
    r.ci_level = m.ci_level;
    r.measured_steps = static_cast<int64_t>(m.samples_s.size());
  }
}

// One row per method: the comparison's entry, its measurement when asked.
std::vector<Row> baseline_rows(const BaselineArgs& b, const Graph& graph, const Cluster& cluster, Environment& env,
                               Runtime* runtime) {
  const PlaceArgs& a = b.place;
  const double lb = env.lower_bound();
  const PreparedProblem& run = *env.evaluated_problem();
  std::vector<Row> rows;
  CompareOptions options;
  options.on_start = [](const std::string& m) { std::fprintf(stderr, "placing with %s...\n", m.c_str()); };
  options.on_done = [&](const Compared& c) {
    Row row;
    row.method = c.method;
    if (!c.placed) {
      row.error = "no feasible placement: " + c.error;
      rows.push_back(row);
      return;
    }
    const PlaceResult& r = c.result;
    const StepResult& s = c.step();
    row.ok = true;
    row.sim_s = s.step_s;
    row.sim_status = step_status_name(s.status);
    row.sim_message = s.message;
    for (const DeviceStats& d : s.devices) row.peak_bytes.push_back(d.peak_bytes);
    if (env.options().objective == Objective::Pipeline) row.pipeline = pipeline_figures(s, env.options().pipeline);
    row.place_s = r.place_seconds;
    row.gap = lb > 0 ? (s.step_s - lb) / lb : 0.0;
    row.note = r.note;
    const OwnEstimate own = own_estimate(r);
    row.own_s = own.seconds;
    row.own_kind = own.kind;
    // Under the pipeline objective the unrolled mini-batch's placement, as the environment evaluates it.
    if (b.measure) row.placement = run.pipeline_spec() ? run.expand(r.placement) : r.placement;
    rows.push_back(row);
  };
  compare_placers(parse_method_list(b.methods), context_of(a, graph, cluster, env), options);
  if (runtime) measure_rows(b, *runtime, run, rows);
  return rows;
}

std::vector<std::string> table_header(const BaselineArgs& b, bool pipeline) {
  std::vector<std::string> header = {"method", pipeline ? "simulated mini-batch (ms)" : "simulated step (ms)"};
  if (b.measure) header.push_back(pipeline ? "measured mini-batch (ms)" : "measured step (ms)");
  if (pipeline) {
    header.push_back("per micro-batch (ms)");
    header.push_back("bubble");
  }
  for (const char* h :
       {"placer's own estimate (ms)", "peak memory per device (MiB)", "time to place (s)", "gap to lower bound"})
    header.push_back(h);
  return header;
}

std::vector<std::string> table_cells(const BaselineArgs& b, const Row& r, size_t columns) {
  std::vector<std::string> c = {r.method};
  if (!r.ok) {
    c.push_back("infeasible");
    c.resize(columns, "-");
    return c;
  }
  c.push_back(format_number("%.3f", r.sim_s * 1e3) + (r.feasible() ? "" : " (" + r.sim_status + ")"));
  if (b.measure)
    c.push_back(std::isnan(r.measured_s)
                    ? r.measured_status
                    : format_number("%.3f", r.measured_s * 1e3) + " [" + format_number("%.3f", r.ci_low_s * 1e3) +
                          ", " + format_number("%.3f", r.ci_high_s * 1e3) + "] (" + interval_level_label(r.ci_level) +
                          ")");
  if (r.pipeline) {
    c.push_back(format_number("%.3f", r.pipeline->per_microbatch_s * 1e3));
    c.push_back(format_number("%.1f%%", 100.0 * r.pipeline->bubble_fraction));
  }
  c.push_back(std::isnan(r.own_s) ? "-"
                                  : format_number("%.3f", r.own_s * 1e3) + " (" + r.own_kind + "; simulated " +
                                        format_number("%+.0f%%", 100.0 * (r.sim_s / r.own_s - 1.0)) + ")");
  c.push_back(peaks_mib(r.peak_bytes));
  c.push_back(format_number("%.3f", r.place_s));
  c.push_back(format_number("%.1f%%", 100.0 * r.gap));
  return c;
}

void print_table(const BaselineArgs& b, const std::vector<Row>& rows, bool pipeline) {
  const std::vector<std::string> header = table_header(b, pipeline);
  std::vector<std::vector<std::string>> cells;
  for (const Row& r : rows) cells.push_back(table_cells(b, r, header.size()));
  if (b.markdown) {
    std::string line = "|", sep = "|";
    for (const auto& h : header) line += " " + h + " |", sep += "---|";
    std::printf("%s\n%s\n", line.c_str(), sep.c_str());
    for (const auto& c : cells) {
      std::string l = "|";
      for (const auto& v : c) l += " " + v + " |";
      std::printf("%s\n", l.c_str());
    }
  } else {
    std::vector<size_t> width(header.size());
    for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& c : cells)
      for (size_t i = 0; i < c.size(); ++i) width[i] = std::max(width[i], c[i].size());
    auto print = [&](const std::vector<std::string>& c) {
      for (size_t i = 0; i < c.size(); ++i) std::printf("%-*s  ", static_cast<int>(width[i]), c[i].c_str());
      std::printf("\n");
    };
    print(header);
    for (const auto& c : cells) print(c);
  }
}

std::string rows_json(const BaselineArgs& b, const Graph& graph, const Cluster& cluster, double lb,
                      const std::vector<Row>& rows, bool pipeline) {
  std::ostringstream o;
  o.precision(9);  // as the CSV (the default 6 digits rounded the steps)
  o << "{\n  \"graph\": " << json_quote(graph.name) << ",\n  \"ops\": " << graph.size()
    << ",\n  \"cluster\": " << json_quote(cluster.name) << ",\n  \"lower_bound_s\": " << lb
    << ",\n  \"cost_model\": " << (b.place.profile.empty() ? "\"roofline\"" : "\"calibrated\"");
  if (!b.place.profile.empty()) o << ",\n  \"profile\": " << json_quote(b.place.profile);
  if (pipeline) o << ",\n  \"objective\": \"pipeline\"";
  o << ",\n  \"methods\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    o << "    {\"method\": \"" << r.method << "\", \"feasible\": " << (r.feasible() ? "true" : "false")
      << ", \"status\": " << json_quote(r.status());
    if (r.ok && !r.feasible()) o << ", \"status_message\": " << json_quote(r.sim_message);
    if (r.ok) {
      o << ", \"simulated_step_s\": " << r.sim_s << ", \"place_seconds\": " << r.place_s
        << ", \"gap_to_lower_bound\": " << r.gap << ", \"peak_bytes\": [";
      for (size_t d = 0; d < r.peak_bytes.size(); ++d) o << (d ? ", " : "") << r.peak_bytes[d];
      o << "]";
      if (b.measure) {
        o << ", \"measured_status\": " << json_quote(r.measured_status);
        if (!std::isnan(r.measured_s))
          o << ", \"measured_step_s\": " << r.measured_s << ", \"ci_low_s\": " << r.ci_low_s
            << ", \"ci_high_s\": " << r.ci_high_s << ", \"ci_level\": " << r.ci_level
            << ", \"measured_steps\": " << r.measured_steps;
      }
      if (!std::isnan(r.own_s))
        o << ", \"own_estimate_s\": " << r.own_s << ", \"own_estimate\": " << json_quote(r.own_kind);
      if (r.pipeline) o << ", \"pipeline\": " << pipeline_figures_json(*r.pipeline);
      o << ", \"note\": " << json_quote(r.note);
    } else {
      o << ", \"error\": " << json_quote(r.error);
    }
    o << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  return o.str();
}

// Under the pipeline objective the step columns are one mini-batch's, and
// four more columns carry the pipeline figures (env/pipeline_objective.h).
std::string rows_csv(const std::vector<Row>& rows, bool pipeline) {
  std::ostringstream o;
  o << "method,feasible,status,simulated_step_s,measured_step_s,peak_bytes_per_device,place_seconds,"
       "gap_to_lower_bound,";
  if (pipeline) o << "microbatches,schedule,per_microbatch_s,bubble_fraction,";
  o << "note\n";
  for (const Row& r : rows) {
    std::string peaks;
    for (size_t d = 0; d < r.peak_bytes.size(); ++d) peaks += (d ? ";" : "") + std::to_string(r.peak_bytes[d]);
    o << r.method << "," << (r.feasible() ? 1 : 0) << "," << r.status() << ","
      << (r.ok ? format_number("%.9g", r.sim_s) : "") << ","
      << (std::isnan(r.measured_s) ? "" : format_number("%.9g", r.measured_s)) << "," << peaks << ","
      << (r.ok ? format_number("%.6g", r.place_s) : "") << "," << (r.ok ? format_number("%.6g", r.gap) : "") << ",";
    if (pipeline && r.ok && r.pipeline)
      o << r.pipeline->spec.microbatches << "," << schedule_name(r.pipeline->spec.schedule) << ","
        << format_number("%.9g", r.pipeline->per_microbatch_s) << ","
        << format_number("%.6g", r.pipeline->bubble_fraction) << ",";
    else if (pipeline)
      o << ",,,,";
    o << csv_field(r.ok ? r.note : r.error) << "\n";
  }
  return o.str();
}

// Under the table: why a row has no placement, or why its simulated step failed, and each placer's note.
void print_notes(const std::vector<Row>& rows, bool pipeline) {
  for (const Row& r : rows) {
    if (!r.ok) {
      std::printf("%s: %s\n", r.method.c_str(), r.error.c_str());
      continue;
    }
    if (!r.feasible())
      std::printf("%s: the simulated %s failed: %s: %s\n", r.method.c_str(), pipeline ? "mini-batch" : "step",
                  r.sim_status.c_str(), r.sim_message.c_str());
    // (Most placers' notes start with their own name already: "single: all ops on cuda:0".)
    const bool named = r.note.rfind(r.method + ": ", 0) == 0;
    if (!r.note.empty()) std::printf("%s%s\n", named ? "" : (r.method + ": ").c_str(), r.note.c_str());
  }
}

void run_baseline(const BaselineArgs& b) {
  const Graph graph = load_graph(b.place.graph);
  const Cluster cluster = cluster_of(b.place);
  check_method_options(parse_method_list(b.methods), parse_options(b.place.options));  // before the environment
  const std::unique_ptr<Runtime> runtime = b.measure ? measuring_runtime(cluster) : nullptr;
  Environment env(graph, cluster, env_options(b.place));
  const double lb = env.lower_bound();
  const std::vector<Row> rows = baseline_rows(b, graph, cluster, env, runtime.get());
  const bool pipeline = env.options().objective == Objective::Pipeline;
  // A bare --json (or --json -) put the JSON nowhere: now, as under max_load, on stdout instead of the table.
  const bool json_to_stdout = b.json_given && (b.json.empty() || b.json == "-");
  if (json_to_stdout) {
    std::fputs(with_invocation(rows_json(b, graph, cluster, lb, rows, pipeline)).c_str(), stdout);
  } else {
    std::printf("%s on %s, %s: lower bound %.3f ms%s\n\n", graph.name.c_str(), cluster.name.c_str(),
                costs_note(b.place, env).c_str(), lb * 1e3, objective_note(env.options()).c_str());
    print_table(b, rows, pipeline);
    std::printf("\n");
    print_notes(rows, pipeline);
  }
  if (b.json_given && !json_to_stdout)
    write_file_atomic(b.json, with_invocation(rows_json(b, graph, cluster, lb, rows, pipeline)));
  if (!b.csv.empty()) write_file_atomic(b.csv, rows_csv(rows, pipeline));
}

}  // namespace

void add_baseline_command(CLI::App& app) {
  auto base = std::make_shared<BaselineArgs>();
  auto objective = std::make_shared<std::string>("step");
  auto max_load = std::make_shared<MaxLoadArgs>();
  CLI::App* baseline = app.add_subcommand("baseline", "Compare placement methods on one graph and cluster");
  add_common(baseline, base->place);
  baseline->add_option("--method", base->methods, "all, or a comma-separated list of methods")->capture_default_str();
  baseline->add_flag(
      "--measure", base->measure,
      "Also measure every placement with the runtime, all in one interleaved run after the placers (each row's "
      "median with its interval; --steps, --max-steps, --target, --warmup, --min-time, --timeout, --rewarm set the "
      "protocol, and need --measure)");
  add_measure_protocol_options(baseline, &base->protocol);
  CLI::Option* json = baseline->add_option("--json", base->json,
                                           "Write the results as JSON (with no file, or -: to stdout instead of the "
                                           "table)");
  json->expected(0, 1)->check(output_file_or_stdout());
  baseline->add_option("--csv", base->csv, "Write the results as CSV")->check(output_file());
  baseline->add_flag("--markdown", base->markdown, "Print the table as Markdown");
  baseline
      ->add_option("--objective", *objective,
                   "step (simulated step time of a placer graph), pipeline (simulated time of one mini-batch of "
                   "--microbatches micro-batches under --schedule) or max_load (a workload of Tarnawski et al., "
                   "NeurIPS 2020: methods dp, ilp, local_search, single, learned (not in all), or none)")
      ->check(CLI::IsMember({"step", "pipeline", "max_load"}))
      ->capture_default_str();
  add_objective_options(baseline, &base->place.objective, false);
  baseline->add_option("--placement", max_load->placement,
                       "max_load: also evaluate this split ({\"fpgas\": [{\"nodes\": [...]}], \"cpus\": [...]})");
  baseline->add_option("--max-ideals", max_load->max_ideals, "max_load dp: give up above this many ideals")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}))
      ->capture_default_str();
  add_workload_cluster_options(baseline, max_load->cluster);
  baseline->callback([base, objective, max_load, json, baseline] {
    // An option the chosen objective does not use is an error, not a silent no-op (a --csv asked for and
    // never written, exit 0).
    base->json_given = json->count() > 0;
    refuse_pipeline_options(*baseline, *objective == "pipeline");
    const auto protocol = {"--steps", "--max-steps", "--target", "--warmup", "--min-time", "--timeout", "--rewarm"};
    if (*objective != "max_load") {
      refuse_given(*baseline, {"--placement", "--max-ideals", "--accelerators", "--cpus", "--accelerator-bytes"},
                   "only --objective max_load takes it (a workload file)");
      if (!base->measure)
        refuse_given(*baseline, protocol, "sets --measure's protocol; give --measure, or leave it out");
      base->place.objective.objective = *objective;
      return run_baseline(*base);
    }
    const std::string why =
        "--objective max_load does not take it (its figures are the workload's, not run or simulated steps)";
    refuse_given(*baseline, {"--csv", "--measure", "--profile"}, why);
    refuse_given(*baseline, protocol, why);
    MaxLoadArgs a = *max_load;
    a.graph = base->place.graph;
    a.methods = base->methods;
    a.json = base->json;
    a.json_given = json->count() > 0;
    a.markdown = base->markdown;
    a.seed = base->place.seed;
    a.time_limit_s = base->place.time_limit_s;
    a.samples = base->place.budget;
    // Given, --budget is every search's: learned's samples and local_search's evaluations alike (equal budgets).
    a.evaluations = baseline->get_option("--budget")->count() > 0 ? base->place.budget : 0;
    if (!base->place.cluster.empty() || !base->place.devices.empty())
      throw InputError(
          "--objective max_load: the workload names its cluster; change it with --accelerators, --cpus "
          "and --accelerator-bytes instead of --cluster or --devices");
    if (!base->place.options.empty())
      throw InputError("--option: --objective max_load's methods take none (--max-ideals sets its dp's limit)");
    run_max_load_baseline(a);
  });
}

}  // namespace placer::cli
