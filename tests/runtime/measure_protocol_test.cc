// The measurement protocol: candidates interleaved, the adaptive stop and its
// reasons, prior samples kept, bad options named.
#include <gtest/gtest.h>

#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "placer/runtime/runtime.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using namespace rt_test;

struct Fixture {
  Graph train = make_training_graph(hand_mlp(), 0.05);
  std::vector<Placement> three() const {
    return {single_device(train, DeviceId(0)), single_device(train, DeviceId(1)), round_robin_groups(train, 2)};
  }
};

TEST(MeasureProtocol, CandidatesAreMeasuredInterleaved) {
  Fixture f;
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 3;
  o.max_steps = 3;
  std::vector<size_t> order;
  o.on_step = [&](size_t placement, double step_s) {
    EXPECT_GT(step_s, 0.0);
    order.push_back(placement);
  };
  const std::vector<StepResult> rs = rt.measure_interleaved(f.train, f.three(), o);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  for (const StepResult& r : rs) {
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.samples_s.size(), 3u);
    EXPECT_EQ(r.stop, "steps");
    EXPECT_LE(r.ci_low_s, r.step_s);
    EXPECT_GE(r.ci_high_s, r.step_s);
    EXPECT_NEAR(r.ci_level, 0.75, 1e-12);  // n = 3: [min, max] covers 1 - 2/8
  }
  EXPECT_GT(rs[2].transfer_bytes, 0);
  EXPECT_EQ(rs[0].transfer_bytes, 0);
}

TEST(MeasureProtocol, StopsAtTheTargetTheStepCapOrTheBudget) {
  Fixture f;
  Runtime rt(cpus(2));
  const Placement p = single_device(f.train, DeviceId(0));
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 2;
  o.max_steps = 40;
  // A loose target is met as soon as a 95% interval exists (6 steps).
  o.target_halfwidth = 0.45;
  StepResult r = rt.measure(f.train, p, o);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.stop, "target");
  EXPECT_GE(r.samples_s.size(), 6u);
  EXPECT_GE(r.ci_level, 0.95);
  EXPECT_LE(0.5 * (r.ci_high_s - r.ci_low_s), 0.45 * r.step_s);
  // No target: the step cap ends it.
  o.target_halfwidth = 0;
  o.max_steps = 9;
  r = rt.measure(f.train, p, o);
  EXPECT_EQ(r.stop, "max_steps");
  EXPECT_EQ(r.samples_s.size(), 9u);
  // A budget far below one step: the minimum steps, then "budget".
  o.max_steps = 1000;
  o.budget_s = 1e-9;
  r = rt.measure(f.train, p, o);
  EXPECT_EQ(r.stop, "budget");
  EXPECT_EQ(r.samples_s.size(), 2u);
}

TEST(MeasureProtocol, PriorSamplesCountAndComeBack) {
  Fixture f;
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 4;
  o.max_steps = 4;
  const std::vector<std::vector<double>> prior = {{0.5, 0.5, 0.5}, {}};
  const std::vector<Placement> two = {single_device(f.train, DeviceId(0)), single_device(f.train, DeviceId(1))};
  const std::vector<StepResult> rs = rt.measure_interleaved(f.train, two, o, &prior);
  ASSERT_TRUE(rs[0].ok() && rs[1].ok());
  // Three prior samples + at least one new step (the minimum of 4 counts both).
  ASSERT_EQ(rs[0].samples_s.size(), 4u);
  EXPECT_EQ(std::vector<double>(rs[0].samples_s.begin(), rs[0].samples_s.begin() + 3), prior[0]);
  EXPECT_EQ(rs[1].samples_s.size(), 4u);
  const std::vector<std::vector<double>> wrong = {{}};
  EXPECT_THROW(rt.measure_interleaved(f.train, two, o, &wrong), InputError);
}

TEST(MeasureProtocol, BadOptionsNameTheOption) {
  Fixture f;
  Runtime rt(cpus(2));
  const Placement p = single_device(f.train, DeviceId(0));
  auto message = [&](MeasureOptions o) {
    try {
      rt.measure(f.train, p, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  MeasureOptions o;
  o.measured_steps = 0;
  EXPECT_NE(message(o).find("measured_steps"), std::string::npos);
  o = {};
  o.target_halfwidth = -0.1;
  EXPECT_NE(message(o).find("target_halfwidth"), std::string::npos);
  o = {};
  o.budget_s = -1;
  EXPECT_NE(message(o).find("budget_s"), std::string::npos);
  o = {};
  o.max_steps = -2;
  EXPECT_NE(message(o).find("max_steps"), std::string::npos);
}

}  // namespace
}  // namespace placer
