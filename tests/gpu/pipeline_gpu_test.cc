// The GPU twin of tests/runtime/pipeline_equality_test.cc and
// pipeline_executor_test.cc: a pipelined mini-batch split over cpu:0 and
// cuda:0 runs through the same executor (1F1B's gate included) and updates the
// parameters as one plain step on the whole batch on cuda:0. CTest label
// `gpu`: without a GPU every case skips.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../runtime/pipeline_helpers.h"
#include "../runtime/runtime_helpers.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/pipeline.h"
#include "placer/runtime/runtime.h"

namespace placer {
namespace {

using namespace rt_test;

constexpr double kTolerance = 1e-5;

TEST(GpuPipeline, MiniBatchOverCpuAndGpuUpdatesAsOnePlainStep) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU visible here";
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  const int M = 4;
  for (const std::string name : {"mlp", "rnnlm", "transformer"}) {
    const Graph plain = pipeline_builder(name, 8), micro = pipeline_builder(name, 8 / M);
    for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      const PipelineGraph piped = make_pipeline_graph(micro, {M, s});
      const PipelineFeeds feeds = pipeline_feeds(plain, micro, piped, 17);
      const StepValues want = rt.run_once(plain, single_device(plain, DeviceId(1)), 0, &feeds.plain);
      ASSERT_EQ(want.status, StepStatus::Ok) << want.message;
      for (const Placement& base :
           {stages_of(micro, 2), swap_devices(stages_of(micro, 2)), random_placement(micro, 2, 7)}) {
        const StepValues got = rt.run_once(piped.graph, piped.expand(base), 0, &feeds.piped);
        ASSERT_EQ(got.status, StepStatus::Ok) << got.message;
        const ParamDiff d = compare_params(feeds, want, got);
        EXPECT_LE(d.worst, kTolerance) << name << " " << schedule_name(s) << ": " << d.worst_param;
        EXPECT_GT(d.largest_update, 100 * kTolerance) << name;
      }
    }
  }
}

TEST(GpuPipeline, MeasureCompletesUnderBothSchedules) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU visible here";
  BuilderOptions o;
  o.values = {{"batch", 64}, {"input", 32}, {"width", 32}, {"classes", 8}, {"layers", 6}};
  const Graph g = build_graph("mlp", o);
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  MeasureOptions m;
  m.warmup_steps = 1;
  m.measured_steps = 3;
  m.max_steps = 3;
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    const PipelineGraph p = make_pipeline_graph(g, {4, s});
    const StepResult r = rt.measure(p.graph, p.expand(stages_of(g, 2)), m);
    ASSERT_TRUE(r.ok()) << schedule_name(s) << ": " << r.message;
    EXPECT_EQ(r.samples_s.size(), 3u);
    EXPECT_GT(r.devices[1].busy_s, 0.0);
  }
}

}  // namespace
}  // namespace placer
