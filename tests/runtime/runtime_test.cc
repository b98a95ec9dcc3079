// Runtime: real execution under different placements, exact values on tiny
// graphs, memory accounting, and the failure statuses.
#include "placer/runtime/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "placer/frontends/builders.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using namespace rt_test;

TEST(Runtime, SquareLossGradientAndUpdateAreExact) {
  const Graph fwd = square_loss_graph();
  const Graph train = make_training_graph(fwd, 0.1);
  Runtime rt(cpus(2));
  const StepValues before = rt.run_once(fwd, single_device(fwd, DeviceId(0)), 7);
  ASSERT_EQ(before.tensors.count("w"), 1u);
  const std::vector<float>& w = before.tensors.at("w");
  ASSERT_EQ(w.size(), 6u);
  double sum_sq = 0;
  for (float v : w) {
    EXPECT_LE(std::fabs(v), 1.0 / std::sqrt(3.0) + 1e-6);  // uniform in +-1/sqrt(fan_in)
    sum_sq += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(before.tensors.at("loss")[0], sum_sq, 1e-5);
  // d loss / d w = 2w, so w' = w - 0.1 * 2w = 0.8 w, on one device and split.
  for (const Placement& p : {single_device(train, DeviceId(1)), round_robin_groups(train, 2)}) {
    const StepValues after = rt.run_once(train, p, 7);
    const std::vector<float>& w2 = after.tensors.at("w");
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w2[i], 0.8f * w[i], 1e-6);
    EXPECT_NEAR(after.tensors.at("loss")[0], sum_sq, 1e-5);
  }
}

TEST(Runtime, HandMlpSameUnderEveryPlacement) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  ASSERT_TRUE(train.is_training());
  Runtime rt2(cpus(2));
  Runtime rt3(cpus(3));
  const StepValues ref = rt2.run_once(train, single_device(train, DeviceId(0)), 3);
  EXPECT_EQ(ref.tensors.count("loss"), 1u);
  EXPECT_EQ(ref.tensors.count("w1"), 1u);
  expect_same_values(ref, rt2.run_once(train, round_robin_groups(train, 2), 3), 1e-5, "round robin cpu:2");
  for (uint32_t s = 0; s < 3; ++s)
    expect_same_values(ref, rt3.run_once(train, random_placement(train, 3, s), 3), 1e-5, "random cpu:3");
  // A different seed gives different values (the comparison can fail).
  const StepValues other = rt2.run_once(train, single_device(train, DeviceId(0)), 4);
  EXPECT_NE(ref.tensors.at("w1"), other.tensors.at("w1"));
}

TEST(Runtime, BuilderGraphsSameUnderEveryPlacement) {
  Runtime rt2(cpus(2));
  Runtime rt3(cpus(3));
  for (const BuilderCase& c : tiny_builders()) {
    BuilderOptions opts;
    opts.values = c.options;
    const Graph g = build_graph(c.name, opts);
    ASSERT_TRUE(g.is_training()) << c.name;
    const StepValues ref = rt2.run_once(g, single_device(g, DeviceId(0)), 11);
    ASSERT_FALSE(ref.tensors.empty()) << c.name;
    expect_same_values(ref, rt2.run_once(g, round_robin_groups(g, 2), 11), 2e-4, c.name + " round robin cpu:2");
    expect_same_values(ref, rt3.run_once(g, random_placement(g, 3, 5), 11), 2e-4, c.name + " random cpu:3");
    // The update really happened: a param moved away from its initial value.
    BuilderOptions fwd_opts = opts;
    fwd_opts.forward_only = true;
    const Graph fwd = build_graph(c.name, fwd_opts);
    ASSERT_FALSE(fwd.is_training());
    const StepValues init = rt2.run_once(fwd, round_robin_groups(fwd, 2), 11);
    int moved = 0;
    for (const auto& [name, v] : init.tensors)
      if (ref.tensors.count(name) && fwd.find(name) && fwd.op(*fwd.find(name)).type == op_types::kParam)
        moved += ref.tensors.at(name) != v;
    EXPECT_GT(moved, 0) << c.name;
  }
}

TEST(Runtime, MeasureReportsSamplesBusyPeakAndTransfers) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 4;
  o.max_steps = 4;
  StepResult single = rt.measure(train, single_device(train, DeviceId(0)), o);
  ASSERT_TRUE(single.ok()) << single.message;
  EXPECT_EQ(single.samples_s.size(), 4u);
  EXPECT_GT(single.step_s, 0.0);
  EXPECT_GE(single.iqr_s, 0.0);
  ASSERT_EQ(single.devices.size(), 2u);
  EXPECT_GT(single.devices[0].busy_s, 0.0);
  EXPECT_EQ(single.devices[1].busy_s, 0.0);
  EXPECT_GT(single.devices[0].peak_bytes, 0);
  EXPECT_EQ(single.devices[1].peak_bytes, 0);
  EXPECT_EQ(single.transfer_bytes, 0);
  StepResult split = rt.measure(train, round_robin_groups(train, 2), o);
  ASSERT_TRUE(split.ok()) << split.message;
  EXPECT_GT(split.transfer_bytes, 0);
  EXPECT_GT(split.devices[1].peak_bytes, 0);
}

// Exact accounting: a 64-byte param, a transposed view of it (no new
// memory), relu of the view (64 bytes) on another device (64 bytes moved).
TEST(Runtime, MemoryAndTransferBytesAreExact) {
  Graph g;
  g.name = "views";
  OpId p = g.add_op(param("p", {4, 4}));
  OpId t = g.add_op(make("t", "aten::t", {{p, 0}}, {Arg::tensor(0)}, {f32({4, 4})}));
  g.add_op(make("r", "aten::relu", {{t, 0}}, {Arg::tensor(0)}, {f32({4, 4})}));
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 2;
  StepResult one = rt.measure(g, single_device(g, DeviceId(0)), o);
  ASSERT_TRUE(one.ok()) << one.message;
  EXPECT_EQ(one.devices[0].peak_bytes, 128);  // p + relu output
  EXPECT_EQ(one.transfer_bytes, 0);
  Placement split = single_device(g, DeviceId(0));
  split.device_of[2] = DeviceId(1);
  StepResult two = rt.measure(g, split, o);
  ASSERT_TRUE(two.ok()) << two.message;
  EXPECT_EQ(two.devices[0].peak_bytes, 64);
  EXPECT_EQ(two.devices[1].peak_bytes, 128);  // the copy of the view + relu output
  EXPECT_EQ(two.transfer_bytes, 64);
  // Values: relu(p^T).
  const StepValues v = rt.run_once(g, split, 0);
  const auto& pv = v.tensors.at("p");
  const auto& rv = v.tensors.at("r");
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(rv[i * 4 + j], std::max(0.0f, pv[j * 4 + i]));
}

// An op reading one tensor at two positions (mul(r, r)) is one use of it, as the plan counts uses: it was
// released once per position, so r was freed while a later op (a = m + r) still needed it.
TEST(Runtime, AnInputReadTwiceIsReleasedOnce) {
  Graph g;
  g.name = "twice";
  const OpId x = g.add_op(param("x", {4, 4}));  // a param: its values come back from run_once
  const OpId r = g.add_op(make("r", "aten::relu", {{x, 0}}, {Arg::tensor(0)}, {f32({4, 4})}));
  const OpId m =
      g.add_op(make("m", "aten::mul.Tensor", {{r, 0}, {r, 0}}, {Arg::tensor(0), Arg::tensor(1)}, {f32({4, 4})}));
  g.add_op(make("a", "aten::add.Tensor", {{m, 0}, {r, 0}}, {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)},
                {f32({4, 4})}));
  Runtime rt(cpus(1));
  const StepValues v = rt.run_once(g, single_device(g, DeviceId(0)), 3);
  ASSERT_EQ(v.status, StepStatus::Ok) << v.message;
  const auto& xv = v.tensors.at("x");
  const auto& av = v.tensors.at("a");
  for (size_t i = 0; i < xv.size(); ++i) {
    const float rv = std::max(0.0f, xv[i]);
    EXPECT_FLOAT_EQ(av[i], rv * rv + rv);
  }
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 2;
  const StepResult one = rt.measure(g, single_device(g, DeviceId(0)), o);
  ASSERT_TRUE(one.ok()) << one.message;
  EXPECT_EQ(one.devices[0].peak_bytes, 64 + 3 * 64);  // x, and r, m and a alive together while a runs
}

TEST(Runtime, OomIsAStatusWithDeviceAndBytes) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Cluster c = cpus(2);
  c.devices[1].memory_bytes = 200;  // less than w1 (120 B) + b1 + activations
  Runtime rt(c);
  Placement p = single_device(train, DeviceId(1));
  StepResult r = rt.measure(train, p, MeasureOptions{});
  EXPECT_EQ(r.status, StepStatus::Oom);
  EXPECT_EQ(r.oom_device, "cpu:1");
  EXPECT_EQ(r.oom_capacity_bytes, 200);
  EXPECT_GT(r.oom_needed_bytes, 200);
  EXPECT_NE(r.message.find("cpu:1"), std::string::npos);
  // The same graph fits on the roomy device.
  EXPECT_TRUE(rt.measure(train, single_device(train, DeviceId(0)), MeasureOptions{}).ok());
  // run_once reports the failure as a status too, with no values.
  const StepValues values = rt.run_once(train, p, 0);
  EXPECT_EQ(values.status, StepStatus::Oom);
  EXPECT_NE(values.message.find("cpu:1"), std::string::npos) << values.message;
  EXPECT_TRUE(values.tensors.empty());
  EXPECT_EQ(rt.run_once(train, single_device(train, DeviceId(0)), 0).status, StepStatus::Ok);
}

TEST(Runtime, TimeoutReturnsPromptly) {
  // A chain of 400 matmuls of 256x256 takes far longer than 1 ms.
  Graph g;
  g.name = "chain";
  OpId x = g.add_op(param("x", {256, 256}));
  OpId prev = x;
  for (int i = 0; i < 400; ++i)
    prev = g.add_op(make("mm" + std::to_string(i), "aten::mm", {{prev, 0}, {x, 0}}, {Arg::tensor(0), Arg::tensor(1)},
                         {f32({256, 256})}));
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.timeout_s = 1e-3;
  const auto t0 = std::chrono::steady_clock::now();
  StepResult r = rt.measure(g, single_device(g, DeviceId(0)), o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, StepStatus::Timeout);
  EXPECT_LT(took, 2.0);
  // The runtime is usable afterwards.
  o.timeout_s = 120;
  o.warmup_steps = 0;
  o.measured_steps = 1;
  EXPECT_TRUE(rt.measure(square_loss_graph(), single_device(square_loss_graph(), DeviceId(0)), o).ok());
}

TEST(Runtime, KernelErrorIsAStatusNamingTheOp) {
  Graph g;
  g.name = "bad";
  OpId a = g.add_op(param("a", {2, 3}));
  OpId b = g.add_op(param("b", {2, 3}));
  g.add_op(make("bad_mm", "aten::mm", {{a, 0}, {b, 0}}, {Arg::tensor(0), Arg::tensor(1)}, {f32({2, 3})}));
  Runtime rt(cpus(1));
  StepResult r = rt.measure(g, single_device(g, DeviceId(0)), MeasureOptions{});
  EXPECT_EQ(r.status, StepStatus::Error);
  EXPECT_NE(r.message.find("bad_mm"), std::string::npos) << r.message;
}

TEST(Runtime, WrongOutputShapeIsAnError) {
  Graph g;
  g.name = "shape";
  OpId a = g.add_op(param("a", {2, 3}));
  g.add_op(make("r", "aten::relu", {{a, 0}}, {Arg::tensor(0)}, {f32({3, 2})}));
  Runtime rt(cpus(1));
  StepResult r = rt.measure(g, single_device(g, DeviceId(0)), MeasureOptions{});
  EXPECT_EQ(r.status, StepStatus::Error);
  EXPECT_NE(r.message.find("[2,3]"), std::string::npos) << r.message;
}

TEST(Runtime, BadPlacementsAndOpsThrow) {
  const Graph g = square_loss_graph();
  Runtime rt(cpus(2));
  Placement missing;
  missing.device_of = {DeviceId(0), DeviceId(0)};
  EXPECT_THROW(rt.measure(g, missing, MeasureOptions{}), PlacementError);
  Placement unknown = single_device(g, DeviceId(0));
  unknown.device_of[1] = DeviceId(5);
  EXPECT_THROW(rt.measure(g, unknown, MeasureOptions{}), PlacementError);
  Graph weird;
  weird.name = "weird";
  OpId a = weird.add_op(param("a", {2}));
  weird.add_op(make("nope", "aten::no_such_op", {{a, 0}}, {Arg::tensor(0)}, {f32({2})}));
  try {
    rt.measure(weird, single_device(weird, DeviceId(0)), MeasureOptions{});
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
  if (!cuda_available()) {
    // Without a GPU the error names the device and says what exists.
    try {
      Runtime cuda(parse_device_list("cpu,cuda:0"));
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("'cuda:0'"), std::string::npos) << m;
      EXPECT_TRUE(m.find("no visible CUDA GPU") != std::string::npos || m.find("no CUDA paths") != std::string::npos)
          << m;
    }
  }
}

TEST(Runtime, BuildInfoNamesLibTorchAndCuda) {
  const BuildInfo info = build_info();
  EXPECT_EQ(info.torch_version.rfind("2.11", 0), 0u) << info.torch_version;
  EXPECT_EQ(static_cast<int>(info.gpus.size()), cuda_device_count());
  const std::string text = describe(info);
  EXPECT_NE(text.find("LibTorch " + info.torch_version), std::string::npos) << text;
  EXPECT_NE(text.find(info.gpus.empty() ? "GPUs: none visible" : "GPUs: "), std::string::npos) << text;
  EXPECT_NE(text.find("malloc: " + info.malloc_name), std::string::npos) << text;
  if (info.cuda_compiled) {
    EXPECT_EQ(info.cuda_version.rfind("13.", 0), 0u) << info.cuda_version;
  }
}

// The build links tcmalloc where it is installed (CMakeLists.txt); a link that
// lost it (--as-needed, a library order that puts libc first) would leave the
// executor threads on glibc's per-thread arenas (bench/results/allocator_cpu2.md).
TEST(Runtime, MallocIsTheOneTheBuildLinked) {
  EXPECT_STREQ(host_malloc(), PLACER_TCMALLOC_LINKED ? "tcmalloc" : "glibc");
  void* p = std::malloc(1 << 20);
  ASSERT_NE(p, nullptr);
  std::free(p);
}

TEST(Runtime, TimelineWritesValidChromeTrace) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(cpus(2));
  MeasureOptions o;
  o.warmup_steps = 1;
  o.measured_steps = 1;
  std::vector<TimelineEvent> events;
  StepResult r = rt.measure(train, round_robin_groups(train, 2), o, &events);
  ASSERT_TRUE(r.ok()) << r.message;
  size_t ops = 0, transfers = 0;
  for (const auto& e : events) {
    (e.category == "transfer" ? transfers : ops)++;
    EXPECT_GE(e.start_s, 0.0);
    EXPECT_GE(e.duration_s, 0.0);
  }
  EXPECT_EQ(ops, static_cast<size_t>(train.size()));
  EXPECT_GT(transfers, 0u);
  const std::string path = testing::TempDir() + "/runtime_trace_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(events, path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  EXPECT_FALSE(doc.HasParseError());
}

TEST(Runtime, ProfileTimesEveryOpAndFitsLinks) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(cpus(2));
  ProfileOptions o;
  o.repetitions = 3;
  o.transfer_sizes = {1 << 10, 1 << 16, 1 << 20};
  Profile p = rt.profile(train, o);
  EXPECT_EQ(p.ops.size(), static_cast<size_t>(train.size()));  // one device kind
  int contended = 0;
  for (const auto& t : p.ops) {
    EXPECT_EQ(t.device, "cpu:0");
    EXPECT_GE(t.seconds, 0.0);
    // Timed again with both CPU devices busy (one copy of the graph on each).
    EXPECT_GE(t.contended_seconds, 0.0);
    contended += t.contended_seconds > 0;
  }
  EXPECT_GT(contended, 0);
  ASSERT_EQ(p.links.size(), 2u);  // cpu:0->cpu:1 and back
  for (const auto& l : p.links) {
    EXPECT_EQ(l.samples.size(), 3u);
    EXPECT_GT(l.beta_Bps, 1e6);
    // Hops through the executor: every transfer pays a hand-off, so alpha > 0.
    EXPECT_GT(l.alpha_s, 0.0);
    EXPECT_LT(l.alpha_s, 0.1);
  }
  // Both directions come from the one chain that alternates between them.
  EXPECT_EQ(p.links[0].alpha_s, p.links[1].alpha_s);
  EXPECT_GT(p.per_op_overhead_s, 0.0);
  EXPECT_LT(p.per_op_overhead_s, 1e-3);
  // The mixed step: the graph split round robin over both CPU devices.
  EXPECT_EQ(p.mixed.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
  EXPECT_GT(p.mixed.step_s, 0.0);
  EXPECT_LT(p.mixed.step_s, 10.0);
  // Each CPU device's step alone, both measured in one interleaved run.
  ASSERT_EQ(p.cpu_steps.size(), 2u);
  EXPECT_EQ(p.cpu_steps[0].device, "cpu:0");
  EXPECT_EQ(p.cpu_steps[1].device, "cpu:1");
  for (const DeviceStep& s : p.cpu_steps) {
    EXPECT_GT(s.step_s, 0.0);
    EXPECT_LT(s.step_s, 10.0);
  }
}

}  // namespace
}  // namespace placer
