// The simulator against step times and peak memories computed by hand.
#include "placer/env/simulator.h"
#include "placer/env/lower_bound_detail.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <type_traits>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

// The simulator runs on the execution rules the runtime's executor plans with.
static_assert(std::is_same_v<SimContext, ExecRules>);

// An op of `bytes_out` bytes per output (float32 elements = bytes / 4).
OpId add(Graph& g, const std::string& name, std::vector<TensorRef> inputs, std::vector<int64_t> out_bytes,
         const std::string& type = "aten::relu") {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  for (int64_t b : out_bytes) op.outputs.push_back(TensorSpec{{b / 4}, DType::Float32});
  return g.add_op(std::move(op));
}

// GPU-like devices by default: transfers go over the link's channel. CPU
// devices copy on the destination device instead (tested separately).
Cluster cluster_of(int devices, int64_t memory = 0, DeviceKind kind = DeviceKind::Cuda) {
  Cluster c;
  c.name = "test";
  for (int i = 0; i < devices; ++i) {
    Device d;
    d.kind = kind;
    d.name = std::string(kind == DeviceKind::Cpu ? "cpu:" : "cuda:") + std::to_string(i);
    d.memory_bytes = memory;
    c.devices.push_back(d);
  }
  return c;
}

Placement place(std::vector<int> devices) {
  Placement p;
  for (int d : devices) p.device_of.push_back(DeviceId(d));
  return p;
}

void set_costs(CostModel& m, const std::vector<double>& seconds) {
  for (size_t o = 0; o < seconds.size(); ++o)
    for (int d = 0; d < m.devices(); ++d) m.set_op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(d), seconds[o]);
}

TEST(Simulator, ChainOnOneDevice) {
  Graph g;
  const OpId a = add(g, "a", {}, {100});
  const OpId b = add(g, "b", {{a, 0}}, {200});
  add(g, "c", {{b, 0}}, {300});
  const Cluster c = cluster_of(1);
  CostModel m = CostModel::uniform(3, 1, 0.0);
  set_costs(m, {1.0, 2.0, 3.0});
  const StepResult r = simulate(g, place({0, 0, 0}), c, m);
  EXPECT_EQ(r.status, StepStatus::Ok);
  EXPECT_DOUBLE_EQ(r.step_s, 6.0);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 6.0);
  // a freed when b ends, so c's start sees b (200) + c (300).
  EXPECT_EQ(r.devices[0].peak_bytes, 500);
  EXPECT_EQ(r.transfer_bytes, 0);
}

TEST(Simulator, DiamondOverTwoDevices) {
  Graph g;
  const OpId a = add(g, "a", {}, {1000});
  const OpId b = add(g, "b", {{a, 0}}, {500});
  const OpId c = add(g, "c", {{a, 0}}, {2000});
  add(g, "d", {{b, 0}, {c, 0}}, {100});
  const Cluster cl = cluster_of(2);
  CostModel m = CostModel::uniform(4, 2, 0.0);
  set_costs(m, {1.0, 2.0, 3.0, 1.0});
  m.set_link(DeviceId(0), DeviceId(1), 0.5, 1000.0);
  m.set_link(DeviceId(1), DeviceId(0), 0.5, 1000.0);
  std::vector<TimelineEvent> timeline;
  const StepResult r = simulate(g, place({0, 0, 1, 0}), cl, m, {}, &timeline);
  // a 0-1; b 1-3; a->cpu:1 1-2.5; c 2.5-5.5; c->cpu:0 5.5-8; d 8-9.
  EXPECT_DOUBLE_EQ(r.step_s, 9.0);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 4.0);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 3.0);
  EXPECT_EQ(r.transfer_bytes, 3000);
  // cpu:0: b (500) + c's copy (2000) + d (100) at t=8, a already freed at 3.
  EXPECT_EQ(r.devices[0].peak_bytes, 2600);
  // cpu:1: a's copy (1000) + c (2000).
  EXPECT_EQ(r.devices[1].peak_bytes, 3000);
  ASSERT_EQ(timeline.size(), 6u);
  int transfers = 0;
  for (const TimelineEvent& e : timeline) {
    if (e.category != "transfer") continue;
    ++transfers;
    if (e.lane == "cuda:0->cuda:1") {
      EXPECT_DOUBLE_EQ(e.start_s, 1.0);
      EXPECT_DOUBLE_EQ(e.duration_s, 1.5);
    } else {
      EXPECT_EQ(e.lane, "cuda:1->cuda:0");
      EXPECT_DOUBLE_EQ(e.start_s, 5.5);
      EXPECT_DOUBLE_EQ(e.duration_s, 2.5);
    }
  }
  EXPECT_EQ(transfers, 2);
}

// a (two outputs of 1000 and 2000 bytes) feeds b, c, d and e; every op takes
// 1 s but e 5 s; the link moves 1000 bytes/s with no latency.
Graph fan_out(CostModel* m) {
  Graph g;
  const OpId a = add(g, "a", {}, {1000, 2000});
  add(g, "b", {{a, 0}}, {12});
  add(g, "c", {{a, 0}}, {12});
  add(g, "d", {{a, 1}}, {12});
  add(g, "e", {{a, 0}}, {12});
  *m = CostModel::uniform(5, 2, 1.0);
  set_costs(*m, {1.0, 1.0, 1.0, 1.0, 5.0});
  m->set_link(DeviceId(0), DeviceId(1), 0.0, 1000.0);
  return g;
}

TEST(Simulator, FanOutSharesOneTransferPerDeviceAndQueuesFifo) {
  CostModel m;
  const Graph g = fan_out(&m);
  const Cluster cl = cluster_of(2);
  const StepResult r = simulate(g, place({0, 1, 1, 1, 0}), cl, m);
  // a 0-1; e 1-6 on cpu:0. a:0 sent once (1-2), a:1 waits for the channel (2-4).
  // b 2-3 (lowest id first), c 3-4, d 4-5. Step = e's end.
  EXPECT_DOUBLE_EQ(r.step_s, 6.0);
  EXPECT_EQ(r.transfer_bytes, 3000);
  EXPECT_EQ(r.devices[0].peak_bytes, 3012);  // both outputs of a + e
  // a:0's copy (1000) lives until c ends at 4; a:1's copy arrives at 4, then d.
  EXPECT_EQ(r.devices[1].peak_bytes, 2012);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 3.0);
}

TEST(Simulator, CopiesWithinAHostRunOnTheDestinationDeviceAheadOfItsOps) {
  // The fan-out above on two CPU devices of one host: the copies take cpu:1 itself.
  CostModel m;
  const Graph g = fan_out(&m);
  const Cluster cl = cluster_of(2, 0, DeviceKind::Cpu);
  // Not one host (no contention group): the link's channel, as above.
  EXPECT_DOUBLE_EQ(simulate(g, place({0, 1, 1, 1, 0}), cl, m).step_s, 6.0);
  m.set_contention_group({DeviceId(0), DeviceId(1)});  // contended = alone: no slowdown
  std::vector<TimelineEvent> tl;
  const StepResult r = simulate(g, place({0, 1, 1, 1, 0}), cl, m, {}, &tl);
  // a 0-1, e 1-6 on cpu:0. On cpu:1: copy of a:0 1-2, copy of a:1 2-4 (copies
  // go first, oldest first), then b 4-5, c 5-6, d 6-7.
  EXPECT_DOUBLE_EQ(r.step_s, 7.0);
  EXPECT_EQ(r.transfer_bytes, 3000);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 3.0);  // ops only, as the runtime counts it
  EXPECT_EQ(r.devices[1].peak_bytes, 3012);    // both copies + b's output at 4
  int copies = 0;
  for (const TimelineEvent& e : tl) {
    if (e.category != "transfer") continue;
    EXPECT_EQ(e.lane, "cpu:0->cpu:1");
    EXPECT_DOUBLE_EQ(e.start_s, copies == 0 ? 1.0 : 2.0);
    EXPECT_DOUBLE_EQ(e.duration_s, copies == 0 ? 1.0 : 2.0);
    ++copies;
  }
  EXPECT_EQ(copies, 2);
}

TEST(Simulator, CopiesBetweenACpuAndAGpuRunOnTheDestinationOnceACostPerCopyIsFitted) {
  // The fan-out above from a CPU device to a GPU: on the link's channel, until the profile's fit puts such
  // copies on their destination (CostModel::cross_copies_on_destination, with a cost per copy); then they hold
  // up the GPU's own work, as within a host. (A uniform cost model knows no device kinds, so a cost per copy
  // would not be added here; cost_model_test checks that it is.)
  CostModel m;
  const Graph g = fan_out(&m);
  Cluster cl = cluster_of(2);
  cl.devices[0].kind = DeviceKind::Cpu;
  cl.devices[0].name = "cpu:0";
  EXPECT_DOUBLE_EQ(simulate(g, place({0, 1, 1, 1, 0}), cl, m).step_s, 6.0);
  m.set_cross_copies_on_destination(true);
  const StepResult r = simulate(g, place({0, 1, 1, 1, 0}), cl, m);
  EXPECT_DOUBLE_EQ(r.step_s, 7.0);  // copies 1-2 and 2-4 on cuda:1, then b, c, d
  EXPECT_EQ(r.transfer_bytes, 3000);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 3.0);
  // Between two GPUs nothing changes: the link's channel.
  EXPECT_DOUBLE_EQ(simulate(g, place({0, 1, 1, 1, 0}), cluster_of(2), m).step_s, 6.0);
}

TEST(Simulator, ContentionSlowsOpsWhileOtherDevicesOfTheGroupAreBusy) {
  Graph g;
  add(g, "a", {}, {4});
  add(g, "b", {}, {4});
  CostModel m = CostModel::uniform(2, 2, 0.0);
  set_costs(m, {2.0, 1.0});  // alone
  for (int d = 0; d < 2; ++d) {
    m.set_contended_seconds(OpId(0), DeviceId(d), 3.0);
    m.set_contended_seconds(OpId(1), DeviceId(d), 2.0);
  }
  const Cluster cl = cluster_of(2, 0, DeviceKind::Cpu);
  // No group yet: independent devices.
  EXPECT_DOUBLE_EQ(simulate(g, place({0, 1}), cl, m).step_s, 2.0);
  m.set_contention_group({DeviceId(0), DeviceId(1)});
  std::vector<TimelineEvent> tl;
  const StepResult r = simulate(g, place({0, 1}), cl, m, {}, &tl);
  // Both busy from 0: a runs at 1/3 of its work per s, b at 1/2; b ends at 2.
  // a has 1/3 left, alone now: 2/3 s more.
  EXPECT_DOUBLE_EQ(r.step_s, 2.0 + 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 2.0 + 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 2.0);
  ASSERT_EQ(tl.size(), 2u);
  // One device: the group has nobody to contend with.
  EXPECT_DOUBLE_EQ(simulate(g, place({0, 0}), cl, m).step_s, 3.0);
}

TEST(Simulator, CopiesWithinAHostSlowDownWhileTheOtherDeviceIsBusy) {
  Graph g;
  const OpId a = add(g, "a", {}, {1000});
  add(g, "b", {}, {4});
  add(g, "c", {{a, 0}}, {4});
  CostModel m = CostModel::uniform(3, 2, 1.0);
  set_costs(m, {1.0, 4.0, 1.0});
  m.set_link(DeviceId(0), DeviceId(1), 0.0, 1000.0);   // the copy of a: 1 s alone
  m.set_contention_group({DeviceId(0), DeviceId(1)});  // ops: contended = alone
  m.set_copy_contention(DeviceId(1), 2.0);
  std::vector<TimelineEvent> tl;
  const StepResult r = simulate(g, place({0, 0, 1}), cluster_of(2, 0, DeviceKind::Cpu), m, {}, &tl);
  // cpu:0: a 0-1, b 1-5. cpu:1: the copy of a from 1, with b running: 2 s, to 3; c 3-4.
  EXPECT_DOUBLE_EQ(r.step_s, 5.0);
  for (const TimelineEvent& e : tl) {
    if (e.category == "transfer") {
      EXPECT_DOUBLE_EQ(e.start_s, 1.0);
      EXPECT_DOUBLE_EQ(e.duration_s, 2.0);
    }
    if (e.name == "c") {
      EXPECT_DOUBLE_EQ(e.start_s, 3.0);
    }
  }
}

TEST(Simulator, LowestReadyOpIdRunsFirst) {
  Graph g;
  const OpId a = add(g, "a", {}, {4});
  const OpId b = add(g, "b", {}, {4});  // ready at 0 with a
  add(g, "c", {{a, 0}}, {4});           // ready at 1, lower id than d
  add(g, "d", {{b, 0}}, {4});
  CostModel m = CostModel::uniform(4, 1, 1.0);
  std::vector<TimelineEvent> tl;
  simulate(g, place({0, 0, 0, 0}), cluster_of(1), m, {}, &tl);
  ASSERT_EQ(tl.size(), 4u);
  EXPECT_EQ(tl[0].name, "a");
  EXPECT_EQ(tl[1].name, "b");
  EXPECT_EQ(tl[2].name, "c");
  EXPECT_EQ(tl[3].name, "d");
}

TEST(Simulator, ParamsResidentAndBackwardKeepsForwardOutputsAlive) {
  Graph g;
  const OpId p = add(g, "w", {}, {400}, op_types::kParam);
  g.mutable_op(p).param_bytes = 400;
  // f has two outputs; g reads only f:1; bw (backward of f) reads f:0 and g.
  const OpId f = add(g, "f", {{p, 0}}, {100, 200});
  const OpId gg = add(g, "g", {{f, 1}}, {48});
  Op bw;
  bw.name = "f_backward";
  bw.type = op_types::kBackward;
  bw.phase = Phase::Backward;
  bw.forward = f;
  bw.inputs = {{f, 0}, {gg, 0}};
  bw.outputs = {TensorSpec{{100}, DType::Float32}};  // 400 bytes: gradient of w
  const OpId b = g.add_op(bw);
  Op sgd;
  sgd.name = "w_sgd";
  sgd.type = op_types::kSgd;
  sgd.phase = Phase::Update;
  sgd.forward = p;
  sgd.inputs = {{p, 0}, {b, 0}};
  g.add_op(sgd);
  CostModel m = CostModel::uniform(5, 1, 1.0);
  m.set_op_seconds(p, DeviceId(0), 0.0);
  const StepResult r = simulate(g, place({0, 0, 0, 0, 0}), cluster_of(1), m);
  EXPECT_DOUBLE_EQ(r.step_s, 4.0);
  // w 400 throughout; f +300; g +48; f:1 still held by f_backward; bw +400.
  EXPECT_EQ(r.devices[0].peak_bytes, 400 + 300 + 48 + 400);
}

TEST(Simulator, ViewsTakeNoMemoryAndBackwardHoldsDifferentiatedInputs) {
  Graph g;
  const OpId a = add(g, "a", {}, {400});
  const OpId v = add(g, "v", {{a, 0}}, {400}, "aten::view");
  add(g, "c", {{v, 0}}, {4});
  CostModel m = CostModel::uniform(3, 1, 1.0);
  EXPECT_EQ(simulate(g, place({0, 0, 0}), cluster_of(1), m).devices[0].peak_bytes, 404);
  EXPECT_TRUE(is_view_op("aten::transpose.int"));
  EXPECT_FALSE(is_view_op("aten::add.Tensor"));
  // Recorded alias facts win over the name: v as a fresh tensor: a and v both live while v runs.
  g.mutable_op(v).view_of = {-1};
  EXPECT_EQ(simulate(g, place({0, 0, 0}), cluster_of(1), m).devices[0].peak_bytes, 800);
  g.mutable_op(v).view_of = {0};
  EXPECT_EQ(simulate(g, place({0, 0, 0}), cluster_of(1), m).devices[0].peak_bytes, 404);

  // f's backward differentiates f's input a (args[1] = {0}): a lives until it ran.
  Graph h;
  const OpId x = add(h, "x", {}, {400});
  const OpId f = add(h, "f", {{x, 0}}, {100});
  Op bw;
  bw.name = "f_backward";
  bw.type = op_types::kBackward;
  bw.phase = Phase::Backward;
  bw.forward = f;
  bw.inputs = {{f, 0}};
  bw.args = {Arg::int_list({}), Arg::int_list({0})};
  bw.outputs = {TensorSpec{{100}, DType::Float32}};
  h.add_op(bw);
  const StepResult r = simulate(h, place({0, 0, 0}), cluster_of(1), CostModel::uniform(3, 1, 1.0));
  EXPECT_EQ(r.devices[0].peak_bytes, 400 + 100 + 400);
  // Same with x on another device: the held copy is f's device's.
  const StepResult r2 = simulate(h, place({1, 0, 0}), cluster_of(2), CostModel::uniform(3, 2, 1.0));
  EXPECT_EQ(r2.devices[0].peak_bytes, 400 + 100 + 400);
  EXPECT_EQ(r2.devices[1].peak_bytes, 400);
}

TEST(Simulator, OomReportsTheWorstDevice) {
  Graph g;
  const OpId a = add(g, "a", {}, {1000});
  const OpId b = add(g, "b", {{a, 0}}, {1000});
  add(g, "c", {{b, 0}}, {4000});
  CostModel m = CostModel::uniform(3, 2, 1.0);
  // cpu:0 holds a and b (2000 at b's start) over 1500; cpu:1 holds b's copy + c = 5000 over 1500.
  const StepResult r = simulate(g, place({0, 0, 1}), cluster_of(2, 1500), m);
  EXPECT_EQ(r.status, StepStatus::Oom);
  EXPECT_EQ(r.oom_device, "cuda:1");
  EXPECT_EQ(r.oom_needed_bytes, 5000);
  EXPECT_EQ(r.oom_capacity_bytes, 1500);
  EXPECT_EQ(r.devices[0].peak_bytes, 2000);
  EXPECT_NE(r.message.find("cuda:1"), std::string::npos);
  // With enough memory the same placement runs.
  EXPECT_TRUE(simulate(g, place({0, 0, 1}), cluster_of(2, 5000), m).ok());
  // Memory tracking off: no OOM, no peaks.
  SimOptions no_mem;
  no_mem.track_memory = false;
  EXPECT_TRUE(simulate(g, place({0, 0, 1}), cluster_of(2, 1500), m, no_mem).ok());
}

TEST(Simulator, RejectsPlacementsThatDoNotFit) {
  Graph g;
  add(g, "a", {}, {4});
  CostModel m = CostModel::uniform(1, 1, 1.0);
  EXPECT_THROW(simulate(g, place({}), cluster_of(1), m), PlacementError);
  EXPECT_THROW(simulate(g, place({3}), cluster_of(1), m), PlacementError);
  EXPECT_THROW(simulate(g, place({0}), cluster_of(2), m), InputError);  // cost model for 1 device
}

// Random DAGs with heterogeneous costs: deterministic, and never below the lower bound.
Graph random_dag(std::mt19937_64& rng, int n) {
  Graph g;
  for (int o = 0; o < n; ++o) {
    std::vector<TensorRef> in;
    const int k = o == 0 ? 0 : static_cast<int>(rng() % 3);
    for (int j = 0; j < k; ++j) in.push_back({OpId(static_cast<int32_t>(rng() % o)), 0});
    add(g, "op" + std::to_string(o), in, {static_cast<int64_t>(4 * (1 + rng() % 1000))});
  }
  return g;
}

// Op times in [0, 2) s, slower on later devices when trial % 3 > 0 (devices of
// different speeds), links of random latency and bandwidth.
CostModel random_costs(std::mt19937_64& rng, int n, int D, int trial) {
  std::uniform_real_distribution<double> cost(0.0, 2.0);
  CostModel m = CostModel::uniform(n, D, 0.0);
  for (int o = 0; o < n; ++o)
    for (int d = 0; d < D; ++d) m.set_op_seconds(OpId(o), DeviceId(d), cost(rng) * (1 + d * (trial % 3)));
  for (int a = 0; a < D; ++a)
    for (int b = 0; b < D; ++b)
      if (a != b) m.set_link(DeviceId(a), DeviceId(b), cost(rng) * 0.1, 1e3 + 1e4 * cost(rng));
  return m;
}

// The deeper DAGs' costs: random_costs, then about one op in six taking no
// time and links with latencies as long as ops (0-2 s).
CostModel deep_dag_costs(std::mt19937_64& rng, int n, int D, int trial) {
  CostModel m = random_costs(rng, n, D, trial);
  for (int o = 0; o < n; ++o)
    if (rng() % 6 == 0)
      for (int d = 0; d < D; ++d) m.set_op_seconds(OpId(o), DeviceId(d), 0.0);
  std::uniform_real_distribution<double> latency(0.0, 2.0);
  for (int a = 0; a < D; ++a)
    for (int b = 0; b < D; ++b)
      if (a != b) m.set_link(DeviceId(a), DeviceId(b), latency(rng), 1e3 + 1e4 * latency(rng));
  return m;
}

TEST(Simulator, LowerBoundNeverAboveSimulatedStepOnRandomDags) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 5 + static_cast<int>(rng() % 60);
    const int D = 1 + static_cast<int>(rng() % 4);
    Graph g = random_dag(rng, n);
    Cluster cl = cluster_of(D);
    const CostModel m = random_costs(rng, n, D, trial);
    const LowerBound lb = lower_bound_parts(g, cl, m);
    EXPECT_DOUBLE_EQ(lb.value(), lower_bound(g, cl, m));
    EXPECT_GE(lb.value(), lb.critical_path_s);
    for (int p = 0; p < 20; ++p) {
      Placement pl;
      for (int o = 0; o < n; ++o) pl.device_of.push_back(DeviceId(static_cast<int32_t>(rng() % D)));
      const StepResult r = simulate(g, pl, cl, m);
      EXPECT_LE(lb.value(), r.step_s + 1e-12) << "trial " << trial << " placement " << p;
      double busiest = 0.0;
      for (const auto& d : r.devices) busiest = std::max(busiest, d.busy_s);
      EXPECT_GE(r.step_s + 1e-12, busiest);
      const StepResult again = simulate(g, pl, cl, m);
      EXPECT_EQ(again.step_s, r.step_s);
      EXPECT_EQ(again.transfer_bytes, r.transfer_bytes);
    }
  }
}

// A pipelined graph that validates never stalls the simulator under 1F1B: micro-batch 0 reading micro-batch 1
// (or an op of none that read it) passed `graph validate`, and the simulator aborted ("simulation stalled").
TEST(Simulator, PipelinedGraphsThatValidateNeverStall) {
  std::mt19937_64 rng(11);
  int valid = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 30);
    const int M = 1 + static_cast<int>(rng() % 4);
    const int D = 1 + static_cast<int>(rng() % 3);
    Graph g = random_dag(rng, n);
    g.name = "mb";
    g.attrs[kAttrMicrobatches] = std::to_string(M);
    g.attrs[kAttrSchedule] = "1f1b";
    const bool ordered = trial % 2 == 0;  // half the graphs mostly follow the rule, so many validate
    for (int o = 0; o < n; ++o) {
      Op& op = g.mutable_op(OpId(o));
      op.type = "custom::op";
      int32_t mb = static_cast<int32_t>(rng() % (M + 1)) - 1;
      if (ordered && rng() % 4 != 0)
        for (const TensorRef& in : op.inputs) mb = std::max(mb, g.op(in.op).microbatch);
      op.microbatch = mb;
    }
    try {
      validate_graph(g);
    } catch (const GraphError&) {
      continue;
    }
    ++valid;
    const Cluster cl = cluster_of(D);
    const CostModel m = random_costs(rng, n, D, trial);
    for (int p = 0; p < 10; ++p) {
      Placement pl;
      for (int o = 0; o < n; ++o) pl.device_of.push_back(DeviceId(static_cast<int32_t>(rng() % D)));
      EXPECT_GE(simulate(g, pl, cl, m).step_s, 0.0);
    }
  }
  EXPECT_GT(valid, 100);
}

TEST(LowerBound, HandComputedParts) {
  // Four independent ops, 1 s on cpu:0 and 10 s on cpu:1.
  Graph g;
  for (int i = 0; i < 4; ++i) add(g, "op" + std::to_string(i), {}, {4});
  CostModel m = CostModel::uniform(4, 2, 1.0);
  for (int i = 0; i < 4; ++i) m.set_op_seconds(OpId(i), DeviceId(1), 10.0);
  const LowerBound lb = lower_bound_parts(g, cluster_of(2), m);
  EXPECT_NEAR(lb.critical_path_s, 1.0, 1e-8);
  EXPECT_NEAR(lb.average_work_s, 2.0, 1e-8);
  // min T: A = 40/11 ops' worth on cpu:0, the rest at 10 s on cpu:1.
  EXPECT_NEAR(lb.lp_s, 40.0 / 11.0, 1e-5);
  EXPECT_NEAR(lower_bound(g, cluster_of(2), m), 40.0 / 11.0, 1e-5);

  // A chain: the critical path dominates; identical devices: no LP.
  Graph chain;
  OpId prev = add(chain, "c0", {}, {4});
  for (int i = 1; i < 5; ++i) prev = add(chain, "c" + std::to_string(i), {{prev, 0}}, {4});
  const LowerBound lc = lower_bound_parts(chain, cluster_of(3), CostModel::uniform(5, 3, 2.0));
  EXPECT_NEAR(lc.critical_path_s, 10.0, 1e-8);
  EXPECT_NEAR(lc.average_work_s, 10.0 / 3.0, 1e-8);
  EXPECT_EQ(lc.lp_s, 0.0);
  EXPECT_NEAR(lc.value(), 10.0, 1e-8);
  EXPECT_EQ(lc.group_s, 0.0);  // no co-location groups
}

// The fastest simulated step over every placement of g on cl's devices that
// keeps each co-location group on one device (validate_placement's rule).
double fastest_of_every_placement(const Graph& g, const Cluster& cl, const CostModel& m) {
  const int n = static_cast<int>(g.size()), D = cl.size();
  const Grouping groups = colocation_groups(g);
  int64_t count = 1;
  for (int o = 0; o < n; ++o) count *= D;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t code = 0; code < count; ++code) {
    Placement p;
    int64_t x = code;
    for (int o = 0; o < n; ++o, x /= D) p.device_of.push_back(DeviceId(static_cast<int32_t>(x % D)));
    bool split = false;
    for (int o = 0; o < n; ++o) split |= p.device_of[o] != p.device_of[groups.members[groups.group_of[o]][0].value];
    if (!split) best = std::min(best, simulate(g, p, cl, m).step_s);
  }
  return best;
}

// a -> b1 -> b2 -> d and a -> c1 -> c2 -> d, ops 0 to 5 in that order.
Graph two_chains() {
  Graph g;
  const OpId a = add(g, "a", {}, {4});
  const OpId b1 = add(g, "b1", {{a, 0}}, {4});
  const OpId b2 = add(g, "b2", {{b1, 0}}, {4});
  const OpId c1 = add(g, "c1", {{a, 0}}, {4});
  const OpId c2 = add(g, "c2", {{c1, 0}}, {4});
  add(g, "d", {{b2, 0}, {c2, 0}}, {4});
  return g;
}

// A fork and join: a (1 s) feeds b (2 s) and c (3 s), both feed d (1 s);
// transfers cost 2.5 s. The critical path (5 s) runs b and c side by side for
// free. Looking at d's producers only, d waits either for b and c in series on
// its device (a at 1 s, then 5 s of work: 6 s), or for one of them across a
// link (c local and b elsewhere, b no earlier than its own 1 s: 1 + 2 + 2.5 =
// 5.5 s). The ancestors' cone sees a too: b sent away waits for a's tensor to
// leave d's device (1 + 2.5), runs 2 s and comes back (+ 2.5): 8 s; a sent
// away too delays c the same way. So d starts at 6 s at the earliest and the
// bound is 7 s: the fastest placement of the sixteen, all four together.
TEST(LowerBound, JoinsOfAForkHandComputed) {
  Graph g;
  const OpId a = add(g, "a", {}, {4});
  const OpId b = add(g, "b", {{a, 0}}, {4});
  const OpId c = add(g, "c", {{a, 0}}, {4});
  add(g, "d", {{b, 0}, {c, 0}}, {4});
  const Cluster cl = cluster_of(2);
  CostModel m = CostModel::uniform(4, 2, 0.0);
  set_costs(m, {1.0, 2.0, 3.0, 1.0});
  m.set_link(DeviceId(0), DeviceId(1), 2.5, 1e18);
  m.set_link(DeviceId(1), DeviceId(0), 2.5, 1e18);
  const LowerBound lb = lower_bound_parts(g, cl, m);
  EXPECT_NEAR(lb.critical_path_s, 5.0, 1e-8);
  EXPECT_NEAR(lb.joins_s, 7.0, 1e-8);  // a hair below (round-off, lower_bound.cc)
  EXPECT_NEAR(lb.value(), 7.0, 1e-8);
  EXPECT_DOUBLE_EQ(fastest_of_every_placement(g, cl, m), 7.0);
  // Free transfers: the joins bound is the critical path.
  m.set_link(DeviceId(0), DeviceId(1), 0.0, 1e18);
  m.set_link(DeviceId(1), DeviceId(0), 0.0, 1e18);
  EXPECT_NEAR(lower_bound_parts(g, cl, m).joins_s, 5.0, 1e-8);
}

// A fork into two chains of two ops each, joined again; every op takes 1 s and
// a transfer 100 s. The critical path is 4 s. Looking only at d's producers,
// b2 and c2 in series end at 4 s (each released at 2 s), so d starts at 4 and
// the bound would be 5 s. Every ancestor of d on d's device ran there before
// it, one at a time: a, then b1 and c1, then b2 and c2, all five by 5 s (or a
// 100 s transfer), so d starts at 5 s and the bound is 6 s: the single device's
// step, the fastest of the 64 placements.
TEST(LowerBound, JoinsCountEveryAncestorOnTheDevice) {
  const Graph g = two_chains();
  const Cluster cl = cluster_of(2);
  CostModel m = CostModel::uniform(6, 2, 1.0);
  m.set_link(DeviceId(0), DeviceId(1), 100.0, 1e18);
  m.set_link(DeviceId(1), DeviceId(0), 100.0, 1e18);
  const LowerBound lb = lower_bound_parts(g, cl, m);
  EXPECT_NEAR(lb.critical_path_s, 4.0, 1e-8);
  EXPECT_NEAR(lb.joins_s, 6.0, 1e-8);
  EXPECT_DOUBLE_EQ(fastest_of_every_placement(g, cl, m), 6.0);
}

// Two chains leave a (1 s) and meet at d (1 s): b1, b2 (2 s each) and c1, c2
// (1.5 s each); every transfer takes 1 s. Sending the c chain to the other
// device is fastest (a's tensor leaves at 1 s, c1 and c2 run there from 2 s to
// 5 s, back at 6 s while a, b1 and b2 end at 5 s: d from 6 to 7 s). The cone
// finds that choice: a chain sent away runs on one device with no transfer
// between its ops, and pays its way out and back. Bound = fastest placement.
TEST(LowerBound, JoinsSendAChainAwayAndBack) {
  const Graph g = two_chains();
  const Cluster cl = cluster_of(2);
  CostModel m = CostModel::uniform(6, 2, 0.0);
  set_costs(m, {1.0, 2.0, 2.0, 1.5, 1.5, 1.0});
  m.set_link(DeviceId(0), DeviceId(1), 1.0, 1e18);
  m.set_link(DeviceId(1), DeviceId(0), 1.0, 1e18);
  EXPECT_DOUBLE_EQ(fastest_of_every_placement(g, cl, m), 7.0);
  EXPECT_NEAR(lower_bound_parts(g, cl, m).joins_s, 7.0, 1e-8);
}

// The same graph on three devices, where which link is cheapest depends on the
// tensor's size: between devices 0 and 1 a transfer takes 1 s whatever its
// size, to and from device 2 nothing plus 3 s for these tensors' bytes (free
// for an empty one). Each tensor's cheapest transfer is 1 s, so the bound is
// still 7 s, the fastest placement's (the c chain on device 1); a bound that
// kept only the link cheapest for small tensors would charge 3 s.
TEST(LowerBound, JoinsTakeEachTensorsCheapestLinkWhicheverItIs) {
  const Graph g = two_chains();
  const Cluster cl = cluster_of(3);
  CostModel m = CostModel::uniform(6, 3, 0.0);
  set_costs(m, {1.0, 2.0, 2.0, 1.5, 1.5, 1.0});
  const double bytes = static_cast<double>(g.op(OpId(0)).output_bytes());
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 3; ++y)
      if (x != y) {
        if (x == 2 || y == 2)
          m.set_link(DeviceId(x), DeviceId(y), 0.0, bytes / 3.0);
        else
          m.set_link(DeviceId(x), DeviceId(y), 1.0, 1e18);
      }
  EXPECT_NEAR(m.transfer_seconds(DeviceId(0), DeviceId(2), static_cast<int64_t>(bytes)), 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(fastest_of_every_placement(g, cl, m), 7.0);
  EXPECT_NEAR(lower_bound_parts(g, cl, m).joins_s, 7.0, 1e-8);
}

// The branch and bound's cuts never change the least: on random DAGs (12 to
// 30 ops, 2 or 3 devices, some ops taking no time, some co-located pairs) the
// bound with the cuts equals the bound with every choice of every cone tried,
// for cones of 6 and 10 ops (at most 2,047 nodes: never cut short).
TEST(LowerBound, ConeSearchCutsNeverChangeTheLeast) {
  std::mt19937_64 rng(53);
  int differs_from_producers = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int D = 2 + trial % 2;
    const int n = 12 + static_cast<int>(rng() % 19);
    Graph g = random_dag(rng, n);
    const int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
    if (trial % 3 == 2 && a != b) g.mutable_op(OpId(a)).group = g.mutable_op(OpId(b)).group = "g";
    const Cluster cl = cluster_of(D);
    const CostModel m = deep_dag_costs(rng, n, D, trial);
    for (const int cone : {6, 10}) {
      const double cut = detail::joins_bound_for_tests(g, cl, m, cone, true);
      EXPECT_DOUBLE_EQ(cut, detail::joins_bound_for_tests(g, cl, m, cone, false)) << "trial " << trial;
      differs_from_producers += cut > detail::joins_bound_for_tests(g, cl, m, 1, true) + 1e-9;
    }
  }
  EXPECT_GT(differs_from_producers, 12);  // the cones do bind (20 of the 80)
}

// Deeper random DAGs (7 to 11 ops on two devices, 6 to 8 on three; transfers
// as long as ops; some ops that take no time, some pairs of ops co-located),
// every placement simulated: the ancestors' argument is where these differ
// from the small DAGs below, so a wrong release, a wrong cut or a wrong prune
// shows here.
TEST(LowerBound, NeverAboveTheFastestOfEveryPlacementOfDeeperDags) {
  std::mt19937_64 rng(41);
  int above_path = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int D = trial % 4 == 3 ? 3 : 2;
    const int n = D == 3 ? 6 + static_cast<int>(rng() % 3) : 7 + static_cast<int>(rng() % 5);
    Graph g = random_dag(rng, n);
    if (trial % 3 == 2) {  // a pair of ops co-located (Op::group) in a third of the trials
      const int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      if (a != b) g.mutable_op(OpId(a)).group = g.mutable_op(OpId(b)).group = "g";
    }
    const Cluster cl = cluster_of(D);
    const CostModel m = deep_dag_costs(rng, n, D, trial);
    const LowerBound lb = lower_bound_parts(g, cl, m);
    above_path += lb.joins_s > lb.critical_path_s + 1e-9;
    EXPECT_LE(lb.value(), fastest_of_every_placement(g, cl, m) + 1e-12) << "trial " << trial;
  }
  EXPECT_GT(above_path, 50);
}

// Small random DAGs, every placement simulated: the fastest is never below the
// bound, and the joins bound is the binding one in many of them (so a wrong
// rule in it would show here).
TEST(LowerBound, NeverAboveTheFastestOfEveryPlacementOfSmallDags) {
  std::mt19937_64 rng(23);
  int joins_binding = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 5);
    const int D = 2 + static_cast<int>(rng() % 2);
    Graph g = random_dag(rng, n);
    if (trial % 4 == 3) {  // some with co-location groups (placements that split one are skipped)
      g.mutable_op(OpId(n - 1)).group = "g";
      g.mutable_op(OpId(static_cast<int32_t>(rng() % (n - 1)))).group = "g";
    }
    const Cluster cl = cluster_of(D);
    CostModel m = random_costs(rng, n, D, trial);
    std::uniform_real_distribution<double> latency(0.0, 2.0);  // transfers as long as ops: joins matter
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b)
        if (a != b) m.set_link(DeviceId(a), DeviceId(b), latency(rng), 1e3 + 1e4 * latency(rng));
    const LowerBound lb = lower_bound_parts(g, cl, m);
    EXPECT_GE(lb.joins_s, lb.critical_path_s * (1.0 - 1e-9) - 1e-12);
    joins_binding += lb.joins_s > std::max({lb.critical_path_s, lb.average_work_s, lb.lp_s, lb.group_s}) + 1e-9;
    EXPECT_LE(lb.value(), fastest_of_every_placement(g, cl, m) + 1e-12) << "trial " << trial;
  }
  EXPECT_GT(joins_binding, 15);
}

// Four parallel ops forced onto one device (one Op::group) run one at a time:
// the bound is the op before them, their four seconds and the op after them,
// and placing the group anywhere reaches it exactly. Without the group the
// bound is the critical path (3 s) and spreading them reaches that.
TEST(LowerBound, ACoLocationGroupRunsInSeries) {
  for (const bool grouped : {true, false}) {
    Graph g;
    const OpId a = add(g, "a", {}, {4});
    std::vector<TensorRef> outs;
    for (int i = 0; i < 4; ++i) {
      const OpId b = add(g, "b" + std::to_string(i), {{a, 0}}, {4});
      if (grouped) g.mutable_op(b).group = "g";
      outs.push_back({b, 0});
    }
    add(g, "c", outs, {4});
    const Cluster cl = cluster_of(4);
    CostModel m = CostModel::uniform(6, 4, 1.0);
    for (int x = 0; x < 4; ++x)
      for (int y = 0; y < 4; ++y)
        if (x != y) m.set_link(DeviceId(x), DeviceId(y), 0.0, 1e18);
    const LowerBound lb = lower_bound_parts(g, cl, m);
    EXPECT_NEAR(lb.critical_path_s, 3.0, 1e-8);
    EXPECT_NEAR(lb.group_s, grouped ? 6.0 : 0.0, 1e-8);
    EXPECT_NEAR(lb.value(), grouped ? 6.0 : 3.0, 1e-8);
    Placement p = single_device(g, DeviceId(1));
    if (!grouped)
      for (int i = 0; i < 4; ++i) p.device_of[1 + i] = DeviceId(i);
    EXPECT_NEAR(simulate(g, p, cl, m).step_s, lb.value(), 1e-8) << grouped;
  }
}

// Random DAGs with random co-location groups: no placement that keeps every
// group together simulates faster than the bound.
TEST(LowerBound, NeverAboveAPlacementThatKeepsGroupsTogether) {
  std::mt19937_64 rng(11);
  int group_bound_binding = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 5 + static_cast<int>(rng() % 50);
    const int D = 2 + static_cast<int>(rng() % 3);
    const int groups = 1 + static_cast<int>(rng() % 4);
    Graph g = random_dag(rng, n);
    for (int o = 0; o < n; ++o)
      if (rng() % 2) g.mutable_op(OpId(o)).group = "g" + std::to_string(rng() % groups);
    const Cluster cl = cluster_of(D);
    const CostModel m = random_costs(rng, n, D, trial);
    const LowerBound lb = lower_bound_parts(g, cl, m);
    group_bound_binding += lb.group_s > std::max({lb.critical_path_s, lb.average_work_s, lb.lp_s});
    for (int p = 0; p < 20; ++p) {
      std::vector<int32_t> device_of_group(groups);
      for (int32_t& d : device_of_group) d = static_cast<int32_t>(rng() % D);
      Placement pl;
      for (int o = 0; o < n; ++o) {
        const std::string& grp = g.op(OpId(o)).group;
        pl.device_of.push_back(
            DeviceId(grp.empty() ? static_cast<int32_t>(rng() % D) : device_of_group[std::stoi(grp.substr(1))]));
      }
      validate_placement(g, cl, pl);
      EXPECT_LE(lb.value(), simulate(g, pl, cl, m).step_s + 1e-12) << "trial " << trial << " placement " << p;
    }
  }
  EXPECT_GT(group_bound_binding, 10);  // the group bound is the binding one in many trials
}

}  // namespace
}  // namespace placer
