// The placement MILP's link channels (ilp_model.h): one send per unit and
// FIFO links, the simulator's transfer rules in the ILP.
#include <CoinFinite.hpp>

#include <algorithm>
#include <numeric>

#include "ilp_model.h"

namespace placer {

std::vector<int32_t> channel_senders(const UnitProblem& p) {
  std::vector<int32_t> out;
  if (p.k < 2) return out;
  for (int32_t i = 0; i < p.n; ++i)
    for (const Edge& e : p.succs[i])
      if (p.group_of[e.op] != p.group_of[i]) {
        out.push_back(i);
        break;
      }
  return out;
}

namespace {

// How long unit u's message holds a channel under `dev`: its largest edge
// into another group on another device (0: it sends nothing).
double send_hold(const UnitProblem& p, const std::vector<int32_t>& dev, int32_t u) {
  double hold = 0.0;
  for (const Edge& e : p.succs[u])
    if (dev[e.op] != dev[u] && p.group_of[e.op] != p.group_of[u]) hold = std::max(hold, p.mean_transfer(e.bytes));
  return hold;
}

}  // namespace

void add_channel_columns(IlpModel& m, const UnitProblem& p, const std::vector<int32_t>& senders) {
  const int32_t k = p.k;
  m.rcol.assign(p.n, -1);
  m.sndcol.assign(static_cast<size_t>(p.n) * k, -1);
  m.dcol.assign(p.n, -1);
  for (int32_t i : senders) {
    m.rcol[i] = m.col(0.0, m.M, false);
    m.dcol[i] = m.col(0.0, m.M, false);
    for (int32_t b = 0; b < k; ++b) m.sndcol[static_cast<size_t>(i) * k + b] = m.col(0.0, 1.0, false);
  }
  for (size_t x = 0; x < senders.size(); ++x)
    for (size_t y = x + 1; y < senders.size(); ++y)
      m.chans.push_back({senders[x], senders[y], m.col(0.0, 1.0, true), m.col(0.0, 1.0, false)});
}

void add_channel_rows(IlpModel& m, const UnitProblem& p) {
  if (m.rcol.empty()) return;
  const int32_t k = p.k;
  const double inf = COIN_DBL_MAX;
  auto x = [&](int32_t unit, int32_t d) { return m.xcol[p.group_of[unit] * k + d]; };
  auto snd = [&](int32_t unit, int32_t b) { return m.sndcol[static_cast<size_t>(unit) * k + b]; };
  for (int32_t i = 0; i < p.n; ++i) {
    if (m.rcol[i] < 0) continue;
    // r_i - s_i - p_i >= 0: a unit sends once it has finished.
    m.put(m.rcol[i], 1.0);
    m.put(m.scol[i], -1.0);
    for (int32_t d = 0; d < k; ++d)
      if (p.c(i, d) != 0) m.put(x(i, d), -p.c(i, d));
    m.end_row(0.0, inf);
    // snd[i,b] >= x[g(j),b] - x[g(i),b] for each consumer j in another group.
    for (const Edge& e : p.succs[i]) {
      if (p.group_of[e.op] == p.group_of[i]) continue;
      for (int32_t b = 0; b < k; ++b) {
        m.put(snd(i, b), 1.0);
        m.put(x(e.op, b), -1.0);
        m.put(x(i, b), 1.0);
        m.end_row(0.0, inf);
      }
    }
  }
  // A consumer on another device starts after the send and its transfer:
  // s_j - r_i - (c + M) z >= -M (no constraint when z = 0); the message is as
  // long as the largest edge that crosses: D_i - c z >= 0.
  for (const IlpModel::EdgeVar& e : m.edges) {
    if (e.col < 0 || m.rcol[e.from] < 0) continue;
    m.put(m.dcol[e.from], 1.0);
    m.put(e.col, -e.comm);
    m.end_row(0.0, inf);
    m.put(m.scol[e.to], 1.0);
    m.put(m.rcol[e.from], -1.0);
    m.put(e.col, -(e.comm + m.M));
    m.end_row(-m.M, inf);
  }
  // Two senders on one directed link a -> b (L = 1) do not overlap; o = 1:
  // a's message first.
  double longest = 0.0;
  for (const IlpModel::EdgeVar& e : m.edges) longest = std::max(longest, e.comm);
  const double Mc = 2 * m.M + longest;
  for (const IlpModel::ChannelPair& c : m.chans) {
    for (int32_t from = 0; from < k; ++from)
      for (int32_t to = 0; to < k; ++to) {
        if (from == to) continue;
        // L >= x[g(a),from] + x[g(b),from] + snd[a,to] + snd[b,to] - 3
        m.put(c.L, 1.0);
        m.put(x(c.a, from), -1.0);
        m.put(x(c.b, from), -1.0);
        m.put(snd(c.a, to), -1.0);
        m.put(snd(c.b, to), -1.0);
        m.end_row(-3.0, inf);
      }
    // r_b - r_a - D_a - Mc o - Mc L >= -2 Mc
    m.put(m.rcol[c.b], 1.0);
    m.put(m.rcol[c.a], -1.0);
    m.put(m.dcol[c.a], -1.0);
    m.put(c.o, -Mc);
    m.put(c.L, -Mc);
    m.end_row(-2 * Mc, inf);
    // r_a - r_b - D_b + Mc o - Mc L >= -Mc
    m.put(m.rcol[c.a], 1.0);
    m.put(m.rcol[c.b], -1.0);
    m.put(m.dcol[c.b], -1.0);
    m.put(c.o, Mc);
    m.put(c.L, -Mc);
    m.end_row(-Mc, inf);
  }
}

Schedule channel_schedule(const UnitProblem& p, const std::vector<int32_t>& dev, std::vector<double>* send_at) {
  const Schedule replay = schedule_ready_order(p, dev, /*link_channels=*/true);
  std::vector<int32_t> order(p.n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return replay.start[a] < replay.start[b]; });
  Schedule s;
  s.start.assign(p.n, 0.0);
  s.finish.assign(p.n, 0.0);
  send_at->assign(p.n, 0.0);
  std::vector<double> free(p.k, 0.0), chan_free(static_cast<size_t>(p.k) * p.k, 0.0);
  std::vector<char> to(p.k);
  for (int32_t u : order) {
    const int32_t d = dev[u];
    double ready = 0.0;
    for (const Edge& e : p.preds[u])
      ready = std::max(ready, dev[e.op] == d ? s.finish[e.op] : (*send_at)[e.op] + p.mean_transfer(e.bytes));
    s.start[u] = std::max(ready, free[d]);
    s.finish[u] = s.start[u] + p.c(u, d);
    free[d] = s.finish[u];
    s.makespan = std::max(s.makespan, s.finish[u]);
    // One send to every other device with a consumer in another group, once
    // every channel it takes is free; the channels are then held for D_u.
    std::fill(to.begin(), to.end(), 0);
    double at = s.finish[u], hold = 0.0;
    for (const Edge& e : p.succs[u])
      if (dev[e.op] != d && p.group_of[e.op] != p.group_of[u]) to[dev[e.op]] = 1;
    for (int32_t b = 0; b < p.k; ++b)
      if (to[b]) at = std::max(at, chan_free[static_cast<size_t>(d) * p.k + b]);
    (*send_at)[u] = at;
    if (std::find(to.begin(), to.end(), 1) == to.end()) continue;
    hold = send_hold(p, dev, u);
    for (int32_t b = 0; b < p.k; ++b)
      if (to[b]) chan_free[static_cast<size_t>(d) * p.k + b] = at + hold;
  }
  return s;
}

void channel_warm_values(const IlpModel& m, const UnitProblem& p, const std::vector<int32_t>& dev,
                         const std::vector<double>& send_at, std::vector<double>* sol) {
  if (m.rcol.empty()) return;
  const int32_t k = p.k;
  std::vector<char> sends(static_cast<size_t>(p.n) * k, 0);
  for (int32_t i = 0; i < p.n; ++i) {
    if (m.rcol[i] < 0) continue;
    (*sol)[m.rcol[i]] = send_at[i];
    (*sol)[m.dcol[i]] = send_hold(p, dev, i);
    for (const Edge& e : p.succs[i])
      if (p.group_of[e.op] != p.group_of[i] && dev[e.op] != dev[i]) sends[static_cast<size_t>(i) * k + dev[e.op]] = 1;
    for (int32_t b = 0; b < k; ++b)
      (*sol)[m.sndcol[static_cast<size_t>(i) * k + b]] = sends[static_cast<size_t>(i) * k + b];
  }
  for (const IlpModel::ChannelPair& c : m.chans) {
    bool shared = false;
    for (int32_t b = 0; b < k && !shared; ++b)
      shared =
          dev[c.a] == dev[c.b] && sends[static_cast<size_t>(c.a) * k + b] && sends[static_cast<size_t>(c.b) * k + b];
    (*sol)[c.L] = shared ? 1.0 : 0.0;
    (*sol)[c.o] = send_at[c.a] <= send_at[c.b] ? 1.0 : 0.0;
  }
}

}  // namespace placer
