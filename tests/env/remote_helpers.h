// Shared by the env and service tests of remote evaluation: a small training
// graph and random valid placements (one device per co-location group).
#pragma once

#include <random>
#include <vector>

#include "placer/frontends/builders.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer::testing {

// A 2-layer MLP training step, small enough to measure in milliseconds.
inline Graph small_mlp() {
  BuilderOptions bo;
  bo.values = {{"batch", 4}, {"input", 16}, {"width", 16}, {"layers", 2}, {"classes", 4}};
  return build_graph("mlp", bo);
}

inline std::vector<Placement> random_placements(const Graph& g, int devices, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Grouping groups = colocation_groups(g);
  std::vector<Placement> out;
  for (int k = 0; k < count; ++k) {
    Placement p;
    p.device_of.assign(static_cast<size_t>(g.size()), DeviceId(0));
    for (const auto& group : groups.members) {
      const DeviceId d(static_cast<int32_t>(rng() % static_cast<uint64_t>(devices)));
      for (OpId op : group) p.device_of[static_cast<size_t>(op.value)] = d;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace placer::testing
