// Fidelity statistics: rank correlations, MAPE, and the diverse placements they are measured on.
#include "placer/env/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

void check_pair(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  if (a.size() != b.size() || a.size() < 2)
    throw InputError(std::string(what) + ": needs two samples of the same size >= 2, got " + std::to_string(a.size()) +
                     " and " + std::to_string(b.size()));
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  // A constant side (all its values tied) has no ranking: the correlation is undefined, not 0.
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  check_pair(a, b, "spearman");
  return pearson(ranks(a), ranks(b));
}

double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  check_pair(a, b, "kendall");
  // O(n^2): fidelity sets hold tens to hundreds of points.
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0)
        ties_a += 1;
      else if (db == 0)
        ties_b += 1;
      else if ((da > 0) == (db > 0))
        concordant += 1;
      else
        discordant += 1;
    }
  const double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  // Zero when either side is all tied: undefined, as Spearman's.
  return denom > 0 ? (concordant - discordant) / denom : std::numeric_limits<double>::quiet_NaN();
}

double mean_absolute_percentage_error(const std::vector<double>& actual, const std::vector<double>& predicted) {
  if (actual.size() != predicted.size()) throw InputError("mape: samples of different sizes");
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (actual[i] > 0) {
      sum += std::abs(predicted[i] - actual[i]) / actual[i];
      ++n;
    }
  return n ? sum / n : 0.0;
}

std::vector<std::pair<std::string, Placement>> diverse_placements(const Graph& graph, const Cluster& cluster, int count,
                                                                  uint64_t seed) {
  std::vector<int32_t> cls;
  for (const Device& d : cluster.devices) {
    int32_t c = static_cast<int32_t>(cls.size());
    for (size_t e = 0; e < cls.size(); ++e) {
      const Device& o = cluster.devices[e];
      if (o.kind == d.kind && o.threads == d.threads && o.memory_bytes == d.memory_bytes &&
          o.peak_flops == d.peak_flops && o.mem_bandwidth == d.mem_bandwidth) {
        c = cls[e];
        break;
      }
    }
    cls.push_back(c);
  }
  return diverse_placements(graph, cluster.size(), count, seed, cls);
}

namespace {

// The placements diverse_placements() proposes, in the order it proposes them:
// each keeps the co-location groups together and is added once.
class DiverseSet {
 public:
  DiverseSet(const Graph& graph, int32_t devices, int count) : graph_(graph), devices_(devices), count_(count) {
    groups_ = colocation_groups(graph);
    order_.resize(groups_.size());
    std::iota(order_.begin(), order_.end(), 0);
    // Groups in order of their first op, so "contiguous" follows the graph.
    std::sort(order_.begin(), order_.end(),
              [&](int32_t x, int32_t y) { return groups_.members[x].front() < groups_.members[y].front(); });
  }

  int32_t groups() const { return groups_.size(); }
  bool full() const { return static_cast<int>(out_.size()) >= count_; }

  void add(const std::string& kind, const std::vector<int32_t>& group_device) {
    if (full()) return;
    Placement p;
    p.device_of.resize(graph_.size());
    for (int32_t g = 0; g < groups(); ++g)
      for (OpId o : groups_.members[g]) p.device_of[o.value] = DeviceId(group_device[g]);
    if (!seen_.insert(placement_hash(p)).second) return;
    out_.emplace_back(kind, std::move(p));
    bases_.push_back(group_device);
  }

  // Round robin, contiguous splits at nine cut points, round robin in blocks.
  void add_structured() {
    const int32_t G = groups();
    std::vector<int32_t> rr(G);
    for (int32_t i = 0; i < G; ++i) rr[order_[i]] = i % devices_;
    add("round_robin", rr);
    // Contiguous splits: the first fraction on one device, the rest spread evenly.
    for (int cut = 1; cut <= 9; ++cut) {
      std::vector<int32_t> split(G);
      const double first = cut / 10.0;
      for (int32_t i = 0; i < G; ++i) {
        const double f = static_cast<double>(i) / G;
        split[order_[i]] =
            f < first
                ? 0
                : 1 + std::min<int32_t>(devices_ - 2, static_cast<int32_t>((f - first) / (1 - first) * (devices_ - 1)));
      }
      add("split", split);
    }
    for (int k : {2, 4, 8, 16, 32}) {
      std::vector<int32_t> blocks(G);
      for (int32_t i = 0; i < G; ++i) blocks[order_[i]] = (i / k) % devices_;
      add("blocks", blocks);
    }
  }

  // Random (biased to one device, so some are balanced and some lopsided) and
  // perturbations of what came before, until full (bounded tries).
  void add_random(std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int tries = 0; !full() && tries < 20 * count_; ++tries) {
      if (tries % 2 == 0) {
        std::vector<int32_t> random(groups());
        const double bias = u(rng);
        for (int32_t& d : random) d = u(rng) < bias ? 0 : static_cast<int32_t>(rng() % devices_);
        add("random", random);
      } else {
        std::vector<int32_t> base = bases_[rng() % bases_.size()];
        const double rate = std::vector<double>{0.02, 0.05, 0.1, 0.2}[rng() % 4];
        for (int32_t& d : base)
          if (u(rng) < rate) d = static_cast<int32_t>(rng() % devices_);
        add("perturbed", base);
      }
    }
  }

  std::vector<std::pair<std::string, Placement>> take() { return std::move(out_); }

 private:
  const Graph& graph_;
  int32_t devices_;
  int count_;
  Grouping groups_;
  std::vector<int32_t> order_;
  std::vector<std::pair<std::string, Placement>> out_;
  std::vector<std::vector<int32_t>> bases_;
  std::set<uint64_t> seen_;
};

}  // namespace

std::vector<std::pair<std::string, Placement>> diverse_placements(const Graph& graph, int32_t devices, int count,
                                                                  uint64_t seed,
                                                                  const std::vector<int32_t>& device_class) {
  if (!device_class.empty() && static_cast<int32_t>(device_class.size()) != devices)
    throw InputError("diverse_placements: device_class has " + std::to_string(device_class.size()) + " entries for " +
                     std::to_string(devices) + " devices");
  if (devices < 1) throw InputError("diverse_placements: needs at least one device");
  if (count < 1) throw InputError("diverse_placements: count must be >= 1");
  DiverseSet set(graph, devices, count);
  std::map<int32_t, int> singles_of_class;
  for (int32_t d = 0; d < devices; ++d)
    if (device_class.empty() || ++singles_of_class[device_class[d]] <= 2)
      set.add("single", std::vector<int32_t>(set.groups(), d));
  if (devices > 1) {
    set.add_structured();
    std::mt19937_64 rng(seed);
    set.add_random(rng);
  }
  return set.take();
}

std::vector<size_t> spread_by_simulated(const std::vector<double>& simulated, int count, double gap) {
  if (count < 1) throw InputError("spread_by_simulated: count must be >= 1");
  if (!(gap >= 0)) throw InputError("spread_by_simulated: gap must be >= 0");
  std::vector<size_t> order;
  for (size_t i = 0; i < simulated.size(); ++i)
    if (std::isfinite(simulated[i]) && simulated[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return simulated[a] < simulated[b]; });
  std::vector<size_t> picked;
  for (size_t i : order)
    if (picked.empty() || simulated[i] >= simulated[picked.back()] * (1 + gap)) picked.push_back(i);
  if (static_cast<int>(picked.size()) <= count) return picked;
  std::vector<size_t> thinned;
  for (int k = 0; k < count; ++k)
    thinned.push_back(
        picked[count == 1 ? 0 : static_cast<size_t>(std::llround(double(k) * (picked.size() - 1) / (count - 1)))]);
  return thinned;
}

size_t FidelityReport::min_rounds() const {
  size_t rounds = points.empty() ? 0 : points.front().rounds_s.size();
  for (const auto& p : points) rounds = std::min(rounds, p.rounds_s.size());
  return rounds;
}

void FidelityReport::compute_statistics() {
  std::vector<double> m, s;
  for (const auto& p : points) {
    m.push_back(p.measured_s);
    s.push_back(p.simulated_s);
  }
  if (m.size() >= 2) {
    spearman = placer::spearman(m, s);
    kendall = kendall_tau_b(m, s);
  }
  mape = mean_absolute_percentage_error(m, s);
  // Another simulator's Spearman and MAPE on the same measurements: NaN unless every point has it.
  auto other = [&](double FidelityPoint::*simulated, double& rho, double& ape) {
    std::vector<double> o;
    for (const auto& p : points)
      if (p.*simulated > 0) o.push_back(p.*simulated);
    const bool all = o.size() >= 2 && o.size() == points.size();
    rho = all ? placer::spearman(m, o) : std::numeric_limits<double>::quiet_NaN();
    ape = all ? mean_absolute_percentage_error(m, o) : std::numeric_limits<double>::quiet_NaN();
  };
  other(&FidelityPoint::simulated_unfitted_s, spearman_unfitted, mape_unfitted);
  other(&FidelityPoint::simulated_per_copy_s, spearman_per_copy, mape_per_copy);
  other(&FidelityPoint::simulated_equal_cpus_s, spearman_equal_cpus, mape_equal_cpus);
  other(&FidelityPoint::simulated_other_calibration_s, spearman_other_calibration, mape_other_calibration);
  const size_t rounds = min_rounds();
  std::vector<double> r0, r1;
  for (const auto& p : points)
    if (p.rounds_s.size() >= 2) {
      r0.push_back(p.rounds_s[0]);
      r1.push_back(p.rounds_s[1]);
    }
  retest_spearman =
      rounds >= 2 && points.size() >= 2 ? placer::spearman(r0, r1) : std::numeric_limits<double>::quiet_NaN();
  split_half_spearman = std::numeric_limits<double>::quiet_NaN();
  if (rounds >= 4 && points.size() >= 2) {
    std::vector<double> first, second;
    for (const auto& p : points) {
      const auto mid = p.rounds_s.begin() + static_cast<std::ptrdiff_t>(rounds / 2);
      const auto end = p.rounds_s.begin() + static_cast<std::ptrdiff_t>(rounds);
      first.push_back(std::accumulate(p.rounds_s.begin(), mid, 0.0) / static_cast<double>(rounds / 2));
      second.push_back(std::accumulate(mid, end, 0.0) / static_cast<double>(rounds - rounds / 2));
    }
    split_half_spearman = placer::spearman(first, second);
  }
}

}  // namespace placer
