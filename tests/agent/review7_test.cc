// Review 7: a policy refuses clusters of more devices than it trained on; an update
// with one stochastic sample has no policy-gradient term; the record of sampled
// placements is capped.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "../../agent/src/trainer.h"
#include "../../agent/src/trainer_impl.h"
#include "../scratch_dir.h"
#include "chain_graphs.h"
#include "placer/agent/learned.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

using testing::two_chains;

TrainControls quiet() {
  TrainControls c;
  c.progress = false;
  return c;
}

struct RunDir {
  std::unique_ptr<ScratchDir> scratch;
  std::string dir, graph;
};

RunDir make_run(const std::string& name) {
  RunDir r;
  r.scratch = std::make_unique<ScratchDir>("review7_" + name);
  r.dir = r.scratch->path();
  r.graph = r.dir + "/graph.json";
  save_graph(two_chains(3), r.graph);
  return r;
}

std::string config(const RunDir& r, const std::string& out, const std::string& policy, const std::string& train,
                   const std::string& extra = "") {
  std::ostringstream o;
  o << "name: test\ngraph: {file: " << r.graph << "}\ncluster: \"cpu:2\"\n"
    << "policy: " << policy << "\ntrain: " << train << "\nwarm_start: {methods: []}\n"
    << "run: {seed: 7, checkpoint_every: 2, output_dir: " << out << "}\n"
    << extra;
  return o.str();
}

// A policy trained on 2 devices, asked to place on 4: refused, naming both counts; beside a
// fast path it is skipped with that note and the fast path answers.
TEST(Review7, APolicyTrainedOnTwoDevicesRefusesFour) {
  const RunDir run = make_run("refuse");
  for (const std::string policy : {"{type: seq2seq, hidden: 16}", "{type: hierarchical, hidden: 16}"}) {
    const std::string out = run.dir + "/" + policy.substr(7, 6);
    train(parse_train_config(config(run, out, policy, "{updates: 2, samples_per_update: 4}"), "test"), nullptr,
          quiet());
    const std::shared_ptr<const LoadedPolicy> p = LoadedPolicy::load(out);
    EXPECT_EQ(p->trained_devices(), 2);
    const Graph g = two_chains(3);
    const Cluster four = resolve_cluster("cpu:4");
    Environment env(g, four);
    PlaceContext ctx;
    ctx.graph = &g;
    ctx.cluster = &four;
    ctx.env = &env;
    try {
      p->place(ctx);
      ADD_FAILURE() << policy << " placed on 4 devices";
    } catch (const PolicyOutOfRange& e) {
      EXPECT_NE(std::string(e.what()).find("has 4 devices"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("trained on at most 2 devices"), std::string::npos) << e.what();
    }
    EXPECT_THROW(place_with_policy(*p, ctx, 0.5, false), PolicyOutOfRange);
    const PolicyAnswer a = place_with_policy(*p, ctx, 0.5, false, policy_fast_path());
    EXPECT_FALSE(a.policy_ok);
    EXPECT_NE(a.found_by, "policy");
    EXPECT_EQ(a.placement.device_of.size(), static_cast<size_t>(g.size()));
    EXPECT_NE(a.policy.note.find("skipped: cluster"), std::string::npos) << a.policy.note;
    // On as many devices as it trained on, it places.
    const Cluster two = resolve_cluster("cpu:2");
    Environment env2(g, two);
    ctx.cluster = &two;
    ctx.env = &env2;
    EXPECT_EQ(p->place(ctx).placement.device_of.size(), static_cast<size_t>(g.size()));
  }
}

// The trainer refuses a held-out cluster of more devices than it trains on, before training.
TEST(Review7, AHeldOutClusterOfMoreDevicesIsRefused) {
  const RunDir run = make_run("held_out");
  const std::string text = config(run, run.dir + "/h", "{type: gnn, hidden: 16}", "{updates: 1}",
                                  "held_out: [{file: " + run.graph + ", cluster: \"cpu:4\"}]\n");
  try {
    train(parse_train_config(text, "test"), nullptr, quiet());
    ADD_FAILURE() << "trained with a 4-device held-out cluster";
  } catch (const PolicyOutOfRange& e) {
    EXPECT_NE(std::string(e.what()).find("held_out[0]: cluster"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has 4 devices"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 2 devices"), std::string::npos) << e.what();
  }
}

// A checkpoint made before trained_devices was kept: derived from its config's clusters (the shipped
// gnn trained on k80x4 and p100x4).
TEST(Review7, TheShippedPolicysDeviceCountIsDerivedFromItsConfig) {
  if (!std::filesystem::exists(pretrained_policy_dir() + "/checkpoint.pt")) GTEST_SKIP() << "no pretrained policy";
  const std::shared_ptr<const LoadedPolicy> p = load_named_policy("pretrained");
  EXPECT_EQ(p->trained_devices(), 4);
}

// One stochastic sample per update: its advantage has no spread to be standardized by, and the
// clip saturated it at +-5. With no entropy or elite term the loss is the policy gradient alone: 0.
TEST(Review7, AnUpdateWithOneStochasticSampleHasNoPolicyGradient) {
  const RunDir run = make_run("one_sample");
  const std::string out = run.dir + "/one";
  const TrainResult r = train(parse_train_config(config(run, out, "{type: seq2seq, hidden: 16}",
                                                        "{updates: 8, samples_per_update: 1, entropy_weight: 0, "
                                                        "elite_weight: 0, logit_noise: 2.0, lr: 0.05}"),
                                                 "test"),
                              nullptr, quiet());
  const std::vector<LogRow> rows = read_csv(out + "/train.csv", 1000);
  ASSERT_EQ(rows.size(), 8u);
  for (const LogRow& row : rows) {
    EXPECT_TRUE(std::isfinite(row.loss));
    EXPECT_EQ(row.loss, 0.0) << "update " << row.update;
  }
  (void)r;
}

// The record of sampled placements keeps the newest `cap`, oldest first.
TEST(Review7, TheSampledRecordIsCapped) {
  SampledSet s(3);
  for (int32_t i = 0; i < 5; ++i) EXPECT_TRUE(s.insert({i, i}));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.dropped(), 2);
  EXPECT_FALSE(s.insert({4, 4}));
  std::vector<int32_t> firsts;
  s.for_each([&](const std::vector<int32_t>& u) { firsts.push_back(u[0]); });
  EXPECT_EQ(firsts, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_TRUE(s.insert({0, 0}));  // dropped: new again
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(SampledSet().insert({1}), true);
  static_assert(SampledSet::kDefaultCap == 100000);
}

}  // namespace
}  // namespace placer
