// What of a CBC solve can be trusted (cbc_solve.h).
#include "cbc_solve.h"

#include <CbcModel.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>

namespace placer {

// isProvenOptimal() is status 0 with an incumbent. A root relaxation that Clp stopped at its limit reads to
// CBC as infeasible (status 0, secondary 1): with the warm start as incumbent, "proven optimal" after a
// solve the clock cut. Only a search that completed (0), pruned everything against the incumbent (1) or
// closed the gap asked for (2), before the limit and with its LPs finished, proves it.
bool cbc_proved_optimal(const CbcStop& stop) {
  if (!stop.proven_optimal || stop.seconds_limit || stop.lp_stopped) return false;
  return stop.secondary_status >= 0 && stop.secondary_status <= 2;
}

// CBC checks its limit between nodes; the LPs of the root's strong branching ran for minutes on 8 devices
// and more (a 2 s limit took 29 s, 100 devices never returned): Clp stops them too. Its limit is a wall-clock
// deadline, a little after CBC's: at the same time, CBC's final check of its incumbent (an LP) always ran past
// it, and every solve stopped by the limit discarded its incumbent ("On closer inspection - solution discarded").
// The margin is a tenth of the limit plus 20 ms, at least 0.1 s (it was at least 0.5 s, and CBC's limit at
// least 0.1 s: a 0.01 s limit took 0.6 s); a caller that loses the incumbent keeps its warm start.
void limit_cbc_seconds(CbcModel& model, double time_limit_s) {
  const double seconds = std::max(1e-3, time_limit_s);
  model.setUseElapsedTime(true);
  model.setMaximumSeconds(seconds);
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(model.solver()))
    clp->getModelPtr()->setMaximumWallSeconds(seconds + std::max(0.1, 0.1 * seconds + 0.02));
}

// How the solve ended, and what of it can be trusted: a solution CBC discarded (objective 1e50) is none, and
// the bound of a relaxation Clp stopped at its limit (cuts from an unfinished LP) is not one.
CbcResult read_cbc(CbcModel& model, int ncols) {
  CbcStop stop;
  stop.proven_optimal = model.isProvenOptimal();
  stop.seconds_limit = model.isSecondsLimitReached() || model.maximumSecondsReached();
  stop.secondary_status = model.secondaryStatus();
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(model.solver()))
    stop.lp_stopped = clp->getModelPtr()->status() == 3 && clp->getModelPtr()->secondaryStatus() == 9;
  CbcResult out;
  out.nodes = model.getNodeCount();
  out.optimal = cbc_proved_optimal(stop);
  out.infeasible = model.isProvenInfeasible() && !stop.seconds_limit && !stop.lp_stopped;
  if (!stop.lp_stopped) out.best_possible = model.getBestPossibleObjValue();
  const double* best = model.bestSolution();
  if (best && model.getObjValue() < 1e30) {
    out.best.assign(best, best + ncols);
    out.objective = model.getObjValue();
  }
  return out;
}

}  // namespace placer
