// dp under the pipeline objective (internal to agent/src): contiguous stages
// of a training graph's forward ops in op-id order, one device per stage,
// minimizing an analytical mini-batch time of M micro-batches.
//
// Units: the forward ops other than params and inputs, in op-id order, are
// the linear order; a param or input goes with its first consumer, a
// backward or update op with its forward (or param) op. Ops that must share
// a device (Op::group) force every unit between them into one; past
// max_units, neighbouring units merge into chunks of about equal work.
//
// The cost of stages s = 0..S-1 (units [i_s, i_{s+1}) on device d_s):
//   w_s    = forward + backward seconds of one micro-batch on d_s
//   a_s    = (M > 1) its params' gradient accumulation after each further micro-batch,
//            priced as their update (an add reads two tensors and writes one)
//   cf_s   = the forward tensors crossing cut i_s (made before it, read at or
//            after it), over the link d_{s-1} -> d_s, per tensor alpha + bytes/beta
//   cb_s   = the gradients crossing it back, over d_s -> d_{s-1}: those of
//            the activations, and each backward op's gradient of a param of
//            an earlier stage (cf_0 = cb_0 = 0)
//   sum    = sum_s (w_s + cf_s + cb_s) + tail: one micro-batch through the
//            pipeline and back, then the updates: stage s starts its own when its
//            last backward ends, sum_{t<s} (b_t + cb_{t+1}) before stage 0's
//            (b_t the backward part of w_t), so tail = max_s (u_s - that)
//   B      = max_s max(w_s + a_s, cf_s, cb_s, c_s): each further micro-batch waits
//            for the slowest resource (a device, or a directed link: the
//            simulator's channels overlap compute). Under 1F1B stage s admits
//            k_s = min(M, S - s) micro-batches, so while M > S - s it also
//            waits for one to come back: c_s = R_s / (S - s), R_s = the round
//            trip sum_{t>=s} w_t + sum_{t>s} (cf_t + cb_t). GPipe: c_s = 0.
//   T      = sum + (M - 1) * B
// A stage holds params + a gradient buffer (2 x param bytes; 3 x from M = 3
// on, the buffer's next value while an accumulation runs) + its activations
// and the tensors crossing into it for each micro-batch in flight (M under
// GPipe, k_s under 1F1B) + one micro-batch's param gradients (an RNN's
// per-step weight gradients live until their micro-batch's are summed, which
// comes before the next micro-batch's backward), within kMemoryFraction of
// its device. Conservative: every
// forward output counts as kept for the backward.
// (A tensor that skips a stage is counted at every cut it crosses, over the
// neighbouring stages' link: the price of a DP state without the next cut.)
//
// The DP runs from the last unit backwards over (units covered, devices
// used, the first covered stage's device) with Pareto sets of (sum so far,
// B so far); the sum so far is R_s, so 1F1B's c_s needs no more state. It is
// exact for that cost over every contiguous split and every order of
// distinct devices (up to kMaxPipelineDpExpansions; past them, over the
// orders that follow device index). Devices with equal op costs and memory are taken in
// index order (interchangeable when the links are alike, as in the presets).
// 1F1B runs one DP per stage count S (k_s depends on it).
#pragma once

#include <cstdint>
#include <limits>
#include <algorithm>
#include <string>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/graphs/pipeline.h"
#include "placers_common.h"

namespace placer {

struct PipelineUnits {
  int32_t count = 0;
  int32_t devices = 0;
  std::vector<int32_t> unit_of_op;       // per op of the graph
  std::vector<std::string> first, last;  // per unit: its first and last forward op's name
  std::vector<double> fwd, bwd, upd;     // [unit * devices + device] seconds per micro-batch (upd: once)
  std::vector<int64_t> param_bytes;      // per unit
  std::vector<int64_t> act_bytes;        // per unit, per micro-batch
  std::vector<int64_t> grad_bytes;       // per unit, per micro-batch: its backward ops' param gradients
  std::vector<int64_t> cross_bytes;      // per cut i (between units i - 1 and i), 0..count
  std::vector<int32_t> cross_count;      // tensors crossing it
  std::vector<int64_t> back_bytes;       // per cut: gradients crossing it back
  std::vector<int32_t> back_count;
};

// Throws NoFeasiblePlacement for a graph with no forward op to split.
PipelineUnits make_pipeline_units(const Graph& graph, const CostModel& costs, int32_t max_units);

struct PipelineDpStage {
  int32_t begin = 0, end = 0;  // units [begin, end)
  int32_t device = 0;
};

struct PipelineSplitCost {
  bool fits = false;
  double total_s = 0.0;       // T
  double sum_s = 0.0;         // one micro-batch through and back, with the updates' tail
  double bottleneck_s = 0.0;  // the slowest device or link per micro-batch
  std::string overflow;       // when !fits: which stage and by how much
};

class PipelineCost {
 public:
  PipelineCost(const PipelineUnits& units, const CostModel& costs, std::vector<int64_t> capacity, PipelineSpec spec);

  struct Terms {
    double work = 0.0;                      // w
    double backward = 0.0;                  // its backward part
    double accumulate = 0.0;                // its params' gradient accumulation, once per micro-batch after the first
    double comm_fwd = 0.0, comm_bwd = 0.0;  // at the stage's end cut, to the next stage's device
    double update = 0.0;                    // its updates
    int64_t memory = 0;
  };
  // Stage s of S (S = 0 under GPipe: any) covering units [i, j) on device d,
  // followed by a stage on device next (-1: none).
  Terms stage(int32_t i, int32_t j, int32_t d, int32_t next, int32_t s, int32_t S) const;
  // c_s for a round trip R_s (0 unless 1F1B caps stage s below M).
  double cycle_share(double round_trip, int32_t s, int32_t S) const;
  bool fits(const Terms& t, int32_t d) const { return t.memory <= capacity_[d]; }
  // The stages from s on, as a stage's terms add to those after it (SplitSearch's labels and evaluate alike):
  // the round trip's sum, the bottleneck's share (with the accumulation and 1F1B's cycle share) and the
  // tail of updates after the first stage's last backward.
  struct Partial {
    double sum = 0.0, max = 0.0, tail = -std::numeric_limits<double>::infinity();
  };
  Partial prepend(const Partial& after, const Terms& t, int32_t s, int32_t S) const {
    Partial p;
    p.sum = after.sum + t.work + t.comm_fwd + t.comm_bwd;
    p.max = std::max({after.max, t.work + t.accumulate, t.comm_fwd, t.comm_bwd, cycle_share(p.sum, s, S)});
    p.tail = std::max(t.update, after.tail - t.backward - t.comm_bwd);
    return p;
  }
  PipelineSplitCost evaluate(const std::vector<PipelineDpStage>& stages) const;

  const PipelineUnits& units() const { return units_; }
  const PipelineSpec& spec() const { return spec_; }
  int64_t capacity(int32_t d) const { return capacity_[d]; }
  // Per device: the index of the first device with the same op costs and memory.
  const std::vector<int32_t>& device_class() const { return class_; }

 private:
  const PipelineUnits& units_;
  const CostModel& costs_;
  std::vector<int64_t> capacity_;
  PipelineSpec spec_;
  std::vector<std::vector<double>> pre_fwd_, pre_bwd_, pre_upd_;  // [device][unit + 1] prefix sums
  std::vector<int64_t> pre_param_, pre_act_, pre_grad_;
  std::vector<int32_t> class_;
};

struct PipelineDpResult {
  std::vector<PipelineDpStage> stages;
  PipelineSplitCost cost;
  int64_t labels = 0;    // Pareto labels kept
  bool ordered = false;  // past kMaxPipelineDpExpansions: devices in index order
  bool stopped = false;  // the context's stop ended the search: its best so far
  double relaxed = 1.0;  // place_pipeline_dp: the memory budget's scale when none fit it (the simulator fit this)
};

// A set of devices used is a 64-bit mask.
inline constexpr int32_t kMaxPipelineDpDevices = 64;
// The exact search's stage expansions: states (unit boundaries x sets of
// devices used, alike devices counted, x the next stage's device) x devices x
// units. Past this (k distinct devices make 2^k sets: 12 of them took minutes
// and gigabytes), stages take devices in index order, a subsequence of them
// (of alike devices, the nearest below the next stage's): states (boundary,
// count used, next).
inline constexpr double kMaxPipelineDpExpansions = 5e6;

// The optimum of the cost over contiguous splits (past kMaxPipelineDpExpansions,
// over those whose devices follow index order); throws NoFeasiblePlacement
// when no split fits memory, for more than kMaxPipelineDpDevices devices, and
// when `stop` (stop_requested) ends it before any split is complete; else a
// stop ends it with its best split so far.
PipelineDpResult solve_pipeline_dp(const PipelineCost& cost, const PlaceContext* stop = nullptr);

// Per op of the graph: its stage's device.
std::vector<int32_t> pipeline_op_devices(const PipelineUnits& units, const std::vector<PipelineDpStage>& stages);

// dp's answer under Objective::Pipeline (the environment's options give M and the schedule). When no
// split fits the model's memory, the optima at 1.1, 1.25, 1.5 and 2x its budget, the first the
// simulator fits (the model's peaks need not coexist); else NoFeasiblePlacement.
PlaceResult place_pipeline_dp(const PlaceContext& context, Clock::time_point started);

}  // namespace placer
