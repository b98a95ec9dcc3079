// The placement MILP in CBC's terms (internal to agent/src): columns, rows as
// coordinate triplets, and the link-channel extension (ilp_channels.cc).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "cbc_solve.h"
#include "list_schedulers.h"
#include "unit_problem.h"


namespace placer {

// The mixed-integer program in CBC's terms: columns with bounds, objective and
// integrality; rows as coordinate triplets with bounds.
struct IlpModel {
  struct EdgeVar {
    int32_t from, to;
    int col;  // -1: same group, never crosses
    double comm;
  };
  struct PairVar {
    int32_t a, b;
    int y, q;  // q = -1: same group, always on one device
  };

  double M = 0.0;  // big-M: just above the warm start's makespan
  // Columns.
  std::vector<double> lb, ub, obj;
  std::vector<char> integer;
  std::vector<int> xcol;  // x[g,d] at g * k + d
  std::vector<int> scol;  // s[i]
  int ccol = -1;          // C
  std::vector<EdgeVar> edges;
  std::vector<PairVar> pairs;
  std::vector<double> tail;  // work after each unit: C >= s_i + p_i + tail_i
  // Link channels (empty when off): r[i] the send start of unit i (-1: it
  // feeds no other group), snd[i*k+b] it sends to device b, one pair of
  // (order, same link) columns per two senders.
  struct ChannelPair {
    int32_t a, b;
    int o, L;
  };
  std::vector<int> rcol, sndcol;
  std::vector<int> dcol;  // D_i: how long unit i's message holds a channel (its largest crossing edge)
  std::vector<ChannelPair> chans;
  // Rows.
  std::vector<int> ri, ci;
  std::vector<double> vv, rlb, rub;
  int rows = 0;

  int cols() const { return static_cast<int>(lb.size()); }
  int col(double l, double u, bool is_int) {
    lb.push_back(l), ub.push_back(u), obj.push_back(0.0), integer.push_back(is_int);
    return cols() - 1;
  }
  void put(int c, double v) { ri.push_back(rows), ci.push_back(c), vv.push_back(v); }
  void end_row(double l, double u) { rlb.push_back(l), rub.push_back(u), ++rows; }
};

// The ILP's channel model: a unit that feeds another group sends its output
// once, at r_i >= its finish, to each other device that needs it; the message
// holds the channel of every link it takes for D_i (the transfer of its
// largest edge that crosses devices), and two messages on one directed link do not overlap (FIFO
// channels, as the simulator). A consumer on another device starts after
// r_i + its edge's transfer. senders = units with an edge into another group.
std::vector<int32_t> channel_senders(const UnitProblem& p);
void add_channel_columns(IlpModel& m, const UnitProblem& p, const std::vector<int32_t>& senders);
void add_channel_rows(IlpModel& m, const UnitProblem& p);
// A schedule of `dev` that the channel model admits (units in the runtime
// replay's start order, one send per unit, channels booked in that order),
// with each unit's send start.
Schedule channel_schedule(const UnitProblem& p, const std::vector<int32_t>& dev, std::vector<double>* send_at);
// The channel columns of a warm solution from channel_schedule's send starts.
void channel_warm_values(const IlpModel& m, const UnitProblem& p, const std::vector<int32_t>& dev,
                         const std::vector<double>& send_at, std::vector<double>* sol);


}  // namespace placer
