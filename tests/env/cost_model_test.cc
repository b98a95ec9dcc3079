// Roofline costs from the cluster's constants, and calibration from a profile.
#include "placer/env/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"

namespace placer {
namespace {

Graph two_op_graph() {
  Graph g;
  g.name = "g";
  Op in;
  in.name = "x";
  in.type = op_types::kInput;
  in.outputs.push_back(TensorSpec{{1000}, DType::Float32});  // 4000 bytes
  const OpId x = g.add_op(in);
  Op mm;
  mm.name = "y";
  mm.type = "aten::mm";
  mm.inputs = {{x, 0}, {x, 0}};
  mm.outputs.push_back(TensorSpec{{500}, DType::Float32});  // 2000 bytes
  mm.flops = 2e9;
  g.add_op(mm);
  return g;
}

// x -> y1 -> ... -> y4 (relu), 4000 bytes each: dealt round robin over two
// devices, four copies one after the other.
// An op with one output of 1000 float32 elements (4000 bytes).
OpId add_op(Graph& g, const std::string& name, const std::string& type, std::vector<TensorRef> inputs) {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.outputs.push_back(TensorSpec{{1000}, DType::Float32});
  return g.add_op(std::move(op));
}

Graph relu_chain() {
  Graph g;
  g.name = "chain";
  OpId prev = add_op(g, "x", op_types::kInput, {});
  for (int i = 1; i <= 4; ++i) prev = add_op(g, "y" + std::to_string(i), "aten::relu", {{prev, 0}});
  return g;
}

Cluster cluster() {
  Cluster c;
  Device cpu;
  cpu.name = "cpu:0";
  cpu.memory_bytes = 1 << 30;
  cpu.peak_flops = 1e9;
  cpu.mem_bandwidth = 1e3;  // memory bound: 10000 bytes touched -> 10 s
  cpu.op_overhead_s = 0.5;
  Device gpu;
  gpu.name = "cuda:0";
  gpu.kind = DeviceKind::Cuda;
  gpu.memory_bytes = 1 << 30;
  gpu.peak_flops = 1e12;
  gpu.mem_bandwidth = 1e12;
  gpu.op_overhead_s = 1e-3;
  c.devices = {cpu, gpu};
  c.default_link.latency_s = 2.0;
  c.default_link.bandwidth_Bps = 100.0;
  return c;
}

// cpu:0 and cpu:1 with the default constants (one host).
Cluster cpu_pair() {
  Cluster c;
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.memory_bytes = 1 << 30;
    c.devices.push_back(d);
  }
  return c;
}

TEST(CostModel, Roofline) {
  const CostModel m = CostModel::roofline(two_op_graph(), cluster());
  EXPECT_EQ(m.ops(), 2);
  EXPECT_EQ(m.devices(), 2);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(0)), 0.0);  // inputs are free
  // cpu: max(2 s compute, (4000 + 4000 + 2000) / 1e3 = 10 s memory) + 0.5
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 10.5);
  // gpu: max(2e-3, 1e-8) + 1e-3
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 3e-3);
  EXPECT_DOUBLE_EQ(m.transfer_seconds(DeviceId(0), DeviceId(1), 300), 5.0);
  EXPECT_DOUBLE_EQ(m.transfer_seconds(DeviceId(1), DeviceId(1), 300), 0.0);
  EXPECT_EQ(m.calibrated_fraction(), 0.0);
}

TEST(CostModel, CalibratedByNameThenSignature) {
  const Graph g = two_op_graph();
  Profile p;
  p.graph = "g";
  p.ops.push_back({"y", "", "cpu:0", "cpu", 0.25});
  p.ops.push_back({"y", "", "cpu:0", "cpu", 0.35});  // median of the two
  p.links.push_back({"cpu:0", "cuda:0", 0.1, 1000.0, {}});
  CostModel m = CostModel::calibrated(g, cluster(), p);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 0.3);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 3e-3);  // no cuda timing: roofline
  EXPECT_DOUBLE_EQ(m.calibrated_fraction(), 1.0);
  // No device list named: the devices it timed ops on or fitted links between; the cluster is a test's model.
  EXPECT_EQ(m.profile_mismatch(), "taken on unnamed devices, not on cluster ''");
  EXPECT_DOUBLE_EQ(m.transfer_seconds(DeviceId(0), DeviceId(1), 500), 0.6);
  EXPECT_DOUBLE_EQ(m.transfer_seconds(DeviceId(1), DeviceId(0), 300), 5.0);  // unprofiled direction

  // Another graph's profile matches by signature on the same device kind.
  Profile other;
  other.graph = "other";
  other.ops.push_back({"something_else", op_signature(g, OpId(1)), "cuda:3", "cuda", 0.125});
  other.ops.push_back({"y", "", "cpu:0", "cpu", 9.0});  // a different graph's op named y: ignored
  other.per_op_overhead_s = 0.0;
  const CostModel s = CostModel::calibrated(g, cluster(), other);
  EXPECT_DOUBLE_EQ(s.op_seconds(OpId(1), DeviceId(1)), 0.125);
  EXPECT_DOUBLE_EQ(s.op_seconds(OpId(1), DeviceId(0)), 10.5);
  EXPECT_EQ(op_signature(g, OpId(1)), "aten::mm(float[1000],float[1000])");
  EXPECT_EQ(op_signature(g, OpId(1), 1), "aten::mm(float[1000])");  // less input 1
  EXPECT_EQ(op_signature(g, OpId(1), 2), op_signature(g, OpId(1)));  // no input 2: nothing skipped
  // Timed on cuda:3 (borrowed by kind) and cpu:0: this cluster's cuda:0 never was, nor is cuda:3 the cluster's.
  EXPECT_EQ(s.profile_mismatch(),
            "taken on unnamed devices (cpu:0, cuda:3); cuda:0 not in it; cuda:3 not in the cluster (cpu:0, cuda:0)");
  other.devices = "cpu,cuda:0";
  EXPECT_EQ(CostModel::calibrated(g, cluster(), other).profile_mismatch(), "taken on 'cpu,cuda:0', not on cluster ''");
  Cluster listed = cluster();
  listed.name = "cpu,cuda:0";  // the same devices, listed: nothing to say
  EXPECT_EQ(CostModel::calibrated(g, listed, other).profile_mismatch(), "");

  Profile bad;
  bad.ops.push_back({"y", "", "cpu:0", "cpu", -1.0});
  EXPECT_THROW(CostModel::calibrated(g, cluster(), bad), InputError);
}

// two_op_graph()'s y timed 0.3 s on cpu:0 and 0.01 s on cuda:0, an executor overhead of 2 ms per op.
Profile op_y_on_cpu_and_gpu() {
  Profile p;
  p.graph = "g";
  p.ops.push_back({"y", "", "cpu:0", "cpu", 0.3});
  p.ops.push_back({"y", "", "cuda:0", "cuda", 0.01});
  p.per_op_overhead_s = 0.002;
  return p;
}

// A GPU device's per-op cost is its kernel plus its own thread's launch path
// (on an H200, nmt's 980 ops: 15 ms of kernels, 21-30 ms per step); a CPU's
// overhead is the CPU executor's. Older profiles (no GPU figure): one for all.
TEST(CostModel, AGpuDeviceGetsItsOwnMeasuredOverhead) {
  const Graph g = two_op_graph();
  Profile p = op_y_on_cpu_and_gpu();
  p.gpu_op_overhead_s = 0.02;
  const CostModel m = CostModel::calibrated(g, cluster(), p);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 0.302);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 0.03);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(1)), 0.0);  // inputs stay free
  p.gpu_op_overhead_s = -1.0;
  EXPECT_DOUBLE_EQ(CostModel::calibrated(g, cluster(), p).op_seconds(OpId(1), DeviceId(1)), 0.012);
}

// A profile taken on CPUs alone says nothing of a GPU's launch path: a GPU
// op it did not time keeps the roofline's (the cluster's) overhead, not the
// CPU executor's (a cpu:2 profile on k80x4 made every op 9x cheaper).
TEST(CostModel, AProfileOfOtherDeviceKindsLeavesAnUntimedKindsOverhead) {
  const Graph g = two_op_graph();
  Profile p;
  p.graph = "g";
  p.ops.push_back({"y", "", "cpu:0", "cpu", 0.3});
  p.per_op_overhead_s = 0.002;
  const CostModel m = CostModel::calibrated(g, cluster(), p);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 0.302);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 3e-3);  // the roofline's, its own overhead 1e-3
  // A profile with GPU ops timed (an older one: no GPU overhead of its own) replaces it for the kind.
  p.ops.push_back({"something", "", "cuda:0", "cuda", 0.01});
  EXPECT_DOUBLE_EQ(CostModel::calibrated(g, cluster(), p).op_seconds(OpId(1), DeviceId(1)), 4e-3);
}

// `placer profile` times the inputs and params too, but fits the overhead per op that is not one of them:
// a free op measured is charged its own time, no overhead (it was charged the overhead, so a step with
// inception_v3's 286 params and inputs simulated about 1% long on a CPU, more on a launch-bound GPU).
TEST(CostModel, AFreeOpMeasuredGetsNoOverhead) {
  const Graph g = two_op_graph();
  Profile p = op_y_on_cpu_and_gpu();
  p.gpu_op_overhead_s = 0.02;
  p.ops.push_back({"x", "", "cpu:0", "cpu", 1e-6});
  p.ops.push_back({"x", "", "cuda:0", "cuda", 2e-6});
  const CostModel m = CostModel::calibrated(g, cluster(), p);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(0)), 1e-6);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(1)), 2e-6);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 0.302);  // the others keep theirs
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 0.03);
}

// When a step on the GPU is shorter than its ops timed alone (each holding its
// launch latency), the profile scales GPU ops; CPU ops keep their times.
TEST(CostModel, AGpuScaleShrinksOnlyGpuOps) {
  const Graph g = two_op_graph();
  Profile p = op_y_on_cpu_and_gpu();
  p.gpu_op_overhead_s = 0.0;
  p.gpu_op_scale = 0.5;
  const CostModel m = CostModel::calibrated(g, cluster(), p);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(0)), 0.302);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(1)), 0.005);
}

TEST(CostModel, ContendedTimesMakeCpuDevicesOneContentionGroup) {
  const Graph g = two_op_graph();
  const Cluster two_cpus = cpu_pair();
  Profile p;
  p.graph = "g";
  p.per_op_overhead_s = 0.01;
  OpTiming t{"y", "", "cpu:0", "cpu", 0.3};
  t.contended_seconds = 0.5;
  p.ops.push_back(t);
  const CostModel m = CostModel::calibrated(g, two_cpus, p);
  ASSERT_TRUE(m.has_contention());
  EXPECT_GE(m.contention_group(DeviceId(0)), 0);
  EXPECT_EQ(m.contention_group(DeviceId(0)), m.contention_group(DeviceId(1)));
  for (int d = 0; d < 2; ++d) {
    EXPECT_DOUBLE_EQ(m.op_seconds(OpId(1), DeviceId(d)), 0.31);
    EXPECT_DOUBLE_EQ(m.contended_seconds(OpId(1), DeviceId(d)), 0.51);
    EXPECT_DOUBLE_EQ(m.contended_seconds(OpId(0), DeviceId(d)), 0.0);  // inputs stay free
    EXPECT_DOUBLE_EQ(m.copy_contention(DeviceId(d)), 0.51 / 0.31);     // the (one) op's ratio
  }
  // A contended time below the alone time (noise) is taken as the alone time.
  p.ops[0].contended_seconds = 0.2;
  EXPECT_DOUBLE_EQ(CostModel::calibrated(g, two_cpus, p).contended_seconds(OpId(1), DeviceId(0)), 0.31);
  // Without contended times, or with one CPU device, there is no contention.
  p.ops[0].contended_seconds = 0.0;
  EXPECT_FALSE(CostModel::calibrated(g, two_cpus, p).has_contention());
  p.ops[0].contended_seconds = 0.5;
  EXPECT_FALSE(CostModel::calibrated(g, cluster(), p).has_contention());
  EXPECT_EQ(CostModel::calibrated(g, cluster(), p).contention_group(DeviceId(0)), -1);
}

// A profile of relu_chain timed on cpu:0: 0.1 s an op (inputs free), contended x `contended`.
Profile chain_profile(const Graph& g, double contended) {
  Profile p;
  p.graph = "chain";
  for (const Op& op : g.ops()) {
    OpTiming t{op.name, "", "cpu:0", "cpu", op.type == op_types::kInput ? 0.0 : 0.1};
    t.contended_seconds = contended * t.seconds;
    p.ops.push_back(t);
  }
  return p;
}

// The profile's CPU device steps anchor the op times: the placement of every
// op on one CPU device simulates at that device's step alone (the ops timed one
// by one on cpu:0 sum to less than its whole step), alone and contended alike.
// Without them, or for another graph, both devices cost the same as timed.
TEST(CostModel, CpuStepsAnchorEachCpuDeviceOnItsStepAlone) {
  const Graph g = relu_chain();
  const Cluster two_cpus = cpu_pair();
  Profile p = chain_profile(g, 2.0);
  const OpId relu = *g.find(g.ops()[1].name);
  const CostModel equal = CostModel::calibrated(g, two_cpus, p);
  EXPECT_DOUBLE_EQ(equal.op_seconds(relu, DeviceId(1)), equal.op_seconds(relu, DeviceId(0)));
  const double timed = simulate(g, single_device(g, DeviceId(0)), two_cpus, equal).step_s;
  p.cpu_steps = {{"cpu:0", 1.25 * timed}, {"cpu:1", 1.2 * timed}};
  const CostModel m = CostModel::calibrated(g, two_cpus, p);
  for (int d = 0; d < 2; ++d)
    EXPECT_NEAR(simulate(g, single_device(g, DeviceId(d)), two_cpus, m).step_s, p.cpu_steps[d].step_s, 1e-9 * timed);
  EXPECT_NEAR(m.op_seconds(relu, DeviceId(0)), 1.25 * equal.op_seconds(relu, DeviceId(0)), 1e-12);
  EXPECT_NEAR(m.op_seconds(relu, DeviceId(1)), 1.2 * equal.op_seconds(relu, DeviceId(0)), 1e-12);
  EXPECT_NEAR(m.contended_seconds(relu, DeviceId(1)), 1.2 * equal.contended_seconds(relu, DeviceId(0)), 1e-12);
  // A CPU device without a step in the profile takes cpu:0's times at the same level (it kept them as timed).
  const CostModel three = CostModel::calibrated(g, parse_device_list("cpu:3"), p);
  EXPECT_NEAR(three.op_seconds(relu, DeviceId(2)), 1.25 * equal.op_seconds(relu, DeviceId(0)), 1e-12);
  EXPECT_NEAR(three.op_seconds(relu, DeviceId(1)), 1.2 * equal.op_seconds(relu, DeviceId(0)), 1e-12);
  Profile other = p;
  other.graph = "other";  // the steps of another graph say nothing of this one
  EXPECT_DOUBLE_EQ(CostModel::calibrated(g, two_cpus, other).op_seconds(relu, DeviceId(1)),
                   CostModel::calibrated(g, two_cpus, other).op_seconds(relu, DeviceId(0)));
  Profile lacking = p;
  lacking.cpu_steps = {{"cpu:1", 0.048}, {"cpu:2", 0.05}};  // no step for the device the ops were timed on
  EXPECT_DOUBLE_EQ(CostModel::calibrated(g, two_cpus, lacking).op_seconds(relu, DeviceId(1)),
                   equal.op_seconds(relu, DeviceId(1)));
  // A profile that timed only some of the graph's ops says nothing of the whole
  // step's level: cpu:0 as timed, cpu:1 by its step over cpu:0's.
  Profile partial = p;
  partial.ops.pop_back();
  const CostModel part = CostModel::calibrated(g, two_cpus, partial);
  EXPECT_DOUBLE_EQ(part.op_seconds(relu, DeviceId(0)), equal.op_seconds(relu, DeviceId(0)));
  EXPECT_NEAR(part.op_seconds(relu, DeviceId(1)), 0.96 * equal.op_seconds(relu, DeviceId(0)), 1e-12);
}

// A profile taken on more devices than the cluster has is another machine's
// measurement as much as one taken on fewer: both say so, naming both device lists.
TEST(CostModel, AProfileOfMoreDevicesThanTheClusterWarnsNamingBoth) {
  const Graph g = relu_chain();
  Profile p = chain_profile(g, 2.0);
  p.devices = "cpu:4";
  const CostModel fewer = CostModel::calibrated(g, parse_device_list("cpu:2"), p);
  EXPECT_EQ(fewer.profile_mismatch(),
            "taken on 'cpu:4' (cpu:0, cpu:1, cpu:2, cpu:3); cpu:2, cpu:3 not in the cluster (cpu:0, cpu:1)");
  EXPECT_NE(fewer.profile_warning().find("the profile was taken on 'cpu:4' (cpu:0, cpu:1, cpu:2, cpu:3)"),
            std::string::npos)
      << fewer.profile_warning();
  EXPECT_EQ(CostModel::calibrated(g, parse_device_list("cpu:4"), p).profile_mismatch(), "");
  p.devices = "cpu:2";  // the reverse, as it was
  EXPECT_EQ(CostModel::calibrated(g, parse_device_list("cpu:4"), p).profile_mismatch(),
            "taken on 'cpu:2'; cpu:2, cpu:3 not in it");
  EXPECT_EQ(CostModel::calibrated(g, parse_device_list("cpu:2"), p).profile_mismatch(), "");
}

// A profile that names no graph cannot say its whole-graph steps (the CPU devices'
// steps, the mixed step) are this graph's: they are not used, and the warning says so.
TEST(CostModel, AProfileNamingNoGraphSaysItsStepsAreUnused) {
  const Graph g = relu_chain();
  const Cluster two_cpus = parse_device_list("cpu:2");
  Profile p = chain_profile(g, 2.0);
  p.devices = "cpu:2";
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, p).profile_warning(), "");
  Profile unnamed = p;
  unnamed.graph = "";
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, unnamed).profile_warning(), "");  // no steps: nothing lost
  unnamed.cpu_steps = {{"cpu:0", 0.5}, {"cpu:1", 0.48}};
  const std::string w = CostModel::calibrated(g, two_cpus, unnamed).profile_warning();
  EXPECT_NE(w.find("the profile names no graph: its whole-graph steps (cpu_steps) are not used"), std::string::npos)
      << w;
  unnamed.cpu_steps.clear();
  unnamed.mixed.devices = {"cpu:0", "cpu:1"};
  unnamed.mixed.step_s = 0.6;
  EXPECT_NE(CostModel::calibrated(g, two_cpus, unnamed).profile_warning().find("steps (mixed_step) are not used"),
            std::string::npos);
  p.cpu_steps = {{"cpu:0", 0.5}, {"cpu:1", 0.48}};
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, p).profile_warning().find("names no graph"), std::string::npos);
}

// A pipelined mini-batch's ops are copies of the measured graph's ("fc0/linear@mb0"): its model takes the
// measured graph's step fits (the CPU devices' anchors). Calibrated on the copies' own names, the fits were
// skipped: one micro-batch, the same work as a step, simulated 15% longer on nmt.
TEST(CostModel, ThePipelinedCopiesOfAGraphKeepItsStepFits) {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"batch", 4}, {"width", 8}};
  const Graph g = build_graph("mlp", o);
  const Cluster two_cpus = cpu_pair();
  Profile p;
  p.graph = g.name;
  for (const Op& op : g.ops()) {
    const bool free = op.type == op_types::kParam || op.type == op_types::kInput;
    p.ops.push_back(OpTiming{op.name, "", "cpu:0", "cpu", free ? 0.0 : 1e-4});
  }
  const double timed =
      simulate(g, single_device(g, DeviceId(0)), two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  p.cpu_steps = {{"cpu:0", 1.25 * timed}, {"cpu:1", 1.2 * timed}};
  const double step =
      simulate(g, single_device(g, DeviceId(1)), two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  EXPECT_NEAR(step, 1.2 * timed, 1e-9 * timed);
  const PipelineGraph one = make_pipeline_graph(g, {1, PipelineSchedule::GPipe});
  const Placement on_cpu1 = one.expand(single_device(g, DeviceId(1)));
  const CostModel copies = CostModel::calibrated_copies(one.graph, g, two_cpus, p);
  EXPECT_NEAR(simulate(one.graph, on_cpu1, two_cpus, copies).step_s, step, 1e-9 * step);
  EXPECT_DOUBLE_EQ(copies.cpu_step_anchor(), CostModel::calibrated(g, two_cpus, p).cpu_step_anchor());
  // On the copies' own names the anchor was lost.
  const double own = simulate(one.graph, on_cpu1, two_cpus, CostModel::calibrated(one.graph, two_cpus, p)).step_s;
  EXPECT_GT(std::fabs(own / step - 1.0), 0.1);
}

// A real profile records each op's signature (runtime/src/profile.cc). With >= 2 micro-batches the unrolled
// sgd ops take one more input (the running gradient sum) under their own names: the profile was seen as
// another graph's, the sgd ops fell to the roofline and the copies lost the step fits. Their signature in
// the profile is the training graph's.
TEST(CostModel, APipelinedSgdOfTwoMicrobatchesIsTheProfiledOne) {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"batch", 4}, {"width", 8}};
  const Graph g = build_graph("mlp", o);
  const Cluster two_cpus = cpu_pair();
  Profile p;
  p.graph = g.name;
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    const bool free = op.type == op_types::kParam || op.type == op_types::kInput;
    p.ops.push_back(OpTiming{op.name, op_signature(g, OpId(v)), "cpu:0", "cpu", free ? 0.0 : 1e-4});
  }
  const double timed =
      simulate(g, single_device(g, DeviceId(0)), two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  p.cpu_steps = {{"cpu:0", 1.25 * timed}, {"cpu:1", 1.2 * timed}};
  const CostModel base = CostModel::calibrated(g, two_cpus, p);
  const PipelineGraph two = make_pipeline_graph(g, {2, PipelineSchedule::GPipe});
  const CostModel copies = CostModel::calibrated_copies(two.graph, g, two_cpus, p);
  EXPECT_EQ(copies.graph_mismatch(), "");
  EXPECT_EQ(copies.profile_warning().find("another graph"), std::string::npos);
  EXPECT_DOUBLE_EQ(copies.cpu_step_anchor(), base.cpu_step_anchor());
  for (int32_t v = 0; v < two.graph.size(); ++v) {
    if (two.graph.op(OpId(v)).type != op_types::kSgd) continue;
    const OpId b = two.base_op[v];
    EXPECT_DOUBLE_EQ(copies.op_seconds(OpId(v), DeviceId(1)), base.op_seconds(b, DeviceId(1))) << v;
  }
}
// relu_chain() with op i's output of sizes[i] float32 elements.
Graph relu_chain_sized(const std::vector<int64_t>& sizes) {
  Graph g;
  g.name = "chain";
  for (size_t i = 0; i < sizes.size(); ++i) {
    Op op;
    op.name = i ? "y" + std::to_string(i) : "x";
    op.type = i ? "aten::relu" : op_types::kInput;
    if (i) op.inputs = {{OpId(static_cast<int32_t>(i - 1)), 0}};
    op.outputs.push_back(TensorSpec{{sizes[i]}, DType::Float32});
    g.add_op(std::move(op));
  }
  return g;
}

// A graph rebuilt at another size keeps its name and its op names (`placer graph
// build nmt --opt hidden=384` is 'nmt' as at 192). Its profile's ops used to be
// matched by name, so the bigger graph simulated at the smaller one's step,
// "100% of ops measured". Now a profile whose ops differ in signature from the
// same-named ops here is another graph's: ops by signature, else the roofline,
// its steps not used, and the model says which op differs.
TEST(CostModel, AProfileOfTheSameNameAtOtherShapesIsAnotherGraphs) {
  const Graph g = relu_chain_sized({1000, 1000, 1000, 1000, 1000});
  const Graph wider = relu_chain_sized({2000, 2000, 2000, 2000, 2000});
  const Graph one_differs = relu_chain_sized({1000, 1000, 1000, 2000, 1000});  // y4's input
  const Cluster two_cpus = cpu_pair();
  Profile p = chain_profile(g, 2.0);
  for (OpTiming& t : p.ops) t.signature = op_signature(g, *g.find(t.op));
  const double timed =
      simulate(g, single_device(g, DeviceId(0)), two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  p.cpu_steps = {{"cpu:0", 1.25 * timed}, {"cpu:1", 1.2 * timed}};
  p.mixed.devices = {"cpu:0", "cpu:1"};
  p.mixed.step_s = 10 * timed;
  Profile named_other = p;  // the same timings, saying they are another graph's
  named_other.graph = "other";

  const CostModel same = CostModel::calibrated(g, two_cpus, p);
  EXPECT_EQ(same.graph_mismatch(), "");
  EXPECT_DOUBLE_EQ(same.calibrated_fraction(), 1.0);
  EXPECT_NEAR(same.cpu_step_anchor(), 1.25, 1e-9);
  EXPECT_GT(same.group_copy_s_per_byte(), 0.0);
  EXPECT_EQ(same.profile_warning().find("profile this graph"), std::string::npos);

  const CostModel other = CostModel::calibrated(wider, two_cpus, p);
  EXPECT_EQ(other.graph_mismatch(),
            "its op 'x' was " + op_signature(g, OpId(0)) + ", here " + op_signature(wider, OpId(0)));
  EXPECT_NE(op_signature(g, OpId(0)), op_signature(wider, OpId(0)));
  EXPECT_DOUBLE_EQ(other.calibrated_fraction(), 0.0);  // no op of these shapes was timed
  EXPECT_EQ(other.cpu_step_anchor(), 1.0);
  EXPECT_EQ(other.group_copy_s_per_byte(), 0.0);
  EXPECT_NE(other.profile_warning().find("profile this graph"), std::string::npos);
  const CostModel by_signature = CostModel::calibrated(wider, two_cpus, named_other);
  EXPECT_EQ(by_signature.graph_mismatch(), "");         // another graph by its name: nothing to warn of
  EXPECT_EQ(by_signature.profile_of_graph(), "other");  // but whose times they are is said
  EXPECT_EQ(same.profile_of_graph(), "");
  for (int d = 0; d < 2; ++d)
    for (int o = 0; o < wider.size(); ++o)
      EXPECT_DOUBLE_EQ(other.op_seconds(OpId(o), DeviceId(d)), by_signature.op_seconds(OpId(o), DeviceId(d)));

  // One op of another shape makes it another graph's profile; the ops of the
  // same shapes keep their times, by signature.
  const CostModel partly = CostModel::calibrated(one_differs, two_cpus, p);
  EXPECT_EQ(partly.graph_mismatch(), "its op 'y4' was aten::relu(float[1000]), here aten::relu(float[2000])");
  const CostModel partly_by_signature = CostModel::calibrated(one_differs, two_cpus, named_other);
  for (int o = 0; o < one_differs.size(); ++o)
    EXPECT_DOUBLE_EQ(partly.op_seconds(OpId(o), DeviceId(0)), partly_by_signature.op_seconds(OpId(o), DeviceId(0)));
  EXPECT_DOUBLE_EQ(partly.calibrated_fraction(), 0.75);  // y1-y3 of the four ops with work
  EXPECT_DOUBLE_EQ(partly.op_seconds(OpId(1), DeviceId(0)),
                   CostModel::calibrated(g, two_cpus, named_other).op_seconds(OpId(1), DeviceId(0)));
}

// A mixed step measured at or below the simulation, or a profile of another
// graph: `fitted` (the copy cost the mixed step fits) stays 0.
void expect_no_fit(const Graph& g, const Cluster& c, const Profile& p, double simulated,
                   double (CostModel::*fitted)() const) {
  Profile below = p;
  below.mixed.step_s = simulated * 0.9;
  EXPECT_EQ((CostModel::calibrated(g, c, below).*fitted)(), 0.0);
  Profile other = p;
  other.graph = "other";
  EXPECT_EQ((CostModel::calibrated(g, c, other).*fitted)(), 0.0);
}

// The profile's mixed step (groups dealt round robin over the CPU devices)
// fits the cost per byte of a copy between CPU devices beyond the link fit.
// A chain x -> y1 -> ... -> y4 dealt over two devices moves 4 x 4000 bytes
// one after the other, so 0.04 s more measured than simulated is 2.5e-6 s/B
// (or, priced per copy, 0.01 s for each of the 4 copies).
TEST(CostModel, MixedStepFitsTheCopyCostBetweenCpuDevices) {
  const Graph g = relu_chain();
  const Cluster two_cpus = cpu_pair();
  Profile p = chain_profile(g, 1.0);
  p.links.push_back({"cpu:0", "cpu:1", 0.01, 1e6, {}});
  p.links.push_back({"cpu:1", "cpu:0", 0.01, 1e6, {}});
  const Placement rr = round_robin_groups(g, {DeviceId(0), DeviceId(1)});
  const double simulated = simulate(g, rr, two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  ASSERT_GT(simulated, 0.4);

  p.mixed.devices = {"cpu:0", "cpu:1"};
  p.mixed.step_s = simulated + 0.04;
  const CostModel m = CostModel::calibrated(g, two_cpus, p);
  EXPECT_NEAR(m.group_copy_s_per_byte(), 2.5e-6, 1e-10);
  EXPECT_NEAR(m.transfer_seconds(DeviceId(0), DeviceId(1), 4000), 0.01 + 0.004 + 0.01, 1e-7);
  EXPECT_NEAR(simulate(g, rr, two_cpus, m).step_s, p.mixed.step_s, 1e-6);
  Profile unmixed = p;
  unmixed.mixed = MixedStep{};
  const Placement single = round_robin_groups(g, {DeviceId(0)});  // no copies: as before
  EXPECT_DOUBLE_EQ(simulate(g, single, two_cpus, m).step_s,
                   simulate(g, single, two_cpus, CostModel::calibrated(g, two_cpus, unmixed)).step_s);

  // Measured at or below the simulation, another graph's profile, or devices this cluster lacks: no fit.
  expect_no_fit(g, two_cpus, p, simulated, &CostModel::group_copy_s_per_byte);
  Profile elsewhere = p;
  elsewhere.mixed.devices = {"cpu:0", "cpu:5"};
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, elsewhere).group_copy_s_per_byte(), 0.0);
  // A device of another kind in the pair (no contention group): links keep their fit.
  EXPECT_EQ(CostModel::calibrated(two_op_graph(), cluster(), p).group_copy_s_per_byte(), 0.0);

  // The same mixed step priced per copy (GroupCopyPricing::PerCopy): 0.04 s over
  // the chain's 4 copies is 0.01 s a copy, whatever its size; nothing per byte.
  const auto per_copy = CostModel::GroupCopyPricing::PerCopy;
  const CostModel c = CostModel::calibrated(g, two_cpus, p, per_copy);
  EXPECT_EQ(c.group_copy_s_per_byte(), 0.0);
  EXPECT_NEAR(c.group_copy_s(), 0.01, 1e-8);
  EXPECT_NEAR(c.transfer_seconds(DeviceId(0), DeviceId(1), 4000), 0.01 + 0.004 + 0.01, 1e-7);
  EXPECT_NEAR(c.transfer_seconds(DeviceId(0), DeviceId(1), 40), 0.01 + 0.00004 + 0.01, 1e-7);
  EXPECT_NEAR(simulate(g, rr, two_cpus, c).step_s, p.mixed.step_s, 1e-6);
  EXPECT_EQ(m.group_copy_s(), 0.0);  // the default prices per byte
  Profile below = p;
  below.mixed.step_s = simulated * 0.9;
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, below, per_copy).group_copy_s(), 0.0);
}

// Every op 0.1 s (inputs 0) on cpu:0 and on cuda:0, links both ways 10 ms + 1 MB/s.
Profile cpu_gpu_profile(const Graph& g) {
  Profile p;
  p.graph = g.name;
  for (const Op& op : g.ops()) {
    const double s = op.type == op_types::kInput ? 0.0 : 0.1;
    p.ops.push_back({op.name, "", "cpu:0", "cpu", s});
    p.ops.push_back({op.name, "", "cuda:0", "cuda", s});
  }
  p.links.push_back({"cpu:0", "cuda:0", 0.01, 1e6, {}});
  p.links.push_back({"cuda:0", "cpu:0", 0.01, 1e6, {}});
  return p;
}

// Over CPU devices and a GPU, the mixed step fits a cost per copy between
// devices of different kinds, whatever its size (on an H200 the simulator's
// error grew with the number of those copies, not their bytes:
// bench/results/gpu_crossings.md). The chain x -> y1 -> ... -> y4 dealt over
// cpu:0 and cuda:0 makes 4 copies across, one after the other: 0.04 s more is
// 0.01 s per copy.
TEST(CostModel, MixedStepOverCpusAndAGpuFitsACostPerCopyBetweenThem) {
  const Graph g = relu_chain();
  const Cluster c = cluster();  // cpu:0, cuda:0
  Profile p = cpu_gpu_profile(g);
  const Placement rr = round_robin_groups(g, {DeviceId(0), DeviceId(1)});
  const double simulated = simulate(g, rr, c, CostModel::calibrated(g, c, p)).step_s;

  p.mixed.devices = {"cpu:0", "cuda:0"};
  p.mixed.step_s = simulated + 0.04;
  const CostModel m = CostModel::calibrated(g, c, p);
  EXPECT_NEAR(m.cross_copy_s(), 0.01, 1e-7);
  EXPECT_TRUE(m.cross_copies_on_destination());
  EXPECT_EQ(m.group_copy_s_per_byte(), 0.0);
  EXPECT_NEAR(m.transfer_seconds(DeviceId(0), DeviceId(1), 4000), 0.01 + 0.004 + 0.01, 1e-7);
  EXPECT_NEAR(m.transfer_seconds(DeviceId(1), DeviceId(0), 4000), 0.01 + 0.004 + 0.01, 1e-7);
  EXPECT_NEAR(m.transfer_seconds(DeviceId(0), DeviceId(1), 8000), 0.01 + 0.008 + 0.01, 1e-7);  // per copy, not per byte
  EXPECT_NEAR(simulate(g, rr, c, m).step_s, p.mixed.step_s, 1e-6);
  // Measured at or below the simulation, or another graph's profile: links keep their fit.
  expect_no_fit(g, c, p, simulated, &CostModel::cross_copy_s);
  // Every op on one device moves nothing: nothing to fit, whatever was measured.
  Profile one = p;
  one.mixed.devices = {"cpu:0", "cuda:0"};
  Graph lone;
  lone.name = "chain";
  lone.add_op(g.op(OpId(0)));
  EXPECT_EQ(CostModel::calibrated(lone, c, one).cross_copy_s(), 0.0);

  // Two CPU devices and the GPU (mixed_step_devices: every CPU device, then the GPU): x, y3 on cpu:0, y1, y4 on
  // cpu:1, y2 on cuda:0 make 2 copies across kinds (y1 -> y2, y2 -> y3) and 2 between the CPU devices, which
  // keep their link fit on a cluster with a GPU; the 0.04 s the step lacks is put on the 2 copies across.
  Cluster three = c;
  three.devices.insert(three.devices.begin() + 1, three.devices[0]);
  three.devices[1].name = "cpu:1";
  for (const Op& op : g.ops()) p.ops.push_back({op.name, "", "cpu:1", "cpu", op.type == op_types::kInput ? 0.0 : 0.1});
  p.links.push_back({"cpu:0", "cpu:1", 0.01, 1e6, {}});
  p.links.push_back({"cpu:1", "cpu:0", 0.01, 1e6, {}});
  p.links.push_back({"cpu:1", "cuda:0", 0.01, 1e6, {}});
  p.links.push_back({"cuda:0", "cpu:1", 0.01, 1e6, {}});
  const std::vector<DeviceId> all{DeviceId(0), DeviceId(1), DeviceId(2)};
  ASSERT_EQ(mixed_step_devices(three), all);
  const Placement rr3 = round_robin_groups(g, all);
  Profile p3 = p;
  p3.mixed = MixedStep{};
  const double simulated3 = simulate(g, rr3, three, CostModel::calibrated(g, three, p3)).step_s;
  p3.mixed.devices = {"cpu:0", "cpu:1", "cuda:0"};
  p3.mixed.step_s = simulated3 + 0.04;
  const CostModel m3 = CostModel::calibrated(g, three, p3);
  EXPECT_NEAR(m3.cross_copy_s(), 0.02, 1e-7);
  EXPECT_EQ(m3.group_copy_s_per_byte(), 0.0);
  EXPECT_NEAR(m3.transfer_seconds(DeviceId(0), DeviceId(1), 4000), 0.01 + 0.004, 1e-7);  // between CPU devices
  EXPECT_NEAR(simulate(g, rr3, three, m3).step_s, p3.mixed.step_s, 1e-6);
  // A profile over one CPU device and the GPU of this cluster (taken before the step spanned every CPU device):
  // the copies cost far less with the other devices idle, so nothing is fitted on it.
  Profile before = p3;
  before.mixed.devices = {"cpu:0", "cuda:0"};
  const CostModel unfitted = CostModel::calibrated(g, three, before);
  EXPECT_EQ(unfitted.cross_copy_s(), 0.0);
  EXPECT_FALSE(unfitted.cross_copies_on_destination());
}

// Made on the destination, copies can reach the measured step at no cost per copy (there they wait for the
// destination's work instead of running beside it): the fit then keeps whichever of the two ways simulates
// closer to the measurement, with no cost per copy. x on cpu:0 feeds y1 on cuda:0 and y2 on cpu:0, which
// feeds y3 on cuda:0: on the channel y2's copy runs beside y1; on cuda:0 it waits for y1.
TEST(CostModel, MixedStepKeepsTheCloserWayWhenCopiesOnTheDestinationAloneReachIt) {
  Graph g;
  g.name = "fork";
  const OpId x = add_op(g, "x", op_types::kInput, {});
  const OpId y1 = add_op(g, "y1", "aten::relu", {{x, 0}});
  const OpId y2 = add_op(g, "y2", "aten::relu", {{x, 0}});
  add_op(g, "y3", "aten::add", {{y1, 0}, {y2, 0}});
  const Cluster c = cluster();  // cpu:0, cuda:0
  Profile p = cpu_gpu_profile(g);
  const Placement rr = round_robin_groups(g, {DeviceId(0), DeviceId(1)});
  ASSERT_EQ(rr.device_of, (std::vector<DeviceId>{DeviceId(0), DeviceId(1), DeviceId(0), DeviceId(1)}));
  CostModel beside = CostModel::calibrated(g, c, p);
  const double channel = simulate(g, rr, c, beside).step_s;
  beside.set_cross_copies_on_destination(true);
  const double destination = simulate(g, rr, c, beside).step_s;
  ASSERT_GT(destination, channel + 0.01);
  p.mixed.devices = {"cpu:0", "cuda:0"};
  auto fitted = [&](double measured) {
    p.mixed.step_s = measured;
    return CostModel::calibrated(g, c, p);
  };
  // Measured where the destination alone lands: made there, at no cost per copy.
  CostModel m = fitted(destination);
  EXPECT_TRUE(m.cross_copies_on_destination());
  EXPECT_EQ(m.cross_copy_s(), 0.0);
  // Just above the channel's step: the channel is closer, and stays.
  m = fitted(channel + 0.001);
  EXPECT_FALSE(m.cross_copies_on_destination());
  EXPECT_EQ(m.cross_copy_s(), 0.0);
  // Beyond the destination's: made there, with a cost per copy on top that reaches the measurement.
  m = fitted(destination + 0.02);
  EXPECT_TRUE(m.cross_copies_on_destination());
  EXPECT_GT(m.cross_copy_s(), 0.0);
  EXPECT_NEAR(simulate(g, rr, c, m).step_s, destination + 0.02, 1e-6);
}

TEST(CostModel, OverridesAndScaling) {
  CostModel m = CostModel::uniform(3, 2, 1.5);
  m.set_op_seconds(OpId(2), DeviceId(1), 4.0);
  m.scale_device(DeviceId(1), 2.0);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(0)), 1.5);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(0), DeviceId(1)), 3.0);
  EXPECT_DOUBLE_EQ(m.op_seconds(OpId(2), DeviceId(1)), 8.0);
  m.set_link(DeviceId(0), DeviceId(1), 1.0, 10.0);
  m.scale_link(DeviceId(0), DeviceId(1), 2.0);
  EXPECT_DOUBLE_EQ(m.transfer_seconds(DeviceId(0), DeviceId(1), 10), 4.0);
}

}  // namespace
}  // namespace placer
