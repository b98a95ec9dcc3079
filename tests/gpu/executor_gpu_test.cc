// The executor on a real GPU: a step's time limit covers the GPU's queued work,
// a step after a sticky CUDA fault is a status (run_step never throws), and an
// interleaved candidate's GPU peak is its own. CTest label `gpu`; without a GPU
// every case skips. Written without a GPU after session 42's review: first run by gpu-check.sh.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../runtime/runtime_helpers.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/training.h"
#include "placer/runtime/runtime.h"

namespace placer {
namespace {

using namespace rt_test;

MeasureOptions one_step(double timeout_s) {
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 1;
  o.max_steps = 1;
  o.timeout_s = timeout_s;
  return o;
}

// A [n,n] matrix of ones made on the op's device (no host work, no input to
// copy), then `chain` matmuls: the GPU thread queues them in microseconds and
// the GPU runs them for tens of milliseconds.
Graph matmul_chain(int64_t n, int chain) {
  Graph g;
  g.name = "matmul_chain";
  OpId a = g.add_op(make("a", "aten::ones", {},
                         {Arg::int_list({n, n}), Arg::none(), Arg::none(), Arg::device("cuda:0"), Arg::none()},
                         {f32({n, n})}));
  OpId m = a;
  for (int i = 0; i < chain; ++i)
    m = g.add_op(make("mm" + std::to_string(i), "aten::mm", {{m, 0}, {a, 0}}, {Arg::tensor(0), Arg::tensor(1)},
                      {f32({n, n})}));
  return g;
}

// The deadline used to bound only the host threads, which finish queuing long
// before the GPU finishes: a GPU step was never a timeout, however long.
TEST(GpuExecutor, AStepWhoseGpuWorkRunsPastTheLimitIsATimeout) {
  REQUIRE_GPU();
  const Graph g = matmul_chain(8192, 16);
  const Placement p = single_device(g, DeviceId(0));
  Runtime rt(parse_device_list("cuda:0"));
  ASSERT_TRUE(rt.measure(g, p, one_step(600)).ok());  // cuBLAS initialized, the allocator's blocks cached
  const StepResult full = rt.measure(g, p, one_step(600));
  ASSERT_TRUE(full.ok()) << full.message;
  std::printf("16 matmuls of 8192^2 on cuda:0: %.4f s\n", full.step_s);
  ASSERT_GT(full.step_s, 0.02) << "too fast for a limit the host's queuing stays under";
  const StepResult r = rt.measure(g, p, one_step(full.step_s / 10));
  EXPECT_EQ(r.status, StepStatus::Timeout) << r.message;
  EXPECT_NE(r.message.find("devices finished after"), std::string::npos) << r.message;
  EXPECT_TRUE(rt.measure(g, p, one_step(600)).ok());  // the runtime is usable after it
}

// Out-of-range indices fault on the device (a device-side assert), which
// poisons the CUDA context: every later CUDA call fails. The next step's first
// call (its start event) threw c10::Error out of run_step and measure. In a
// child process (the context stays poisoned): it exits 0 only when both steps
// came back as statuses.
[[noreturn]] void fault_then_step() {
  Graph g;
  g.name = "bad_index";
  OpId table = g.add_op(make("table", op_types::kInput, {}, {}, {f32({10, 4})}));
  OpId idx = g.add_op(make("idx", op_types::kInput, {}, {Arg::integer(1000000)}, {TensorSpec{{64}, DType::Int64}}));
  g.add_op(make("sel", "aten::index_select", {{table, 0}, {idx, 0}}, {Arg::tensor(0), Arg::integer(0), Arg::tensor(1)},
                {f32({64, 4})}));
  Runtime rt(parse_device_list("cuda:0"));
  const StepResult faulted = rt.measure(g, single_device(g, DeviceId(0)), one_step(600));
  std::fprintf(stderr, "faulted step: status %d: %s\n", static_cast<int>(faulted.status), faulted.message.c_str());
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  const StepResult next = rt.measure(train, single_device(train, DeviceId(0)), one_step(600));
  std::fprintf(stderr, "next step: status %d: %s\n", static_cast<int>(next.status), next.message.c_str());
  std::fflush(stderr);
  // _Exit: no teardown of LibTorch's CUDA state in a poisoned context.
  std::_Exit(faulted.status == StepStatus::Error && next.status == StepStatus::Error ? 0 : 1);
}

TEST(GpuExecutorDeathTest, AStepAfterAStickyCudaFaultIsAStatusNotAThrow) {
  REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child runs this test alone in a fresh process
  EXPECT_EXIT(fault_then_step(), testing::ExitedWithCode(0), "");
}

// Interleaved candidates keep their params and inputs on the GPU between their
// steps, and the allocator's peak counts every one of them: a CPU-only
// placement reported the GPU placement's params as its own cuda:0 peak, and
// {P, P} twice P's params. A step's GPU peak is now its own.
TEST(GpuExecutor, InterleavedCandidatesReportTheirOwnGpuPeak) {
  REQUIRE_GPU();
  BuilderOptions opts;
  opts.values = {{"batch", 64}, {"input", 1024}, {"width", 1024}, {"classes", 10}, {"layers", 3}};
  const Graph g = build_graph("mlp", opts);  // a training graph; ~12 MiB of params
  Runtime rt(parse_device_list("cpu:1+cuda:0"));
  const Placement on_cpu = single_device(g, DeviceId(0));
  const Placement on_gpu = single_device(g, DeviceId(1));
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 3;
  o.max_steps = 3;
  // cuBLAS's workspace is allocated at its first call and kept: once here, before any peak compared below.
  ASSERT_TRUE(rt.measure(g, on_gpu, o).ok());
  const StepResult alone = rt.measure(g, on_gpu, o);
  ASSERT_TRUE(alone.ok()) << alone.message;
  const int64_t own = alone.devices[1].peak_bytes;
  ASSERT_GT(own, 12 << 20);
  const std::vector<StepResult> mixed = rt.measure_interleaved(g, {on_cpu, on_gpu}, o);
  const std::vector<StepResult> twice = rt.measure_interleaved(g, {on_gpu, on_gpu}, o);
  ASSERT_TRUE(mixed[0].ok() && mixed[1].ok() && twice[0].ok() && twice[1].ok());
  std::printf("cuda:0 peaks: alone %lld; {cpu, cuda} %lld %lld; {cuda, cuda} %lld %lld\n",
              static_cast<long long>(own), static_cast<long long>(mixed[0].devices[1].peak_bytes),
              static_cast<long long>(mixed[1].devices[1].peak_bytes),
              static_cast<long long>(twice[0].devices[1].peak_bytes),
              static_cast<long long>(twice[1].devices[1].peak_bytes));
  EXPECT_LT(mixed[0].devices[1].peak_bytes, own / 100);  // nothing of its own on cuda:0
  EXPECT_NEAR(mixed[1].devices[1].peak_bytes, own, 0.03 * own);
  EXPECT_NEAR(twice[0].devices[1].peak_bytes, own, 0.03 * own);
  EXPECT_NEAR(twice[1].devices[1].peak_bytes, own, 0.03 * own);
}

}  // namespace
}  // namespace placer
