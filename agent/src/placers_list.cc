// List-scheduling placers from Baechi (m-TOPO, m-ETF, m-SCT) and HEFT.
// All work at operator level; the first op of a co-location group pins the
// whole group (and charges its memory) to the device it is scheduled on.
#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "placers_common.h"

namespace placer {
namespace {

std::string plan_note(const std::string& method, const ListPlan& plan) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: planned step %.6g s as the runtime dispatches (list-schedule makespan %.6g s)",
                method.c_str(), plan.step_s, plan.list_makespan);
  return plan.how.empty() ? buf : std::string(buf) + "; " + plan.how;
}

PlaceResult finish_plan(const PlaceContext& ctx, const UnitProblem& p, const ListPlan& plan, const std::string& method,
                        Clock::time_point started, const std::string& extra = {}) {
  PlaceResult out = finish(ctx, plan.unit_device, method, started, plan_note(method, plan) + extra);
  std::vector<int32_t> placed(out.placement.device_of.size());
  for (size_t i = 0; i < placed.size(); ++i) placed[i] = out.placement.device_of[i].value;
  // finish moved groups to fit memory: the planned step is the moved placement's.
  out.stats["model_makespan_s"] = placed == plan.unit_device ? plan.step_s : schedule_ready_order(p, placed).makespan;
  out.stats["list_makespan_s"] = plan.list_makespan;
  return out;
}

// m_etf and m_sct: the first candidate (fastest replay first) that the
// simulator fits in memory; if none does, the fastest (finish moves groups).
PlaceResult finish_first_fitting(const PlaceContext& ctx, const UnitProblem& p, EtfCandidates candidates,
                                 const std::string& method, Clock::time_point started, const std::string& extra = {}) {
  std::string skipped;
  ListPlan* kept = &candidates.plans.front();
  for (ListPlan& plan : candidates.plans) {
    if (simulator_fits(ctx, plan.unit_device, method)) {
      kept = &plan;
      break;
    }
    skipped += (skipped.empty() ? "" : ", ") + plan.how;
  }
  if (kept == &candidates.plans.front()) skipped.clear();
  kept->how = "kept " + kept->how + " (replayed: " + candidates.tried + ")" +
              (skipped.empty() ? "" : "; faster, but overflowing memory in the simulator: " + skipped);
  return finish_plan(ctx, p, *kept, method, started, extra);
}

class ListPlacer : public UnitPlacer {
 public:
  enum class Kind { Topo, Etf, Heft };
  ListPlacer(std::string name, Kind kind) : name_(std::move(name)), kind_(kind) {}
  std::string name() const override { return name_; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    if (kind_ == Kind::Etf) return finish_first_fitting(ctx, p, etf_candidates(p, nullptr), name_, started);
    const ListPlan plan = kind_ == Kind::Topo ? replayed(p, list_topo(p), "") : replayed(p, list_heft(p), "");
    return finish_plan(ctx, p, plan, name_, started);
  }

 private:
  std::string name_;
  Kind kind_;
};

// Favourite children from the LP relaxation of scheduling with small
// communication times (Hanen & Munier, as Baechi's m-SCT): x_e = 0 means the
// child runs right after its parent on the same device.
//   min w  s.t.  s_j >= s_i + p_i + c_ij x_ij            for each edge
//                sum_{j in succ(i)} x_ij >= |succ(i)| - 1  (one favourite child)
//                sum_{i in pred(j)} x_ij >= |pred(j)| - 1  (one favourite parent)
//                w >= s_i + p_i,  0 <= x <= 1
std::vector<int32_t> favourite_parents_lp(const UnitProblem& p, double max_seconds, double* lp_makespan) {
  struct E {
    int32_t from, to;
    double comm;
  };
  std::vector<E> edges;
  for (int32_t j = 0; j < p.n; ++j)
    for (const Edge& e : p.preds[j]) edges.push_back({e.op, j, p.mean_transfer(e.bytes)});
  const int32_t n = p.n, m = static_cast<int32_t>(edges.size());
  const int32_t cols = n + m + 1, w = n + m;
  std::vector<int> rows_i, cols_i;
  std::vector<double> vals, row_lb, row_ub;
  int row = 0;
  auto put = [&](int c, double v) { rows_i.push_back(row), cols_i.push_back(c), vals.push_back(v); };
  const double inf = COIN_DBL_MAX;
  for (int32_t e = 0; e < m; ++e) {
    put(edges[e].to, 1.0);
    put(edges[e].from, -1.0);
    if (edges[e].comm > 0) put(n + e, -edges[e].comm);
    row_lb.push_back(p.mean_cost(edges[e].from));
    row_ub.push_back(inf);
    ++row;
  }
  std::vector<std::vector<int32_t>> out_e(n), in_e(n);
  for (int32_t e = 0; e < m; ++e) out_e[edges[e].from].push_back(e), in_e[edges[e].to].push_back(e);
  for (int32_t i = 0; i < n; ++i) {
    if (out_e[i].size() > 1) {
      for (int32_t e : out_e[i]) put(n + e, 1.0);
      row_lb.push_back(static_cast<double>(out_e[i].size()) - 1), row_ub.push_back(inf);
      ++row;
    }
    if (in_e[i].size() > 1) {
      for (int32_t e : in_e[i]) put(n + e, 1.0);
      row_lb.push_back(static_cast<double>(in_e[i].size()) - 1), row_ub.push_back(inf);
      ++row;
    }
    if (out_e[i].empty()) {
      put(w, 1.0);
      put(i, -1.0);
      row_lb.push_back(p.mean_cost(i)), row_ub.push_back(inf);
      ++row;
    }
  }
  CoinPackedMatrix matrix(false, rows_i.data(), cols_i.data(), vals.data(), static_cast<CoinBigIndex>(vals.size()));
  matrix.setDimensions(row, cols);
  std::vector<double> col_lb(cols, 0.0), col_ub(cols, inf), obj(cols, 0.0);
  for (int32_t e = 0; e < m; ++e) col_ub[n + e] = 1.0;
  obj[w] = 1.0;
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.setMaximumSeconds(max_seconds);
  lp.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
  lp.dual();
  if (!lp.isProvenOptimal()) return {};  // the caller falls back to favourite_parents_greedy
  std::vector<int32_t> fav(n, -1);
  const double* x = lp.getColSolution();
  *lp_makespan = x[w];
  // Each parent's favourite: its child with the smallest x below 1/2; each
  // child keeps the parent with the smallest x.
  std::vector<double> best_x(n, 0.5);
  for (int32_t i = 0; i < n; ++i) {
    int32_t pick = -1;
    for (int32_t e : out_e[i])
      if (x[n + e] < 0.5 && (pick < 0 || x[n + e] < x[n + pick])) pick = e;
    if (pick < 0) continue;
    const int32_t j = edges[pick].to;
    if (x[n + pick] < best_x[j]) best_x[j] = x[n + pick], fav[j] = i;
  }
  return fav;
}

// Without the LP (very large graphs): each parent's favourite is the child it
// sends the most bytes to, if that child has no favourite parent yet.
std::vector<int32_t> favourite_parents_greedy(const UnitProblem& p) {
  std::vector<int32_t> fav(p.n, -1);
  for (int32_t i = 0; i < p.n; ++i) {
    int32_t pick = -1;
    int64_t most = -1;
    for (const Edge& e : p.succs[i])
      if (fav[e.op] < 0 && e.bytes > most) most = e.bytes, pick = e.op;
    if (pick >= 0) fav[pick] = i;
  }
  return fav;
}

class SctPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "m_sct"; }
  std::vector<std::string> option_keys() const override { return {"sct_lp_max_ops"}; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const int64_t lp_max_ops = option_int(ctx, "sct_lp_max_ops", 600, 0);
    std::vector<int32_t> fav;
    std::string how;
    double lp_makespan = 0.0;
    // The LP stops at the context's deadline, if any (-1: no limit).
    const double lp_seconds =
        ctx.stop_at ? std::max(0.0, std::chrono::duration<double>(*ctx.stop_at - Clock::now()).count()) : -1.0;
    if (p.n <= lp_max_ops) fav = favourite_parents_lp(p, lp_seconds, &lp_makespan);
    if (!fav.empty()) {
      how = "favourite children from the LP relaxation (CLP)";
    } else if (p.n <= lp_max_ops) {
      fav = favourite_parents_greedy(p);
      how = "the LP relaxation (CLP) not proven optimal: favourite children by most bytes";
    } else {
      fav = favourite_parents_greedy(p);
      how = "graph above sct_lp_max_ops: favourite children by most bytes (no LP)";
    }
    int64_t favourites = 0;
    for (int32_t f : fav) favourites += f >= 0;
    PlaceResult out = finish_first_fitting(ctx, p, etf_candidates(p, &fav), name(), started,
                                           "; " + how + ", " + std::to_string(favourites) + " favourite edges");
    out.stats["lp_makespan_s"] = lp_makespan;
    out.stats["favourite_edges"] = static_cast<double>(favourites);
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_m_topo() { return std::make_unique<ListPlacer>("m_topo", ListPlacer::Kind::Topo); }
std::unique_ptr<Placer> make_m_etf() { return std::make_unique<ListPlacer>("m_etf", ListPlacer::Kind::Etf); }
std::unique_ptr<Placer> make_heft() { return std::make_unique<ListPlacer>("heft", ListPlacer::Kind::Heft); }
std::unique_ptr<Placer> make_m_sct() { return std::make_unique<SctPlacer>(); }

}  // namespace placer
