// placer graph build|import|info|validate|pipeline: make, inspect, check and unroll graphs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/frontends/builders.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/serialize.h"

namespace placer::cli {

namespace {

// The simple cost `graph info` reports the critical path with: a 1 TFLOP/s
// device with 5 us of overhead per op. The simulator has the real models.
constexpr double kInfoFlopsPerSecond = 1e12;
constexpr double kInfoOpOverhead = 5e-6;

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::string human_count(double n, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int p = 0;
  while (n >= 1000.0 && p < 6) {
    n /= 1000.0;
    ++p;
  }
  char buf[64];
  if (p == 0 && unit[0] == '\0')
    std::snprintf(buf, sizeof(buf), "%.0f", n);  // a plain count: no trailing space
  else
    std::snprintf(buf, sizeof(buf), p == 0 ? "%.0f %s%s" : "%.3g %s%s", n, prefixes[p], unit);
  return buf;
}

std::string human_seconds(double s) {
  char buf[64];
  if (s >= 1.0)
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  return buf;
}

// "key=value" with an integer value.
std::pair<std::string, int64_t> parse_builder_option(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--opt '" + text + "': expected KEY=VALUE, e.g. --opt batch=32");
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  // Digits with an optional '-' only: strtoll also took "+5" and " 5".
  const bool plain = (value[0] == '-' && value.size() > 1 ? std::isdigit(static_cast<unsigned char>(value[1]))
                                                          : std::isdigit(static_cast<unsigned char>(value[0]))) != 0;
  if (errno != 0 || end == value.c_str() || *end != '\0' || !plain)
    throw InputError("--opt '" + text + "': value '" + value + "' is not an integer");
  return {key, static_cast<int64_t>(v)};
}

std::string builders_help() {
  std::string text = "Models and their options (defaults):\n";
  for (const std::string& name : builder_names()) {
    text += "  " + name + ":";
    for (const auto& [key, value] : builder_defaults(name)) text += " " + key + "=" + std::to_string(value);
    text += "\n";
  }
  return text;
}

void print_written(const Graph& g, const std::string& path) {
  std::printf("wrote %s: graph '%s', %" PRId64 " ops, %s, %s of parameters\n", path.c_str(), g.name.c_str(), g.size(),
              human_count(total_flops(g), "FLOP").c_str(),
              human_bytes(static_cast<double>(total_param_bytes(g))).c_str());
}

// The parameters' elements, from the param ops' output shapes, by dtype: "134 K elements of float", or
// "135 K elements: 134 K float, 1 K half" (each dtype's bytes per element differ: "at 4 bytes" was said of any).
std::string param_elements(const Graph& g) {
  std::map<std::string, int64_t> by_dtype;
  int64_t total = 0;
  for (const Op& op : g.ops())
    if (op.type == op_types::kParam)
      for (const TensorSpec& t : op.outputs) {
        by_dtype[dtype_name(t.dtype)] += t.numel();
        total += t.numel();
      }
  std::string out = human_count(static_cast<double>(total), "") + " elements";
  if (by_dtype.size() == 1) return out + " of " + by_dtype.begin()->first;
  std::vector<std::pair<std::string, int64_t>> sorted(by_dtype.begin(), by_dtype.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t k = 0; k < sorted.size(); ++k)
    out += (k ? ", " : ": ") + human_count(static_cast<double>(sorted[k].second), "") + " " + sorted[k].first;
  return out;
}

void print_info(const Graph& g) {
  int64_t by_phase[3] = {0, 0, 0};
  double flops_by_phase[3] = {0, 0, 0};
  int64_t edges = 0, param_ops = 0, param_output_bytes = 0;
  struct TypeStats {
    int64_t count = 0;
    double flops = 0;
  };
  std::map<std::string, TypeStats> types;
  for (const Op& op : g.ops()) {
    const int p = static_cast<int>(op.phase);
    ++by_phase[p];
    flops_by_phase[p] += op.flops;
    edges += static_cast<int64_t>(op.inputs.size());
    if (op.type == op_types::kParam) {
      ++param_ops;
      param_output_bytes += op.output_bytes();
    }
    auto& t = types[op.type];
    ++t.count;
    t.flops += op.flops;
  }
  int64_t producer_consumer_pairs = 0;
  for (int32_t i = 0; i < g.size(); ++i) producer_consumer_pairs += static_cast<int64_t>(g.consumers(OpId(i)).size());
  const double flops = total_flops(g);
  const int64_t params = total_param_bytes(g);
  // Activations: every op output except the parameters themselves.
  const int64_t activations = total_output_bytes(g) - param_output_bytes;
  const CriticalPath cp =
      critical_path(g, [&](OpId id) { return g.op(id).flops / kInfoFlopsPerSecond + kInfoOpOverhead; });
  double cp_flops = 0.0;
  for (OpId id : cp.ops) cp_flops += g.op(id).flops;
  const Grouping groups = colocation_groups(g);

  std::printf("graph: %s (%s)\n", g.name.empty() ? "(unnamed)" : g.name.c_str(),
              g.is_training() ? "training step" : "forward only");
  if (!g.attrs.empty()) {
    std::vector<std::pair<std::string, std::string>> attrs(g.attrs.begin(), g.attrs.end());
    std::sort(attrs.begin(), attrs.end());
    std::printf("attrs:");
    for (const auto& [k, v] : attrs) std::printf(" %s=%s", k.c_str(), v.c_str());
    std::printf("\n");
  }
  std::printf("ops: %" PRId64 " (forward %" PRId64 ", backward %" PRId64 ", update %" PRId64 ")\n", g.size(),
              by_phase[0], by_phase[1], by_phase[2]);
  std::printf("edges: %" PRId64 " tensor inputs, %" PRId64 " producer->consumer pairs\n", edges,
              producer_consumer_pairs);
  std::printf("co-location groups: %d\n", groups.size());
  std::printf("parameters: %s in %" PRId64 " param ops (%s)\n", human_bytes(static_cast<double>(params)).c_str(),
              param_ops, param_elements(g).c_str());
  std::printf("FLOPs: %s per step (forward %s, backward %s, update %s)\n", human_count(flops, "FLOP").c_str(),
              human_count(flops_by_phase[0], "FLOP").c_str(), human_count(flops_by_phase[1], "FLOP").c_str(),
              human_count(flops_by_phase[2], "FLOP").c_str());
  std::printf("memory: %s = parameters %s + activations %s (every op output, an upper bound)\n",
              human_bytes(static_cast<double>(params + activations)).c_str(),
              human_bytes(static_cast<double>(params)).c_str(), human_bytes(static_cast<double>(activations)).c_str());
  std::printf("critical path: %zu ops, %s, %s at cost = flops/1e12 + 5 us per op", cp.ops.size(),
              human_count(cp_flops, "FLOP").c_str(), human_seconds(cp.length).c_str());
  const double serial = flops / kInfoFlopsPerSecond + kInfoOpOverhead * static_cast<double>(g.size());
  if (cp.length > 0)
    std::printf(" (all ops serial: %s, parallelism %.2f)", human_seconds(serial).c_str(), serial / cp.length);
  std::printf("\n");
  if (!cp.ops.empty())
    std::printf("  from '%s' to '%s'\n", g.op(cp.ops.front()).name.c_str(), g.op(cp.ops.back()).name.c_str());

  std::vector<std::pair<std::string, TypeStats>> sorted(types.begin(), types.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second.flops != b.second.flops) return a.second.flops > b.second.flops;
    if (a.second.count != b.second.count) return a.second.count > b.second.count;
    return a.first < b.first;
  });
  std::printf("top op types (by FLOPs):\n");
  for (size_t k = 0; k < sorted.size() && k < 10; ++k) {
    const auto& [type, t] = sorted[k];
    std::printf("  %-32s %7" PRId64 " ops  %12s  %5.1f%%\n", type.c_str(), t.count,
                human_count(t.flops, "FLOP").c_str(), flops > 0 ? 100.0 * t.flops / flops : 0.0);
  }
}

// `graph build`: a benchmark model's training-step graph from a builder.
void add_graph_build(CLI::App* graph) {
  struct Args {
    std::string model;
    std::vector<std::string> opts;
    bool forward_only = false;
    std::string output;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = graph->add_subcommand("build", "Build a benchmark model's training-step graph");
  cmd->add_option("model", args->model, "Model: rnnlm, nmt, inception_v3, transformer, resnet, mlp")->required();
  cmd->add_option("--opt", args->opts, "Builder option KEY=VALUE (integer), repeatable, e.g. --opt batch=32");
  cmd->add_flag("--forward-only", args->forward_only, "Forward pass only (no backward and update ops)");
  cmd->add_option("-o,--output", args->output, "Output file: .json (exchange format) or anything else (binary)")
      ->required()
      ->check(output_file());
  cmd->footer([] { return builders_help(); });
  cmd->callback([args] {
    BuilderOptions options;
    options.forward_only = args->forward_only;
    for (const std::string& o : args->opts) {
      auto [key, value] = parse_builder_option(o);
      if (!options.values.emplace(key, value).second) throw InputError("--opt " + key + ": given twice");
    }
    const Graph g = build_graph(args->model, options);
    save_graph(g, args->output);
    print_written(g, args->output);
  });
}

// `graph import`: a PyTorch model (or a NeurIPS 2020 workload) imported as a graph.
void add_graph_import(CLI::App* graph) {
  struct Args {
    std::string model;
    std::vector<std::string> inputs;
    bool forward_only = false;
    double learning_rate = 0.01;
    std::string output;
    WorkloadClusterArgs cluster;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = graph->add_subcommand(
      "import",
      "Import a PyTorch model as a graph: a torch.export program (.pt2) or a TorchScript file (.pt); or check and "
      "normalize a max-load workload of Tarnawski et al. (NeurIPS 2020), recognized by its content");
  cmd->add_option("model", args->model,
                  "MODEL.pt2 written by torch.export.save (torch 2.6+), or MODEL.pt written by torch.jit.save "
                  "(traced or scripted)")
      ->required();
  cmd->add_option("--input", args->inputs,
                  "Sample input NAME:SHAPE:DTYPE, e.g. x:8x3x224x224:float (dtypes: float, half, double, long, "
                  "int, bool, ...); repeatable. TorchScript: one per forward argument, required. .pt2: optional; "
                  "an input without one uses the example recorded in the archive (needed only for a symbolic "
                  "size without an example)");
  cmd->add_flag("--forward-only", args->forward_only, "Keep the inference graph (no backward and update ops)");
  cmd->add_option("--lr", args->learning_rate, "Learning rate of the generated SGD update ops")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("-o,--output", args->output,
                  "Output file: .json (exchange format) or anything else (binary); a workload's must be .json "
                  "(written as workload JSON)")
      ->required()
      ->check(output_file());
  add_workload_cluster_options(cmd, args->cluster);
  cmd->callback([args, cmd] {
    // The options of the other kind of file are refused, not ignored.
    if (is_workload_file(args->model)) {
      refuse_given(*cmd, {"--input", "--lr", "--forward-only"}, "PyTorch models only (a workload file is no model)");
      return import_workload(args->model, args->output, args->cluster);
    }
    refuse_given(*cmd, {"--accelerators", "--cpus", "--accelerator-bytes"},
                 "workload files only (a PyTorch model's graph names no cluster)");
    std::vector<SampleInput> inputs;
    for (const std::string& spec : args->inputs) inputs.push_back(parse_sample_input(spec));
    ImportOptions options;
    options.forward_only = args->forward_only;
    options.learning_rate = args->learning_rate;
    const Graph g = import_model(args->model, inputs, options);
    save_graph(g, args->output);
    print_written(g, args->output);
    if (auto it = g.attrs.find("input_shapes"); it != g.attrs.end())
      std::printf("input shapes: %s\n", it->second.c_str());
    if (auto it = g.attrs.find("weights"); it != g.attrs.end()) std::printf("weights: %s\n", it->second.c_str());
  });
}

// `graph info`: a graph's summary.
void add_graph_info(CLI::App* graph) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = graph->add_subcommand(
      "info", "Summarize a graph: ops, edges, parameters, FLOPs, memory, critical path, op types");
  cmd->add_option("graph", *path, "Graph file (.json or binary)")->required();
  cmd->callback([path] { print_info(load_graph(*path)); });
}

// `graph validate`: a graph file checked.
void add_graph_validate(CLI::App* graph) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = graph->add_subcommand(
      "validate", "Check a graph file: structure, names, edges, cycles, sizes, shapes (exit 2 if invalid)");
  cmd->add_option("graph", *path, "Graph file (.json or binary)")->required();
  cmd->callback([path] {
    const Graph g = load_graph(*path);  // loading validates; errors exit 2 from main()
    if (g.size() == 0) throw InputError(*path + ": graph '" + g.name + "' has no ops (nothing to place)");
    std::printf("ok: %" PRId64 " ops\n", g.size());
  });
}

// `graph pipeline`: a training graph unrolled into one pipelined mini-batch
// (graphs/pipeline.h); simulate, measure and the placers run it as it is.
void add_graph_pipeline(CLI::App* graph) {
  struct Args {
    std::string input, output;
    ObjectiveArgs objective{"pipeline"};
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = graph->add_subcommand(
      "pipeline",
      "Unroll a training graph into one mini-batch of micro-batches under a schedule (copies x@mbK, one update)");
  cmd->add_option("input", args->input, "Training graph file (.json or binary)")->required();
  cmd->add_option("output", args->output, "Graph file to write (.json, else binary)")->required()->check(output_file());
  add_objective_options(cmd, &args->objective, false);
  cmd->callback([args] {
    const Graph g = make_pipeline_graph(load_graph(args->input), args->objective.spec()).graph;
    save_graph(g, args->output);
    print_written(g, args->output);
  });
}

}  // namespace

void add_graph_commands(CLI::App& app) {
  CLI::App* graph = app.add_subcommand("graph", "Build, import, inspect and validate operator graphs");
  graph->require_subcommand(1);
  add_graph_build(graph);
  add_graph_import(graph);
  add_graph_info(graph);
  add_graph_validate(graph);
  add_graph_pipeline(graph);
}

}  // namespace placer::cli
