// A session's params and inputs: made in an untimed set-up pass before its first step (outside the sample and
// the time limit), their bytes still the device's; and the params and inputs of placements measured together,
// all resident at once, counted against each device's capacity (one that fits only alone is measured again alone).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/runtime/runtime.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using namespace rt_test;

// A [rows, cols] param read through a view of its first row: making the param takes far longer than the step.
Graph big_param_graph(int64_t rows, int64_t cols) {
  Graph g;
  g.name = "big_param";
  const OpId w = g.add_op(param("w", {rows, cols}));
  const OpId r = g.add_op(
      make("r", "aten::select.int", {{w, 0}}, {Arg::tensor(0), Arg::integer(0), Arg::integer(0)}, {f32({cols})}));
  g.add_op(make("s", "aten::sum", {{r, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  return g;
}

// 64 MiB of param drawn takes far more than 50 ms; its step (the sum of one row) well under 1 ms. The first
// step, with no warm-up, timed the drawing: 0.45 s then 0.03 s on the 48 MiB mlp of the review, and a time
// limit that the steady steps meet failed the first.
TEST(MeasureSetup, ParamsAreMadeBeforeTheFirstTimedStepTimedAlone) {
  const int64_t rows = 4096, cols = 4096, w_bytes = rows * cols * 4;
  const Graph g = big_param_graph(rows, cols);
  const Placement p = single_device(g, DeviceId(0));
  Runtime rt(cpus(1));
  // Accounting as before: the param is the device's from the first step on (w, the view none, the sum 4 B).
  const StepResult untimed = rt.measure(g, p, fixed_steps(0, 2));
  ASSERT_TRUE(untimed.ok()) << untimed.message;
  EXPECT_EQ(untimed.devices[0].peak_bytes, w_bytes + 4);
  EXPECT_LT(untimed.samples_s[0], 0.05) << "the first step timed the param's making";

  MeasureOptions o = fixed_steps(0, 2);
  o.timeout_s = 0.05;
  const StepResult limited = rt.measure(g, p, o);
  ASSERT_TRUE(limited.ok()) << limited.message;
  EXPECT_EQ(limited.devices[0].peak_bytes, w_bytes + 4);
}

// A param larger than the device is still out of memory at that op, with the device, the bytes and the capacity.
TEST(MeasureSetup, AParamPastCapacityIsStillAnOomNamingTheOp) {
  const Graph g = big_param_graph(16, 16);
  Cluster c = cpus(1);
  c.devices[0].memory_bytes = 16 * 16 * 4 - 1;
  Runtime rt(c);
  const StepResult r = rt.measure(g, single_device(g, DeviceId(0)), fixed_steps(0, 1));
  ASSERT_EQ(r.status, StepStatus::Oom) << r.message;
  EXPECT_NE(r.message.find("out of memory at op 'w'"), std::string::npos) << r.message;
  EXPECT_EQ(r.oom_device, "cpu:0");
  EXPECT_EQ(r.oom_needed_bytes, 16 * 16 * 4);
  EXPECT_EQ(r.oom_capacity_bytes, 16 * 16 * 4 - 1);
  const StepValues v = rt.run_once(g, single_device(g, DeviceId(0)), 0);
  EXPECT_EQ(v.status, StepStatus::Oom) << v.message;
}

// Three placements that each fit cpu:0 alone but not together: measured interleaved, the params stay resident,
// and the second and third are out of memory beside the first's. Such an oom is not theirs: once the rounds
// end, each is measured again alone (the others' params and inputs gone), and that measurement is reported.
TEST(MeasureSetup, PlacementsThatFitAloneButNotTogetherAreMeasuredAgainAlone) {
  const int64_t w_bytes = 64 * 64 * 4;
  const Graph g = big_param_graph(64, 64);
  Cluster c = cpus(1);
  c.devices[0].memory_bytes = w_bytes + w_bytes / 2;
  Runtime rt(c);
  const Placement p = single_device(g, DeviceId(0));
  ASSERT_TRUE(rt.measure(g, p, fixed_steps(1, 2)).ok());  // alone it fits
  std::vector<size_t> stepped;
  MeasureOptions o = fixed_steps(1, 2);
  o.lockstep = true;
  o.on_step = [&](size_t k, double) { stepped.push_back(k); };
  const std::vector<StepResult> rs = rt.measure_interleaved(g, {p, p, p}, o);
  ASSERT_EQ(rs.size(), 3u);
  for (size_t k = 0; k < rs.size(); ++k) {
    const StepResult& r = rs[k];
    ASSERT_TRUE(r.ok()) << k << ": " << r.message;
    EXPECT_EQ(r.samples_s.size(), 2u) << k;
    EXPECT_EQ(r.stop, "steps") << k;
    EXPECT_EQ(r.devices[0].peak_bytes, w_bytes + 4) << k << ": its own param and its sum";
  }
  // The first's two rounds, then the second's and the third's steps, each measured alone in turn.
  EXPECT_EQ(stepped, (std::vector<size_t>{0, 0, 1, 1, 2, 2}));
  // Room for both: all measure together, each peak its own.
  Cluster roomy = cpus(1);
  roomy.devices[0].memory_bytes = 2 * w_bytes + 8;
  Runtime rt2(roomy);
  for (const StepResult& r : rt2.measure_interleaved(g, {p, p}, fixed_steps(1, 2))) {
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.devices[0].peak_bytes, w_bytes + 4);
  }
}

// Two [64, 64] params, each read through a view of its first row and summed.
Graph two_param_graph() {
  Graph g;
  g.name = "two_params";
  for (const std::string n : {"a", "b"}) {
    const OpId w = g.add_op(param("w" + n, {64, 64}));
    const OpId r = g.add_op(
        make("r" + n, "aten::select.int", {{w, 0}}, {Arg::tensor(0), Arg::integer(0), Arg::integer(0)}, {f32({64})}));
    g.add_op(make("s" + n, "aten::sum", {{r, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  }
  return g;
}

// A placement that does not fit even alone: out of memory beside the other's param, then measured again alone,
// and out of memory there too. That oom is its own, reported as such: its own bytes, no word of the others'.
TEST(MeasureSetup, APlacementThatDoesNotFitAloneIsStillOomWithItsOwnBytes) {
  const int64_t w_bytes = 64 * 64 * 4;
  const Graph g = two_param_graph();
  Cluster c = cpus(2);
  c.devices[0].memory_bytes = w_bytes + w_bytes / 2;
  Runtime rt(c);
  Placement split = single_device(g, DeviceId(0));  // wa's chain on cpu:0, wb's on cpu:1: each fits
  for (size_t op = 3; op < split.device_of.size(); ++op) split.device_of[op] = DeviceId(1);
  const Placement both = single_device(g, DeviceId(0));  // 2 params on cpu:0: past its capacity
  const std::vector<StepResult> rs = rt.measure_interleaved(g, {split, both}, fixed_steps(1, 2));
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_TRUE(rs[0].ok()) << rs[0].message;
  const StepResult& r = rs[1];
  ASSERT_EQ(r.status, StepStatus::Oom) << r.message;
  EXPECT_EQ(r.oom_device, "cpu:0");
  EXPECT_EQ(r.oom_capacity_bytes, w_bytes + w_bytes / 2);
  EXPECT_EQ(r.oom_needed_bytes, 2 * w_bytes) << "its own two params";
  EXPECT_NE(r.message.find("needs " + std::to_string(2 * w_bytes) + " bytes"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("beside"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("measure fewer placements"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace placer
