// local_search for the max-load objective: one colocation class moves to
// another device at a time, kept when it lowers the max load, or keeps it
// and lowers the sum of squared loads (so moves off a tied or near-busiest
// device count too). From the warm start, then from random starts, until the
// time limit or the evaluation budget; accelerators keep to their memory.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "max_load_placers.h"
#include "placer/env/max_load.h"
#include "placer/graphs/error.h"

namespace placer {

namespace {

struct Score {
  double max_load = 0.0, spread = 0.0;  // spread: the sum of squared loads
  bool better_than(const Score& o) const {
    const double eps = 1e-12 * std::max(1.0, o.max_load);
    if (max_load < o.max_load - eps) return true;
    return max_load <= o.max_load + eps && spread < o.spread * (1.0 - 1e-12);
  }
};

// A time limit past this is "no limit" (1e10 s overflowed the clock's nanoseconds: a deadline in the past).
constexpr double kMaxSeconds = 1e7;

class ClassSearch {
 public:
  ClassSearch(const Workload& w, const MaxLoadOptions& options)
      : w_(w),
        eval_(w),
        rng_(options.seed),
        max_evaluations_(options.evaluations),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(std::min(options.time_limit_s, kMaxSeconds)))) {
    cls_ = w.colocation_classes(&classes_);
    members_.resize(static_cast<size_t>(classes_));
    class_bytes_.assign(static_cast<size_t>(classes_), 0.0);
    class_ok_.assign(static_cast<size_t>(classes_), 1);
    for (int32_t u = 0; u < w.size(); ++u) {
      const size_t k = static_cast<size_t>(cls_[static_cast<size_t>(u)]);
      members_[k].push_back(u);
      class_bytes_[k] += w.nodes[static_cast<size_t>(u)].size;
      if (!w.nodes[static_cast<size_t>(u)].accelerator_ok) class_ok_[k] = 0;
    }
  }

  // Out of time, or of evaluations: a budget stops the search at that many at most (the time limit still
  // applies: set it high for a run that the budget alone ends).
  bool out_of_time() const {
    return budget_spent() || std::chrono::steady_clock::now() >= deadline_;
  }
  int64_t evaluations() const { return evaluations_; }
  bool budget_spent() const { return max_evaluations_ > 0 && evaluations_ >= max_evaluations_; }

  // A random start: classes in random order, each on a random device with room for it.
  WorkloadPlacement random_start() {
    WorkloadPlacement p(w_.nodes.size(), 0);
    std::vector<double> bytes(static_cast<size_t>(w_.cluster.devices()), 0.0);
    std::vector<int32_t> order(static_cast<size_t>(classes_));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    for (int32_t k : order) {
      std::vector<int32_t> devices;
      for (int32_t d = 0; d < w_.cluster.devices(); ++d)
        if (fits(k, d, bytes)) devices.push_back(d);
      if (devices.empty()) return {};
      const int32_t d = devices[std::uniform_int_distribution<size_t>(0, devices.size() - 1)(rng_)];
      bytes[static_cast<size_t>(d)] += class_bytes_[static_cast<size_t>(k)];
      for (int32_t u : members_[static_cast<size_t>(k)]) p[static_cast<size_t>(u)] = d;
    }
    return p;
  }

  // First-improvement descent from p (feasible) until no move helps or time is up.
  Score descend(WorkloadPlacement& p) {
    std::vector<double> load;
    Score now = score(p, &load);
    std::vector<double> bytes = device_bytes(p);
    std::vector<int32_t> order(static_cast<size_t>(classes_));
    std::iota(order.begin(), order.end(), 0);
    for (bool moved = true; moved && !out_of_time();) {
      moved = false;
      std::shuffle(order.begin(), order.end(), rng_);
      for (int32_t k : order) {
        const auto& members = members_[static_cast<size_t>(k)];
        const int32_t from = p[static_cast<size_t>(members.front())];
        bytes[static_cast<size_t>(from)] -= class_bytes_[static_cast<size_t>(k)];
        int32_t to = from;
        for (int32_t d = 0; d < w_.cluster.devices(); ++d) {
          if (d == from || !fits(k, d, bytes)) continue;
          if (out_of_time()) break;
          for (int32_t u : members) p[static_cast<size_t>(u)] = d;
          const Score s = score(p, &load);
          if (s.better_than(now)) {
            now = s;
            to = d;
          }
        }
        for (int32_t u : members) p[static_cast<size_t>(u)] = to;
        bytes[static_cast<size_t>(to)] += class_bytes_[static_cast<size_t>(k)];
        moved = moved || to != from;
        if (out_of_time()) break;
      }
    }
    return now;
  }

  Score score(const WorkloadPlacement& p, std::vector<double>* load) {
    ++evaluations_;
    Score s;
    s.max_load = eval_.evaluate(p, load);
    for (double l : *load) s.spread += l * l;
    return s;
  }

 private:
  bool fits(int32_t k, int32_t d, const std::vector<double>& bytes) const {
    if (d >= w_.cluster.accelerators) return true;  // CPUs: no memory limit, as in the paper
    return class_ok_[static_cast<size_t>(k)] &&
           bytes[static_cast<size_t>(d)] + class_bytes_[static_cast<size_t>(k)] <= w_.cluster.accelerator_bytes;
  }
  std::vector<double> device_bytes(const WorkloadPlacement& p) const {
    std::vector<double> bytes(static_cast<size_t>(w_.cluster.devices()), 0.0);
    for (size_t u = 0; u < p.size(); ++u) bytes[static_cast<size_t>(p[u])] += w_.nodes[u].size;
    return bytes;
  }

  const Workload& w_;
  MaxLoadEvaluator eval_;
  std::mt19937_64 rng_;
  int64_t max_evaluations_ = 0, evaluations_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<int32_t> cls_;
  int32_t classes_ = 0;
  std::vector<std::vector<int32_t>> members_;
  std::vector<double> class_bytes_;
  std::vector<char> class_ok_;
};

}  // namespace

MaxLoadResult max_load_local_search(const Workload& w, const MaxLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MaxLoadResult r;
  r.method = "local_search";
  ClassSearch search(w, options);
  Score best;
  int64_t starts = 0;
  bool warm_taken = false;
  auto consider = [&](WorkloadPlacement p) {
    if (p.empty()) return;
    ++starts;
    const Score s = search.descend(p);
    if (r.placement.empty() || s.better_than(best)) {
      best = s;
      r.placement = std::move(p);
    }
  };
  if (!options.warm.empty()) {
    check_workload_placement(w, options.warm);
    MaxLoadEvaluator eval(w);
    warm_taken = eval.feasible(options.warm);
    if (warm_taken) consider(options.warm);
  }
  // Random packings until the time is up; with none found yet, only so many (a workload whose packings
  // rarely or never fit spun for the whole time limit).
  constexpr int64_t kMaxUnfitStarts = 10'000;
  int64_t packings = 0;
  do {
    if (search.budget_spent()) break;  // (the time limit still draws one packing: a start where there was none)
    ++packings;
    consider(search.random_start());
  } while (!search.out_of_time() && starts < 1'000'000 && (starts > 0 || packings < kMaxUnfitStarts));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.placement.empty()) {
    r.note = detail::concat("no start fits the accelerators' memory (", packings, " random packings tried)");
    return r;
  }
  r.max_load = max_load(w, r.placement).max_load;
  const char* from = !warm_taken ? "random starts" : starts == 1 ? "the warm start only" : "the warm start, then random";
  r.note = detail::concat(starts, " descents (", from, "), ", search.evaluations(), " evaluations, seed ", options.seed);
  return r;
}

}  // namespace placer
