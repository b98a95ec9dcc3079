// The evaluator pieces (env/evaluator.h, env/remote.h) on their own: each
// gives what the Environment gives, the cache counts hits and forgets stale
// simulations, and an evaluation carries its penalty and step seconds.
#include "placer/env/evaluator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/env/simulator.h"
#include "placer/graphs/error.h"
#include "remote_helpers.h"

namespace placer {
namespace {

std::vector<Placement> batch_of(const Graph& g, int count, uint64_t seed) {
  return testing::random_placements(g, 2, count, seed);
}

// Exactly `steps` measured steps per placement, no warm-up.
MeasureOptions exactly(int steps) {
  MeasureOptions o;
  o.warmup_steps = 0;
  o.measured_steps = steps;
  o.max_steps = steps;
  return o;
}

// Counts what reaches it; "measures" twice the simulated time.
class CountingEvaluator : public Evaluator {
 public:
  explicit CountingEvaluator(std::shared_ptr<const Calibration> calibration) : calibration_(std::move(calibration)) {}
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override {
    std::vector<Evaluation> out;
    for (const Placement& p : placements) {
      StepResult r = calibration_->simulate(p);
      r.step_s *= factor;
      for (auto& d : r.devices) d.busy_s *= factor;
      out.push_back(score(r, RewardOptions{}, measured));
    }
    seen += static_cast<int>(placements.size());
    return out;
  }
  int64_t generation() const override { return generation_value; }
  std::shared_ptr<const Calibration> calibration_;
  bool measured = false;
  double factor = 2;  // measured = simulated x factor
  int seen = 0;
  int64_t generation_value = 0;
};

TEST(Evaluation, CarriesPenaltyAndStepSeconds) {
  RewardOptions o;
  StepResult ok;
  ok.step_s = 4.0;
  const Evaluation a = score(ok, o, false);
  EXPECT_EQ(a.step_s, 4.0);
  EXPECT_EQ(a.penalty_s, 0.0);
  EXPECT_EQ(a.reward, -2.0);
  EXPECT_FALSE(a.measured);

  StepResult oom;
  oom.status = StepStatus::Oom;
  oom.oom_capacity_bytes = 1000;
  oom.oom_needed_bytes = 1500;  // overflows by half its capacity
  const Evaluation b = score(oom, o, true);
  EXPECT_EQ(b.penalty_s, 150.0);
  EXPECT_EQ(b.step_s, 150.0);
  EXPECT_EQ(b.reward, -std::sqrt(150.0));
  EXPECT_TRUE(b.measured);
  EXPECT_DOUBLE_EQ(b.step_s, std::pow(-b.reward, 1.0 / o.exponent));  // what the trainer used to undo

  StepResult timeout;
  timeout.status = StepStatus::Timeout;
  timeout.step_s = 3.0;  // what it ran before the timeout does not count
  EXPECT_EQ(score(timeout, o, false).step_s, 100.0);
  EXPECT_EQ(score(timeout, o, false).penalty_s, 100.0);
}

TEST(PreparedProblem, SharedByEnvironmentsThatGiveTheSameFigures) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto problem = PreparedProblem::make(g, c);
  Environment a(problem), b(problem), own(g, c);
  EXPECT_EQ(&a.graph(), &b.graph());  // one graph, not a copy per environment
  EXPECT_EQ(a.problem().get(), problem.get());
  EXPECT_EQ(a.lower_bound(), own.lower_bound());
  const auto batch = batch_of(g, 6, 3);
  const auto x = a.evaluate_batch(batch), y = own.evaluate_batch(batch);
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(x[i].result.step_s, y[i].result.step_s);
    EXPECT_EQ(x[i].reward, y[i].reward);
  }
  EnvOptions with_profile;
  with_profile.profile = Profile{};
  EXPECT_THROW(Environment(problem, with_profile), InputError);
}

TEST(SimulatedEvaluator, MatchesTheSimulatorAndTheEnvironment) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto problem = PreparedProblem::make(g, c);
  SimulatedEvaluator sim(std::make_shared<Calibration>(problem), RewardOptions{}, 3);
  Environment env(g, c);
  const auto batch = batch_of(g, 7, 11);
  const auto got = sim.evaluate(batch);
  const auto want = env.evaluate_batch(batch);
  ASSERT_EQ(got.size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(got[i].result.step_s, simulate(g, batch[i], c, CostModel::roofline(g, c)).step_s);
    EXPECT_EQ(got[i].result.step_s, want[i].result.step_s);
    EXPECT_EQ(got[i].reward, want[i].reward);
    EXPECT_EQ(got[i].step_s, got[i].result.step_s);
    EXPECT_FALSE(got[i].measured);
  }
}

TEST(MeasuredEvaluator, MeasuresEachPlacementOnce) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  MeasuredEvaluator m(problem, RewardOptions{}, exactly(1));
  const auto evals = m.evaluate(batch_of(g, 2, 5));
  ASSERT_EQ(evals.size(), 2u);
  for (const auto& e : evals) {
    EXPECT_TRUE(e.measured);
    EXPECT_TRUE(e.result.ok()) << e.result.message;
    EXPECT_EQ(e.step_s, e.result.step_s);
    EXPECT_EQ(e.result.stop, "steps");
  }
  EvalStats s;
  m.add_stats(s);
  EXPECT_EQ(s.measurements, 2);
  EXPECT_EQ(s.measured_steps, 2);
}

// A placement measured again keeps its samples: its interval narrows instead
// of starting over; a fresh side-by-side run starts from none and keeps nothing.
TEST(MeasuredEvaluator, MeasuringAgainAddsToTheSamples) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  const MeasureOptions o = exactly(3);
  MeasuredEvaluator m(problem, RewardOptions{}, o);
  const auto batch = batch_of(g, 2, 5);
  const auto first = m.evaluate(batch);
  ASSERT_EQ(first[0].result.samples_s.size(), 3u);
  // 3 kept + 1 new reach the minimum of 3 at once: one step each.
  const std::vector<StepResult> again = m.measure_side_by_side(batch, false);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].samples_s.size(), 4u);
  EXPECT_EQ(std::vector<double>(again[0].samples_s.begin(), again[0].samples_s.begin() + 3), first[0].result.samples_s);
  const std::vector<StepResult> fresh = m.measure_side_by_side(batch, true);
  EXPECT_EQ(fresh[1].samples_s.size(), 3u);
  // ...and leaves the kept ones alone: a final table's retake that is not kept
  // must not replace what training measured.
  const std::vector<StepResult> after = m.measure_side_by_side(batch, false);
  ASSERT_EQ(after[0].samples_s.size(), 5u);
  EXPECT_EQ(std::vector<double>(after[0].samples_s.begin(), after[0].samples_s.begin() + 4), again[0].samples_s);
  // A final table may take more steps than the protocol's most (no interval target: all of them).
  MeasureOptions untargeted = o;
  untargeted.target_halfwidth = 0;
  MeasuredEvaluator longer(problem, RewardOptions{}, untargeted);
  EXPECT_EQ(longer.measure_side_by_side(batch, true, 6)[0].samples_s.size(), 6u);
  EXPECT_EQ(longer.measure_side_by_side(batch, true)[0].samples_s.size(), 3u);
  // ... and may stop on a target of its own (reward.final_target), whatever the protocol's own target says: one
  // no interval meets takes every step it is given; a loose one stops on it once met, and says which ended it.
  // (Whether real steps of a small mlp meet +-99% within 12 steps depends on the machine's load: under ctest -j2
  // it missed in 10 of 25 runs. The stop is checked against the samples instead; MeasureProtocol's tests check
  // the rule itself.)
  MeasureOptions loose = o;
  loose.target_halfwidth = 0.5;
  MeasuredEvaluator targeted(problem, RewardOptions{}, loose);
  const StepResult strict = targeted.measure_side_by_side(batch, true, 12, 1e-12)[0];
  EXPECT_EQ(strict.samples_s.size(), 12u);
  EXPECT_EQ(strict.stop, "max_steps");
  const StepResult early = longer.measure_side_by_side(batch, true, 12, 0.99)[0];
  const bool met =
      early.ci_level >= kIntervalConfidence && 0.5 * (early.ci_high_s - early.ci_low_s) <= 0.99 * early.step_s;
  if (early.stop == "target") {
    // Met at some step up to the 12th; a fresh run is in lockstep, so it may have stepped on beside the other row.
    EXPECT_LE(early.samples_s.size(), 12u);
  } else {
    EXPECT_EQ(early.stop, "max_steps");
    EXPECT_EQ(early.samples_s.size(), 12u);
    EXPECT_FALSE(met);
  }
  EnvOptions eo;
  eo.measure = o;
  Environment env(g, parse_device_list("cpu:2"), eo);  // simulated rewards: measuring side by side still works
  const std::vector<StepResult> side = env.measure_side_by_side(batch);
  ASSERT_TRUE(side[0].ok() && side[1].ok());
  EXPECT_EQ(side[0].stop, "steps");
}

// Two rows that are the same placement (m_etf keeping one device, and single)
// are measured once and get one figure: on an H200 such rows measured up to 27% apart.
TEST(MeasuredEvaluator, TheSamePlacementTwiceIsMeasuredOnce) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  const MeasureOptions o = exactly(3);
  MeasuredEvaluator m(problem, RewardOptions{}, o);
  const auto two = batch_of(g, 2, 5);
  ASSERT_FALSE(two[0] == two[1]);
  const std::vector<Placement> rows = {two[0], two[1], two[0]};
  const std::vector<StepResult> rs = m.measure_side_by_side(rows, true);
  ASSERT_EQ(rs.size(), 3u);
  ASSERT_TRUE(rs[0].ok() && rs[1].ok() && rs[2].ok());
  EXPECT_EQ(rs[0].samples_s, rs[2].samples_s);
  EXPECT_EQ(rs[0].step_s, rs[2].step_s);
  EXPECT_EQ(rs[0].samples_s.size(), 3u);
  // Once, in training's counters too: 2 placements, 6 steps.
  m.evaluate(rows);
  EvalStats s;
  m.add_stats(s);
  EXPECT_EQ(s.measurements, 2);
  EXPECT_EQ(s.measured_steps, 6);
}

// A hybrid run learns what a CPU<->GPU dependency costs from its own measured
// placements: here the "measurement" is the simulator with those links 8x slower
// than the profile says (on an H200, ~60 us measured vs 11-23 us fitted). One
// step scale cannot fix that: placements with many such dependencies and
// placements with few are off by different factors; the link factor can.
TEST(Calibration, LearnsTheCpuGpuLinkCostFromMeasuredPlacements) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("cpu+k80x2");
  auto problem = PreparedProblem::make(g, c);
  CostModel truth = problem->base_costs();
  for (int32_t a = 0; a < c.size(); ++a)
    for (int32_t b = 0; b < c.size(); ++b)
      if (c.devices[a].kind != c.devices[b].kind) truth.scale_link(DeviceId(a), DeviceId(b), 8.0);
  auto real = [&](const Placement& p) { return simulate(problem->context(), p, c, truth).step_s; };
  auto base = [&](const Placement& p) { return simulate(problem->context(), p, c, problem->base_costs()).step_s; };
  // Splits at every 4th op (cpu first, then a GPU: one or two dependencies) and random placements (many).
  auto mixed = [&](uint64_t seed, int offset) {
    std::vector<Placement> ps = testing::random_placements(g, c.size(), 4, seed);
    for (int32_t k = offset; k < g.size(); k += 8) {
      Placement p = single_device(g, DeviceId(0));
      for (int32_t o = k; o < g.size(); ++o) p.device_of[o] = DeviceId(1);
      ps.push_back(p);
    }
    return ps;
  };
  Calibration cal(problem);
  std::vector<double> ratios;
  for (const Placement& p : mixed(1, 2)) {
    cal.refit(p, simulate(problem->context(), p, c, truth));
    ratios.push_back(real(p) / base(p));
  }
  std::sort(ratios.begin(), ratios.end());
  const double scale_only = ratios[ratios.size() / 2];  // what the step scale alone could do
  double with_scale = 0, calibrated = 0;
  const auto unseen = mixed(101, 6);
  for (const Placement& p : unseen) {
    with_scale += std::abs(std::log(base(p) * scale_only / real(p)));
    calibrated += std::abs(std::log(cal.simulate(p).step_s / real(p)));
  }
  EXPECT_GT(with_scale / unseen.size(), 0.05)
      << "a step scale alone must leave an error for this test to mean anything";
  EXPECT_LT(calibrated, 0.3 * with_scale)
      << "scale only " << with_scale / unseen.size() << ", calibrated " << calibrated / unseen.size();
  EXPECT_NEAR(std::log(cal.link_factor()), std::log(8.0), std::log(1.5)) << cal.link_factor();

  // CPU devices only: no such links, and the links keep the profile's fit.
  auto cpus = PreparedProblem::make(g, parse_device_list("cpu:2"));
  Calibration same(cpus);
  for (const Placement& p : batch_of(g, 4, 3))
    same.refit(p, simulate(cpus->context(), p, cpus->cluster(), cpus->base_costs()));
  EXPECT_EQ(same.costs()->link_alpha_s(DeviceId(0), DeviceId(1)),
            cpus->base_costs().link_alpha_s(DeviceId(0), DeviceId(1)));
  EXPECT_EQ(same.link_factor(), 1.0);
}

// A held model outlives the refits that replace it, and the calibration keeps
// none of the replaced ones (it kept every one: memory grew with each measurement).
TEST(Calibration, AHeldModelOutlivesItsReplacementAndNothingElseKeepsIt) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  Calibration cal(problem);
  const auto batch = batch_of(g, 3, 5);
  cal.refit(batch[0], simulate(problem->context(), batch[0], problem->cluster(), problem->base_costs()));
  std::shared_ptr<const CostModel> held = cal.costs();
  const int64_t ops = held->ops();
  cal.refit(batch[1], simulate(problem->context(), batch[1], problem->cluster(), problem->base_costs()));
  cal.refit(batch[2], simulate(problem->context(), batch[2], problem->cluster(), problem->base_costs()));
  EXPECT_NE(cal.costs().get(), held.get());
  EXPECT_EQ(held.use_count(), 1) << "the calibration still keeps a replaced model";
  EXPECT_EQ(held->ops(), ops);
}

TEST(CachingEvaluator, CountsHitsAndForgetsStaleSimulations) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, cluster_preset("k80x2"));
  auto counting = std::make_unique<CountingEvaluator>(std::make_shared<Calibration>(problem));
  CountingEvaluator& inner = *counting;
  CachingEvaluator cache(std::move(counting));
  auto batch = batch_of(g, 4, 2);
  batch.push_back(batch[0]);  // a repeat inside the batch
  auto first = cache.evaluate(batch);
  EXPECT_EQ(inner.seen, 4);
  EXPECT_TRUE(first[4].cached);
  EXPECT_EQ(first[4].reward, first[0].reward);
  for (const auto& e : cache.evaluate(batch)) EXPECT_TRUE(e.cached);
  EXPECT_EQ(inner.seen, 4);
  EvalStats s;
  cache.add_stats(s);
  EXPECT_EQ(s.evaluations, 10);
  EXPECT_EQ(s.cache_hits, 6);

  // A new generation: unmeasured entries go (on the next store), measured ones stay.
  inner.measured = true;
  const Placement fresh = batch_of(g, 1, 77).front();
  cache.evaluate({fresh});
  inner.generation_value = 1;
  inner.measured = false;
  cache.evaluate({batch_of(g, 1, 78).front()});
  EXPECT_TRUE(cache.evaluate({fresh}).front().cached);
  const int before = inner.seen;
  EXPECT_FALSE(cache.evaluate({batch[1]}).front().cached);
  EXPECT_EQ(inner.seen, before + 1);
}

TEST(CachingEvaluator, CachesNothingWhenTheInnerEvaluatorThrows) {
  class Failing : public Evaluator {
   public:
    std::vector<Evaluation> evaluate(const std::vector<Placement>&) override { throw InputError("no"); }
  };
  const Graph g = testing::small_mlp();
  CachingEvaluator cache(std::make_unique<Failing>());
  EXPECT_THROW(cache.evaluate(batch_of(g, 2, 1)), InputError);
  EvalStats s;
  cache.add_stats(s);
  EXPECT_EQ(s.evaluations, 2);
  EXPECT_EQ(s.cache_hits, 0);
}

TEST(HybridEvaluator, MeasuresTheBestRefitsAndSimulatesTheRestAgain) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto problem = PreparedProblem::make(g, c);
  auto calibration = std::make_shared<Calibration>(problem);
  auto measurer = std::make_unique<CountingEvaluator>(std::make_shared<Calibration>(problem));
  measurer->measured = true;
  CountingEvaluator& m = *measurer;
  HybridEvaluator hybrid(calibration, std::move(measurer), RewardOptions{}, 2, 2);
  const auto batch = batch_of(g, 6, 9);
  const auto evals = hybrid.evaluate(batch);
  EXPECT_EQ(m.seen, 2);  // the best two of the first batch
  EXPECT_EQ(hybrid.generation(), 2);
  EXPECT_EQ(calibration->refits(), 2);
  EXPECT_GT(calibration->step_scale(), 0.0);
  const CostModel base = CostModel::roofline(g, c);
  int measured = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const double sim = simulate(g, batch[i], c, base).step_s;
    if (evals[i].measured) {
      ++measured;
      EXPECT_DOUBLE_EQ(evals[i].result.step_s, 2 * sim);
    } else {
      EXPECT_EQ(evals[i].result.step_s, calibration->simulate(batch[i]).step_s);  // simulated again with the refit
      EXPECT_NE(evals[i].result.step_s, sim);
    }
  }
  EXPECT_EQ(measured, 2);
  EvalStats s;
  hybrid.add_stats(s);
  EXPECT_EQ(s.calibrations, 2);
}

// A hybrid batch that recalibrates the simulator scores every row on the new model: a row the cache answered
// from the model before would mix two step scales in one policy-gradient batch.
TEST(CachingEvaluator, ARecalibrationInTheBatchScoresItsCachedRowsAgain) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, cluster_preset("k80x2"));
  auto calibration = std::make_shared<Calibration>(problem);
  auto measurer = std::make_unique<CountingEvaluator>(std::make_shared<Calibration>(problem));
  measurer->measured = true;
  CountingEvaluator& m = *measurer;
  CachingEvaluator cache(std::make_unique<HybridEvaluator>(calibration, std::move(measurer), RewardOptions{}, 1, 1));
  const auto placements = batch_of(g, 4, 21);
  const auto first = cache.evaluate({placements[0], placements[1]});
  ASSERT_NE(first[0].measured, first[1].measured);
  const Placement simulated = first[0].measured ? placements[1] : placements[0];
  m.factor = 5;  // the next measurement disagrees: the refit moves the model
  const int64_t before = calibration->refits();
  const auto second = cache.evaluate({simulated, placements[2], placements[3]});
  ASSERT_GT(calibration->refits(), before);
  if (!second[0].measured) {
    EXPECT_EQ(second[0].result.step_s, calibration->simulate(simulated).step_s);
  }
  EXPECT_FALSE(second[0].cached);
  // ... and what the cache keeps of it is the new figure.
  const auto third = cache.evaluate({simulated});
  EXPECT_TRUE(third[0].cached);
  EXPECT_EQ(third[0].result.step_s, second[0].result.step_s);
}

// A fake RemoteEvaluator that simulates locally, as a worker would.
class LocalRemote : public RemoteEvaluator {
 public:
  struct Held : RemoteProblem {
    std::unique_ptr<Environment> env;
    RewardMode mode;
  };
  std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                               const RemoteSettings& settings) override {
    ++prepared;
    auto h = std::make_shared<Held>();
    h->env = std::make_unique<Environment>(graph, cluster);
    h->mode = settings.mode;
    return h;
  }
  std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) override {
    const auto& h = dynamic_cast<const Held&>(problem);
    std::vector<StepResult> out;
    for (const Placement& p : placements) out.push_back(h.env->simulate(p));
    return out;
  }
  int prepared = 0;
};

TEST(DistributedEvaluator, GivesTheLocalFiguresAndCountsRemoteWork) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto problem = PreparedProblem::make(g, c);
  auto remote = std::make_shared<LocalRemote>();
  RemoteSettings settings;
  settings.mode = RewardMode::Measured;
  DistributedEvaluator far(problem, remote, settings, RewardOptions{});
  SimulatedEvaluator here(std::make_shared<Calibration>(problem), RewardOptions{}, 1);
  const auto batch = batch_of(g, 5, 4);
  const auto a = far.evaluate(batch), b = here.evaluate(batch);
  far.evaluate(batch);
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(a[i].result.step_s, b[i].result.step_s);
    EXPECT_EQ(a[i].reward, b[i].reward);
    EXPECT_TRUE(a[i].measured);  // measured mode
  }
  EXPECT_EQ(remote->prepared, 1);
  EvalStats s;
  far.add_stats(s);
  EXPECT_EQ(s.remote, 10);
  EXPECT_EQ(s.measurements, 10);
}

// Paired: the first placement evaluated is the reference; a placement's step is
// the reference's first median times the Hodges-Lehmann estimate of its
// per-round ratios to it (with the signed-rank interval, as `placer measure
// --compare` reports the same rounds), and every later batch measures the
// reference beside it (one placement more).
TEST(MeasuredEvaluator, PairedStepsAreTheReferenceLevelTimesTheRoundRatio) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  MeasuredEvaluator m(problem, RewardOptions{}, exactly(7), /*paired=*/true);
  const auto three = batch_of(g, 3, 11);
  const auto first = m.evaluate({three[0], three[1]});
  ASSERT_TRUE(first[0].result.ok() && first[1].result.ok());
  const std::vector<double>& ref = first[0].result.samples_s;
  const std::vector<double>& b = first[1].result.samples_s;
  ASSERT_EQ(ref.size(), 7u);
  ASSERT_EQ(b.size(), 7u);
  const double level = quantile(ref, 0.5);
  EXPECT_DOUBLE_EQ(first[0].step_s, level);  // the reference: every ratio 1
  const PairedTest r = paired_rounds(ref, b);
  EXPECT_NEAR(first[1].step_s, level * r.ratio, 1e-12 * level);
  EXPECT_NEAR(first[1].result.ci_low_s, level * r.ratio_low, 1e-12 * level);
  EXPECT_NEAR(first[1].result.ci_high_s, level * r.ratio_high, 1e-12 * level);
  EXPECT_DOUBLE_EQ(first[1].result.ci_level, r.ratio_level);
  EXPECT_DOUBLE_EQ(first[1].reward, reward_of(first[1].result, RewardOptions{}));
  // A later batch without the reference measures it beside: 2 measurements for one placement.
  const auto later = m.evaluate({three[2]});
  ASSERT_EQ(later.size(), 1u);
  ASSERT_TRUE(later[0].result.ok());
  EXPECT_EQ(later[0].result.samples_s.size(), 7u);
  EXPECT_LE(later[0].result.ci_low_s, later[0].step_s);
  EXPECT_LE(later[0].step_s, later[0].result.ci_high_s);
  EvalStats s;
  m.add_stats(s);
  EXPECT_EQ(s.measurements, 4);
  EXPECT_EQ(s.measured_steps, 28);
  // The side-by-side runs of a final table are not paired: raw medians.
  const std::vector<StepResult> side = m.measure_side_by_side({three[1], three[2]}, true);
  EXPECT_DOUBLE_EQ(side[0].step_s, quantile(side[0].samples_s, 0.5));
  // Pairing needs the measurements here: with remote workers it is refused, by name.
  EnvOptions eo;
  eo.mode = RewardMode::Measured;
  eo.paired = true;
  eo.remote = std::make_shared<LocalRemote>();
  try {
    Environment env(g, parse_device_list("cpu:2"), eo);
    ADD_FAILURE() << "paired with remote workers accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("reward.paired"), std::string::npos) << e.what();
  }
}

// A reference that fails its first measurement pairs nothing: the first placement that ran takes its place, and
// later batches measure that one beside theirs (its kept samples grow by a run each time).
TEST(MeasuredEvaluator, AReferenceThatFailsIsReplacedByOneThatRan) {
  const Graph g = testing::small_mlp();
  Cluster c = parse_device_list("cpu:3");
  c.devices[2].memory_bytes = 256;  // nothing fits on cpu:2
  auto problem = PreparedProblem::make(g, c);
  MeasuredEvaluator m(problem, RewardOptions{}, exactly(5), /*paired=*/true);
  const Placement oom{std::vector<DeviceId>(g.ops().size(), DeviceId(2))};
  const Placement ok{std::vector<DeviceId>(g.ops().size(), DeviceId(0))};
  const auto first = m.evaluate({oom, ok});
  ASSERT_EQ(first[0].result.status, StepStatus::Oom) << first[0].result.message;
  ASSERT_TRUE(first[1].result.ok()) << first[1].result.message;
  EXPECT_DOUBLE_EQ(first[1].step_s, quantile(first[1].result.samples_s, 0.5));  // the reference: every ratio 1
  const Placement other = batch_of(g, 1, 3).front();  // on cpu:0 and cpu:1
  const auto later = m.evaluate({other});
  ASSERT_TRUE(later[0].result.ok()) << later[0].result.message;
  // The reference stepped beside it: 5 kept + 5 beside + 1 now (it has its minimum already).
  const std::vector<StepResult> again = m.measure_side_by_side({ok}, false);
  EXPECT_EQ(again[0].samples_s.size(), 11u);
}

// The executor stops at the first allocation past capacity: a measured out-of-memory's overflow is the
// simulator's, so that it ranks with a simulated one (more overflow, more penalty), not as a bare failure.
TEST(MeasuredEvaluator, OutOfMemoryIsPenalisedByTheSimulatedOverflow) {
  const Graph g = testing::small_mlp();
  Cluster c = parse_device_list("cpu:2");
  c.devices[1].memory_bytes = 256;
  auto problem = PreparedProblem::make(g, c);
  MeasuredEvaluator m(problem, RewardOptions{}, exactly(1));
  const Placement oom{std::vector<DeviceId>(g.ops().size(), DeviceId(1))};
  const Evaluation measured = m.evaluate({oom})[0];
  const Evaluation simulated = SimulatedEvaluator(std::make_shared<Calibration>(problem), RewardOptions{}, 1)
                                   .evaluate({oom})[0];
  ASSERT_EQ(measured.result.status, StepStatus::Oom) << measured.result.message;
  ASSERT_EQ(simulated.result.status, StepStatus::Oom);
  EXPECT_GT(simulated.penalty_s, RewardOptions{}.failure_penalty_s + 1.0);  // far over: more than a bare failure
  EXPECT_DOUBLE_EQ(measured.penalty_s, simulated.penalty_s);
}

// Training's counters count training's runs: a final table measured side by side is not training.
TEST(MeasuredEvaluator, SideBySideRunsAreNotCountedAsTraining) {
  const Graph g = testing::small_mlp();
  auto problem = PreparedProblem::make(g, parse_device_list("cpu:2"));
  MeasuredEvaluator m(problem, RewardOptions{}, exactly(2));
  const auto batch = batch_of(g, 3, 8);
  m.evaluate({batch[0], batch[1]});
  m.measure_side_by_side(batch, true);
  m.measure_side_by_side(batch, false);
  EvalStats s;
  m.add_stats(s);
  EXPECT_EQ(s.measurements, 2);
  EXPECT_EQ(s.measured_steps, 4);
}

}  // namespace
}  // namespace placer
