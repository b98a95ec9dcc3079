// The executor's checks on what a step produces and how it fails: output dtypes
// against the graph, the OOM fields of a failed copy, a backward op asked for one
// input's gradient twice, and in-place kernels over tensor lists.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/graphs/training.h"
#include "placer/runtime/runtime.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using namespace rt_test;

// relu of a float32 input, declared float16: the kernel returns float32, so the
// byte accounting (2 bytes an element) would be wrong without a word.
TEST(ExecutorChecks, AnOutputDtypeOtherThanTheGraphsIsAnErrorNamingTheOp) {
  Graph g;
  g.name = "dtype";
  OpId x = g.add_op(make("x", op_types::kInput, {}, {}, {f32({2, 3})}));
  g.add_op(make("r", "aten::relu", {{x, 0}}, {Arg::tensor(0)}, {TensorSpec{{2, 3}, DType::Float16}}));
  Runtime rt(cpus(1));
  const StepValues v = rt.run_once(g, single_device(g, DeviceId(0)), 1);
  EXPECT_EQ(v.status, StepStatus::Error) << v.message;
  EXPECT_NE(v.message.find("op 'r'"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("dtype float, the graph says half"), std::string::npos) << v.message;
}

// A view expanded to 4 TiB on cpu:0 and summed on cpu:1: the copy to cpu:1 is a
// real allocation of 4 TiB, which fails (our accounting is told the devices are
// larger still). The failure names the device, the bytes and the capacity.
TEST(ExecutorChecks, AFailedCopyIsAnOomWithDeviceAndBytes) {
  const int64_t n = int64_t{1} << 20;
  Graph g;
  g.name = "huge_copy";
  OpId x = g.add_op(make("x", op_types::kInput, {}, {}, {f32({1, 1})}));
  OpId e = g.add_op(make("e", "aten::expand", {{x, 0}}, {Arg::tensor(0), Arg::int_list({n, n})}, {f32({n, n})}));
  g.add_op(make("s", "aten::sum", {{e, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  Cluster c = cpus(2);
  for (Device& d : c.devices) d.memory_bytes = int64_t{1} << 60;
  Runtime rt(c);
  Placement p = single_device(g, DeviceId(0));
  p.device_of[2] = DeviceId(1);
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 1;
  o.max_steps = 1;
  const StepResult r = rt.measure(g, p, o);
  ASSERT_EQ(r.status, StepStatus::Oom) << r.message;
  EXPECT_NE(r.message.find("transfer of 'e'"), std::string::npos) << r.message;
  EXPECT_EQ(r.oom_device, "cpu:1");
  EXPECT_GE(r.oom_needed_bytes, n * n * 4);
  EXPECT_EQ(r.oom_capacity_bytes, int64_t{1} << 60);
  // The runtime is usable after it.
  const Graph small = make_training_graph(hand_mlp(), 0.05);
  EXPECT_TRUE(rt.measure(small, single_device(small, DeviceId(1)), o).ok());
}

// loss = sum(w * w); its backward op asked for input 0's gradient twice (args[1]
// = {0, 0}, not {0, 1}): both outputs are w, and the update sums them, so w'
// = w - 0.1 * 2w = 0.8 w as in the graph as built. One of them was zeros (0.9 w).
TEST(ExecutorChecks, ABackwardOpAskedForOneInputTwiceGivesItBothTimes) {
  const Graph fwd = square_loss_graph();
  Graph train = make_training_graph(fwd, 0.1);
  bool edited = false;
  for (size_t i = 0; i < train.size(); ++i) {
    Op& op = train.mutable_op(OpId(static_cast<int32_t>(i)));
    if (op.type != op_types::kBackward || train.op(op.forward).name != "sq") continue;
    ASSERT_EQ(op.args.at(1).ints, (std::vector<int64_t>{0, 1}));
    op.args[1].ints = {0, 0};
    edited = true;
  }
  ASSERT_TRUE(edited);
  Runtime rt(cpus(1));
  const StepValues before = rt.run_once(fwd, single_device(fwd, DeviceId(0)), 7);
  const StepValues after = rt.run_once(train, single_device(train, DeviceId(0)), 7);
  ASSERT_EQ(after.status, StepStatus::Ok) << after.message;
  const std::vector<float>& w = before.tensors.at("w");
  const std::vector<float>& w2 = after.tensors.at("w");
  ASSERT_EQ(w2.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w2[i], 0.8f * w[i], 1e-6) << i;
}

// _foreach_add_ writes every tensor of its list in place. The runtime gives a
// kernel that writes an argument a private copy (every op functional), lists
// too: the param it was given keeps its value.
TEST(ExecutorChecks, AnInPlaceListKernelWritesPrivateCopies) {
  Graph g;
  g.name = "foreach";
  OpId w = g.add_op(param("w", {2, 3}));
  g.add_op(make("bump", "aten::_foreach_add_.Scalar", {{w, 0}}, {Arg::tensor_list({0}), Arg::real(1.0)}, {}));
  g.add_op(make("s", "aten::sum", {{w, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  Graph plain;
  plain.name = "plain";
  OpId w0 = plain.add_op(param("w", {2, 3}));
  plain.add_op(make("s", "aten::sum", {{w0, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  Runtime rt(cpus(1));
  const StepValues ref = rt.run_once(plain, single_device(plain, DeviceId(0)), 3);
  const StepValues v = rt.run_once(g, single_device(g, DeviceId(0)), 3);
  ASSERT_EQ(v.status, StepStatus::Ok) << v.message;
  EXPECT_EQ(v.tensors.at("w"), ref.tensors.at("w"));
  EXPECT_EQ(v.tensors.at("s"), ref.tensors.at("s"));
}

}  // namespace
}  // namespace placer
