#include "objective.h"

#include <algorithm>
#include <string>

#include "placer/env/pipeline_objective.h"
#include "placer/graphs/pipeline_limits.h"

namespace placer::service {

void apply_objective(const Request& request, RewardSettings& settings) {
  settings.objective = request.objective;
  settings.pipeline = request.pipeline;
}

EnvOptions simulated_env(const Request& request) {
  EnvOptions options;
  options.mode = RewardMode::Simulated;
  options.threads = 1;
  apply_objective(request, options);
  return options;
}

void check_pipeline_size(const Request& request, const Graph& graph, const ServiceConfig& config) {
  if (request.objective != Objective::Pipeline) return;
  // make_pipeline_graph's GraphError, named: it reached the client as bad_request with no field.
  if (!graph.is_training())
    throw RequestError(codes::kBadRequest, request.graph.forward_only ? "graph.forward_only" : "objective",
                       request.graph.forward_only
                           ? "a pipeline objective needs a training graph (backward and update ops); this one is "
                             "forward-only"
                           : "a pipeline objective needs a training graph (backward and update ops); graph '" +
                                 graph.name + "' has none");
  // The smaller of the server's limit and make_pipeline_graph's own (past it a GraphError with no field).
  const int64_t ops = static_cast<int64_t>(graph.size()) * request.pipeline.microbatches;
  const int64_t most = std::min<int64_t>(config.max_ops, kMaxUnrolledOps);
  if (ops > most)
    throw RequestError(codes::kTooLarge, "microbatches",
                       std::to_string(request.pipeline.microbatches) + " micro-batches of " +
                           std::to_string(graph.size()) + " operators make " + std::to_string(ops) +
                           "; this server places at most " + std::to_string(most));
}

void write_objective(JsonOut& o, Objective objective, const PipelineSpec& pipeline) {
  o.field("objective", objective_name(objective));
  if (objective == Objective::Pipeline)
    o.field("microbatches", static_cast<int64_t>(pipeline.microbatches))
        .field("schedule", schedule_name(pipeline.schedule));
}

void write_pipeline_figures(JsonOut& o, const Request& request, const StepResult& result) {
  if (request.objective != Objective::Pipeline) return;
  placer::write_pipeline_figures(o, "pipeline", pipeline_figures(result, request.pipeline));
}

void write_step(JsonOut& o, const StepResult& r) {
  o.field("status", step_status_name(r.status));
  if (r.ok()) {
    o.field("step_s", r.step_s);
    if (!r.stop.empty())  // measured: the median's 95% interval and how many steps made it
      o.field("ci_low_s", r.ci_low_s)
          .field("ci_high_s", r.ci_high_s)
          .field("steps", static_cast<int64_t>(r.samples_s.size()))
          .field("stop", r.stop);
  } else
    o.key("step_s").null().field("message", r.message);
}

}  // namespace placer::service
