// Statistics of measured step times: quantiles, a distribution-free
// confidence interval of the median, and a rank test between two placements'
// samples (as benchmark comparison tools do: google-benchmark's compare.py
// uses Mann-Whitney U). No assumption of normal noise: step times on a shared
// machine are skewed (a few slow steps), so every figure is rank-based.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace placer {

// The q-quantile (q in [0, 1]), linearly interpolated; 0 for no samples.
double quantile(std::vector<double> samples, double q);

// The median's confidence interval from order statistics: [x(k), x(n+1-k)]
// with the largest k whose two-sided binomial(n, 1/2) tail is <= 1 - level.
// `level` is the coverage actually reached (>= the requested one), except
// for n < 6, where no pair reaches 95%: the interval is then [min, max] and
// `level` says how much less it covers (n = 5: 0.9375).
struct MedianInterval {
  double median = 0.0;
  double low = 0.0;
  double high = 0.0;
  double level = 0.0;
  // Half the interval's width over the median (0 when the median is 0).
  double relative_halfwidth() const;
};
// The confidence every measured step's interval is asked for ("95%" in every
// table, reply and report prints this constant).
inline constexpr double kIntervalConfidence = 0.95;
std::string interval_confidence_label();  // "95%"
// An interval's level as printed: "95%" where it reaches that (an order-statistic interval covers a little
// more), else the level it does reach ("75%" for 3 steps, "0%" for one).
std::string interval_level_label(double level);
MedianInterval median_interval(const std::vector<double>& samples, double confidence = kIntervalConfidence);

// The level at which every verdict of the product calls a difference real
// (`placer measure --compare`, the trainer's final table, learned jobs' replies).
inline constexpr double kRankTestLevel = 0.05;
inline bool significant(double p_value) { return p_value >= 0 && p_value < kRankTestLevel; }

// Mann-Whitney U (Wilcoxon rank-sum), two-sided. Exact p-value (by counting
// arrangements) when both samples are small and have no ties, the normal
// approximation with tie and continuity corrections otherwise.
struct RankTest {
  double u = 0.0;        // U of sample a: the number of (a, b) pairs with a > b, ties counting 1/2
  double p_value = 1.0;  // two-sided
  bool exact = false;
  bool significant() const { return placer::significant(p_value); }
  // P(a > b) estimated as U / (n_a n_b): 0.5 = no difference, 0 = a always faster.
  double effect() const { return n_a && n_b ? u / (static_cast<double>(n_a) * n_b) : 0.5; }
  int64_t n_a = 0, n_b = 0;
};
// Throws InputError when either sample is empty.
RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

// Two placements measured side by side in one interleaved run: a[k] and b[k]
// are their steps of round k, taken one right after the other, so the drift of
// a shared machine (a slow spell, another tenant) falls on both alike and
// cancels in their ratio. Pairing by round removes it; Mann-Whitney, which
// pools each placement's steps, keeps it as noise (on the 2-core VM two 1-2%
// differences were significant in 12 of 12 runs paired, 9 of 12 pooled,
// bench/results/paired_rounds_cpu2.md).
// The ratio b[k] / a[k] of each round summarised by the Hodges-Lehmann
// estimate (the median of the Walsh averages of log(b[k] / a[k])) and its
// interval from the Wilcoxon signed-rank test of log(b[k] / a[k]) against 0,
// two-sided: exact (counting the 2^n sign arrangements) for up to 50 nonzero
// differences without ties, else the normal approximation with tie and
// continuity corrections. The interval is the test inverted, so from 6
// differing rounds on it leaves out 1 exactly when p < 0.05 where the test is
// exact (the median of the ratios with its order-statistic interval, used
// before, disagreed with the test on 70 of 495 draws of 6-50 rounds; below 6
// no pair of Walsh averages reaches 95%, the interval is [min, max]). Rounds
// with equal steps are dropped from the test (Wilcoxon's rule), so one
// placement measured once for two rows reads p = 1; the estimate and its
// interval keep them (the textbook estimate: 8 equal rounds of 10 and 2 with b
// 10.5% slower read ratio 1, not 1.105), their interval then inverting the
// test of all the rounds.
struct PairedTest {
  int64_t pairs = 0;       // rounds paired
  double ratio = 1.0;      // b / a, Hodges-Lehmann: > 1, b is slower
  double ratio_low = 1.0;  // its interval (the signed-rank test inverted)
  double ratio_high = 1.0;
  double ratio_level = 0.0;  // the coverage it reaches (>= 95% from 6 differing rounds; [min, max] below)
  double w_plus = 0.0;       // the sum of the ranks of the rounds where b was slower
  double p_value = 1.0;      // two-sided
  bool exact = false;
  bool significant() const { return placer::significant(p_value); }
};
// Throws InputError when the two have different sizes, are empty, or hold a
// step that is not positive.
PairedTest paired_rounds(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace placer
