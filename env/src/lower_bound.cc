// Lower bound on the step time of any placement under a cost model.
//
// Five bounds, each valid for every placement (memory ignored):
//  - critical path: each op at its fastest device, transfers free;
//  - critical path with joins: the same, where the inputs of an op come either
//    from its own device, whose producers then ran there one at a time, or
//    from another device, after a transfer (each tensor at its cheapest link);
//    for every op the cheaper choice of each set of producers is taken, forward
//    for when an op can start and backward for how long must follow it (below);
//  - co-location group: a group's ops share one device (validate_placement
//    refuses a split) and a device runs one op at a time, so a placement takes
//    at least the longest path to any member, plus the group's work on the
//    device where it is least, plus the shortest of the longest paths that
//    must follow a member (each path at fastest times, transfers free);
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
#include "placer/graphs/algorithms.h"
#include "placer/graphs/exec_plan.h"

namespace placer {

namespace {

double op_seconds(const CostModel& costs, int64_t o, int32_t d) {
  return costs.op_seconds(OpId(static_cast<int32_t>(o)), DeviceId(d));
}

// The critical path, the average work and the co-location group bound, each
// op at its fastest device (ops are in topological order).
void path_work_and_group_bounds(const Graph& graph, const CostModel& costs, int32_t D, const Grouping& groups,
                                LowerBound& lb, std::vector<double>& fastest) {
  const int64_t n = graph.size();
  fastest.assign(n, 0.0);
  std::vector<double> head(n, 0.0), tail(n, 0.0);  // head: before the op starts; tail: after it ends
  double total = 0.0;
  for (int64_t o = 0; o < n; ++o) {
    double m = std::numeric_limits<double>::infinity();
    for (int32_t d = 0; d < D; ++d) m = std::min(m, op_seconds(costs, o, d));
    fastest[o] = m;
    total += m;
    for (const TensorRef& in : graph.op(OpId(static_cast<int32_t>(o))).inputs)
      head[o] = std::max(head[o], head[in.op.value] + fastest[in.op.value]);
    lb.critical_path_s = std::max(lb.critical_path_s, head[o] + m);
  }
  for (int64_t o = n - 1; o >= 0; --o)
    for (const TensorRef& in : graph.op(OpId(static_cast<int32_t>(o))).inputs)
      tail[in.op.value] = std::max(tail[in.op.value], fastest[o] + tail[o]);
  lb.average_work_s = total / D;
  for (const std::vector<OpId>& members : groups.members) {
    if (members.size() < 2) continue;  // a single op's bound is its path: the critical path's
    double first = std::numeric_limits<double>::infinity(), last = first, work = first;
    for (OpId o : members) {
      first = std::min(first, head[o.value]);
      last = std::min(last, tail[o.value]);
    }
    for (int32_t d = 0; d < D; ++d) {
      double w = 0.0;
      for (OpId o : members) w += op_seconds(costs, o.value, d);
      work = std::min(work, w);
    }
    lb.group_s = std::max(lb.group_s, first + work + last);
  }
}

// Each op's neighbours with the summed cheapest transfer time of the tensors
// between them (tensors from one producer to one device share that link's
// channel, so their times add), and the co-location groups.
struct Neighbours {
  struct Link {
    int32_t op;
    double xfer;
  };
  std::vector<std::vector<Link>> preds, succs;
  Grouping groups;
  bool together(int32_t a, int32_t b) const { return groups.group_of[a] == groups.group_of[b]; }
};

Neighbours neighbours(const Graph& graph, const CostModel& costs, int32_t D) {
  const int32_t n = static_cast<int32_t>(graph.size());
  const ExecRules rules(graph);
  // The cheapest transfer of each tensor between two different devices (none with one device).
  std::vector<double> xfer(rules.tensors, std::numeric_limits<double>::infinity());
  for (int32_t t = 0; t < rules.tensors; ++t)
    for (int32_t a = 0; a < D; ++a)
      for (int32_t b = 0; b < D; ++b)
        if (a != b)
          xfer[t] = std::min(xfer[t], costs.transfer_seconds(DeviceId(a), DeviceId(b), rules.tensor_bytes[t]));
  Neighbours nb;
  nb.preds.resize(n);
  nb.succs.resize(n);
  nb.groups = colocation_groups(graph);
  for (int32_t v = 0; v < n; ++v) {
    auto& preds = nb.preds[v];
    for (int32_t s = rules.in_begin[v]; s < rules.in_begin[v + 1]; ++s) {
      const int32_t t = rules.in_tensor[s];
      const int32_t u = rules.tensor_op[t];
      auto it = std::find_if(preds.begin(), preds.end(), [&](const Neighbours::Link& l) { return l.op == u; });
      if (it == preds.end())
        preds.push_back({u, xfer[t]});
      else
        it->xfer += xfer[t];
    }
    for (const Neighbours::Link& l : preds) nb.succs[l.op].push_back({v, l.xfer});
  }
  return nb;
}

// The critical path with joins. For a schedule of any placement, start(v) is
// at least est(v): the producers of v's inputs that run on v's device (a set S,
// which holds every producer co-located with v) run there one at a time, each
// no earlier than its own est, so v waits for the single-device schedule of S
// with release times; every other producer's tensors reach v's device a
// transfer after it finished. est(v) is the least over S of the larger of the
// two; the best S holds the producers whose remote arrival is latest, so only
// those prefixes are tried. Backward, the time from v's finish to the step's
// end is at least tail(v) by the same argument on its consumers (those on v's
// device run after v one at a time, longest tail first, Jackson's rule). The
// bound is the largest est(v) + time(v) + tail(v). Device counts and other ops
// sharing a device are ignored, so it is a relaxation.
double joins_bound(const Neighbours& nb, const std::vector<double>& fastest) {
  const int32_t n = static_cast<int32_t>(fastest.size());
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // A neighbour's terms: `remote` when it is done for v if on another device; a, b: the
  // single-device schedule's (forward: release at est, time; backward: tail, time).
  struct Cand {
    double remote, a, b;
    bool forced;  // co-located with v
  };
  std::vector<Cand> cands, local;
  // The least over S (the forced ones plus the k latest remote arrivals) of max(local schedule, remote).
  auto best_split = [&](bool forward) {
    std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.remote > y.remote; });
    double best = kInf;
    const size_t m = cands.size();
    for (size_t k = 0; k <= m; ++k) {
      local.clear();
      double remote = 0.0;
      for (size_t i = 0; i < m; ++i) {
        if (cands[i].forced || i < k)
          local.push_back(cands[i]);
        else
          remote = std::max(remote, cands[i].remote);
      }
      if (remote == kInf) continue;  // one device: every neighbour is local
      double serial = 0.0;
      if (forward) {
        std::sort(local.begin(), local.end(), [](const Cand& x, const Cand& y) { return x.a < y.a; });
        for (const Cand& c : local) serial = std::max(serial, c.a) + c.b;
      } else {
        std::sort(local.begin(), local.end(), [](const Cand& x, const Cand& y) { return x.a > y.a; });
        double t = 0.0;
        for (const Cand& c : local) {
          t += c.b;
          serial = std::max(serial, t + c.a);
        }
      }
      best = std::min(best, std::max(serial, remote));
    }
    return best;
  };
  // Past this many neighbours the plain longest path is used for the op (still a bound, weaker).
  constexpr size_t kMaxNeighbours = 256;
  std::vector<double> est(n, 0.0), tail(n, 0.0);
  for (int32_t v = 0; v < n; ++v) {
    double plain = 0.0;
    for (const auto& l : nb.preds[v]) plain = std::max(plain, est[l.op] + fastest[l.op]);
    est[v] = plain;
    if (nb.preds[v].empty() || nb.preds[v].size() > kMaxNeighbours) continue;
    cands.clear();
    for (const auto& l : nb.preds[v])
      cands.push_back({est[l.op] + fastest[l.op] + l.xfer, est[l.op], fastest[l.op], nb.together(l.op, v)});
    est[v] = std::max(plain, best_split(true));
  }
  for (int32_t v = n - 1; v >= 0; --v) {
    double plain = 0.0;
    for (const auto& l : nb.succs[v]) plain = std::max(plain, fastest[l.op] + tail[l.op]);
    tail[v] = plain;
    if (nb.succs[v].empty() || nb.succs[v].size() > kMaxNeighbours) continue;
    cands.clear();
    for (const auto& l : nb.succs[v])
      cands.push_back({l.xfer + fastest[l.op] + tail[l.op], tail[l.op], fastest[l.op], nb.together(l.op, v)});
    tail[v] = std::max(plain, best_split(false));
  }
  double bound = 0.0;
  for (int32_t v = 0; v < n; ++v) bound = std::max(bound, est[v] + fastest[v] + tail[v]);
  return bound;
}

// Devices with identical cost columns: a representative and a size per class.
struct DeviceClasses {
  std::vector<int32_t> rep, size;
};

DeviceClasses device_classes(const CostModel& costs, int64_t n, int32_t D) {
  DeviceClasses classes;
  std::vector<int32_t> class_of(D, -1);
  for (int32_t d = 0; d < D; ++d) {
    for (size_t k = 0; k < classes.rep.size() && class_of[d] < 0; ++k) {
      bool same = true;
      for (int64_t o = 0; o < n && same; ++o) same = op_seconds(costs, o, d) == op_seconds(costs, o, classes.rep[k]);
      if (same) {
        class_of[d] = static_cast<int32_t>(k);
        ++classes.size[k];
      }
    }
    if (class_of[d] < 0) {
      class_of[d] = static_cast<int32_t>(classes.rep.size());
      classes.rep.push_back(d);
      classes.size.push_back(1);
    }
  }
  return classes;
}

// Ops with identical cost rows over the classes, merged: row -> how many ops have it (all-zero rows left out).
std::map<std::vector<double>, double> merged_cost_rows(const CostModel& costs, int64_t n,
                                                       const DeviceClasses& classes) {
  const int32_t K = static_cast<int32_t>(classes.rep.size());
  std::map<std::vector<double>, double> rows;
  std::vector<double> row(K);
  for (int64_t o = 0; o < n; ++o) {
    bool zero = true;
    for (int32_t k = 0; k < K; ++k) {
      row[k] = op_seconds(costs, o, classes.rep[k]);
      zero &= row[k] == 0.0;
    }
    if (!zero) rows[row] += 1.0;
  }
  return rows;
}

// The LP's constraint matrix, column by column. Columns: x[g,k] (G*K), then T. Rows: G demand rows,
// then K capacity rows.
CoinPackedMatrix lp_matrix(const std::map<std::vector<double>, double>& rows, const DeviceClasses& classes,
                           double scale) {
  const int32_t K = static_cast<int32_t>(classes.rep.size());
  const int32_t G = static_cast<int32_t>(rows.size());
  const int32_t cols = G * K + 1;
  std::vector<CoinBigIndex> starts;
  std::vector<int> index;
  std::vector<double> value;
  starts.reserve(cols + 1);
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
    value.push_back(-static_cast<double>(classes.size[k]));
  }
  starts.push_back(static_cast<CoinBigIndex>(index.size()));
  std::vector<int> lengths(cols);
  for (int32_t c = 0; c < cols; ++c) lengths[c] = static_cast<int>(starts[c + 1] - starts[c]);
  return CoinPackedMatrix(true, G + K, cols, static_cast<CoinBigIndex>(value.size()), value.data(), index.data(),
                          starts.data(), lengths.data());
}

// The LP relaxation solved with CLP; 0 when it is not proven optimal.
double lp_bound(const std::map<std::vector<double>, double>& rows, const DeviceClasses& classes) {
  const int32_t K = static_cast<int32_t>(classes.rep.size());
  const int32_t G = static_cast<int32_t>(rows.size());
  const int32_t cols = G * K + 1;
  const int32_t nrows = G + K;
  double scale = 0.0;  // normalizes costs so CLP's tolerances fit any time unit
  for (const auto& [r, count] : rows)
    for (double c : r) scale = std::max(scale, c);
  if (!(scale > 0)) return 0.0;
  const CoinPackedMatrix matrix = lp_matrix(rows, classes, scale);
  std::vector<double> col_lo(cols, 0.0), col_hi(cols, COIN_DBL_MAX), obj(cols, 0.0);
  obj[cols - 1] = 1.0;
  std::vector<double> row_lo(nrows), row_hi(nrows);
  int32_t g = 0;
  for (const auto& [r, count] : rows) {
    row_lo[g] = row_hi[g] = count;
    ++g;
  }
  for (int32_t k = 0; k < K; ++k) {
    row_lo[G + k] = -COIN_DBL_MAX;
    row_hi[G + k] = 0.0;
  }
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lo.data(), col_hi.data(), obj.data(), row_lo.data(), row_hi.data());
  lp.dual();
  if (!lp.isProvenOptimal()) return 0.0;
  // A hair below the optimum so solver round-off never lifts it above a real schedule.
  return std::max(0.0, lp.objectiveValue() * scale * (1.0 - 1e-6));
}

}  // namespace

LowerBound lower_bound_parts(const Graph& graph, const Cluster& cluster, const CostModel& costs) {
  LowerBound lb;
  const int64_t n = graph.size();
  const int32_t D = cluster.size();
  if (n == 0 || D == 0) return lb;
  const Neighbours nb = neighbours(graph, costs, D);
  std::vector<double> fastest;
  path_work_and_group_bounds(graph, costs, D, nb.groups, lb, fastest);
  lb.joins_s = joins_bound(nb, fastest);
  const DeviceClasses classes = device_classes(costs, n, D);
  if (classes.rep.size() <= 1) return lb;  // the LP equals the average work
  const std::map<std::vector<double>, double> rows = merged_cost_rows(costs, n, classes);
  if (rows.empty()) return lb;
  lb.lp_s = lp_bound(rows, classes);
  return lb;
}

double lower_bound(const Graph& graph, const Cluster& cluster, const CostModel& costs) {
  return lower_bound_parts(graph, cluster, costs).value();
}

}  // namespace placer
