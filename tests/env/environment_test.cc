// The environment: rewards, failure penalties, the cache and batch evaluation.
#include "placer/env/environment.h"

#include <gtest/gtest.h>

#include <cmath>

#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

// A chain of `n` ops with float outputs of `elements` each.
Graph chain(int n, int64_t elements, double flops) {
  Graph g;
  g.name = "chain";
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = "aten::relu";
    if (i) op.inputs.push_back({OpId(i - 1), 0});
    op.outputs.push_back(TensorSpec{{elements}, DType::Float32});
    op.flops = flops;
    g.add_op(std::move(op));
  }
  return g;
}

Cluster two_devices(int64_t memory) {
  Cluster c;
  c.name = "two";
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.memory_bytes = memory;
    d.peak_flops = 1e9;
    d.mem_bandwidth = 1e12;
    d.op_overhead_s = 0.0;
    c.devices.push_back(d);
  }
  c.default_link.latency_s = 1e-3;
  c.default_link.bandwidth_Bps = 1e9;
  return c;
}

Placement alternating(int n, int period) {
  Placement p;
  for (int i = 0; i < n; ++i) p.device_of.push_back(DeviceId((i / period) % 2));
  return p;
}

TEST(Environment, RewardShape) {
  Environment env(chain(2, 4, 1e9), two_devices(1 << 20));
  StepResult ok;
  ok.step_s = 4.0;
  EXPECT_DOUBLE_EQ(env.reward_of(ok), -2.0);  // -sqrt(4 s)
  StepResult small_oom;
  small_oom.status = StepStatus::Oom;
  small_oom.oom_needed_bytes = 150;
  small_oom.oom_capacity_bytes = 100;
  StepResult big_oom = small_oom;
  big_oom.oom_needed_bytes = 400;
  EXPECT_DOUBLE_EQ(env.reward_of(small_oom), -std::sqrt(100.0 + 100.0 * 0.5));
  EXPECT_DOUBLE_EQ(env.reward_of(big_oom), -std::sqrt(100.0 + 100.0 * 3.0));
  EXPECT_GT(env.reward_of(small_oom), env.reward_of(big_oom));
  StepResult error;
  error.status = StepStatus::Error;
  EXPECT_DOUBLE_EQ(env.reward_of(error), -10.0);
  EXPECT_GT(env.reward_of(ok), env.reward_of(error));

  EnvOptions linear;
  linear.reward.exponent = 1.0;
  linear.reward.failure_penalty_s = 7.0;
  Environment env2(chain(2, 4, 1e9), two_devices(1 << 20), linear);
  EXPECT_DOUBLE_EQ(env2.reward_of(ok), -4.0);
  EXPECT_DOUBLE_EQ(env2.reward_of(error), -7.0);
}

TEST(Environment, SimulatedEvaluationMatchesSimulatorAndCaches) {
  const Graph g = chain(6, 1000, 1e9);  // 1 s per op on either device
  Environment env(g, two_devices(int64_t{1} << 30));
  const Placement one = single_device(g, DeviceId(0));
  const Evaluation e1 = env.evaluate(one);
  EXPECT_FALSE(e1.cached);
  EXPECT_FALSE(e1.measured);
  EXPECT_DOUBLE_EQ(e1.result.step_s, 6.0);
  EXPECT_DOUBLE_EQ(e1.reward, -std::sqrt(6.0));
  const Evaluation e2 = env.evaluate(one);
  EXPECT_TRUE(e2.cached);
  EXPECT_DOUBLE_EQ(e2.result.step_s, 6.0);
  EXPECT_EQ(env.stats().evaluations, 2);
  EXPECT_EQ(env.stats().cache_hits, 1);
  EXPECT_EQ(env.stats().measurements, 0);

  // Two transfers of 4000 bytes at 1 ms + 4 us each on the critical path.
  const Placement split = alternating(6, 2);
  const Evaluation e3 = env.evaluate(split);
  EXPECT_NEAR(e3.result.step_s, 6.0 + 2 * (1e-3 + 4000 / 1e9), 1e-12);
  EXPECT_EQ(e3.result.transfer_bytes, 8000);
  EXPECT_GE(e3.result.step_s, env.lower_bound());
  EXPECT_NEAR(env.lower_bound(), 6.0, 1e-8);  // a hair below (round-off, lower_bound.cc)
}

TEST(Environment, BatchIsParallelDeterministicAndCountsHits) {
  const Graph g = chain(40, 256, 1e8);
  EnvOptions opts;
  opts.threads = 4;
  Environment env(g, two_devices(int64_t{1} << 30), opts);
  std::vector<Placement> batch;
  for (int period = 1; period <= 8; ++period) batch.push_back(alternating(40, period));
  batch.push_back(alternating(40, 3));  // repeated inside the batch
  const auto results = env.evaluate_batch(batch);
  ASSERT_EQ(results.size(), batch.size());
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_FALSE(results[i].cached);
    EXPECT_DOUBLE_EQ(results[i].result.step_s, simulate(g, batch[i], env.cluster(), *env.costs()).step_s);
  }
  EXPECT_TRUE(results[8].cached);
  EXPECT_DOUBLE_EQ(results[8].result.step_s, results[2].result.step_s);
  EXPECT_EQ(env.stats().cache_hits, 1);
  const auto again = env.evaluate_batch(batch);
  for (const auto& e : again) EXPECT_TRUE(e.cached);
  EXPECT_EQ(env.stats().evaluations, 18);
  EXPECT_EQ(env.stats().cache_hits, 10);
}

TEST(Environment, OomRanksByOverflow) {
  // Two 4000-byte params, each read by one op: together they overflow 6000 bytes.
  Graph g;
  g.name = "params";
  for (int i = 0; i < 2; ++i) {
    Op p;
    p.name = "w" + std::to_string(i);
    p.type = op_types::kParam;
    p.outputs.push_back(TensorSpec{{1000}, DType::Float32});
    p.param_bytes = 4000;
    const OpId w = g.add_op(p);
    Op f;
    f.name = "f" + std::to_string(i);
    f.type = "aten::relu";
    f.inputs.push_back({w, 0});
    f.outputs.push_back(TensorSpec{{1}, DType::Float32});
    f.flops = 1e9;
    g.add_op(f);
  }
  Environment env(g, two_devices(6000));
  const Evaluation single = env.evaluate(single_device(g, DeviceId(0)));
  EXPECT_EQ(single.result.status, StepStatus::Oom);
  EXPECT_EQ(single.result.oom_device, "cpu:0");
  EXPECT_EQ(single.result.oom_needed_bytes, 8004);
  EXPECT_EQ(single.result.oom_capacity_bytes, 6000);
  Environment tighter(g, two_devices(5000));
  const Evaluation worse = tighter.evaluate(single_device(g, DeviceId(0)));
  EXPECT_EQ(worse.result.status, StepStatus::Oom);
  EXPECT_GT(single.reward, worse.reward);  // less overflow ranks better
  const Evaluation split = env.evaluate(alternating(4, 2));
  EXPECT_TRUE(split.result.ok());
  EXPECT_EQ(split.result.devices[0].peak_bytes, 4004);
  EXPECT_DOUBLE_EQ(split.result.step_s, 1.0);
  EXPECT_GT(split.reward, single.reward);
}

TEST(Environment, RejectsBadInput) {
  const Graph g = chain(3, 4, 1.0);
  EXPECT_THROW(parse_reward_mode("fast"), InputError);
  EXPECT_EQ(parse_reward_mode("hybrid"), RewardMode::Hybrid);
  EXPECT_STREQ(reward_mode_name(RewardMode::Measured), "measured");
  EnvOptions bad;
  bad.reward.exponent = 0.0;
  EXPECT_THROW(Environment(g, two_devices(1 << 20), bad), InputError);
  Environment env(g, two_devices(1 << 20));
  Placement short_placement;
  short_placement.device_of = {DeviceId(0)};
  EXPECT_THROW(env.evaluate(short_placement), PlacementError);
}

TEST(Environment, MeasuredAndHybridUseTheRuntime) {
  BuilderOptions bo;
  bo.values = {{"batch", 4}, {"input", 16}, {"width", 16}, {"layers", 2}, {"classes", 4}};
  const Graph g = build_graph("mlp", bo);
  const Cluster cpus = parse_device_list("cpu:2");
  EnvOptions measured;
  measured.mode = RewardMode::Measured;
  measured.measure.warmup_steps = 0;
  measured.measure.measured_steps = 1;
  measured.measure.max_steps = 1;
  Environment env(g, cpus, measured);
  const Evaluation e = env.evaluate(single_device(g, DeviceId(1)));
  EXPECT_TRUE(e.measured);
  EXPECT_TRUE(e.result.ok()) << e.result.message;
  EXPECT_GT(e.result.step_s, 0.0);
  EXPECT_TRUE(env.evaluate(single_device(g, DeviceId(1))).cached);
  EXPECT_EQ(env.stats().measurements, 1);

  EnvOptions hybrid = measured;
  hybrid.mode = RewardMode::Hybrid;
  hybrid.hybrid_measure_top = 1;
  Environment hy(g, cpus, hybrid);
  const auto batch = hy.evaluate_batch({single_device(g, DeviceId(0)), single_device(g, DeviceId(1))});
  int measured_count = 0;
  for (const auto& ev : batch) measured_count += ev.measured;
  EXPECT_GE(measured_count, 1);
  EXPECT_EQ(hy.stats().measurements, measured_count);
  EXPECT_EQ(hy.stats().calibrations, measured_count);
  EXPECT_GT(hy.stats().step_scale, 0.0);
}

}  // namespace
}  // namespace placer
