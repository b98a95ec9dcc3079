// learned on the max-load objective (agent/max_load_learned.h): a valid split
// whose max_load is env/max_load.h's value of it, never worse than its warm
// start, within the accelerators' memory, the same for the same seed and
// sample budget; bad options are errors that say which.
#include <gtest/gtest.h>

#include <string>

#include "placer/agent/max_load.h"
#include "placer/agent/max_load_learned.h"
#include "placer/env/max_load.h"
#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/workload.h"

namespace placer {
namespace {

const std::string kDir = std::string(PLACER_FIXTURES_DIR) + "/dnn-partitioning/";

MaxLoadOptions small_budget(uint64_t seed) {
  MaxLoadOptions o;
  o.seed = seed;
  o.samples = 256;
  o.time_limit_s = 600;  // the sample budget stops it
  return o;
}

void expect_error(const Workload& w, const MaxLoadOptions& o, const std::string& part) {
  try {
    max_load_learned(w, o);
    FAIL() << "no error for " << part;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(MaxLoadLearnedTest, ValidSplitNoWorseThanItsWarmStart) {
  const Workload w = load_workload(kDir + "bert24_training.json");
  const MaxLoadResult dp = place_max_load(w, "dp", {});
  const MaxLoadResult r = max_load_learned(w, small_budget(1));
  ASSERT_FALSE(r.placement.empty()) << r.note;
  EXPECT_EQ(r.method, "learned");
  const MaxLoadReport report = max_load(w, r.placement);  // checks colocation classes and devices
  EXPECT_DOUBLE_EQ(r.max_load, report.max_load);
  EXPECT_TRUE(report.feasible);
  EXPECT_DOUBLE_EQ(r.warm_max_load, dp.max_load);  // no split handed in: dp's is the warm start
  EXPECT_LE(r.max_load, r.warm_max_load);
  if (r.found_by == "policy")
    EXPECT_LT(r.max_load, r.warm_max_load) << r.note;
  else
    EXPECT_EQ(r.found_by, "dp") << r.note;
  EXPECT_NE(r.note.find("256 samples"), std::string::npos) << r.note;
}

// dp gives up above max_ideals (bert24_training has 30): learned starts from single's split instead of
// failing with dp's error.
TEST(MaxLoadLearnedTest, StartsFromSingleWhenDpGivesUp) {
  const Workload w = load_workload(kDir + "bert24_training.json");
  MaxLoadOptions o = small_budget(1);
  o.max_ideals = 5;
  EXPECT_THROW(place_max_load(w, "dp", o), InputError);
  const MaxLoadResult single = place_max_load(w, "single", o);
  const MaxLoadResult r = max_load_learned(w, o);
  ASSERT_FALSE(r.placement.empty()) << r.note;
  EXPECT_TRUE(max_load(w, r.placement).feasible);
  EXPECT_DOUBLE_EQ(r.warm_max_load, single.max_load);
  EXPECT_LE(r.max_load, single.max_load);
  EXPECT_TRUE(r.found_by == "single" || r.found_by == "policy") << r.found_by;
}

TEST(MaxLoadLearnedTest, SameSeedSameSplit) {
  const Workload w = load_workload(kDir + "bert24_inference.json");
  const MaxLoadResult a = max_load_learned(w, small_budget(3));
  const MaxLoadResult b = max_load_learned(w, small_budget(3));
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_DOUBLE_EQ(a.max_load, b.max_load);
}

TEST(MaxLoadLearnedTest, KeepsToMemoryFromAHandedInWarmStart) {
  // Three nodes of 10 bytes, accelerators of 15: one node per accelerator at most.
  Workload w;
  w.name = "tight";
  w.cluster = {2, 1, 15.0};
  for (int i = 1; i <= 3; ++i) {
    WorkloadNode n;
    n.id = i;
    n.cpu_latency = 10.0 * i;
    n.accelerator_latency = i;
    n.size = 10;
    w.nodes.push_back(n);
  }
  w.edges = {{0, 1}, {0, 2}, {1, 2}};
  w.out_cost = {0.5, 0.25, 0.0};
  MaxLoadOptions o = small_budget(2);
  o.warm = {2, 0, 1};  // a on the CPU: 10
  const MaxLoadResult r = max_load_learned(w, o);
  ASSERT_FALSE(r.placement.empty()) << r.note;
  const MaxLoadReport report = max_load(w, r.placement);
  EXPECT_TRUE(report.feasible);
  EXPECT_DOUBLE_EQ(r.max_load, report.max_load);
  EXPECT_DOUBLE_EQ(r.warm_max_load, 10.0);
  EXPECT_LE(r.max_load, 10.0);
  // Every feasible split puts a node on the CPU (>= 10); {0, 1, 2} and {1, 0, 2} pay 30 there, so
  // the best is 10, and the policy only keeps a split strictly better than its warm start's.
  EXPECT_DOUBLE_EQ(r.max_load, 10.0);
}

TEST(MaxLoadLearnedTest, BadOptionsSayWhich) {
  const Workload w = load_workload(kDir + "bert24_inference.json");
  MaxLoadOptions o = small_budget(1);
  o.samples = 0;
  expect_error(w, o, "--budget (samples) must be at least 32, got 0");
  o = small_budget(1);
  o.time_limit_s = 0;
  expect_error(w, o, "--time-limit must be > 0");
  o = small_budget(1);
  o.warm = {0, 1};
  try {
    max_load_learned(w, o);
    FAIL() << "a warm start of the wrong length accepted";
  } catch (const PlacementError&) {}
  Workload big = w;
  big.cluster.accelerators = 16;
  expect_error(big, small_budget(1), "at most 16 devices, the cluster has 17");
  try {
    place_max_load_or_learned(w, "greedy", {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("known: dp, local_search, ilp, single, learned"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace placer
