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
#include <optional>
#include <random>
#include <set>

#include "local_search_start.h"
#include "placer/env/environment.h"
#include "placers_common.h"

namespace placer {
namespace {

using Move = std::vector<std::pair<int32_t, int32_t>>;  // (group, new device)

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

class GuidedAnnealing {
 public:
  GuidedAnnealing(const PlaceContext& ctx, const UnitProblem& p, std::vector<int32_t> start, GuidedOptions o)
      : ctx_(ctx),
        p_(p),
        o_(o),
        rng_(ctx.seed),
        movable_(movable_groups(p)),
        neighbours_(group_neighbours(p)),
        logits_(static_cast<size_t>(p.groups()) * p.k, 0.0),
        cur_(std::move(start)),
        used_(p.k, 0) {
    for (int32_t g = 0; g < p.groups(); ++g) used_[cur_[g]] += p.group_mem[g];
  }

  // Scores the start, then anneals until the schedule ends (its budget counts the start's score).
  void run(const AnnealingSchedule& schedule) {
    best_ = cur_;
    best_score_ = score(cur_);
    cur_r_ = start_r_ = best_score_.reward;
    t0_ = std::max(1e-12, o_.temperature * std::fabs(cur_r_));
    const double t_end = t0_ * 1e-3;
    // Empty proposals in a row (the memory rule broken, a swap within one device): bounded, so a full
    // cluster ends. In a row, as local_search's: counted over the whole run, a long run stopped short of its
    // budget once 100,000 had added up.
    int64_t stalls = 0;
    while (p_.k > 1 && stalls < 100000) {
      const std::optional<double> frac = schedule.progress(evaluations_);
      if (!frac) break;
      const double temp = t0_ * std::pow(t_end / t0_, *frac);
      const Move move = propose();
      if (move.empty()) {
        ++stalls;
        continue;
      }
      stalls = 0;
      try_move(move, temp);
    }
  }

  const std::vector<int32_t>& best() const { return best_; }
  double best_reward() const { return best_score_.reward; }
  double start_reward() const { return start_r_; }
  int64_t evaluations() const { return evaluations_; }
  int64_t accepted() const { return accepted_; }
  int64_t followed() const { return followed_; }

 private:
  SearchScore score(const std::vector<int32_t>& gd) {
    ++evaluations_;
    return search_score(*ctx_.env, group_placement(p_, gd));
  }

  double& logit(int32_t g, int32_t d) { return logits_[static_cast<size_t>(g) * p_.k + d]; }

  // A device other than cur_[g], drawn from the policy's softmax over the others.
  int32_t sample_device(int32_t g) {
    double top = -1e300;
    for (int32_t d = 0; d < p_.k; ++d)
      if (d != cur_[g]) top = std::max(top, logit(g, d));
    std::vector<double> w(p_.k, 0.0);
    for (int32_t d = 0; d < p_.k; ++d)
      if (d != cur_[g]) w[d] = std::exp(logit(g, d) - top);
    return std::discrete_distribution<int32_t>(w.begin(), w.end())(rng_);
  }

  int32_t random_group() { return movable_[std::uniform_int_distribution<size_t>(0, movable_.size() - 1)(rng_)]; }

  bool fits(const Move& move) const {
    std::vector<int64_t> used = used_;
    for (auto [g, d] : move) used[cur_[g]] -= p_.group_mem[g], used[d] += p_.group_mem[g];
    for (int32_t d = 0; d < p_.k; ++d)
      if (used[d] > used_[d] && used[d] > p_.capacity[d]) return false;
    return true;
  }

  Move propose() {
    Move move;
    const double r = unit_(rng_);
    if (!frontier_.empty() && r < o_.follow) {
      const auto [g, d] = frontier_.back();
      frontier_.pop_back();
      if (cur_[g] != d) move = {{g, d}}, ++followed_;
    } else if (r < o_.follow + o_.chain) {
      move = chain_move();
    } else if (r < o_.follow + o_.chain + o_.swap) {
      const int32_t a = random_group(), b = random_group();
      if (cur_[a] != cur_[b]) move = {{a, cur_[b]}, {b, cur_[a]}};
    } else {
      const int32_t g = random_group();
      move = {{g, sample_device(g)}};
    }
    return (!move.empty() && fits(move)) ? move : Move{};
  }

  // A connected set of up to max_chain groups sharing the first one's device,
  // grown breadth first from a random group, all to one policy-drawn device.
  Move chain_move() {
    const int32_t a = random_group();
    const int32_t from = cur_[a], to = sample_device(a);
    const int32_t size = std::uniform_int_distribution<int32_t>(2, std::max(2, o_.max_chain))(rng_);
    std::vector<int32_t> chain = {a};
    std::set<int32_t> seen = {a};
    for (size_t i = 0; i < chain.size() && static_cast<int32_t>(chain.size()) < size; ++i)
      for (int32_t n : neighbours_[chain[i]])
        if (cur_[n] == from && seen.insert(n).second && static_cast<int32_t>(chain.size()) < size) chain.push_back(n);
    Move move;
    for (int32_t g : chain) move.push_back({g, to});
    return move;
  }

  // The policy's update from one evaluated move: each tried (group, device)
  // by the scaled reward change; an improvement also suggests the move to
  // the moved groups' neighbours.
  void learn(const Move& move, double delta) {
    const double adv = std::clamp(delta / t0_, -3.0, 3.0);
    for (auto [g, d] : move) logit(g, d) = std::clamp(logit(g, d) + o_.lr * adv, -8.0, 8.0);
    if (delta <= 0) return;
    for (auto [g, d] : move)
      for (int32_t n : neighbours_[g]) {
        if (cur_[n] == d) continue;
        logit(n, d) = std::clamp(logit(n, d) + 0.5 * o_.lr * adv, -8.0, 8.0);
        frontier_.push_back({n, d});
      }
    if (frontier_.size() > o_.frontier_cap)
      frontier_.erase(frontier_.begin(), frontier_.begin() + (frontier_.size() - o_.frontier_cap));
  }

  // Evaluates the move; keeps it if better, or by the Metropolis rule at temp.
  void try_move(const Move& move, double temp) {
    std::vector<int32_t> old;
    for (auto [g, d] : move) old.push_back(cur_[g]), cur_[g] = d;
    const SearchScore scored = score(cur_);
    const double r = scored.reward;
    const double delta = r - cur_r_;
    if (delta >= 0 || unit_(rng_) < std::exp(delta / temp)) {
      cur_r_ = r;
      ++accepted_;
      for (size_t i = 0; i < move.size(); ++i) {
        used_[old[i]] -= p_.group_mem[move[i].first];
        used_[move[i].second] += p_.group_mem[move[i].first];
      }
      if (better_score(scored, best_score_)) best_score_ = scored, best_ = cur_;  // a feasible best stays
    } else {
      for (size_t i = 0; i < move.size(); ++i) cur_[move[i].first] = old[i];
    }
    learn(move, delta);
  }

  const PlaceContext& ctx_;
  const UnitProblem& p_;
  const GuidedOptions o_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  const std::vector<int32_t> movable_;
  const std::vector<std::vector<int32_t>> neighbours_;
  std::vector<double> logits_;
  std::vector<std::pair<int32_t, int32_t>> frontier_;
  std::vector<int32_t> cur_, best_;
  std::vector<int64_t> used_;
  SearchScore best_score_;
  double cur_r_ = 0.0, start_r_ = 0.0, t0_ = 1e-12;
  int64_t evaluations_ = 0, accepted_ = 0, followed_ = 0;
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
    const int64_t budget = std::max<int64_t>(1, ctx.sample_budget);
    const AnnealingStart start = annealing_start(ctx, p, budget);
    if (budget <= start.simulated) return start_as_answer(ctx, p, start, name(), started);
    GuidedAnnealing annealing(ctx, p, start.group_device, options);
    annealing.run(AnnealingSchedule(ctx, started, budget - start.simulated));
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "guided_search: policy-guided annealing from %s (%d start candidates), %lld evaluations, %lld "
                  "accepted, %lld followed the policy's frontier, reward %.6g -> %.6g",
                  start.name().c_str(), start.simulated, static_cast<long long>(annealing.evaluations()),
                  static_cast<long long>(annealing.accepted()), static_cast<long long>(annealing.followed()),
                  annealing.start_reward(), annealing.best_reward());
    PlaceResult out = finish(ctx, expand_groups(p, annealing.best()), name(), started, buf);
    out.evaluations = start.simulated + annealing.evaluations();
    out.stats["best_reward"] = annealing.best_reward();
    out.stats["start_reward"] = annealing.start_reward();
    out.stats["start_candidates"] = start.simulated;
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_guided_search() { return std::make_unique<GuidedSearchPlacer>(); }

}  // namespace placer
