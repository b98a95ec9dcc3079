// The simplest baselines: single device, round-robin and random.
#include <algorithm>
#include <limits>
#include <random>

#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer {
namespace {

// Everything on the one device where the simulator says the step is fastest
// (and fits in memory).
class SinglePlacer : public Placer {
 public:
  std::string name() const override { return "single"; }
  PlaceResult place(const PlaceContext& ctx) override {
    check_context(ctx);
    const auto started = Clock::now();
    const Graph& graph = *ctx.graph;
    double best = std::numeric_limits<double>::infinity();
    int32_t best_d = -1;
    std::string why;
    for (int32_t d = 0; d < ctx.cluster->size(); ++d) {
      const StepResult r = ctx.env->simulate(single_device(graph, DeviceId(d)));
      if (!r.ok()) {
        why += (why.empty() ? "" : "; ") + ctx.cluster->devices[d].name + ": " + r.message;
        continue;
      }
      if (r.step_s < best) best = r.step_s, best_d = d;
    }
    if (best_d < 0) throw NoFeasiblePlacement("single: the graph fits on no single device (" + why + ")");
    return finish(ctx, std::vector<int32_t>(graph.size(), best_d), name(), started,
                  "single: all ops on " + ctx.cluster->devices[best_d].name);
  }
};

// Co-location groups in topological order dealt to devices in turn; groups
// that would overflow a device move to one with room.
class RoundRobinPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "round_robin"; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const std::vector<int32_t> order = groups_by_first_op(p);
    std::vector<int32_t> gd(p.groups());
    for (size_t i = 0; i < order.size(); ++i) gd[order[i]] = static_cast<int32_t>(i % p.k);
    std::string note;
    if (!fits_memory(p, gd)) {
      if (!repair_memory(p, gd)) throw NoFeasiblePlacement("round_robin: cannot fit the groups in device memory");
      note = "round_robin: moved groups to fit memory";
    }
    return finish(ctx, expand_groups(p, gd), name(), started, note);
  }
};

// Each group on a uniformly random device among those with room (seeded).
class RandomPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "random"; }
  bool stochastic() const override { return true; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    std::mt19937_64 rng(ctx.seed);
    MemoryBook book(p);
    std::vector<int32_t> gd(p.groups(), -1);
    // Largest groups first so that random choices rarely paint into a corner.
    std::vector<int32_t> order(p.groups());
    for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.group_mem[a] > p.group_mem[b]; });
    std::vector<int32_t> room;
    for (int32_t g : order) {
      room.clear();
      for (int32_t d = 0; d < p.k; ++d)
        if (book.fits(g, d)) room.push_back(d);
      if (room.empty())
        throw NoFeasiblePlacement("random: op '" + p.unit_names[p.members[g][0]] + "' fits on no device");
      const int32_t d = room[std::uniform_int_distribution<size_t>(0, room.size() - 1)(rng)];
      gd[g] = d;
      book.add(g, d);
    }
    return finish(ctx, expand_groups(p, gd), name(), started);
  }
};

}  // namespace

std::unique_ptr<Placer> make_single() { return std::make_unique<SinglePlacer>(); }
std::unique_ptr<Placer> make_round_robin() { return std::make_unique<RoundRobinPlacer>(); }
std::unique_ptr<Placer> make_random() { return std::make_unique<RandomPlacer>(); }

}  // namespace placer
