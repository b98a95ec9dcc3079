// guided_search: local_search's annealing (same start, same temperature
// schedule, same memory rule) whose moves are drawn from a policy learned
// during the search instead of uniformly (issue 25: "the policy as the
// proposal distribution of a search").
//
// The policy is tabular: a logit per (group, device). A move proposes a
// group's device from softmax(logits) over the other devices; every evaluated
// move updates the logits of the devices it tried by its reward change (a
// bandit's REINFORCE step), and an improving move also passes its credit to
// the moved groups' graph neighbours: they are proposed to follow it next
// (a frontier of suggested moves), and their logit for that device rises. A
// share of the moves grows a chain of connected groups on one device and moves
// it whole, which a single move cannot do without paying two transfers first.
//
// Budget: PlaceContext::sample_budget counts every placement scored, the start
// candidates simulated (m_etf, heft, dp, expert) included; the result's
// `evaluations` is exactly that count, never over the budget. Scored as
// local_search scores (search_score: in measured and hybrid mode, the
// calibrated simulator), its best kept as local_search keeps it (better_score:
// feasible first), and as local_search it takes PlaceContext::start (then also
// ending at time_limit_s), cancel and stop_at.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "annealer.h"

namespace placer {
namespace {

// Group graph: the groups whose units exchange tensors, each once.
std::vector<std::vector<int32_t>> group_neighbours(const UnitProblem& p) {
  std::vector<std::set<int32_t>> sets(p.groups());
  for (int32_t u = 0; u < p.n; ++u)
    for (const Edge& e : p.succs[u]) {
      const int32_t a = p.group_of[u], b = p.group_of[e.op];
      if (a != b) sets[a].insert(b), sets[b].insert(a);
    }
  std::vector<std::vector<int32_t>> out(p.groups());
  for (int32_t g = 0; g < p.groups(); ++g) out[g].assign(sets[g].begin(), sets[g].end());
  return out;
}

struct GuidedOptions {
  double temperature = 0.001;  // as local_search's option
  double lr = 1.0;             // logit step per unit of scaled reward change
  double follow = 0.4;         // share of moves taken from the frontier when it has any
  double chain = 0.15;         // share of chain moves
  double swap = 0.15;          // share of swaps
  int32_t max_chain = 6;       // groups in a chain move, at most
  size_t frontier_cap = 64;
};

class GuidedAnnealing : public Annealer {
 public:
  GuidedAnnealing(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start, GuidedOptions o)
      : Annealer(ctx, p, std::move(start), o.temperature),
        o_(o),
        neighbours_(group_neighbours(p)),
        logits_(static_cast<size_t>(p.groups()) * p.k, 0.0) {}

  std::string note(const AnnealingStart& start) const override {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "guided_search: policy-guided annealing from %s (%d start candidates), %lld evaluations, %lld "
                  "accepted, %lld followed the policy's frontier, reward %.6g -> %.6g",
                  start.name().c_str(), start.simulated, static_cast<long long>(evaluations()),
                  static_cast<long long>(accepted()), static_cast<long long>(followed_), start_reward(), best_reward());
    return buf;
  }

 private:
  double& logit(int32_t g, int32_t d) { return logits_[static_cast<size_t>(g) * problem().k + d]; }

  // A device other than current()[g], drawn from the policy's softmax over the others.
  int32_t sample_device(int32_t g) {
    const int32_t k = problem().k, at = current()[g];
    double top = -1e300;
    for (int32_t d = 0; d < k; ++d)
      if (d != at) top = std::max(top, logit(g, d));
    std::vector<double> w(k, 0.0);
    for (int32_t d = 0; d < k; ++d)
      if (d != at) w[d] = std::exp(logit(g, d) - top);
    return std::discrete_distribution<int32_t>(w.begin(), w.end())(rng());
  }

  bool fits(const GroupMove& move) const {
    const UnitProblem& p = problem();
    std::vector<int64_t> in_use = used();
    for (auto [g, d] : move) in_use[current()[g]] -= p.group_mem[g], in_use[d] += p.group_mem[g];
    for (int32_t d = 0; d < p.k; ++d)
      if (in_use[d] > used()[d] && in_use[d] > p.capacity[d]) return false;
    return true;
  }

  GroupMove propose() override {
    const std::vector<int32_t>& cur = current();
    GroupMove move;
    const double r = uniform();
    if (!frontier_.empty() && r < o_.follow) {
      const auto [g, d] = frontier_.back();
      frontier_.pop_back();
      if (cur[g] != d) move = {{g, d}}, ++followed_;
    } else if (r < o_.follow + o_.chain) {
      move = chain_move();
    } else if (r < o_.follow + o_.chain + o_.swap) {
      const int32_t a = random_group(), b = random_group();
      if (cur[a] != cur[b]) move = {{a, cur[b]}, {b, cur[a]}};
    } else {
      const int32_t g = random_group();
      move = {{g, sample_device(g)}};
    }
    return (!move.empty() && fits(move)) ? move : GroupMove{};
  }

  // A connected set of up to max_chain groups sharing the first one's device,
  // grown breadth first from a random group, all to one policy-drawn device.
  GroupMove chain_move() {
    const std::vector<int32_t>& cur = current();
    const int32_t a = random_group();
    const int32_t from = cur[a], to = sample_device(a);
    const int32_t size = std::uniform_int_distribution<int32_t>(2, std::max(2, o_.max_chain))(rng());
    std::vector<int32_t> chain = {a};
    std::set<int32_t> seen = {a};
    for (size_t i = 0; i < chain.size() && static_cast<int32_t>(chain.size()) < size; ++i)
      for (int32_t n : neighbours_[chain[i]])
        if (cur[n] == from && seen.insert(n).second && static_cast<int32_t>(chain.size()) < size) chain.push_back(n);
    GroupMove move;
    for (int32_t g : chain) move.push_back({g, to});
    return move;
  }

  // The policy's update from one evaluated move: each tried (group, device)
  // by the scaled reward change; an improvement also suggests the move to
  // the moved groups' neighbours.
  void evaluated(const GroupMove& move, double delta) override {
    const double adv = std::clamp(delta / initial_temperature(), -3.0, 3.0);
    for (auto [g, d] : move) logit(g, d) = std::clamp(logit(g, d) + o_.lr * adv, -8.0, 8.0);
    if (delta <= 0) return;
    for (auto [g, d] : move)
      for (int32_t n : neighbours_[g]) {
        if (current()[n] == d) continue;
        logit(n, d) = std::clamp(logit(n, d) + 0.5 * o_.lr * adv, -8.0, 8.0);
        frontier_.push_back({n, d});
      }
    if (frontier_.size() > o_.frontier_cap)
      frontier_.erase(frontier_.begin(), frontier_.begin() + (frontier_.size() - o_.frontier_cap));
  }

  const GuidedOptions o_;
  const std::vector<std::vector<int32_t>> neighbours_;
  std::vector<double> logits_;
  std::vector<std::pair<int32_t, int32_t>> frontier_;
  int64_t followed_ = 0;
};

GuidedOptions guided_options(const PlaceContext& ctx) {
  GuidedOptions o;
  o.temperature = option_double(ctx, "temperature", o.temperature, 0.0);
  o.lr = option_double(ctx, "policy_lr", o.lr, 0.0);
  o.follow = option_double(ctx, "follow", o.follow, 0.0, 1.0);
  o.chain = option_double(ctx, "chain", o.chain, 0.0, 1.0);
  o.swap = option_double(ctx, "swap", o.swap, 0.0, 1.0);
  o.max_chain = static_cast<int32_t>(option_int(ctx, "max_chain", o.max_chain, 1, 1 << 20));
  if (o.follow < 0 || o.chain < 0 || o.swap < 0 || o.follow + o.chain + o.swap > 1.0)
    throw InputError("option 'follow', 'chain', 'swap': expected shares >= 0 that add up to at most 1");
  if (o.max_chain < 2) throw InputError("option 'max_chain': expected at least 2, got " + std::to_string(o.max_chain));
  return o;
}

class GuidedSearchPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "guided_search"; }
  std::vector<std::string> option_keys() const override {
    return {"temperature", "policy_lr", "follow", "chain", "swap", "max_chain"};
  }
  bool stochastic() const override { return true; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const GuidedOptions options = guided_options(ctx);
    return anneal(ctx, p, name(), started, [&](std::vector<int32_t> start) {
      return std::make_unique<GuidedAnnealing>(ctx, p, std::move(start), options);
    });
  }
};

}  // namespace

std::unique_ptr<Placer> make_guided_search() { return std::make_unique<GuidedSearchPlacer>(); }

}  // namespace placer
