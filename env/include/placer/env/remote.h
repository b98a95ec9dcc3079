// Evaluation in other processes or on other machines. A RemoteEvaluator
// evaluates placements of many problems (the service library implements it
// over ZeroMQ, service/workers.h: WorkerPool and `placer worker`; env/ only
// knows this interface). A DistributedEvaluator plugs one into a problem as
// one more Evaluator: an Environment whose options name a RemoteEvaluator
// sends it the placements it has not cached and keeps the cache, rewards and
// penalties itself.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "placer/env/environment.h"
#include "placer/env/evaluator.h"

namespace placer {

// How the far side evaluates: what it needs besides graph and cluster to give
// the result the local environment would give.
struct RemoteSettings {
  RewardMode mode = RewardMode::Simulated;  // Simulated or Measured (hybrid sends its measurements as Measured)
  MeasureOptions measure;
  const Profile* profile = nullptr;  // calibrates the simulator; null = roofline
  // Set to give up a batch (a trainer's cancel): DistributedEvaluator hands it to evaluate_cancellable. Not part
  // of the problem: prepare() ignores it.
  const std::atomic<bool>* cancel = nullptr;
};

// A batch given up because its cancel was set or the evaluator was shut down: no error of the placements.
class EvaluationCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What an evaluator prepared for one environment (e.g. the serialized graph
// and cluster), reused for every batch of that environment.
class RemoteProblem {
 public:
  virtual ~RemoteProblem() = default;
};

class RemoteEvaluator {
 public:
  virtual ~RemoteEvaluator() = default;
  // Once per environment and mode, before its first batch; graph, cluster and
  // profile are copied, so they need not outlive the call.
  virtual std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                                       const RemoteSettings& settings) = 0;
  // One result per placement, in order; blocks until every placement has one.
  // Placements are already validated against the problem's graph and cluster.
  // Throws (InputError or a subclass, with a message that says what to do)
  // when it cannot finish: no worker able to do it within its timeout, or a
  // worker that answered that it cannot do the task.
  virtual std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) = 0;
  // The same, giving up when *cancel (null: never) becomes true or shut_down() is called: throws
  // EvaluationCancelled, the batch's placements not evaluated. This default waits for evaluate().
  virtual std::vector<StepResult> evaluate_cancellable(const RemoteProblem& problem,
                                                       const std::vector<Placement>& placements,
                                                       const std::atomic<bool>* cancel) {
    (void)cancel;
    return evaluate(problem, placements);
  }
  // Fails every batch waiting now, and every later one, with EvaluationCancelled (a server stopping).
  virtual void shut_down() {}
};

// One problem's placements, evaluated by a RemoteEvaluator in one batch per
// call: simulated (with the problem's profile) or measured, as settings.mode
// says, given up (EvaluationCancelled) when settings.cancel is set. The remote
// problem is prepared on first use; settings.profile is taken from the
// prepared problem.
class DistributedEvaluator : public Evaluator {
 public:
  DistributedEvaluator(std::shared_ptr<const PreparedProblem> problem, std::shared_ptr<RemoteEvaluator> remote,
                       RemoteSettings settings, RewardOptions reward);
  std::vector<Evaluation> evaluate(const std::vector<Placement>& placements) override;
  void add_stats(EvalStats& stats) const override;

 private:
  std::shared_ptr<const PreparedProblem> problem_;
  std::shared_ptr<RemoteEvaluator> remote_;
  RemoteSettings settings_;
  RewardOptions reward_;
  std::mutex mu_;
  std::shared_ptr<const RemoteProblem> prepared_;
  std::atomic<int64_t> evaluated_{0};
};

}  // namespace placer
