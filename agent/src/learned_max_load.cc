// learned for the max-load objective: the gnn policy (policy.h: message
// passing over the units, the attention decoder) decides one device per
// colocation class (learned_max_load_units.h). It is warm-started by cloning the best
// cheap split (the split handed in as MaxLoadOptions::warm, else dp's, or
// every node on one accelerator), then trained by REINFORCE with a batch
// baseline, an entropy bonus and self-imitation of the best split sampled so
// far, on reward = -max_load / warm max_load (a split over an accelerator's
// memory, or on an accelerator that lacks support for it, is penalized and
// never kept). The result is the best feasible split seen, the warm start's
// included, so it is never worse than the warm start; found_by says whose it is.
#include <ATen/Parallel.h>
#include <torch/nn.h>
#include <torch/optim.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "learned_max_load_units.h"
#include "placer/agent/max_load_learned.h"
#include "placer/env/max_load.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_writer.h"
#include "policy.h"

namespace placer {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kBatch = 32;          // placements per update, the first one greedy
constexpr int kCloneSteps = 200;        // behaviour cloning of the warm start, at most
constexpr double kLearningRate = 0.01;  // Adam, as `placer train`'s defaults
constexpr double kEntropyWeight = 0.01;
constexpr double kImitationWeight = 1.0;  // self-imitation of the best split
constexpr double kGradClip = 1.0;

struct Warm {
  WorkloadPlacement placement;  // empty: none fits
  double max_load = 0.0;
  std::string from;
};

// The split handed in, else dp's (when dp stays within max_ideals); single when it fits and is better.
Warm warm_start(const Workload& w, const MaxLoadOptions& options) {
  const MaxLoadEvaluator eval(w);
  Warm best;
  auto offer = [&](const WorkloadPlacement& p, const std::string& from) {
    if (p.empty() || !eval.feasible(p)) return;
    const double v = eval.evaluate(p);
    if (best.placement.empty() || v < best.max_load) best = {p, v, from};
  };
  if (!options.warm.empty()) {
    check_workload_placement(w, options.warm);
    offer(options.warm, options.warm_from.empty() ? "the warm start handed in" : options.warm_from);
  } else {
    try {
      offer(place_max_load(w, "dp", options).placement, "dp");
    } catch (const InputError&) {
      // dp gave up (more ideals than max_ideals): the warm start is single's split, or none.
    }
  }
  offer(place_max_load(w, "single", options).placement, "single");
  return best;
}

class Learner {
 public:
  Learner(const Workload& w, MaxLoadUnits units, const MaxLoadOptions& options, const Warm& warm,
          Clock::time_point deadline)
      : w_(w), eval_(w), units_(std::move(units)), rng_(options.seed), deadline_(deadline) {
    PolicyOptions po;
    po.kind = PolicyType::Gnn;
    policy_ = make_policy(po, options.seed);
    opt_ = std::make_unique<torch::optim::Adam>(policy_->parameters(), torch::optim::AdamOptions(kLearningRate));
    budget_ = options.samples;
    if (!warm.placement.empty()) {
      ref_ = warm.max_load;
      best_units_ = units_.contract(warm.placement);
      best_ = warm.max_load;
    } else {
      ref_ = std::max(1e-12, eval_.evaluate(WorkloadPlacement(w.nodes.size(), 0)));
    }
    ref_ = std::max(ref_, 1e-12);
  }

  bool out_of_time() const { return Clock::now() >= deadline_; }

  // Teacher-forced log-likelihood of the warm start until greedy decoding reproduces it.
  void clone() {
    if (best_units_.empty()) return;
    const Rollout target = forced(best_units_);
    torch::optim::Adam bc(policy_->parameters(), torch::optim::AdamOptions(kLearningRate));
    const double threshold = std::log(0.55);  // p > 0.5 for every decision: greedy decoding reproduces it
    for (; clone_steps_ < kCloneSteps && !out_of_time(); ++clone_steps_) {
      bc.zero_grad();
      const LogProbs lp = policy_->evaluate(units_.input, target);
      if (lp.logp.min().item<double>() > threshold) {
        cloned_ = true;
        break;
      }
      (-lp.logp.mean()).backward();
      torch::nn::utils::clip_grad_norm_(policy_->parameters(), kGradClip);
      bc.step();
    }
  }

  // REINFORCE updates until the sample budget or the deadline.
  void train() {
    while (samples_ + kBatch <= budget_ && !out_of_time()) update();
  }

  MaxLoadResult result(const Warm& warm) const {
    MaxLoadResult r;
    r.method = "learned";
    if (best_units_.empty()) {
      r.note = detail::concat("no split fits the accelerators' memory (", samples_, " samples)");
      return r;
    }
    r.placement = units_.expand(best_units_);
    r.warm_max_load = warm.placement.empty() ? 0.0 : warm.max_load;
    r.found_by = best_at_ > 0 ? "policy" : warm.from;
    r.note = detail::concat(
        "gnn policy over ", units_.input.n, " colocation classes; warm start: ",
        warm.placement.empty() ? std::string("none fits") : warm.from + " " + format_number(warm.max_load, 6),
        ", cloned in ", clone_steps_, " steps", cloned_ ? "" : " (not reproduced exactly)", "; ", samples_,
        " samples in ", updates_, " updates; ");
    if (best_at_ > 0)
      r.note += detail::concat("the policy found the answer at sample ", best_at_);
    else
      r.note += detail::concat("the warm start's split kept (the policy's best sample: ",
                               std::isfinite(best_sampled_) ? format_number(best_sampled_, 6) : "none feasible", ")");
    return r;
  }

 private:
  Rollout forced(const std::vector<int32_t>& units) {
    SampleOptions so;
    return policy_->sample(units_.input, 1, so, rng_, &units);
  }

  void update();
  torch::Tensor imitation_loss();

  const Workload& w_;
  MaxLoadEvaluator eval_;
  MaxLoadUnits units_;
  std::mt19937_64 rng_;
  Clock::time_point deadline_;
  std::shared_ptr<PolicyImpl> policy_;
  std::unique_ptr<torch::optim::Adam> opt_;
  int64_t budget_ = 0, samples_ = 0, updates_ = 0, best_at_ = 0;
  int clone_steps_ = 0;
  bool cloned_ = false;
  double ref_ = 1.0;
  double best_ = std::numeric_limits<double>::infinity();
  double best_sampled_ = std::numeric_limits<double>::infinity();
  std::vector<int32_t> best_units_;
  Rollout best_rollout_;  // teacher-forced rollout of best_units_ (empty batch: not made yet)
};

torch::Tensor Learner::imitation_loss() {
  if (best_units_.empty()) return torch::zeros({});
  if (best_rollout_.batch == 0) best_rollout_ = forced(best_units_);
  return -policy_->evaluate(units_.input, best_rollout_).logp.mean();
}

void Learner::update() {
  SampleOptions so;
  so.greedy_rows = 1;
  const Rollout r = policy_->sample(units_.input, kBatch, so, rng_);
  std::vector<float> reward(kBatch);
  for (int32_t b = 0; b < kBatch; ++b) {
    const std::vector<int32_t>& units = r.unit_device[static_cast<size_t>(b)];
    const double v = eval_.evaluate(units_.expand(units));
    const double excess = units_.excess(w_, units);
    ++samples_;
    reward[static_cast<size_t>(b)] = static_cast<float>(-v / ref_ - (excess > 0 ? 1.0 + excess : 0.0));
    if (excess > 0) continue;
    best_sampled_ = std::min(best_sampled_, v);
    if (v < best_ * (1.0 - 1e-12)) {
      best_ = v;
      best_units_ = units;
      best_at_ = samples_;
      best_rollout_ = Rollout();
    }
  }
  // Advantages over the stochastic rows (the greedy row only reports).
  const torch::Tensor R = torch::tensor(reward).narrow(0, 1, kBatch - 1);
  const torch::Tensor A = (R - R.mean()) / (R.std() + 1e-6);
  opt_->zero_grad();
  const LogProbs lp = policy_->evaluate(units_.input, r);
  const torch::Tensor logp = lp.logp.narrow(0, 1, kBatch - 1).sum(1);
  torch::Tensor loss = -(A * logp).mean() - kEntropyWeight * lp.entropy.mean();
  loss = loss + kImitationWeight * imitation_loss();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(policy_->parameters(), kGradClip);
  opt_->step();
  ++updates_;
}

}  // namespace

void check_max_load_learned_options(const Workload& w, const MaxLoadOptions& options) {
  if (options.samples < kBatch)
    throw InputError(
        detail::concat("learned: --budget (samples) must be at least ", kBatch, ", got ", options.samples));
  if (!(options.time_limit_s > 0))
    throw InputError(detail::concat("learned: --time-limit must be > 0, got ", options.time_limit_s));
  if (w.cluster.devices() > kMaxDevices)
    throw InputError(detail::concat("learned: the policies place on at most ", kMaxDevices,
                                    " devices, the cluster has ", w.cluster.devices(), " (--accelerators + --cpus)"));
}

MaxLoadResult max_load_learned(const Workload& w, const MaxLoadOptions& options) {
  check_max_load_learned_options(w, options);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::min(options.time_limit_s, 1e7)));
  TorchThreads threads(1);
  MaxLoadUnits units = make_max_load_units(w);
  const Warm warm = warm_start(w, options);
  Learner learner(w, std::move(units), options, warm, deadline);
  learner.clone();
  learner.train();
  MaxLoadResult r = learner.result(warm);
  if (!r.placement.empty()) r.max_load = max_load(w, r.placement).max_load;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

const std::vector<std::string>& max_load_methods_with_learned() {
  static const std::vector<std::string> methods = [] {
    std::vector<std::string> m = max_load_methods();
    m.push_back("learned");
    return m;
  }();
  return methods;
}

MaxLoadResult place_max_load_or_learned(const Workload& w, const std::string& method, const MaxLoadOptions& options) {
  if (method == "learned") return max_load_learned(w, options);
  for (const std::string& m : max_load_methods())
    if (m == method) return place_max_load(w, method, options);
  throw InputError(unknown_name("max_load method", method, max_load_methods_with_learned()));
}

}  // namespace placer
