#include "placer/graphs/stats.h"
#include "placer/graphs/measurement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "placer/graphs/error.h"

namespace placer {
namespace {

TEST(Stats, QuantileInterpolates) {
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 1.0), 4.0);
}

// Order statistics by hand: n = 10, P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024,
// so the 95% interval is [x(2), x(9)] and covers 1 - 22/1024.
TEST(Stats, MedianIntervalFromOrderStatistics) {
  const MedianInterval m = median_interval({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(m.median, 5.5);
  EXPECT_DOUBLE_EQ(m.low, 2.0);
  EXPECT_DOUBLE_EQ(m.high, 9.0);
  EXPECT_NEAR(m.level, 1.0 - 22.0 / 1024, 1e-12);
  EXPECT_NEAR(m.relative_halfwidth(), 3.5 / 5.5, 1e-12);
  // n = 6: [min, max] covers 1 - 2/64 >= 95%.
  const MedianInterval six = median_interval({1, 2, 3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(six.low, 1.0);
  EXPECT_DOUBLE_EQ(six.high, 6.0);
  EXPECT_NEAR(six.level, 1.0 - 2.0 / 64, 1e-12);
  // n = 5: nothing reaches 95%; [min, max] says it covers 93.75%.
  const MedianInterval five = median_interval({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(five.low, 1.0);
  EXPECT_DOUBLE_EQ(five.high, 5.0);
  EXPECT_NEAR(five.level, 0.9375, 1e-12);
  EXPECT_DOUBLE_EQ(median_interval({}).median, 0.0);
}

// The interval's promise, checked: over 2,000 skewed (lognormal) samples of 15
// whose true median is 1, the 95% interval covers it about 96.5% of the time
// (its exact level for n = 15); a wrong order statistic misses this band.
TEST(Stats, MedianIntervalCoversTheTrueMedian) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(0.0, 0.3);
  int covered = 0;
  const int trials = 2000;
  double level = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> s(15);
    for (double& x : s) x = dist(rng);
    const MedianInterval m = median_interval(s);
    level = m.level;
    covered += m.low <= 1.0 && 1.0 <= m.high;
  }
  EXPECT_NEAR(level, 0.9648, 1e-3);
  EXPECT_GT(covered, 0.945 * trials);
  EXPECT_LT(covered, 0.985 * trials);
}

TEST(Stats, MannWhitneyExactByHand) {
  // All of a below all of b: U = 0; 2 of the C(6,3) = 20 arrangements are that extreme.
  RankTest t = mann_whitney({1, 2, 3}, {4, 5, 6});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 0.0);
  EXPECT_NEAR(t.p_value, 2.0 / 20, 1e-12);
  EXPECT_DOUBLE_EQ(t.effect(), 0.0);
  // 5 vs 5, separated: p = 2 / C(10,5) = 2/252.
  t = mann_whitney({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(t.u, 25.0);
  EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(t.effect(), 1.0);
  // Interleaved: no evidence.
  t = mann_whitney({1, 3, 5, 7}, {2, 4, 6, 8});
  EXPECT_GT(t.p_value, 0.5);
  EXPECT_THROW(mann_whitney({}, {1.0}), InputError);
}

// One level for every verdict: 5 vs 5 separated (p = 2/252) is a difference, interleaved is not;
// an untested row (p = -1) is never called one.
TEST(Stats, RankTestVerdictAtTheProductsLevel) {
  EXPECT_TRUE(mann_whitney({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}).significant());
  EXPECT_FALSE(mann_whitney({1, 3, 5, 7}, {2, 4, 6, 8}).significant());
  EXPECT_FALSE(mann_whitney({1, 2, 3}, {4, 5, 6}).significant());  // p = 0.1: too few steps to tell
  EXPECT_TRUE(significant(0.049));
  EXPECT_FALSE(significant(kRankTestLevel));
  EXPECT_FALSE(significant(-1.0));
}

// Every printed interval says its level from the constant the intervals are computed at.
TEST(Stats, TheIntervalsLevelIsPrintedFromItsConstant) {
  EXPECT_EQ(interval_confidence_label(), "95%");
  std::vector<double> samples;
  for (int i = 1; i <= 40; ++i) samples.push_back(i);
  EXPECT_GE(median_interval(samples).level, kIntervalConfidence);
}

TEST(Stats, MannWhitneyWithTiesUsesTheNormalApproximation) {
  const RankTest t = mann_whitney({1, 1, 2, 2, 3}, {2, 3, 3, 4, 4});
  EXPECT_FALSE(t.exact);
  EXPECT_GT(t.p_value, 0.0);
  EXPECT_LT(t.p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney({2, 2, 2}, {2, 2}).p_value, 1.0);
}

// Samples whose answer is known: a 5% slower placement under 2% noise is
// found (p < 0.01) with 20 steps each; two draws of one distribution are
// called different at the 5% level about 5% of the time, not more.
TEST(Stats, MannWhitneyFindsAKnownShiftAndRarelyAFalseOne) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.02);
  auto draw = [&](double median, int n) {
    std::vector<double> v(n);
    for (double& x : v) x = median * std::exp(noise(rng));
    return v;
  };
  int found = 0, false_alarms = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    found += mann_whitney(draw(0.100, 20), draw(0.105, 20)).p_value < 0.01;
    false_alarms += mann_whitney(draw(0.100, 20), draw(0.100, 20)).p_value < 0.05;
  }
  EXPECT_GT(found, 0.9 * trials);
  EXPECT_LT(false_alarms, 0.08 * trials);
  EXPECT_GT(false_alarms, 0.01 * trials);
}

// Wilcoxon signed-rank by hand: b slower in every one of 6 rounds: W+ = 21, the most
// extreme of the 2^6 = 64 sign arrangements on each side: p = 2/64.
TEST(Stats, PairedRoundsExactByHand) {
  PairedTest t = paired_rounds({1, 1, 1, 1, 1, 1}, {1.01, 1.02, 1.03, 1.04, 1.05, 1.06});
  EXPECT_TRUE(t.exact);
  EXPECT_EQ(t.pairs, 6);
  EXPECT_DOUBLE_EQ(t.w_plus, 21.0);
  EXPECT_NEAR(t.p_value, 2.0 / 64, 1e-12);
  EXPECT_TRUE(t.significant());
  // Hodges-Lehmann: the 11th of the 21 Walsh averages of the log ratios, (log 1.02 + log 1.05) / 2.
  EXPECT_NEAR(t.ratio, std::sqrt(1.02 * 1.05), 1e-12);
  EXPECT_NEAR(t.ratio_low, 1.01, 1e-12);  // n = 6: P(W+ <= 0) = 1/64 <= 2.5%, P(W+ <= 1) = 2/64 is not: k = 1
  EXPECT_NEAR(t.ratio_high, 1.06, 1e-12);
  EXPECT_NEAR(t.ratio_level, 1 - 2.0 / 64, 1e-12);
  // One round the other way, the smallest: W+ = 20; arrangements with W+ >= 20: 2 of 64.
  t = paired_rounds({1, 1, 1, 1, 1, 1}, {0.99, 1.02, 1.03, 1.04, 1.05, 1.06});
  EXPECT_DOUBLE_EQ(t.w_plus, 20.0);
  EXPECT_NEAR(t.p_value, 2.0 * 2 / 64, 1e-12);
  // Rounds with equal steps drop out: one placement measured once for two rows is no evidence.
  t = paired_rounds({1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(t.p_value, 1.0);
  EXPECT_DOUBLE_EQ(t.ratio, 1.0);
  EXPECT_THROW(paired_rounds({1, 2}, {1}), InputError);
  EXPECT_THROW(paired_rounds({}, {}), InputError);
  EXPECT_THROW(paired_rounds({1, 0}, {1, 1}), InputError);
}

// Rounds with equal steps drop out of the test only (Wilcoxon's rule), not out of the estimate: 8 of 10 rounds
// equal and 2 with b 10.5% slower are 36 + 16 + 3 Walsh averages, 36 of them 0, so the median is 0 (ratio 1);
// dropping the zeros read +10.5% with the interval [+10.5%, +10.5%]. Tie-corrected normal null over all 10:
// var = 96.25 - (8^3 - 8 + 2^3 - 2) / 48 = 85.625, k = 9: the 9th smallest (0) to the 9th largest (log 1.105 / 2).
TEST(Stats, PairedRoundsEstimateKeepsTheEqualRounds) {
  const std::vector<double> a(10, 1.0);
  std::vector<double> b(10, 1.0);
  b[3] = b[7] = 1.105;
  const PairedTest t = paired_rounds(a, b);
  EXPECT_DOUBLE_EQ(t.ratio, 1.0);
  EXPECT_DOUBLE_EQ(t.ratio_low, 1.0);
  EXPECT_NEAR(t.ratio_high, std::sqrt(1.105), 1e-12);
  EXPECT_GE(t.ratio_level, 0.95);
  EXPECT_DOUBLE_EQ(t.w_plus, 3.0);  // the test: the 2 rounds that differ, ranks 1.5 + 1.5
  EXPECT_FALSE(t.significant());
  EXPECT_EQ(t.pairs, 10);
}

// Hodges-Lehmann by hand: log ratios -0.01, 0.02, 0.03 have the Walsh averages -0.01, 0.005, 0.01, 0.02, 0.025,
// 0.03, whose median is 0.015 (the median ratio would say 0.02). Three rounds reach no 95% interval: [min, max],
// covering 1 - 2/8.
TEST(Stats, PairedRoundsRatioIsHodgesLehmann) {
  const PairedTest t = paired_rounds({1, 1, 1}, {std::exp(-0.01), std::exp(0.02), std::exp(0.03)});
  EXPECT_NEAR(t.ratio, std::exp(0.015), 1e-12);
  EXPECT_NEAR(t.ratio_low, std::exp(-0.01), 1e-12);
  EXPECT_NEAR(t.ratio_high, std::exp(0.03), 1e-12);
  EXPECT_NEAR(t.ratio_level, 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(t.w_plus, 5.0);
}

// The interval is the test inverted: it leaves out 1 exactly when the test calls the difference real, for every
// draw where the test is exact (the median of the ratios with its order-statistic interval disagreed with the
// test on some of these), and nearly always under the normal approximation.
TEST(Stats, PairedRoundsIntervalAgreesWithTheTest) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.01);
  int exact = 0, exact_agree = 0, approx = 0, approx_agree = 0, significant_seen = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int n = 6 + trial % 55;
    const double shift = 0.002 * (trial % 7);  // 0 to 1.2%, about the noise of one round
    std::vector<double> a(n), b(n);
    for (int k = 0; k < n; ++k) {
      a[k] = 0.1 * std::exp(noise(rng));
      b[k] = 0.1 * std::exp(shift + noise(rng));
    }
    const PairedTest t = paired_rounds(a, b);
    // Against the Walsh averages listed: the median is theirs, the bounds are two of them.
    std::vector<double> walsh;
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j) walsh.push_back(0.5 * (std::log(b[i] / a[i]) + std::log(b[j] / a[j])));
    std::sort(walsh.begin(), walsh.end());
    EXPECT_NEAR(std::log(t.ratio), quantile(walsh, 0.5), 1e-12);
    for (const double bound : {t.ratio_low, t.ratio_high})
      EXPECT_TRUE(
          std::any_of(walsh.begin(), walsh.end(), [&](double w) { return std::abs(w - std::log(bound)) < 1e-12; }));
    const bool excludes = t.ratio_low > 1.0 || t.ratio_high < 1.0;
    EXPECT_LE(t.ratio_low, t.ratio);
    EXPECT_LE(t.ratio, t.ratio_high);
    EXPECT_GE(t.ratio_level, 0.95);
    significant_seen += t.significant();
    if (t.exact) {
      ++exact;
      exact_agree += excludes == t.significant();
      EXPECT_EQ(excludes, t.significant())
          << "n " << n << ", p " << t.p_value << ", [" << t.ratio_low << ", " << t.ratio_high << "]";
    } else {
      ++approx;
      approx_agree += excludes == t.significant();
    }
  }
  EXPECT_GT(exact, 200);
  EXPECT_GT(approx, 50);
  EXPECT_EQ(exact_agree, exact);
  EXPECT_GE(approx_agree, approx - approx / 50);
  EXPECT_GT(significant_seen, 100);  // the draws test both sides of the line
  EXPECT_LT(significant_seen, 500);
}

// Many rounds (a long `placer measure --compare`): the Walsh averages are never listed (200,000 rounds would be
// 2e10 of them), so this runs in O(rounds) memory, and the estimate finds the 1% shift.
TEST(Stats, PairedRoundsScaleToManyRounds) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0.0, 0.01);
  const int n = 200000;
  std::vector<double> a(n), b(n);
  for (int k = 0; k < n; ++k) {
    a[k] = 0.1 * std::exp(noise(rng));
    b[k] = 0.1 * std::exp(0.01 + noise(rng));
  }
  const PairedTest t = paired_rounds(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_NEAR(t.ratio, std::exp(0.01), 2e-4);
  EXPECT_LT(t.ratio_low, t.ratio);
  EXPECT_GT(t.ratio_high, t.ratio);
  EXPECT_GT(t.ratio_low, std::exp(0.009));
  EXPECT_LT(t.ratio_high, std::exp(0.011));
  EXPECT_TRUE(t.significant());
}

// The case it is for: a shared machine's drift moves both placements of a round
// alike (here +-15% from round to round), the placements differ by 1% with 0.5%
// noise of their own. Pooled, Mann-Whitney rarely sees the 1% in 40 rounds;
// paired by round, the signed-rank test nearly always does. Two draws of one
// placement are called different about 5% of the time, not more.
TEST(Stats, PairedRoundsFindAShiftUnderSharedDriftThatPoolingMisses) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> own(0.0, 0.005), drift(0.0, 0.15);
  const int trials = 300, n = 40;
  int paired_found = 0, pooled_found = 0, false_alarms = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a(n), b(n), c(n);
    for (int k = 0; k < n; ++k) {
      const double machine = std::exp(drift(rng));
      a[k] = 0.100 * machine * std::exp(own(rng));
      b[k] = 0.101 * machine * std::exp(own(rng));
      c[k] = 0.100 * machine * std::exp(own(rng));
    }
    paired_found += paired_rounds(a, b).p_value < 0.05;
    pooled_found += mann_whitney(a, b).p_value < 0.05;
    false_alarms += paired_rounds(a, c).p_value < 0.05;
  }
  EXPECT_GT(paired_found, 0.9 * trials);
  EXPECT_LT(pooled_found, 0.2 * trials);
  EXPECT_LT(false_alarms, 0.09 * trials);
  EXPECT_GT(false_alarms, 0.01 * trials);
}

// Results of one side-by-side run pair by the rounds both took: the samples after
// the prior ones, as many as the one that stopped first has.
TEST(Stats, StepResultsPairByTheirSharedRounds) {
  StepResult a, b;
  a.samples_s = {9.0, 9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};  // 2 given beforehand, then 7 rounds
  a.prior_samples = 2;
  b.samples_s = {1.1, 1.1, 1.1, 1.1, 1.1, 1.1};  // stopped after 6 rounds
  std::optional<PairedTest> t = paired_by_round(a, b);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pairs, 6);
  EXPECT_NEAR(t->ratio, 1.1, 1e-12);
  b.samples_s.pop_back();  // 5 rounds: too few to pair
  EXPECT_FALSE(paired_by_round(a, b).has_value());
  b.samples_s.push_back(1.1);
  b.status = StepStatus::Oom;
  EXPECT_FALSE(paired_by_round(a, b).has_value());
}

}  // namespace
}  // namespace placer
