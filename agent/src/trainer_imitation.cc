// Imitation in training: behaviour cloning of the warm start's placement, and
// the elite pool (the best placements sampled so far) whose teacher-forced
// decisions add a self-imitation loss to each update.
#include <torch/nn.h>
#include <torch/optim.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "policy.h"
#include "trainer.h"
#include "trainer_impl.h"

namespace placer {

void Trainer::behaviour_clone() {
  if (!policy_->clones_placements() || c_.warm_start.bc_steps <= 0) return;
  struct Target {
    Task* task;
    std::vector<int32_t> units;
    Rollout rollout;
  };
  std::vector<Target> targets;
  for (auto& t : tasks_)
    if (t->has_warm) {
      Target tg{t.get(), t->problem.contract(t->warm), {}};
      SampleOptions so;
      so.temperature = c_.optimizer.temperature;
      tg.rollout = policy_->sample(t->problem, 1, so, rng_, &tg.units);
      targets.push_back(std::move(tg));
    }
  if (targets.empty()) return;
  torch::optim::Adam bc(policy_->parameters(), torch::optim::AdamOptions(c_.warm_start.bc_lr));
  // p > 0.5 for every target decision means greedy decoding reproduces it.
  const double threshold = std::log(0.55);
  int step = 0;
  double worst = -1e9;
  for (; step < c_.warm_start.bc_steps; ++step) {
    if (ctl_.cancel && ctl_.cancel->load()) {  // a cancelled job stops within one step
      bc_cancelled_ = true;
      break;
    }
    bc.zero_grad();
    worst = 0;
    torch::Tensor loss = torch::zeros({});
    for (auto& tg : targets) {
      LogProbs lp = policy_->evaluate(tg.task->problem, tg.rollout);
      loss = loss - lp.logp.mean();
      worst = std::min(worst, lp.logp.min().item<double>());
    }
    if (worst > threshold) break;
    loss.backward();
    // grad_clip 0: no clipping, as in the updates (it clipped to 1e-6 here).
    if (c_.optimizer.grad_clip > 0) torch::nn::utils::clip_grad_norm_(policy_->parameters(), c_.optimizer.grad_clip);
    bc.step();
  }
  bc_steps_used_ = step;
  bc_reproduced_ = worst > threshold;
  if (!bc_reproduced_)
    std::fprintf(stderr,
                 "warm start: behaviour cloning stopped after %d steps before reproducing the baseline exactly "
                 "(least likely target decision p=%.3f)\n",
                 step, std::exp(worst));
}

void Trainer::offer_elite(Task& t, double reward, const std::vector<int32_t>& units, int64_t at) {
  const size_t cap = static_cast<size_t>(c_.optimizer.elites);
  if (cap == 0 || !policy_->clones_placements()) return;
  if (t.elites.size() >= cap && reward <= t.elites.back().reward) return;
  for (const auto& e : t.elites)
    if (e.units == units) return;
  SampleOptions so;
  so.temperature = c_.optimizer.temperature;
  torch::NoGradGuard no_grad;
  std::mt19937_64 unused(0);  // a teacher-forced decode draws nothing; rng_ stays the run's
  Task::Elite e{reward, units, policy_->sample(t.problem, 1, so, unused, &units), at};
  auto pos = std::find_if(t.elites.begin(), t.elites.end(), [&](const Task::Elite& x) { return x.reward < reward; });
  t.elites.insert(pos, std::move(e));
  if (t.elites.size() > cap) t.elites.pop_back();
}

torch::Tensor Trainer::elite_loss(Task& t) {
  if (t.elites.empty() || c_.optimizer.elite_weight <= 0) return torch::zeros({});
  // One batch of every elite's teacher-forced decisions.
  Rollout all = t.elites[0].rollout;
  std::vector<torch::Tensor> actions, dynamic;
  for (const auto& e : t.elites) actions.push_back(e.rollout.actions), dynamic.push_back(e.rollout.dynamic);
  all.batch = static_cast<int32_t>(t.elites.size());
  all.actions = torch::cat(actions, 0);
  all.dynamic = torch::cat(dynamic, 0);
  all.unit_device.clear();
  for (const auto& e : t.elites) all.unit_device.push_back(e.units);
  return -policy_->evaluate(t.problem, all).logp.mean();
}

}  // namespace placer
