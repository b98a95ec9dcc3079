// The NeurIPS 2020 max-load yardstick on the command line: `graph import` of
// a workload file (graphs/workload.h) and `baseline --objective max_load`.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/agent/max_load.h"
#include "placer/agent/max_load_learned.h"
#include "placer/env/max_load.h"
#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/files.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/workload.h"

namespace placer::cli {

namespace {

Workload load_with_cluster(const std::string& path, const WorkloadClusterArgs& c) {
  Workload w = load_workload(path);
  if (c.accelerators >= 0) w.cluster.accelerators = c.accelerators;
  if (c.cpus >= 0) w.cluster.cpus = c.cpus;
  if (c.accelerator_bytes >= 0) w.cluster.accelerator_bytes = c.accelerator_bytes;
  if (w.cluster.devices() < 1 || w.cluster.devices() > Workload::kMaxDevices)
    throw InputError(detail::concat("--accelerators + --cpus must be in [1, ", Workload::kMaxDevices, "], got ",
                                    w.cluster.devices()));
  // A node only a CPU may run, and no CPU: no method can place it (dp said "no split fits the accelerators' memory").
  if (w.cluster.cpus == 0)
    for (size_t i = 0; i < w.nodes.size(); ++i)
      if (!w.nodes[i].accelerator_ok)
        throw InputError(detail::concat(path, ": nodes[", i, "] (id ", w.nodes[i].id,
                                        ") is not supported on an accelerator (supportedOnFpga 0) and the cluster has "
                                        "no CPU (maxCPUs 0 or --cpus 0): no device can run it"));
  return w;
}

std::vector<std::string> method_list(const std::string& text) {
  if (text == "all") return max_load_methods();  // learned only by name
  if (text == "none") return {};                 // only --placement
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    bool known = false;
    for (const std::string& m : max_load_methods_with_learned()) known = known || m == name;
    if (!known) throw InputError("--method: " + unknown_name("max_load method", name, max_load_methods_with_learned()));
    if (std::find(out.begin(), out.end(), name) != out.end()) throw InputError("--method: '" + name + "' given twice");
    out.push_back(name);
    start = comma + 1;
  }
  return out;
}

struct Row {
  MaxLoadResult result;
  std::string error;
  MaxLoadReport report;
};

std::string rows_json(const Workload& w, const std::vector<Row>& rows) {
  JsonWriter out;
  out.begin().field("workload", w.name).field("objective", "max_load");
  out.begin_object("cluster")
      .field("accelerators", w.cluster.accelerators)
      .field("cpus", w.cluster.cpus)
      .field("accelerator_bytes", w.cluster.accelerator_bytes)
      .end();
  out.begin_array("methods");
  for (const Row& r : rows) {
    out.begin().field("method", r.result.method);
    if (!r.error.empty() || r.result.placement.empty()) {
      out.field("error", r.error.empty() ? r.result.note : r.error).end();
      continue;
    }
    out.field("max_load", r.result.max_load)
        .field("seconds", r.result.seconds)
        .field("feasible", r.report.feasible)
        .field("optimal", r.result.optimal);
    if (r.result.method == "dp" || r.result.method == "ilp") out.field("bound", r.result.bound);
    if (r.result.method == "dp") out.field("ideals", r.result.ideals);
    if (r.result.method == "learned")
      out.field("found_by", r.result.found_by).field("warm_max_load", r.result.warm_max_load);
    out.field("note", r.result.note)
        .key("placement")
        .raw(workload_split_json(w, r.result.placement, r.report.load, r.report.max_load))
        .end();
  }
  return out.end_array().end().text() + "\n";
}

void print_rows(const Workload& w, const std::vector<Row>& rows, bool markdown) {
  std::printf("%s: %d nodes, %zu edges; %d accelerators of %.6g bytes, %d CPUs\n\n", w.name.c_str(), w.size(),
              w.edges.size(), w.cluster.accelerators, w.cluster.accelerator_bytes, w.cluster.cpus);
  const char* row_format = markdown ? "| %s | %s | %s | %s |\n" : "%-14s %14s %12s  %s\n";
  std::printf(row_format, "method", "max load", "time (s)", "loads per device");
  if (markdown) std::printf("|---|---:|---:|---|\n");
  for (const Row& r : rows) {
    if (!r.error.empty() || r.result.placement.empty()) {
      std::printf(row_format, r.result.method.c_str(), "-", "-", "none");
      continue;
    }
    std::string loads;
    for (double l : r.report.load) loads += (loads.empty() ? "" : "/") + format_number(l, 5);
    std::printf(row_format, r.result.method.c_str(), format_number(r.result.max_load, 9).c_str(),
                format_number("%.3f", r.result.seconds).c_str(), loads.c_str());
  }
  std::printf("\n");
  for (const Row& r : rows) {
    const std::string& text = r.error.empty() ? r.result.note : r.error;
    if (!text.empty()) std::printf("%s: %s\n", r.result.method.c_str(), text.c_str());
    if (r.error.empty() && !r.result.placement.empty() && !r.report.feasible)
      std::printf("%s: over an accelerator's memory, or a node on an accelerator that does not support it\n",
                  r.result.method.c_str());
  }
}

}  // namespace

void add_workload_cluster_options(CLI::App* cmd, WorkloadClusterArgs& c) {
  cmd->add_option("--accelerators", c.accelerators, "Workload files: accelerators instead of the file's maxFPGAs")
      ->check(CLI::Range(0, Workload::kMaxDevices));
  cmd->add_option("--cpus", c.cpus, "Workload files: CPUs instead of the file's maxCPUs")
      ->check(CLI::Range(0, Workload::kMaxDevices));
  cmd->add_option("--accelerator-bytes", c.accelerator_bytes,
                  "Workload files: bytes per accelerator instead of the file's maxSizePerFPGA")
      ->check(finite_range(0.0, 1e18));
}

void run_max_load_baseline(const MaxLoadArgs& a) {
  const Workload w = load_with_cluster(a.graph, a.cluster);
  std::vector<Row> rows;
  MaxLoadOptions options;
  options.seed = a.seed;
  options.time_limit_s = a.time_limit_s;
  options.max_ideals = a.max_ideals;
  options.samples = a.samples;
  options.evaluations = a.evaluations;
  if (!a.placement.empty()) {
    Row row;
    row.result.method = "placement";
    row.result.placement = load_workload_split(a.placement, w);
    row.report = max_load(w, row.result.placement);
    row.result.max_load = row.report.max_load;
    row.result.note = "from " + a.placement;
    rows.push_back(row);
  }
  const std::vector<std::string> methods = method_list(a.methods);
  if (std::find(methods.begin(), methods.end(), "learned") != methods.end()) check_max_load_learned_options(w, options);
  for (const std::string& method : methods) {
    Row row;
    row.result.method = method;
    try {
      row.result = place_max_load_or_learned(w, method, options);
      if (!row.result.placement.empty()) row.report = max_load(w, row.result.placement);
    } catch (const InputError& e) {
      row.error = e.what();
    }
    // The best split so far warm-starts the next methods.
    if (!row.result.placement.empty() && row.report.feasible &&
        (options.warm.empty() || row.result.max_load < max_load(w, options.warm).max_load)) {
      options.warm = row.result.placement;
      options.warm_from = method;
    }
    rows.push_back(row);
  }
  const bool json_to_stdout = a.json_given && (a.json.empty() || a.json == "-");
  if (!json_to_stdout) print_rows(w, rows, a.markdown);
  if (json_to_stdout)
    std::fputs(rows_json(w, rows).c_str(), stdout);
  else if (a.json_given)
    write_file_atomic(a.json, rows_json(w, rows));
}

bool is_workload_file(const std::string& path) {
  auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".pt") || ends_with(".pt2")) return false;
  // JSON text is a workload (its errors name the field), never a model archive (a zip).
  const std::string text = read_file(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (text[first] != '{' && text[first] != '[')) return false;
  if (!is_workload_json(text) && text.find("\"placer.graph\"") != std::string::npos)
    throw InputError(path +
                     ": a placer graph already (graph info and place read it); graph import takes a "
                     "TorchScript .pt, a torch.export .pt2 or a NeurIPS 2020 workload JSON");
  return true;
}

void import_workload(const std::string& path, const std::string& output, const WorkloadClusterArgs& cluster) {
  if (output.size() < 5 || output.compare(output.size() - 5, 5, ".json") != 0)
    throw InputError("-o " + output + ": a workload is written as workload JSON; name the output .json");
  const Workload w = load_with_cluster(path, cluster);
  write_file_atomic(output, workload_json(w) + "\n");
  int32_t classes = 0;
  w.colocation_classes(&classes);
  int64_t backward = 0;
  double accelerator = 0.0, cpu = 0.0;
  for (const WorkloadNode& n : w.nodes) {
    backward += n.backward ? 1 : 0;
    accelerator += n.accelerator_latency;
    cpu += n.cpu_latency;
  }
  std::printf("wrote %s: workload '%s' (max-load format of Tarnawski et al., NeurIPS 2020), %d nodes (%" PRId64
              " backward), %zu edges, %d colocation classes\n",
              output.c_str(), w.name.c_str(), w.size(), backward, w.edges.size(), classes);
  std::printf("cluster: %d accelerators of %.6g bytes, %d CPUs\n", w.cluster.accelerators, w.cluster.accelerator_bytes,
              w.cluster.cpus);
  std::printf("latency: %.6g on one accelerator, %.6g on one CPU (the file's time unit)\n", accelerator, cpu);
  // Backward nodes whose class has no forward node (a loss's gradient, parameter updates): the paper's
  // code, and placer's dp, give such a class an artificial forward node of no cost.
  const std::vector<int32_t> cls = w.colocation_classes();
  std::vector<char> has_forward(static_cast<size_t>(classes), 0);
  for (size_t i = 0; i < w.nodes.size(); ++i)
    if (!w.nodes[i].backward) has_forward[static_cast<size_t>(cls[i])] = 1;
  int64_t orphans = 0;
  for (size_t i = 0; i < w.nodes.size(); ++i)
    orphans += w.nodes[i].backward && !has_forward[static_cast<size_t>(cls[i])];
  if (orphans > 0)
    std::printf("%" PRId64
                " backward nodes have no forward node in their class: dp orders them as the paper's "
                "code does (an artificial forward node of no cost per class)\n",
                orphans);
}

}  // namespace placer::cli
