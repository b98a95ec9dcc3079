// Review 8, stage report: a device holding only params and update ops (updates, accumulations)
// is a row ("no stage"), and the bubble is over the same devices as the pipeline figures'.
#include <gtest/gtest.h>

#include "placer/env/environment.h"
#include "placer/env/evaluator.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/env/stage_report.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/cluster.h"

namespace placer {
namespace {

// fc0 on device 0, fc1 and the loss on device 1, fc1's params and their updates on device 2.
Placement updates_apart(const Graph& g) {
  Placement p;
  for (const Op& op : g.ops()) {
    const bool fc1_state = op.layer == "fc1" && (op.type == op_types::kParam || op.phase == Phase::Update);
    p.device_of.push_back(DeviceId(fc1_state ? 2 : op.layer == "fc0" ? 0 : 1));
  }
  return p;
}

// Forward ops 1 ms, backward ops 2 ms, updates 0.5 ms, params and inputs free.
CostModel hand_costs(const Graph& g, int32_t devices) {
  CostModel c = CostModel::uniform(g.size(), devices, 0.0);
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    const double t = op.phase == Phase::Backward                                  ? 2e-3
                     : op.phase == Phase::Update                                  ? 0.5e-3
                     : op.type == op_types::kParam || op.type == op_types::kInput ? 0.0
                                                                                  : 1e-3;
    for (int32_t d = 0; d < devices; ++d) c.set_op_seconds(OpId(v), DeviceId(d), t);
  }
  return c;
}

TEST(Review8StageReport, ADeviceOfParamsAndUpdatesOnlyIsARowWithNoStage) {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"batch", 4}, {"width", 8}};
  const Graph g = build_graph("mlp", o);
  const StageReport r =
      stage_report(g, updates_apart(g), parse_device_list("cpu:3"), hand_costs(g, 3), {4, PipelineSchedule::GPipe});
  ASSERT_EQ(r.stages.size(), 3u);
  const ReportedStage& extra = r.stages[2];
  EXPECT_EQ(extra.device, "cpu:2");
  EXPECT_EQ(extra.stage, -1);
  EXPECT_EQ(extra.forward_ops, 0);
  EXPECT_NEAR(extra.update_s, 1e-3, 1e-12);  // fc1's two updates
  EXPECT_NEAR(extra.busy_s, 1e-3, 1e-12);
  EXPECT_NEAR(extra.bubble.idle_s, r.minibatch_s - 1e-3, 1e-12);
  double idle = 0.0;
  for (const ReportedStage& s : r.stages) idle += s.bubble.idle_s;
  EXPECT_NEAR(r.bubble_fraction, idle / (3 * r.minibatch_s), 1e-12);
  const std::string text = stage_report_text(r);
  EXPECT_NE(text.find("\n-     cpu:2"), std::string::npos) << text;
  EXPECT_NE(text.find("(no stage: params and updates only)"), std::string::npos) << text;
}

// The reviewer's case: round_robin's mlp8 on k80x4 leaves cuda:2 with params and updates only
// ("bubble 86.1% (4 devices used)" over a table of 3 stages at 81.5%).
TEST(Review8StageReport, BubbleOverTheDevicesThePipelineFiguresCount) {
  BuilderOptions bo;
  bo.values = {{"layers", 8}, {"batch", 256}, {"width", 1024}};
  const Graph g = build_graph("mlp", bo);
  const Cluster c = cluster_preset("k80x4");
  EnvOptions eo;
  eo.objective = Objective::Pipeline;
  eo.pipeline = {4, PipelineSchedule::OneFOneB};
  Environment env(g, c, eo);
  Placement p;
  for (int32_t v = 0; v < g.size(); ++v) {  // forward ops in turn, the rest with their forward op
    const Op& op = g.op(OpId(v));
    p.device_of.push_back(op.phase == Phase::Forward ? DeviceId(v % 4) : p.device_of[op.forward.value]);
  }
  const PreparedProblem& run = *env.evaluated_problem();
  std::vector<TimelineEvent> timeline;
  const StepResult sim = simulate(run.context(), run.expand(p), run.cluster(), run.base_costs(), {}, &timeline);
  ASSERT_TRUE(sim.ok()) << sim.message;
  const PipelineFigures f = pipeline_figures(sim, eo.pipeline);
  const StageReport r = stage_report(g, p, c, *env.costs(), eo.pipeline, &timeline);
  EXPECT_EQ(r.stages.back().stage, -1);  // a device of params and updates only
  EXPECT_EQ(static_cast<int32_t>(r.stages.size()), f.devices_used);
  EXPECT_NEAR(r.bubble_fraction, f.bubble_fraction, 1e-9);
}

}  // namespace
}  // namespace placer
