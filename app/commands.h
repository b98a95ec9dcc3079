// Each component registers its subcommands on the `placer` CLI11 app.
// A subcommand's callback throws InputError (or a subclass) for bad input;
// main() prints "error: <what>" to stderr and exits 2.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "placer/graphs/pipeline.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace placer {
struct MeasureOptions;  // runtime.h
struct RewardSettings;  // env/environment.h
struct PipelineSpec;    // graphs/pipeline.h
struct StepResult;      // graphs/measurement.h
class Graph;            // graphs/ir.h
struct Cluster;         // graphs/cluster.h
struct Placement;       // graphs/placement.h
class CostModel;        // env/cost_model.h
struct Profile;         // graphs/profile.h
}  // namespace placer

namespace placer::cli {

// The command line of this run (main records it), shell-quoted: "placer baseline --graph g.json ...".
void record_invocation(int argc, char** argv);
const std::string& invocation();
// A JSON object's text with "command" (invocation()) and "placer" (the version) first: every result file
// says how it was made.
std::string with_invocation(const std::string& json);
// A preset, device list or cluster file given as `option` (cmd_agent.cc); its errors name the option.
Cluster cluster_option(const char* option, const std::string& value);

// Option checks whose error names the option and says what it must be
// (validators.cc): > 0 and >= 0.
CLI::Validator positive_number();
CLI::Validator nonnegative_number();
// In [lo, hi] and finite (CLI::Range lets nan through, and the error then named a field deep inside).
CLI::Validator finite_range(double lo, double hi);
// Output paths checked when the command line is read, before any work (a long
// fidelity run ended on a missing folder): a file in a folder that exists and
// is writable, not a directory; a folder that exists, or can be made (with any
// missing folders above it) under the nearest one that does.
CLI::Validator output_file();
CLI::Validator output_folder();
// A name that becomes part of a file name in a folder the command checked: no '/', not "." or "..".
CLI::Validator file_name_part();
// output_file(), or "" / "-" (stdout).
CLI::Validator output_file_or_stdout();
// A whole number >= 0, for unsigned options (--seed): CLI11 read -1 into one as 2^64-1.
CLI::Validator nonnegative_integer();
// An option that does not apply is refused, never silently ignored: throws InputError "NAME: WHY" for the
// first of `names` given on `cmd`'s command line (each must be an option of `cmd`).
void refuse_given(const CLI::App& cmd, std::initializer_list<const char*> names, const std::string& why);
void refuse_given(const CLI::App& cmd, const std::vector<std::string>& names, const std::string& why);

// The measurement protocol's options (--warmup, --steps, --max-steps, --target, --budget, --timeout, --seed).
void add_measure_options(CLI::App* cmd, MeasureOptions* options);
// The same but --budget and --seed, for a command that has its own (baseline: a placer's budget and seed).
void add_measure_protocol_options(CLI::App* cmd, MeasureOptions* options);

void add_graph_commands(CLI::App& app);    // graph build|import|info|validate|pipeline (cmd_graph.cc)
void add_runtime_commands(CLI::App& app);  // measure, profile                   (cmd_runtime.cc)
void add_env_commands(CLI::App& app);      // simulate                           (cmd_env.cc)
void add_fidelity_command(CLI::App& app);  // fidelity                           (cmd_fidelity.cc)
void add_agent_commands(CLI::App& app);    // place, baseline, train             (cmd_agent.cc)
void add_service_commands(CLI::App& app);  // serve, query                       (cmd_service.cc)
void add_train_commands(CLI::App& app);    // train, export-policy               (cmd_train.cc)
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
  int64_t evaluations = 0;  // local_search: --budget when given (0: its time limit alone)
  WorkloadClusterArgs cluster;
};
void run_max_load_baseline(const MaxLoadArgs& a);
// `graph import`: is the file a workload (JSON text, not a .pt or .pt2)? Then import_workload writes it out.
bool is_workload_file(const std::string& path);
void import_workload(const std::string& path, const std::string& output, const WorkloadClusterArgs& cluster);
void add_workload_cluster_options(CLI::App* cmd, WorkloadClusterArgs& c);

// --split-spec FILE (split_spec.cc): the placement's pipeline stages as
// torch.distributed.pipelining split points. check_split_spec_graph throws
// InputError naming the flag when PATH is given and the graph has no module
// paths (not from a .pt2); write_split_spec prices placements with STEP_S.
// --objective step|pipeline, --microbatches M, --schedule gpipe|1f1b
// (objective_options.cc; baseline adds its own --objective, which also takes
// max_load). Bad values are CLI11 errors naming the option and the choices.
struct ObjectiveArgs {
  std::string objective = "step";
  int microbatches = 4;
  std::string schedule = "1f1b";
  bool pipeline() const { return objective == "pipeline"; }
  PipelineSpec spec() const;
};
// config_defaults (train): the help names the config's reward.* fields as the defaults.
void add_objective_options(CLI::App* cmd, ObjectiveArgs* args, bool objective = true, bool config_defaults = false);
// --microbatches and --schedule refused, by name, unless the objective is pipeline; `how` says how to choose it.
void refuse_pipeline_options(const CLI::App& cmd, bool pipeline, const std::string& how = "--objective pipeline");
// The objective into an environment's settings (the spec only under pipeline).
void apply_objective(const ObjectiveArgs& args, RewardSettings* settings);
// The graph a command runs: `base`, or under --objective pipeline its
// unrolled mini-batch. spec(): the spec of the graph run (also of a graph that
// `placer graph pipeline` unrolled before); at() maps a placement of `base`
// to one of graph(). `base` must outlive it.
class RunGraph {
 public:
  RunGraph(const Graph& base, const ObjectiveArgs& args);
  RunGraph(const RunGraph&) = delete;
  RunGraph& operator=(const RunGraph&) = delete;
  const Graph& graph() const { return pipe_ ? pipe_->graph : base_; }
  const Graph& base() const { return base_; }  // the graph a profile measures
  // The simulator's costs for graph() on a profile of base() (pipelined: its copies, CostModel::calibrated_copies);
  // per_copy: the CPU copy cost priced per copy, not per byte.
  CostModel calibrated(const Cluster& cluster, const Profile& profile, bool per_copy = false) const;
  const std::optional<PipelineSpec>& spec() const { return spec_; }
  Placement at(const Placement& base) const { return pipe_ ? pipe_->expand(base) : base; }

 private:
  const Graph& base_;
  std::optional<PipelineGraph> pipe_;
  std::optional<PipelineSpec> spec_;
};

// Nothing under the step objective, else " (pipeline objective: 4 micro-batches, 1f1b; every time is ...)".
std::string objective_note(const RewardSettings& settings);
// " (reaches it: optimal under this cost model)" where a step is at its lower
// bound (within round-off, 1e-6), else "": no placement can be faster.
const char* bound_note(double step_s, double lower_bound_s);
// " (97.5% of ops measured)": how much of a calibrated cost model the profile's timings cover.
std::string measured_ops_note(const CostModel& costs);
// A placement file of this graph on this cluster; its errors name the file.
Placement placement_from_file(const Graph& graph, const Cluster& cluster, const std::string& path);
// A JSON object's text with a "pipeline" field (env/pipeline_objective.h's figures) added at its end.
std::string with_pipeline_figures(const std::string& json, const StepResult& result, const PipelineSpec& spec);

void add_split_spec_option(CLI::App* cmd, std::string* path);
void check_split_spec_graph(const std::string& path, const Graph& graph);
void write_split_spec(const std::string& path, const Graph& graph, const Cluster& cluster, const Placement& placement,
                      const std::function<double(const Placement&)>& step_s);

}  // namespace placer::cli
