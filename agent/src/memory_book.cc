// Memory on groups: whether a placement fits, and repairing one that does not.
#include "placers_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"

namespace placer {

namespace {

// The bytes of the groups on each device (sums saturate).
std::vector<int64_t> bytes_on_devices(const UnitProblem& p, const std::vector<int32_t>& group_device) {
  std::vector<int64_t> used(p.k, 0);
  for (int32_t g = 0; g < p.groups(); ++g) used[group_device[g]] = add_bytes(used[group_device[g]], p.group_mem[g]);
  return used;
}

}  // namespace

bool fits_memory(const UnitProblem& p, const std::vector<int32_t>& group_device) {
  for (int32_t g = 0; g < p.groups(); ++g)
    PLACER_CHECK(group_device[g] >= 0 && group_device[g] < p.k, "group ", g, " on device ", group_device[g], " of ", p.k);
  const std::vector<int64_t> used = bytes_on_devices(p, group_device);
  for (int32_t d = 0; d < p.k; ++d)
    if (used[d] > p.capacity[d]) return false;
  return true;
}

namespace {

// Bytes exchanged between group g and each device, from the current placement of its neighbours.
std::vector<double> group_affinity(const UnitProblem& p, const std::vector<int32_t>& group_device, int32_t g) {
  std::vector<double> affinity(p.k, 0.0);
  for (int32_t u : p.members[g]) {
    for (const Edge& e : p.preds[u]) affinity[group_device[p.group_of[e.op]]] += e.bytes;
    for (const Edge& e : p.succs[u]) affinity[group_device[p.group_of[e.op]]] += e.bytes;
  }
  return affinity;
}

// Where group g goes off device d: a device with room, the most affine, then the most room; -1 if none.
int32_t move_target(const UnitProblem& p, const std::vector<int64_t>& used, const std::vector<double>& affinity,
                    int32_t g, int32_t d) {
  int32_t best = -1;
  for (int32_t t = 0; t < p.k; ++t) {
    if (t == d || !room_for(used[t], p.group_mem[g], p.capacity[t])) continue;
    if (best < 0 || affinity[t] > affinity[best] ||
        (affinity[t] == affinity[best] && p.capacity[t] - used[t] > p.capacity[best] - used[best]))
      best = t;
  }
  return best;
}

// Moves groups off each device over capacity, the latest groups first: keeps the early part of a pipeline intact.
void move_off_overfull(const UnitProblem& p, std::vector<int32_t>& group_device) {
  std::vector<int64_t> used = bytes_on_devices(p, group_device);
  for (int32_t d = 0; d < p.k; ++d) {
    if (used[d] <= p.capacity[d]) continue;
    for (int32_t g = p.groups() - 1; g >= 0 && used[d] > p.capacity[d]; --g) {
      if (group_device[g] != d || p.group_mem[g] == 0) continue;
      const int32_t best = move_target(p, used, group_affinity(p, group_device, g), g, d);
      if (best < 0) continue;
      group_device[g] = best;
      used[d] -= p.group_mem[g];
      used[best] = add_bytes(used[best], p.group_mem[g]);
    }
  }
}

// Repacks first-fit decreasing by size, keeping each group on its planned device when it fits there, else on
// the device with the most room. False if some group fits nowhere.
bool repack_first_fit(const UnitProblem& p, std::vector<int32_t>& group_device) {
  std::vector<int32_t> order(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.group_mem[a] > p.group_mem[b]; });
  std::vector<int64_t> used(p.k, 0);
  for (int32_t g : order) {
    int32_t d = group_device[g];
    if (!room_for(used[d], p.group_mem[g], p.capacity[d])) {
      d = -1;
      for (int32_t t = 0; t < p.k; ++t)
        if (room_for(used[t], p.group_mem[g], p.capacity[t]) &&
            (d < 0 || p.capacity[t] - used[t] > p.capacity[d] - used[d]))
          d = t;
      if (d < 0) return false;
    }
    group_device[g] = d;
    used[d] = add_bytes(used[d], p.group_mem[g]);
  }
  return true;
}

}  // namespace

bool repair_memory(const UnitProblem& p, std::vector<int32_t>& group_device) {
  move_off_overfull(p, group_device);
  if (fits_memory(p, group_device)) return true;
  // Moves alone did not do it: repack.
  return repack_first_fit(p, group_device);
}

}  // namespace placer
