// The Placer interface: every algorithmic and learned placer, chosen by name.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer {

class Environment;

// Thrown when no memory-feasible placement exists or can be found; the
// message says why (e.g. "op 'embedding' needs 12 GiB, largest device 8 GiB").
class NoFeasiblePlacement : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PlaceContext {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  Environment* env = nullptr;  // costs, simulation and rewards; never null
  uint64_t seed = 0;
  int64_t sample_budget = 2000;  // evaluations a search method may spend
  double time_limit_s = 60.0;
  std::map<std::string, std::string> options;  // method-specific ("objective": "latency", ...)
  // local_search, guided_search: anneal from this placement instead of the best of their
  // heuristics; then time_limit_s also ends them (the temperature follows
  // whichever of time and budget runs out first). Null: as always.
  const Placement* start = nullptr;
  // local_search, guided_search: set to end the search early, with the best so far (a cancelled service
  // job's refinement ran its whole budget of evaluations, cancel or not); checked between their start's
  // candidates too (after the first). Null: never.
  const std::atomic<bool>* cancel = nullptr;
  // local_search, guided_search: end at this time with their best so far (their start's candidates too,
  // after the first), their schedule as without it (so a run the time does not cut is the same run). The
  // service's requests keep their deadlines with it. Unset: never.
  std::optional<std::chrono::steady_clock::time_point> stop_at;

  // The graph, cluster and environment of `env`, with `seed`; the rest as above.
  static PlaceContext on(Environment& env, uint64_t seed);
};

struct PlaceResult {
  Placement placement;
  std::string method;
  double place_seconds = 0.0;  // wall time to compute the placement
  int64_t evaluations = 0;     // env evaluations spent
  std::string note;            // e.g. "ilp: incumbent 1.2 s, bound 1.1 s, gap 8%; coarsened to 40 groups"
  std::map<std::string, double> stats;
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string name() const = 0;
  virtual PlaceResult place(const PlaceContext& context) = 0;
  // True when another seed gives another placement worth evaluating (random
  // sampling, randomised search): searches run these again with new seeds.
  // (mincut's seed only breaks METIS's ties, so it is not.)
  virtual bool stochastic() const { return false; }
  // The method options (--option KEY=VALUE) this placer reads; none by default.
  virtual std::vector<std::string> option_keys() const { return {}; }
};

// Algorithmic placers: single, round_robin, random, expert, mincut, m_topo,
// m_etf, m_sct, heft, dp, ilp, local_search.
std::vector<std::string> placer_names();
std::unique_ptr<Placer> make_placer(const std::string& name);  // throws InputError listing names
// InputError when an option is read by none of `methods` (a misspelt key would
// otherwise be ignored), naming the key and the options each method takes.
void check_method_options(const std::vector<std::string>& methods, const std::map<std::string, std::string>& options);

}  // namespace placer
