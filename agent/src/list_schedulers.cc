// Schedules under the placers' link model (LinkBook) and the list schedulers
// (ETF, HEFT, topological order) built on them.
#include "placers_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"

namespace placer {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

double LinkBook::data_ready(int32_t v, int32_t d, const std::vector<int32_t>& dev, const std::vector<double>& finish,
                            bool commit) {
  const UnitProblem& p = *p_;
  order_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(p.preds[v].size()); ++i) order_.push_back({finish[p.preds[v][i].op], i});
  std::sort(order_.begin(), order_.end());  // FIFO: the earliest finished input goes first
  if (!commit) {
    tmp_free_.resize(p.k);
    for (int32_t f = 0; f < p.k; ++f) tmp_free_[f] = chan_free_[static_cast<size_t>(f) * p.k + d];
  }
  double ready = 0.0;
  for (const auto& [done, i] : order_) {
    const int32_t u = p.preds[v][i].op;
    const int64_t bytes = p.preds[v][i].bytes;
    const int32_t from = dev[u];
    if (from == d) {
      ready = std::max(ready, done);
      continue;
    }
    const int64_t key = static_cast<int64_t>(u) * p.k + d;
    auto it = sent_.find(key);
    int64_t have = it == sent_.end() ? 0 : it->second.bytes;
    double arrival = it == sent_.end() ? 0.0 : it->second.arrival;
    if (bytes > have || it == sent_.end()) {
      double& chan = commit ? chan_free_[static_cast<size_t>(from) * p.k + d] : tmp_free_[from];
      const double start = std::max(done, chan);
      arrival = start + p.transfer(from, d, bytes - have);
      chan = arrival;
      if (commit) sent_[key] = {std::max(bytes, have), arrival};
    }
    ready = std::max(ready, arrival);
  }
  return ready;
}

Schedule schedule_in_order(const UnitProblem& p, const std::vector<int32_t>& dev, const std::vector<int32_t>& order) {
  Schedule s;
  s.start.assign(p.n, 0.0);
  s.finish.assign(p.n, 0.0);
  std::vector<double> free(p.k, 0.0);
  LinkBook links(p);
  for (int32_t u : order) {
    const int32_t d = dev[u];
    const double ready = links.data_ready(u, d, dev, s.finish, true);
    s.start[u] = std::max(ready, free[d]);
    s.finish[u] = s.start[u] + p.c(u, d);
    free[d] = s.finish[u];
    s.makespan = std::max(s.makespan, s.finish[u]);
  }
  return s;
}

namespace {

// A placement replayed as the runtime dispatches it (schedule_ready_order).
class ReadyOrderReplay {
 public:
  ReadyOrderReplay(const UnitProblem& p, const std::vector<int32_t>& dev, bool link_channels)
      : p_(p),
        dev_(dev),
        link_channels_(link_channels),
        missing_(p.n),
        arrival_(p.n, 0.0),
        pending_(p.k),
        busy_(p.k, 0.0),
        chan_free_(static_cast<size_t>(p.k) * p.k, 0.0),
        send_(p.k, kNoSend) {
    s_.start.assign(p.n, 0.0);
    s_.finish.assign(p.n, 0.0);
    for (int32_t u = 0; u < p.n; ++u) {
      missing_[u] = static_cast<int32_t>(p.preds[u].size());
      if (missing_[u] == 0) pending_[dev[u]].push_back(u);
    }
  }

  // Units finish before anything starts at the same time or later.
  Schedule run() {
    int32_t started = 0;
    while (started < p_.n || !running_.empty()) {
      const auto [t, d] = earliest_start();
      if (!running_.empty() && running_.top().first <= t) {
        const int32_t u = running_.top().second;
        running_.pop();
        finished(u);
        continue;
      }
      PLACER_CHECK(d >= 0, "schedule_ready_order: nothing runnable");
      start(d, t);
      ++started;
    }
    return std::move(s_);
  }

 private:
  // The device whose first pending unit can start earliest, and when (-1 if none is pending).
  std::pair<double, int32_t> earliest_start() const {
    double best_t = kInf;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p_.k; ++d) {
      if (pending_[d].empty()) continue;
      double earliest = kInf;
      for (int32_t u : pending_[d]) earliest = std::min(earliest, arrival_[u]);
      const double t = std::max(busy_[d], earliest);
      if (t < best_t) best_t = t, best_d = d;
    }
    return {best_t, best_d};
  }

  // Device d starts, at t, its lowest-id pending unit whose inputs are there.
  void start(int32_t d, double t) {
    auto& q = pending_[d];
    size_t pick = q.size();
    for (size_t i = 0; i < q.size(); ++i)
      if (arrival_[q[i]] <= t && (pick == q.size() || q[i] < q[pick])) pick = i;
    const int32_t u = q[pick];
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(pick));
    s_.start[u] = t;
    s_.finish[u] = t + p_.c(u, d);
    busy_[d] = s_.finish[u];
    s_.makespan = std::max(s_.makespan, s_.finish[u]);
    running_.push({s_.finish[u], u});
  }

  // A finished unit's outputs: local consumers may use them now; each other
  // device gets one copy, sent at once on the link's FIFO channel (the
  // simulator's eager send), or free of contention at the mean transfer (the
  // ILP's model, UnitProblem::mean_transfer). A zero-byte edge still sends:
  // the simulator charges the link's latency.
  void finished(int32_t u) {
    const int32_t from = dev_[u];
    std::fill(send_.begin(), send_.end(), kNoSend);
    for (const Edge& e : p_.succs[u]) {
      const int32_t to = dev_[e.op];
      if (to == from) {
        arrival_[e.op] = std::max(arrival_[e.op], s_.finish[u]);
      } else if (link_channels_) {
        send_[to] = std::max(send_[to], e.bytes);
      } else {
        arrival_[e.op] = std::max(arrival_[e.op], s_.finish[u] + p_.mean_transfer(e.bytes));
      }
    }
    if (link_channels_) send_copies(u);
    for (const Edge& e : p_.succs[u])
      if (--missing_[e.op] == 0) pending_[dev_[e.op]].push_back(e.op);
  }

  // The copies of unit u's output on the links' FIFO channels.
  void send_copies(int32_t u) {
    const int32_t from = dev_[u];
    for (int32_t to = 0; to < p_.k; ++to) {
      if (to == from || send_[to] == kNoSend) continue;
      double& chan = chan_free_[static_cast<size_t>(from) * p_.k + to];
      chan = std::max(s_.finish[u], chan) + p_.transfer(from, to, send_[to]);
      send_[to] = kNoSend;
      for (const Edge& e : p_.succs[u])
        if (dev_[e.op] == to) arrival_[e.op] = std::max(arrival_[e.op], chan);
    }
  }

  using Done = std::pair<double, int32_t>;
  static constexpr int64_t kNoSend = -1;  // send_: nothing for that device (0: a zero-byte copy)
  const UnitProblem& p_;
  const std::vector<int32_t>& dev_;
  const bool link_channels_;
  Schedule s_;
  std::vector<int32_t> missing_;
  std::vector<double> arrival_;
  std::vector<std::vector<int32_t>> pending_;
  std::vector<double> busy_;
  std::vector<double> chan_free_;
  std::vector<int64_t> send_;  // scratch: bytes of a finished unit to send to each device, or kNoSend
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> running_;
};

}  // namespace

Schedule schedule_ready_order(const UnitProblem& p, const std::vector<int32_t>& dev, bool link_channels) {
  return ReadyOrderReplay(p, dev, link_channels).run();
}

namespace {

// Upward rank with mean costs: the length of the longest path to a sink.
std::vector<double> upward_rank(const UnitProblem& p) {
  std::vector<double> rank(p.n, 0.0);
  for (int32_t u = p.n - 1; u >= 0; --u) {
    double tail = 0.0;
    for (const Edge& e : p.succs[u]) tail = std::max(tail, p.mean_transfer(e.bytes) + rank[e.op]);
    rank[u] = p.mean_cost(u) + tail;
  }
  return rank;
}

[[noreturn]] void out_of_memory(const UnitProblem& p, const MemoryBook& book, int32_t unit, const char* method) {
  const int32_t g = p.group_of[unit];
  std::string msg = std::string(method) + ": op '" + p.unit_names[unit] + "' (with its co-located ops " +
                    format_bytes(p.group_mem[g]) + ") fits on no device; free:";
  for (int32_t d = 0; d < p.k; ++d) msg += " " + p.device_names[d] + " " + format_bytes(book.free(d));
  throw NoFeasiblePlacement(msg);
}

}  // namespace

const char* etf_priority_name(EtfPriority priority) {
  switch (priority) {
    case EtfPriority::Ready: return "ready";
    case EtfPriority::Rank: return "rank";
    case EtfPriority::Id: return "id";
  }
  return "?";
}

namespace {

// ETF's state. Per device, the ready units: those whose inputs would be there
// by the time the device is free could all start then and are taken in the
// priority's order (`avail_`); otherwise the earliest data-ready time starts
// next (`waiting_`, keyed by that time plus a preference penalty, then id).
// m_sct's penalty: off its favourite parent's device a unit counts as ready
// later by that edge's mean transfer.
class EtfScheduler {
 public:
  EtfScheduler(const UnitProblem& p, const std::vector<int32_t>* favourite_parent, EtfPriority priority)
      : p_(p),
        favourite_parent_(favourite_parent),
        priority_(priority),
        method_(favourite_parent ? "m_sct" : "m_etf"),
        pinned_(p.groups(), -1),
        book_(p),
        free_(p.k, 0.0),
        missing_(p.n),
        done_(p.n, 0),
        rank_(upward_rank(p)),
        waiting_(p.k),
        avail_(p.k),
        links_(p) {
    r_.unit_device.assign(p.n, -1);
    r_.schedule.start.assign(p.n, 0.0);
    r_.schedule.finish.assign(p.n, 0.0);
  }

  ListResult run() {
    for (int32_t u = 0; u < p_.n; ++u) {
      missing_[u] = static_cast<int32_t>(p_.preds[u].size());
      if (missing_[u] == 0) make_ready(u);
    }
    for (int32_t scheduled = 0; scheduled < p_.n; ++scheduled) {
      const int32_t d = next_device();
      const int32_t u = take(d);
      start(u, d);
      for (const Edge& e : p_.succs[u])
        if (--missing_[e.op] == 0) make_ready(e.op);
    }
    return std::move(r_);
  }

 private:
  struct Key {
    double ready;
    double penalty;
    double prio;  // lower first among the units that can start when the device is free
    double tie;   // then lower first
    int32_t unit;
    double order() const { return ready + penalty; }
  };
  struct ByOrder {
    bool operator()(const Key& a, const Key& b) const {
      return a.order() != b.order() ? a.order() > b.order() : a.unit > b.unit;
    }
  };
  struct ByPriority {
    bool operator()(const Key& a, const Key& b) const {
      if (a.prio != b.prio) return a.prio > b.prio;
      if (a.tie != b.tie) return a.tie > b.tie;
      return a.unit > b.unit;
    }
  };

  double prio_of(int32_t u, double ready) const {
    return priority_ == EtfPriority::Id ? 0.0 : priority_ == EtfPriority::Rank ? -rank_[u] : ready;
  }
  double data_ready(int32_t u, int32_t d) { return links_.data_ready(u, d, r_.unit_device, r_.schedule.finish, false); }
  bool allowed(int32_t u, int32_t d) const {
    const int32_t g = p_.group_of[u];
    return pinned_[g] >= 0 ? pinned_[g] == d : book_.fits(g, d);
  }
  // A unit is on every allowed device's queues: drop the done and the no longer allowed.
  bool stale(const Key& key, int32_t d) const { return done_[key.unit] || !allowed(key.unit, d); }

  // m_sct: the favourite parent's device and the penalty for leaving it (-1, 0 if none).
  std::pair<int32_t, double> favourite(int32_t u) const {
    if (pinned_[p_.group_of[u]] >= 0 || !favourite_parent_ || (*favourite_parent_)[u] < 0) return {-1, 0.0};
    const int32_t parent = (*favourite_parent_)[u];
    double penalty = 0.0;
    for (const Edge& e : p_.preds[u])
      if (e.op == parent) penalty = p_.mean_transfer(e.bytes);
    return {r_.unit_device[parent], penalty};
  }

  // Unit u's inputs are all done: queue it on every device it may go to.
  void make_ready(int32_t u) {
    const int32_t only = pinned_[p_.group_of[u]];
    const auto [favourite_device, penalty] = favourite(u);
    bool any = false;
    for (int32_t d = 0; d < p_.k; ++d) {
      if ((only >= 0 && d != only) || !allowed(u, d)) continue;
      const double ready = data_ready(u, d);
      waiting_[d].push({ready, favourite_device >= 0 && d != favourite_device ? penalty : 0.0, prio_of(u, ready),
                        priority_ == EtfPriority::Ready ? -rank_[u] : 0.0, u});
      any = true;
    }
    if (!any) out_of_memory(p_, book_, u, method_);
  }

  // Channels only fill up, so a key's ready time may be too early: keys are
  // refreshed when they reach the top (lazy updates keep each top right).
  // Waiting units that could start when the device is free move to avail_,
  // avail_ units that no longer can move back.
  void settle(int32_t d) {
    auto& w = waiting_[d];
    auto& a = avail_[d];
    for (;;) {
      while (!w.empty() && stale(w.top(), d)) w.pop();
      if (w.empty()) break;
      Key top = w.top();
      const double now = data_ready(top.unit, d);
      if (now > top.ready) {
        w.pop();
        top.ready = now;
        w.push(top);
        continue;
      }
      if (top.order() > free_[d]) break;
      w.pop();
      top.prio = prio_of(top.unit, top.ready);
      a.push(top);
    }
    for (;;) {
      while (!a.empty() && stale(a.top(), d)) a.pop();
      if (a.empty()) break;
      Key top = a.top();
      top.ready = data_ready(top.unit, d);
      if (top.order() <= free_[d]) break;
      a.pop();
      w.push(top);
    }
  }

  // The device where a unit can start earliest (ties to the lowest id).
  int32_t next_device() {
    double best_t = kInf;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p_.k; ++d) {
      settle(d);
      double t = kInf;
      if (!avail_[d].empty())
        t = free_[d];
      else if (!waiting_[d].empty())
        t = std::max(free_[d], waiting_[d].top().order());
      if (t < best_t) best_t = t, best_d = d;
    }
    if (best_d < 0) {
      // Every ready unit lost its devices to memory filled meanwhile.
      for (int32_t u = 0; u < p_.n; ++u)
        if (!done_[u] && missing_[u] == 0) out_of_memory(p_, book_, u, method_);
      PLACER_CHECK(false, "list_etf: no ready unit");
    }
    return best_d;
  }

  // The unit device d starts next: the first available, else the first waiting.
  int32_t take(int32_t d) {
    int32_t u;
    if (!avail_[d].empty()) {
      u = avail_[d].top().unit;
      avail_[d].pop();
    } else {
      u = waiting_[d].top().unit;
      waiting_[d].pop();
    }
    return u;
  }

  // Unit u starts on device d once the device is free and its inputs are
  // there (the penalty ranks; it does not delay); its group is pinned there.
  void start(int32_t u, int32_t d) {
    const double t = std::max(free_[d], data_ready(u, d));
    const int32_t g = p_.group_of[u];
    if (pinned_[g] < 0) {
      pinned_[g] = d;
      book_.add(g, d);
    }
    r_.unit_device[u] = d;
    links_.data_ready(u, d, r_.unit_device, r_.schedule.finish, true);  // book its transfers
    r_.schedule.start[u] = t;
    r_.schedule.finish[u] = t + p_.c(u, d);
    free_[d] = r_.schedule.finish[u];
    r_.schedule.makespan = std::max(r_.schedule.makespan, r_.schedule.finish[u]);
    done_[u] = 1;
  }

  const UnitProblem& p_;
  const std::vector<int32_t>* favourite_parent_;
  const EtfPriority priority_;
  const char* method_;
  ListResult r_;
  std::vector<int32_t> pinned_;
  MemoryBook book_;
  std::vector<double> free_;
  std::vector<int32_t> missing_;
  std::vector<char> done_;
  const std::vector<double> rank_;
  std::vector<std::priority_queue<Key, std::vector<Key>, ByOrder>> waiting_;
  std::vector<std::priority_queue<Key, std::vector<Key>, ByPriority>> avail_;
  LinkBook links_;
};

}  // namespace

ListResult list_etf(const UnitProblem& p, const std::vector<int32_t>* favourite_parent, EtfPriority priority) {
  return EtfScheduler(p, favourite_parent, priority).run();
}

ListResult list_heft(const UnitProblem& p) {
  ListResult r;
  r.unit_device.assign(p.n, -1);
  r.schedule.start.assign(p.n, 0.0);
  r.schedule.finish.assign(p.n, 0.0);
  const std::vector<double> rank = upward_rank(p);
  std::vector<int32_t> pinned(p.groups(), -1);
  MemoryBook book(p);
  std::vector<double> free(p.k, 0.0);
  std::vector<int32_t> missing(p.n);
  LinkBook links(p);
  std::priority_queue<std::pair<double, int32_t>> ready;  // (rank, -id): highest rank first
  for (int32_t u = 0; u < p.n; ++u) {
    missing[u] = static_cast<int32_t>(p.preds[u].size());
    if (missing[u] == 0) ready.push({rank[u], -u});
  }
  while (!ready.empty()) {
    const int32_t u = -ready.top().second;
    ready.pop();
    const int32_t g = p.group_of[u];
    double best_f = kInf, best_s = 0.0;
    int32_t best_d = -1;
    for (int32_t d = 0; d < p.k; ++d) {
      if (pinned[g] >= 0 ? pinned[g] != d : !book.fits(g, d)) continue;
      const double t = std::max(free[d], links.data_ready(u, d, r.unit_device, r.schedule.finish, false));
      const double f = t + p.c(u, d);
      if (f < best_f) best_f = f, best_s = t, best_d = d;
    }
    if (best_d < 0) out_of_memory(p, book, u, "heft");
    if (pinned[g] < 0) {
      pinned[g] = best_d;
      book.add(g, best_d);
    }
    r.unit_device[u] = best_d;
    links.data_ready(u, best_d, r.unit_device, r.schedule.finish, true);
    r.schedule.start[u] = best_s;
    r.schedule.finish[u] = best_f;
    free[best_d] = best_f;
    r.schedule.makespan = std::max(r.schedule.makespan, best_f);
    for (const Edge& e : p.succs[u])
      if (--missing[e.op] == 0) ready.push({rank[e.op], -e.op});
  }
  return r;
}

ListResult list_topo(const UnitProblem& p) {
  // Baechi's m-TOPO: groups in topological order (of their first op) fill one
  // device up to an equal share of the total memory, then the next.
  const std::vector<int32_t> order = groups_by_first_op(p);
  int64_t total = 0;
  for (int64_t m : p.group_mem) total = add_bytes(total, m);
  double total_work = 0.0;
  for (int32_t u = 0; u < p.n; ++u) total_work += p.mean_cost(u);
  // Share by memory, as Baechi; when memory is light, by work so that the
  // devices still split the graph.
  const double mem_share = static_cast<double>(total) / p.k;
  const double work_share = total_work / p.k;
  MemoryBook book(p);
  std::vector<int32_t> group_device(p.groups(), -1);
  int32_t d = 0;
  double work_on_d = 0.0;
  for (int32_t g : order) {
    double work = 0.0;
    for (int32_t u : p.members[g]) work += p.mean_cost(u);
    auto over_share = [&](int32_t dev) {
      return static_cast<double>(book.used(dev)) + static_cast<double>(p.group_mem[g]) > mem_share * 1.0001 + 1 &&
             work_on_d + work > work_share * 1.0001;
    };
    if (d < p.k - 1 && book.used(d) > 0 && over_share(d)) {
      ++d;
      work_on_d = 0.0;
    }
    int32_t target = d;
    if (!book.fits(g, target)) {
      target = -1;
      for (int32_t t = 0; t < p.k; ++t)
        if (book.fits(g, t) && (target < 0 || book.free(t) > book.free(target))) target = t;
      if (target < 0) out_of_memory(p, book, p.members[g][0], "m_topo");
    }
    group_device[g] = target;
    book.add(g, target);
    if (target == d) work_on_d += work;
  }
  ListResult r;
  r.unit_device = expand_groups(p, group_device);
  std::vector<int32_t> ids(p.n);
  for (int32_t u = 0; u < p.n; ++u) ids[u] = u;
  r.schedule = schedule_in_order(p, r.unit_device, ids);
  return r;
}

ListPlan replayed(const UnitProblem& p, ListResult r, std::string how) {
  ListPlan plan{std::move(r.unit_device), 0.0, r.schedule.makespan, std::move(how)};
  plan.step_s = schedule_ready_order(p, plan.unit_device).makespan;
  return plan;
}

void list_replayed(std::string* tried, const std::string& label, double step_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, " %.6g s", step_s);
  *tried += (tried->empty() ? "" : ", ") + label + buf;
}

int32_t one_device(const UnitProblem& p) {
  int32_t best = -1;
  double best_s = 0.0;
  for (int32_t d = 0; d < p.k; ++d) {
    if (!fits_memory(p, std::vector<int32_t>(p.groups(), d))) continue;
    double s = 0.0;
    for (int32_t u = 0; u < p.n; ++u) s += p.c(u, d);
    if (best < 0 || s < best_s) best = d, best_s = s;
  }
  return best;
}

EtfCandidates etf_candidates(const UnitProblem& p, const std::vector<int32_t>* favourite_parent) {
  std::vector<ListPlan> plans;
  // A priority may fill memory so that a later unit fits nowhere; another may not.
  std::exception_ptr first_failure;
  for (EtfPriority priority : {EtfPriority::Ready, EtfPriority::Rank, EtfPriority::Id}) {
    try {
      plans.push_back(
          replayed(p, list_etf(p, favourite_parent, priority), std::string("etf by ") + etf_priority_name(priority)));
    } catch (const NoFeasiblePlacement&) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  if (const int32_t d = one_device(p); d >= 0) {
    ListResult all;
    all.unit_device.assign(p.n, d);
    for (int32_t u = 0; u < p.n; ++u) all.schedule.makespan += p.c(u, d);
    plans.push_back(replayed(p, std::move(all), "one device " + p.device_names[d]));
  }
  if (plans.empty()) std::rethrow_exception(first_failure);
  EtfCandidates out;
  for (const ListPlan& plan : plans) list_replayed(&out.tried, plan.how, plan.step_s);
  std::stable_sort(plans.begin(), plans.end(), [](const ListPlan& a, const ListPlan& b) { return a.step_s < b.step_s; });
  out.plans = std::move(plans);
  return out;
}

}  // namespace placer
