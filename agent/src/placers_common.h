// Shared machinery of the algorithmic placers (internal to agent/src): the
// unit problem, the memory book, the list schedulers, and finishing a
// placement into a PlaceResult.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "list_schedulers.h"
#include "memory_book.h"
#include "placer/agent/placer.h"
#include "placer/graphs/error.h"
#include "unit_problem.h"

namespace placer {

// Turns an op-level device vector into the PlaceResult of `method`: checks
// co-location, validates, simulates to confirm it fits in memory and records
// the simulated step time in stats. When the simulator finds a device short
// (the placers plan without the tensors a device receives), it moves groups
// (repair_memory) to fit lower shares of device memory (75% down to 15%)
// until the simulator fits it, and the note says so; NoFeasiblePlacement
// with the simulator's overflow if none does.
using Clock = std::chrono::steady_clock;
PlaceResult finish(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method,
                   Clock::time_point started, std::string note = {});
// Whether the simulator fits op_device in device memory (finish's check, without the repair).
bool simulator_fits(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method);

// Default share of device memory the placers plan with; the rest is headroom
// for transferred tensors the estimate does not count.
inline constexpr double kMemoryFraction = 0.9;

// An algorithmic placer on the op-level unit problem. place() starts the
// clock, builds the context's problem (kMemoryFraction of each device's
// memory), checks that every co-location group fits some device, and hands
// them to place_units, which ends with finish(..., started, ...).
class UnitPlacer : public Placer {
 public:
  PlaceResult place(const PlaceContext& context) final;

 protected:
  virtual PlaceResult place_units(const PlaceContext& context, const UnitProblem& problem,
                                  Clock::time_point started) = 0;
};

std::string format_bytes(int64_t bytes);

// The reward a search (local_search, guided_search) climbs for one placement:
// the environment's own in simulated mode; in measured and hybrid mode the
// simulator's (calibrated by reward.profile when the environment has one, and
// in hybrid mode as refit so far). A search spends thousands of evaluations:
// run for real, local_search's 2,000 would take 20-30 min on cpu:2's nmt, and
// hybrid's rule (measure each new best) would measure dozens. Real runs are
// kept for its answer, which the caller measures (compare_placers, the
// trainer's warm start and final table). `ok`: the step ran (fit in memory); a failure's reward is its penalty's.
struct SearchScore {
  double reward = 0.0;
  bool ok = false;
};
SearchScore search_score(Environment& env, const Placement& placement);
// Whether `a` is a better search result than `b`: feasibility first (an ok step beats a failed one whatever
// their rewards: a small failure_penalty_s gives an OOM a higher reward), then the higher reward.
bool better_score(const SearchScore& a, const SearchScore& b);
// True once the context's cancel is set or its stop_at has passed: a search ends with its best so far.
bool stop_requested(const PlaceContext& context);
// A method's --option KEY=VALUE, else `fallback`; InputError naming the key
// when it is not a (finite) number, or outside [lo, hi].
double option_double(const PlaceContext& context, const std::string& key, double fallback,
                     double lo = -std::numeric_limits<double>::max(), double hi = std::numeric_limits<double>::max());
int64_t option_int(const PlaceContext& context, const std::string& key, int64_t fallback,
                   int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = std::numeric_limits<int64_t>::max());
std::string option_string(const PlaceContext& context, const std::string& key, const std::string& fallback);

// Factories, one per placers_*.cc.
std::unique_ptr<Placer> make_single();
std::unique_ptr<Placer> make_round_robin();
std::unique_ptr<Placer> make_random();
std::unique_ptr<Placer> make_expert();
std::unique_ptr<Placer> make_mincut();
std::unique_ptr<Placer> make_m_topo();
std::unique_ptr<Placer> make_m_etf();
std::unique_ptr<Placer> make_m_sct();
std::unique_ptr<Placer> make_heft();
std::unique_ptr<Placer> make_offload_updates();
std::unique_ptr<Placer> make_dp();
std::unique_ptr<Placer> make_ilp();
std::unique_ptr<Placer> make_local_search();
std::unique_ptr<Placer> make_guided_search();  // by name only: not in placer_names() ("all")

}  // namespace placer
