// Mixed-integer program for placement and scheduling (Tarnawski et al. 2020),
// solved with CBC:
//   x[g,d] in {0,1}   group g on device d (sum_d x = 1)
//   s[i] >= 0         start of unit i;   p_i = sum_d t[i,d] x[g(i),d]
//   z[e] in [0,1]     edge e crosses devices: z >= x[g(i),d] - x[g(j),d]
//   s[j] >= s[i] + p_i + c_e z[e]                            precedence
//   q[i,j] >= x[g(i),d] + x[g(j),d] - 1, y[i,j] in {0,1}     same device, order
//   s[j] >= s[i] + p_i - M(1-y) - M(1-q);  s[i] >= s[j] + p_j - M y - M(1-q)
//   sum_g mem[g] x[g,d] <= capacity[d]                       memory
//   C >= s[i] + p_i;  C >= sum_i t[i,d] x[g(i),d]            makespan, load
//   minimize C, then (C fixed at its optimum) sum_e c_e z[e]  bytes crossed
// The second, lexicographic stage picks among equal-makespan solutions the one
// that moves the least data: the model charges nothing for a transfer off its
// critical path, the runtime's FIFO channels and dispatch order do.
// Warm-started from the best of the list schedules and one device (each
// device), memory repaired, timed as the model times it (each crossing edge
// at its mean transfer: a solution of the rows, and big-M from its makespan
// bounds every start); with none that fits, CBC starts without one (big-M from
// a serial schedule). On uneven links the mean is not the simulator's price:
// the note then claims no bound or optimality for the step. For identical
// devices, devices are numbered in order of first use (symmetry breaking).
// Graphs above max_ops are coarsened to max_groups groups first (and the note
// says so; twice as many while no placement of the units fits memory). The
// whole solve keeps to the time limit (the second stage only with a tenth of
// it left). The
// solution and the warm start are replayed as the runtime dispatches them
// (schedule_ready_order, link channels) and the faster is kept: that replay is
// the planned step, the model's makespan is reported beside it.
#include <CbcModel.hpp>
#include <CglClique.hpp>
#include <CglFlowCover.hpp>
#include <CglGomory.hpp>
#include <CglMixedIntegerRounding2.hpp>
#include <CglProbing.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "ilp_model.h"
#include "placer/env/environment.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/timing.h"
#include "placers_common.h"

namespace placer {

// Exposed for tests and benchmarks through the placer's stats.
struct IlpOutcome {
  std::vector<int32_t> unit_device;
  double incumbent = 0.0;
  double bound = 0.0;
  bool optimal = false;
  int64_t nodes = 0;
  int32_t rows = 0, cols = 0;
  bool solved = false;  // CBC ran (not when the time limit was spent before it)
  // The bytes-crossed stage: what of it ran, for the note.
  enum class TieBreak { NotOptimal, NoCrossing, NoTime, Done, TimeLimit } tie_break = TieBreak::NotOptimal;
  struct Warm {
    std::vector<int32_t> unit_device;
    std::string method;
    double makespan = 0.0;  // in the model
  };
  std::optional<Warm> warm;    // none: no warm start fits device memory
  std::string no_fit;          // not empty: no placement found (why), the rest unset
  bool no_fit_proven = false;  // CBC proved that none fits
};

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Devices renumbered in order of first use by groups ranked by first unit.
std::vector<int32_t> canonical_devices(const UnitProblem& p, const std::vector<int32_t>& unit_device,
                                       const std::vector<int32_t>& group_rank_order) {
  std::vector<int32_t> relabel(p.k, -1);
  int32_t next = 0;
  for (int32_t g : group_rank_order) {
    const int32_t d = unit_device[p.members[g][0]];
    if (relabel[d] < 0) relabel[d] = next++;
  }
  for (int32_t d = 0; d < p.k; ++d)
    if (relabel[d] < 0) relabel[d] = next++;
  std::vector<int32_t> out(unit_device.size());
  for (size_t u = 0; u < unit_device.size(); ++u) out[u] = relabel[unit_device[u]];
  return out;
}

// The best list schedule under the model's own timing, in canonical device
// numbering when symmetry breaking is on.
struct WarmStart {
  std::vector<int32_t> dev;
  Schedule sched;
  std::string method;
  std::vector<double> send_at;  // with link channels: each unit's send start
};

// A warm candidate's devices with its groups moved to fit device memory where
// they overfill a device (repair_memory, as mincut and round_robin repair
// theirs); empty when they cannot be.
std::vector<int32_t> fit_warm(const UnitProblem& p, const std::vector<int32_t>& dev, bool* repaired) {
  std::vector<int32_t> gd(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) gd[g] = dev[p.members[g][0]];
  *repaired = !fits_memory(p, gd);
  if (*repaired && !repair_memory(p, gd)) return {};
  return expand_groups(p, gd);
}

// Candidates: the list schedules and everything on one device (each device;
// one of identical devices), memory repaired; none when none fits.
std::optional<WarmStart> best_warm_start(const UnitProblem& p, bool symmetry_breaking,
                                         const std::vector<int32_t>& group_order, bool channels) {
  std::vector<WarmStart> warms;
  auto add_warm = [&](const std::vector<int32_t>& candidate, const std::string& method) {
    bool repaired = false;
    std::vector<int32_t> dev = fit_warm(p, candidate, &repaired);
    if (dev.empty()) return;
    if (symmetry_breaking) dev = canonical_devices(p, dev, group_order);
    WarmStart w{dev, {}, repaired ? method + " (memory repaired)" : method, {}};
    w.sched = channels ? channel_schedule(p, dev, &w.send_at) : schedule_ready_order(p, dev, /*link_channels=*/false);
    warms.push_back(std::move(w));
  };
  try {
    add_warm(list_etf(p).unit_device, "m_etf");
  } catch (const NoFeasiblePlacement&) {}
  try {
    add_warm(list_heft(p).unit_device, "heft");
  } catch (const NoFeasiblePlacement&) {}
  try {
    add_warm(list_topo(p).unit_device, "m_topo");
  } catch (const NoFeasiblePlacement&) {}
  for (int32_t d = 0; d < (p.identical_devices ? 1 : p.k); ++d)
    add_warm(std::vector<int32_t>(p.n, d), p.identical_devices ? "single" : "single " + p.device_names[d]);
  if (warms.empty()) return std::nullopt;
  return *std::min_element(warms.begin(), warms.end(),
                           [](const WarmStart& a, const WarmStart& b) { return a.sched.makespan < b.sched.makespan; });
}

// Units reachable from each unit, as bitsets (units are topologically ordered).
std::vector<std::vector<uint64_t>> reachability(const UnitProblem& p) {
  const int32_t n = p.n;
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  for (int32_t u = n - 1; u >= 0; --u)
    for (const Edge& e : p.succs[u]) {
      reach[u][e.op >> 6] |= uint64_t{1} << (e.op & 63);
      for (size_t w = 0; w < words; ++w) reach[u][w] |= reach[e.op][w];
    }
  return reach;
}

// Columns x, s, C, z and (y, q), with bounds on s and C from heads (earliest
// starts) and tails (work after an op) with every op on its fastest device and
// free transfers.
void add_columns(IlpModel& m, const UnitProblem& p) {
  const int32_t n = p.n, k = p.k, G = p.groups();
  const double M = m.M;
  m.xcol.resize(static_cast<size_t>(G) * k);
  for (int32_t g = 0; g < G; ++g)
    for (int32_t d = 0; d < k; ++d) m.xcol[g * k + d] = m.col(0.0, 1.0, true);
  std::vector<double> fastest(n), head(n, 0.0);
  m.tail.assign(n, 0.0);
  double cp = 0.0, work = 0.0;
  for (int32_t u = 0; u < n; ++u) {
    fastest[u] = kInf;
    for (int32_t d = 0; d < k; ++d) fastest[u] = std::min(fastest[u], p.c(u, d));
    work += fastest[u];
    for (const Edge& e : p.preds[u]) head[u] = std::max(head[u], head[e.op] + fastest[e.op]);
  }
  for (int32_t u = n - 1; u >= 0; --u) {
    for (const Edge& e : p.succs[u]) m.tail[u] = std::max(m.tail[u], fastest[e.op] + m.tail[e.op]);
    cp = std::max(cp, head[u] + fastest[u] + m.tail[u]);
  }
  m.scol.resize(n);
  for (int32_t i = 0; i < n; ++i)
    m.scol[i] = m.col(std::min(head[i], M), std::max(0.0, M - fastest[i] - m.tail[i]), false);
  m.ccol = m.col(std::min(M, std::max(cp, work / k)), M, false);
  m.obj[m.ccol] = 1.0;
  for (int32_t j = 0; j < n; ++j)
    for (const Edge& e : p.preds[j]) {
      const bool same = p.group_of[e.op] == p.group_of[j];
      const double comm = same ? 0.0 : p.mean_transfer(e.bytes);
      m.edges.push_back({e.op, j, same || k == 1 ? -1 : m.col(0.0, 1.0, false), comm});
    }
  const std::vector<std::vector<uint64_t>> reach = reachability(p);
  auto reaches = [&](int32_t a, int32_t b) { return (reach[a][b >> 6] >> (b & 63)) & 1; };
  for (int32_t a = 0; a < n; ++a)
    for (int32_t b = a + 1; b < n; ++b) {
      if (reaches(a, b) || reaches(b, a)) continue;
      bool zero = true;
      for (int32_t d = 0; d < k && zero; ++d) zero = p.c(a, d) <= 0 && p.c(b, d) <= 0;
      if (zero) continue;
      const bool same = p.group_of[a] == p.group_of[b];
      if (!same && k == 1) continue;
      const int y = m.col(0.0, 1.0, true);
      m.pairs.push_back({a, b, y, same ? -1 : m.col(0.0, 1.0, false)});
    }
}

// Rows: assignment, memory, load, precedence with transfers, makespan, and the
// disjunctive order of every pair that may share a device.
void add_rows(IlpModel& m, const UnitProblem& p) {
  const int32_t n = p.n, k = p.k, G = p.groups();
  const double M = m.M;
  const double inf = COIN_DBL_MAX;
  // p_i as -sum_d t[i,d] x (coefficient sign s).
  auto put_p = [&](int32_t i, double sign) {
    for (int32_t d = 0; d < k; ++d)
      if (p.c(i, d) != 0) m.put(m.xcol[p.group_of[i] * k + d], sign * p.c(i, d));
  };
  for (int32_t g = 0; g < G; ++g) {
    for (int32_t d = 0; d < k; ++d) m.put(m.xcol[g * k + d], 1.0);
    m.end_row(1.0, 1.0);
  }
  for (int32_t d = 0; d < k; ++d) {
    for (int32_t g = 0; g < G; ++g)
      if (p.group_mem[g] > 0) m.put(m.xcol[g * k + d], static_cast<double>(p.group_mem[g]));
    m.end_row(-inf, static_cast<double>(p.capacity[d]));
    // C - sum_i t[i,d] x >= 0
    m.put(m.ccol, 1.0);
    for (int32_t i = 0; i < n; ++i)
      if (p.c(i, d) != 0) m.put(m.xcol[p.group_of[i] * k + d], -p.c(i, d));
    m.end_row(0.0, inf);
  }
  for (const IlpModel::EdgeVar& e : m.edges) {
    // s_j - s_i - p_i - c z >= 0
    m.put(m.scol[e.to], 1.0);
    m.put(m.scol[e.from], -1.0);
    put_p(e.from, -1.0);
    if (e.col >= 0 && e.comm > 0) m.put(e.col, -e.comm);
    m.end_row(0.0, inf);
    if (e.col >= 0)
      for (int32_t d = 0; d < k; ++d) {  // z - x[gi,d] + x[gj,d] >= 0
        m.put(e.col, 1.0);
        m.put(m.xcol[p.group_of[e.from] * k + d], -1.0);
        m.put(m.xcol[p.group_of[e.to] * k + d], 1.0);
        m.end_row(0.0, inf);
      }
  }
  for (int32_t i = 0; i < n; ++i) {
    m.put(m.ccol, 1.0);  // C - s_i - p_i >= tail_i
    m.put(m.scol[i], -1.0);
    put_p(i, -1.0);
    m.end_row(m.tail[i], inf);
  }
  for (const IlpModel::PairVar& pv : m.pairs) {
    if (pv.q >= 0)
      for (int32_t d = 0; d < k; ++d) {  // q - x[ga,d] - x[gb,d] >= -1
        m.put(pv.q, 1.0);
        m.put(m.xcol[p.group_of[pv.a] * k + d], -1.0);
        m.put(m.xcol[p.group_of[pv.b] * k + d], -1.0);
        m.end_row(-1.0, inf);
      }
    // a before b: s_b - s_a - p_a - M y - M q >= -2M
    m.put(m.scol[pv.b], 1.0);
    m.put(m.scol[pv.a], -1.0);
    put_p(pv.a, -1.0);
    m.put(pv.y, -M);
    if (pv.q >= 0) m.put(pv.q, -M);
    m.end_row(pv.q >= 0 ? -2 * M : -M, inf);
    // b before a: s_a - s_b - p_b + M y - M q >= -M
    m.put(m.scol[pv.a], 1.0);
    m.put(m.scol[pv.b], -1.0);
    put_p(pv.b, -1.0);
    m.put(pv.y, M);
    if (pv.q >= 0) m.put(pv.q, -M);
    m.end_row(pv.q >= 0 ? -M : 0.0, inf);
  }
}

// Device d > 0 is used by group r only if device d-1 is used by an earlier
// group (groups ranked by first unit).
void add_symmetry_rows(IlpModel& m, const UnitProblem& p, const std::vector<int32_t>& group_order) {
  const int32_t k = p.k;
  for (size_t r = 0; r < group_order.size(); ++r)
    for (int32_t d = 1; d < k; ++d) {
      const int32_t g = group_order[r];
      if (static_cast<int32_t>(r) < d) {
        m.ub[m.xcol[g * k + d]] = 0.0;
        continue;
      }
      m.put(m.xcol[g * k + d], -1.0);
      for (size_t r2 = 0; r2 < r; ++r2) m.put(m.xcol[group_order[r2] * k + d - 1], 1.0);
      m.end_row(0.0, COIN_DBL_MAX);
    }
}

// The warm start as a full solution of the model.
std::vector<double> warm_solution(const IlpModel& m, const UnitProblem& p, const WarmStart& warm) {
  const int32_t n = p.n, k = p.k, G = p.groups();
  std::vector<double> sol(m.cols(), 0.0);
  for (int32_t g = 0; g < G; ++g) sol[m.xcol[g * k + warm.dev[p.members[g][0]]]] = 1.0;
  for (int32_t i = 0; i < n; ++i) sol[m.scol[i]] = warm.sched.start[i];
  double load_max = 0.0;
  for (int32_t d = 0; d < k; ++d) {
    double l = 0.0;
    for (int32_t i = 0; i < n; ++i)
      if (warm.dev[i] == d) l += p.c(i, d);
    load_max = std::max(load_max, l);
  }
  sol[m.ccol] = std::max({warm.sched.makespan, load_max, m.lb[m.ccol]});
  for (const IlpModel::EdgeVar& e : m.edges)
    if (e.col >= 0) sol[e.col] = warm.dev[e.from] != warm.dev[e.to] ? 1.0 : 0.0;
  channel_warm_values(m, p, warm.dev, warm.send_at, &sol);
  for (const IlpModel::PairVar& pv : m.pairs) {
    const bool same_dev = warm.dev[pv.a] == warm.dev[pv.b];
    if (pv.q >= 0) sol[pv.q] = same_dev ? 1.0 : 0.0;
    sol[pv.y] = warm.sched.start[pv.a] <= warm.sched.start[pv.b] ? 1.0 : 0.0;
  }
  return sol;
}

// The cut generators, alive while CBC runs.
struct CutGenerators {
  CglProbing probing;
  CglGomory gomory;
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  CglClique clique;

  void add_to(CbcModel& model) {
    probing.setUsingObjective(true);
    probing.setMaxPass(1);
    probing.setMaxProbe(50);
    probing.setMaxLook(20);
    gomory.setLimit(100);
    clique.setStarCliqueReport(false);
    clique.setRowCliqueReport(false);
    model.addCutGenerator(&probing, -1, "Probing");
    model.addCutGenerator(&gomory, -1, "Gomory");
    model.addCutGenerator(&mir, -1, "MIR2");
    model.addCutGenerator(&flow, -1, "FlowCover");
    model.addCutGenerator(&clique, -1, "Clique");
  }
};

// Branch and bound with CBC from the warm solution (none: empty), within the time limit.
CbcResult solve_cbc(const IlpModel& m, const std::vector<double>& warm, double time_limit_s) {
  double warm_objective = 0.0;
  for (size_t c = 0; c < warm.size(); ++c) warm_objective += m.obj[c] * warm[c];
  const int ncols = m.cols();
  CoinPackedMatrix matrix(false, m.ri.data(), m.ci.data(), m.vv.data(), static_cast<CoinBigIndex>(m.vv.size()));
  matrix.setDimensions(m.rows, ncols);
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, m.lb.data(), m.ub.data(), m.obj.data(), m.rlb.data(), m.rub.data());
  for (int c = 0; c < ncols; ++c)
    if (m.integer[c]) solver.setInteger(c);

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  limit_cbc_seconds(model, time_limit_s);
  model.setAllowableGap(1e-9);
  model.setAllowableFractionGap(1e-6);
  CutGenerators cuts;
  cuts.add_to(model);
  if (!warm.empty()) model.setBestSolution(warm.data(), ncols, warm_objective, true);
  model.branchAndBound();
  return read_cbc(model, ncols);
}

// Each group on the device with the largest x[g,d] in the solution.
std::vector<int32_t> read_unit_devices(const IlpModel& m, const UnitProblem& p, const std::vector<double>& best) {
  const int32_t k = p.k;
  std::vector<int32_t> unit_device(p.n, 0);
  for (int32_t g = 0; g < p.groups(); ++g) {
    int32_t pick = 0;
    for (int32_t d = 1; d < k; ++d)
      if (best[m.xcol[g * k + d]] > best[m.xcol[g * k + pick]]) pick = d;
    for (int32_t u : p.members[g]) unit_device[u] = pick;
  }
  return unit_device;
}

// Big-M without a warm start: every unit on its slowest device, one after
// another, each crossing edge's transfer twice (its channel hold and its
// arrival) after it: a schedule of that length exists whenever a placement fits.
double serial_makespan(const UnitProblem& p) {
  double total = 0.0;
  for (int32_t u = 0; u < p.n; ++u) {
    double slowest = 0.0;
    for (int32_t d = 0; d < p.k; ++d) slowest = std::max(slowest, p.c(u, d));
    total += slowest;
    for (const Edge& e : p.succs[u])
      if (p.group_of[e.op] != p.group_of[u]) total += 2 * p.mean_transfer(e.bytes);
  }
  return total;
}

IlpModel build_model(const UnitProblem& p, double makespan_bound, bool symmetry_breaking,
                     const std::vector<int32_t>& group_order, bool channels) {
  IlpModel m;
  m.M = makespan_bound * (1.0 + 1e-9) + 1e-12;
  add_columns(m, p);
  if (channels) add_channel_columns(m, p, channel_senders(p));
  add_rows(m, p);
  add_channel_rows(m, p);
  if (symmetry_breaking && p.k > 1) add_symmetry_rows(m, p, group_order);
  return m;
}

// Stage two: C at most its optimum, minimize the transfer time crossed, from
// stage one's solution, in what is left of the limit (skipped when under a
// tenth of it, or 10 ms, is left, or when no edge can cross devices).
void tie_break(IlpModel& m, const UnitProblem& p, const CbcResult& r, double left_s, double limit_s,
               IlpOutcome* out) {
  const bool crossing =
      std::any_of(m.edges.begin(), m.edges.end(), [](const IlpModel::EdgeVar& e) { return e.col >= 0; });
  if (!crossing) {
    out->tie_break = IlpOutcome::TieBreak::NoCrossing;
    return;
  }
  if (left_s < std::max(0.01, 0.1 * limit_s)) {
    out->tie_break = IlpOutcome::TieBreak::NoTime;
    return;
  }
  m.ub[m.ccol] = r.objective * (1.0 + 1e-9) + 1e-15;
  m.obj.assign(m.cols(), 0.0);
  for (const IlpModel::EdgeVar& e : m.edges)
    if (e.col >= 0) m.obj[e.col] = e.comm;
  const CbcResult r2 = solve_cbc(m, r.best, left_s);
  out->nodes += r2.nodes;
  out->tie_break = r2.optimal ? IlpOutcome::TieBreak::Done : IlpOutcome::TieBreak::TimeLimit;
  if (!r2.best.empty()) out->unit_device = read_unit_devices(m, p, r2.best);
}

// Stage one from the warm start, if any (none: CBC must find a placement, and
// NoFeasiblePlacement says why when it does not). The whole solve keeps to
// time_limit_s from `started`: CBC is skipped once it is spent (with a warm start).
IlpOutcome solve_ilp(const UnitProblem& p, double time_limit_s, Clock::time_point started, bool symmetry_breaking,
                     bool channels) {
  IlpOutcome out;
  const std::vector<int32_t> group_order = groups_by_first_op(p);
  const std::optional<WarmStart> warm = best_warm_start(p, symmetry_breaking, group_order, channels);
  if (warm) out.warm = IlpOutcome::Warm{warm->dev, warm->method, warm->sched.makespan};
  IlpModel m = build_model(p, warm ? warm->sched.makespan : serial_makespan(p), symmetry_breaking, group_order,
                           channels);
  out.rows = m.rows;
  out.cols = m.cols();
  const double left = time_limit_s - seconds_since(started);
  CbcResult r;
  if (left > 0 || !warm) {
    r = solve_cbc(m, warm ? warm_solution(m, p, *warm) : std::vector<double>{}, std::max(left, 1e-3));
    out.solved = true;
  }
  if (!warm && r.best.empty()) {
    out.no_fit = std::string("ilp: no warm start fits device memory (list schedules and single devices, "
                             "repaired), and CBC ") +
                 (r.infeasible ? "proved that no placement fits" : "found none within the time limit");
    out.no_fit_proven = r.infeasible;
    return out;
  }
  out.nodes = r.nodes;
  out.optimal = r.optimal;
  out.incumbent = !r.best.empty() ? r.objective : warm->sched.makespan;
  out.unit_device = !r.best.empty() ? read_unit_devices(m, p, r.best) : warm->dev;
  out.bound = std::min(std::max(r.best_possible, m.lb[m.ccol]), out.incumbent);
  if (out.optimal && !r.best.empty())
    tie_break(m, p, r, time_limit_s - seconds_since(started), time_limit_s, &out);
  if (out.optimal) out.bound = out.incumbent;
  return out;
}

// At most max_chunks chunks, and no more than the groups (each a chunk).
Grouping phase_chunks(const UnitProblem& ops, const Graph& graph, int64_t max_chunks) {
  const int32_t G = ops.groups();
  const int32_t chunks = static_cast<int32_t>(std::clamp<int64_t>(max_chunks, 1, std::max(G, 1)));
  std::vector<int32_t> order(G);
  for (int32_t g = 0; g < G; ++g) order[g] = g;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return ops.members[a][0] < ops.members[b][0]; });
  double total = 0.0;
  std::vector<double> work(G, 0.0);
  for (int32_t g = 0; g < G; ++g) {
    for (int32_t u : ops.members[g]) work[g] += ops.mean_cost(u);
    total += work[g];
  }
  std::vector<int32_t> chunk_of_group(G, 0);
  double acc = 0.0;
  for (int32_t g : order) {
    const double mid = acc + work[g] / 2;
    chunk_of_group[g] =
        std::min<int32_t>(chunks - 1, static_cast<int32_t>(total > 0 ? mid / total * chunks : 0));
    acc += work[g];
  }
  Grouping out;
  out.group_of.resize(ops.n);
  std::vector<int32_t> index(2 * static_cast<size_t>(chunks), -1);
  for (int32_t v = 0; v < ops.n; ++v) {
    const bool forward = graph.op(OpId(v)).phase == Phase::Forward;
    const int32_t key = 2 * chunk_of_group[ops.group_of[v]] + (forward ? 0 : 1);
    if (index[key] < 0) {
      index[key] = static_cast<int32_t>(out.members.size());
      out.members.emplace_back();
    }
    out.group_of[v] = index[key];
    out.members[index[key]].push_back(OpId(v));
  }
  return out;
}

// The problem the ILP solves above max_ops: the ops coarsened into units.
struct CoarseUnits {
  UnitProblem problem;
  std::vector<int32_t> unit_of_op;
  std::string note;
};

CoarseUnits coarsen_for_ilp(const PlaceContext& ctx, const UnitProblem& ops, int64_t max_ops, int64_t max_groups) {
  const Graph& graph = *ctx.graph;
  const auto cost = [&](OpId op) { return ops.mean_cost(op.value); };
  Grouping grouping;
  std::string how;
  if (!graph.is_training()) {
    grouping = coarsen(graph, static_cast<int32_t>(max_groups), cost);
    how = "coarsen()";
  }
  if (grouping.size() < 2) {
    // Training graphs: forward and backward of a co-location group make
    // the group quotient cyclic, so coarsen() collapses it. Cut the groups
    // (by first op) into contiguous chunks balanced by work, and split each
    // chunk into its forward and its backward/update ops: the chunks'
    // quotient is then acyclic and each chunk's two halves share a device.
    grouping = phase_chunks(ops, graph, std::max<int64_t>(1, max_groups / 2));
    how = "forward/backward chunks";
  }
  CoarseUnits c;
  c.problem = make_group_problem(ops, grouping, &c.unit_of_op);
  c.note = "; coarsened " + std::to_string(ops.n) + " ops to " + std::to_string(c.problem.n) + " units in " +
           std::to_string(c.problem.groups()) + " groups by " + how +
           " (graph above max_ops=" + std::to_string(max_ops) + "); " +
           std::string("scope: the bound and any optimality hold for these ") + std::to_string(c.problem.n) +
           " units, not for the " + std::to_string(ops.n) + "-op graph";
  return c;
}

struct ChannelChoice {
  bool channels = false;
  std::string note;
};

// Link channels in the model on op-level problems (default) while the
// sender pairs stay few. A coarsened unit sends everything once, at its
// end, which the runtime does not: there the model leaves channels out
// (nmt k80x4 with them: a 49% gap at the time limit, 436 ms simulated;
// without: proven in 1.7 s, 394 ms).
ChannelChoice choose_channels(const PlaceContext& ctx, const UnitProblem& p, bool op_level) {
  const int64_t senders = static_cast<int64_t>(channel_senders(p).size());
  const int64_t pairs = senders * (senders - 1) / 2;
  const int64_t max_pairs = option_int(ctx, "channel_pairs", 3000, 0);
  const int64_t channels_option = option_int(ctx, "channels", op_level ? 1 : 0, 0, 1);
  const bool asked = channels_option != 0;
  // The channel rows grow with the sender pairs times the device pairs: 1.7 million rows on 100 devices took
  // 21 s and 2.9 GB before CBC started. Up to 6 device pairs (4 devices) channel_pairs alone decides.
  const int64_t device_pairs = static_cast<int64_t>(p.k) * (p.k - 1) / 2;
  constexpr int64_t kMaxChannelTerms = 3000 * 6;
  ChannelChoice choice;
  choice.channels = asked && pairs <= max_pairs && pairs * device_pairs <= kMaxChannelTerms;
  choice.note = choice.channels ? "; link channels modelled (FIFO, one send per unit)"
                : !asked        ? (op_level ? "; link channels not modelled (channels=0)"
                                            : "; link channels not modelled on coarsened units (channels=1 to force)")
                : pairs > max_pairs
                    ? "; link channels not modelled (" + std::to_string(pairs) + " sender pairs > channel_pairs=" +
                          std::to_string(max_pairs) + ")"
                    : "; link channels not modelled (" + std::to_string(pairs) + " sender pairs x " +
                          std::to_string(device_pairs) + " device pairs > " + std::to_string(kMaxChannelTerms) + ")";
  return choice;
}

// The solution's and the warm start's replays as the runtime dispatches them.
struct Replays {
  double solved_step = 0.0, warm_step = 0.0;
  bool keep_warm = false;
  double planned = 0.0;  // the kept one's
};

// How the solve ended: optimal (on unequal links, in the model only), cut by
// the limit, or not run; and what the bytes-crossed stage did.
std::string solve_status(const IlpOutcome& r, bool exact) {
  using T = IlpOutcome::TieBreak;
  std::string s = !r.solved   ? " (time limit spent before CBC ran)"
                  : !r.optimal ? " (time limit)"
                  : exact      ? " (proven optimal)"
                               : " (optimal in the model only)";
  if (!exact)
    s += "; links differ: the model prices every transfer at the mean link, so neither its bound nor its "
         "optimality holds for the step";
  if (r.tie_break == T::Done) s += "; fewest bytes crossed among optimal solutions";
  if (r.tie_break == T::TimeLimit) s += "; bytes-crossed stage hit the time limit";
  if (r.tie_break == T::NoTime) s += "; bytes-crossed stage skipped (little of the time limit left)";
  return s;
}

std::string outcome_note(const IlpOutcome& r, const Replays& rp, double gap, bool exact, bool symmetry) {
  const std::string warm = !r.warm ? "no warm start fits device memory (CBC started without one)"
                                   : "warm start " + r.warm->method + " " + format_number(r.warm->makespan) +
                                         " s in the model, " + format_number(rp.warm_step) + " s replayed";
  return "ilp: planned step " + format_number(rp.planned) + " s as the runtime dispatches (" +
         (rp.keep_warm ? "kept the warm start, faster than the solution's replay" : "the solution") +
         "); model makespan " + format_number(r.incumbent) + " s, " + (exact ? "bound " : "model bound ") +
         format_number(r.bound) + " s, gap " + format_number("%.2f", 100.0 * gap) + "%" + solve_status(r, exact) +
         "; " + warm + "; " + std::to_string(r.rows) + " rows, " + std::to_string(r.cols) + " cols, " +
         std::to_string(r.nodes) + " nodes" + (symmetry ? "; symmetry breaking on identical devices" : "");
}

// max_groups' upper limit: coarsen() counts groups in int32, and a chunk
// index per group and phase is allocated (2^32 of them took 17 GB).
constexpr int64_t kMaxGroups = 1000000;

// The ILP on the op-level problem, or above max_ops on units coarsened to
// max_groups groups; where CBC proves that no placement of those units fits
// device memory (chunks too large), again with twice the groups, up to the ops.
struct IlpRun {
  CoarseUnits coarse;
  bool coarsened = false, symmetry = false;
  ChannelChoice choice;
  IlpOutcome r;
};

void run_ilp(const PlaceContext& ctx, const UnitProblem& ops, Clock::time_point started, IlpRun* run) {
  const int64_t max_ops = option_int(ctx, "max_ops", 40, 1);
  const int64_t asked = option_int(ctx, "max_groups", 24, 1, kMaxGroups);
  run->coarsened = ops.n > max_ops;
  for (int64_t groups = asked;; groups = std::min<int64_t>(2 * groups, ops.n)) {
    if (run->coarsened) run->coarse = coarsen_for_ilp(ctx, ops, max_ops, groups);
    const UnitProblem& p = run->coarsened ? run->coarse.problem : ops;
    run->symmetry = p.identical_devices && option_int(ctx, "symmetry_breaking", 1, 0, 1) != 0;
    run->choice = choose_channels(ctx, p, !run->coarsened);
    run->r = solve_ilp(p, ctx.time_limit_s, started, run->symmetry, run->choice.channels);
    if (run->r.no_fit.empty()) {
      if (groups != asked)
        run->coarse.note += "; max_groups raised from " + std::to_string(asked) + " to " + std::to_string(groups) +
                            ": no placement of the coarser units fits device memory";
      return;
    }
    if (!run->coarsened || !run->r.no_fit_proven || groups >= ops.n) throw NoFeasiblePlacement(run->r.no_fit);
  }
}

class IlpPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "ilp"; }
  std::vector<std::string> option_keys() const override {
    return {"max_ops", "max_groups", "channels", "channel_pairs", "symmetry_breaking"};
  }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& ops, Clock::time_point started) override {
    IlpRun run;
    run_ilp(ctx, ops, started, &run);
    const IlpOutcome& r = run.r;
    const UnitProblem* p = run.coarsened ? &run.coarse.problem : &ops;
    const CoarseUnits& coarse = run.coarse;
    const bool symmetry = run.symmetry, channels = run.choice.channels;
    const std::string& channel_note = run.choice.note;
    const auto to_ops = [&](const std::vector<int32_t>& unit_device) {
      std::vector<int32_t> op_device(ops.n);
      for (int32_t v = 0; v < ops.n; ++v) op_device[v] = unit_device[p == &ops ? v : coarse.unit_of_op[v]];
      return op_device;
    };
    // The solution and the warm start replayed as the runtime dispatches them,
    // on the op-level problem with link channels: the faster is kept.
    Replays rp;
    std::vector<int32_t> op_device = to_ops(r.unit_device);
    rp.solved_step = schedule_ready_order(ops, op_device).makespan;
    const std::vector<int32_t> warm_ops = r.warm ? to_ops(r.warm->unit_device) : op_device;
    rp.warm_step = r.warm ? schedule_ready_order(ops, warm_ops).makespan : kInf;
    rp.keep_warm = rp.warm_step < rp.solved_step;
    if (rp.keep_warm) op_device = warm_ops;
    rp.planned = rp.keep_warm ? rp.warm_step : rp.solved_step;
    // Every link alike: the model's transfers (each at UnitProblem::mean_transfer) are the simulator's.
    const bool exact = uniform_links(*p, 1e-9);
    const double gap = r.incumbent > 0 ? (r.incumbent - r.bound) / r.incumbent : 0.0;
    const std::string note = outcome_note(r, rp, gap, exact, symmetry);
    PlaceResult out = finish(ctx, op_device, name(), started, note + channel_note + coarse.note);
    out.stats["model_makespan_s"] = rp.planned;
    out.stats["solution_replayed_s"] = rp.solved_step;
    out.stats["kept_warm_start"] = rp.keep_warm ? 1.0 : 0.0;
    out.stats["incumbent_s"] = r.incumbent;
    out.stats["bound_s"] = r.bound;
    out.stats["gap"] = gap;
    out.stats["optimal"] = r.optimal && exact ? 1.0 : 0.0;
    if (r.warm && r.warm->makespan > 0.0) out.stats["warm_start_s"] = r.warm->makespan;  // (none fits: none)
    out.stats["nodes"] = static_cast<double>(r.nodes);
    out.stats["units"] = p->n;
    out.stats["coarsened"] = p == &ops ? 0.0 : 1.0;
    out.stats["channels"] = channels ? 1.0 : 0.0;
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_ilp() { return std::make_unique<IlpPlacer>(); }

}  // namespace placer
