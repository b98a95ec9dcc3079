// Lower bound on the step time of any placement under a cost model.
//
// Five bounds, each valid for every placement (memory ignored):
//  - critical path: each op at its fastest device, transfers free;
//  - critical path with joins: the same, where the inputs of an op come either
//    from its own device, whose producers then ran there one at a time, or
//    from another device, after a transfer (each tensor at its cheapest link);
//    for every op the cheaper choice of each set of producers is taken, and the
//    same over a cone of ancestors (those on the op's device ran there before
//    it); forward for when an op can start, backward for how long must follow
//    it (JoinsPass below);
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

#include "placer/env/lower_bound_detail.h"
#include "placer/env/simulator.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/exec_plan.h"

namespace placer {

namespace {

// A hair below: where a bound is tight (the fastest placement reaches it), the simulator adds the same times in
// another order (three equal ops on three devices: their sum over three came out 1.1e-16 above one op's time), and
// round-off must never put the bound above a real step. The LP's own margin is wider (the solver's tolerance).
constexpr double kBelow = 1.0 - 1e-9;

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
  // The cheapest transfer of each tensor between two different devices (none with one device). A link's
  // time is affine in the bytes (CostModel::transfer_seconds), so one pair per distinct (time of 0 bytes,
  // time of the largest tensor) is tried for each tensor, and none that an earlier one is no slower than at
  // both ends: a few pairs instead of D x (D - 1) (a 50,000-op graph on 256 devices took 10 s).
  const int64_t largest = std::max<int64_t>(
      1, rules.tensor_bytes.empty() ? 1 : *std::max_element(rules.tensor_bytes.begin(), rules.tensor_bytes.end()));
  std::vector<std::pair<DeviceId, DeviceId>> links;
  {
    std::map<std::pair<double, double>, std::pair<DeviceId, DeviceId>> distinct;
    for (int32_t a = 0; a < D; ++a)
      for (int32_t b = 0; b < D; ++b)
        if (a != b)
          distinct.emplace(std::make_pair(costs.transfer_seconds(DeviceId(a), DeviceId(b), 0),
                                          costs.transfer_seconds(DeviceId(a), DeviceId(b), largest)),
                           std::make_pair(DeviceId(a), DeviceId(b)));
    double least_at_largest = std::numeric_limits<double>::infinity();
    for (const auto& [times, pair] :
         distinct)  // by time of 0 bytes: kept when cheaper than every earlier at the largest
      if (times.second < least_at_largest) {
        least_at_largest = times.second;
        links.push_back(pair);
      }
  }
  std::vector<double> xfer(rules.tensors, std::numeric_limits<double>::infinity());
  for (int32_t t = 0; t < rules.tensors; ++t)
    for (const auto& [a, b] : links) xfer[t] = std::min(xfer[t], costs.transfer_seconds(a, b, rules.tensor_bytes[t]));
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

// The critical path with joins, one direction. Forward (in = producers, ops in
// topological order), head[v] is at least v's start in every schedule of every
// placement; backward (in = consumers, reverse order), at least the time from
// v's end to the step's end: a schedule read backwards is a schedule of the
// reversed graph, so one routine serves both. Two arguments, both relaxations
// (device counts and ops that are not v's ancestors are ignored):
//  - producers: those on v's device (a set S holding every producer co-located
//    with v) ran there one at a time, each no earlier than its own head, so v
//    waits for the single-device schedule of S with release times (earliest
//    release first is optimal for it); every other producer's tensors reach v
//    a transfer after it finished. The least over S of the larger of the two;
//    the best S holds the producers whose remote arrival is latest, so only
//    those prefixes are tried.
//  - ancestors: the same over a cone of up to 24 ancestors (those finishing
//    latest first): whichever of them share v's device (R) ran there before v,
//    one at a time (released as value() says; ops outside R pay their round
//    trip); v waits for R's schedule and for the transfers from its cone
//    producers outside R. The least over every R (co-located ops decided
//    together) by branch and bound: a partial choice's value never exceeds a
//    completion's, so a branch at or above the best leaf is cut. Where the
//    search would pass its nodes (ConeSearch), the cone is halved and tried
//    again (none left: the producers' argument alone).
// head[v] is the largest of the plain longest path and the two arguments.
// How the cones are searched: up to 24 ops, and a search given up (the cone
// halved) past `nodes`: 128 on graphs of up to 4,000 ops, fewer on larger ones
// (512,000 / ops, at least 8), so that a pass stays within about 2 million
// nodes however large or dense the graph (cones of 8 past 8,000 ops); tests also
// run small cones with no limit and the cuts off (lower_bound_detail.h).
struct ConeSearch {
  int32_t cone = 24;
  int64_t nodes = 128;
  bool prune = true;
  static ConeSearch for_graph(int64_t ops) {
    ConeSearch how;
    how.nodes = std::clamp<int64_t>(512000 / std::max<int64_t>(1, ops), 8, 128);
    if (how.nodes < 64) how.cone = 8;  // a search of a few dozen nodes cannot finish a larger cone
    return how;
  }
};

class JoinsPass {
 public:
  JoinsPass(const Neighbours& nb, const std::vector<double>& fastest, bool forward, ConeSearch how)
      : nb_(nb),
        forward_(forward),
        in_(forward ? nb.preds : nb.succs),
        p_(fastest),
        how_(how),
        head_(fastest.size(), 0.0),
        where_(fastest.size(), -1) {}

  std::vector<double> run() {
    const int32_t n = static_cast<int32_t>(p_.size());
    for (int32_t i = 0; i < n; ++i) {
      const int32_t v = forward_ ? i : n - 1 - i;
      double h = 0.0;
      for (const auto& l : in_[v]) h = std::max(h, head_[l.op] + p_[l.op]);
      if (!in_[v].empty() && in_[v].size() <= kMaxNeighbours) {
        h = std::max(h, producers(v));
        for (int32_t k = how_.cone; k >= 2; k /= 2) {
          const double c = ancestors(v, k);
          if (c >= 0.0) {
            h = std::max(h, c);
            break;
          }
        }
      }
      head_[v] = h;
    }
    return head_;
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr size_t kMaxNeighbours = 256;  // past this, the plain longest path (still a bound)
  enum Choice : int8_t { kUndecided, kLocal, kRemote };
  struct Job {
    double release, time;
  };

  struct Cand {  // a producer of v in producers()
    double remote;
    Job job;
    bool forced;  // co-located with v
  };

  bool together(int32_t a, int32_t b) const { return nb_.together(a, b); }

  // Earliest release first: when the last of `jobs` can end on one device.
  static double serial(std::vector<Job>& jobs) {
    std::sort(jobs.begin(), jobs.end(), [](const Job& x, const Job& y) { return x.release < y.release; });
    double t = 0.0;
    for (const Job& j : jobs) t = std::max(t, j.release) + j.time;
    return t;
  }

  double producers(int32_t v) {
    std::vector<Cand>& cands = cands_;
    cands.clear();
    for (const auto& l : in_[v])
      cands.push_back({head_[l.op] + p_[l.op] + l.xfer, {head_[l.op], p_[l.op]}, together(l.op, v)});
    std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.remote > y.remote; });
    double best = kInf;
    for (size_t k = 0; k <= cands.size(); ++k) {
      jobs_.clear();
      double remote = 0.0;
      for (size_t i = 0; i < cands.size(); ++i) {
        if (cands[i].forced || i < k)
          jobs_.push_back(cands[i].job);
        else
          remote = std::max(remote, cands[i].remote);
      }
      if (remote == kInf) continue;  // one device: every producer is local
      best = std::min(best, std::max(serial(jobs_), remote));
    }
    return best == kInf ? 0.0 : best;
  }

  // The least over R of the cone (see above), or -1 where the search passed its nodes.
  double ancestors(int32_t v, int32_t size) {
    cone_.clear();
    std::vector<std::pair<double, int32_t>>& heap = heap_;  // (end of the ancestor's head + time, op)
    heap.clear();
    auto push = [&](int32_t u) {
      if (where_[u] != -1) return;
      where_[u] = -2;  // seen
      seen_.push_back(u);
      heap.emplace_back(head_[u] + p_[u], u);
      std::push_heap(heap.begin(), heap.end());
    };
    for (const auto& l : in_[v]) push(l.op);
    // Ops that take no time add no work, and ops with very many inputs would slow every node down: walked
    // through, not kept. The walk itself stops after 8 times the cone's size, so it stays local.
    for (int32_t walked = 0; !heap.empty() && static_cast<int32_t>(cone_.size()) < size && walked < 8 * size;
         ++walked) {
      std::pop_heap(heap.begin(), heap.end());
      const int32_t u = heap.back().second;
      heap.pop_back();
      if (p_[u] > 0.0 && in_[u].size() <= kMaxNeighbours) {
        where_[u] = static_cast<int32_t>(cone_.size());
        cone_.push_back(u);
      }
      for (const auto& l : in_[u]) push(l.op);
    }
    choice_.assign(cone_.size(), kUndecided);
    best_ = kInf;
    nodes_ = 0;
    const bool done = search(v, 0, value(v));
    for (int32_t u : seen_) where_[u] = -1;
    seen_.clear();
    if (!done) return -1.0;
    return best_ == kInf ? 0.0 : best_;
  }

  // When v can start under the choices made so far (undecided ops left out).
  // Producers before consumers (the cone is in reverse topological order: an
  // op's key, head + time, exceeds each ancestor's): a cone op on v's device is
  // released at its head, a transfer after a producer elsewhere ends, or when a
  // producer on the device ends; one elsewhere starts at its head, a transfer
  // after a producer on v's device ends (the tensor leaves the device), or when
  // a producer elsewhere ends (they may share a device). So a branch sent away
  // pays its round trip. A producer met after its consumer (a tie in round-off)
  // is left out, which only weakens the bound.
  double value(int32_t v) {
    const size_t m = cone_.size();
    ready_.assign(m, -kInf);  // on v's device: release; elsewhere: end (lower bounds)
    jobs_.clear();
    for (size_t k = m; k-- > 0;) {
      if (choice_[k] == kUndecided) continue;
      const int32_t b = cone_[k];
      const bool local = choice_[k] == kLocal;
      double start = head_[b];
      for (const auto& l : in_[b]) {
        const int32_t j = where_[l.op];
        if (j < 0 || choice_[j] == kUndecided || ready_[j] == -kInf) continue;
        const bool from_local = choice_[j] == kLocal;
        const double end = from_local ? ready_[j] + p_[l.op] : ready_[j];
        start = std::max(start, local == from_local ? end : end + l.xfer);
      }
      ready_[k] = local ? start : start + p_[b];
      if (local) jobs_.push_back({start, p_[b]});
    }
    double t = serial(jobs_);
    for (const auto& l : in_[v]) {
      const int32_t j = where_[l.op];
      if (j >= 0 && choice_[j] == kRemote && ready_[j] != -kInf) t = std::max(t, ready_[j] + l.xfer);
    }
    return t;
  }

  // Depth first over the cone's ops (x: the value of the choices made); false once the nodes are passed.
  bool search(int32_t v, size_t i, double x) {
    if (++nodes_ > how_.nodes) return false;
    if (x >= best_ && how_.prune) return true;
    if (i == cone_.size()) {
      best_ = std::min(best_, x);
      return true;
    }
    const int32_t u = cone_[i];
    Choice only = kUndecided;  // co-located with v or with an op already decided: the same choice
    if (together(u, v)) only = kLocal;
    for (size_t j = 0; j < i && only == kUndecided; ++j)
      if (together(u, cone_[j])) only = choice_[j];
    // The child with the smaller value first: good leaves early cut more.
    std::pair<double, Choice> child[2];
    int children = 0;
    for (Choice c : {kLocal, kRemote}) {
      if (only != kUndecided && c != only) continue;
      choice_[i] = c;
      child[children++] = {value(v), c};
    }
    if (children == 2 && child[1].first < child[0].first) std::swap(child[0], child[1]);
    for (int k = 0; k < children; ++k) {
      choice_[i] = child[k].second;
      if (!search(v, i + 1, child[k].first)) return false;
    }
    choice_[i] = kUndecided;
    return true;
  }

  const Neighbours& nb_;
  const bool forward_;
  const std::vector<std::vector<Neighbours::Link>>& in_;
  const std::vector<double>& p_;
  const ConeSearch how_;
  std::vector<double> head_;
  std::vector<int32_t> where_;  // op -> its index in the cone; -2 seen, -1 neither
  std::vector<int32_t> cone_, seen_;
  std::vector<Choice> choice_;
  std::vector<Job> jobs_;
  std::vector<double> ready_;
  std::vector<Cand> cands_;  // kept between ops so that the hot loop does not allocate
  std::vector<std::pair<double, int32_t>> heap_;
  double best_ = kInf;
  int64_t nodes_ = 0;
};

double joins_bound(const Neighbours& nb, const std::vector<double>& fastest, ConeSearch how) {
  const std::vector<double> est = JoinsPass(nb, fastest, true, how).run();
  const std::vector<double> tail = JoinsPass(nb, fastest, false, how).run();
  double bound = 0.0;
  for (size_t v = 0; v < fastest.size(); ++v) bound = std::max(bound, est[v] + fastest[v] + tail[v]);
  return bound * kBelow;
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
  lb.critical_path_s *= kBelow;
  lb.average_work_s *= kBelow;
  lb.group_s *= kBelow;
  lb.joins_s = joins_bound(nb, fastest, ConeSearch::for_graph(n));
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

double detail::joins_bound_for_tests(const Graph& graph, const Cluster& cluster, const CostModel& costs, int32_t cone,
                                     bool prune) {
  const int32_t D = cluster.size();
  const Neighbours nb = neighbours(graph, costs, D);
  LowerBound unused;
  std::vector<double> fastest;
  path_work_and_group_bounds(graph, costs, D, nb.groups, unused, fastest);
  ConeSearch how;
  how.cone = cone;
  how.prune = prune;
  how.nodes = int64_t{1} << 40;  // never given up: the cuts are what is tested
  return joins_bound(nb, fastest, how);
}

}  // namespace placer
