// Dynamic programming over contiguous splits (PipeDream; Tarnawski et al.
// 2020): the co-location groups are cut into at most k contiguous stages,
// stage s on device s, minimizing the slowest stage (throughput) or the sum
// of stages and boundary transfers (latency), under per-device memory.
// "Contiguous" means a difference of two ideals (down-sets) of the forward
// DAG of groups; when there are too many ideals, the DP runs over prefixes
// of a topological order instead and says so.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer::placers {
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

class DpPlacer : public Placer {
 public:
  std::string name() const override { return "dp"; }

  PlaceResult place(const PlaceContext& ctx) override {
    const auto started = Clock::now();
    const UnitProblem p = make_unit_problem(ctx, kMemoryFraction);
    check_groups_fit(p);
    const int64_t max_ideals = option_int(ctx, "max_ideals", 3000);
    const std::string objective = option_string(ctx, "objective", "best");
    if (objective != "best" && objective != "throughput" && objective != "latency")
      throw InputError("dp option 'objective': expected best, throughput or latency, got '" + objective + "'");

    const int32_t G = p.groups();
    // Groups ranked by their first op (a topological order of the forward DAG).
    std::vector<int32_t> by_rank(G);
    for (int32_t g = 0; g < G; ++g) by_rank[g] = g;
    std::sort(by_rank.begin(), by_rank.end(), [&](int32_t a, int32_t b) { return p.members[a][0] < p.members[b][0]; });
    std::vector<int32_t> rank(G);
    for (int32_t r = 0; r < G; ++r) rank[by_rank[r]] = r;
    // Forward DAG (edges going up in rank) and undirected bytes between groups.
    std::vector<std::vector<int32_t>> fwd_preds(G);
    std::vector<std::unordered_map<int32_t, int64_t>> adj(G);
    for (int32_t v = 0; v < p.n; ++v)
      for (const Edge& e : p.preds[v]) {
        const int32_t a = rank[p.group_of[e.op]], b = rank[p.group_of[v]];
        if (a == b) continue;
        adj[a][b] += e.bytes;
        adj[b][a] += e.bytes;
        if (a < b) fwd_preds[b].push_back(a);
      }
    for (auto& v : fwd_preds) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    std::vector<std::vector<double>> gcost(G, std::vector<double>(p.k));
    std::vector<int64_t> gmem(G);
    for (int32_t r = 0; r < G; ++r) {
      for (int32_t d = 0; d < p.k; ++d) gcost[r][d] = p.group_cost(by_rank[r], d);
      gmem[r] = p.group_mem[by_rank[r]];
    }

    Ideals ideals = enumerate(G, p.k, fwd_preds, adj, gcost, gmem, max_ideals);
    const double link_alpha = p.mean_transfer(0);
    const double link_per_byte = p.mean_transfer(1 << 30) / static_cast<double>(1 << 30) - link_alpha / (1 << 30);
    auto comm = [&](int64_t bytes) { return bytes > 0 ? link_alpha + bytes * link_per_byte : 0.0; };

    std::vector<std::pair<std::string, SplitResult>> candidates;
    if (objective != "latency") candidates.push_back({"throughput", solve(p, ideals, by_rank, comm, false)});
    if (objective != "throughput") candidates.push_back({"latency", solve(p, ideals, by_rank, comm, true)});
    // Keep the candidate the simulator likes best.
    int32_t best = -1;
    double best_step = kInf;
    std::vector<double> steps(candidates.size(), kInf);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].second.objective == kInf) continue;
      Placement pl;
      for (int32_t d : expand_groups(p, candidates[i].second.group_device)) pl.device_of.push_back(DeviceId(d));
      const StepResult r = ctx.env->simulate(pl);
      if (!r.ok()) continue;
      steps[i] = r.step_s;
      if (r.step_s < best_step) best_step = r.step_s, best = static_cast<int32_t>(i);
    }
    if (best < 0)
      throw NoFeasiblePlacement("dp: no split of the graph into at most " + std::to_string(p.k) +
                                " contiguous stages fits device memory");
    char buf[256];
    std::snprintf(
        buf, sizeof buf, "dp: %s objective %.6g s over %zu %s of %d groups", candidates[best].first.c_str(),
        candidates[best].second.objective, ideals.size.size(),
        ideals.prefixes ? "prefixes (ideals exceeded max_ideals, fell back to a topological order)" : "ideals", G);
    PlaceResult out = finish(ctx, expand_groups(p, candidates[best].second.group_device), name(), started, buf);
    out.stats["ideals"] = static_cast<double>(ideals.size.size());
    out.stats["prefix_fallback"] = ideals.prefixes ? 1.0 : 0.0;
    out.stats["dp_objective_s"] = candidates[best].second.objective;
    out.stats["dp_objective_throughput"] = candidates[best].first == "throughput" ? 1.0 : 0.0;  // else latency
    return out;
  }

 private:
  static Ideals enumerate(int32_t G, int32_t k, const std::vector<std::vector<int32_t>>& fwd_preds,
                          const std::vector<std::unordered_map<int32_t, int64_t>>& adj,
                          const std::vector<std::vector<double>>& gcost, const std::vector<int64_t>& gmem,
                          int64_t max_ideals) {
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
    if (!exploded) return id;
    // Fallback: prefixes of the rank order.
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

  template <typename Comm>
  static SplitResult solve(const UnitProblem& p, const Ideals& id, const std::vector<int32_t>& by_rank,
                           const Comm& comm, bool latency) {
    const int32_t N = static_cast<int32_t>(id.size.size());
    const int32_t G = static_cast<int32_t>(by_rank.size());
    const size_t words = id.prefixes ? 0 : id.sets[0].size();
    auto subset = [&](int32_t a, int32_t b) {  // ideal a within ideal b
      if (id.prefixes) return a <= b;
      if (id.size[a] > id.size[b]) return false;
      for (size_t w = 0; w < words; ++w)
        if (id.sets[a][w] & ~id.sets[b][w]) return false;
      return true;
    };
    // dp[s][j]: best objective with ideal j covered by devices 0..s.
    std::vector<std::vector<double>> dp(p.k, std::vector<double>(N, kInf));
    std::vector<std::vector<int32_t>> from(p.k, std::vector<int32_t>(N, -1));
    for (int32_t s = 0; s < p.k; ++s) {
      for (int32_t j = 0; j < N; ++j) {
        for (int32_t i = 0; i < N; ++i) {
          if (id.size[i] > id.size[j]) break;  // sorted by size
          const double prev = s == 0 ? (i == 0 ? 0.0 : kInf) : dp[s - 1][i];
          if (prev == kInf || !subset(i, j)) continue;
          if (id.mem[j] - id.mem[i] > p.capacity[s]) continue;
          double v;
          if (i == j) {
            v = prev;
          } else {
            const double work = id.cost[j][s] - id.cost[i][s];
            v = latency ? prev + work + comm(id.cut[i]) : std::max(prev, work + comm(id.cut[i]) + comm(id.cut[j]));
          }
          if (v < dp[s][j]) dp[s][j] = v, from[s][j] = i;
        }
      }
    }
    SplitResult out;
    const int32_t all = N - 1;
    PLACER_CHECK(id.size[all] == G, "dp: last ideal is not the whole graph");
    if (dp[p.k - 1][all] == kInf) return out;
    out.objective = dp[p.k - 1][all];
    out.group_device.assign(G, 0);
    int32_t j = all;
    for (int32_t s = p.k - 1; s >= 0; --s) {
      const int32_t i = from[s][j];
      for (int32_t r = 0; r < G; ++r) {
        const bool in_j = id.prefixes ? r < id.size[j] : ((id.sets[j][r >> 6] >> (r & 63)) & 1);
        const bool in_i = id.prefixes ? r < id.size[i] : ((id.sets[i][r >> 6] >> (r & 63)) & 1);
        if (in_j && !in_i) out.group_device[by_rank[r]] = s;
      }
      j = i;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_dp() { return std::make_unique<DpPlacer>(); }

}  // namespace placer::placers
