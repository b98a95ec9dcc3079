// DistributedEvaluator: a RemoteEvaluator plugged into one problem (env/remote.h).
#include "placer/env/remote.h"

#include "placer/graphs/error.h"

namespace placer {

DistributedEvaluator::DistributedEvaluator(std::shared_ptr<const PreparedProblem> problem,
                                           std::shared_ptr<RemoteEvaluator> remote, RemoteSettings settings,
                                           RewardOptions reward)
    : problem_(std::move(problem)), remote_(std::move(remote)), settings_(settings), reward_(reward) {
  PLACER_CHECK(remote_ != nullptr, "DistributedEvaluator needs a RemoteEvaluator");
  PLACER_CHECK(settings_.mode != RewardMode::Hybrid, "a remote evaluator simulates or measures, not both");
  settings_.profile = problem_->profile();
}

std::vector<Evaluation> DistributedEvaluator::evaluate(const std::vector<Placement>& placements) {
  if (placements.empty()) return {};
  std::shared_ptr<const RemoteProblem> problem;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!prepared_) prepared_ = remote_->prepare(problem_->graph(), problem_->cluster(), settings_);
    problem = prepared_;
  }
  std::vector<StepResult> results = remote_->evaluate_cancellable(*problem, placements, settings_.cancel);
  PLACER_CHECK(results.size() == placements.size(), "remote evaluator returned ", results.size(), " results for ",
               placements.size(), " placements");
  evaluated_ += static_cast<int64_t>(placements.size());
  const bool measured = settings_.mode == RewardMode::Measured;
  std::vector<Evaluation> out;
  out.reserve(results.size());
  for (StepResult& r : results) out.push_back(score(std::move(r), reward_, measured));
  return out;
}

void DistributedEvaluator::add_stats(EvalStats& stats) const {
  const int64_t n = evaluated_.load();
  stats.remote += n;
  if (settings_.mode == RewardMode::Measured) stats.measurements += n;
}

}  // namespace placer
