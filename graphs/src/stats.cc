// Rank statistics of measured step times: quantiles, the median's order-statistic
// interval, the Mann-Whitney U test and the Wilcoxon signed-rank test of paired rounds.
#include "placer/graphs/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "placer/graphs/error.h"

namespace placer {

std::string interval_confidence_label() {
  char b[16];
  std::snprintf(b, sizeof b, "%g%%", 100 * kIntervalConfidence);
  return b;
}

std::string interval_level_label(double level) {
  if (level >= kIntervalConfidence) return interval_confidence_label();
  char b[32];
  std::snprintf(b, sizeof b, "%.3g%%", 100 * level);
  return b;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double MedianInterval::relative_halfwidth() const { return median > 0 ? 0.5 * (high - low) / median : 0.0; }

namespace {

// P(Binomial(n, 1/2) <= k), summed in log space so large n cannot overflow.
double binomial_half_cdf(int64_t n, int64_t k) {
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  double sum = 0.0;
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  for (int64_t i = 0; i <= k; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + log_half_n);
  return std::min(1.0, sum);
}

// Number of arrangements of m a's and n b's with U = u, for every u, by the
// recurrence c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u).
std::vector<double> u_counts(int m, int n) {
  // prev[j][u]: counts for (i-1, j); cur[j][u] for (i, j).
  const int umax = m * n;
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(umax + 1, 0.0));
  for (int j = 0; j <= n; ++j) prev[j][0] = 1.0;  // i = 0: one arrangement, U = 0
  for (int i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> cur(n + 1, std::vector<double>(umax + 1, 0.0));
    cur[0][0] = 1.0;
    for (int j = 1; j <= n; ++j)
      for (int u = 0; u <= i * j; ++u) cur[j][u] = (u >= j ? prev[j][u - j] : 0.0) + cur[j - 1][u];
    prev = std::move(cur);
  }
  return prev[n];
}

// Number of sign arrangements of ranks 1..n whose positive ranks sum to w, for
// every w in [0, n(n+1)/2]: the subset sums of {1, ..., n}.
std::vector<double> signed_rank_counts(int n) {
  std::vector<double> c(static_cast<size_t>(n) * (n + 1) / 2 + 1, 0.0);
  c[0] = 1.0;
  for (int r = 1; r <= n; ++r)
    for (int w = static_cast<int>(c.size()) - 1; w >= r; --w) c[w] += c[w - r];
  return c;
}

// Two-sided p of an integer statistic from its exact null counts: twice the
// smaller tail at the observed value.
double exact_two_sided_p(const std::vector<double>& counts, double observed) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const size_t at = static_cast<size_t>(std::lround(observed));
  double low = 0.0, high = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i <= at) low += counts[i];
    if (i >= at) high += counts[i];
  }
  return std::min(1.0, 2.0 * std::min(low, high) / total);
}

// Two-sided p of a statistic `diff` off its null mean, with null variance
// `var` (> 0), by the normal approximation with a continuity correction.
double normal_two_sided_p(double diff, double var) {
  const double z = std::max(0.0, std::abs(diff) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

// The k-th smallest (1-based, 1 <= k <= n(n+1)/2) of the Walsh averages (d[i] + d[j]) / 2, i <= j, of `sorted`
// (ascending), without listing the n(n+1)/2 of them: bisection on the value, counting the averages at or below
// it in O(n) (two pointers), then the largest average at or below the bound found, so that the answer is one of
// them. O(n) memory at any number of rounds.
double kth_walsh_average(const std::vector<double>& sorted, int64_t k) {
  const int64_t n = static_cast<int64_t>(sorted.size());
  // Calls visit(i, j) for each i with the largest j >= i where sorted[i] + sorted[j] <= 2x; returns how many pairs.
  auto at_or_below = [&](double x, auto&& visit) {
    int64_t count = 0;
    for (int64_t i = 0, j = n - 1; i < n; ++i) {
      while (j >= i && sorted[i] + sorted[j] > 2 * x) --j;
      if (j < i) break;
      count += j - i + 1;
      visit(i, j);
    }
    return count;
  };
  auto none = [](int64_t, int64_t) {};
  double lo = sorted.front() - 1.0, hi = sorted.back();  // fewer than k at or below lo; all at or below hi
  for (int step = 0; step < 200; ++step) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (at_or_below(mid, none) >= k ? hi : lo) = mid;
  }
  double best = sorted.front();
  at_or_below(hi, [&](int64_t i, int64_t j) { best = std::max(best, 0.5 * (sorted[i] + sorted[j])); });
  return best;
}

}  // namespace

MedianInterval median_interval(const std::vector<double>& samples, double confidence) {
  MedianInterval out;
  if (samples.empty()) return out;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  const int64_t n = static_cast<int64_t>(v.size());
  out.median = quantile(v, 0.5);
  const double alpha = 1.0 - std::clamp(confidence, 0.5, 0.9999);
  // Largest k (1-based) with P(B <= k-1) <= alpha/2: [x(k), x(n+1-k)] covers >= 1 - alpha. The sum runs
  // once, term by term as binomial_half_cdf adds them (summing afresh for each k took 0.6 s at n = 10,000,
  // after every step of a long measurement).
  int64_t k = 0;
  const double log_half_n = static_cast<double>(n) * std::log(0.5), log_n_factorial = std::lgamma(n + 1.0);
  double cdf = 0.0;  // P(B <= c - 1)
  for (int64_t c = 1; c <= (n + 1) / 2; ++c) {
    const double i = static_cast<double>(c - 1);
    cdf +=
        std::exp(log_n_factorial - std::lgamma(i + 1.0) - std::lgamma(static_cast<double>(n) - i + 1.0) + log_half_n);
    if (std::min(1.0, cdf) <= alpha / 2)
      k = c;
    else
      break;
  }
  if (k == 0) {
    out.low = v.front();
    out.high = v.back();
    out.level = 1.0 - 2.0 * std::pow(0.5, static_cast<double>(n));
    return out;
  }
  out.low = v[k - 1];
  out.high = v[n - k];
  out.level = 1.0 - 2.0 * binomial_half_cdf(n, k - 1);
  return out;
}

RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw InputError("rank test: both samples need at least one value");
  RankTest t;
  t.n_a = static_cast<int64_t>(a.size());
  t.n_b = static_cast<int64_t>(b.size());
  // Pooled ranks, ties averaged.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.push_back({x, 0});
  for (double x : b) pooled.push_back({x, 1});
  std::sort(pooled.begin(), pooled.end());
  const double n = static_cast<double>(pooled.size());
  double rank_a = 0.0, tie_term = 0.0;
  bool ties = false;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double avg = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    const double count = static_cast<double>(j - i);
    if (count > 1) {
      ties = true;
      tie_term += count * count * count - count;
    }
    for (size_t q = i; q < j; ++q)
      if (pooled[q].second == 0) rank_a += avg;
    i = j;
  }
  const double na = static_cast<double>(t.n_a), nb = static_cast<double>(t.n_b);
  t.u = rank_a - na * (na + 1) / 2;
  const double mean = na * nb / 2;
  if (!ties && t.n_a <= 30 && t.n_b <= 30) {
    // U is an integer here (no ties).
    t.p_value = exact_two_sided_p(u_counts(static_cast<int>(t.n_a), static_cast<int>(t.n_b)), t.u);
    t.exact = true;
    return t;
  }
  const double var = na * nb / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return t;  // every value equal: no evidence of a difference
  t.p_value = normal_two_sided_p(t.u - mean, var);
  return t;
}

namespace {

// The Wilcoxon signed-rank statistic W+ of the differences `d` (ranks of |d|, ties averaged) and its null
// distribution: exact (the 2^n sign arrangements) for up to 50 differences without ties, else normal with tie
// and continuity corrections.
struct SignedRanks {
  int64_t n = 0;
  double w_plus = 0.0, mean = 0.0, var = 0.0, p_value = 1.0;  // p: two-sided
  bool exact = false;
  std::vector<double> below;  // exact: below[w] = P(W+ <= w)

  explicit SignedRanks(const std::vector<double>& d) : n(static_cast<int64_t>(d.size())) {
    std::vector<size_t> order(d.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return std::abs(d[x]) < std::abs(d[y]); });
    double tie_term = 0.0;
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      while (j < order.size() && std::abs(d[order[j]]) == std::abs(d[order[i]])) ++j;
      const double count = static_cast<double>(j - i);
      tie_term += count * count * count - count;
      for (size_t q = i; q < j; ++q)
        if (d[order[q]] > 0) w_plus += 0.5 * static_cast<double>(i + 1 + j);
      i = j;
    }
    const double nn = static_cast<double>(n);
    mean = nn * (nn + 1) / 4;
    var = nn * (nn + 1) * (2 * nn + 1) / 24.0 - tie_term / 48.0;
    exact = tie_term == 0.0 && n <= 50;
    if (exact) {
      below = signed_rank_counts(static_cast<int>(n));
      p_value = exact_two_sided_p(below, w_plus);  // W+ is an integer here
      std::partial_sum(below.begin(), below.end(), below.begin());
      for (double& c : below) c /= below.back();
    } else if (var > 0) {
      p_value = normal_two_sided_p(w_plus - mean, var);
    }
  }

  // P(W+ <= w) under the null.
  double cdf(int64_t w) const {
    if (w < 0) return 0.0;
    if (exact) return below[std::min<size_t>(static_cast<size_t>(w), below.size() - 1)];
    if (var <= 0) return 1.0;
    return 0.5 * std::erfc(-((static_cast<double>(w) + 0.5 - mean) / std::sqrt(var)) / std::sqrt(2.0));
  }
};

// Hodges-Lehmann: the median of the Walsh averages (d[i] + d[j]) / 2, i <= j, of every difference `d` (zeros
// included), and the interval from the k-th smallest to the k-th largest of them, k the largest with
// P(W+ <= k - 1) <= (1 - confidence) / 2 under `null`, the distribution of W+ over the same differences (found
// by bisection: the condition holds for every k up to it). W+ counts the Walsh averages above 0, so the
// interval leaves out ratio 1 exactly when the signed-rank test of these differences rejects.
void hodges_lehmann(std::vector<double> d, const SignedRanks& null, PairedTest& t) {
  std::sort(d.begin(), d.end());
  const int64_t n = static_cast<int64_t>(d.size());
  const int64_t m = n * (n + 1) / 2;
  const double alpha = 1.0 - kIntervalConfidence;
  int64_t k = 0;
  for (int64_t lo = 0, hi = (m + 1) / 2; lo < hi;) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (null.cdf(mid - 1) <= alpha / 2)
      k = lo = mid;
    else
      hi = mid - 1;
  }
  const double median =
      m % 2 ? kth_walsh_average(d, (m + 1) / 2) : 0.5 * (kth_walsh_average(d, m / 2) + kth_walsh_average(d, m / 2 + 1));
  t.ratio = std::exp(median);
  const int64_t from = std::max<int64_t>(k, 1);  // k = 0 (under 6 rounds): [min, max], covering less
  t.ratio_low = std::exp(kth_walsh_average(d, from));
  t.ratio_high = std::exp(kth_walsh_average(d, m + 1 - from));
  t.ratio_level = 1.0 - 2.0 * null.cdf(from - 1);
}

}  // namespace

PairedTest paired_rounds(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || a.size() != b.size())
    throw InputError("paired test: the two need the same rounds (" + std::to_string(a.size()) + " and " +
                     std::to_string(b.size()) + " steps)");
  PairedTest t;
  t.pairs = static_cast<int64_t>(a.size());
  std::vector<double> all, differ;  // log(b / a) of every round; of the rounds that differ
  for (size_t k = 0; k < a.size(); ++k) {
    if (!(a[k] > 0) || !(b[k] > 0) || !std::isfinite(a[k]) || !std::isfinite(b[k]))
      throw InputError("paired test: round " + std::to_string(k) + " has a step that is not a positive time");
    all.push_back(std::log(b[k] / a[k]));
    if (b[k] != a[k]) differ.push_back(all.back());
  }
  if (differ.empty()) {  // every round equal: no evidence of a difference
    t.ratio_level = 1.0;
    return t;
  }
  // The test drops the rounds with equal steps (Wilcoxon's rule); the estimate and its interval keep them.
  const SignedRanks test(differ);
  t.w_plus = test.w_plus;
  t.p_value = test.p_value;
  t.exact = test.exact;
  hodges_lehmann(all, differ.size() == all.size() ? test : SignedRanks(all), t);
  return t;
}

}  // namespace placer
