// The executor runs a pipelined mini-batch under its schedule: measure
// completes under GPipe and 1F1B on cpu:2 and cpu:4, 1F1B keeps at most S - s
// micro-batches in flight on stage s (and so less memory than GPipe on the
// first stage), and a step that fails while the gate holds ops back (out of
// memory, past its time limit) comes back as a status instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "pipeline_helpers.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/pipeline.h"
#include "placer/runtime/runtime.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using namespace rt_test;

// An MLP whose activations outweigh its parameters (batch 256 over 4
// micro-batches of 64, width 32).
Graph activation_heavy_mlp(int64_t batch = 64) {
  BuilderOptions o;
  o.values = {{"batch", batch}, {"input", 32}, {"width", 32}, {"classes", 8}, {"layers", 6}};
  return build_graph("mlp", o);
}

MeasureOptions few_steps() {
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 3;
  o.max_steps = 3;
  return o;
}

// Micro-batch of an op copy "x@mbK" or "x@mbK/accJ"; -1 for a shared op.
int microbatch_of(const std::string& name) {
  const size_t at = name.rfind("@mb");
  return at == std::string::npos ? -1 : std::atoi(name.c_str() + at + 3);
}

// Per micro-batch on `lane`: [first op start, last op end].
std::map<int, std::pair<double, double>> spans_on(const std::vector<TimelineEvent>& events, const std::string& lane) {
  std::map<int, std::pair<double, double>> span;
  for (const TimelineEvent& e : events) {
    const int mb = microbatch_of(e.name);
    // Inputs are not gated (they make a micro-batch's data, and took a stage's slot): the mlp's are input/*.
    if (e.lane != lane || e.category == "transfer" || mb < 0 || e.name.rfind("input/", 0) == 0) continue;
    auto [it, inserted] = span.emplace(mb, std::make_pair(e.start_s, e.start_s + e.duration_s));
    if (!inserted) {
      it->second.first = std::min(it->second.first, e.start_s);
      it->second.second = std::max(it->second.second, e.start_s + e.duration_s);
    }
  }
  return span;
}

// Most micro-batches in flight at once on a lane (from first op start to last op end there).
int most_in_flight(const std::map<int, std::pair<double, double>>& span) {
  int most = 0;
  for (const auto& [mb, s] : span) {
    int n = 0;
    for (const auto& [other, t] : span) n += t.first <= s.first && s.first < t.second;
    most = std::max(most, n);
  }
  return most;
}

TEST(PipelineExecutor, MeasureCompletesUnderBothSchedules) {
  const Graph g = activation_heavy_mlp();
  for (int devices : {2, 4}) {
    Runtime rt(cpus(devices));
    for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      const PipelineGraph p = make_pipeline_graph(g, {4, s});
      for (const Placement& base : {stages_of(g, devices), random_placement(g, devices, 3)}) {
        const StepResult r = rt.measure(p.graph, p.expand(base), few_steps());
        ASSERT_TRUE(r.ok()) << schedule_name(s) << " on cpu:" << devices << ": " << r.message;
        EXPECT_EQ(r.samples_s.size(), 3u);
        EXPECT_GT(r.step_s, 0.0);
      }
    }
  }
}

// 4 stages on cpu:4, 8 micro-batches: stage s has at most 4 - s in flight
// under 1F1B; GPipe runs every forward first, so stage 0 has all 8.
TEST(PipelineExecutor, OneFOneBBoundsMicroBatchesInFlightPerStage) {
  const Graph g = activation_heavy_mlp(32);
  Runtime rt(cpus(4));
  const Placement base = stages_of(g, 4);
  std::map<PipelineSchedule, std::vector<int>> in_flight;
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    const PipelineGraph p = make_pipeline_graph(g, {8, s});
    MeasureOptions o = few_steps();
    std::vector<TimelineEvent> events;
    const StepResult r = rt.measure(p.graph, p.expand(base), o, &events);
    ASSERT_TRUE(r.ok()) << r.message;
    for (int d = 0; d < 4; ++d) {
      const auto span = spans_on(events, "cpu:" + std::to_string(d));
      ASSERT_EQ(span.size(), 8u) << schedule_name(s) << " cpu:" << d;
      in_flight[s].push_back(most_in_flight(span));
    }
  }
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    const std::vector<int>& n = in_flight[s];
    std::printf("%-5s most micro-batches in flight on stages 0..3: %d %d %d %d\n", schedule_name(s), n[0], n[1], n[2],
                n[3]);
  }
  for (int d = 0; d < 4; ++d) {
    EXPECT_LE(in_flight[PipelineSchedule::OneFOneB][d], 4 - d) << "stage " << d;
    EXPECT_GE(in_flight[PipelineSchedule::OneFOneB][d], 1) << "stage " << d;
  }
  EXPECT_EQ(in_flight[PipelineSchedule::GPipe][0], 8);
}

// Stage 0 of two holds 2 micro-batches' activations under 1F1B, all 4 under GPipe.
TEST(PipelineExecutor, OneFOneBPeaksLowerThanGPipeOnTheFirstStage) {
  const Graph g = activation_heavy_mlp(256);
  Runtime rt(cpus(2));
  std::map<PipelineSchedule, int64_t> peak;
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    const PipelineGraph p = make_pipeline_graph(g, {4, s});
    const StepResult r = rt.measure(p.graph, p.expand(stages_of(g, 2)), few_steps());
    ASSERT_TRUE(r.ok()) << r.message;
    peak[s] = r.devices.at(0).peak_bytes;
  }
  std::printf("peak on the first stage: gpipe %lld bytes, 1f1b %lld bytes\n",
              static_cast<long long>(peak[PipelineSchedule::GPipe]),
              static_cast<long long>(peak[PipelineSchedule::OneFOneB]));
  EXPECT_LT(peak[PipelineSchedule::OneFOneB], peak[PipelineSchedule::GPipe]);
}

// Everything on cpu:0 but the loss and its labels on cpu:1 (the last stage,
// one micro-batch at a time), whose memory fits one micro-batch's labels but
// not the logits that arrive: the step fails while both gates hold later
// micro-batches back, and must still end.
TEST(PipelineExecutor, OutOfMemoryUnderOneFOneBIsAStatus) {
  const int M = 4;
  const Graph micro = activation_heavy_mlp(64 / M);
  const OpId loss = *micro.find("loss/cross_entropy");
  const OpId labels = micro.op(loss).inputs.at(1).op;
  Placement base = single_device(micro, DeviceId(0));
  base.device_of[loss.value] = base.device_of[labels.value] = DeviceId(1);
  for (int32_t i = 0; i < micro.size(); ++i)
    if (micro.op(OpId(i)).forward == loss) base.device_of[i] = DeviceId(1);
  Cluster c = cpus(2);
  const int64_t logits = micro.op(micro.op(loss).inputs[0].op).outputs[0].bytes();
  c.devices[1].memory_bytes = micro.op(labels).outputs[0].bytes() + logits - 1;
  Runtime rt(c);
  for (PipelineSchedule s : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe}) {
    const PipelineGraph p = make_pipeline_graph(micro, {M, s});
    const Placement placement = p.expand(base);
    const StepResult r = rt.measure(p.graph, placement, few_steps());
    EXPECT_EQ(r.status, StepStatus::Oom) << schedule_name(s) << ": " << r.message;
    EXPECT_EQ(r.oom_device, "cpu:1") << schedule_name(s);
    const StepValues v = rt.run_once(p.graph, placement, 0);
    EXPECT_EQ(v.status, StepStatus::Oom) << schedule_name(s) << ": " << v.message;
    // The runtime is usable afterwards.
    EXPECT_EQ(rt.run_once(p.graph, single_device(p.graph, DeviceId(0)), 0).status, StepStatus::Ok);
  }
}

TEST(PipelineExecutor, TimeoutUnderOneFOneBIsAStatus) {
  const Graph g = activation_heavy_mlp(1024);
  const PipelineGraph p = make_pipeline_graph(g, {8, PipelineSchedule::OneFOneB});
  Runtime rt(cpus(2));
  MeasureOptions o = few_steps();
  o.timeout_s = 1e-4;
  const StepResult r = rt.measure(p.graph, p.expand(stages_of(g, 2)), o);
  EXPECT_EQ(r.status, StepStatus::Timeout) << r.message;
  o.timeout_s = 120;
  EXPECT_TRUE(rt.measure(p.graph, p.expand(stages_of(g, 2)), o).ok());
}

}  // namespace
}  // namespace placer
