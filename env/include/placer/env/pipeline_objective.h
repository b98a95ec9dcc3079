// The pipeline objective (graphs/pipeline.h) for env's users: its names as
// options read them, and what the result of a pipelined mini-batch says
// beyond its time, defined once for every report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"

namespace placer {

class JsonWriter;  // graphs/json_writer.h

// "step" / "pipeline", "gpipe" / "1f1b"; else InputError "unknown objective
// 'x' (known: step, pipeline)" (the caller adds the field's path).
Objective objective_named(const std::string& name);
PipelineSchedule schedule_named(const std::string& name);

struct PipelineFigures {
  PipelineSpec spec;
  // The result's step: one mini-batch of spec.microbatches micro-batches
  // under spec.schedule, weight update included.
  double minibatch_s = 0.0;
  // Steady state, per micro-batch: the busiest device's busy time / M. Once
  // the pipeline is full each micro-batch passes every stage, so the busiest
  // stage sets the pace; a mini-batch takes about M x this plus fill and drain.
  double per_microbatch_s = 0.0;
  // The share of the used devices' time they sit idle: 1 - sum of their
  // busy times / (devices used x minibatch_s). A device is used when its busy
  // time is > 0. 0 for a result that is not ok.
  double bubble_fraction = 0.0;
  int32_t devices_used = 0;
};

PipelineFigures pipeline_figures(const StepResult& result, const PipelineSpec& spec);

// As a JSON object field `key`: microbatches, schedule, minibatch_s,
// per_microbatch_s, bubble_fraction, devices_used.
void write_pipeline_figures(JsonWriter& out, std::string_view key, const PipelineFigures& figures);
// The same object as text (for hand-laid-out JSON).
std::string pipeline_figures_json(const PipelineFigures& figures);
// "4 micro-batches, 1f1b"
std::string pipeline_spec_text(const PipelineSpec& spec);
// One line for text reports: "4 micro-batches, 1f1b: 12.3 ms per mini-batch,
// 2.5 ms per micro-batch in steady state, bubble 18.0% (4 devices used)".
std::string pipeline_figures_text(const PipelineFigures& figures);

}  // namespace placer
