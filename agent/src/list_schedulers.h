// Schedules of a unit problem under the simulator's link model and the list
// schedulers (ETF, HEFT, topological order) built on them (internal to agent/src).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "unit_problem.h"

namespace placer {

// Transfers under the simulator's link model: one FIFO channel per directed
// link, alpha + bytes / beta each, and a unit's output sent to a device once
// (later consumers there reuse the copy; a consumer needing more of its
// bytes than were sent gets the rest sent).
class LinkBook {
 public:
  explicit LinkBook(const UnitProblem& p) : p_(&p), chan_free_(static_cast<size_t>(p.k) * p.k, 0.0) {}
  // When unit v's inputs are all on device d, given where and when its
  // (placed, finished) preds ran. commit = book the transfers on the channels.
  double data_ready(int32_t v, int32_t d, const std::vector<int32_t>& dev, const std::vector<double>& finish,
                    bool commit);

 private:
  struct Sent {
    int64_t bytes = 0;
    double arrival = 0.0;
  };
  const UnitProblem* p_;
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
Schedule schedule_in_order(const UnitProblem& p, const std::vector<int32_t>& unit_device,
                           const std::vector<int32_t>& order);
// A placement replayed as the runtime dispatches it (the simulator's rules on
// the unit problem): among ready units of a device the lowest id starts
// first; a finished unit's output is sent at once to each other device that
// needs it, on the link's FIFO channel, a zero-byte edge too (the link's
// latency). link_channels = false: the ILP's own model, whose warm start and
// big-M come from this schedule: free of contention, each edge that crosses
// devices charged UnitProblem::mean_transfer, as the model's rows charge it.
Schedule schedule_ready_order(const UnitProblem& p, const std::vector<int32_t>& unit_device, bool link_channels = true);

// List scheduling result: device per unit and the schedule it implied.
struct ListResult {
  std::vector<int32_t> unit_device;
  Schedule schedule;
};
// ETF (Hwang et al.): the (unit, device) pair that can start earliest goes
// next. Units that could all start as soon as the device is free are taken
// in the priority's order: Ready, the earliest data-ready first, ties to the
// highest upward rank (ETF as published); Rank, the highest upward rank
// first; Id, the lowest id first (the runtime's own dispatch rule).
enum class EtfPriority { Ready, Rank, Id };
const char* etf_priority_name(EtfPriority priority);
ListResult list_etf(const UnitProblem& p, const std::vector<int32_t>* favourite_parent = nullptr,
                    EtfPriority priority = EtfPriority::Ready);
ListResult list_heft(const UnitProblem& p);
ListResult list_topo(const UnitProblem& p);

// What a list placer planned: the placement, and its step replayed on the
// unit problem as the runtime dispatches it (schedule_ready_order), the
// estimate reported beside the simulator's.
struct ListPlan {
  std::vector<int32_t> unit_device;
  double step_s = 0.0;         // replayed
  double list_makespan = 0.0;  // the list schedule's own makespan (its order, not the runtime's)
  std::string how;
};
ListPlan replayed(const UnitProblem& p, ListResult r, std::string how);

// The candidates a placer replayed, for its note: "a 0.1 s, b 0.2 s".
void list_replayed(std::string* tried, const std::string& label, double step_s);

// The fastest device that holds every group by itself (-1 if none does).
int32_t one_device(const UnitProblem& p);

// m_etf and m_sct's candidates: ETF under each priority, and all units on one
// device, each replayed as the runtime dispatches; the fastest replay first
// (ties to the earlier candidate: ETF as published first), each how its name.
// tried lists their replayed steps. The placers keep the first that the
// simulator fits in memory (the replay does not count memory).
struct EtfCandidates {
  std::vector<ListPlan> plans;
  std::string tried;
};
EtfCandidates etf_candidates(const UnitProblem& p, const std::vector<int32_t>* favourite_parent);

}  // namespace placer
