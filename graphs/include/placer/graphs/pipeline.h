// Pipeline-parallel training: one mini-batch of M micro-batches of a training
// step, run under a schedule (GPipe or 1F1B), gradients accumulated, one update.
//
// make_pipeline_graph() unrolls a training graph into that mini-batch: every
// input, forward and backward op is copied once per micro-batch (the copies of
// op "x" are "x@mb0" ... "x@mb<M-1>", Op::microbatch = k), params and their
// sgd ops stay single. Each micro-batch but the last adds its gradients of a
// param into one running sum (aten::add.Tensor ops "<sgd>@mb<k>/acc<j>",
// beside the param, part of micro-batch k), so a param's gradients take one
// buffer, not M; the sgd op sums that and the last micro-batch's gradients
// and steps by lr / M. For a loss that is a mean over the batch, one
// pipelined mini-batch then equals one plain step on the whole batch (M x the
// micro-batch).
//
// The schedule is two rules that the simulator and the runtime's executor both
// follow (they run the ready op of lowest id first on each device):
// - the op order of the unrolled graph is the priority: every micro-batch's
//   forward ops before any backward op (F0 F1 .. B0 B1 ..), so a device runs
//   a forward it may run before a backward, the older micro-batch first;
// - 1F1B also bounds the micro-batches in flight per device: a device admits
//   micro-batches in order, at most h + 1 at a time, where h is its height:
//   the most device changes on a path of forward stage ops (is_stage_op) from
//   one of its ops to the loss. On S contiguous stages, stage s has height
//   S - s - 1; a device holding stages A B A B of two devices has heights 3
//   and 2, as many stages lie between its forwards and its backwards. A
//   device with no stage op, holding only inputs or a param's gradient sums,
//   is not bounded. Inputs are not gated. A
//   micro-batch is in flight on a device from its first gated op there until
//   its last op there ends. MicrobatchGate keeps that count; a device passes over
//   the ops it may not run yet to the first it may.
// With the bound, "forward first" gives 1F1B's order on stage s: S - s - 1
// warm-up forwards, then F(k + S - s - 1) before B(k), then the cool-down
// backwards (PipeDream-Flush, torch.distributed.pipelining's Schedule1F1B).
// Without it, it is GPipe: all M forwards, then the backwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placer/graphs/ids.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer {

// What a placement is judged by: one training step (default), or one
// pipelined mini-batch of `microbatches` micro-batches.
enum class Objective : uint8_t { Step, Pipeline };
const char* objective_name(Objective objective);  // "step", "pipeline"
std::optional<Objective> parse_objective(std::string_view name);

enum class PipelineSchedule : uint8_t { GPipe, OneFOneB };
const char* schedule_name(PipelineSchedule schedule);  // "gpipe", "1f1b"
std::optional<PipelineSchedule> parse_schedule(std::string_view name);

struct PipelineSpec {
  int microbatches = 4;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  bool operator==(const PipelineSpec& o) const { return microbatches == o.microbatches && schedule == o.schedule; }
};

// Graph::attrs keys of an unrolled graph (so a saved one runs under its
// schedule in every tool).
inline constexpr const char* kAttrMicrobatches = "pipeline.microbatches";
inline constexpr const char* kAttrSchedule = "pipeline.schedule";

// The unrolled mini-batch and how it maps back to the training graph.
struct PipelineGraph {
  Graph graph;
  PipelineSpec spec;
  std::vector<OpId> base_op;  // per op of `graph`: the training-graph op it copies

  // The placement of the unrolled graph that puts every copy where the
  // training graph's placement puts its op.
  Placement expand(const Placement& base) const;
};

// Throws GraphError: not a training graph, microbatches < 1 or > 1024, an op
// name taken by a copy's name.
PipelineGraph make_pipeline_graph(const Graph& training, const PipelineSpec& spec);

// The spec an unrolled graph was made with (from its attrs); nullopt for a
// graph that is not one. Throws GraphError for attrs that are not a schedule
// and a whole number of micro-batches in [1, 1024].
std::optional<PipelineSpec> pipeline_spec_of(const Graph& graph);

// The ops that make the stages: forward ops that are neither a param nor an
// input (a loss's label input, placed with the loss, does not make the last
// stage's device a first stage).
bool is_stage_op(const Op& op);

// 1F1B's admission rule for one placement of an unrolled graph (see above).
// GPipe admits everything. Calls about different devices' ops may come from
// different threads (the executor's device workers); calls about one device's
// ops must not overlap.
class MicrobatchGate {
 public:
  MicrobatchGate() = default;  // admits everything
  // device_of: per op of `graph`, its device (index < devices).
  MicrobatchGate(const Graph& graph, const std::vector<DeviceId>& device_of, int32_t devices);

  bool active() const { return !cap_.empty(); }
  // Whether op may start now on its device.
  bool admits(int32_t op) const;
  // Call when op starts and when it ends on its device.
  void started(int32_t op);
  void finished(int32_t op);
  // Back to the start of a mini-batch.
  void reset();

  int32_t cap(int32_t device) const { return cap_.empty() ? 0 : cap_[device]; }

 private:
  void skip_empty(int32_t device);  // next_[device]: past micro-batches with no ops there

  std::vector<int32_t> device_;      // per op
  std::vector<int32_t> microbatch_;  // per op (-1: shared)
  std::vector<int32_t> cap_;         // per device: micro-batches in flight at most
  std::vector<int32_t> ops_of_mb_;   // [device * M + mb]: ops of mb on device
  int32_t microbatches_ = 0;
  // Per device: the next micro-batch to admit, how many are in flight, ops left per admitted mb.
  std::vector<int32_t> next_;
  std::vector<int32_t> in_flight_;
  std::vector<int32_t> left_;  // [device * M + mb]
};

}  // namespace placer
