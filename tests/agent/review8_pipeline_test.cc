// Review 8, pipeline dp: more than 64 devices is a refusal (not an abort), many distinct devices
// end in seconds (a cap on device sets, and the context's stop), and options the selected
// objective does not read are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "../../agent/src/pipeline_dp.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

Graph mlp8() {
  BuilderOptions o;
  o.values = {{"layers", 8}, {"batch", 256}, {"width", 1024}};
  return build_graph("mlp", o);
}

// n k80s, each `step` faster than the one before (0: all alike).
Cluster k80s(int32_t n, double step) {
  const Cluster k80 = cluster_preset("k80x4");
  Cluster c = k80;
  c.devices.clear();
  c.links.clear();
  for (int32_t d = 0; d < n; ++d) {
    Device dev = k80.devices[0];
    dev.name = "cuda:" + std::to_string(d);
    dev.peak_flops *= 1.0 + step * d;
    c.devices.push_back(dev);
  }
  return c;
}

EnvOptions pipeline(int M) {
  EnvOptions o;
  o.objective = Objective::Pipeline;
  o.pipeline = {M, PipelineSchedule::OneFOneB};
  return o;
}

PlaceResult place_dp(const Graph& g, const Cluster& c, const EnvOptions& o,
                     const std::map<std::string, std::string>& options = {}) {
  Environment env(g, c, o);
  PlaceContext ctx{&g, &c, &env};
  ctx.options = options;
  return make_placer("dp")->place(ctx);
}

// Devices all alike: the exact search takes them in index order already, and the note claims no restricted
// search (it said "devices in index order" on cpu:16 past the cap on expansions).
TEST(Review8Pipeline, AlikeDevicesPastTheCapAreSearchedExactly) {
  BuilderOptions o;
  o.values = {{"layers", 64}, {"batch", 8}, {"width", 64}};
  const Graph g = build_graph("mlp", o);
  const PlaceResult r = place_dp(g, k80s(16, 0.0), pipeline(4));
  EXPECT_EQ(r.note.find("index order"), std::string::npos) << r.note;
}

TEST(Review8Pipeline, SixtyFiveDevicesIsARefusalNamingTheCount) {
  const Graph g = mlp8();
  try {
    place_dp(g, k80s(65, 0.0), pipeline(4));
    FAIL() << "expected NoFeasiblePlacement";
  } catch (const NoFeasiblePlacement& e) {
    EXPECT_NE(std::string(e.what()).find("65 devices"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();
  }
}

TEST(Review8Pipeline, TwelveDistinctDevicesEndInSeconds) {
  const Graph g = mlp8();
  const auto t0 = std::chrono::steady_clock::now();
  const PlaceResult r = place_dp(g, k80s(12, 0.01), pipeline(8));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 5.0);
  EXPECT_GT(r.stats.at("stages"), 1.0);
  EXPECT_NE(r.note.find("devices in index order"), std::string::npos) << r.note;
  // Under the cap (four distinct devices) the search is exact and says nothing of an order.
  const PlaceResult exact = place_dp(g, k80s(4, 0.01), pipeline(8));
  EXPECT_EQ(exact.note.find("devices in index order"), std::string::npos) << exact.note;
}

TEST(Review8Pipeline, AStopEndsTheSearchWithItsBestSoFar) {
  const Graph g = mlp8();
  const Cluster c = k80s(12, 0.01);
  Environment env(g, c, pipeline(8));
  PlaceContext ctx{&g, &c, &env};
  ctx.stop_at = std::chrono::steady_clock::now();
  const PlaceResult r = make_placer("dp")->place(ctx);
  EXPECT_NE(r.note.find("stopped"), std::string::npos) << r.note;
  std::atomic<bool> cancel{true};
  PlaceContext cancelled{&g, &c, &env};
  cancelled.cancel = &cancel;
  EXPECT_NE(make_placer("dp")->place(cancelled).note.find("stopped"), std::string::npos);
}

void expect_refused(const Graph& g, const EnvOptions& o, const std::string& key, const std::string& objective) {
  try {
    place_dp(g, cluster_preset("k80x4"), o, {{key, "1"}});
    FAIL() << key << ": expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + key + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("objective " + objective), std::string::npos) << what;
  }
}

TEST(Review8Pipeline, OptionsTheObjectiveDoesNotReadAreRefused) {
  const Graph g = mlp8();
  expect_refused(g, pipeline(4), "objective", "pipeline");
  expect_refused(g, pipeline(4), "max_ideals", "pipeline");
  expect_refused(g, EnvOptions{}, "max_units", "step");
  // The ones it reads still work.
  EXPECT_NO_THROW(place_dp(g, cluster_preset("k80x4"), pipeline(4), {{"max_units", "16"}}));
  EXPECT_NO_THROW(place_dp(g, cluster_preset("k80x4"), EnvOptions{}, {{"objective", "latency"}}));
}

// The model sums warm-up activations and accumulation peaks that never coexist: on 160 MB k80s
// (the reviewer's c16.json) it found no split, yet a contiguous one simulates within memory.
TEST(Review8Pipeline, WhenTheModelFindsNoSplitTheSimulatorJudgesRelaxedOnes) {
  BuilderOptions o;
  o.values = {{"layers", 8}, {"batch", 256}, {"width", 2048}, {"input", 256}};
  const Graph g = build_graph("mlp", o);
  Cluster c = k80s(4, 0.0);
  for (Device& d : c.devices) d.memory_bytes = 160'000'000;
  Environment env(g, c, pipeline(8));
  PlaceContext ctx{&g, &c, &env};
  const PlaceResult r = make_placer("dp")->place(ctx);
  EXPECT_TRUE(env.simulate(r.placement).ok());
  EXPECT_NE(r.note.find("the simulator fits"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace placer
