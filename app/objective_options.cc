// --objective, --microbatches, --schedule (place, baseline, simulate, measure, fidelity, train):
// what a placement is judged by (graphs/pipeline.h, env/pipeline_objective.h).
#include <CLI/CLI.hpp>

#include <string>

#include "commands.h"
#include "placer/env/cost_model.h"
#include "placer/env/environment.h"
#include "placer/env/pipeline_objective.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/serialize.h"

namespace placer::cli {

void add_objective_options(CLI::App* cmd, ObjectiveArgs* a, bool objective, bool config_defaults) {
  // `train` overrides its config: the defaults shown are the config's fields, not ObjectiveArgs' values.
  auto with_default = [&](CLI::Option* option, const char* field) {
    if (config_defaults)
      option->description(option->get_description() + " (default: the config's reward." + field + ")");
    else
      option->capture_default_str();
  };
  if (objective)
    with_default(cmd->add_option("--objective", a->objective,
                                 "step (one training step) or pipeline (one mini-batch of --microbatches micro-batches "
                                 "under --schedule, weight update included)")
                     ->check(CLI::IsMember({"step", "pipeline"})),
                 "objective");
  with_default(cmd->add_option("--microbatches", a->microbatches, "--objective pipeline: micro-batches per mini-batch")
                   ->check(CLI::Range(1, 1024)),
               "microbatches");
  with_default(cmd->add_option("--schedule", a->schedule, "--objective pipeline: gpipe or 1f1b")
                   ->check(CLI::IsMember({"gpipe", "1f1b"})),
               "schedule");
}

void refuse_pipeline_options(const CLI::App& cmd, bool pipeline, const std::string& how) {
  if (!pipeline)
    refuse_given(cmd, {"--microbatches", "--schedule"}, "only the pipeline objective takes it (" + how + ")");
}

PipelineSpec ObjectiveArgs::spec() const { return {microbatches, schedule_named(schedule)}; }

CostModel RunGraph::calibrated(const Cluster& cluster, const Profile& profile, bool per_copy) const {
  const auto pricing = per_copy ? CostModel::GroupCopyPricing::PerCopy : CostModel::GroupCopyPricing::PerByte;
  return pipe_ ? CostModel::calibrated_copies(pipe_->graph, base_, cluster, profile, pricing)
               : CostModel::calibrated(base_, cluster, profile, pricing);
}

RunGraph::RunGraph(const Graph& base, const ObjectiveArgs& args) : base_(base) {
  if (args.pipeline()) pipe_ = make_pipeline_graph(base, args.spec());
  spec_ = pipeline_spec_of(graph());
}

void apply_objective(const ObjectiveArgs& a, RewardSettings* settings) {
  settings->objective = objective_named(a.objective);
  if (a.pipeline()) settings->pipeline = a.spec();
}

const char* bound_note(double step_s, double lower_bound_s) {
  return lower_bound_s > 0 && step_s > 0 && step_s <= lower_bound_s * (1.0 + 1e-6)
             ? " (reaches it: optimal under this cost model)"
             : "";
}

std::string measured_ops_note(const CostModel& costs) {
  std::string note = " (" + format_number(100 * costs.calibrated_fraction(), 3) + "% of ops measured";
  // A profile of another graph lends its times by signature only: say whose they are (a near-0% was all a user saw).
  if (!costs.profile_of_graph().empty())
    note += ", by signature: the profile is of graph '" + costs.profile_of_graph() + "'";
  const std::string warning = costs.profile_warning();
  if (!warning.empty()) note += "; WARNING: " + warning;
  return note + ")";
}

Placement placement_from_file(const Graph& graph, const Cluster& cluster, const std::string& path) {
  const NamedPlacement named = load_placement(path);
  try {
    return from_named(graph, cluster, named);
  } catch (const PlacementError& e) {
    throw PlacementError(path + ": " + e.what());
  }
}

std::string objective_note(const RewardSettings& settings) {
  if (settings.objective != Objective::Pipeline) return "";
  return " (pipeline objective: " + pipeline_spec_text(settings.pipeline) + "; every time is one mini-batch's)";
}

std::string with_pipeline_figures(const std::string& json, const StepResult& result, const PipelineSpec& spec) {
  const size_t close = json.rfind('}');
  if (close == std::string::npos) return json;
  return json.substr(0, close) + ",\n\"pipeline\": " + pipeline_figures_json(pipeline_figures(result, spec)) + "\n}" +
         json.substr(close + 1);
}

}  // namespace placer::cli
