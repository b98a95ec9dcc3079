// The max-load objective (env/max_load.h) and its placers (agent/max_load.h):
// loads computed by hand; dp equal to brute force over contiguous splits and
// ilp to brute force over all splits on small random workloads; dp equal to
// the paper's DP on a published workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "placer/agent/max_load.h"
#include "placer/env/max_load.h"
#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/workload.h"

namespace placer {
namespace {

const std::string kDir = std::string(PLACER_FIXTURES_DIR) + "/dnn-partitioning/";

// a -> b, a -> c, b -> c; a's output costs 0.5 to move, b's 0.25.
Workload tiny() {
  return parse_workload(R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1, "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 10},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 20, "fpgaLatency": 2, "isBackwardNode": 0, "size": 10},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 30, "fpgaLatency": 3, "isBackwardNode": 0, "size": 10}],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
              {"sourceId": 2, "destId": 3, "cost": 0.25}]})",
                        "tiny");
}

TEST(MaxLoadTest, LoadsByHand) {
  const Workload w = tiny();
  // a on accelerator 0; b, c on accelerator 1: a's output leaves 0 once and enters 1 once.
  MaxLoadReport r = max_load(w, {0, 1, 1});
  EXPECT_DOUBLE_EQ(r.load[0], 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(r.load[1], 2.0 + 3.0 + 0.5);
  EXPECT_DOUBLE_EQ(r.load[2], 0.0);
  EXPECT_DOUBLE_EQ(r.max_load, 5.5);
  EXPECT_EQ(r.busiest, 1);
  EXPECT_TRUE(r.feasible);
  // c on the CPU: a's output goes to two devices but leaves accelerator 0 once; the CPU pays no transfers.
  r = max_load(w, {0, 1, 2});
  EXPECT_DOUBLE_EQ(r.load[0], 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(r.load[1], 2.0 + 0.5 + 0.25);
  EXPECT_DOUBLE_EQ(r.load[2], 30.0);
  EXPECT_DOUBLE_EQ(r.max_load, 30.0);
  // All on one accelerator: no transfers; 30 bytes fit in 100.
  r = max_load(w, {1, 1, 1});
  EXPECT_DOUBLE_EQ(r.max_load, 6.0);
  EXPECT_THROW(max_load(w, {0, 1}), PlacementError);
  EXPECT_THROW(max_load(w, {0, 1, 3}), PlacementError);
}

TEST(MaxLoadTest, ColocatedNodesMustShareADevice) {
  const Workload w = load_workload(kDir + "bert24_training.json");
  WorkloadPlacement p(w.nodes.size(), 0);
  EXPECT_NO_THROW(max_load(w, p));
  p[1] = 1;  // node1grad away from node1
  try {
    max_load(w, p);
    FAIL() << "no error";
  } catch (const PlacementError& e) {
    EXPECT_NE(std::string(e.what()).find("share a colorClass"), std::string::npos) << e.what();
  }
}

// A random workload: a forward DAG of `n` nodes with positive costs, and for
// training a backward node per forward node in its class, edges mirrored.
Workload random_workload(uint64_t seed, int n, bool training, int accelerators, int cpus) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> lat(0.5, 5.0), cost(0.0, 2.0), bytes(1.0, 10.0);
  std::string nodes, edges;
  auto node = [&](int id, bool backward, int cls) {
    const double acc = lat(rng);
    nodes += (nodes.empty() ? "" : ",") + std::string("{\"id\": ") + std::to_string(id) +
             ", \"supportedOnFpga\": 1, \"cpuLatency\": " + std::to_string(acc * (2 + lat(rng))) +
             ", \"fpgaLatency\": " + std::to_string(acc) + ", \"isBackwardNode\": " + (backward ? "1" : "0") +
             ", \"colorClass\": " + std::to_string(cls) + ", \"size\": " + std::to_string(bytes(rng)) + "}";
  };
  std::vector<double> out(static_cast<size_t>(2 * n));
  for (double& c : out) c = cost(rng);
  auto edge = [&](int from, int to) {
    edges += (edges.empty() ? "" : ",") + std::string("{\"sourceId\": ") + std::to_string(from) +
             ", \"destId\": " + std::to_string(to) + ", \"cost\": " + std::to_string(out[static_cast<size_t>(from)]) +
             "}";
  };
  for (int i = 0; i < n; ++i) node(i, false, i);
  if (training)
    for (int i = 0; i < n; ++i) node(n + i, true, i);
  for (int j = 1; j < n; ++j) {
    edge(static_cast<int>(rng() % static_cast<uint64_t>(j)), j);  // connected
    for (int i = 0; i < j; ++i)
      if (rng() % 4 == 0 && i != j - 1) edge(i, j);
  }
  if (training) {
    edge(n - 1, 2 * n - 1);
    for (int j = 1; j < n; ++j)
      for (int i = 0; i < j; ++i)
        if (edges.find("\"sourceId\": " + std::to_string(i) + ", \"destId\": " + std::to_string(j) + ",") !=
            std::string::npos)
          edge(n + j, n + i);
  }
  const std::string text = "{\"maxSizePerFPGA\": 25, \"maxFPGAs\": " + std::to_string(accelerators) +
                           ", \"maxCPUs\": " + std::to_string(cpus) + ", \"nodes\": [" + nodes + "], \"edges\": [" +
                           edges + "]}";
  return parse_workload(text, "random" + std::to_string(seed));
}

// Brute force over every placement of the classes; `contiguous` keeps those
// whose devices can be ordered so that every forward edge goes forward (a
// chain of ideals of the forward graph; backward nodes follow their class).
double brute_force(const Workload& w, bool contiguous) {
  int32_t classes = 0;
  const std::vector<int32_t> cls = w.colocation_classes(&classes);
  const int32_t devices = w.cluster.devices();
  std::vector<int32_t> of_class(static_cast<size_t>(classes), 0);
  double best = INFINITY;
  MaxLoadEvaluator eval(w);
  std::function<void(int32_t)> go = [&](int32_t k) {
    if (k == classes) {
      WorkloadPlacement p(w.nodes.size());
      for (size_t u = 0; u < p.size(); ++u) p[u] = of_class[static_cast<size_t>(cls[u])];
      if (!eval.feasible(p)) return;
      if (contiguous) {  // the device graph must be acyclic
        std::vector<std::vector<char>> reach(static_cast<size_t>(devices),
                                             std::vector<char>(static_cast<size_t>(devices), 0));
        for (const WorkloadEdge& e : w.edges)
          if (!w.nodes[static_cast<size_t>(e.to)].backward)  // backward work follows its forward class
            reach[static_cast<size_t>(p[static_cast<size_t>(e.from)])]
                 [static_cast<size_t>(p[static_cast<size_t>(e.to)])] = 1;
        for (int32_t m = 0; m < devices; ++m)
          for (int32_t i = 0; i < devices; ++i)
            for (int32_t j = 0; j < devices; ++j)
              if (reach[static_cast<size_t>(i)][static_cast<size_t>(m)] &&
                  reach[static_cast<size_t>(m)][static_cast<size_t>(j)])
                reach[static_cast<size_t>(i)][static_cast<size_t>(j)] = 1;
        for (int32_t i = 0; i < devices; ++i)
          for (int32_t j = 0; j < devices; ++j)
            if (i != j && reach[static_cast<size_t>(i)][static_cast<size_t>(j)] &&
                reach[static_cast<size_t>(j)][static_cast<size_t>(i)])
              return;
      }
      best = std::min(best, eval.evaluate(p));
      return;
    }
    for (int32_t d = 0; d < devices; ++d) {
      of_class[static_cast<size_t>(k)] = d;
      go(k + 1);
    }
  };
  go(0);
  return best;
}

TEST(MaxLoadTest, DpEqualsBruteForceOverContiguousSplits) {
  int fewer = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const bool training = seed % 2 == 0;
    const Workload w = random_workload(seed, training ? 5 : 7, training, 2 + static_cast<int>(seed % 2), 1);
    MaxLoadOptions options;
    const MaxLoadResult dp = place_max_load(w, "dp", options);
    const double expected = brute_force(w, true);
    ASSERT_FALSE(dp.placement.empty()) << "seed " << seed;
    EXPECT_NEAR(dp.max_load, expected, 1e-9 * expected) << "seed " << seed;
    EXPECT_NEAR(dp.bound, dp.max_load, 1e-9 * expected) << "seed " << seed;  // the DP's value is its split's
    const double any = brute_force(w, false);
    EXPECT_LE(any, expected + 1e-12);
    if (any < expected - 1e-9) ++fewer;

    options.time_limit_s = 20;
    options.warm = dp.placement;
    const MaxLoadResult ilp = place_max_load(w, "ilp", options);
    ASSERT_TRUE(ilp.optimal) << "seed " << seed << ": " << ilp.note;
    EXPECT_NEAR(ilp.max_load, any, 1e-6 * any) << "seed " << seed;
    options.time_limit_s = 0.05;
    const MaxLoadResult ls = place_max_load(w, "local_search", options);
    EXPECT_LE(ls.max_load, dp.max_load + 1e-12) << "seed " << seed;  // never worse than its warm start
  }
  EXPECT_GT(fewer, 0);  // non-contiguous splits do win on some of them
}

TEST(MaxLoadTest, DpMatchesThePapersDpOnBert24) {
  // The paper's DP (throughput-dp/dp.cpp) on these files: 17.7899 and 41.7458.
  const MaxLoadResult inference = place_max_load(load_workload(kDir + "bert24_inference.json"), "dp", {});
  EXPECT_NEAR(inference.max_load, 17.7899, 1e-4);
  const MaxLoadResult training = place_max_load(load_workload(kDir + "bert24_training.json"), "dp", {});
  EXPECT_NEAR(training.max_load, 41.7458, 1e-4);
  EXPECT_EQ(training.ideals, 30);  // the paper's: free classes that take memory join their neighbour
  EXPECT_TRUE(training.optimal);     // memory does not bind there
}

// A chain of n alike nodes on 6 accelerators (the CPU far slower, moves free): the optimum is ceil(n / 6).
// Below 5,000 groups dp starts from the best split into runs, above it without (that bound's table of
// every run took n^2 doubles: 40 GB for a chain of 50,000).
TEST(MaxLoadTest, DpOnLongChainsWithAndWithoutTheLinearBound) {
  for (int n : {4'998, 5'004}) {
    std::string nodes, edges;
    for (int i = 0; i < n; ++i) {
      nodes += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i) +
               R"(, "supportedOnFpga": 1, "cpuLatency": 1e6, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1})";
      if (i > 0)
        edges += (i > 1 ? "," : "") + std::string(R"({"sourceId": )") + std::to_string(i - 1) + R"(, "destId": )" +
                 std::to_string(i) + R"(, "cost": 0})";
    }
    const Workload w = parse_workload(R"({"maxSizePerFPGA": 1e9, "maxFPGAs": 6, "maxCPUs": 1, "nodes": [)" + nodes +
                                          R"(], "edges": [)" + edges + "]}",
                                      "chain");
    const MaxLoadResult dp = place_max_load(w, "dp", {});
    EXPECT_DOUBLE_EQ(dp.max_load, std::ceil(n / 6.0)) << n;
  }
}

// Four parallel chains of 20 have 21^4 = 194,481 ideals, within max_ideals; on 32 accelerators and 32 CPUs
// dp's table would take 1089 x 194,481 cells (2.8 GB, and the time to fill them): refused, naming why.
// The ilp on a 1,000-node workload on 16 accelerators keeps its time limit (CBC stopped only between
// nodes: 1 s asked, killed after 100 s).
TEST(MaxLoadTest, DpRefusesATableTooLargeAndIlpKeepsItsTimeLimit) {
  const auto workload = [](int chains, int length, int accelerators, int cpus, bool skip) {
    std::string nodes, edges;
    for (int c = 0; c < chains; ++c)
      for (int i = 0; i < length; ++i) {
        const int id = c * length + i;
        nodes += (id ? "," : "") + std::string(R"({"id": )") + std::to_string(id) +
                 R"(, "supportedOnFpga": 1, "cpuLatency": 3, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1})";
        for (int step = 1; step <= (skip ? 2 : 1); ++step)
          if (i >= step)
            edges += (edges.empty() ? "" : ",") + std::string(R"({"sourceId": )") + std::to_string(id - step) +
                     R"(, "destId": )" + std::to_string(id) + R"(, "cost": 0.1})";
      }
    return parse_workload(R"({"maxSizePerFPGA": 1e9, "maxFPGAs": )" + std::to_string(accelerators) +
                              R"(, "maxCPUs": )" + std::to_string(cpus) + R"(, "nodes": [)" + nodes +
                              R"(], "edges": [)" + edges + "]}",
                          "chains");
  };
  try {
    place_max_load(workload(4, 20, 32, 32, false), "dp", {});
    ADD_FAILURE() << "a 2.8 GB table was filled";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("its table would have more than", 0), 0u) << e.what();
  }
  MaxLoadOptions options;
  options.time_limit_s = 1;
  const auto start = std::chrono::steady_clock::now();
  const MaxLoadResult ilp = place_max_load(workload(1, 1000, 16, 1, true), "ilp", options);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15.0) << ilp.note;
}

// A node of no latency that takes memory, or that no accelerator runs, hanging off one other node: the
// paper's contraction joins the two (its "trivial nodes"), which leaves them no accelerator to share (w2) or
// only the slow CPU (w4); apart, each is on its own device and the optimum is 5. dp equals brute force.
TEST(MaxLoadTest, DpKeepsAFreeNodeApartWhenItTakesMemoryOrNoAcceleratorRunsIt) {
  for (const auto& [cpus, supported] : {std::pair{"0", "1"}, std::pair{"1", "0"}}) {
    const std::string text = std::string(R"({"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": )") + cpus +
                             R"(, "nodes": [
      {"id": 1, "supportedOnFpga": 1, "cpuLatency": 50, "fpgaLatency": 5, "isBackwardNode": 0, "size": 8},
      {"id": 2, "supportedOnFpga": )" +
                             supported +
                             R"(, "cpuLatency": 0, "fpgaLatency": 0, "isBackwardNode": 0, "size": 8}],
      "edges": [{"sourceId": 2, "destId": 1, "cost": 0}]})";
    const Workload w = parse_workload(text, "free_node");
    const MaxLoadResult dp = place_max_load(w, "dp", {});
    ASSERT_FALSE(dp.placement.empty()) << text << ": " << dp.note;
    EXPECT_DOUBLE_EQ(dp.max_load, 5.0) << text;
    EXPECT_DOUBLE_EQ(dp.max_load, brute_force(w, true)) << text;
  }
}

// Where memory binds (12 bytes, one accelerator of 10 each), a split with a free class that takes memory
// joined to its neighbour is optimal only over the splits that keep them together, and says so.
TEST(MaxLoadTest, DpSaysWhenJoiningAFreeClassThatTakesMemoryLimitsItsOptimum) {
  const Workload w = parse_workload(R"({"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": 0, "nodes": [
      {"id": 1, "supportedOnFpga": 1, "cpuLatency": 50, "fpgaLatency": 5, "isBackwardNode": 0, "size": 4},
      {"id": 2, "supportedOnFpga": 1, "cpuLatency": 0, "fpgaLatency": 0, "isBackwardNode": 0, "size": 4},
      {"id": 3, "supportedOnFpga": 1, "cpuLatency": 50, "fpgaLatency": 5, "isBackwardNode": 0, "size": 4}],
      "edges": [{"sourceId": 2, "destId": 1, "cost": 1}, {"sourceId": 1, "destId": 3, "cost": 1}]})",
                                    "binding");
  const MaxLoadResult dp = place_max_load(w, "dp", {});
  ASSERT_FALSE(dp.placement.empty()) << dp.note;
  EXPECT_FALSE(dp.optimal);
  EXPECT_NE(dp.note.find("that keep each free class taking memory with its neighbour (the paper's DP)"),
            std::string::npos)
      << dp.note;
  EXPECT_DOUBLE_EQ(dp.max_load, brute_force(w, true));
}

// 40 independent nodes have 2^40 ideals: on 32 accelerators and 32 CPUs dp stops at the table's limit as the
// lattice grows (1089 cells an ideal), not after building max_ideals of them; max_ideals below 1 is refused.
TEST(MaxLoadTest, DpStopsBuildingIdealsAtTheTablesLimit) {
  std::string nodes;
  for (int i = 0; i < 40; ++i)
    nodes += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i) +
             R"(, "supportedOnFpga": 1, "cpuLatency": 3, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1})";
  const Workload w = parse_workload(
      R"({"maxSizePerFPGA": 1e9, "maxFPGAs": 32, "maxCPUs": 32, "nodes": [)" + nodes + R"(], "edges": []})", "wide");
  MaxLoadOptions options;
  options.max_ideals = 300'000;
  try {
    place_max_load(w, "dp", options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("its table would have more than 1e+08 cells", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("past 91827 ideals"), std::string::npos) << e.what();
  }
  options.max_ideals = -5;
  try {
    place_max_load(w, "dp", options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "max_ideals: must be at least 1, not -5");
  }
}

// No split fits (one accelerator of 10 bytes, two nodes of 8, no CPU): CBC proves it, and the ilp says so
// rather than blaming its time limit.
TEST(MaxLoadTest, IlpSaysWhenNoSplitFits) {
  const Workload w = parse_workload(R"({"maxSizePerFPGA": 10, "maxFPGAs": 1, "maxCPUs": 0, "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 5, "fpgaLatency": 5, "isBackwardNode": 0, "size": 8},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 0, "fpgaLatency": 0, "isBackwardNode": 0, "size": 8}],
    "edges": [{"sourceId": 2, "destId": 1, "cost": 0}]})",
                                    "none_fit");
  MaxLoadOptions options;
  options.time_limit_s = 30;
  const MaxLoadResult r = place_max_load(w, "ilp", options);
  EXPECT_TRUE(r.placement.empty());
  EXPECT_EQ(r.note, "no split fits the accelerators' memory and support (proven infeasible)");
}

// 300 nodes on 32 accelerators at the least time limit (0.1 s): Clp stops the root's relaxation, whose
// "bound" (1e50) is none, and the warm split stays the answer: the bound reported is never above it.
TEST(MaxLoadTest, IlpCutShortReportsNoBoundAboveItsSplit) {
  std::mt19937_64 rng(7);
  std::string nodes, edges;
  for (int i = 0; i < 300; ++i) {
    const int lat = 1 + static_cast<int>(rng() % 9);
    nodes += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i) +
             R"(, "supportedOnFpga": 1, "cpuLatency": )" + std::to_string(5 * lat) + R"(, "fpgaLatency": )" +
             std::to_string(lat) + R"(, "isBackwardNode": 0, "size": )" + std::to_string(1 + rng() % 4) + "}";
    for (int from : {i - 1, i - 2 - static_cast<int>(rng() % 8)})  // the one before, and one of the 8 before it
      if (from >= 0)
        edges += (edges.empty() ? "" : ",") + std::string(R"({"sourceId": )") + std::to_string(from) +
                 R"(, "destId": )" + std::to_string(i) + R"(, "cost": 2})";
  }
  const Workload w = parse_workload(
      R"({"maxSizePerFPGA": 200, "maxFPGAs": 32, "maxCPUs": 2, "nodes": [)" + nodes + R"(], "edges": [)" + edges + "]}",
      "big");
  MaxLoadOptions options;
  options.time_limit_s = 0.1;
  for (int i = 0; i < 300; ++i) options.warm.push_back(i % 32);
  const MaxLoadResult r = place_max_load(w, "ilp", options);
  ASSERT_FALSE(r.placement.empty()) << r.note;
  EXPECT_FALSE(r.optimal) << r.note;
  EXPECT_LE(r.bound, r.max_load) << r.note;
  EXPECT_GE(r.bound, 0.0) << r.note;
}

// No packing fits (no CPU, each node larger than an accelerator): local_search says so at once instead of
// drawing packings for its whole time limit; a time limit past 1e7 s is no limit (1e10 s overflowed).
TEST(MaxLoadTest, LocalSearchGivesUpWhenNoPackingFitsAndTakesAnyTimeLimit) {
  const Workload none_fit = parse_workload(R"({"maxSizePerFPGA": 5, "maxFPGAs": 2, "maxCPUs": 0, "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 10},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 20, "fpgaLatency": 2, "isBackwardNode": 0, "size": 10}],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}]})",
                                           "none_fit");
  MaxLoadOptions options;
  options.time_limit_s = 60;
  const MaxLoadResult r = place_max_load(none_fit, "local_search", options);
  EXPECT_TRUE(r.placement.empty());
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.note.find("no start fits the accelerators' memory (10000 random packings tried)"), std::string::npos)
      << r.note;
  options.time_limit_s = 1e10;
  const MaxLoadResult ls = place_max_load(tiny(), "local_search", options);
  ASSERT_FALSE(ls.placement.empty());
  EXPECT_EQ(ls.note.rfind("1000000 descents", 0), 0u) << ls.note;  // not 1: the deadline is not in the past
}

// An evaluation budget (placer baseline --objective max_load --budget) stops local_search after exactly that many
// max-load evaluations, whatever its time limit: the split depends on the seed and the budget alone, so it can be
// compared with learned's at an equal number of evaluated splits.
TEST(MaxLoadTest, LocalSearchStopsAtItsEvaluationBudget) {
  const Workload w = load_workload(kDir + "bert24_training.json");
  MaxLoadOptions options;
  options.seed = 3;
  options.time_limit_s = 60;
  const MaxLoadResult dp = place_max_load(w, "dp", options);
  options.warm = dp.placement;
  options.evaluations = 300;
  const MaxLoadResult a = place_max_load(w, "local_search", options);
  ASSERT_FALSE(a.placement.empty()) << a.note;
  EXPECT_LE(a.max_load, dp.max_load + 1e-12);
  EXPECT_NE(a.note.find("), 300 evaluations, seed 3"), std::string::npos) << a.note;
  EXPECT_LT(a.seconds, 5.0) << a.note;
  options.time_limit_s = 1e6;
  const MaxLoadResult b = place_max_load(w, "local_search", options);
  EXPECT_EQ(a.placement, b.placement);
  options.evaluations = 10;  // spent inside the warm start's descent: no random start after it
  const MaxLoadResult d = place_max_load(w, "local_search", options);
  EXPECT_EQ(d.note, "1 descents (the warm start only), 10 evaluations, seed 3");
  options.evaluations = 3000;
  const MaxLoadResult c = place_max_load(w, "local_search", options);
  EXPECT_LE(c.max_load, a.max_load + 1e-12);
  EXPECT_NE(c.note.find("), 3000 evaluations, seed 3"), std::string::npos) << c.note;
}

TEST(MaxLoadTest, UnknownMethodNamesTheKnownOnes) {
  try {
    place_max_load(tiny(), "greedy", {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("known: dp, local_search, ilp, single"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace placer
