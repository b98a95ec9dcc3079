// The stages of a pipelined placement, for reports: which ops each device
// runs, its forward and backward time per micro-batch, and its bubble (idle
// time within the mini-batch: warm-up before its first forward op other
// than a param or input, cool-down after its last backward op, the rest in
// between).
//
// A device's stage is the rank of its first micro-batch op (anything but a
// param or an update op) among the devices used; on contiguous stages,
// MicrobatchGate (graphs/pipeline.h) bounds stage s by S - s. A device that
// holds only params and update ops (updates, accumulations) has no stage
// (-1): it is listed after the stages, busy and idle like them, and its idle
// time counts in the bubble (over every device used, as the pipeline
// figures' is). The placement
// is contiguous when the
// forward ops other than params and inputs, in op order, visit each device
// in one run.
//
// With the simulated timeline of the unrolled mini-batch (simulate() of
// make_pipeline_graph(base, spec) under PipelineGraph::expand(placement)),
// the bubble is measured from it; without, it is estimated from the cost
// model with transfers left out: the mini-batch takes max_s (sum_t (f_t + b_t)
// + (M - 1) max_t (f_t + b_t) - sum_{t<s} b_t + u_s) (stage s's updates
// follow its last backward op), stage s warms up for sum_{t<s} f_t and cools
// down for sum_{t<s} b_t. In a timeline, a copy made on its destination
// device (two CPU devices of one host; see simulator.h) is that device's busy
// time; a device with no forward op that reads the model warms up until its
// first backward op.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"

namespace placer {

struct StageBubble {
  double idle_s = 0.0;  // = warmup_s + between_s + cooldown_s
  double warmup_s = 0.0;
  double between_s = 0.0;
  double cooldown_s = 0.0;
};

struct ReportedStage {
  int32_t stage = 0;  // -1: no stage (params and update ops only)
  std::string device;
  int64_t ops = 0;                      // every op of the training graph on the device
  int64_t forward_ops = 0;              // forward ops other than params and inputs
  int32_t runs = 0;                     // separate runs of them in op order (1 when contiguous)
  std::string first_op, last_op;        // the first and last of them
  std::string first_layer, last_layer;  // their Op::layer tags ("" if none)
  double forward_s = 0.0;               // per micro-batch, from the cost model (params: in no phase)
  double backward_s = 0.0;              // per micro-batch
  double update_s = 0.0;                // once per mini-batch
  double busy_s = 0.0;                  // within the mini-batch
  StageBubble bubble;
};

struct StageReport {
  PipelineSpec spec;
  bool contiguous = true;
  bool simulated = false;  // the bubble comes from a timeline (else the estimate above)
  double minibatch_s = 0.0;
  double bubble_fraction = 0.0;       // idle time of all rows / (rows x mini-batch)
  std::vector<ReportedStage> stages;  // in stage order, then the devices of no stage
};

// costs: of the training graph `base` (not the unrolled one). timeline: of
// the unrolled mini-batch, lanes named by the cluster's devices; null for the
// estimate. Throws PlacementError when the placement does not fit the graph
// or the cluster.
StageReport stage_report(const Graph& base, const Placement& placement, const Cluster& cluster, const CostModel& costs,
                         const PipelineSpec& spec, const std::vector<TimelineEvent>* timeline = nullptr);

// A few lines: the schedule, the mini-batch, the bubble, then a table of the stages.
std::string stage_report_text(const StageReport& report);

// Writes "key": {schedule, microbatches, contiguous, simulated, minibatch_s,
// bubble_fraction, stages: [...]} into an open object.
void write_stage_report(JsonWriter& writer, std::string_view key, const StageReport& report);

}  // namespace placer
