// Per-device memory on groups of a unit problem, and repair of placements
// that overfill a device (internal to agent/src).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unit_problem.h"

namespace placer {

// Whether `bytes` more fit on a device of `capacity` holding `used`, without
// computing used + bytes (which may pass 2^63).
inline bool room_for(int64_t used, int64_t bytes, int64_t capacity) {
  return used <= capacity && bytes <= capacity - used;
}

// Per-device memory book-keeping on groups (sums saturate: add_bytes).
class MemoryBook {
 public:
  explicit MemoryBook(const UnitProblem& p) : p_(&p), used_(p.k, 0) {}
  bool fits(int32_t group, int32_t device) const {
    return room_for(used_[device], p_->group_mem[group], p_->capacity[device]);
  }
  void add(int32_t group, int32_t device) { used_[device] = add_bytes(used_[device], p_->group_mem[group]); }
  void remove(int32_t group, int32_t device) { used_[device] -= p_->group_mem[group]; }
  int64_t used(int32_t device) const { return used_[device]; }
  int64_t free(int32_t device) const { return p_->capacity[device] - used_[device]; }

 private:
  const UnitProblem* p_;
  std::vector<int64_t> used_;
};

// Moves groups off devices over capacity onto devices with room (the fewest
// bytes moved, preferring the devices their neighbours are on). Returns false
// if it cannot make the placement fit.
bool repair_memory(const UnitProblem& p, std::vector<int32_t>& group_device);
bool fits_memory(const UnitProblem& p, const std::vector<int32_t>& group_device);

}  // namespace placer
