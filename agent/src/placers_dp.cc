// Dynamic programming over contiguous splits (PipeDream; Tarnawski et al.
// 2020): the co-location groups are cut into at most k contiguous stages,
// stage s on device s, minimizing the slowest stage (throughput) or the sum
// of stages and boundary transfers (latency), under per-device memory.
// "Contiguous" means a difference of two ideals (down-sets) of the forward
// DAG of groups; when there are too many ideals, the DP runs over prefixes
// of three orders of the groups instead and says so. By default (objective
// step) both objectives' optimal splits are replayed as the runtime
// dispatches a (non-pipelined) training step, and the fastest is kept.
// Under the environment's pipeline objective, pipeline_dp.h's DP answers instead.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <unordered_map>

#include "pipeline_dp.h"
#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Ideals {
  std::vector<std::vector<uint64_t>> sets;  // bitsets over group ranks
  std::vector<int32_t> size;
  std::vector<std::vector<double>> cost;  // [ideal][device]
  std::vector<int64_t> mem;
  std::vector<int64_t> cut;  // bytes between the ideal and the rest
  bool prefixes = false;     // fallback: ideal i = first i ranks
};

struct SplitResult {
  double objective = kInf;
  std::vector<int32_t> group_device;
};

struct Candidate {
  std::string order;      // of the groups: first op, level, depth first
  std::string objective;  // throughput or latency
  SplitResult split;
  double step_s;  // the split replayed as the runtime dispatches
};

// Groups ranked by an order: the forward DAG (edges going up in rank), the
// bytes between groups, and each group's cost and memory by rank.
struct Ranked {
  std::vector<std::vector<int32_t>> fwd_preds;
  std::vector<std::unordered_map<int32_t, int64_t>> adj;
  std::vector<std::vector<double>> cost;  // [rank][device]
  std::vector<int64_t> mem;
};

Ranked rank_groups(const UnitProblem& p, const std::vector<int32_t>& by_rank) {
  const int32_t G = p.groups();
  std::vector<int32_t> rank(G);
  for (int32_t r = 0; r < G; ++r) rank[by_rank[r]] = r;
  Ranked out;
  out.fwd_preds.resize(G);
  out.adj.resize(G);
  for (int32_t v = 0; v < p.n; ++v)
    for (const Edge& e : p.preds[v]) {
      const int32_t a = rank[p.group_of[e.op]], b = rank[p.group_of[v]];
      if (a == b) continue;
      out.adj[a][b] += e.bytes;
      out.adj[b][a] += e.bytes;
      if (a < b) out.fwd_preds[b].push_back(a);
    }
  for (auto& v : out.fwd_preds) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  out.cost.assign(G, std::vector<double>(p.k));
  out.mem.resize(G);
  for (int32_t r = 0; r < G; ++r) {
    for (int32_t d = 0; d < p.k; ++d) out.cost[r][d] = p.group_cost(by_rank[r], d);
    out.mem[r] = p.group_mem[by_rank[r]];
  }
  return out;
}

// Orders of the groups, each by the first of its units in an order of the
// units: by id (the graph's topological order); by level (longest path from
// a source, ties by id); depth first (Kahn's algorithm taking the unit made
// ready last, so that chains such as an RNN layer over its steps stay together).
std::vector<std::pair<std::string, std::vector<int32_t>>> group_orders(const UnitProblem& p) {
  auto groups_by = [&](const std::vector<int64_t>& key) {
    std::vector<int64_t> first(p.groups(), std::numeric_limits<int64_t>::max());
    for (int32_t u = 0; u < p.n; ++u) first[p.group_of[u]] = std::min(first[p.group_of[u]], key[u]);
    std::vector<int32_t> order(p.groups());
    for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return first[a] != first[b] ? first[a] < first[b] : p.members[a][0] < p.members[b][0];
    });
    return order;
  };
  std::vector<int64_t> by_id(p.n), by_level(p.n), depth_first(p.n);
  std::vector<int64_t> level(p.n, 0);
  for (int32_t u = 0; u < p.n; ++u) {
    by_id[u] = u;
    for (const Edge& e : p.preds[u]) level[u] = std::max(level[u], level[e.op] + 1);
    by_level[u] = level[u] * p.n + u;
  }
  std::vector<int32_t> missing(p.n), stack;
  for (int32_t u = p.n - 1; u >= 0; --u) {
    missing[u] = static_cast<int32_t>(p.preds[u].size());
    if (missing[u] == 0) stack.push_back(u);
  }
  for (int64_t next = 0; !stack.empty(); ++next) {
    const int32_t u = stack.back();
    stack.pop_back();
    depth_first[u] = next;
    for (auto it = p.succs[u].rbegin(); it != p.succs[u].rend(); ++it)
      if (--missing[it->op] == 0) stack.push_back(it->op);
  }
  return {{"first op", groups_by(by_id)}, {"level", groups_by(by_level)}, {"depth first", groups_by(depth_first)}};
}

// A boundary transfer at the links' mean cost (none for no bytes).
struct MeanLink {
  explicit MeanLink(const UnitProblem& p)
      : alpha(p.mean_transfer(0)),
        per_byte(p.mean_transfer(1 << 30) / static_cast<double>(1 << 30) - alpha / (1 << 30)) {}
  double operator()(int64_t bytes) const { return bytes > 0 ? alpha + bytes * per_byte : 0.0; }
  double alpha, per_byte;
};

// The DP over chains of ideals, stage s on device s. value[s][j]: the best
// objective with ideal j covered by devices 0..s; from[s][j]: the ideal the
// last stage starts after. Stages are filled in order, one per call.
class SplitDp {
 public:
  SplitDp(const UnitProblem& p, const Ideals& id, bool latency)
      : p_(p),
        id_(id),
        latency_(latency),
        comm_(p),
        n_(static_cast<int32_t>(id.size.size())),
        value_(p.k, std::vector<double>(n_, kInf)),
        from_(p.k, std::vector<int32_t>(n_, -1)) {}

  // Every pair of nested ideals whose difference fits device s.
  void stage_over_ideals(int32_t s) {
    for (int32_t j = 0; j < n_; ++j)
      for (int32_t i = 0; i < n_; ++i) {
        if (id_.size[i] > id_.size[j]) break;  // sorted by size
        if (!subset(i, j) || id_.mem[j] - id_.mem[i] > p_.capacity[s]) continue;
        relax(s, i, j);
      }
  }

  // Prefixes, throughput: a stage's memory and work only grow as i goes
  // down, so stop once it no longer fits, or once its work alone exceeds the
  // best value found.
  void throughput_stage_over_prefixes(int32_t s) {
    for (int32_t j = 0; j < n_; ++j)
      for (int32_t i = j; i >= 0; --i) {
        if (s == 0 && i > 0) i = 0;  // the first stage starts at the empty prefix
        if (id_.mem[j] - id_.mem[i] > p_.capacity[s]) break;
        if (id_.cost[j][s] - id_.cost[i][s] > value_[s][j]) break;
        relax(s, i, j);
      }
  }

  // Prefixes, latency, in linear time: the value of stage (i, j] is key(i) +
  // cost[j][s], so the best i is the minimum key over the window of i whose
  // stage fits, which only moves right as j grows (a monotone deque).
  void latency_stage_over_prefixes(int32_t s) {
    auto key = [&](int32_t i) { return (s == 0 ? 0.0 : value_[s - 1][i]) - id_.cost[i][s] + comm_(id_.cut[i]); };
    auto usable = [&](int32_t i) { return s == 0 ? i == 0 : value_[s - 1][i] < kInf; };
    std::deque<int32_t> window;
    int32_t lo = 0;
    for (int32_t j = 0; j < n_; ++j) {
      if (j > 0 && usable(j - 1)) {
        while (!window.empty() && key(window.back()) > key(j - 1)) window.pop_back();
        window.push_back(j - 1);
      }
      while (lo < j && id_.mem[j] - id_.mem[lo] > p_.capacity[s]) ++lo;
      while (!window.empty() && window.front() < lo) window.pop_front();
      if (!window.empty()) relax(s, window.front(), j);
      if (usable(j)) relax(s, j, j);
    }
  }

  // The split of the whole graph over all k devices (no objective if none fits).
  SplitResult split(const std::vector<int32_t>& by_rank) const {
    SplitResult out;
    const int32_t all = n_ - 1;
    const int32_t G = static_cast<int32_t>(by_rank.size());
    PLACER_CHECK(id_.size[all] == G, "dp: last ideal is not the whole graph");
    if (value_[p_.k - 1][all] == kInf) return out;
    out.objective = value_[p_.k - 1][all];
    out.group_device.assign(G, 0);
    int32_t j = all;
    for (int32_t s = p_.k - 1; s >= 0; --s) {
      const int32_t i = from_[s][j];
      for (int32_t r = 0; r < G; ++r)
        if (contains(j, r) && !contains(i, r)) out.group_device[by_rank[r]] = s;
      j = i;
    }
    return out;
  }

 private:
  bool contains(int32_t ideal, int32_t rank) const {
    return id_.prefixes ? rank < id_.size[ideal] : ((id_.sets[ideal][rank >> 6] >> (rank & 63)) & 1);
  }

  bool subset(int32_t a, int32_t b) const {  // ideal a within ideal b
    if (id_.prefixes) return a <= b;
    if (id_.size[a] > id_.size[b]) return false;
    for (size_t w = 0; w < id_.sets[0].size(); ++w)
      if (id_.sets[a][w] & ~id_.sets[b][w]) return false;
    return true;
  }

  // Stage s covering ideal j minus ideal i after devices 0..s-1 covered i.
  void relax(int32_t s, int32_t i, int32_t j) {
    const double prev = s == 0 ? (i == 0 ? 0.0 : kInf) : value_[s - 1][i];
    if (prev == kInf) return;
    double v;
    if (i == j) {
      v = prev;
    } else {
      const double work = id_.cost[j][s] - id_.cost[i][s];
      v = latency_ ? prev + work + comm_(id_.cut[i]) : std::max(prev, work + comm_(id_.cut[i]) + comm_(id_.cut[j]));
    }
    // Ties go to the smallest i, whichever way i runs.
    if (v < value_[s][j] || (v == value_[s][j] && i < from_[s][j])) value_[s][j] = v, from_[s][j] = i;
  }

  const UnitProblem& p_;
  const Ideals& id_;
  const bool latency_;
  const MeanLink comm_;
  const int32_t n_;
  std::vector<std::vector<double>> value_;
  std::vector<std::vector<int32_t>> from_;
};

class DpPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "dp"; }
  std::vector<std::string> option_keys() const override { return {"objective", "max_ideals", "max_units"}; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    // The pipeline objective: contiguous stages under the pipeline cost (pipeline_dp.h).
    const bool pipeline = ctx.env->options().objective == Objective::Pipeline;
    refuse_unread_options(ctx, pipeline);
    if (pipeline) return place_pipeline_dp(ctx, started);
    const int64_t max_ideals = option_int(ctx, "max_ideals", 3000, 1);
    const std::string objective = option_string(ctx, "objective", "step");
    if (objective != "step" && objective != "throughput" && objective != "latency")
      throw InputError("dp option 'objective': expected step, throughput or latency, got '" + objective + "'");
    std::vector<bool> latency_objectives;
    if (objective != "latency") latency_objectives.push_back(false);
    if (objective != "throughput") latency_objectives.push_back(true);

    // The splits: over the ideals of the groups ranked by first op, or, when
    // they exceed max_ideals, over prefixes of three orders.
    std::vector<Candidate> candidates;
    size_t ideal_count = 0;
    bool fallback = false;
    for (const auto& [order_name, by_rank] : group_orders(p)) {
      const Ranked ranked = rank_groups(p, by_rank);
      const Ideals ideals = order_name == "first op" ? enumerate(ranked, p.k, max_ideals) : prefixes(ranked, p.k);
      if (order_name == "first op") {
        ideal_count = ideals.size.size();
        fallback = ideals.prefixes;
      }
      for (bool latency : latency_objectives) {
        Candidate c{order_name, latency ? "latency" : "throughput", solve(p, ideals, by_rank, latency), kInf};
        if (c.split.objective == kInf) continue;
        c.step_s = schedule_ready_order(p, expand_groups(p, c.split.group_device)).makespan;
        candidates.push_back(std::move(c));
      }
      if (!fallback) break;  // the ideals hold every contiguous split of the other orders too
    }
    // Keep the split whose training step, replayed as the runtime dispatches, is fastest.
    const Candidate* best = nullptr;
    std::string tried;
    for (const Candidate& c : candidates) {
      list_replayed(&tried, c.order + "/" + c.objective, c.step_s);
      if (!best || c.step_s < best->step_s) best = &c;
    }
    if (!best)
      throw NoFeasiblePlacement("dp: no split of the graph into at most " + std::to_string(p.k) +
                                " contiguous stages fits device memory");
    const std::string over =
        fallback
            ? "prefixes of the " + best->order +
                  " order (ideals exceeded max_ideals; prefixes of the first-op, level and depth-first orders tried)"
            : std::to_string(ideal_count) + " ideals";
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "dp: planned step %.6g s as the runtime dispatches; kept the %s-objective split (objective %.6g s)",
                  best->step_s, best->objective.c_str(), best->split.objective);
    PlaceResult out = finish(
        ctx, expand_groups(p, best->split.group_device), name(), started,
        std::string(buf) + " over " + over + " of " + std::to_string(p.groups()) + " groups (replayed: " + tried + ")");
    out.stats["ideals"] = static_cast<double>(ideal_count);
    out.stats["prefix_fallback"] = fallback ? 1.0 : 0.0;
    out.stats["dp_objective_s"] = best->split.objective;
    out.stats["dp_objective_throughput"] = best->objective == "throughput" ? 1.0 : 0.0;  // else latency
    out.stats["model_makespan_s"] = best->step_s;
    return out;
  }

 private:
  // An option of the other objective would be ignored: InputError naming it and the objective.
  static void refuse_unread_options(const PlaceContext& ctx, bool pipeline) {
    const std::vector<std::string> unread =
        pipeline ? std::vector<std::string>{"objective", "max_ideals"} : std::vector<std::string>{"max_units"};
    for (const std::string& key : unread)
      if (ctx.options.count(key))
        throw InputError("dp option '" + key + "': not read under objective " + (pipeline ? "pipeline" : "step") +
                         " (dp reads objective and max_ideals under objective step, max_units under objective "
                         "pipeline)");
  }

  // Every ideal (down-set) of the forward DAG of ranked groups, or, past
  // max_ideals, the prefixes of the ranks.
  static Ideals enumerate(const Ranked& ranked, int32_t k, int64_t max_ideals) {
    const int32_t G = static_cast<int32_t>(ranked.mem.size());
    const auto& fwd_preds = ranked.fwd_preds;
    const auto& adj = ranked.adj;
    const auto& gcost = ranked.cost;
    const auto& gmem = ranked.mem;
    const size_t words = (static_cast<size_t>(G) + 63) / 64;
    Ideals id;
    auto has = [](const std::vector<uint64_t>& s, int32_t r) { return (s[r >> 6] >> (r & 63)) & 1; };
    auto push = [&](std::vector<uint64_t> set, int32_t size, std::vector<double> cost, int64_t mem, int64_t cut) {
      id.sets.push_back(std::move(set));
      id.size.push_back(size);
      id.cost.push_back(std::move(cost));
      id.mem.push_back(mem);
      id.cut.push_back(cut);
    };
    auto extend = [&](size_t from, int32_t r) {
      std::vector<uint64_t> s = id.sets[from];
      int64_t cut = id.cut[from];
      for (const auto& [o, bytes] : adj[r]) cut += has(s, o) ? -bytes : bytes;
      s[r >> 6] |= uint64_t{1} << (r & 63);
      std::vector<double> cost = id.cost[from];
      for (int32_t d = 0; d < k; ++d) cost[d] += gcost[r][d];
      push(std::move(s), id.size[from] + 1, std::move(cost), id.mem[from] + gmem[r], cut);
    };
    push(std::vector<uint64_t>(words, 0), 0, std::vector<double>(k, 0.0), 0, 0);
    struct Hash {
      size_t operator()(const std::vector<uint64_t>& v) const {
        uint64_t h = 1469598103934665603ull;
        for (uint64_t w : v) h = (h ^ w) * 1099511628211ull;
        return static_cast<size_t>(h);
      }
    };
    std::unordered_map<std::vector<uint64_t>, int32_t, Hash> seen;
    seen.emplace(id.sets[0], 0);
    bool exploded = false;
    // Breadth first by size, so ideals come out sorted by size.
    for (size_t i = 0; i < id.sets.size() && !exploded; ++i) {
      for (int32_t r = 0; r < G; ++r) {
        if (has(id.sets[i], r)) continue;
        bool ready = true;
        for (int32_t q : fwd_preds[r])
          if (!has(id.sets[i], q)) {
            ready = false;
            break;
          }
        if (!ready) continue;
        std::vector<uint64_t> s = id.sets[i];
        s[r >> 6] |= uint64_t{1} << (r & 63);
        if (seen.count(s)) continue;
        if (static_cast<int64_t>(id.sets.size()) >= max_ideals) {
          exploded = true;
          break;
        }
        seen.emplace(s, static_cast<int32_t>(id.sets.size()));
        extend(i, r);
      }
    }
    return exploded ? prefixes(ranked, k) : id;
  }

  static Ideals prefixes(const Ranked& ranked, int32_t k) {
    const int32_t G = static_cast<int32_t>(ranked.mem.size());
    const auto& adj = ranked.adj;
    const auto& gcost = ranked.cost;
    const auto& gmem = ranked.mem;
    Ideals pre;
    pre.prefixes = true;
    pre.size.push_back(0);
    pre.cost.push_back(std::vector<double>(k, 0.0));
    pre.mem.push_back(0);
    pre.cut.push_back(0);
    for (int32_t r = 0; r < G; ++r) {
      int64_t cut = pre.cut.back();
      for (const auto& [o, bytes] : adj[r]) cut += o < r ? -bytes : bytes;
      std::vector<double> cost = pre.cost.back();
      for (int32_t d = 0; d < k; ++d) cost[d] += gcost[r][d];
      pre.size.push_back(r + 1);
      pre.cost.push_back(std::move(cost));
      pre.mem.push_back(pre.mem.back() + gmem[r]);
      pre.cut.push_back(cut);
    }
    return pre;
  }

  // Stage s on device s: the best objective over chains of ideals, with
  // boundary transfers at the links' mean cost.
  static SplitResult solve(const UnitProblem& p, const Ideals& id, const std::vector<int32_t>& by_rank, bool latency) {
    SplitDp dp(p, id, latency);
    for (int32_t s = 0; s < p.k; ++s) {
      if (!id.prefixes)
        dp.stage_over_ideals(s);
      else if (latency)
        dp.latency_stage_over_prefixes(s);
      else
        dp.throughput_stage_over_prefixes(s);
    }
    return dp.split(by_rank);
  }
};

}  // namespace

std::unique_ptr<Placer> make_dp() { return std::make_unique<DpPlacer>(); }

}  // namespace placer
