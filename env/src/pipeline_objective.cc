// The pipeline objective's names and the figures of a result (env/pipeline_objective.h).
#include "placer/env/pipeline_objective.h"

#include <algorithm>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_writer.h"

namespace placer {

Objective objective_named(const std::string& name) {
  if (const auto o = parse_objective(name)) return *o;
  throw InputError(unknown_name("objective", name, {"step", "pipeline"}));
}

PipelineSchedule schedule_named(const std::string& name) {
  if (const auto s = parse_schedule(name)) return *s;
  throw InputError(unknown_name("schedule", name, {"gpipe", "1f1b"}));
}

PipelineFigures pipeline_figures(const StepResult& result, const PipelineSpec& spec) {
  PipelineFigures f;
  f.spec = spec;
  f.minibatch_s = result.step_s;
  double busiest = 0.0, busy = 0.0;
  for (const DeviceStats& d : result.devices) {
    if (!(d.busy_s > 0.0)) continue;
    ++f.devices_used;
    busy += d.busy_s;
    busiest = std::max(busiest, d.busy_s);
  }
  f.per_microbatch_s = busiest / std::max(1, spec.microbatches);
  if (result.ok() && f.devices_used > 0 && result.step_s > 0.0)
    f.bubble_fraction = std::max(0.0, 1.0 - busy / (f.devices_used * result.step_s));
  return f;
}

namespace {

JsonWriter& fields(JsonWriter& out, const PipelineFigures& f) {
  return out.field("microbatches", f.spec.microbatches)
      .field("schedule", schedule_name(f.spec.schedule))
      .field("minibatch_s", f.minibatch_s)
      .field("per_microbatch_s", f.per_microbatch_s)
      .field("bubble_fraction", f.bubble_fraction)
      .field("devices_used", f.devices_used);
}

}  // namespace

void write_pipeline_figures(JsonWriter& out, std::string_view key, const PipelineFigures& figures) {
  fields(out.begin_object(key), figures).end();
}

std::string pipeline_figures_json(const PipelineFigures& figures) {
  JsonWriter out;
  return fields(out.begin(), figures).end().text();
}

std::string pipeline_spec_text(const PipelineSpec& spec) {
  return std::to_string(spec.microbatches) + " micro-batch" + (spec.microbatches == 1 ? ", " : "es, ") +
         schedule_name(spec.schedule);
}

std::string pipeline_figures_text(const PipelineFigures& f) {
  return pipeline_spec_text(f.spec) + ": " + format_number(f.minibatch_s * 1e3, 6) + " ms per mini-batch, " +
         format_number(f.per_microbatch_s * 1e3, 6) + " ms per micro-batch in steady state, bubble " +
         format_number("%.1f", 100.0 * f.bubble_fraction) + "% (" + std::to_string(f.devices_used) + " device" +
         (f.devices_used == 1 ? "" : "s") + " used)";
}

}  // namespace placer
