// What the held-out benchmarks (heldout_bench, pretrained_bench) share: the
// per-seed figures of one method and the context a placer is called with.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/agent/train.h"

namespace placer::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One method's seeds: simulated step and wall time of each.
struct Runs {
  std::vector<double> step_s, wall_s;
  std::vector<int64_t> evals;
  std::string note;
  bool ran() const { return !step_s.empty(); }
  double median() const { return sorted(step_s)[(step_s.size() - 1) / 2]; }  // the lower middle
  double worst() const { return *std::max_element(step_s.begin(), step_s.end()); }
  double median_wall() const { return sorted(wall_s)[(wall_s.size() - 1) / 2]; }
  double max_wall() const { return *std::max_element(wall_s.begin(), wall_s.end()); }
  static std::vector<double> sorted(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v;
  }
};

// A held-out graph file (.json or binary).
inline Graph graph_file(const std::string& path) {
  GraphSource src;
  src.file = path;
  return src.load();
}

inline PlaceContext context(Environment& env, uint64_t seed, int64_t budget) {
  PlaceContext ctx = PlaceContext::on(env, seed);
  ctx.sample_budget = budget;
  ctx.time_limit_s = 60;
  return ctx;
}

}  // namespace placer::bench
