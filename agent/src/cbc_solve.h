// What of a CBC solve can be trusted, for every placer that runs CBC: ilp
// (placers_ilp.cc) and max_load's ilp (max_load_ilp.cc). Defined in
// cbc_solve.cc, part of placer_agent_max_load (no LibTorch), which both link.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

class CbcModel;

namespace placer {

// How a CBC solve ended, from CbcModel's flags after branchAndBound.
struct CbcStop {
  bool proven_optimal = false;  // isProvenOptimal(): status 0 with an incumbent
  bool seconds_limit = false;   // isSecondsLimitReached(), or the clock past the limit (maximumSecondsReached())
  int secondary_status = -1;    // secondaryStatus(): 0 completed, 1 relaxation infeasible or cut off, 2 gap, 4 time...
  bool lp_stopped = false;      // the last LP (Clp) stopped on its time or iteration limit, or was abandoned
};
// Whether the solve proved its incumbent optimal (within the gap asked for).
bool cbc_proved_optimal(const CbcStop& stop);

// What of a CBC solve can be trusted (read_cbc), for every placer that runs CBC (ilp, max_load's ilp).
struct CbcResult {
  std::vector<double> best;  // empty: no solution found
  double objective = 0.0;    // of `best`
  // -inf: none worth reporting (the LP was cut short)
  double best_possible = -std::numeric_limits<double>::infinity();
  bool optimal = false;
  bool infeasible = false;  // proven: the search completed with no solution and its LPs finished
  int64_t nodes = 0;
};
// CBC's time limit on `model` (at least 1 ms), and Clp's a little after it (a tenth more and 20 ms: CBC checks
// its own only between nodes).
void limit_cbc_seconds(CbcModel& model, double time_limit_s);
// How the solve ended, after branchAndBound: a solution CBC discarded (objective 1e50) is none, and the
// bound of a relaxation Clp stopped at its limit is not one.
CbcResult read_cbc(CbcModel& model, int ncols);

}  // namespace placer
