// The pretrained policy: where `make pretrained` puts it, and a policy's zero-shot answer
// within a time budget (its own proposals, a fast path of heuristics beside them, then
// local_search from the faster).
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "placer/agent/compare.h"
#include "placer/agent/learned.h"
#include "placer/env/environment.h"
#include "placer/graphs/error.h"
#include "placer/graphs/timing.h"

#ifndef PLACER_SOURCE_DIR
#define PLACER_SOURCE_DIR "."
#endif

namespace placer {

std::string pretrained_policy_dir() {
  if (const char* env = std::getenv("PLACER_PRETRAINED"); env && *env) return env;
  return std::string(PLACER_SOURCE_DIR) + "/policies/pretrained";
}

std::string resolve_policy_dir(const std::string& name) {
  return name == "pretrained" ? pretrained_policy_dir() : name;
}

std::shared_ptr<const LoadedPolicy> load_named_policy(const std::string& name) {
  const std::string dir = resolve_policy_dir(name);
  const bool pretrained = name == "pretrained";
  if (!std::filesystem::exists(dir))
    throw InputError("policy '" + name + "': " + dir + " does not exist" +
                     (pretrained ? " (`make pretrained` remakes it; PLACER_PRETRAINED names another folder)" : ""));
  try {
    return LoadedPolicy::load(dir);
  } catch (const InputError& e) {
    throw InputError("policy '" + name + "': " + e.what() +
                     (pretrained ? " (`make pretrained` remakes it; PLACER_PRETRAINED names another folder)" : ""));
  }
}

const std::vector<std::string>& policy_fast_path() {
  static const std::vector<std::string> methods = {"single", "round_robin", "expert", "m_topo",
                                                   "m_etf",  "m_sct",       "heft",   "offload_updates"};
  return methods;
}

namespace {

// The fastest placement of the fast path's heuristics (one that cannot place
// this problem is skipped); false when none placed it.
bool fastest_heuristic(const std::vector<std::string>& methods, const PlaceContext& context, PolicyAnswer* a,
                       Placement* placement) {
  const auto t0 = Clock::now();
  CompareOptions skip_failures;  // a heuristic that cannot place this problem drops out
  skip_failures.catch_all = true;
  std::vector<Compared> tried = compare_placers(methods, context, skip_failures);
  a->fast_path_seconds = seconds_since(t0);
  const int best = fastest(tried);
  if (best < 0) return false;
  a->fast_path_method = tried[best].method;
  a->fast_path_step_s = tried[best].step().step_s;
  *placement = std::move(tried[best].result.placement);
  return true;
}

// The policy's own answer in *a; false when it was skipped (`may_skip`: a fast path answers instead) for
// a cluster of more devices than it trained on, the reason in a->policy.note.
bool policy_answer(const LoadedPolicy& policy, const PlaceContext& context, double policy_s, int64_t placements,
                   bool may_skip, PolicyAnswer* a) {
  try {
    a->policy = policy.place(context, policy_s, placements);
  } catch (const PolicyOutOfRange& e) {
    if (!may_skip) throw;
    a->policy.note = std::string("skipped: ") + e.what();
    a->policy_ok = false;
    a->found_by = "policy";
    return false;
  }
  const StepResult s = context.env->simulate(a->policy.placement);
  a->policy_ok = s.ok();
  a->policy_step_s = a->step_s = s.step_s;
  a->placement = a->policy.placement;
  a->found_by = "policy";
  return true;
}

// local_search from each start (the faster first), the time left split between them; the answer is
// its placement where faster (or where the answer does not fit: `own_start`, one start, empty: local_search's own).
// Why a start was not refined goes in a->refine_note.
void refine_answer(const PlaceContext& context, double budget_s, Clock::time_point t0,
                   const std::vector<std::pair<Placement, std::string>>& starts, bool own_start, PolicyAnswer* a) {
  for (size_t i = 0; i < starts.size(); ++i) {
    // What is left of the budget, less a margin for the final simulation, shared by the starts left.
    const double left = (budget_s - seconds_since(t0) - 0.02) / static_cast<double>(starts.size() - i);
    if (left <= 0.005) {
      a->refine_note = "no time left in the budget";
      break;
    }
    PlaceContext sub = context;
    sub.start = own_start ? nullptr : &starts[i].first;
    sub.time_limit_s = left;
    sub.sample_budget = std::max<int64_t>(context.sample_budget, 1000000);  // time ends it
    try {
      PlaceResult r = make_placer("local_search")->place(sub);
      a->refined = true;
      a->refine_starts.push_back(own_start ? "its own start" : starts[i].second);
      a->refine_seconds += r.place_seconds;
      a->refine_evaluations += r.evaluations;
      const StepResult s = context.env->simulate(r.placement);
      if (s.ok() && (own_start || s.step_s < a->step_s)) {
        a->improved = true;
        a->step_s = s.step_s;
        a->placement = r.placement;
        a->found_by = own_start ? "local_search" : starts[i].second + "+local_search";
      }
    } catch (const NoFeasiblePlacement& e) {
      a->refine_note = std::string("local_search placed nothing: ") + e.what();
    }
  }
}

}  // namespace

// The share of a refined answer's budget the policy samples for. Its fixed rounds
// alone (24 ms on dlrm) left dlrm p100x4's answer at 2.627 ms where half the second
// of samples finds 1.747 (learned_heldout.md, "More sizes of each builder").
constexpr double kPolicyShare = 0.5;

PolicyAnswer place_with_policy(const LoadedPolicy& policy, const PlaceContext& context, double budget_s, bool refine,
                               const std::vector<std::string>& fast_path, int64_t placements) {
  const auto t0 = Clock::now();
  PolicyAnswer a;
  if (placements > 0 && (refine || !fast_path.empty()))
    throw InputError("a budget of placements is the policy alone's (no refinement, no fast path beside it)");
  // The policy alone (no fast path, no refinement) has the budget to itself: it keeps
  // sampling until then, less a margin for the answer's simulation. Before a
  // refinement it samples for half the budget (kPolicyShare) and leaves local_search
  // the rest; beside the fast path alone it decodes its fixed rounds.
  const bool alone = !refine && fast_path.empty();
  double policy_s = 0.0;  // 0: the fixed rounds only (or, with `placements`, the budget alone)
  if (alone && placements == 0)
    policy_s = std::max(1e-3, 0.9 * budget_s - 0.02);
  else if (refine)
    policy_s = kPolicyShare * budget_s;
  const bool skipped = !policy_answer(policy, context, policy_s, placements, !fast_path.empty(), &a);
  Placement heuristic;
  const bool placed = !fast_path.empty() && fastest_heuristic(fast_path, context, &a, &heuristic);
  if (skipped && !placed) throw PolicyOutOfRange(a.policy.note);
  if (placed && (!a.policy_ok || a.fast_path_step_s < a.step_s)) {
    a.step_s = a.fast_path_step_s;
    a.placement = heuristic;
    a.found_by = a.fast_path_method;
  }
  // local_search starts from the faster of the two placements and, where both
  // placed the graph, from the slower one too, the time left split between
  // them: the slower start can lie in a better basin (mobilenet_v2 p100x4:
  // the policy's 7.510 ms annealed to 7.145 ms in 0.6 s, offload_updates'
  // 7.284 ms to 7.263 ms).
  std::vector<std::pair<Placement, std::string>> starts;
  if (a.policy_ok || a.found_by != "policy") starts.emplace_back(a.placement, a.found_by);
  if (a.policy_ok && !a.fast_path_method.empty() && heuristic.device_of != a.policy.placement.device_of)
    starts.emplace_back(a.found_by == "policy" ? heuristic : a.policy.placement,
                        a.found_by == "policy" ? a.fast_path_method : "policy");
  // No placement that fits: local_search from its own start, which repairs memory (the answer was the
  // policy's out-of-memory placement where local_search alone found one that fits).
  const bool own_start = starts.empty();
  if (own_start) starts.emplace_back(Placement{}, "");
  if (refine) refine_answer(context, budget_s, t0, starts, own_start, &a);
  a.seconds = seconds_since(t0);
  return a;
}
PolicyAnswer place_with_policy(const std::string& name, const PlaceContext& context, double budget_s, bool refine,
                               const std::vector<std::string>& fast_path, int64_t placements) {
  const auto t0 = Clock::now();
  const std::shared_ptr<const LoadedPolicy> policy = load_named_policy(name);
  const double load = seconds_since(t0);
  PolicyAnswer a = place_with_policy(*policy, context, budget_s - load, refine, fast_path, placements);
  a.load_seconds = load;
  a.seconds += load;
  return a;
}

}  // namespace placer
