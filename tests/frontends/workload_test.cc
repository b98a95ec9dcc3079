// Workload files of the NeurIPS 2020 max-load problem (graphs/workload.h):
// a published workload imports with its costs; bad files get an InputError
// that names the field and the problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../error_of.h"
#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/workload.h"

namespace placer {
namespace {

const std::string kDir = std::string(PLACER_FIXTURES_DIR) + "/dnn-partitioning/";

// Three forward nodes a -> b -> c, a -> c; two accelerators and a CPU.
std::string tiny(const std::string& nodes_extra = "", const std::string& edges = "") {
  return R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1, "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 10},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 20, "fpgaLatency": 2, "isBackwardNode": 0, "size": 10},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 30, "fpgaLatency": 3, "isBackwardNode": 0, "size": 10})" +
         nodes_extra + R"(], "edges": [)" +
         (edges.empty() ? R"({"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
                           {"sourceId": 2, "destId": 3, "cost": 0.25})"
                        : edges) +
         "]}";
}

std::string error_of(const std::string& text) {
  return testing::error_of<InputError>([&] { parse_workload(text, "bad"); });
}

TEST(WorkloadTest, ImportsAPublishedWorkload) {
  const Workload w = load_workload(kDir + "bert24_inference.json");
  EXPECT_EQ(w.name, "bert24_inference");
  EXPECT_EQ(w.size(), 32);
  EXPECT_EQ(w.edges.size(), 55u);
  EXPECT_EQ(w.cluster.accelerators, 6);
  EXPECT_EQ(w.cluster.cpus, 1);
  EXPECT_DOUBLE_EQ(w.cluster.accelerator_bytes, 17185374208.0);
  EXPECT_FALSE(w.is_training());
  const int32_t i = *w.index_of(3);
  EXPECT_EQ(w.nodes[static_cast<size_t>(i)].name, "node3");
  EXPECT_GT(w.nodes[static_cast<size_t>(i)].cpu_latency, w.nodes[static_cast<size_t>(i)].accelerator_latency);
  EXPECT_TRUE(is_workload_json(tiny()));
  EXPECT_FALSE(is_workload_json(R"({"format": "placer-graph", "ops": []})"));

  const Workload t = load_workload(kDir + "bert24_training.json");
  EXPECT_TRUE(t.is_training());
  int32_t classes = 0;
  t.colocation_classes(&classes);
  EXPECT_EQ(classes, 32);  // each backward node shares its forward node's class
}

TEST(WorkloadTest, WritesWhatItReads) {
  const Workload w = parse_workload(tiny(), "tiny");
  const Workload again = parse_workload(workload_json(w), "tiny");
  ASSERT_EQ(again.size(), 3);
  EXPECT_EQ(again.edges.size(), 3u);
  EXPECT_DOUBLE_EQ(again.out_cost[0], 0.5);
  EXPECT_DOUBLE_EQ(again.out_cost[1], 0.25);
  EXPECT_DOUBLE_EQ(again.out_cost[2], 0.0);
  EXPECT_DOUBLE_EQ(again.nodes[2].cpu_latency, 30.0);
}

// Flags are true/false or 0/1, as the paper's files write them; a Python writer may write 1.0.
TEST(WorkloadTest, FlagsAreTrueFalseZeroOrOne) {
  const Workload w = parse_workload(
      tiny(R"(, {"id": 4, "supportedOnFpga": 1.0, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0.0},
              {"id": 5, "supportedOnFpga": false, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": true})"),
      "flags");
  EXPECT_TRUE(w.nodes[3].accelerator_ok);
  EXPECT_FALSE(w.nodes[3].backward);
  EXPECT_FALSE(w.nodes[4].accelerator_ok);
  EXPECT_TRUE(w.nodes[4].backward);
  EXPECT_NE(
      error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 2, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0})"))
          .find("nodes[3].supportedOnFpga: expected true, false, 0 or 1, got 2"),
      std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1,
                                "isBackwardNode": 0.5})"))
                .find("nodes[3].isBackwardNode: expected true, false, 0 or 1, got 0.5"),
            std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": "yes", "cpuLatency": 1, "fpgaLatency": 1,
                                "isBackwardNode": 0})"))
                .find("nodes[3].supportedOnFpga: expected true, false, 0 or 1, got \"yes\""),
            std::string::npos);
}

TEST(WorkloadTest, BadFilesNameTheFieldAndTheProblem) {
  EXPECT_NE(error_of(tiny("", R"({"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 2})"))
                .find("edges[1].cost: 2 differs from 0.5, the cost of edges[0]"),
            std::string::npos);
  EXPECT_NE(error_of(tiny("", R"({"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 2, "destId": 3, "cost": 1},
                               {"sourceId": 3, "destId": 1, "cost": 1})"))
                .find("edges: a cycle through node"),
            std::string::npos);
  EXPECT_NE(error_of(tiny("", R"({"sourceId": 1, "destId": 9, "cost": 1})")).find("edges[0].destId: no node has id 9"),
            std::string::npos);
  EXPECT_NE(error_of(tiny("", R"({"sourceId": 2, "destId": 2, "cost": 1})")).find("edges[0]: a self-loop"),
            std::string::npos);
  EXPECT_NE(
      error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": -1, "isBackwardNode": 0})"))
          .find("nodes[3].fpgaLatency: must be in [0, "),
      std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "fpgaLatency": 1, "isBackwardNode": 0})"))
                .find("nodes[3].cpuLatency: missing required field"),
            std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0,
                                "size": 1e30})"))
                .find("nodes[3].size: must be in [0, 1e+18], got 1e+30"),
            std::string::npos);
  EXPECT_NE(
      error_of(tiny(R"(, {"id": 3, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0})"))
          .find("nodes[3].id: 3 is taken by nodes[2]"),
      std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 1},
                              {"id": 5, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0})",
                          R"({"sourceId": 4, "destId": 5, "cost": 1})"))
                .find("edges[0]: goes from backward node 4 to forward node 5"),
            std::string::npos);
  EXPECT_NE(error_of(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0,
                                "colour": 2})"))
                .find("nodes[3].colour: unknown field"),
            std::string::npos);
  std::string many = tiny();
  many.replace(many.find("\"maxFPGAs\": 2"), 13, "\"maxFPGAs\": 1000");
  EXPECT_NE(error_of(many).find("maxFPGAs: must be in [0, 64], got 1000"), std::string::npos);
  EXPECT_NE(error_of("{\"maxSizePerFPGA\": ").find("JSON parse error"), std::string::npos);
  EXPECT_NE(error_of(R"({"maxSizePerFPGA": 1, "maxFPGAs": 1, "maxCPUs": 0, "nodes": 3, "edges": []})")
                .find("nodes: expected a list, got 3"),
            std::string::npos);
}

TEST(WorkloadTest, ReadsASplitAndFillsInColocatedNodes) {
  const Workload w = load_workload(kDir + "bert24_inference.json");
  const WorkloadPlacement p = load_workload_split(kDir + "bert24_inference_expert.json", w);
  ASSERT_EQ(p.size(), w.nodes.size());
  for (int32_t d : p) EXPECT_TRUE(d >= 0 && d < w.cluster.devices());

  const Workload t = parse_workload(tiny(R"(, {"id": 4, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1,
                                               "isBackwardNode": 1, "colorClass": 7})"),
                                    "t");
  // Node 4's class has no other node: a split without it cannot place it.
  try {
    parse_workload_split(R"({"fpgas": [{"nodes": [1, 2]}, {"nodes": [3]}], "cpus": [{"nodes": []}]})", t);
    FAIL() << "no error";
  } catch (const PlacementError& e) {
    EXPECT_NE(std::string(e.what()).find("node 4: not in the split"), std::string::npos) << e.what();
  }
  try {
    parse_workload_split(R"({"fpgas": [{"nodes": [1, 2]}, {"nodes": [3, 1]}]})", t);
    FAIL() << "no error";
  } catch (const PlacementError& e) {
    EXPECT_NE(std::string(e.what()).find("fpgas[1].nodes[1]: node 1 is on two devices"), std::string::npos) << e.what();
  }
}

// A split with one list per CPU (as workload_split_json and the paper's DP write it) reads back to the same
// placement: cpus[m] is CPU m, device accelerators + m.
TEST(WorkloadTest, ASplitWithSeveralCpuListsReadsBackToTheSamePlacement) {
  std::string text = tiny(R"(, {"id": 4, "supportedOnFpga": 0, "cpuLatency": 4, "fpgaLatency": 4, "isBackwardNode": 0},
                             {"id": 5, "supportedOnFpga": 0, "cpuLatency": 5, "fpgaLatency": 5, "isBackwardNode": 0})");
  text.replace(text.find("\"maxCPUs\": 1"), 12, "\"maxCPUs\": 3");
  const Workload w = parse_workload(text, "cpus3");
  ASSERT_EQ(w.cluster.devices(), 5);
  for (const WorkloadPlacement& p : {WorkloadPlacement{0, 1, 2, 3, 4}, WorkloadPlacement{4, 0, 3, 2, 4},
                                     WorkloadPlacement{2, 2, 2, 2, 2}, WorkloadPlacement{3, 3, 1, 4, 2}}) {
    const std::string split = workload_split_json(w, p, std::vector<double>(5, 1.0), 1.0);
    EXPECT_EQ(parse_workload_split(split, w), p) << split;
  }
  // The paper's DP leaves out devices it does not use: fewer lists than maxCPUs are fine.
  EXPECT_EQ(parse_workload_split(R"({"fpgas": [{"nodes": [1, 2, 3]}], "cpus": [{"nodes": [5]}, {"nodes": [4]}]})", w),
            (WorkloadPlacement{0, 0, 0, 3, 2}));
  // One CPU list (the paper's evaluator writes its CPU group as one) is the first CPU.
  EXPECT_EQ(parse_workload_split(R"({"fpgas": [{"nodes": [1, 2, 3]}], "cpus": [{"nodes": [4, 5]}]})", w),
            (WorkloadPlacement{0, 0, 0, 2, 2}));
  // The file's maxLoad and loads are its own figures, recomputed by whoever scores the split: not checked here.
  EXPECT_EQ(parse_workload_split(R"({"maxLoad": -1, "fpgas": [{"load": -1, "nodes": [1, 2, 3]}],
                                     "cpus": [{"load": 99, "nodes": [4, 5]}]})",
                                 w),
            (WorkloadPlacement{0, 0, 0, 2, 2}));
}

TEST(WorkloadTest, ASplitWithMoreDeviceListsThanTheWorkloadIsRefused) {
  const Workload w = parse_workload(tiny(), "t");  // maxFPGAs 2, maxCPUs 1
  auto split_error = [&](const std::string& split) {
    return testing::error_of<PlacementError>([&] { parse_workload_split(split, w); });
  };
  EXPECT_NE(split_error(R"({"fpgas": [{"nodes": [1]}], "cpus": [{"nodes": [2]}, {"nodes": [3]}]})")
                .find("cpus: 2 lists, more than the workload's maxCPUs (1)"),
            std::string::npos);
  EXPECT_NE(split_error(R"({"fpgas": [{"nodes": [1]}, {"nodes": [2]}, {"nodes": [3]}]})")
                .find("fpgas: 3 lists, more than the workload's maxFPGAs (2)"),
            std::string::npos);
  // Lists past the count that name no node use no device.
  EXPECT_EQ(parse_workload_split(R"({"fpgas": [{"nodes": [1, 2, 3]}], "cpus": [{"nodes": []}, {"nodes": []}]})", w),
            (WorkloadPlacement{0, 0, 0}));
}

TEST(WorkloadTest, ANodeListedTwiceSaysWhere) {
  const Workload w = parse_workload(tiny(), "t");
  auto split_error = [&](const std::string& split) {
    return testing::error_of<PlacementError>([&] { parse_workload_split(split, w); });
  };
  EXPECT_NE(split_error(R"({"fpgas": [{"nodes": [1, 2, 2]}], "cpus": [{"nodes": [3]}]})")
                .find("fpgas[0].nodes[2]: node 2 is listed twice in fpgas[0] (nodes[1] too)"),
            std::string::npos);
  EXPECT_NE(split_error(R"({"fpgas": [{"nodes": [1]}, {"nodes": [2]}], "cpus": [{"nodes": [3, 2]}]})")
                .find("cpus[0].nodes[1]: node 2 is on two devices (fpgas[1] too)"),
            std::string::npos);
}

}  // namespace
}  // namespace placer
