// Rank statistics, MAPE and the diverse placement generator of `placer fidelity`.
#include "placer/env/fidelity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "placer/graphs/error.h"
#include "report_edits.h"

namespace placer {
namespace {

using testing::expect_rejected;

TEST(Fidelity, RankStatisticsByHand) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Tied ranks are averaged: ranks {1, 2.5, 2.5, 4} vs {1, 2, 3, 4}.
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5), 1e-12);
  EXPECT_NEAR(kendall_tau_b({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(kendall_tau_b({1, 2, 2, 3}, {1, 2, 3, 4}), 5.0 / std::sqrt(30.0), 1e-12);
  // One side all tied: no ranking to correlate, undefined (NaN), not 0.
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  EXPECT_NEAR(mean_absolute_percentage_error({1, 2}, {1.1, 1.8}), 0.1, 1e-12);
  EXPECT_THROW(spearman({1}, {1}), InputError);
  EXPECT_THROW(kendall_tau_b({1, 2}, {1, 2, 3}), InputError);
}

// Every measured time alike (or every simulated one): the rank correlations are
// undefined, not 0. The JSON writes null (never nan) and reads back, the markdown and
// the plot say so, and the goal is not met on an undefined correlation.
TEST(Fidelity, RankCorrelationsOfAllTiedValuesAreUndefined) {
  EXPECT_TRUE(std::isnan(spearman({1, 2, 3}, {5, 5, 5})));
  EXPECT_TRUE(std::isnan(kendall_tau_b({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(kendall_tau_b({1, 2, 3}, {5, 5, 5})));
  EXPECT_TRUE(std::isnan(kendall_tau_b({2, 2}, {2, 2})));
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  // Measured all alike, simulated within 5%: MAPE under 10%, but no ranking to judge.
  r.points = {{"single", 1.0, 0.0, 1.05, 0}, {"split", 1.0, 0.0, 0.96, 100}, {"random", 1.0, 0.0, 1.01, 5}};
  r.compute_statistics();
  EXPECT_TRUE(std::isnan(r.spearman));
  EXPECT_TRUE(std::isnan(r.kendall));
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"spearman\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"kendall_tau_b\": null"), std::string::npos) << json;
  EXPECT_EQ(json.find("nan"), std::string::npos) << json;
  const FidelityReport back = FidelityReport::from_json(json);
  EXPECT_TRUE(std::isnan(back.spearman));
  EXPECT_EQ(back.to_json(), json);
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("| undefined (all values tied) | undefined (all values tied) |"), std::string::npos) << md;
  EXPECT_NE(md.find("Goal: Spearman >= 0.9 and MAPE <= 10%: not met (undefined)."), std::string::npos) << md;
  EXPECT_EQ(md.find("nan"), std::string::npos) << md;
  const std::string svg = r.to_svg();
  EXPECT_NE(svg.find("Spearman undefined (all values tied), Kendall undefined (all values tied)"), std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  // The other simulators' figures and the measurement against itself: undefined too, still said.
  for (auto& p : r.points) {
    p.simulated_unfitted_s = 2.0;
    p.rounds_s = {1.0, 1.0};
  }
  r.copy_s_per_byte = 1e-10;
  r.compute_statistics();
  EXPECT_TRUE(std::isnan(r.retest_spearman));
  const std::string md2 = r.to_markdown();
  EXPECT_NE(md2.find("Without it, on the same measurements: Spearman undefined (all values tied), MAPE 100%."),
            std::string::npos)
      << md2;
  EXPECT_NE(md2.find("(round 1 vs round 2 of the same placements): Spearman undefined (all values tied)."),
            std::string::npos)
      << md2;
  EXPECT_EQ(md2.find("nan"), std::string::npos) << md2;
  EXPECT_EQ(FidelityReport::from_json(r.to_json()).to_json(), r.to_json());
}

// Each point's interval is printed at the level it reaches (1 step: 0%; 3 steps: 75%), never 95% regardless;
// the level is written and read back, and a report written before (no level) reads as 95%, as it was printed then.
TEST(Fidelity, ReportPrintsEachIntervalAtItsOwnLevel) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  FidelityPoint a, b, c;
  a.kind = "single", a.measured_s = 1.0, a.simulated_s = 1.1, a.ci_low_s = a.ci_high_s = 1.0, a.steps = 1;
  a.ci_level = 0.0;
  b.kind = "split", b.measured_s = 2.0, b.simulated_s = 1.8, b.ci_low_s = 1.9, b.ci_high_s = 2.1, b.steps = 3;
  b.ci_level = 0.75;
  c.kind = "random", c.measured_s = 3.0, c.simulated_s = 3.3, c.ci_low_s = 2.9, c.ci_high_s = 3.1, c.steps = 30;
  c.ci_level = 0.9785;
  r.points = {a, b, c};
  r.compute_statistics();
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("| measured s (median) | interval (level) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| [1, 1] (0%) | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| [1.9, 2.1] (75%) | 3 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| [2.9, 3.1] (95%) | 30 |"), std::string::npos) << md;
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"ci_level\": 0.75"), std::string::npos) << json;
  const FidelityReport back = FidelityReport::from_json(json);
  EXPECT_DOUBLE_EQ(back.points[1].ci_level, 0.75);
  EXPECT_EQ(back.to_json(), json);
  // Written before the level was: 95%, as printed then.
  std::string old = json;
  for (const char* level : {", \"ci_level\": 0,", ", \"ci_level\": 0.75,", ", \"ci_level\": 0.9785,"})
    old = testing::replaced_once(old, level, ",");
  EXPECT_EQ(old.find("ci_level"), std::string::npos) << old;
  const FidelityReport older = FidelityReport::from_json(old);
  EXPECT_DOUBLE_EQ(older.points[0].ci_level, 0.95);
  EXPECT_NE(older.to_markdown().find("| [1, 1] (95%) | 1 |"), std::string::npos) << older.to_markdown();
  expect_rejected(testing::replaced_once(json, "\"ci_level\": 0.75", "\"ci_level\": 1.5"), "points[1].ci_level");
  EXPECT_EQ(interval_level_label(0.95), "95%");
  EXPECT_EQ(interval_level_label(0.999), "95%");
  EXPECT_EQ(interval_level_label(0.9375), "93.8%");
  EXPECT_EQ(interval_level_label(0.0), "0%");
}

// A chain of n relus; with `pairs`, ops 10k and 10k+1 are one co-location group.
Graph relu_chain(const std::string& name, int n, bool pairs) {
  Graph g;
  g.name = name;
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = "aten::relu";
    if (i) op.inputs.push_back({OpId(i - 1), 0});
    op.outputs.push_back(TensorSpec{{4}, DType::Float32});
    if (pairs && i % 10 < 2) op.group = "pair" + std::to_string(i / 10);
    g.add_op(std::move(op));
  }
  return g;
}

TEST(Fidelity, DiversePlacementsKeepGroupsAndAreDistinct) {
  const Graph g = relu_chain("g", 40, /*pairs=*/true);
  const auto ps = diverse_placements(g, 2, 30, 5);
  ASSERT_EQ(ps.size(), 30u);
  EXPECT_EQ(ps[0].first, "single");
  EXPECT_EQ(ps[1].first, "single");
  std::set<uint64_t> hashes;
  std::set<std::string> kinds;
  for (const auto& [kind, p] : ps) {
    kinds.insert(kind);
    hashes.insert(placement_hash(p));
    ASSERT_EQ(p.device_of.size(), 40u);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(p.device_of[10 * k], p.device_of[10 * k + 1]);
  }
  EXPECT_EQ(hashes.size(), 30u);
  for (const char* k : {"single", "round_robin", "split", "blocks", "random", "perturbed"})
    EXPECT_TRUE(kinds.count(k)) << k;
  // Deterministic in the seed.
  EXPECT_EQ(diverse_placements(g, 2, 30, 5)[29].second, ps[29].second);
}

// On cpu:8+cuda:0 the first nine placements were all "single" and eight of them
// the same work on equal CPUs: no ranking to measure (seen on the lent H100).
TEST(Fidelity, DiversePlacementsProposeAtMostTwoSinglesPerDeviceClass) {
  const Graph g = relu_chain("chain", 20, /*pairs=*/false);
  Cluster c;
  for (int d = 0; d < 8; ++d) {
    Device cpu;
    cpu.name = "cpu:" + std::to_string(d);
    c.devices.push_back(cpu);
  }
  Device gpu;
  gpu.name = "cuda:0";
  gpu.kind = DeviceKind::Cuda;
  gpu.peak_flops = 5e13;
  c.devices.push_back(gpu);
  const auto ps = diverse_placements(g, c, 12, 1);
  int singles = 0;
  bool gpu_single = false;
  for (const auto& [kind, p] : ps) {
    if (kind != "single") continue;
    ++singles;
    gpu_single = gpu_single || p.device_of[0] == DeviceId(8);
  }
  EXPECT_EQ(singles, 3);  // cpu:0, cpu:1 (the same work again), cuda:0
  EXPECT_TRUE(gpu_single);
  EXPECT_EQ(ps.size(), 12u);
  EXPECT_THROW(diverse_placements(g, 9, 12, 1, {0, 0}), InputError);
}

TEST(Fidelity, SpreadBySimulatedKeepsPlacementsApartAndThinsEvenly) {
  // 1.00 1.01 1.03 1.06 1.10 1.20 1.50 2.00: >= 5% apart from the fastest up: 1.00 1.06 1.20 1.50 2.00.
  const std::vector<double> t = {1.10, 1.00, 2.00, 1.03, 1.50, 1.01, 1.06, 1.20};
  const auto all = spread_by_simulated(t, 10, 0.05);
  std::vector<double> got;
  for (size_t i : all) got.push_back(t[i]);
  EXPECT_EQ(got, (std::vector<double>{1.00, 1.06, 1.20, 1.50, 2.00}));
  const auto three = spread_by_simulated(t, 3, 0.05);  // thinned: fastest, middle, slowest
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(t[three[0]], 1.00);
  EXPECT_EQ(t[three[1]], 1.20);
  EXPECT_EQ(t[three[2]], 2.00);
  EXPECT_EQ(spread_by_simulated(t, 10, 0.0).size(), t.size());
  EXPECT_THROW(spread_by_simulated(t, 0, 0.05), InputError);
}

TEST(Fidelity, ReportWritesStatisticsAndPlot) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  r.points = {{"single", 1.0, 0.01, 1.1, 0}, {"split", 2.0, 0.02, 1.8, 100}, {"random", 3.0, 0.0, 3.3, 5}};
  r.compute_statistics();
  EXPECT_DOUBLE_EQ(r.spearman, 1.0);
  EXPECT_DOUBLE_EQ(r.kendall, 1.0);
  EXPECT_NEAR(r.mape, 0.1, 1e-12);
  EXPECT_NE(r.to_json().find("\"spearman\": 1"), std::string::npos);
  EXPECT_NE(r.to_markdown().find("met"), std::string::npos);
  const std::string svg = r.to_svg();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 10, true);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_TRUE(std::isnan(r.retest_spearman));  // one round: no re-measurement
  EXPECT_NE(r.to_json().find("\"retest_spearman\": null"), std::string::npos);
}

TEST(Fidelity, ReportReadsBackFromItsJsonWithTheRetestFigure) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  r.command = "placer fidelity ...";
  r.host = "test";
  r.ops = 12;
  // Round 2 ranks the points in reverse: the measurement disagrees with itself.
  auto point = [](const char* kind, double measured, double simulated, int64_t bytes, std::vector<double> rounds) {
    FidelityPoint p;
    p.kind = kind;
    p.measured_s = measured;
    p.ci_low_s = 0.9 * measured;
    p.ci_high_s = 1.1 * measured;
    p.steps = 12;
    p.simulated_s = simulated;
    p.transfer_bytes = bytes;
    p.rounds_s = std::move(rounds);
    return p;
  };
  r.points = {point("single", 1.0, 1.1, 0, {1.0, 3.0}), point("split", 2.0, 1.8, 100, {2.0, 2.0}),
              point("random", 3.0, 3.3, 5, {3.0, 1.0})};
  r.compute_statistics();
  EXPECT_DOUBLE_EQ(r.retest_spearman, -1.0);
  EXPECT_NE(r.to_markdown().find("round 1 vs round 2"), std::string::npos);
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.to_svg(), r.to_svg());
  EXPECT_EQ(back.points[2].rounds_s, (std::vector<double>{3.0, 1.0}));
  // A kind is a file's stem under --placements-from: quoted in the JSON, escaped in the plot (a name with a
  // quote made a report --replot could not read).
  r.points[1].kind = "a\"b<c";
  EXPECT_EQ(FidelityReport::from_json(r.to_json()).points[1].kind, "a\"b<c");
  EXPECT_NE(r.to_svg().find("a\"b&lt;c: measured"), std::string::npos);
  expect_rejected(R"({"graph": "g", "devices": "cpu:2", "command": "", "host": "", "ops": 1,
        "calibrated_fraction": 1, "per_op_overhead_s": 0, "failed": 0, "points": [{"kind": "single"}]})",
                  "points[0].measured_s: missing required field");
  // Counts out of range (cast to an integer, 1e30 was undefined) and a round that is no step (skipped, it
  // shifted the rounds the retest pairs) are refused, naming the field.
  const std::string good = r.to_json();
  auto with = [&](const std::string& from, const std::string& to) { return testing::replaced_once(good, from, to); };
  expect_rejected(with("\"transfer_bytes\": 100", "\"transfer_bytes\": 1e30"), "points[1].transfer_bytes");
  expect_rejected(with("\"transfer_bytes\": 100", "\"transfer_bytes\": -5"), "points[1].transfer_bytes");
  expect_rejected(with("\"failed\": 0", "\"failed\": 1e10"), "failed");
  expect_rejected(with("\"ops\": 12", "\"ops\": -1"), "ops");
  expect_rejected(with("\"rounds_s\": [2, 2]", "\"rounds_s\": [2, \"x\"]"), "points[1].rounds_s[1]");
}

// The fitted copy costs are written to the steps' 8 significant digits, so that
// `placer simulate` on the saved profile can be checked against the report (a
// 6-digit cost failed tests/cli/fidelity_cli.sh's 1e-7 comparison).
TEST(Fidelity, ReportWritesTheFittedCopyCostsToEightDigits) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  r.points = {{"single", 1.0, 0.01, 1.1, 0}, {"split", 2.0, 0.02, 1.8, 100}};
  r.copy_s_per_byte = 1.83766341e-08;
  r.copy_s_per_copy = 3.00458123e-06;
  r.cross_copy_s = 2.71828183e-05;
  r.cross_copy_s_per_byte = 3.14159265e-10;
  r.compute_statistics();
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  for (auto [got, want] :
       {std::pair{back.copy_s_per_byte, r.copy_s_per_byte}, std::pair{back.copy_s_per_copy, r.copy_s_per_copy},
        std::pair{back.cross_copy_s, r.cross_copy_s}, std::pair{back.cross_copy_s_per_byte, r.cross_copy_s_per_byte}})
    EXPECT_NEAR(got, want, 1e-7 * want);
}

// A step report of two points on cpu:2, its statistics computed.
FidelityReport two_point_report() {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  r.points = {{"single", 1.0, 0.01, 1.1, 0}, {"split", 2.0, 0.02, 1.8, 100}};
  r.compute_statistics();
  return r;
}

// The cross-core probe per round (while profiled, while measured): absent from a
// report that has none, written, read back and said in the markdown when present.
TEST(Fidelity, ReportKeepsTheCrossCoreProbePerRound) {
  FidelityReport r = two_point_report();
  EXPECT_EQ(r.to_json().find("core_rtt"), std::string::npos);
  EXPECT_EQ(r.to_markdown().find("Cross-core round trip"), std::string::npos);
  EXPECT_TRUE(FidelityReport::from_json(r.to_json()).core_rtt_measured_s.empty());
  r.core_rtt_profiled_s = {8.8e-8, 3.74e-7};
  r.core_rtt_measured_s = {9.1e-8, 4.22e-7};
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  EXPECT_EQ(back.core_rtt_profiled_s, r.core_rtt_profiled_s);
  EXPECT_EQ(back.core_rtt_measured_s, r.core_rtt_measured_s);
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_NE(r.to_markdown().find("88, 374 ns while each round's profile measured its mixed step, 91, 422 ns (medians)"),
            std::string::npos)
      << r.to_markdown();
  std::string bad = r.to_json();
  const size_t at = bad.find("\"core_rtt_measured_s\": [");
  bad.replace(at, bad.find(']', at) + 1 - at, "\"core_rtt_measured_s\": 3");
  expect_rejected(bad, "core_rtt_measured_s: expected a list");
}

// Each CPU device's step alone and the simulator that takes the devices as
// equally fast: absent when not measured; written, read back, said in the
// markdown with that simulator's Spearman and MAPE on the same measurements.
TEST(Fidelity, ReportKeepsTheCpuStepsAndTheirEffect) {
  FidelityReport r = two_point_report();
  EXPECT_EQ(r.to_json().find("cpu_steps"), std::string::npos);
  EXPECT_EQ(r.to_markdown().find("Each CPU device alone"), std::string::npos);
  EXPECT_TRUE(std::isnan(r.spearman_equal_cpus));
  r.cpu_steps = {{"cpu:0", 0.0387}, {"cpu:1", 0.0364}};
  r.points[0].simulated_equal_cpus_s = 2.2;  // ranked the other way round: Spearman -1
  r.points[1].simulated_equal_cpus_s = 1.0;
  r.compute_statistics();
  EXPECT_DOUBLE_EQ(r.spearman_equal_cpus, -1.0);
  EXPECT_DOUBLE_EQ(r.mape_equal_cpus, 0.5 * (1.2 / 1.0 + 1.0 / 2.0));
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  ASSERT_EQ(back.cpu_steps.size(), 2u);
  EXPECT_EQ(back.cpu_steps[1].device, "cpu:1");
  EXPECT_DOUBLE_EQ(back.cpu_steps[1].step_s, 0.0364);
  EXPECT_DOUBLE_EQ(back.points[0].simulated_equal_cpus_s, 2.2);
  EXPECT_EQ(back.to_json(), r.to_json());
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("Each CPU device alone (the profile's step of the graph on it, the devices interleaved): cpu:0 "
                    "38.7 ms (x1), cpu:1 36.4 ms (x0.941)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Without these steps (the ops as timed, the devices taken as equally fast), on the same "
                    "measurements: Spearman -1, MAPE 85%"),
            std::string::npos)
      << md;
  std::string bad = r.to_json();
  const size_t at = bad.find("\"step_s\": 0.0364");
  bad.replace(at, std::string("\"step_s\": 0.0364").size(), "\"step_s\": -1");
  expect_rejected(bad, "cpu_steps[1].step_s: must be in");
}

// A round is in a spell when its probe reads over the ratio times the quietest
// round's; unread rounds (0) are neither the quietest nor flagged, and a run read
// wholly in a spell (all rounds alike) flags none.
TEST(Fidelity, RoundsInASpellAreThoseOverTheRatioTimesTheQuietest) {
  using V = std::vector<size_t>;
  EXPECT_EQ(rounds_in_a_spell({77e-9, 382e-9}), V{1});               // nmt's second round, fidelity_s22_probe_run2
  EXPECT_EQ(rounds_in_a_spell({450e-9, 85e-9, 81e-9}), V{0});        // rnnlm's first profile, fidelity_s22_probe
  EXPECT_EQ(rounds_in_a_spell({80e-9, 400e-9, 500e-9}), (V{2, 1}));  // highest first
  EXPECT_EQ(rounds_in_a_spell({80e-9, 150e-9, 90e-9}), V{});         // under 2x: the machine's ordinary spread
  EXPECT_EQ(rounds_in_a_spell({400e-9, 420e-9}), V{});               // all in a spell: the rounds agree
  EXPECT_EQ(rounds_in_a_spell({0.0, 400e-9}), V{});                  // one reading: nothing to compare
  EXPECT_EQ(rounds_in_a_spell({0.0, 80e-9, 170e-9}), V{2});
  EXPECT_EQ(rounds_in_a_spell({}), V{});
  EXPECT_EQ(rounds_in_a_spell({80e-9, 150e-9, 90e-9}, 1.5), V{1});
  EXPECT_EQ(rounds_in_a_spell({80e-9, 80e-9}, 1.0), V{});  // not over: equal readings
  EXPECT_THROW(rounds_in_a_spell({80e-9, 90e-9}, 0.5), InputError);
  EXPECT_EQ(quietest_reading({0.0, 90e-9, 80e-9, 400e-9}), 80e-9);
  EXPECT_EQ(quietest_reading({0.0, -1.0}), 0.0);
}

// With four rounds or more the report sets the halves of the rounds against each other (each point's mean round
// median); fewer rounds, or a point with fewer, give none.
TEST(Fidelity, SplitHalfSpearmanSetsTheHalvesOfTheRoundsAgainstEachOther) {
  FidelityReport r = two_point_report();
  auto with_rounds = [&](std::vector<std::vector<double>> rounds) {
    r.points.clear();
    for (size_t i = 0; i < rounds.size(); ++i) {
      FidelityPoint p;
      p.kind = "split";
      p.measured_s = p.simulated_s = 1.0 + static_cast<double>(i);
      p.rounds_s = rounds[i];
      r.points.push_back(p);
    }
    r.compute_statistics();
    return r.split_half_spearman;
  };
  EXPECT_DOUBLE_EQ(with_rounds({{1, 1, 3, 3}, {2, 2, 2, 2}, {3, 3, 1, 1}}), -1.0);  // halves 1,2,3 against 3,2,1
  EXPECT_DOUBLE_EQ(r.retest_spearman, 1.0);                                         // round 1 against round 2
  EXPECT_NE(r.to_json().find("\"split_half_spearman\": -1"), std::string::npos) << r.to_json();
  EXPECT_NE(r.to_markdown().find("by halves (each placement's mean round median"), std::string::npos);
  EXPECT_EQ(FidelityReport::from_json(r.to_json()).to_json(), r.to_json());
  // Five rounds: the first two against the last three (means 1.5, 2, 2.5 against 3, 2, 1).
  EXPECT_DOUBLE_EQ(with_rounds({{1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}, {2, 3, 1, 1, 1}}), -1.0);
  EXPECT_DOUBLE_EQ(with_rounds({{1, 2, 1, 2}, {2, 3, 2, 3}, {3, 4, 3, 4}}), 1.0);
  EXPECT_TRUE(std::isnan(with_rounds({{1, 2, 3}, {2, 3, 4}, {3, 4, 5}})));        // three rounds
  EXPECT_TRUE(std::isnan(with_rounds({{1, 2, 3, 4}, {2, 3, 4}, {3, 4, 5, 6}})));  // a point with three
  EXPECT_EQ(r.to_json().find("split_half"), std::string::npos);
}

// Retaken rounds are written, read back and said in the markdown; a bad field is named.
TEST(Fidelity, ReportKeepsItsRetakenRounds) {
  FidelityReport r = two_point_report();
  EXPECT_EQ(r.to_json().find("retakes"), std::string::npos);
  EXPECT_EQ(r.to_markdown().find("measured again"), std::string::npos);
  r.retakes = {{1, 382e-9, 77e-9, 81e-9, true}, {0, 300e-9, 80e-9, 310e-9, false}};
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  ASSERT_EQ(back.retakes.size(), 2u);
  EXPECT_EQ(back.retakes[0].round, 1);
  EXPECT_TRUE(back.retakes[0].kept);
  EXPECT_FALSE(back.retakes[1].kept);
  EXPECT_DOUBLE_EQ(back.retakes[1].retake_probe_s, 310e-9);
  EXPECT_EQ(back.to_json(), r.to_json());
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("Round 2 was measured again (profile and placements): its probe read 382 ns, more than 2x the "
                    "quietest round's 77 ns"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("The retake read 81 ns and replaced the round."), std::string::npos) << md;
  EXPECT_NE(md.find("The retake read 310 ns; the round was kept"), std::string::npos) << md;
  r.retakes[1].retake_probe_s = 0;  // the retake's probe failed: nothing to compare
  EXPECT_NE(r.to_markdown().find("The retake was not probed; the round was kept.\n"), std::string::npos)
      << r.to_markdown();
  for (auto [from, to, field] :
       {std::tuple{"\"probe_s\": 3.82e-07", "\"probe_s\": \"x\"", "retakes[0].probe_s"},
        std::tuple{"\"round\": 1,", "\"round\": -1,", "retakes[0].round"},
        std::tuple{"\"kept\": true", "\"kept\": true, \"why\": 1", "retakes[0].why: unknown field"},
        std::tuple{"\"spell_ratio\": 2", "\"spell_ratio\": 0.5", "spell_ratio"},
        std::tuple{"\"quiet_s\": 7.7e-08", "\"quiet_s\": 5e-07", "retakes[0].probe_s: must be above quiet_s"},
        std::tuple{"\"retake_probe_s\": 8.1e-08", "\"retake_probe_s\": 4e-07", "retakes[0].kept: a kept retake"}}) {
    std::string bad = r.to_json();
    const size_t at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from << " in " << bad;
    bad.replace(at, std::string(from).size(), to);
    expect_rejected(bad, field);
  }
}

TEST(Fidelity, PipelineReportNamesItsObjectiveAndReadsBack) {
  FidelityReport r = two_point_report();
  const std::string step_json = r.to_json();
  EXPECT_EQ(step_json.find("objective"), std::string::npos);  // a step report is as before
  EXPECT_EQ(FidelityReport::from_json(step_json).pipeline, std::nullopt);
  r.pipeline = PipelineSpec{8, PipelineSchedule::GPipe};
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"objective\": \"pipeline\",\n  \"microbatches\": 8,\n  \"schedule\": \"gpipe\""),
            std::string::npos)
      << json;
  EXPECT_NE(r.to_markdown().find("Objective: pipeline, 8 micro-batches, gpipe"), std::string::npos);
  EXPECT_NE(r.to_svg().find("simulated vs measured mini-batch time (pipeline, 8 micro-batches, gpipe)"),
            std::string::npos);
  const FidelityReport back = FidelityReport::from_json(json);
  ASSERT_TRUE(back.pipeline.has_value());
  EXPECT_EQ(*back.pipeline, *r.pipeline);
  EXPECT_EQ(back.to_json(), json);
  std::string bad = json;
  bad.replace(bad.find("\"microbatches\": 8"), 17, "\"microbatches\": 0");
  expect_rejected(bad, "fidelity report: microbatches: ");
}

// The simulator is calibrated on the rounds' mean profile, each op's fastest round reported beside
// it; a report made before (its JSON names no calibration) reads, and re-renders, as what it was.
// The copy cost fitted on the profile's mixed step: per copy between a CPU device and a GPU (since
// bench/results/gpu_crossings.md), per MB in reports written before, which still read back and say so.
TEST(Fidelity, ReportSaysTheCopyCostItFitted) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:8+cuda:0";
  FidelityPoint a, b;
  a.kind = "single", a.measured_s = 1.0, a.simulated_s = 1.1;
  b.kind = "split", b.measured_s = 2.0, b.simulated_s = 1.8;
  r.points = {a, b};
  r.compute_statistics();
  r.cross_copy_s = 4.8e-4;
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"cross_copy_s\": 0.00048"), std::string::npos) << json;
  EXPECT_EQ(FidelityReport::from_json(json).to_json(), json);
  EXPECT_NE(r.to_markdown().find("Copies between a CPU device and a GPU: 480 us per copy beyond the link fit"),
            std::string::npos)
      << r.to_markdown();
  FidelityReport old = r;
  old.cross_copy_s = 0;
  old.cross_copy_s_per_byte = 3.81e-10;
  const FidelityReport back = FidelityReport::from_json(old.to_json());
  EXPECT_EQ(back.cross_copy_s, 0.0);
  EXPECT_NE(back.to_markdown().find("Copies between a CPU device and a GPU: 0.381 ms per MB"), std::string::npos)
      << back.to_markdown();
}

// The CPU copy cost fitted per byte, and beside it per copy on the same
// measurements: both written, read back, and said in the markdown.
TEST(Fidelity, ReportSetsTheCopyCostPerCopyBesidePerByte) {
  FidelityReport r = two_point_report();
  r.copy_s_per_byte = 1.89e-10;
  r.compute_statistics();
  EXPECT_TRUE(std::isnan(r.spearman_per_copy));
  EXPECT_EQ(r.to_markdown().find("Fitted per copy"), std::string::npos);
  r.copy_s_per_copy = 2.5e-5;
  r.points[0].simulated_per_copy_s = 2.2;  // ranked the other way round: Spearman -1
  r.points[1].simulated_per_copy_s = 1.0;
  r.compute_statistics();
  EXPECT_DOUBLE_EQ(r.spearman_per_copy, -1.0);
  const FidelityReport back = FidelityReport::from_json(r.to_json());
  EXPECT_DOUBLE_EQ(back.copy_s_per_copy, 2.5e-5);
  EXPECT_DOUBLE_EQ(back.points[0].simulated_per_copy_s, 2.2);
  EXPECT_EQ(back.to_json(), r.to_json());
  const std::string md = r.to_markdown();
  EXPECT_NE(md.find("Copies between CPU devices: 0.189 ms per MB (10^6 bytes) beyond the link fit"), std::string::npos)
      << md;
  EXPECT_NE(md.find("Fitted per copy instead (25 us a copy, whatever its size), on the same measurements: Spearman -1, "
                    "MAPE 85%."),
            std::string::npos)
      << md;
}

TEST(Fidelity, ReportSaysWhichProfileCalibratedIt) {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  FidelityPoint a, b;
  a.kind = "single", a.measured_s = 1.0, a.simulated_s = 1.1, a.simulated_other_calibration_s = 0.9;
  b.kind = "split", b.measured_s = 2.0, b.simulated_s = 1.8, b.simulated_other_calibration_s = 1.6;
  r.points = {a, b};
  r.compute_statistics();
  EXPECT_NEAR(r.mape_other_calibration, (0.1 + 0.2) / 2, 1e-12);
  EXPECT_STREQ(r.other_calibration(), "fastest_round");
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"calibration\": \"rounds_mean\""), std::string::npos) << json;
  EXPECT_NE(r.to_markdown().find("The profile is the rounds' mean"), std::string::npos);
  EXPECT_NE(r.to_markdown().find("calibrated on each op's fastest round instead, on the same measurements: Spearman 1, "
                                 "MAPE 15%"),
            std::string::npos)
      << r.to_markdown();
  EXPECT_EQ(FidelityReport::from_json(json).to_json(), json);
  // An earlier report: no "calibration", the rounds' mean beside each op's fastest round.
  const std::string old = R"({"graph": "g", "devices": "cpu:2", "command": "", "host": "", "ops": 1,
      "calibrated_fraction": 1, "per_op_overhead_s": 0, "failed": 0, "points": [
      {"kind": "single", "measured_s": 1, "measured_iqr_s": 0, "simulated_s": 0.9, "simulated_round_mean_s": 1.0,
       "transfer_bytes": 0},
      {"kind": "split", "measured_s": 2, "measured_iqr_s": 0, "simulated_s": 1.6, "simulated_round_mean_s": 1.9,
       "transfer_bytes": 5}]})";
  const FidelityReport back = FidelityReport::from_json(old);
  EXPECT_EQ(back.calibration, "fastest_round");
  EXPECT_NE(back.to_json().find("\"simulated_round_mean_s\": 1.9"), std::string::npos) << back.to_json();
  EXPECT_EQ(back.to_json().find("simulated_fastest_round_s"), std::string::npos) << back.to_json();
  EXPECT_NE(back.to_markdown().find("The profile keeps each op's fastest round; calibrated on the rounds' mean "
                                    "instead, on the same measurements: Spearman 1, MAPE 2.5%"),
            std::string::npos)
      << back.to_markdown();
  EXPECT_EQ(back.to_markdown().find("The profile is the rounds' mean"), std::string::npos);
  std::string bad = json;
  bad.replace(bad.find("rounds_mean"), 11, "median");
  expect_rejected(bad, "calibration: expected \"rounds_mean\" or \"fastest_round\"");
}

}  // namespace
}  // namespace placer
