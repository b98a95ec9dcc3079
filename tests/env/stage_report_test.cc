// The stage report of a pipelined placement: hand-checked on a two-layer mlp
// split over two devices, with the estimate and with a hand-made timeline.
#include <gtest/gtest.h>

#include <map>

#include "placer/env/presets.h"
#include "placer/env/stage_report.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/cluster.h"

namespace placer {
namespace {

// input/features fc0/weight fc0/bias fc0/linear fc0/relu | fc1/weight fc1/bias fc1/linear input/labels
// loss/cross_entropy, then the grads of loss, fc1/linear, fc0/relu, fc0/linear and the four updates.
Graph mlp2() {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"batch", 4}, {"width", 8}};
  return build_graph("mlp", o);
}

// fc0 on `first`, fc1 and the loss on the other device.
Placement by_layer(const Graph& g, int32_t first) {
  Placement p;
  for (const Op& op : g.ops()) p.device_of.push_back(DeviceId(op.layer == "fc0" ? first : 1 - first));
  return p;
}

// Forward ops 1 ms, backward ops 2 ms, updates 0.5 ms, params and inputs free.
CostModel hand_costs(const Graph& g) {
  CostModel c = CostModel::uniform(g.size(), 2, 0.0);
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    const double t = op.phase == Phase::Backward                                  ? 2e-3
                     : op.phase == Phase::Update                                  ? 0.5e-3
                     : op.type == op_types::kParam || op.type == op_types::kInput ? 0.0
                                                                                  : 1e-3;
    for (int32_t d = 0; d < 2; ++d) c.set_op_seconds(OpId(v), DeviceId(d), t);
  }
  return c;
}

TEST(StageReport, EstimateOfTwoStages) {
  const Graph g = mlp2();
  const Cluster c = cluster_preset("k80x2");
  const StageReport r = stage_report(g, by_layer(g, 0), c, hand_costs(g), {4, PipelineSchedule::GPipe});
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_TRUE(r.contiguous);
  EXPECT_FALSE(r.simulated);
  // Each stage: 2 forward ops (2 ms), 2 backward ops (4 ms), 2 updates (1 ms).
  // Mini-batch: 6 + 6 + 3 x 6 + 1 (stage 0's updates) = 31 ms.
  EXPECT_NEAR(r.minibatch_s, 31e-3, 1e-12);
  const ReportedStage& s0 = r.stages[0];
  const ReportedStage& s1 = r.stages[1];
  EXPECT_EQ(s0.device, "cuda:0");
  EXPECT_EQ(s0.forward_ops, 2);
  EXPECT_EQ(s0.first_op, "fc0/linear");
  EXPECT_EQ(s0.last_op, "fc0/relu");
  EXPECT_EQ(s1.first_op, "fc1/linear");
  EXPECT_EQ(s1.last_op, "loss/cross_entropy");
  EXPECT_EQ(s1.last_layer, "loss");
  EXPECT_NEAR(s0.forward_s, 2e-3, 1e-12);
  EXPECT_NEAR(s0.backward_s, 4e-3, 1e-12);
  EXPECT_NEAR(s0.update_s, 1e-3, 1e-12);
  // Both busy 4 x 6 + 1 = 25 ms, idle 6 ms: stage 0 waits between its last forward and the first
  // gradient; stage 1 warms up for stage 0's forward (2 ms) and cools down for its backward (4 ms).
  EXPECT_NEAR(s0.bubble.idle_s, 6e-3, 1e-12);
  EXPECT_NEAR(s0.bubble.warmup_s, 0.0, 1e-12);
  EXPECT_NEAR(s0.bubble.between_s, 6e-3, 1e-12);
  EXPECT_NEAR(s1.bubble.warmup_s, 2e-3, 1e-12);
  EXPECT_NEAR(s1.bubble.cooldown_s, 4e-3, 1e-12);
  EXPECT_NEAR(s1.bubble.between_s, 0.0, 1e-12);
  EXPECT_NEAR(r.bubble_fraction, 12.0 / 62.0, 1e-12);
}

TEST(StageReport, StagesFollowTheFirstOpNotTheDeviceIndex) {
  const Graph g = mlp2();
  const StageReport r =
      stage_report(g, by_layer(g, 1), cluster_preset("k80x2"), hand_costs(g), {4, PipelineSchedule::OneFOneB});
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].device, "cuda:1");
  EXPECT_EQ(r.stages[0].first_op, "fc0/linear");
}

// input/features is op 0: on the last stage's device it must not rank that device first.
TEST(StageReport, AnInputOnTheLastStageDoesNotRankItFirst) {
  const Graph g = mlp2();
  Placement p = by_layer(g, 0);
  p.device_of[g.find("input/features")->value] = DeviceId(1);
  const StageReport r = stage_report(g, p, cluster_preset("k80x2"), hand_costs(g), {4, PipelineSchedule::OneFOneB});
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].device, "cuda:0");
  EXPECT_EQ(r.stages[0].first_op, "fc0/linear");
  EXPECT_EQ(r.stages[1].first_op, "fc1/linear");
}

TEST(StageReport, BubbleFromATimeline) {
  const Graph g = mlp2();
  // Two micro-batches: cuda:0 runs F0 F1 .. B1 B0 U, cuda:1 reads its labels, then F0 F1 B1 B0 U;
  // a transfer between.
  const std::vector<TimelineEvent> timeline = {{"fc0/linear@mb0", "cuda:0", 0.0, 1.0, "forward"},
                                               {"fc0/linear@mb1", "cuda:0", 1.0, 1.0, "forward"},
                                               {"fc0/linear/grad@mb1", "cuda:0", 6.0, 2.0, "backward"},
                                               {"fc0/linear/grad@mb0", "cuda:0", 8.0, 2.0, "backward"},
                                               {"fc0/weight/update", "cuda:0", 10.0, 1.0, "update"},
                                               {"fc0/relu@mb0 -> cuda:1", "cuda:0->cuda:1", 1.0, 0.5, "transfer"},
                                               {"input/labels@mb0", "cuda:1", 0.0, 0.5, "forward"},
                                               {"fc1/linear@mb0", "cuda:1", 1.5, 1.0, "forward"},
                                               {"fc1/linear@mb1", "cuda:1", 2.5, 1.0, "forward"},
                                               {"fc1/linear/grad@mb1", "cuda:1", 3.5, 2.0, "backward"},
                                               {"fc1/linear/grad@mb0", "cuda:1", 5.5, 2.0, "backward"},
                                               {"fc1/weight/update", "cuda:1", 7.5, 0.5, "update"}};
  const StageReport r = stage_report(g, by_layer(g, 0), cluster_preset("k80x2"), hand_costs(g),
                                     {2, PipelineSchedule::OneFOneB}, &timeline);
  EXPECT_TRUE(r.simulated);
  EXPECT_DOUBLE_EQ(r.minibatch_s, 11.0);
  const StageBubble& b0 = r.stages[0].bubble;
  const StageBubble& b1 = r.stages[1].bubble;
  EXPECT_DOUBLE_EQ(r.stages[0].busy_s, 7.0);
  EXPECT_DOUBLE_EQ(b0.idle_s, 4.0);
  EXPECT_DOUBLE_EQ(b0.warmup_s, 0.0);
  EXPECT_DOUBLE_EQ(b0.cooldown_s, 0.0);  // its update follows its last backward at once
  EXPECT_DOUBLE_EQ(b0.between_s, 4.0);
  EXPECT_DOUBLE_EQ(r.stages[1].busy_s, 7.0);
  EXPECT_DOUBLE_EQ(b1.idle_s, 4.0);
  EXPECT_DOUBLE_EQ(b1.warmup_s, 1.0);    // 0 .. 1.5 less reading its labels
  EXPECT_DOUBLE_EQ(b1.cooldown_s, 3.0);  // 7.5 .. 11 less its 0.5 update
  EXPECT_DOUBLE_EQ(b1.between_s, 0.0);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 8.0 / 22.0);
}

// Two CPU devices of one host make their copies themselves (lane "src->dst", category transfer, on the
// destination): that is the destination's busy time, not its bubble. A channel's copy (k80x2) is no device's.
TEST(StageReport, ACopyMadeOnItsDestinationIsThatDevicesBusyTime) {
  const Graph g = mlp2();
  CostModel costs = hand_costs(g);
  costs.set_contention_group({DeviceId(0), DeviceId(1)});
  const std::vector<TimelineEvent> timeline = {{"fc0/linear@mb0", "cpu:0", 0.0, 1.0, "forward"},
                                               {"fc0/linear@mb1", "cpu:0", 1.0, 1.0, "forward"},
                                               {"cpu:1->cpu:0 fc1/linear/grad:0", "cpu:1->cpu:0", 5.5, 0.5, "transfer"},
                                               {"fc0/linear/grad@mb1", "cpu:0", 6.0, 2.0, "backward"},
                                               {"fc0/linear/grad@mb0", "cpu:0", 8.0, 2.0, "backward"},
                                               {"fc0/weight/update", "cpu:0", 10.0, 1.0, "update"},
                                               {"cpu:0->cpu:1 fc0/relu:0", "cpu:0->cpu:1", 1.0, 0.5, "transfer"},
                                               {"input/labels@mb0", "cpu:1", 0.0, 0.5, "forward"},
                                               {"fc1/linear@mb0", "cpu:1", 1.5, 1.0, "forward"},
                                               {"fc1/linear@mb1", "cpu:1", 2.5, 1.0, "forward"},
                                               {"fc1/linear/grad@mb1", "cpu:1", 3.5, 2.0, "backward"},
                                               {"fc1/linear/grad@mb0", "cpu:1", 5.5, 2.0, "backward"},
                                               {"fc1/weight/update", "cpu:1", 7.5, 0.5, "update"}};
  const StageReport r =
      stage_report(g, by_layer(g, 0), parse_device_list("cpu:2"), costs, {2, PipelineSchedule::OneFOneB}, &timeline);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(r.stages[0].busy_s, 7.5);
  EXPECT_DOUBLE_EQ(r.stages[0].bubble.idle_s, 3.5);
  EXPECT_DOUBLE_EQ(r.stages[0].bubble.between_s, 3.5);
  EXPECT_DOUBLE_EQ(r.stages[1].busy_s, 7.5);
  EXPECT_DOUBLE_EQ(r.stages[1].bubble.idle_s, 3.5);
  EXPECT_DOUBLE_EQ(r.stages[1].bubble.warmup_s, 0.5);  // 0 .. 1.5 less its labels and the copy of fc0/relu
  EXPECT_DOUBLE_EQ(r.stages[1].bubble.cooldown_s, 3.0);
  // Without the group the copies ran on the link's channel: the devices idled through them.
  const StageReport apart = stage_report(g, by_layer(g, 0), parse_device_list("cpu:2"), hand_costs(g),
                                         {2, PipelineSchedule::OneFOneB}, &timeline);
  EXPECT_DOUBLE_EQ(apart.stages[0].busy_s, 7.0);
  EXPECT_DOUBLE_EQ(apart.stages[1].busy_s, 7.0);
}

// x (input), w (param), y = x w, its gradient without a forward link, w's update.
Graph backward_apart() {
  Graph g;
  g.name = "apart";
  auto add = [&g](const char* name, const char* type, Phase phase, std::vector<TensorRef> inputs) {
    Op op;
    op.name = name;
    op.type = type;
    op.phase = phase;
    op.inputs = std::move(inputs);
    op.outputs.push_back(TensorSpec{{4}, DType::Float32});
    return g.add_op(std::move(op));
  };
  const OpId x = add("x", op_types::kInput, Phase::Forward, {});
  const OpId w = add("w", op_types::kParam, Phase::Forward, {});
  const OpId y = add("y", "aten::mul.Tensor", Phase::Forward, {{x, 0}, {w, 0}});
  const OpId dy = add("y/grad", "placer::backward", Phase::Backward, {{y, 0}});
  add("w/update", op_types::kSgd, Phase::Update, {{w, 0}, {dy, 0}});
  return g;
}

// A device that runs backward ops only warms up until its first one: its warm-up, between and cool-down
// add up to its idle time (the tail after its last backward op was counted twice).
TEST(StageReport, ABackwardOnlyDevicesBubbleAddsUp) {
  const Graph g = backward_apart();
  Placement p;
  for (const Op& op : g.ops()) p.device_of.push_back(DeviceId(op.phase == Phase::Backward ? 1 : 0));
  const std::vector<TimelineEvent> timeline = {{"y@mb0", "cpu:0", 0.0, 1.0, "forward"},
                                               {"y/grad@mb0", "cpu:1", 8.0, 2.0, "backward"},
                                               {"w/update", "cpu:0", 10.0, 1.0, "update"}};
  const StageReport r = stage_report(g, p, parse_device_list("cpu:2"), CostModel::uniform(g.size(), 2, 1e-3),
                                     {1, PipelineSchedule::GPipe}, &timeline);
  ASSERT_EQ(r.stages.size(), 2u);
  for (const ReportedStage& s : r.stages) {
    const StageBubble& b = s.bubble;
    EXPECT_NEAR(b.warmup_s + b.between_s + b.cooldown_s, b.idle_s, 1e-12) << s.device;
  }
  const StageBubble& b1 = r.stages[1].bubble;
  EXPECT_EQ(r.stages[1].device, "cpu:1");
  EXPECT_DOUBLE_EQ(b1.idle_s, 9.0);
  EXPECT_DOUBLE_EQ(b1.warmup_s, 8.0);
  EXPECT_DOUBLE_EQ(b1.cooldown_s, 1.0);
}

// The estimate's mini-batch waits for the stage whose updates end last: stage s's last backward ends
// sum + (M - 1) slowest - sum_{t<s} b_t in, then it updates. Params run once per mini-batch: not forward_s.
TEST(StageReport, EstimateEndsWithTheLastStagesUpdates) {
  const Graph g = mlp2();
  const Placement p = by_layer(g, 0);
  // Per stage f = b = 1 (split over its ops of the phase), updates u0 = 0, u1 = 3, params 1 each.
  std::vector<std::map<int, int>> count(2);
  for (int32_t v = 0; v < g.size(); ++v)
    if (g.op(OpId(v)).type != op_types::kParam) ++count[p.device_of[v].value][static_cast<int>(g.op(OpId(v)).phase)];
  CostModel costs = CostModel::uniform(g.size(), 2, 0.0);
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    const int32_t d = p.device_of[v].value;
    const double total = op.phase == Phase::Update ? (d == 0 ? 0.0 : 3.0) : 1.0;
    const double t = op.type == op_types::kParam ? 1.0 : total / count[d][static_cast<int>(op.phase)];
    for (int32_t e = 0; e < 2; ++e) costs.set_op_seconds(OpId(v), DeviceId(e), t);
  }
  const StageReport r = stage_report(g, p, cluster_preset("k80x2"), costs, {2, PipelineSchedule::GPipe});
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_NEAR(r.stages[0].forward_s, 1.0, 1e-12);
  EXPECT_NEAR(r.stages[1].forward_s, 1.0, 1e-12);
  EXPECT_NEAR(r.stages[1].update_s, 3.0, 1e-12);
  EXPECT_NEAR(r.minibatch_s, 8.0, 1e-12);
  for (const ReportedStage& s : r.stages) {
    const StageBubble& b = s.bubble;
    EXPECT_NEAR(b.warmup_s + b.between_s + b.cooldown_s, b.idle_s, 1e-12) << s.device;
  }
}
// A stage's warm-up ends at its first op that reads the model (a param, or an op that does): an op fed by
// inputs alone (rnnlm's targets unbound for the loss) runs at the start and ended the last stage's warm-up
// at 0.
TEST(StageReport, WarmUpEndsAtTheFirstOpThatReadsTheModel) {
  BuilderOptions o;
  o.values = {{"batch", 4}, {"hidden", 32}, {"layers", 2}, {"steps", 4}, {"vocab", 100}};
  const Graph g = build_graph("rnnlm", o);
  ASSERT_TRUE(g.find("softmax/targets").has_value());
  Placement p;
  for (const Op& op : g.ops())
    p.device_of.push_back(DeviceId(op.layer.rfind("softmax", 0) == 0 || op.layer.rfind("loss", 0) == 0 ? 1 : 0));
  const std::vector<TimelineEvent> timeline = {{"softmax/targets@mb0", "cuda:1", 0.0, 0.5, "forward"},
                                               {"embedding/tokens_lookup@mb0", "cuda:0", 0.0, 1.0, "forward"},
                                               {"softmax/t0/logits@mb0", "cuda:1", 3.0, 1.0, "forward"},
                                               {"softmax/t0/logits/grad@mb0", "cuda:1", 4.0, 2.0, "backward"}};
  for (const TimelineEvent& e : timeline) {
    const std::string base = e.name.substr(0, e.name.rfind("@mb"));
    if (e.category == "backward") continue;  // made by the training step
    ASSERT_TRUE(g.find(base).has_value()) << base;
  }
  const StageReport r = stage_report(g, p, cluster_preset("k80x2"), CostModel::uniform(g.size(), 2, 1e-3),
                                     {2, PipelineSchedule::OneFOneB}, &timeline);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(r.stages[1].bubble.warmup_s, 2.5);  // 0 .. 3 less the 0.5 of unbinding its targets
}

TEST(StageReport, SaysWhenNotContiguous) {
  const Graph g = mlp2();
  Placement p = by_layer(g, 0);
  p.device_of[g.find("fc0/relu")->value] = DeviceId(1);  // fc0/linear | fc0/relu | fc1/linear ...
  p.device_of[g.find("fc0/relu/grad")->value] = DeviceId(1);
  p.device_of[g.find("fc1/linear")->value] = DeviceId(0);
  p.device_of[g.find("fc1/linear/grad")->value] = DeviceId(0);
  const StageReport r = stage_report(g, p, cluster_preset("k80x2"), hand_costs(g), {4, PipelineSchedule::GPipe});
  EXPECT_FALSE(r.contiguous);
  EXPECT_EQ(r.stages[0].runs, 2);
  EXPECT_NE(stage_report_text(r).find("NOT contiguous"), std::string::npos);
}

TEST(StageReport, TextAndJson) {
  const Graph g = mlp2();
  const StageReport r =
      stage_report(g, by_layer(g, 0), cluster_preset("k80x2"), hand_costs(g), {4, PipelineSchedule::GPipe});
  const std::string text = stage_report_text(r);
  EXPECT_NE(text.find("pipeline: gpipe, 4 micro-batches, mini-batch 31.000 ms (estimated"), std::string::npos) << text;
  EXPECT_NE(text.find("fc1/linear .. loss/cross_entropy [fc1 .. loss]"), std::string::npos) << text;
  JsonWriter w;
  w.begin();
  write_stage_report(w, "pipeline", r);
  w.end();
  const std::string json = w.text();
  EXPECT_NE(json.find("\"schedule\":\"gpipe\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"first_op\":\"fc0/linear\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"between_s\":0.006"), std::string::npos) << json;
}

TEST(StageReport, RejectsAPlacementOfAnotherGraph) {
  const Graph g = mlp2();
  Placement p = by_layer(g, 0);
  p.device_of.pop_back();
  EXPECT_ANY_THROW(stage_report(g, p, cluster_preset("k80x2"), hand_costs(g), {4, PipelineSchedule::GPipe}));
}

}  // namespace
}  // namespace placer
