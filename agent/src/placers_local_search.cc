// Simulated annealing over co-location groups with the environment's reward,
// given the same evaluation budget (PlaceContext::sample_budget) as the
// learned placer. Starts from the fastest of m_etf, heft, dp and expert; moves one group to
// another device or swaps two groups, within device memory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer {
namespace {

class LocalSearchPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "local_search"; }
  bool stochastic() const override { return true; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const int64_t budget = std::max<int64_t>(1, ctx.sample_budget);
    std::mt19937_64 rng(ctx.seed);
    const int32_t G = p.groups();

    // Start: the fastest under the simulator of m_etf (its best replayed
    // candidate), heft, dp and expert (a placer that cannot place this graph
    // drops out).
    std::vector<int32_t> start_gd;
    std::string start_method;
    double start_step = 1e300;
    auto consider = [&](const std::string& method, const std::vector<int32_t>& op_device) {
      std::vector<int32_t> gd(G);
      for (int32_t g = 0; g < G; ++g) gd[g] = op_device[p.members[g][0]];
      const StepResult s = ctx.env->simulate(to_placement(p, gd));
      if (s.ok() && s.step_s < start_step) start_step = s.step_s, start_gd = gd, start_method = method;
    };
    for (const char* method : {"m_etf", "heft", "dp", "expert"}) {
      try {
        PlaceContext sub = ctx;
        sub.options.clear();
        const Placement placed = make_placer(method)->place(sub).placement;
        std::vector<int32_t> op_device(p.n);
        for (int32_t u = 0; u < p.n; ++u) op_device[u] = placed.device_of[u].value;
        consider(method, op_device);
      } catch (const NoFeasiblePlacement&) {
      } catch (const PlacementError&) {}
    }
    if (start_gd.empty()) {
      start_gd.assign(G, 0);
      if (!repair_memory(p, start_gd)) throw NoFeasiblePlacement("local_search: found no memory-feasible start");
      start_method = "repaired single device";
    }
    std::vector<int32_t> cur = start_gd, best = start_gd;
    int64_t evaluations = 0;
    auto score = [&](const std::vector<int32_t>& gd) {
      ++evaluations;
      return ctx.env->evaluate(to_placement(p, gd)).reward;
    };
    double cur_r = score(cur), best_r = cur_r;
    const double start_r = cur_r;
    std::vector<int64_t> used(p.k, 0);
    for (int32_t g = 0; g < G; ++g) used[cur[g]] += p.group_mem[g];
    // Groups that do work are the ones worth moving.
    std::vector<int32_t> movable;
    for (int32_t g = 0; g < G; ++g)
      if (p.group_cost(g, 0) > 0 || p.group_mem[g] > 0) movable.push_back(g);
    if (movable.empty())
      for (int32_t g = 0; g < G; ++g) movable.push_back(g);
    // Initial temperature as a fraction of the start's reward: a move that
    // costs that fraction of the reward is accepted with probability 1/e.
    const double t0 = std::max(1e-12, option_double(ctx, "temperature", 0.001) * std::fabs(cur_r));
    const double t_end = t0 * 1e-3;
    int64_t accepted = 0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    while (evaluations < budget && p.k > 1) {
      const double frac = static_cast<double>(evaluations) / static_cast<double>(budget);
      const double temp = t0 * std::pow(t_end / t0, frac);
      std::vector<std::pair<int32_t, int32_t>> changes;  // (group, new device)
      const int32_t a = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
      if (unit(rng) < 0.7) {
        int32_t d = std::uniform_int_distribution<int32_t>(0, p.k - 2)(rng);
        if (d >= cur[a]) ++d;
        if (used[d] + p.group_mem[a] > p.capacity[d]) continue;
        changes.push_back({a, d});
      } else {
        const int32_t b = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
        if (cur[a] == cur[b]) continue;
        const int32_t da = cur[a], db = cur[b];
        if (used[db] - p.group_mem[b] + p.group_mem[a] > p.capacity[db] ||
            used[da] - p.group_mem[a] + p.group_mem[b] > p.capacity[da])
          continue;
        changes.push_back({a, db});
        changes.push_back({b, da});
      }
      std::vector<int32_t> old;
      for (auto [g, d] : changes) old.push_back(cur[g]), cur[g] = d;
      const double r = score(cur);
      if (r >= cur_r || unit(rng) < std::exp((r - cur_r) / temp)) {
        cur_r = r;
        ++accepted;
        for (size_t i = 0; i < changes.size(); ++i) {
          used[old[i]] -= p.group_mem[changes[i].first];
          used[changes[i].second] += p.group_mem[changes[i].first];
        }
        if (r > best_r) best_r = r, best = cur;
      } else {
        for (size_t i = 0; i < changes.size(); ++i) cur[changes[i].first] = old[i];
      }
    }
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "local_search: simulated annealing from %s, %lld evaluations, %lld accepted, reward %.6g -> %.6g",
                  start_method.c_str(), static_cast<long long>(evaluations), static_cast<long long>(accepted), start_r,
                  best_r);
    PlaceResult out = finish(ctx, expand_groups(p, best), name(), started, buf);
    out.evaluations = evaluations;
    out.stats["best_reward"] = best_r;
    out.stats["start_reward"] = start_r;
    return out;
  }

 private:
  static Placement to_placement(const UnitProblem& p, const std::vector<int32_t>& gd) {
    Placement pl;
    pl.device_of.resize(p.n);
    for (int32_t u = 0; u < p.n; ++u) pl.device_of[u] = DeviceId(gd[p.group_of[u]]);
    return pl;
  }
};

}  // namespace

std::unique_ptr<Placer> make_local_search() { return std::make_unique<LocalSearchPlacer>(); }

}  // namespace placer
