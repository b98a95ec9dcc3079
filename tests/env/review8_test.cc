// Review 8's findings in env: the cache's bound, the lower bound's margin, the
// fidelity report's reader, a replaced paired reference's kept samples and the
// fastest-round profile's device steps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/env/evaluator.h"
#include "placer/env/fidelity.h"
#include "placer/env/presets.h"
#include "placer/env/profile_rounds.h"
#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "remote_helpers.h"
#include "report_edits.h"

namespace placer {
namespace {

// Simulates what reaches it and counts it.
class Counting : public Evaluator {
 public:
  explicit Counting(std::shared_ptr<const Calibration> calibration) : calibration_(std::move(calibration)) {}
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override {
    std::vector<Evaluation> out;
    for (const Placement& p : placements) out.push_back(score(calibration_->simulate(p), RewardOptions{}, false));
    seen += static_cast<int>(placements.size());
    return out;
  }
  std::shared_ptr<const Calibration> calibration_;
  int seen = 0;
};

// A long search evaluates millions of placements: the cache keeps the most recently used ones within its
// capacity, still answers a recent one, and counts hits as before.
TEST(Review8, TheCacheStaysWithinItsCapacityAndKeepsTheRecentOnes) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, cluster_preset("k80x2"));
  auto counting = std::make_unique<Counting>(std::make_shared<Calibration>(problem));
  Counting& inner = *counting;
  const size_t capacity = 8 * 1024;
  CachingEvaluator cache(std::move(counting), capacity);
  const auto placements = testing::random_placements(g, 2, 400, 3);
  for (size_t i = 0; i < placements.size(); i += 4) {
    cache.evaluate({placements[i], placements[i + 1], placements[i + 2], placements[i + 3]});
    EXPECT_LE(cache.cached_bytes(), capacity);
  }
  EXPECT_GT(cache.cached_entries(), 0u);
  EXPECT_LT(cache.cached_entries(), placements.size());
  const int before = inner.seen;
  EXPECT_TRUE(cache.evaluate({placements.back()}).front().cached);  // the most recent: still there
  EXPECT_EQ(inner.seen, before);
  EXPECT_FALSE(cache.evaluate({placements.front()}).front().cached);  // the oldest: evicted, evaluated again
  EXPECT_EQ(inner.seen, before + 1);
  EvalStats s;
  cache.add_stats(s);
  EXPECT_EQ(s.evaluations, 402);
  EXPECT_EQ(s.cache_hits, 400 - inner.seen + 2);
  // A hit counts as a use: the entry looked up last outlives those stored before it.
  CachingEvaluator lru(std::make_unique<Counting>(std::make_shared<Calibration>(problem)), capacity);
  lru.evaluate({placements[0]});
  const size_t one = lru.cached_bytes();
  ASSERT_GT(one, 0u);
  const size_t fit = capacity / one;
  for (size_t i = 1; i < fit; ++i) lru.evaluate({placements[i]});
  EXPECT_TRUE(lru.evaluate({placements[0]}).front().cached);
  lru.evaluate({placements[fit], placements[fit + 1]});
  EXPECT_TRUE(lru.evaluate({placements[0]}).front().cached);
  EXPECT_FALSE(lru.evaluate({placements[1]}).front().cached);
}

// Three equal independent ops on three devices simulate at exactly the average work (and the critical path):
// the bound must stay at or below it after round-off, with the same hair of margin as the joins bound.
TEST(Review8, TheLowerBoundStaysBelowAStepThatMeetsItsAverageWork) {
  Graph g;
  for (int i = 0; i < 3; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = "aten::relu";
    op.outputs.push_back(TensorSpec{{1}, DType::Float32});
    g.add_op(std::move(op));
  }
  const Cluster c = parse_device_list("cpu:3");
  for (double seconds : {1.0, 0.1, 0.7, 1.0 / 3.0, 2.9e-5}) {
    const CostModel m = CostModel::uniform(3, 3, seconds);
    const StepResult r = simulate(g, Placement{{DeviceId(0), DeviceId(1), DeviceId(2)}}, c, m);
    ASSERT_TRUE(r.ok());
    const LowerBound lb = lower_bound_parts(g, c, m);
    EXPECT_LT(lb.value(), r.step_s) << seconds;
    EXPECT_LT(lb.average_work_s, r.step_s) << seconds;
    EXPECT_LT(lb.critical_path_s, r.step_s) << seconds;
    EXPECT_NEAR(lb.value(), r.step_s, 1e-8 * r.step_s) << seconds;
  }
}

using testing::expect_rejected;

FidelityReport two_point_report() {
  FidelityReport r;
  r.graph = "g";
  r.devices = "cpu:2";
  r.command = "placer fidelity";
  r.host = "h";
  r.ops = 3;
  r.copy_s_per_byte = 2e-10;
  r.cpu_steps = {{"cpu:0", 0.04}, {"cpu:1", 0.05}};
  for (int k = 0; k < 2; ++k) {
    FidelityPoint p;
    p.kind = k ? "split" : "single";
    p.measured_s = 1.0 + k;
    p.measured_iqr_s = 0.1;
    p.ci_low_s = 0.9 + k;
    p.ci_high_s = 1.1 + k;
    p.steps = 12;
    p.simulated_s = 1.2 + k;
    p.simulated_unfitted_s = 1.3 + k;
    p.simulated_other_calibration_s = 1.4 + k;
    p.transfer_bytes = 100 * k;
    p.rounds_s = {1.0 + k, 1.5 + k};
    r.points.push_back(p);
  }
  r.compute_statistics();
  return r;
}

// The report's reader refuses what its writer never writes, naming the field: an unknown key, an optional number
// that is not one or is out of range, rounds that are not a list, a negative spread.
TEST(Review8, TheFidelityReportRefusesWhatItsWriterNeverWrites) {
  const std::string good = two_point_report().to_json();
  EXPECT_EQ(FidelityReport::from_json(good).to_json(), good);
  auto with = [&](const std::string& from, const std::string& to) { return testing::replaced_once(good, from, to); };
  expect_rejected(with("\"ci_low_s\": 0.9", "\"ci_low_s\": \"oops\""), "points[0].ci_low_s: expected a number");
  expect_rejected(with("\"ci_high_s\": 1.1", "\"ci_high_s\": -1"), "points[0].ci_high_s: must be");
  expect_rejected(with("\"simulated_unfitted_s\": 1.3", "\"simulated_unfitted_s\": 1e30"),
                  "points[0].simulated_unfitted_s: must be");
  expect_rejected(with("\"simulated_fastest_round_s\": 1.4", "\"simulated_fastest_round_s\": null"),
                  "points[0].simulated_fastest_round_s: expected a number");
  expect_rejected(with("\"rounds_s\": [1, 1.5]", "\"rounds_s\": {\"a\": 1}"), "points[0].rounds_s: expected a list");
  expect_rejected(with("\"rounds_s\": [1, 1.5]", "\"rounds_s\": 1"), "points[0].rounds_s: expected a list");
  expect_rejected(with("\"measured_iqr_s\": 0.1", "\"measured_iqr_s\": -0.1"), "points[0].measured_iqr_s: must be");
  expect_rejected(with("\"simulated_unfitted_s\"", "\"simulated_unfited_s\""),
                  "points[0].simulated_unfited_s: unknown field");
  expect_rejected(with("\"graph\"", "\"grph\": \"x\", \"graph\""), "grph: unknown field");
  expect_rejected(with("\"copy_s_per_byte\": 2e-10", "\"copy_s_per_byte\": \"x\""),
                  "copy_s_per_byte: expected a number");
  expect_rejected(with("\"copy_s_per_byte\": 2e-10", "\"copy_s_per_byte\": -1"), "copy_s_per_byte: must be");
  expect_rejected(with("\"calibrated_fraction\": 0", "\"calibrated_fraction\": 2"), "calibrated_fraction: must be");
  expect_rejected(with("\"device\": \"cpu:0\"", "\"device\": \"cpu:0\", \"x\": 1"), "cpu_steps[0].x: unknown field");
}

// Paired, a reference that fails is replaced by the first placement that ran; when that one's samples were kept
// from an earlier run, they are in its result already: the kept samples take only the new ones.
TEST(Review8, AReplacedReferenceKeepsItsEarlierSamplesOnce) {
  const Graph g = testing::small_mlp();
  Cluster c = parse_device_list("cpu:3");
  c.devices[2].memory_bytes = 256;  // nothing fits on cpu:2
  auto problem = PreparedProblem::make(g, c);
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = 3;
  o.max_steps = 3;
  MeasuredEvaluator m(problem, RewardOptions{}, o, /*paired=*/true);
  const Placement oom{std::vector<DeviceId>(g.ops().size(), DeviceId(2))};
  const Placement ok{std::vector<DeviceId>(g.ops().size(), DeviceId(0))};
  const std::vector<StepResult> earlier = m.measure_side_by_side({ok}, false);  // 3 samples kept
  ASSERT_EQ(earlier[0].samples_s.size(), 3u);
  const auto first = m.evaluate({oom, ok});  // the reference (oom) fails: ok replaces it, from 3 kept + 1 new
  ASSERT_EQ(first[0].result.status, StepStatus::Oom) << first[0].result.message;
  ASSERT_TRUE(first[1].result.ok()) << first[1].result.message;
  const size_t now = first[1].result.samples_s.size();
  ASSERT_GT(now, 3u);
  const std::vector<StepResult> again = m.measure_side_by_side({ok}, false);
  ASSERT_TRUE(again[0].ok());
  EXPECT_EQ(again[0].samples_s.size(), now + 1);
  EXPECT_EQ(std::vector<double>(again[0].samples_s.begin(), again[0].samples_s.begin() + now),
            first[1].result.samples_s);
}

Profile round_with(double cpu0, double cpu1, double gpu_step, double gpu_scale, double gpu_overhead, double mixed,
                   double rtt) {
  Profile p;
  p.graph = "g";
  p.ops = {{"a", "sig", "cpu:0", "cpu", 1.0, 0.0}};
  p.cpu_steps = {{"cpu:0", cpu0}, {"cpu:1", cpu1}};
  p.gpu_step_s = gpu_step;
  p.gpu_op_scale = gpu_scale;
  p.gpu_op_overhead_s = gpu_overhead;
  p.mixed = {{"cpu:0", "cpu:1"}, mixed, rtt};
  return p;
}

// The fastest-round profile keeps each device's fastest step too (apply_cpu_steps rescales the fastest op times
// to them), the GPU fit of the round whose GPU step was the fastest, and the probe of the round whose mixed step it
// keeps.
TEST(Review8, TheFastestRoundKeepsTheDeviceStepsAndTheirFits) {
  Profile kept;
  merge_profile_minimum(kept, round_with(0.05, 0.04, 0.020, 0.9, 1e-6, 0.30, 2e-7), true);
  merge_profile_minimum(kept, round_with(0.03, 0.06, 0.010, 0.7, 3e-6, 0.20, 9e-7), false);
  merge_profile_minimum(kept, round_with(0.04, 0.05, 0.015, 0.8, 2e-6, 0.25, 1e-7), false);
  ASSERT_EQ(kept.cpu_steps.size(), 2u);
  EXPECT_EQ(kept.cpu_steps[0].device, "cpu:0");
  EXPECT_DOUBLE_EQ(kept.cpu_steps[0].step_s, 0.03);
  EXPECT_DOUBLE_EQ(kept.cpu_steps[1].step_s, 0.04);
  EXPECT_DOUBLE_EQ(kept.gpu_step_s, 0.010);
  EXPECT_DOUBLE_EQ(kept.gpu_op_scale, 0.7);
  EXPECT_DOUBLE_EQ(kept.gpu_op_overhead_s, 3e-6);
  EXPECT_DOUBLE_EQ(kept.mixed.step_s, 0.20);
  EXPECT_DOUBLE_EQ(kept.mixed.core_rtt_s, 9e-7);
  // A round that did not measure the GPU step (< 0) leaves the fit as it was; one that did replaces none.
  Profile none;
  merge_profile_minimum(none, round_with(0.05, 0.04, -1.0, 1.0, -1.0, -1.0, -1.0), true);
  merge_profile_minimum(none, round_with(0.05, 0.04, 0.02, 0.5, 4e-6, 0.3, -1.0), false);
  EXPECT_DOUBLE_EQ(none.gpu_step_s, 0.02);
  EXPECT_DOUBLE_EQ(none.gpu_op_scale, 0.5);
  EXPECT_DOUBLE_EQ(none.gpu_op_overhead_s, 4e-6);
  merge_profile_minimum(none, round_with(0.05, 0.04, -1.0, 1.0, -1.0, -1.0, -1.0), false);
  EXPECT_DOUBLE_EQ(none.gpu_step_s, 0.02);
  EXPECT_DOUBLE_EQ(none.gpu_op_scale, 0.5);
}

}  // namespace
}  // namespace placer
