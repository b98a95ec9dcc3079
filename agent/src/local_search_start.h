// Where the annealing searches start (internal to agent/src): local_search
// and guided_search start from the same placement and move the same groups.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "placer/graphs/measurement.h"
#include "placers_common.h"

namespace placer {

// One device per group expanded to the op-level placement.
Placement group_placement(const UnitProblem& p, const std::vector<int32_t>& group_device);

struct AnnealingStart {
  std::vector<int32_t> group_device;
  std::string method;         // the placer it came from (m_etf, heft, dp, expert, ...)
  int32_t simulated = 0;      // candidate placements simulated to choose it
  int32_t updates_moved = 0;  // update groups offload_updates moved off it (0: its placement as is)
  // "m_etf", or "offload_updates on m_etf" where the updates were moved.
  std::string name() const { return updates_moved > 0 ? "offload_updates on " + method : method; }
};

// The placers the annealing searches start from: m_etf, heft, dp, expert.
const std::vector<std::string>& start_methods();

// offload_updates' move (placers_offload.cc): every group of parameters and
// their SGD updates in `group_device`, largest first, to the device where its
// load ends lowest with room, a device's load starting at its busy time in
// `base` (the step of `group_device`). Returns how many groups moved.
int32_t move_updates_off(const Graph& graph, const UnitProblem& p, const StepResult& base,
                         std::vector<int32_t>* group_device);

// Where best_start may stop short, checked between candidates (so at least one is simulated): once
// `max_simulated` candidates are simulated, and with `stoppable` once the context's cancel or stop_at says stop.
struct StartLimits {
  int64_t max_simulated = std::numeric_limits<int64_t>::max();
  bool stoppable = false;
};

// The fastest under the simulator of m_etf (its best replayed candidate),
// heft, dp and expert (a placer that cannot place this graph drops out), and
// of the fastest of them with its updates moved off (offload_updates); without
// any, every group on device 0, repaired to fit memory. `limits` may end the
// candidates early: the fastest of those simulated.
AnnealingStart best_start(const PlaceContext& ctx, const UnitProblem& p, const StartLimits& limits = {});

// A given placement (PlaceContext::start) as the start: each group on its first op's device.
AnnealingStart given_start(const UnitProblem& p, const Placement& placement);

// The annealing searches' start: the context's start when given, else best_start within `budget`
// simulations and the context's cancel and stop_at (its candidates count in the budget: start.simulated).
AnnealingStart annealing_start(const PlaceContext& ctx, const UnitProblem& p, int64_t budget);

// `method`'s answer when its budget went on the start's candidates: the start as it is, those evaluations.
PlaceResult start_as_answer(const PlaceContext& ctx, const UnitProblem& p, const AnnealingStart& start,
                            const std::string& method, Clock::time_point started);

// The annealing searches' schedule: `budget` evaluations, the context's cancel and stop_at, and with a given
// start (PlaceContext::start) time_limit_s from `started` too, the temperature then following whichever of
// the budget and the time runs out first.
class AnnealingSchedule {
 public:
  AnnealingSchedule(const PlaceContext& ctx, Clock::time_point started, int64_t budget);
  // The share of the schedule spent after `evaluations`, in [0, 1]; nullopt when the run ends.
  std::optional<double> progress(int64_t evaluations) const;

 private:
  const PlaceContext& ctx_;
  int64_t budget_;
  std::optional<Clock::time_point> deadline_;
  double limit_s_ = 0.0;
};

// Groups that do work are the ones worth moving (all of them if none does).
std::vector<int32_t> movable_groups(const UnitProblem& p);

}  // namespace placer
