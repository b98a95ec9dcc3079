// guided_search (issue 25: local_search's annealing with moves drawn from a
// policy learned during the search): it runs, spends exactly its budget, the
// start's candidates included, and returns a valid placement no slower than
// its start.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

Graph small_nmt() {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"hidden", 64}, {"steps", 4}, {"batch", 8}, {"vocab", 100}};
  return build_graph("nmt", o);
}

PlaceResult guided(const Graph& graph, const Cluster& cluster, Environment& env, int64_t budget, uint64_t seed = 3,
                   std::map<std::string, std::string> options = {}) {
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.seed = seed;
  ctx.sample_budget = budget;
  ctx.options = std::move(options);
  return make_placer("guided_search")->place(ctx);
}

// The simulated step of the fastest of the start's candidates.
double start_step(const Graph& graph, const Cluster& cluster, Environment& env) {
  double best = 1e300;
  for (const char* m : {"m_etf", "heft", "dp", "expert"}) {
    PlaceContext ctx;
    ctx.graph = &graph;
    ctx.cluster = &cluster;
    ctx.env = &env;
    const StepResult r = env.simulate(make_placer(m)->place(ctx).placement);
    if (r.ok()) best = std::min(best, r.step_s);
  }
  return best;
}

TEST(GuidedSearch, SpendsExactlyItsBudgetAndIsNoSlowerThanItsStart) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  const double start = start_step(graph, cluster, env);
  const int64_t before = env.stats().evaluations;
  const PlaceResult r = guided(graph, cluster, env, 300);
  EXPECT_EQ(r.method, "guided_search");
  EXPECT_EQ(r.evaluations, 300);
  const int64_t candidates = static_cast<int64_t>(r.stats.at("start_candidates"));
  EXPECT_GE(candidates, 1);
  EXPECT_EQ(env.stats().evaluations - before + candidates, 300);  // scored moves + the simulated candidates
  validate_placement(graph, cluster, r.placement);
  const StepResult sim = env.simulate(r.placement);
  ASSERT_TRUE(sim.ok());
  EXPECT_LE(sim.step_s, start * (1 + 1e-12));
  EXPECT_GE(r.stats.at("best_reward"), r.stats.at("start_reward"));
}

// Empty proposals (a swap of two groups on one device: about half the swaps on two devices) were counted over the
// whole run, and a long run stopped once 100,000 had added up, short of its budget. Counted in a row now,
// as local_search's; and a cancel ends it.
TEST(GuidedSearch, SpendsItsBudgetWhenManyProposalsAreEmpty) {
  BuilderOptions o;
  o.values = {{"layers", 1}, {"width", 8}, {"input", 8}, {"batch", 2}};
  const Graph graph = build_graph("mlp", o);
  const Cluster cluster = cluster_preset("k80x2");
  Environment env(graph, cluster);
  const int64_t budget = 150000;
  const PlaceResult r = guided(graph, cluster, env, budget, 3, {{"swap", "0.9"}, {"follow", "0"}, {"chain", "0"}});
  EXPECT_EQ(r.evaluations, budget);
  std::atomic<bool> cancel{true};
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.sample_budget = budget;
  ctx.cancel = &cancel;
  EXPECT_LT(make_placer("guided_search")->place(ctx).evaluations, 100);
}

TEST(GuidedSearch, IsDeterministicPerSeedAndByNameOnly) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  EXPECT_EQ(guided(graph, cluster, env, 120, 5).placement, guided(graph, cluster, env, 120, 5).placement);
  EXPECT_TRUE(make_placer("guided_search")->stochastic());
  const auto names = placer_names();  // not in "all": the baselines' tables stay as they were
  EXPECT_EQ(std::find(names.begin(), names.end(), "guided_search"), names.end());
}

// The candidates stop at the budget (they spent 4-5 evaluations whatever it was): the fastest of those simulated.
TEST(GuidedSearch, ABudgetSpentOnTheCandidatesReturnsTheStart) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  const PlaceResult r = guided(graph, cluster, env, 4);
  EXPECT_EQ(r.evaluations, 4);
  EXPECT_EQ(r.stats.at("start_candidates"), 4);
  EXPECT_NEAR(env.simulate(r.placement).step_s, start_step(graph, cluster, env), 1e-12);
  for (int64_t budget = 1; budget <= 6; ++budget) EXPECT_EQ(guided(graph, cluster, env, budget).evaluations, budget);
}

PlaceContext guided_context(Environment& env, int64_t budget) {
  PlaceContext ctx = PlaceContext::on(env, 3);
  ctx.sample_budget = budget;
  return ctx;
}

// As local_search: a given start replaces the candidates, and with it time_limit_s ends the run.
TEST(GuidedSearch, AnnealsFromAGivenStartWithinItsTimeLimit) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  PlaceContext ctx = guided_context(env, 1);
  const Placement single = make_placer("single")->place(ctx).placement;
  ctx.start = &single;
  const PlaceResult r = make_placer("guided_search")->place(ctx);
  EXPECT_EQ(r.evaluations, 1);  // the start's score: no candidates
  EXPECT_EQ(r.placement, single);
  ctx.sample_budget = 1000000;  // far more than 0.2 s of evaluations
  ctx.time_limit_s = 0.2;
  const PlaceResult timed = make_placer("guided_search")->place(ctx);
  EXPECT_LT(timed.evaluations, ctx.sample_budget);
  EXPECT_LT(timed.place_seconds, 2.0);
}

// A deadline (stop_at) or a cancel ends the candidates after the first and the annealing at once.
TEST(GuidedSearch, EndsAtItsDeadline) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  PlaceContext ctx = guided_context(env, 300);
  ctx.stop_at = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const PlaceResult r = make_placer("guided_search")->place(ctx);
  EXPECT_EQ(r.stats.at("start_candidates"), 1);
  EXPECT_EQ(r.evaluations, 2);  // the candidate and the start's score
  validate_placement(graph, cluster, r.placement);
  ctx.stop_at.reset();
  std::atomic<bool> cancel{true};
  ctx.cancel = &cancel;
  EXPECT_EQ(make_placer("guided_search")->place(ctx).evaluations, 2);
}

TEST(GuidedSearch, BadOptionsNameTheField) {
  const Graph graph = small_nmt();
  const Cluster cluster = cluster_preset("k80x4");
  Environment env(graph, cluster);
  try {
    guided(graph, cluster, env, 50, 1, {{"max_chain", "1"}});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("max_chain"), std::string::npos) << e.what();
  }
  EXPECT_THROW(guided(graph, cluster, env, 50, 1, {{"follow", "0.9"}, {"chain", "0.5"}}), InputError);
}

}  // namespace
}  // namespace placer
