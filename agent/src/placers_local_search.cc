// Simulated annealing over co-location groups with the environment's reward
// (in measured and hybrid mode the calibrated simulator's: search_score), given the
// same evaluation budget (PlaceContext::sample_budget) as the learned placer; the
// start's candidates simulated count in it and in the result's `evaluations`.
// Starts from the fastest of m_etf, heft, dp and expert (or PlaceContext::start);
// moves one group to another device or swaps two groups, within device memory.
// Its best is the best by better_score: a feasible placement beats a failed one.
#include <cstdio>
#include <memory>
#include <random>
#include <utility>

#include "annealer.h"

namespace placer {
namespace {

// Moves one group to another device or swaps two groups, within device memory.
class LocalAnnealing : public Annealer {
 public:
  LocalAnnealing(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start)
      : Annealer(ctx, p, std::move(start), option_double(ctx, "temperature", 0.001, 0.0)) {}

  std::string note(const AnnealingStart& start) const override {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "local_search: simulated annealing from %s, %lld evaluations, %lld accepted, reward %.6g -> %.6g",
                  start.name().c_str(), static_cast<long long>(evaluations()), static_cast<long long>(accepted()),
                  start_reward(), best_reward());
    return buf;
  }

 private:
  // One group to another device (70%) or two groups on different devices
  // swapped; none when it would overfill a device or the two share one.
  GroupMove propose() override {
    const UnitProblem& p = problem();
    const std::vector<int32_t>& cur = current();
    const std::vector<int64_t>& in_use = used();
    const int32_t a = random_group();
    if (uniform() < 0.7) {
      int32_t d = std::uniform_int_distribution<int32_t>(0, p.k - 2)(rng());
      if (d >= cur[a]) ++d;
      if (in_use[d] + p.group_mem[a] > p.capacity[d]) return {};
      return {{a, d}};
    }
    const int32_t b = random_group();
    if (cur[a] == cur[b]) return {};
    const int32_t da = cur[a], db = cur[b];
    if (in_use[db] - p.group_mem[b] + p.group_mem[a] > p.capacity[db] ||
        in_use[da] - p.group_mem[a] + p.group_mem[b] > p.capacity[da])
      return {};
    return {{a, db}, {b, da}};
  }
};

class LocalSearchPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "local_search"; }
  std::vector<std::string> option_keys() const override { return {"temperature"}; }
  bool stochastic() const override { return true; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    return anneal(ctx, p, name(), started, [&](std::vector<int32_t> start) {
      return std::make_unique<LocalAnnealing>(ctx, p, std::move(start));
    });
  }
};

}  // namespace

std::unique_ptr<Placer> make_local_search() { return std::make_unique<LocalSearchPlacer>(); }

}  // namespace placer
