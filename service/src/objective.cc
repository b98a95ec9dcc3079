#include "objective.h"

#include <set>
#include <string>

#include "placer/graphs/json_reader.h"
#include "placer/graphs/serialize.h"

// After json_reader.h (cereal configures RapidJSON first).
#if defined(CEREAL_RAPIDJSON_NAMESPACE)
#include <cereal/external/rapidjson/stringbuffer.h>
#include <cereal/external/rapidjson/writer.h>
#else
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#endif

namespace placer::service {
namespace {

// What step_result_to_json writes for every result: the reply has these its own way.
const std::set<std::string>& step_fields() {
  static const std::set<std::string> kFields = {"format",
                                                "version",
                                                "status",
                                                "message",
                                                "step_s",
                                                "iqr_s",
                                                "ci_low_s",
                                                "ci_high_s",
                                                "ci_level",
                                                "stop",
                                                "steps",
                                                "samples_s",
                                                "devices",
                                                "transfer_bytes",
                                                "oom_device",
                                                "oom_needed_bytes",
                                                "oom_capacity_bytes"};
  return kFields;
}

std::string to_text(const rj::Value& v) {
  rj::StringBuffer buffer;
  rj::Writer<rj::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

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
  const int64_t ops = static_cast<int64_t>(graph.size()) * request.pipeline.microbatches;
  if (ops > config.max_ops)
    throw RequestError(codes::kTooLarge, "microbatches",
                       std::to_string(request.pipeline.microbatches) + " micro-batches of " +
                           std::to_string(graph.size()) + " operators make " + std::to_string(ops) +
                           "; this server places at most " + std::to_string(config.max_ops));
}

void write_objective(JsonOut& o, Objective objective, const PipelineSpec& pipeline) {
  o.field("objective", objective_name(objective));
  if (objective == Objective::Pipeline)
    o.field("microbatches", static_cast<int64_t>(pipeline.microbatches))
        .field("schedule", schedule_name(pipeline.schedule));
}

void write_pipeline_figures(JsonOut& o, Objective objective, const StepResult& result) {
  if (objective != Objective::Pipeline) return;
  rj::Document doc;
  const std::string text = step_result_to_json(result);
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return;
  std::string figures;
  const auto add = [&](const rj::Value& name, const rj::Value& value) {
    figures += (figures.empty() ? "" : ",") + to_text(name) + ":" + to_text(value);
  };
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    if (step_fields().count(name)) continue;
    if (name == "pipeline" && it->value.IsObject()) {  // figures in an object of their own
      for (auto f = it->value.MemberBegin(); f != it->value.MemberEnd(); ++f) add(f->name, f->value);
    } else {
      add(it->name, it->value);
    }
  }
  if (!figures.empty()) o.key("pipeline").raw("{" + figures + "}");
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
