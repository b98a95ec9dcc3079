// The request's objective (step or pipeline, graphs/pipeline.h) where the
// service uses it: the environments it builds, the size of a pipelined
// problem, the fields of its replies (internal to service/).
#pragma once

#include "json_out.h"
#include "placer/env/environment.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/service/config.h"
#include "placer/service/protocol.h"

namespace placer::service {

// Sets the request's objective and micro-batch schedule in `settings`.
void apply_objective(const Request& request, RewardSettings& settings);

// Simulated, one thread (the worker pool is the parallelism), judged by the
// request's objective.
EnvOptions simulated_env(const Request& request);

// too_large at `microbatches` when the pipelined mini-batch (the graph's ops
// once per micro-batch) would have more than config.max_ops operators;
// bad_request at `graph.forward_only` (or `objective`) for a graph with no
// backward and update ops, which cannot be pipelined.
void check_pipeline_size(const Request& request, const Graph& graph, const ServiceConfig& config);

// "status" and "step_s" (null and "message" when it failed); measured: the
// median's 95% interval ("ci_low_s", "ci_high_s"), "steps" and why it stopped ("stop").
void write_step(JsonOut& o, const StepResult& r);

// "objective", and with a pipeline "microbatches" and "schedule".
void write_objective(JsonOut& o, Objective objective, const PipelineSpec& pipeline);

// Under a pipeline objective, "pipeline": the result's figures beyond its
// time (env/pipeline_objective.h: microbatches, schedule, minibatch_s,
// per_microbatch_s, bubble_fraction, devices_used).
void write_pipeline_figures(JsonOut& o, const Request& request, const StepResult& result);

}  // namespace placer::service
