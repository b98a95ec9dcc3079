// ilp for the max-load objective: every split of the colocation classes,
// non-contiguous ones included, as a MILP solved by CBC.
//   x[k,d] in {0,1}: class k on device d;  sum_d x[k,d] = 1.
//   t[u,d] in [0,1], accelerators d, nodes u with a transfer cost: u's output
//     crosses d's boundary; t[u,d] >= x[k(u),d] - x[k(v),d] and
//     t[u,d] >= x[k(v),d] - x[k(u),d] for each successor v in another class.
//   accelerator d: sum_k lat(k) x[k,d] + sum_u cost(u) t[u,d] <= T, bytes <= capacity;
//   CPU d: sum_k cpu(k) x[k,d] <= T.   Minimize T.
// Accelerators are interchangeable: class k may use only accelerators 0..k
// (any split can be renumbered so), which the warm start is renumbered to meet.
#include <CbcModel.hpp>
#include <CglGomory.hpp>
#include <CglProbing.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "cbc_solve.h"
#include "max_load_placers.h"
#include "placer/env/max_load.h"
#include "placer/graphs/error.h"

namespace placer {

namespace {

struct Milp {
  std::vector<double> lb, ub, obj;
  std::vector<char> integer;
  std::vector<int> row, col;
  std::vector<double> value, row_lb, row_ub;
  int rows = 0;

  int add_column(double lo, double hi, double cost, bool is_integer) {
    lb.push_back(lo);
    ub.push_back(hi);
    obj.push_back(cost);
    integer.push_back(is_integer ? 1 : 0);
    return static_cast<int>(lb.size()) - 1;
  }
  // lo <= sum coef * column <= hi
  void add_row(const std::vector<std::pair<int, double>>& terms, double lo, double hi) {
    for (const auto& [c, v] : terms) {
      row.push_back(rows);
      col.push_back(c);
      value.push_back(v);
    }
    row_lb.push_back(lo);
    row_ub.push_back(hi);
    ++rows;
  }
};

constexpr double kInf = 1e30;  // COIN's infinity

class MaxLoadMilp {
 public:
  explicit MaxLoadMilp(const Workload& w) : w_(w), devices_(w.cluster.devices()) {
    cls_ = w.colocation_classes(&classes_);
    build();
  }

  // The warm placement as a column vector (accelerators renumbered for the symmetry rows).
  std::vector<double> solution_of(const WorkloadPlacement& p) const {
    const WorkloadPlacement q = canonical(p);
    std::vector<double> x(m_.lb.size(), 0.0);
    for (size_t u = 0; u < q.size(); ++u) x[static_cast<size_t>(xcol(cls_[u], q[u]))] = 1.0;
    std::vector<double> load;
    x[static_cast<size_t>(tcol_)] = MaxLoadEvaluator(w_).evaluate(q, &load);
    for (const auto& [key, c] : transfer_) x[static_cast<size_t>(c)] = crosses(q, key.first, key.second) ? 1.0 : 0.0;
    return x;
  }

  WorkloadPlacement placement_of(const double* x) const {
    WorkloadPlacement p(w_.nodes.size(), 0);
    for (size_t u = 0; u < p.size(); ++u) {
      int32_t best = 0;
      for (int32_t d = 1; d < devices_; ++d)
        if (x[xcol(cls_[u], d)] > x[xcol(cls_[u], best)]) best = d;
      p[u] = best;
    }
    return p;
  }

  const Milp& model() const { return m_; }
  int32_t classes() const { return classes_; }

 private:
  int xcol(int32_t k, int32_t d) const { return k * devices_ + d; }

  void build() {
    const int32_t acc = w_.cluster.accelerators;
    for (int32_t k = 0; k < classes_; ++k)
      for (int32_t d = 0; d < devices_; ++d) m_.add_column(0.0, d < acc && d > k ? 0.0 : 1.0, 0.0, true);
    tcol_ = m_.add_column(0.0, kInf, 1.0, false);
    std::vector<double> cpu(static_cast<size_t>(classes_), 0.0), lat(cpu), bytes(cpu);
    std::vector<char> ok(static_cast<size_t>(classes_), 1);
    for (size_t u = 0; u < w_.nodes.size(); ++u) {
      const size_t k = static_cast<size_t>(cls_[u]);
      cpu[k] += w_.nodes[u].cpu_latency;
      lat[k] += w_.nodes[u].accelerator_latency;
      bytes[k] += w_.nodes[u].size;
      if (!w_.nodes[u].accelerator_ok) ok[k] = 0;
    }
    for (int32_t k = 0; k < classes_; ++k) {
      std::vector<std::pair<int, double>> one;
      for (int32_t d = 0; d < devices_; ++d) one.push_back({xcol(k, d), 1.0});
      m_.add_row(one, 1.0, 1.0);
      if (!ok[static_cast<size_t>(k)])
        for (int32_t d = 0; d < acc; ++d) m_.ub[static_cast<size_t>(xcol(k, d))] = 0.0;
    }
    // Successor classes of each node with a transfer cost.
    std::map<int32_t, std::set<int32_t>> receivers;
    for (const WorkloadEdge& e : w_.edges)
      if (w_.out_cost[static_cast<size_t>(e.from)] > 0 &&
          cls_[static_cast<size_t>(e.from)] != cls_[static_cast<size_t>(e.to)])
        receivers[e.from].insert(cls_[static_cast<size_t>(e.to)]);
    for (int32_t d = 0; d < devices_; ++d) {
      std::vector<std::pair<int, double>> load, memory;
      for (int32_t k = 0; k < classes_; ++k) {
        const size_t i = static_cast<size_t>(k);
        if (d < acc) {
          load.push_back({xcol(k, d), lat[i]});
          memory.push_back({xcol(k, d), bytes[i]});
        } else {
          load.push_back({xcol(k, d), cpu[i]});
        }
      }
      if (d < acc) {
        for (const auto& [u, to] : receivers) {
          const int t = m_.add_column(0.0, 1.0, 0.0, false);
          transfer_[{u, d}] = t;
          load.push_back({t, w_.out_cost[static_cast<size_t>(u)]});
          const int own = xcol(cls_[static_cast<size_t>(u)], d);
          for (int32_t k : to) {
            m_.add_row({{t, 1.0}, {own, -1.0}, {xcol(k, d), 1.0}}, 0.0, kInf);
            m_.add_row({{t, 1.0}, {xcol(k, d), -1.0}, {own, 1.0}}, 0.0, kInf);
          }
        }
        m_.add_row(memory, -kInf, w_.cluster.accelerator_bytes);
      }
      load.push_back({tcol_, -1.0});
      m_.add_row(load, -kInf, 0.0);
    }
  }

  // Accelerators renumbered by the least class they hold (the symmetry rows' order).
  WorkloadPlacement canonical(const WorkloadPlacement& p) const {
    const int32_t acc = w_.cluster.accelerators;
    std::vector<int32_t> first(static_cast<size_t>(acc), classes_);
    for (size_t u = 0; u < p.size(); ++u)
      if (p[u] < acc) first[static_cast<size_t>(p[u])] = std::min(first[static_cast<size_t>(p[u])], cls_[u]);
    std::vector<int32_t> order(static_cast<size_t>(acc));
    for (int32_t d = 0; d < acc; ++d) order[static_cast<size_t>(d)] = d;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)] ||
             (first[static_cast<size_t>(a)] == first[static_cast<size_t>(b)] && a < b);
    });
    std::vector<int32_t> rank(static_cast<size_t>(acc));
    for (int32_t i = 0; i < acc; ++i) rank[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
    WorkloadPlacement q = p;
    for (int32_t& d : q)
      if (d < acc) d = rank[static_cast<size_t>(d)];
    return q;
  }

  bool crosses(const WorkloadPlacement& p, int32_t u, int32_t d) const {
    const bool here = p[static_cast<size_t>(u)] == d;
    for (const WorkloadEdge& e : w_.edges)
      if (e.from == u && (p[static_cast<size_t>(e.to)] == d) != here) return true;
    return false;
  }

  const Workload& w_;
  int32_t devices_;
  std::vector<int32_t> cls_;
  int32_t classes_ = 0;
  Milp m_;
  int tcol_ = -1;
  std::map<std::pair<int32_t, int32_t>, int> transfer_;  // (node, accelerator) -> t column
};

// Branch and bound on the model within the time limit, from the warm split when there is one.
CbcResult solve(const Workload& w, const MaxLoadMilp& milp, const MaxLoadOptions& options) {
  const Milp& m = milp.model();
  const int ncols = static_cast<int>(m.lb.size());
  CoinPackedMatrix matrix(false, m.row.data(), m.col.data(), m.value.data(), static_cast<CoinBigIndex>(m.value.size()));
  matrix.setDimensions(m.rows, ncols);
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, m.lb.data(), m.ub.data(), m.obj.data(), m.row_lb.data(), m.row_ub.data());
  for (int c = 0; c < ncols; ++c)
    if (m.integer[static_cast<size_t>(c)]) solver.setInteger(c);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  limit_cbc_seconds(model, options.time_limit_s);
  model.setAllowableFractionGap(1e-7);
  CglProbing probing;
  probing.setUsingObjective(true);
  CglGomory gomory;
  model.addCutGenerator(&probing, -1, "Probing");
  model.addCutGenerator(&gomory, -1, "Gomory");
  if (!options.warm.empty()) {
    check_workload_placement(w, options.warm);
    const std::vector<double> warm = milp.solution_of(options.warm);
    double objective = 0.0;
    for (int c = 0; c < ncols; ++c) objective += m.obj[static_cast<size_t>(c)] * warm[static_cast<size_t>(c)];
    model.setBestSolution(warm.data(), ncols, objective, true);
  }
  model.branchAndBound();
  return read_cbc(model, ncols);
}

}  // namespace

MaxLoadResult max_load_ilp(const Workload& w, const MaxLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MaxLoadResult r;
  r.method = "ilp";
  const MaxLoadMilp milp(w);
  const CbcResult cbc = solve(w, milp, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (cbc.best.empty() && options.warm.empty()) {
    r.note = cbc.infeasible ? "no split fits the accelerators' memory and support (proven infeasible)"
                            : "CBC found no split within the time limit";
    return r;
  }
  // CBC may drop its incumbent at the limit (objective 1e50): the warm split stands then.
  r.placement = cbc.best.empty() ? options.warm : milp.placement_of(cbc.best.data());
  r.max_load = max_load(w, r.placement).max_load;
  r.optimal = cbc.optimal;
  // No bound worth the name when Clp stopped the relaxation: 0, which every split's load is at least.
  r.bound = r.optimal ? r.max_load : std::min(std::max(cbc.best_possible, 0.0), r.max_load);
  const Milp& m = milp.model();
  const char* warm = options.warm.empty() ? "" : cbc.best.empty() ? ", the warm start kept" : ", warm-started";
  r.note = detail::concat(milp.classes(), " classes, ", m.lb.size(), " columns, ", m.rows, " rows; ",
                          r.optimal ? "optimal" : "time limit", ", bound ", r.bound,
                          std::isinf(cbc.best_possible) ? " (the relaxation was cut short)" : "", ", ", cbc.nodes,
                          " nodes", warm);
  return r;
}

}  // namespace placer
