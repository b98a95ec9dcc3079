// The runtime on real CUDA devices. CTest label `gpu`: `make test` leaves
// these out, and without a GPU every case skips (it never passes by doing
// nothing). scripts/gpu-check.sh runs them on a GPU machine.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "../runtime/runtime_helpers.h"
#include "placer/env/cost_model.h"
#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "placer/runtime/runtime.h"

namespace placer {
namespace {

using namespace rt_test;

// Exact-enough comparisons with the CPU need full fp32 on the GPU too.
void no_tf32() {
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

TEST(Gpu, SameValuesOnCpuAndGpuUnderEveryPlacement) {
  REQUIRE_GPU();
  no_tf32();
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  ASSERT_EQ(rt.cluster().devices[1].name, "cuda:0");
  for (const BuilderCase& c : tiny_builders()) {
    BuilderOptions opts;
    opts.values = c.options;
    const Graph g = build_graph(c.name, opts);
    const StepValues cpu = rt.run_once(g, single_device(g, DeviceId(0)), 11);
    expect_same_values(cpu, rt.run_once(g, single_device(g, DeviceId(1)), 11), 1e-3, c.name + " all on cuda:0");
    expect_same_values(cpu, rt.run_once(g, round_robin_groups(g, 2), 11), 1e-3, c.name + " cpu:0 + cuda:0");
    expect_same_values(cpu, rt.run_once(g, random_placement(g, 2, 3), 11), 1e-3, c.name + " random cpu:0 + cuda:0");
  }
}

TEST(Gpu, MeasureTimesWithEventsAndReportsAllocatorPeak) {
  REQUIRE_GPU();
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  MeasureOptions o;
  o.warmup_steps = 2;
  o.measured_steps = 5;
  o.max_steps = 5;
  std::vector<TimelineEvent> events;
  const StepResult r = rt.measure(train, round_robin_groups(train, 2), o, &events);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.samples_s.size(), 5u);
  EXPECT_EQ(r.stop, "steps");
  EXPECT_LE(r.ci_low_s, r.step_s);
  EXPECT_GE(r.ci_high_s, r.step_s);
  EXPECT_GT(r.step_s, 0.0);
  EXPECT_GT(r.devices[1].busy_s, 0.0);
  EXPECT_LT(r.devices[1].busy_s, r.step_s * 1.01);
  EXPECT_GT(r.devices[1].peak_bytes, 0);  // the caching allocator's own peak
  EXPECT_GT(r.transfer_bytes, 0);
  bool gpu_lane = false, link_lane = false;
  for (const TimelineEvent& e : events) {
    gpu_lane = gpu_lane || e.lane == "cuda:0";
    link_lane = link_lane || e.lane == "cpu:0->cuda:0" || e.lane == "cuda:0->cpu:0";
    EXPECT_GE(e.start_s, -1e-3) << e.name;
    EXPECT_GE(e.duration_s, 0.0) << e.name;
  }
  EXPECT_TRUE(gpu_lane);
  EXPECT_TRUE(link_lane);
}

// x[N,1] @ y[1,N]: a 256 GiB output, far beyond any GPU. Our accounting is
// told the device is larger still, so the real CUDA allocator fails.
TEST(Gpu, RealCudaOutOfMemoryIsAStatusAndTheNextStepRuns) {
  REQUIRE_GPU();
  const int64_t n = int64_t{1} << 18;
  Graph g;
  g.name = "huge";
  OpId x = g.add_op(make("x", op_types::kInput, {}, {}, {f32({n, 1})}));
  OpId y = g.add_op(make("y", op_types::kInput, {}, {}, {f32({1, n})}));
  g.add_op(make("mm", "aten::mm", {{x, 0}, {y, 0}}, {Arg::tensor(0), Arg::tensor(1)}, {f32({n, n})}));
  Cluster c = parse_device_list("cuda:0");
  c.devices[0].memory_bytes = int64_t{1} << 50;
  Runtime rt(c);
  const StepResult r = rt.measure(g, single_device(g, DeviceId(0)), MeasureOptions{});
  EXPECT_EQ(r.status, StepStatus::Oom) << r.message;
  EXPECT_EQ(r.oom_device, "cuda:0");
  EXPECT_EQ(r.oom_needed_bytes, 2 * n * 4 + n * n * 4);  // the inputs and the output, once (was twice the output)
  EXPECT_NE(r.message.find("cuda:0"), std::string::npos) << r.message;
  const Graph small = make_training_graph(hand_mlp(), 0.05);
  const StepResult next = rt.measure(small, single_device(small, DeviceId(0)), MeasureOptions{});
  EXPECT_TRUE(next.ok()) << next.message;
}

TEST(Gpu, VirtualGpusMatchOneGpuAndSayTheyAreVirtual) {
  REQUIRE_GPU();
  no_tf32();
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(parse_device_list("vcuda:2"));
  const StepValues one = rt.run_once(train, single_device(train, DeviceId(0)), 5);
  expect_same_values(one, rt.run_once(train, round_robin_groups(train, 2), 5), 1e-4, "vcuda:2 round robin");
  std::vector<TimelineEvent> events;
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 1;
  const StepResult r = rt.measure(train, round_robin_groups(train, 2), o, &events);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const TimelineEvent& e) {
    return e.lane.find("cuda:1 (virtual, on cuda:0)") != std::string::npos;
  }));
}

TEST(Gpu, ProfileTimesGpuOpsWithEventsAndFitsPcieLinks) {
  REQUIRE_GPU();
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  ProfileOptions o;
  o.repetitions = 3;
  const Profile p = rt.profile(train, o);
  int gpu_ops = 0;
  for (const OpTiming& t : p.ops)
    if (t.device == "cuda:0") {
      ++gpu_ops;
      EXPECT_GE(t.seconds, 0.0) << t.op;
      EXPECT_LT(t.seconds, 1.0) << t.op;
    }
  EXPECT_EQ(gpu_ops, static_cast<int>(train.size()));
  EXPECT_GE(p.gpu_op_overhead_s, 0.0);  // measured from steps on the GPU
  EXPECT_LT(p.gpu_op_overhead_s, 1e-3);
  // The mixed step: the groups dealt over the CPU device and the GPU, measured.
  EXPECT_EQ(p.mixed.devices, (std::vector<std::string>{"cpu:0", "cuda:0"}));
  EXPECT_GT(p.mixed.step_s, 0.0);
  int links = 0;
  for (const LinkFit& l : p.links) {
    ++links;
    EXPECT_GT(l.beta_Bps, 1e8) << l.from << "->" << l.to;  // PCIe/NVLink: far above 100 MB/s
    EXPECT_GT(l.alpha_s, 0.0) << l.from << "->" << l.to;
  }
  EXPECT_EQ(links, 2);
}

// The calibrated simulator reproduces a launch-bound step on the GPU: every op
// of a small NMT on cuda:0 (hundreds of small kernels). Before the profile
// measured the GPU's own per-op overhead, the simulator put nmt's all-on-GPU
// step 45% under its measurement (H200).
//
// What it is held to, and why. On the H200 VMs this step runs at two levels,
// ~6.7 and ~11.7 ms, each lasting seconds (a 10 s series in gpu_h200_r6.md;
// the CPU-only step of the same graph moved +-12% meanwhile, and turning the
// executor's spinning off did not remove them). A profile taken at one level
// and a measurement taken at the other are up to 1.9x apart, and the old 25%
// bound against a later measurement failed in 9 of 24 runs (gpu_h200_r5.md)
// and in 5 of 9 (gpu_h200_r6.md), with the simulator within 2.6% of the step
// it was fitted to in all 32. So: within 5% of the step the profile measured
// (the fitted overhead reaches every GPU op of the simulation: without it the
// simulator is the isolated kernels' sum, 0-40% under), and within 2x of a
// fresh measurement (the levels' span; the tests side by side on one card
// put it at 2.7-3.8x, gpu_h200_r4.md).
TEST(Gpu, CalibratedSimulatorFitsALaunchBoundGpuStep) {
  REQUIRE_GPU();
  BuilderOptions opts;
  opts.values = {{"layers", 1}, {"hidden", 64}, {"steps", 4}, {"batch", 8}, {"vocab", 500}};
  const Graph g = build_graph("nmt", opts);  // a training graph (forward, backward, update)
  const Cluster cluster = parse_device_list("cpu:1+cuda:0");
  Runtime rt(cluster);
  const Placement on_gpu = single_device(g, DeviceId(1));
  ProfileOptions po;
  po.repetitions = 5;
  const Profile prof = rt.profile(g, po);
  ASSERT_GE(prof.gpu_op_overhead_s, 0.0);
  ASSERT_GT(prof.gpu_step_s, 0.0);
  const CostModel costs = CostModel::calibrated(g, rt.cluster(), prof);
  MeasureOptions mo;
  mo.warmup_steps = 3;
  mo.measured_steps = 20;
  mo.max_steps = 60;
  mo.min_time_s = 2.0;
  const StepResult measured = rt.measure(g, on_gpu, mo);
  ASSERT_TRUE(measured.ok()) << measured.message;
  const double simulated = simulate(g, on_gpu, rt.cluster(), costs).step_s;
  std::printf(
      "launch-bound step: inside the profile %.5f s, after it %.5f s (%d steps); simulated %.5f s, GPU "
      "overhead %.2f us/op\n",
      prof.gpu_step_s, measured.step_s, static_cast<int>(measured.samples_s.size()), simulated,
      prof.gpu_op_overhead_s * 1e6);
  const std::string figures =
      "simulated " + std::to_string(simulated) + " s, inside the profile " + std::to_string(prof.gpu_step_s) +
      " s, measured after it " + std::to_string(measured.step_s) + " s, GPU overhead " +
      std::to_string(prof.gpu_op_overhead_s * 1e6) + " us/op, GPU ops scaled x" + std::to_string(prof.gpu_op_scale);
  EXPECT_NEAR(simulated / prof.gpu_step_s, 1.0, 0.05) << figures;
  EXPECT_GT(simulated / measured.step_s, 0.5) << figures;
  EXPECT_LT(simulated / measured.step_s, 2.0) << figures;
}

TEST(Gpu, AMissingGpuIsNamedWithWhatExists) {
  REQUIRE_GPU();
  const std::string missing = "cuda:" + std::to_string(cuda_device_count());
  try {
    Runtime rt(parse_device_list("cpu," + missing));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'" + missing + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda:0 ("), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace placer
