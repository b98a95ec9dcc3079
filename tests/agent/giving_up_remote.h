// Training helpers the agent tests share: controls without a progress line, and rollout workers
// (simulating here) that give a batch up the way the worker pool does at a cancel.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/remote.h"

namespace placer::testing {

inline TrainControls quiet() {
  TrainControls c;
  c.progress = false;
  return c;
}

// Rollout workers simulating here that give up a batch where `give_up` says (its number from 1, its
// problem's graph, its size): the cancel set and EvaluationCancelled thrown, as the worker pool does.
class GivingUpRemote : public RemoteEvaluator {
 public:
  using Rule = std::function<bool(int batch, const std::string& graph, size_t size)>;
  struct Problem : RemoteProblem {
    std::unique_ptr<Environment> sim;
  };
  GivingUpRemote(std::atomic<bool>* cancel, Rule give_up) : cancel_(cancel), give_up_(std::move(give_up)) {}
  std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                               const RemoteSettings&) override {
    auto p = std::make_shared<Problem>();
    p->sim = std::make_unique<Environment>(graph, cluster);
    return p;
  }
  std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) override {
    const Environment& sim = *dynamic_cast<const Problem&>(problem).sim;
    if (give_up_(++batches_, sim.graph().name, placements.size())) {
      cancel_->store(true);
      throw EvaluationCancelled("workers: the batch was cancelled");
    }
    std::vector<StepResult> out;
    for (const Placement& p : placements) out.push_back(sim.simulate(p));
    return out;
  }

 private:
  std::atomic<bool>* cancel_;
  Rule give_up_;
  int batches_ = 0;
};

}  // namespace placer::testing
