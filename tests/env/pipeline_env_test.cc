// The pipeline objective in the environment: placements of the training graph,
// evaluated as the unrolled mini-batch (env/environment.h, env/pipeline_figures.h).
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline_placements.h"
#include "placer/env/cost_model.h"
#include "placer/env/environment.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"

namespace placer {
namespace {

Graph mlp() { return testing_pipeline::mlp_of(6, 128, 1024); }

using testing_pipeline::stages_of;

// Forward op k on device k % devices (not contiguous); the rest with their forward op.
Placement interleaved(const Graph& g, int devices) {
  Placement p = stages_of(g, 1);
  int32_t k = 0;
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase == Phase::Forward) p.device_of[i] = DeviceId(k++ % devices);
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase != Phase::Forward) p.device_of[i] = p.device_of[g.op(OpId(i)).forward.value];
  return p;
}

// Each param on the device of its first consumer, its update with it (as the
// placers' co-location groups keep them).
Placement params_at_users(const Graph& g, Placement p) {
  std::vector<bool> moved(g.size(), false);
  for (int32_t i = 0; i < g.size(); ++i)
    for (const TensorRef& in : g.op(OpId(i)).inputs)
      if (g.op(in.op).type == op_types::kParam && !moved[in.op.value] && g.op(OpId(i)).type != op_types::kSgd) {
        p.device_of[in.op.value] = p.device_of[i];
        moved[in.op.value] = true;
      }
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).type == op_types::kSgd) p.device_of[i] = p.device_of[g.op(OpId(i)).inputs.at(0).op.value];
  return p;
}

EnvOptions pipeline_options(int microbatches, PipelineSchedule schedule) {
  EnvOptions o;
  o.threads = 1;
  o.objective = Objective::Pipeline;
  o.pipeline = {microbatches, schedule};
  return o;
}

std::vector<Placement> some_placements(const Graph& g) {
  return {single_device(g, DeviceId(0)), stages_of(g, 2), stages_of(g, 4), interleaved(g, 4)};
}

TEST(PipelineEnvironment, EvaluatesTheUnrolledGraphWithTheExpandedPlacement) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    Environment env(g, c, pipeline_options(4, s));
    EXPECT_EQ(env.graph().size(), g.size());  // placers place the training graph
    EXPECT_EQ(env.costs()->ops(), g.size());
    const PipelineGraph p = make_pipeline_graph(g, {4, s});
    const CostModel costs = CostModel::roofline(p.graph, c);
    for (const Placement& placement : some_placements(g)) {
      const StepResult direct = simulate(p.graph, p.expand(placement), c, costs);
      const Evaluation e = env.evaluate(placement);
      EXPECT_EQ(e.result.status, direct.status) << schedule_name(s);
      EXPECT_DOUBLE_EQ(e.result.step_s, direct.step_s) << schedule_name(s);
      EXPECT_DOUBLE_EQ(env.simulate(placement).step_s, direct.step_s) << schedule_name(s);
      ASSERT_EQ(e.result.devices.size(), direct.devices.size());
      for (size_t d = 0; d < direct.devices.size(); ++d)
        EXPECT_EQ(e.result.devices[d].peak_bytes, direct.devices[d].peak_bytes);
    }
    // The cache is keyed by the training graph's placement.
    EXPECT_TRUE(env.evaluate(stages_of(g, 2)).cached);
    EXPECT_EQ(env.evaluated_problem()->graph().size(), p.graph.size());
  }
}

// 1F1B admits micro-batches in order per device: a device holding only params,
// their updates and accumulations (none of micro-batch 0) must still run them.
TEST(PipelineEnvironment, ParamsOnADeviceOfTheirOwnRunUnderOneFOneB) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  Placement p = stages_of(g, 3);
  for (int32_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(OpId(i));
    if (op.type == op_types::kParam || op.type == op_types::kSgd) p.device_of[i] = DeviceId(3);
  }
  Environment env(g, c, pipeline_options(4, PipelineSchedule::OneFOneB));
  const Evaluation e = env.evaluate(p);
  EXPECT_TRUE(e.result.ok()) << e.result.message;
  EXPECT_GT(e.result.devices[3].busy_s, 0.0);  // the accumulations ran there
}

TEST(PipelineEnvironment, BatchEvaluationAgreesWithOneByOne) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  Environment batch(g, c, pipeline_options(4, PipelineSchedule::OneFOneB));
  Environment single(g, c, pipeline_options(4, PipelineSchedule::OneFOneB));
  const std::vector<Placement> placements = some_placements(g);
  const std::vector<Evaluation> all = batch.evaluate_batch(placements);
  for (size_t i = 0; i < placements.size(); ++i) EXPECT_DOUBLE_EQ(all[i].step_s, single.evaluate(placements[i]).step_s);
}

TEST(PipelineEnvironment, LowerBoundIsBelowEveryEvaluation) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  Environment step(g, c);
  Environment env(g, c, pipeline_options(8, PipelineSchedule::OneFOneB));
  const double lb = env.lower_bound();
  EXPECT_GT(lb, step.lower_bound());  // eight micro-batches are more work than one
  for (const Placement& p : some_placements(g)) {
    const Evaluation e = env.evaluate(p);
    ASSERT_TRUE(e.result.ok());
    EXPECT_LE(lb, e.step_s * (1 + 1e-9));
  }
}

TEST(PipelineEnvironment, OneMicrobatchIsTheStepObjective) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  EnvOptions o;
  o.threads = 1;
  Environment step(g, c, o);
  Environment one(g, c, pipeline_options(1, PipelineSchedule::GPipe));
  // One micro-batch is the training step with its params first in op order:
  // the same step wherever no param is sent to another device (then the order
  // of the sends may differ).
  std::vector<Placement> ps;
  for (const Placement& p : some_placements(g)) ps.push_back(params_at_users(g, p));
  for (const Placement& p : ps) {
    EXPECT_DOUBLE_EQ(one.evaluate(p).step_s, step.evaluate(p).step_s) << "placement " << (&p - &ps[0]);
    EXPECT_DOUBLE_EQ(one.evaluate(p).reward, step.evaluate(p).reward);
  }
  EXPECT_NEAR(one.lower_bound(), step.lower_bound(), 1e-9 * step.lower_bound());
}

TEST(PipelineEnvironment, SharesThePipelinedProblemOfAPreparedProblem) {
  const auto problem = PreparedProblem::make(mlp(), cluster_preset("k80x4"));
  Environment a(problem, pipeline_options(4, PipelineSchedule::OneFOneB));
  Environment b(problem, pipeline_options(4, PipelineSchedule::OneFOneB));
  Environment other(problem, pipeline_options(4, PipelineSchedule::GPipe));
  EXPECT_EQ(a.evaluated_problem(), b.evaluated_problem());
  EXPECT_NE(a.evaluated_problem(), other.evaluated_problem());
  EXPECT_EQ(a.problem(), problem);
  ASSERT_NE(a.evaluated_problem()->pipeline_spec(), nullptr);
  EXPECT_EQ(a.evaluated_problem()->pipeline_spec()->schedule, PipelineSchedule::OneFOneB);
}

TEST(PipelineEnvironment, BadSpecsAreInputErrors) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  EXPECT_THROW(Environment(g, c, pipeline_options(0, PipelineSchedule::GPipe)), InputError);
  BuilderOptions o;
  o.values = {{"layers", 2}, {"batch", 8}, {"width", 16}};
  o.forward_only = true;
  EXPECT_THROW(Environment(build_graph("mlp", o), c, pipeline_options(4, PipelineSchedule::GPipe)), InputError);
  // The step objective ignores the spec.
  EnvOptions step = pipeline_options(0, PipelineSchedule::GPipe);
  step.objective = Objective::Step;
  EXPECT_NO_THROW(Environment(g, c, step));
}

TEST(PipelineCosts, MicrobatchCopiesTakeTheProfileTimesOfTheirOp) {
  const Graph g = mlp();
  const Cluster c = parse_device_list("cpu:2");
  Profile profile;
  profile.graph = g.name;
  for (int32_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(OpId(i));
    if (op.type == op_types::kParam || op.type == op_types::kInput) continue;
    for (const Device& d : c.devices) profile.ops.push_back({op.name, "", d.name, "cpu", 1e-3 * (i + 1), 0.0});
  }
  const auto base = PreparedProblem::make(g, c, profile);
  const auto unrolled = base->pipelined({3, PipelineSchedule::OneFOneB});
  const PipelineGraph p = make_pipeline_graph(g, {3, PipelineSchedule::OneFOneB});
  ASSERT_EQ(unrolled->graph().size(), p.graph.size());
  int copies = 0, accumulations = 0;
  for (int32_t i = 0; i < p.graph.size(); ++i) {
    const Op& op = p.graph.op(OpId(i));
    const OpId b = p.base_op[i];
    for (int32_t d = 0; d < c.size(); ++d) {
      const double t = unrolled->base_costs().op_seconds(OpId(i), DeviceId(d));
      if (op.type == g.op(b).type) {
        EXPECT_DOUBLE_EQ(t, base->base_costs().op_seconds(b, DeviceId(d))) << op.name;
        copies += op.microbatch >= 0;
      } else {  // an accumulation: not in the profile, its own (roofline) cost
        EXPECT_DOUBLE_EQ(t, roofline_seconds(p.graph, OpId(i), c.devices[d])) << op.name;
        ++accumulations;
      }
    }
  }
  EXPECT_GT(copies, 0);
  EXPECT_GT(accumulations, 0);
}

TEST(PipelineFigures, Definitions) {
  StepResult r;
  r.step_s = 3.0;
  r.devices = {{"gpu:0", 2.0, 10}, {"gpu:1", 1.0, 20}, {"gpu:2", 0.0, 0}};
  const PipelineFigures f = pipeline_figures(r, {4, PipelineSchedule::GPipe});
  EXPECT_EQ(f.devices_used, 2);
  EXPECT_DOUBLE_EQ(f.minibatch_s, 3.0);
  EXPECT_DOUBLE_EQ(f.per_microbatch_s, 0.5);             // busiest 2.0 s over 4 micro-batches
  EXPECT_DOUBLE_EQ(f.bubble_fraction, 1.0 - 3.0 / 6.0);  // 3 busy seconds of 2 devices x 3 s
  EXPECT_EQ(pipeline_figures_json(f),
            "{\"microbatches\":4,\"schedule\":\"gpipe\",\"minibatch_s\":3.0,\"per_microbatch_s\":0.5,"
            "\"bubble_fraction\":0.5,\"devices_used\":2}");
  r.status = StepStatus::Oom;
  EXPECT_DOUBLE_EQ(pipeline_figures(r, {4, PipelineSchedule::GPipe}).bubble_fraction, 0.0);
}

TEST(PipelineFigures, MoreMicrobatchesShrinkTheBubble) {
  const Graph g = mlp();
  const Cluster c = cluster_preset("k80x4");
  const Placement four = stages_of(g, 4);
  Environment two(g, c, pipeline_options(2, PipelineSchedule::OneFOneB));
  Environment sixteen(g, c, pipeline_options(16, PipelineSchedule::OneFOneB));
  const PipelineFigures a = pipeline_figures(two.evaluate(four).result, two.options().pipeline);
  const PipelineFigures b = pipeline_figures(sixteen.evaluate(four).result, sixteen.options().pipeline);
  EXPECT_EQ(a.devices_used, 4);
  EXPECT_GT(a.bubble_fraction, b.bubble_fraction);
  EXPECT_GT(b.bubble_fraction, 0.0);
  EXPECT_LT(b.bubble_fraction, 1.0);
}

}  // namespace
}  // namespace placer
