// offload_updates: a list scheduler's placement with the optimizer's work
// moved to the least busy devices.
//
// A training step ends with one SGD update per parameter. Each update needs
// only its parameter and its gradient, and nothing in the step waits for it,
// so it is off the critical path; yet a placement that keeps a layer's
// parameter with the layer's ops (every list scheduler here does: the
// parameter is an input of the forward op) runs all of them on the busiest
// device. Moving each parameter with its update (one co-location group) to
// the least loaded device costs the parameter's copy to its consumers at the
// step's start and the gradient's copy back, both overlapped with compute.
// On a training graph bound by one device's critical path, what is left is
// that path (mobilenet_v2 on k80x4: 17.83 ms on one GPU, 16.87 ms with the
// updates spread, the lower bound 16.82 ms).
//
// The base is the fastest (simulated) of m_etf, heft, dp and expert; a
// group's cost is the simulator's op time on that device, a device's load its
// busy time in the base's step. The result is the base itself when moving the
// updates does not make the simulated step faster, so the method is never
// slower than its base. This is local_search's start (best_start): the
// annealing searches start from it too.
#include <algorithm>
#include <cstdio>

#include "local_search_start.h"
#include "placer/env/environment.h"

namespace placer {
namespace {

// Groups that hold only parameters and their updates (at least one update).
std::vector<int32_t> update_groups(const Graph& graph, const UnitProblem& p) {
  std::vector<int32_t> out;
  for (int32_t g = 0; g < p.groups(); ++g) {
    bool updates = false, only_state = true;
    for (int32_t u : p.members[g]) {
      const std::string& type = graph.op(OpId(u)).type;
      updates |= type == op_types::kSgd;
      only_state &= type == op_types::kSgd || type == op_types::kParam;
    }
    if (updates && only_state) out.push_back(g);
  }
  return out;
}

class OffloadUpdatesPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "offload_updates"; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const AnnealingStart start = best_start(ctx, p);
    char note[200];
    if (start.updates_moved > 0)
      std::snprintf(note, sizeof note, "offload_updates: %d parameter update groups moved off %s's placement",
                    start.updates_moved, start.method.c_str());
    else
      std::snprintf(note, sizeof note, "offload_updates: %s's placement kept (moving its updates is not faster)",
                    start.method.c_str());
    return finish(ctx, expand_groups(p, start.group_device), name(), started, note);
  }
};

}  // namespace

int32_t move_updates_off(const Graph& graph, const UnitProblem& p, const StepResult& base,
                         std::vector<int32_t>* group_device) {
  std::vector<int32_t>& gd = *group_device;
  std::vector<int32_t> groups = update_groups(graph, p);
  if (groups.empty() || p.k < 2) return 0;
  // Largest first, each to the device where its load ends lowest, with room.
  std::vector<double> load(p.k, 0.0);
  for (int32_t d = 0; d < p.k && d < static_cast<int32_t>(base.devices.size()); ++d) load[d] = base.devices[d].busy_s;
  MemoryBook book(p);
  for (int32_t g = 0; g < p.groups(); ++g) book.add(g, gd[g]);
  std::stable_sort(groups.begin(), groups.end(),
                   [&](int32_t a, int32_t b) { return p.group_cost(a, gd[a]) > p.group_cost(b, gd[b]); });
  int32_t moved = 0;
  for (int32_t g : groups) {
    const int32_t from = gd[g];
    load[from] -= p.group_cost(g, from);
    book.remove(g, from);
    int32_t to = from;
    double least = load[from] + p.group_cost(g, from);
    for (int32_t d = 0; d < p.k; ++d) {
      const double ends = load[d] + p.group_cost(g, d);
      if (d != from && ends < least && book.fits(g, d)) least = ends, to = d;
    }
    gd[g] = to;
    load[to] += p.group_cost(g, to);
    book.add(g, to);
    moved += to != from;
  }
  return moved;
}

std::unique_ptr<Placer> make_offload_updates() { return std::make_unique<OffloadUpdatesPlacer>(); }

}  // namespace placer
