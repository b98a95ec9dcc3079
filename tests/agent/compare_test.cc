// compare_placers (agent/compare.h) and search (agent/search.h): the named
// placers run in order and rank by simulated step; a search stops at its
// sample budget and when cancelled; stochastic placers run again with new
// seeds, deterministic ones once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "placer/agent/compare.h"
#include "placer/agent/placer.h"
#include "placer/agent/search.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

struct Fixture {
  Graph graph = build_graph("rnnlm", [] {
    BuilderOptions o;
    o.values = {{"layers", 2}, {"hidden", 64}, {"steps", 3}, {"batch", 8}, {"vocab", 100}};
    return o;
  }());
  Cluster cluster = cluster_preset("k80x4");
  Environment env{graph, cluster, [] {
                    EnvOptions o;
                    o.threads = 1;
                    return o;
                  }()};
  PlaceContext context(uint64_t seed = 3) {
    PlaceContext ctx;
    ctx.graph = &graph;
    ctx.cluster = &cluster;
    ctx.env = &env;
    ctx.seed = seed;
    ctx.sample_budget = 40;
    ctx.time_limit_s = 5.0;
    return ctx;
  }
};

TEST(Compare, RunsTheNamedPlacersInOrderAndRanksBySimulatedStep) {
  Fixture f;
  const std::vector<std::string> methods = {"single", "round_robin", "m_etf", "random"};
  std::vector<std::string> started;
  CompareOptions options;
  options.on_start = [&](const std::string& m) { started.push_back(m); };
  const std::vector<Compared> entries = compare_placers(methods, f.context(), options);
  EXPECT_EQ(started, methods);
  ASSERT_EQ(entries.size(), methods.size());
  for (size_t i = 0; i < methods.size(); ++i) {
    const Compared& c = entries[i];
    EXPECT_EQ(c.method, methods[i]);
    ASSERT_TRUE(c.ok()) << c.method << ": " << c.error;
    // The figure is the simulator's, for the placer's own placement.
    EXPECT_DOUBLE_EQ(c.step().step_s, f.env.simulate(c.result.placement).step_s);
    EXPECT_GE(c.seconds, 0.0);
  }
  const std::vector<int> order = ranking(entries);
  ASSERT_EQ(order.size(), methods.size());
  for (size_t i = 1; i < order.size(); ++i)
    EXPECT_LE(entries[order[i - 1]].step().step_s, entries[order[i]].step().step_s);
  EXPECT_EQ(fastest(entries), order[0]);
  // The same placer on the same context gives the same figure.
  EXPECT_EQ(compare_placers({"random"}, f.context(), {})[0].result.placement, entries[3].result.placement);
}

// A cancel ends the comparison between placers: the ones not started are left
// out (a cancelled learned job ran every remaining compare method to its end).
TEST(Compare, ACancelStopsBeforeTheNextPlacer) {
  Fixture f;
  std::atomic<bool> cancel{false};
  PlaceContext ctx = f.context();
  ctx.cancel = &cancel;
  CompareOptions options;
  options.on_done = [&](Compared&) { cancel = true; };
  const std::vector<Compared> entries = compare_placers({"single", "round_robin", "m_etf"}, ctx, options);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].method, "single");
}

// In measured and hybrid mode a search climbs the simulator and only its answer
// runs for real: local_search's 2,000 evaluations measured would take 20-30 min
// on cpu:2's nmt. Before, every move it tried was a real run (measured) or
// every new best (hybrid).
TEST(Compare, InMeasuredAndHybridModeASearchClimbsTheSimulatorAndOnlyItsAnswerIsMeasured) {
  BuilderOptions bo;
  bo.values = {{"batch", 4}, {"input", 16}, {"width", 16}, {"layers", 3}, {"classes", 4}};
  const Graph g = build_graph("mlp", bo);
  const Cluster cpus = parse_device_list("cpu:2");
  EnvOptions measured;
  measured.mode = RewardMode::Measured;
  measured.threads = 1;
  measured.measure.warmup_steps = 0;
  measured.measure.measured_steps = 1;
  measured.measure.max_steps = 1;
  EnvOptions hybrid = measured;
  hybrid.mode = RewardMode::Hybrid;
  for (const EnvOptions& mode : {measured, hybrid}) {
    for (const std::string method : {"local_search", "guided_search"}) {
      const std::string what = method + " (" + reward_mode_name(mode.mode) + ")";
      Environment env(g, cpus, mode);
      PlaceContext ctx = PlaceContext::on(env, 5);
      ctx.sample_budget = 60;
      const PlaceResult r = make_placer(method)->place(ctx);
      EXPECT_GT(r.evaluations, 1) << what;
      EXPECT_EQ(env.stats().measurements, 0) << what << ": the search ran placements for real";
      // Its answer is measured by whoever compares it.
      CompareOptions evaluate;
      evaluate.scoring = CompareScoring::Evaluate;
      const std::vector<Compared> c = compare_placers({method}, ctx, evaluate);
      ASSERT_TRUE(c[0].ok()) << what << ": " << c[0].error;
      EXPECT_TRUE(c[0].evaluation.measured) << what;
      EXPECT_EQ(env.stats().measurements, 1) << what;
    }
  }
}

TEST(Compare, InfeasibleEntriesRankLastAndUnknownNamesAreInputErrors) {
  Fixture f;
  Cluster tiny = f.cluster;
  for (Device& d : tiny.devices) d.memory_bytes = 1024;  // nothing fits
  Environment env(f.graph, tiny);
  PlaceContext ctx = f.context();
  ctx.cluster = &tiny;
  ctx.env = &env;
  const std::vector<Compared> entries = compare_placers({"single", "m_topo"}, ctx);
  for (const Compared& c : entries) {
    EXPECT_FALSE(c.placed) << c.method;
    EXPECT_FALSE(c.error.empty());
  }
  EXPECT_EQ(fastest(entries), -1);
  EXPECT_EQ(ranking(entries), (std::vector<int>{0, 1}));
  EXPECT_THROW(compare_placers({"nope"}, f.context()), InputError);
  EXPECT_THROW(parse_method_list("m_etf,nope"), InputError);
  EXPECT_THROW(parse_method_list(","), InputError);
  EXPECT_EQ(parse_method_list("all"), placer_names());
  EXPECT_EQ(parse_method_list("m_etf,,heft"), (std::vector<std::string>{"m_etf", "heft"}));
}

TEST(Placer, StochasticIsAPropertyOfThePlacer) {
  std::set<std::string> stochastic;
  for (const std::string& name : placer_names())
    if (make_placer(name)->stochastic()) stochastic.insert(name);
  EXPECT_EQ(stochastic, (std::set<std::string>{"random", "local_search"}));
}

TEST(Search, StochasticPlacersRunAgainWithNewSeedsDeterministicOnesOnce) {
  Fixture f;
  SearchOptions so;
  so.methods = {"m_etf", "random"};
  so.budget.samples = 5;  // m_etf (1) + random (1) + random x3
  std::vector<std::pair<std::string, int64_t>> runs;
  const SearchResult r = search(f.context(10), so, nullptr, [&](const SearchProgress& p) {
    runs.push_back({p.method, p.rounds});
  });
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"m_etf", 1}, {"random", 1}, {"random", 2}, {"random", 3}, {"random", 4}};
  EXPECT_EQ(runs, want);
  EXPECT_EQ(r.samples, 5);
  EXPECT_EQ(r.rounds, 4);
  EXPECT_FALSE(r.cancelled);
  ASSERT_TRUE(r.found);
  // Round r ran random with seed 10 + r: the best is the fastest of those placements.
  double best = f.env.simulate(compare_placers({"m_etf"}, f.context(10))[0].result.placement).step_s;
  for (uint64_t round = 0; round < 4; ++round)
    best = std::min(best, compare_placers({"random"}, f.context(10 + round))[0].step().step_s);
  EXPECT_DOUBLE_EQ(r.best.result.step_s, best);

  // Only deterministic placers: one round, whatever the budget.
  so.methods = {"single", "m_etf"};
  so.budget.samples = 1000;
  const SearchResult once = search(f.context(), so);
  EXPECT_EQ(once.rounds, 1);
  EXPECT_EQ(once.samples, 2);
}

TEST(Search, StopsAtItsSampleBudget) {
  Fixture f;
  SearchOptions so;
  so.methods = {"local_search"};
  so.budget.samples = 50;
  so.run_samples = 20;
  std::vector<int64_t> budgets;
  const SearchResult r =
      search(f.context(), so, nullptr, [&](const SearchProgress& p) { budgets.push_back(p.samples); });
  // 20 + 20 + the 10 left: never more than the budget.
  EXPECT_EQ(r.samples, 50);
  EXPECT_EQ(budgets, (std::vector<int64_t>{20, 40, 50}));
  EXPECT_EQ(r.rounds, 3);
}

TEST(Search, StopsWhenCancelledAndKeepsAFasterStartOnlyWhenBeaten) {
  Fixture f;
  std::atomic<bool> cancel{false};
  SearchOptions so;
  so.methods = {"random"};
  so.budget.cancel = &cancel;  // no sample or time budget: only the cancel ends it
  int runs = 0;
  const SearchResult r = search(f.context(), so, nullptr, [&](const SearchProgress&) {
    if (++runs == 3) cancel = true;
  });
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(r.samples, 3);

  cancel = true;  // cancelled before it starts: nothing runs, the start stays
  const PlaceResult etf = make_placer("m_etf")->place(f.context());
  const SearchCandidate start{"m_etf", etf.placement, f.env.simulate(etf.placement)};
  const SearchResult none = search(f.context(), so, &start);
  EXPECT_TRUE(none.cancelled);
  EXPECT_EQ(none.samples, 0);
  ASSERT_TRUE(none.found);
  EXPECT_FALSE(none.improved);
  EXPECT_EQ(none.best.method, "m_etf");

  // A start no random placement beats stays the best.
  cancel = false;
  so.budget.samples = 4;
  SearchCandidate unbeatable = start;
  unbeatable.result.step_s = 1e-12;
  const SearchResult kept = search(f.context(), so, &unbeatable);
  EXPECT_EQ(kept.samples, 4);
  EXPECT_FALSE(kept.improved);
  EXPECT_EQ(kept.best.method, "m_etf");
}

// search(from_best) hands each run the best so far as its start: local_search with one evaluation then
// returns the start it scored (the service's refine re-planned from local_search's four heuristics instead,
// and without the deadline a start brings).
TEST(Search, FromBestStartsEachRunFromTheBestSoFar) {
  Fixture f;
  const PlaceResult single = make_placer("single")->place(f.context());
  const SearchCandidate start{"single", single.placement, f.env.simulate(single.placement)};
  SearchOptions so;
  so.methods = {"local_search"};
  so.budget.samples = 1;
  so.run_samples = 1;
  so.max_rounds = 1;
  std::vector<Placement> runs;
  auto record = [&](const SearchProgress& p) { runs.push_back(p.placement); };
  search(f.context(), so, &start, record);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].device_of, single.placement.device_of);  // from its own heuristics' best
  so.from_best = true;
  runs.clear();
  search(f.context(), so, &start, record);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].device_of, single.placement.device_of);
}

// search() handed its runs neither its cancel nor its time budget: local_search (its start's four placers and
// their simulations, then its annealing) ran its whole share of samples past both. Each run keeps them now.
TEST(Search, EachRunKeepsTheSearchsDeadlineAndCancel) {
  Fixture f;
  SearchOptions so;
  so.methods = {"local_search"};
  so.run_samples = 200000;  // seconds of annealing: the deadline and the cancel come well before its end
  so.max_rounds = 1;
  so.budget.seconds = 0.05;
  const SearchResult timed = search(f.context(), so);
  EXPECT_LT(timed.samples, so.run_samples);
  EXPECT_LT(timed.elapsed_s, 2.0);

  std::atomic<bool> cancel{false};
  so.budget.seconds = 0;
  so.budget.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  const SearchResult cancelled = search(f.context(), so);
  canceller.join();
  EXPECT_TRUE(cancelled.cancelled);
  EXPECT_LT(cancelled.samples, so.run_samples);
  EXPECT_LT(cancelled.elapsed_s, 2.0);

  // The context's own deadline and cancel end the search too.
  cancel = false;
  PlaceContext late = f.context();
  late.stop_at = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_EQ(search(late, so).samples, 0);
  PlaceContext stopped = f.context();
  std::atomic<bool> stop{true};
  stopped.cancel = &stop;
  const SearchResult none = search(stopped, so);
  EXPECT_EQ(none.samples, 0);
  EXPECT_TRUE(none.cancelled);
}

// A cluster where no move of local_search fits (the second device holds nothing): it ends, with every op
// on the first device, instead of proposing moves forever (they were never evaluations, so the budget
// never ran out).
TEST(Placer, LocalSearchEndsWhenNoMoveFits) {
  Fixture f;
  Cluster full = cluster_preset("k80x2");
  full.devices[1].memory_bytes = 1;
  Environment env(f.graph, full);
  PlaceContext ctx = f.context();
  ctx.cluster = &full;
  ctx.env = &env;
  const PlaceResult r = make_placer("local_search")->place(ctx);
  for (DeviceId d : r.placement.device_of) EXPECT_EQ(d.value, 0);
}

}  // namespace
}  // namespace placer
