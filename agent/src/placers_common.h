// Shared machinery of the algorithmic placers (internal to agent/src).
//
// Every placer works on a Problem: units (operators, or co-location groups of
// a coarsened graph) in topological order with a cost per device, a memory
// estimate, edges with bytes, and co-location groups that must share a
// device. Decisions are made per group; results expand to one device per op.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/env/cost_model.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"

namespace placer::placers {

struct Edge {
  int32_t op;     // the other end
  int64_t bytes;  // bytes of the tensors between the two ops
};

struct Problem {
  int32_t n = 0;                         // units, topologically ordered (every pred has a smaller id)
  int32_t k = 0;                         // devices
  std::vector<double> cost;              // [unit * k + device] seconds
  std::vector<int64_t> mem;              // per unit, bytes (params + activations estimate)
  std::vector<std::vector<Edge>> preds;  // per unit, unique
  std::vector<std::vector<Edge>> succs;
  std::vector<int32_t> group_of;              // unit -> group
  std::vector<std::vector<int32_t>> members;  // group -> units ascending
  std::vector<int64_t> group_mem;
  std::vector<int64_t> capacity;        // per device, bytes usable by placers
  std::vector<double> alpha;            // [from * k + to] seconds
  std::vector<double> inv_beta;         // [from * k + to] seconds per byte
  std::vector<std::string> unit_names;  // for messages
  std::vector<std::string> device_names;
  bool identical_devices = false;  // same costs, memory and links everywhere

  int32_t groups() const { return static_cast<int32_t>(members.size()); }
  double c(int32_t unit, int32_t device) const { return cost[static_cast<size_t>(unit) * k + device]; }
  double transfer(int32_t from, int32_t to, int64_t bytes) const {
    if (from == to) return 0.0;
    return alpha[from * k + to] + static_cast<double>(bytes) * inv_beta[from * k + to];
  }
  double group_cost(int32_t g, int32_t device) const;
  double mean_cost(int32_t unit) const;
  double mean_transfer(int64_t bytes) const;  // average over ordered device pairs
};

// Memory estimate of one op: its parameters plus the outputs it produces
// (kept alive until the backward pass in the worst case). Conservative.
int64_t op_memory_estimate(const Op& op);

// The op-level problem of context.graph on context.cluster with env costs.
// memory_fraction: share of each device's memory the placers may fill.
Problem make_problem(const PlaceContext& context, double memory_fraction);

// A problem whose units are the parts of `grouping` (parts on a cycle of the
// quotient graph are merged first); units holding ops of one co-location
// group form one group. unit_of_op[v] is the unit of op v.
Problem make_group_problem(const Problem& op_problem, const Grouping& grouping, std::vector<int32_t>* unit_of_op);

// Validates the context (non-null, non-empty) and throws NoFeasiblePlacement
// if some group fits on no device.
void check_context(const PlaceContext& context);
void check_groups_fit(const Problem& problem);

// Per-device memory book-keeping on groups.
class MemoryBook {
 public:
  explicit MemoryBook(const Problem& p) : p_(&p), used_(p.k, 0) {}
  bool fits(int32_t group, int32_t device) const {
    return used_[device] + p_->group_mem[group] <= p_->capacity[device];
  }
  void add(int32_t group, int32_t device) { used_[device] += p_->group_mem[group]; }
  void remove(int32_t group, int32_t device) { used_[device] -= p_->group_mem[group]; }
  int64_t used(int32_t device) const { return used_[device]; }
  int64_t free(int32_t device) const { return p_->capacity[device] - used_[device]; }

 private:
  const Problem* p_;
  std::vector<int64_t> used_;
};

// Moves groups off devices over capacity onto devices with room (the fewest
// bytes moved, preferring the devices their neighbours are on). Returns false
// if it cannot make the placement fit.
bool repair_memory(const Problem& p, std::vector<int32_t>& group_device);
bool fits_memory(const Problem& p, const std::vector<int32_t>& group_device);

std::vector<int32_t> expand_groups(const Problem& p, const std::vector<int32_t>& group_device);

// Transfers under the simulator's link model: one FIFO channel per directed
// link, alpha + bytes / beta each, and a unit's output sent to a device once
// (later consumers there reuse the copy; a consumer needing more of its
// bytes than were sent gets the rest sent).
class LinkBook {
 public:
  explicit LinkBook(const Problem& p) : p_(&p), chan_free_(static_cast<size_t>(p.k) * p.k, 0.0) {}
  // When unit v's inputs are all on device d, given where and when its
  // (placed, finished) preds ran. commit = book the transfers on the channels.
  double data_ready(int32_t v, int32_t d, const std::vector<int32_t>& dev, const std::vector<double>& finish,
                    bool commit);

 private:
  struct Sent {
    int64_t bytes = 0;
    double arrival = 0.0;
  };
  const Problem* p_;
  std::vector<double> chan_free_;                  // [from * k + to]
  std::unordered_map<int64_t, Sent> sent_;         // unit * k + destination
  std::vector<std::pair<double, int32_t>> order_;  // scratch: preds by finish time
  std::vector<double> tmp_free_;                   // scratch: channel times into d while not committing
};

// A schedule under the placers' model: ops of a device run one at a time, a
// cross-device edge delays its consumer by its transfer on the link's FIFO
// channel (LinkBook). Ops are started in the order given (a topological order).
struct Schedule {
  std::vector<double> start;
  std::vector<double> finish;
  double makespan = 0.0;
};
Schedule schedule_in_order(const Problem& p, const std::vector<int32_t>& unit_device,
                           const std::vector<int32_t>& order);
// Event-driven: among ready ops of a device the lowest id starts first (the
// simulator's rule); transfers are booked when their consumer becomes ready,
// on the link channels, or free of contention (link_channels = false: the
// ILP's own model, whose big-M comes from this schedule).
Schedule schedule_ready_order(const Problem& p, const std::vector<int32_t>& unit_device, bool link_channels = true);

// List scheduling result: device per unit and the schedule it implied.
struct ListResult {
  std::vector<int32_t> unit_device;
  Schedule schedule;
};
ListResult list_etf(const Problem& p, const std::vector<int32_t>* favourite_parent = nullptr);
ListResult list_heft(const Problem& p);
ListResult list_topo(const Problem& p);

// Turns an op-level device vector into the PlaceResult of `method`: checks
// co-location, validates, simulates to confirm it fits in memory (throws
// NoFeasiblePlacement with the simulator's message if not) and records the
// simulated step time in stats.
using Clock = std::chrono::steady_clock;
PlaceResult finish(const PlaceContext& context, const std::vector<int32_t>& op_device, const std::string& method,
                   Clock::time_point started, std::string note = {});

std::string format_bytes(int64_t bytes);
double option_double(const PlaceContext& context, const std::string& key, double fallback);
int64_t option_int(const PlaceContext& context, const std::string& key, int64_t fallback);
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
std::unique_ptr<Placer> make_dp();
std::unique_ptr<Placer> make_ilp();
std::unique_ptr<Placer> make_local_search();

// Default share of device memory the placers plan with; the rest is headroom
// for transferred tensors the estimate does not count.
inline constexpr double kMemoryFraction = 0.9;

}  // namespace placer::placers
