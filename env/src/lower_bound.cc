// Lower bound on the step time of any placement under a cost model.
//
// Three bounds, each valid for every placement (transfers and memory ignored):
//  - critical path: each op at its fastest device, transfers free;
//  - average work: the sum of every op's fastest time over the device count;
//  - LP relaxation (devices of different speeds): minimize T subject to
//    sum_d x[o,d] = 1 and sum_o c[o,d] x[o,d] <= T for every device d, x >= 0.
//    Any placement is an integral solution with T = its busiest device, so the
//    LP optimum is a bound. Devices with identical cost columns form a class
//    (by symmetry of the convex LP their loads can be equalized: one row per
//    class with capacity m_k T), ops with identical cost rows are merged (one
//    variable per class with demand = their count); solved exactly with CLP.
#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "placer/env/simulator.h"

namespace placer {

LowerBound lower_bound_parts(const Graph& graph, const Cluster& cluster, const CostModel& costs) {
  LowerBound lb;
  const int64_t n = graph.size();
  const int32_t D = cluster.size();
  if (n == 0 || D == 0) return lb;

  std::vector<double> best(n);
  std::vector<double> finish(n, 0.0);
  double total = 0.0;
  for (int64_t o = 0; o < n; ++o) {
    double m = std::numeric_limits<double>::infinity();
    for (int32_t d = 0; d < D; ++d) m = std::min(m, costs.op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(d)));
    best[o] = m;
    total += m;
    double start = 0.0;
    for (const TensorRef& in : graph.op(OpId(static_cast<int32_t>(o))).inputs)
      start = std::max(start, finish[in.op.value]);
    finish[o] = start + m;
    lb.critical_path_s = std::max(lb.critical_path_s, finish[o]);
  }
  lb.average_work_s = total / D;

  // Device classes: identical cost columns.
  std::vector<int32_t> class_of(D, -1);
  std::vector<int32_t> class_rep;
  std::vector<int32_t> class_size;
  for (int32_t d = 0; d < D; ++d) {
    for (size_t k = 0; k < class_rep.size() && class_of[d] < 0; ++k) {
      bool same = true;
      for (int64_t o = 0; o < n && same; ++o)
        same = costs.op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(d)) ==
               costs.op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(class_rep[k]));
      if (same) {
        class_of[d] = static_cast<int32_t>(k);
        ++class_size[k];
      }
    }
    if (class_of[d] < 0) {
      class_of[d] = static_cast<int32_t>(class_rep.size());
      class_rep.push_back(d);
      class_size.push_back(1);
    }
  }
  const int32_t K = static_cast<int32_t>(class_rep.size());
  if (K <= 1) return lb;  // the LP equals the average work

  // Merge ops with identical cost rows over the classes.
  std::map<std::vector<double>, double> rows;
  std::vector<double> row(K);
  for (int64_t o = 0; o < n; ++o) {
    bool zero = true;
    for (int32_t k = 0; k < K; ++k) {
      row[k] = costs.op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(class_rep[k]));
      zero &= row[k] == 0.0;
    }
    if (!zero) rows[row] += 1.0;
  }
  const int32_t G = static_cast<int32_t>(rows.size());
  if (G == 0) return lb;

  // Columns: x[g,k] (G*K), then T. Rows: G demand rows, then K capacity rows.
  const int32_t cols = G * K + 1;
  const int32_t nrows = G + K;
  std::vector<CoinBigIndex> starts;
  std::vector<int> index;
  std::vector<double> value;
  starts.reserve(cols + 1);
  double scale = 0.0;  // normalizes costs so CLP's tolerances fit any time unit
  for (const auto& [r, count] : rows)
    for (double c : r) scale = std::max(scale, c);
  if (!(scale > 0)) return lb;
  int32_t g = 0;
  for (const auto& [r, count] : rows) {
    for (int32_t k = 0; k < K; ++k) {
      starts.push_back(static_cast<CoinBigIndex>(index.size()));
      index.push_back(g);
      value.push_back(1.0);
      if (r[k] > 0) {
        index.push_back(G + k);
        value.push_back(r[k] / scale);
      }
    }
    ++g;
  }
  starts.push_back(static_cast<CoinBigIndex>(index.size()));
  for (int32_t k = 0; k < K; ++k) {
    index.push_back(G + k);
    value.push_back(-static_cast<double>(class_size[k]));
  }
  starts.push_back(static_cast<CoinBigIndex>(index.size()));
  std::vector<double> col_lo(cols, 0.0), col_hi(cols, COIN_DBL_MAX), obj(cols, 0.0);
  obj[cols - 1] = 1.0;
  std::vector<double> row_lo(nrows), row_hi(nrows);
  g = 0;
  for (const auto& [r, count] : rows) {
    row_lo[g] = row_hi[g] = count;
    ++g;
  }
  for (int32_t k = 0; k < K; ++k) {
    row_lo[G + k] = -COIN_DBL_MAX;
    row_hi[G + k] = 0.0;
  }
  std::vector<int> lengths(cols);
  for (int32_t c = 0; c < cols; ++c) lengths[c] = static_cast<int>(starts[c + 1] - starts[c]);
  CoinPackedMatrix matrix(true, nrows, cols, static_cast<CoinBigIndex>(value.size()), value.data(), index.data(),
                          starts.data(), lengths.data());
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lo.data(), col_hi.data(), obj.data(), row_lo.data(), row_hi.data());
  lp.dual();
  if (lp.isProvenOptimal()) {
    // A hair below the optimum so solver round-off never lifts it above a real schedule.
    lb.lp_s = std::max(0.0, lp.objectiveValue() * scale * (1.0 - 1e-6));
  }
  return lb;
}

double lower_bound(const Graph& graph, const Cluster& cluster, const CostModel& costs) {
  return lower_bound_parts(graph, cluster, costs).value();
}

}  // namespace placer
