// Each component registers its subcommands on the `placer` CLI11 app.
// A subcommand's callback throws InputError (or a subclass) for bad input;
// main() prints "error: <what>" to stderr and exits 2.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace placer {
struct MeasureOptions;  // runtime.h
class Graph;            // graphs/ir.h
struct Cluster;         // graphs/cluster.h
struct Placement;       // graphs/placement.h
}  // namespace placer

namespace placer::cli {

// The measurement protocol's options (--warmup, --steps, --max-steps, --target, --budget, --timeout, --seed).
void add_measure_options(CLI::App* cmd, MeasureOptions* options);

void add_graph_commands(CLI::App& app);    // graph build|import|info|validate   (cmd_graph.cc)
void add_runtime_commands(CLI::App& app);  // measure, profile                   (cmd_runtime.cc)
void add_env_commands(CLI::App& app);      // simulate, fidelity                 (cmd_env.cc)
void add_agent_commands(CLI::App& app);    // place, baseline, train             (cmd_agent.cc)
void add_service_commands(CLI::App& app);  // serve, query                       (cmd_service.cc)
void add_train_commands(CLI::App& app);    // train                              (cmd_train.cc)
void add_worker_commands(CLI::App& app);   // worker                             (cmd_worker.cc)

// The max-load yardstick (cmd_max_load.cc): a workload file's cluster, and
// what `baseline --objective max_load` reads.
struct WorkloadClusterArgs {
  int accelerators = -1;          // -1: the file's maxFPGAs
  int cpus = -1;                  // -1: the file's maxCPUs
  double accelerator_bytes = -1;  // -1: the file's maxSizePerFPGA
};
struct MaxLoadArgs {
  std::string graph, methods, placement, json;
  bool json_given = false, markdown = false;
  uint64_t seed = 0;
  double time_limit_s = 60.0;
  int64_t max_ideals = 200000;
  int64_t samples = 2000;  // learned: --budget
  WorkloadClusterArgs cluster;
};
void run_max_load_baseline(const MaxLoadArgs& a);
// `graph import` of a workload file (recognized by content); false if it is not one.
bool import_workload_if_one(const std::string& path, const std::string& output, const WorkloadClusterArgs& cluster);
void add_workload_cluster_options(CLI::App* cmd, WorkloadClusterArgs& c);

// --split-spec FILE (split_spec.cc): the placement's pipeline stages as
// torch.distributed.pipelining split points. check_split_spec_graph throws
// InputError naming the flag when PATH is given and the graph has no module
// paths (not from a .pt2); write_split_spec prices placements with STEP_S.
void add_split_spec_option(CLI::App* cmd, std::string* path);
void check_split_spec_graph(const std::string& path, const Graph& graph);
void write_split_spec(const std::string& path, const Graph& graph, const Cluster& cluster, const Placement& placement,
                      const std::function<double(const Placement&)>& step_s);

}  // namespace placer::cli
