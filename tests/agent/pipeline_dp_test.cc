// Pipeline dp: its split is optimal for its analytical cost among every
// contiguous split and order of distinct devices (brute force on small
// graphs), contiguous, and says clearly when nothing fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"

#include "../../agent/src/pipeline_dp.h"

namespace placer {
namespace {

Graph mlp(int layers) {
  BuilderOptions o;
  o.values = {{"layers", layers}, {"batch", 256}, {"width", 1024}};
  return build_graph("mlp", o);
}

std::vector<int64_t> capacities(const Cluster& c, double fraction = kMemoryFraction) {
  std::vector<int64_t> out;
  for (const Device& d : c.devices) out.push_back(static_cast<int64_t>(fraction * static_cast<double>(d.memory_bytes)));
  return out;
}

// The least cost over every split of the units into contiguous stages on
// distinct devices in every order (infinity if none fits).
double brute_force(const PipelineCost& cost) {
  const int32_t U = cost.units().count, D = cost.units().devices;
  double best = std::numeric_limits<double>::infinity();
  std::vector<PipelineDpStage> stages;
  std::vector<char> used(D, 0);
  std::function<void(int32_t)> go = [&](int32_t begin) {
    if (begin == U) {
      const PipelineSplitCost c = cost.evaluate(stages);
      if (c.fits) best = std::min(best, c.total_s);
      return;
    }
    for (int32_t end = begin + 1; end <= U; ++end)
      for (int32_t d = 0; d < D; ++d) {
        if (used[d]) continue;
        used[d] = 1;
        stages.push_back({begin, end, d});
        go(end);
        stages.pop_back();
        used[d] = 0;
      }
  };
  go(0);
  return best;
}

// The same over devices that are all alike: every split into contiguous stages, on devices 0, 1, ...
double brute_force_alike(const PipelineCost& cost) {
  const int32_t U = cost.units().count, D = cost.units().devices;
  double best = std::numeric_limits<double>::infinity();
  for (uint32_t cuts = 0; cuts < (1u << (U - 1)); ++cuts) {  // bit k: a cut after unit k
    std::vector<PipelineDpStage> stages;
    int32_t begin = 0;
    for (int32_t k = 0; k < U; ++k)
      if (k == U - 1 || ((cuts >> k) & 1)) {
        stages.push_back({begin, k + 1, static_cast<int32_t>(stages.size())});
        begin = k + 1;
      }
    if (static_cast<int32_t>(stages.size()) > D) continue;
    const PipelineSplitCost c = cost.evaluate(stages);
    if (c.fits) best = std::min(best, c.total_s);
  }
  return best;
}

// The forward ops' devices in op order change only at stage boundaries, and
// each device holds one run; every other op sits with its forward op.
void expect_contiguous(const Graph& g, const std::vector<int32_t>& device_of) {
  std::vector<int32_t> runs;
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(OpId(v));
    if (op.phase == Phase::Forward && op.type != op_types::kParam && op.type != op_types::kInput &&
        (runs.empty() || runs.back() != device_of[v]))
      runs.push_back(device_of[v]);
    if (op.phase != Phase::Forward) {
      EXPECT_EQ(device_of[v], device_of[op.forward.value]) << op.name;
    }
  }
  EXPECT_EQ(std::set<int32_t>(runs.begin(), runs.end()).size(), runs.size());
}

struct Case {
  std::string preset;
  PipelineSpec spec;
};

TEST(PipelineDp, MatchesBruteForceOnPresets) {
  const Graph g = mlp(3);
  for (const std::string preset : {"k80x4", "cpu+k80x2"}) {
    const Cluster c = cluster_preset(preset);
    const CostModel costs = CostModel::roofline(g, c);
    const PipelineUnits units = make_pipeline_units(g, costs, 6);
    ASSERT_EQ(units.count, 6);
    for (int M : {1, 4, 16})
      for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
        const PipelineCost cost(units, costs, capacities(c), {M, s});
        const PipelineDpResult r = solve_pipeline_dp(cost);
        const double brute = brute_force(cost);
        EXPECT_NEAR(r.cost.total_s, brute, 1e-12 * brute) << preset << " M=" << M << " " << schedule_name(s);
        EXPECT_TRUE(r.cost.fits);
        expect_contiguous(g, pipeline_op_devices(units, r.stages));
      }
  }
}

// Random costs per op and device, random links and memory tight enough that
// many splits overflow: no two devices alike, so every device order counts.
TEST(PipelineDp, MatchesBruteForceOnRandomCostsAndMemory) {
  const Graph g = mlp(4);
  const Cluster c = cluster_preset("k80x4");
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.2, 2.0);
  int infeasible = 0, feasible = 0;
  for (int trial = 0; trial < 6; ++trial) {
    CostModel costs = CostModel::uniform(g.size(), c.size(), 1e-3);
    for (int32_t v = 0; v < g.size(); ++v)
      for (int32_t d = 0; d < c.size(); ++d) costs.set_op_seconds(OpId(v), DeviceId(d), 1e-3 * u(rng));
    for (int32_t a = 0; a < c.size(); ++a)
      for (int32_t b = 0; b < c.size(); ++b)
        if (a != b) costs.set_link(DeviceId(a), DeviceId(b), 1e-4 * u(rng), 1e9 * u(rng));
    const PipelineUnits units = make_pipeline_units(g, costs, 7);
    int64_t params = 0, activations = 0, grads = 0;
    for (int32_t i = 0; i < units.count; ++i)
      params += units.param_bytes[i], activations += units.act_bytes[i], grads += units.grad_bytes[i];
    for (int M : {1, 3, 8})
      for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
        // Devices of 10% to 40% of what one device would need for everything (GPipe), scaled
        // by 0.6 to 1.6 over the trials: from nothing fits to most splits fit.
        std::vector<int64_t> cap(c.size());
        for (int32_t d = 0; d < c.size(); ++d)
          cap[d] = static_cast<int64_t>((0.6 + 0.2 * trial) * (0.1 + 0.1 * d) *
                                        static_cast<double>(2 * params + M * (activations + grads)));
        const PipelineCost cost(units, costs, cap, {M, s});
        const double brute = brute_force(cost);
        if (brute == std::numeric_limits<double>::infinity()) {
          ++infeasible;
          EXPECT_THROW(solve_pipeline_dp(cost), NoFeasiblePlacement);
          continue;
        }
        ++feasible;
        const PipelineDpResult r = solve_pipeline_dp(cost);
        EXPECT_NEAR(r.cost.total_s, brute, 1e-12 * brute) << "trial " << trial << " M=" << M << schedule_name(s);
        EXPECT_TRUE(r.cost.fits);
        expect_contiguous(g, pipeline_op_devices(units, r.stages));
      }
  }
  EXPECT_GT(feasible, 10);
  EXPECT_GT(infeasible, 0);
}

// A param made in unit 2 and read up to unit 7 (an RNN's weights, read at every step): a stage that
// starts after unit 2 holds it in flight, up to S - s micro-batches under 1F1B, one that starts at unit 2
// holds it twice (with its update), so a stage's memory can fall as it grows backwards. At 2.5x the
// param per device the best split is [0,2) [2,4) [4,6) [6,8): stage 1 of 4 fits only from the param's
// unit on ([3,4) would hold it 3 times); a search that stops at the first stage too big gives 3 stages.
TEST(PipelineDp, MatchesBruteForceWhenAStageNeedsLessMemoryLonger) {
  const int32_t U = 8, D = 8;
  const int64_t P = 100'000'000;
  PipelineUnits u;
  u.count = U;
  u.devices = D;
  for (int32_t i = 0; i < U; ++i) u.first.push_back("u" + std::to_string(i)), u.last.push_back(u.first.back());
  u.fwd.assign(U * D, 1e-3);
  u.bwd.assign(U * D, 2e-3);
  u.upd.assign(U * D, 0.0);
  u.param_bytes.assign(U, 0);
  u.param_bytes[2] = P;
  u.act_bytes.assign(U, 1'000);
  u.grad_bytes.assign(U, 1'000'000);
  u.cross_bytes.assign(U + 1, 1'000);
  u.cross_count.assign(U + 1, 1);
  for (int32_t cut = 3; cut <= 7; ++cut) u.cross_bytes[cut] += P;
  u.back_bytes.assign(U + 1, 1'000);
  u.back_count.assign(U + 1, 1);
  const CostModel costs = CostModel::uniform(1, D, 1e-3);
  // Params take 3 x P at 8 micro-batches (the sum's old and new values while an accumulation runs).
  const PipelineCost cost(u, costs, std::vector<int64_t>(D, 7 * P / 2), {8, PipelineSchedule::OneFOneB});
  const double brute = brute_force_alike(cost);
  ASSERT_LT(brute, std::numeric_limits<double>::infinity());
  const PipelineDpResult r = solve_pipeline_dp(cost);
  EXPECT_NEAR(r.cost.total_s, brute, 1e-12 * brute);
  std::string split;
  for (const PipelineDpStage& st : r.stages)
    split += "[" + std::to_string(st.begin) + "," + std::to_string(st.end) + ")";
  EXPECT_EQ(split, "[0,2)[2,4)[4,6)[6,8)");
}

TEST(PipelineDp, OneMicrobatchKeepsOneDeviceOfAlikeOnes) {
  // With M = 1 nothing overlaps: a cut only adds transfers, so one stage wins,
  // and the cost is one micro-batch through and back.
  const Graph g = mlp(6);
  const Cluster c = cluster_preset("k80x4");
  const CostModel costs = CostModel::roofline(g, c);
  const PipelineUnits units = make_pipeline_units(g, costs, 64);
  const PipelineDpResult r = solve_pipeline_dp(PipelineCost(units, costs, capacities(c), {1, PipelineSchedule::GPipe}));
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(r.cost.total_s, r.cost.sum_s);
  // Sixteen micro-batches: the stages overlap, so it splits.
  const PipelineDpResult r16 =
      solve_pipeline_dp(PipelineCost(units, costs, capacities(c), {16, PipelineSchedule::OneFOneB}));
  EXPECT_GT(r16.stages.size(), 1u);
  EXPECT_LT(r16.cost.total_s, 16 * r.cost.total_s);
}

TEST(PipelineDp, NoSplitFitsSaysSo) {
  const Graph g = mlp(3);
  const Cluster c = cluster_preset("k80x4");
  const CostModel costs = CostModel::roofline(g, c);
  const PipelineUnits units = make_pipeline_units(g, costs, 64);
  const PipelineCost cost(units, costs, std::vector<int64_t>(c.size(), 1024), {4, PipelineSchedule::GPipe});
  try {
    solve_pipeline_dp(cost);
    FAIL() << "expected NoFeasiblePlacement";
  } catch (const NoFeasiblePlacement& e) {
    EXPECT_NE(std::string(e.what()).find("no split into contiguous stages fits device memory under gpipe with 4"),
              std::string::npos)
        << e.what();
  }
}

// The memory dp plans for is what the simulator books: from 3 micro-batches on an accumulation holds the
// gradient sum's old and new values (1F1B at M = 4 overflowed its device: "needs 112.80 MiB, has 112.53"),
// and under GPipe one micro-batch's param gradients wait, not M (a budget 1.3x its own split's peak was
// refused). Across a sweep of memory sizes dp either fits, as simulated, or says no split fits.
TEST(PipelineDp, PlansTheMemoryTheSimulatorBooks) {
  BuilderOptions bo;
  bo.values = {{"batch", 8}, {"width", 2048}, {"layers", 8}, {"input", 2048}};
  const Graph g = build_graph("mlp", bo);
  for (const PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB})
    for (const int M : {3, 4}) {
      SCOPED_TRACE(std::string(schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b") + " M=" + std::to_string(M));
      EnvOptions o;
      o.objective = Objective::Pipeline;
      o.pipeline = {M, schedule};
      const auto place = [&](double memory, int64_t* peak) {
        Cluster c = cluster_preset("p100x4");
        for (Device& d : c.devices) d.memory_bytes = static_cast<int64_t>(memory);
        Environment env(g, c, o);
        PlaceContext ctx{&g, &c, &env};
        const PlaceResult r = make_placer("dp")->place(ctx);
        const StepResult s = env.simulate(r.placement);
        EXPECT_EQ(s.status, StepStatus::Ok) << s.message;
        *peak = 0;
        for (const DeviceStats& d : s.devices) *peak = std::max(*peak, d.peak_bytes);
        EXPECT_LE(*peak, static_cast<int64_t>(memory));
      };
      int64_t peak = 0;
      place(1e10, &peak);
      int64_t tight = 0;
      EXPECT_NO_THROW(place(1.3 * static_cast<double>(peak) / kMemoryFraction, &tight));
      for (double memory = 0.5 * peak; memory <= 1.6 * peak; memory += 0.05 * peak) {
        try {
          place(memory, &tight);
        } catch (const NoFeasiblePlacement& e) {  // a refusal, never a split that overflows its device
          EXPECT_EQ(std::string(e.what()).find("overflows"), std::string::npos) << e.what();
        }
      }
    }
}

TEST(PipelineDp, DpPlacerUsesItUnderThePipelineObjective) {
  const Graph g = mlp(8);
  const Cluster c = cluster_preset("k80x4");
  EnvOptions o;
  o.objective = Objective::Pipeline;
  o.pipeline = {8, PipelineSchedule::OneFOneB};
  Environment env(g, c, o);
  PlaceContext ctx{&g, &c, &env};
  const PlaceResult r = make_placer("dp")->place(ctx);
  EXPECT_NE(r.note.find("dp (pipeline, 1f1b, 8 micro-batches)"), std::string::npos) << r.note;
  ASSERT_TRUE(r.stats.count("pipeline_model_s"));
  EXPECT_GT(r.stats.at("stages"), 1.0);
  std::vector<int32_t> device_of;
  for (DeviceId d : r.placement.device_of) device_of.push_back(d.value);
  expect_contiguous(g, device_of);
  EXPECT_EQ(device_of[g.find("fc0/linear")->value], 0);  // alike devices in stage order
  EXPECT_EQ(device_of[g.find("loss/cross_entropy")->value], static_cast<int32_t>(r.stats.at("stages")) - 1);
  // The step objective still gets the step dp.
  Environment step_env(g, c);
  PlaceContext step_ctx{&g, &c, &step_env};
  EXPECT_EQ(make_placer("dp")->place(step_ctx).stats.count("pipeline_model_s"), 0u);
}

}  // namespace
}  // namespace placer
