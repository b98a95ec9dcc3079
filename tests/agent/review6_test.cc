// Review 6: the ilp placer's optimality claim under a time limit, its warm
// start and big-M on non-uniform links, and zero-byte cross-device edges in
// the runtime-order replay.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/graphs/error.h"

#include "../../agent/src/ilp_model.h"
#include "../../agent/src/list_schedulers.h"
#include "op_timings.h"

namespace placer {
namespace {

struct Net {
  Graph graph;
  Cluster cluster;
  Profile profile;
};

// `devices` CPUs with 1 GiB each; the link a -> b has latency alpha(a, b)
// and (practically) infinite bandwidth.
template <typename Alpha>
Net make_net(const std::string& name, int devices, Alpha alpha) {
  Net t;
  t.graph.name = t.profile.graph = name;
  t.cluster.name = "review6";
  for (int d = 0; d < devices; ++d) {
    Device dev;
    dev.name = "cpu:" + std::to_string(d);
    dev.kind = DeviceKind::Cpu;
    dev.memory_bytes = int64_t{1} << 30;
    t.cluster.devices.push_back(dev);
  }
  t.cluster.default_link.latency_s = alpha(0, 1);
  t.cluster.default_link.bandwidth_Bps = 1e15;
  for (int a = 0; a < devices; ++a)
    for (int b = 0; b < devices; ++b)
      if (a != b) t.profile.links.push_back(LinkFit{"cpu:" + std::to_string(a), "cpu:" + std::to_string(b),
                                                    alpha(a, b), 1e15, {}});
  return t;
}

// Op `name` reading `inputs`, one float output of 16 elements, `ms` on every device.
OpId add(Net& t, const std::string& name, std::vector<OpId> inputs, double ms) {
  Op op;
  op.name = name;
  op.type = inputs.size() > 1 ? "aten::add.Tensor" : "aten::relu";
  for (OpId in : inputs) op.inputs.push_back({in, 0});
  op.outputs.push_back(TensorSpec{{16}, DType::Float32});
  const OpId id = t.graph.add_op(std::move(op));
  testing::time_on_every_device(t.profile, t.cluster, name, ms);
  return id;
}

PlaceResult run_ilp(const Net& t, Environment& env, std::map<std::string, std::string> options, double limit_s) {
  PlaceContext ctx;
  ctx.graph = &t.graph;
  ctx.cluster = &t.cluster;
  ctx.env = &env;
  ctx.seed = 7;
  ctx.time_limit_s = limit_s;
  ctx.options = std::move(options);
  return make_placer("ilp")->place(ctx);
}

std::unique_ptr<Environment> env_of(const Net& t) {
  EnvOptions options;
  options.profile = t.profile;
  options.threads = 1;
  return std::make_unique<Environment>(t.graph, t.cluster, options);
}

// 1. CBC's flags: only a search that completed proves optimality. A root LP
// that Clp stopped at its wall-clock limit reads to CBC as an infeasible
// relaxation (status 0, secondary 1), and with the warm start as incumbent
// isProvenOptimal() says true: that is not a proof.
TEST(Review6, CbcStatusProvesOptimalityOnlyWhenTheSearchCompleted) {
  CbcStop done;
  done.proven_optimal = true;
  done.secondary_status = 0;
  EXPECT_TRUE(cbc_proved_optimal(done));
  CbcStop pruned = done;  // the relaxation is no better than the warm start: a proof
  pruned.secondary_status = 1;
  EXPECT_TRUE(cbc_proved_optimal(pruned));
  CbcStop lp_cut = pruned;  // ... unless Clp stopped that relaxation at its limit
  lp_cut.lp_stopped = true;
  EXPECT_FALSE(cbc_proved_optimal(lp_cut));
  CbcStop timed = done;
  timed.seconds_limit = true;
  EXPECT_FALSE(cbc_proved_optimal(timed));
  for (const int secondary : {2, 3, 4, 5, 6, 8}) {  // gap, nodes, time, event, solutions, iterations
    CbcStop stopped = done;
    stopped.secondary_status = secondary;
    EXPECT_EQ(cbc_proved_optimal(stopped), secondary == 2) << secondary;  // the gap asked for: proven
  }
  CbcStop not_proven = done;
  not_proven.proven_optimal = false;
  EXPECT_FALSE(cbc_proved_optimal(not_proven));
}

// 1. The same on a real solve: 150 independent ops of uneven cost on 4 devices (11k order pairs, 73k rows)
// under the smallest time limit. Whatever CBC got to, a solve cut by the limit says so, and reports figures
// of a real solution: Clp's deadline was CBC's, so CBC's final check of its incumbent (an LP) ran past it and
// discarded the incumbent, and the note read "model makespan 1e+50 s, bound 1e+50 s, gap 0.00%".
TEST(Review6, IlpCutByItsTimeLimitIsNotReportedOptimal) {
  Net t = make_net("wide", 4, [](int, int) { return 0.05e-3; });
  const OpId src = add(t, "src", {}, 0.1);
  std::vector<OpId> mid;
  for (int i = 0; i < 150; ++i) mid.push_back(add(t, "w" + std::to_string(i), {src}, 0.3 + 0.7 * ((i * 37) % 11)));
  OpId acc = mid[0];
  for (size_t i = 1; i < mid.size(); i += 30) acc = add(t, "acc" + std::to_string(i), {acc, mid[i]}, 0.1);
  auto env = env_of(t);
  const PlaceResult r = run_ilp(t, *env, {{"max_ops", "1000"}, {"channels", "0"}}, 0.1);
  SCOPED_TRACE(r.note);
  EXPECT_EQ(r.stats.at("optimal"), 0.0);
  EXPECT_NE(r.note.find("(time limit)"), std::string::npos);
  EXPECT_EQ(r.note.find("proven optimal"), std::string::npos);
  // The incumbent is a solution of the model (the warm start at worst), the bound at most it.
  EXPECT_LE(r.stats.at("incumbent_s"), r.stats.at("warm_start_s") * (1 + 1e-9));
  EXPECT_GT(r.stats.at("bound_s"), 0.0);
  EXPECT_LE(r.stats.at("bound_s"), r.stats.at("incumbent_s"));
  EXPECT_GE(r.stats.at("gap"), 0.0);
  EXPECT_LT(r.stats.at("gap"), 1.0);
}

// 2. Non-uniform links: cpu:0 -> cpu:1 takes 0.1 ms, cpu:1 -> cpu:0 2.9 ms; the model charges every
// crossing edge the mean, 1.5 ms. Fork-join a -> {b, c} (4 ms each) -> d, 1 ms ends: in the model the best
// is a, b on one device and c, d on the other: 7.5 ms (c from 2.5 to 6.5 ms, b's output there at 6.5 ms,
// d to 7.5 ms). The warm start timed per link (6.1 ms) set big-M and C's upper bound
// below the model's optimum, and its own solution was infeasible in the rows.
TEST(Review6, IlpWarmStartAndBigMUseTheModelsTransferCost) {
  Net t = make_net("forkjoin_asym", 2, [](int a, int) { return a == 0 ? 0.1e-3 : 2.9e-3; });
  const OpId a = add(t, "a", {}, 1.0);
  const OpId b = add(t, "b", {a}, 4.0);
  const OpId c = add(t, "c", {a}, 4.0);
  add(t, "d", {b, c}, 1.0);
  auto env = env_of(t);
  const PlaceResult r = run_ilp(t, *env, {{"channels", "0"}}, 20.0);
  SCOPED_TRACE(r.note);
  // Optimal in the model; the links differ, so not for the step (review 8).
  EXPECT_NE(r.note.find("(optimal in the model only)"), std::string::npos);
  EXPECT_EQ(r.stats.at("optimal"), 0.0);
  EXPECT_NEAR(r.stats.at("incumbent_s"), 7.5e-3, 1e-9);
  EXPECT_NEAR(r.stats.at("bound_s"), 7.5e-3, 1e-7);
  // The warm start is a solution of the model: its makespan there is no better than the optimum.
  EXPECT_GE(r.stats.at("warm_start_s"), r.stats.at("incumbent_s") - 1e-12);
  EXPECT_LE(r.stats.at("incumbent_s"), r.stats.at("warm_start_s") + 1e-12);
}

// 2. The ILP's own replay (no channels) charges a crossing edge the model's mean transfer.
UnitProblem two_units(int64_t bytes, double alpha01, double alpha10) {
  UnitProblem p;
  p.n = 2;
  p.k = 2;
  p.cost = {5e-3, 5e-3, 1e-3, 1e-3};
  p.mem = {0, 0};
  p.preds = {{}, {{0, bytes}}};
  p.succs = {{{1, bytes}}, {}};
  p.group_of = {0, 1};
  p.members = {{0}, {1}};
  p.group_mem = {0, 0};
  p.capacity = {int64_t{1} << 30, int64_t{1} << 30};
  p.alpha = {0.0, alpha01, alpha10, 0.0};
  p.inv_beta = {0.0, 1e-9, 1e-9, 0.0};
  p.unit_names = {"producer", "consumer"};
  p.device_names = {"cpu:0", "cpu:1"};
  return p;
}

TEST(Review6, ModelReplayChargesTheMeanTransfer) {
  const UnitProblem p = two_units(1000, 0.1e-3, 2.9e-3);
  const Schedule s = schedule_ready_order(p, {0, 1}, /*link_channels=*/false);
  EXPECT_NEAR(s.start[1], 5e-3 + p.mean_transfer(1000), 1e-12);
  EXPECT_NEAR(s.makespan, 6e-3 + p.mean_transfer(1000), 1e-12);
  // The runtime's replay keeps the link's own cost.
  const Schedule rt = schedule_ready_order(p, {0, 1});
  EXPECT_NEAR(rt.start[1], 5e-3 + p.transfer(0, 1, 1000), 1e-12);
}

// 3. A zero-byte edge across devices still orders its consumer after its producer: the simulator sends the
// (empty) tensor on the link's FIFO channel, for the link's latency alone.
TEST(Review6, ZeroByteCrossDeviceEdgeKeepsItsDependency) {
  const UnitProblem p = two_units(0, 0.5e-3, 0.5e-3);
  for (const bool channels : {true, false}) {
    const Schedule s = schedule_ready_order(p, {0, 1}, channels);
    EXPECT_NEAR(s.start[1], 5e-3 + 0.5e-3, 1e-12) << channels;
    EXPECT_NEAR(s.finish[1], 6.5e-3, 1e-12) << channels;
    EXPECT_NEAR(s.makespan, 6.5e-3, 1e-12) << channels;
  }
}

// 3. The same against the simulator: an op with a zero-element output feeding an op on the other device.
TEST(Review6, ZeroByteEdgeReplayMatchesTheSimulator) {
  Net t = make_net("zero_bytes", 2, [](int, int) { return 0.5e-3; });
  Op producer;
  producer.name = "producer";
  producer.type = "aten::relu";
  producer.outputs.push_back(TensorSpec{{0}, DType::Float32});
  const OpId a = t.graph.add_op(std::move(producer));
  testing::time_on_every_device(t.profile, t.cluster, "producer", 5.0);
  add(t, "consumer", {a}, 1.0);
  auto env = env_of(t);
  Placement placement;
  placement.device_of = {DeviceId(0), DeviceId(1)};
  const StepResult sim = env->simulate(placement);
  ASSERT_TRUE(sim.ok()) << sim.message;
  const UnitProblem p = two_units(0, 0.5e-3, 0.5e-3);
  EXPECT_NEAR(schedule_ready_order(p, {0, 1}).makespan, sim.step_s, 1e-9);
}

}  // namespace
}  // namespace placer
