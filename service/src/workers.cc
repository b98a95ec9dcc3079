// Rollouts on several machines, the pool's side: a ROUTER that hands tasks
// to `placer worker` processes (worker.cc). Paranoid Pirate heartbeats both
// ways, task ids so that only a task's first result counts, re-sends when a
// worker is lost. The wire protocol is in docs/workers.md.
#include "placer/service/workers.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "placer/graphs/serialize.h"
#include "workers_wire.h"

namespace placer::service {
namespace {

using namespace wire;
using std::chrono::milliseconds;

struct PoolProblem final : RemoteProblem {
  const void* owner = nullptr;  // the pool that prepared it
  std::string key;
  std::vector<std::string> frames;  // mode, warmup, steps, graph, cluster, profile
  bool measured = false;
  std::vector<std::string> needs;  // the cluster's device names (a measuring worker must have them)
  std::string describe;            // for messages
  int32_t ops = 0;
};

struct Batch {
  std::vector<StepResult> results;
  size_t remaining = 0;
  std::string error;  // non-empty: the batch failed
  bool cancelled = false;  // failed by shut_down(): EvaluationCancelled
};

// Where a pool's task ids start: random, so that a RESULT meant for another pool (or a stray "RESULT 1") names
// no task of this one. Below 2^59: ids stay within parse_int's 18 digits.
uint64_t first_task_id() {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return (r >> 5) | 1;
}

struct Task {
  std::shared_ptr<Batch> batch;
  size_t index = 0;
  const PoolProblem* problem = nullptr;  // the caller of evaluate() holds it until the task is gone
  std::string placement;
  int attempts = 0;   // workers lost while holding it
  bool lost = false;  // next send is a re-send
  // Since when no live worker could do it (fail_starved); unset while one can.
  std::optional<Clock::time_point> starved_since;
};

struct Worker {
  std::string identity;  // ROUTER routing id
  std::string name;
  std::vector<std::string> devices;
  int slots = 1;
  Clock::duration patience{};  // silence before it counts as lost
  Clock::time_point expiry;
  std::set<uint64_t> in_flight;
  std::unordered_set<std::string> problems;  // keys it has been sent
  int64_t results = 0;
  bool unreachable = false;

  std::string label() const { return "'" + name + "' (" + join(devices) + ")"; }
  bool can_do(const PoolProblem& p) const {
    if (!p.measured) return true;
    for (const auto& d : p.needs)
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) return false;
    return true;
  }
};

}  // namespace

struct WorkerPool::Impl {
  WorkerPoolOptions options;
  zmq::context_t ctx{1};
  zmq::socket_t router;
  std::string endpoint;
  Waker waker;
  std::thread io;
  std::atomic<bool> stop{false};

  mutable std::mutex mu;
  mutable std::condition_variable changed;  // a batch finished or failed, a worker joined or left
  std::map<uint64_t, Task> tasks;           // not answered yet
  std::deque<uint64_t> queue;               // waiting for a worker (ids may be stale: skipped)
  std::map<std::string, Worker> workers;    // live, by routing id
  uint64_t next_task = first_task_id();
  WorkerPoolStats stats;
  bool closed = false;
  Clock::time_point next_heartbeat;

  void say(const std::string& line) {
    if (options.log) options.log(line);
  }

  bool send(const std::string& identity, std::initializer_list<std::string_view> frames) {
    try {
      if (!router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
      size_t i = 0;
      for (std::string_view f : frames) {
        const bool last = ++i == frames.size();
        router.send(zmq::buffer(f.data(), f.size()), last ? zmq::send_flags::dontwait : zmq::send_flags::sndmore);
      }
      return true;
    } catch (const zmq::error_t&) {
      return false;  // EHOSTUNREACH (router_mandatory): that peer is gone
    }
  }

  void fail(Batch& batch, const std::string& message) {
    if (batch.error.empty()) batch.error = message;
    changed.notify_all();
  }

  // The worker is gone: its tasks go back to the front of the queue.
  void drop_worker(std::map<std::string, Worker>::iterator it, const std::string& why, bool lost) {
    Worker& w = it->second;
    int requeued = 0;
    for (auto id = w.in_flight.rbegin(); id != w.in_flight.rend(); ++id) {
      auto t = tasks.find(*id);
      if (t == tasks.end()) continue;
      Task& task = t->second;
      if (lost && ++task.attempts >= options.max_attempts) {
        fail(*task.batch, "a placement of " + task.problem->describe + " was lost with " +
                              std::to_string(task.attempts) + " workers in a row (the last: " + w.label() + ", which " +
                              why + "); is it crashing them?");
        continue;
      }
      task.lost = true;
      queue.push_front(*id);
      ++requeued;
    }
    say("worker " + w.label() + " " + why +
        (requeued ? "; " + std::to_string(requeued) + " task(s) sent to others" : ""));
    if (lost)
      ++stats.workers_lost;
    else
      ++stats.workers_left;
    workers.erase(it);
    changed.notify_all();
  }

  void on_ready(const std::string& identity, const std::vector<zmq::message_t>& parts) {
    if (parts.size() < 7) return;
    if (auto old = workers.find(identity); old != workers.end()) drop_worker(old, "registered again", false);
    Worker w;
    w.identity = identity;
    w.name = parts[3].to_string().substr(0, 200);
    w.devices = split(parts[4].to_string());
    int64_t slots = 1, hb = options.heartbeat_ms;
    if (!parse_int(parts[5].to_string(), &slots) || slots < 1) slots = 1;
    if (!parse_int(parts[6].to_string(), &hb) || hb < 1) hb = options.heartbeat_ms;
    // A worker's interval sets its patience; one far above the pool's (1e8 ms: 83 hours) kept a silent
    // worker's tasks from ever being sent to another.
    const int64_t most = std::max<int64_t>(options.heartbeat_ms, kMaxWorkerHeartbeatMs);
    if (hb > most) {
      say("worker '" + parts[3].to_string().substr(0, 200) + "' asked for heartbeats every " + std::to_string(hb) +
          " ms; taken as " + std::to_string(most) + " ms");
      hb = most;
    }
    w.slots = static_cast<int>(std::min<int64_t>(slots, 1024));
    w.patience = milliseconds(std::max<int64_t>(hb, options.heartbeat_ms) * options.liveness);
    w.expiry = Clock::now() + w.patience;
    send(identity, {kVersion, kHeartbeat, std::to_string(options.heartbeat_ms)});  // our interval, at once
    say("worker " + w.label() + " joined with " + std::to_string(w.slots) + " slot(s)");
    workers.emplace(identity, std::move(w));
    ++stats.workers_joined;
    changed.notify_all();
  }

  // A task's RESULT from the worker at `it`, which held it. False when it was malformed (or for another number
  // of devices than the problem's) and the worker was dropped for it: what it held goes to others (max_attempts
  // in a row fail the batch, naming the last).
  bool take_result(std::map<std::string, Worker>::iterator it, std::map<uint64_t, Task>::iterator t,
                   const std::string& json) {
    Task& task = t->second;
    try {
      StepResult r = step_result_from_json(json);
      if (!r.devices.empty() && r.devices.size() != task.problem->needs.size())
        throw InputError("figures for " + std::to_string(r.devices.size()) + " devices on a cluster of " +
                         std::to_string(task.problem->needs.size()));
      task.batch->results[task.index] = std::move(r);
    } catch (const std::exception& e) {
      it->second.in_flight.insert(t->first);
      drop_worker(it, "sent a malformed result (" + std::string(e.what()).substr(0, 500) + ")", true);
      return false;
    }
    ++it->second.results;
    ++stats.results;
    if (--task.batch->remaining == 0) changed.notify_all();
    tasks.erase(t);
    return true;
  }

  void on_message(std::vector<zmq::message_t>& parts) {
    if (parts.size() < 3) return;
    const std::string identity = parts[0].to_string();
    if (parts[1].to_string_view() != kVersion) {
      say("a peer speaking '" + parts[1].to_string().substr(0, 16) + "' (not " + std::string(kVersion) +
          ") was ignored");
      return;
    }
    const std::string_view command = parts[2].to_string_view();
    if (command == kReady) return on_ready(identity, parts);
    auto it = workers.find(identity);
    Worker* w = it == workers.end() ? nullptr : &it->second;
    if (w) w->expiry = Clock::now() + w->patience;
    if (command == kBye) {
      if (w) drop_worker(it, "left", false);
      return;
    }
    if (command == kResult || command == kError || command == kNeed) {
      if (parts.size() < 5) return;
      int64_t id = 0;
      if (!parse_int(parts[3].to_string(), &id)) return;
      const bool held = w && w->in_flight.erase(static_cast<uint64_t>(id)) > 0;
      auto t = tasks.find(static_cast<uint64_t>(id));
      if (t == tasks.end() || !t->second.batch->error.empty() || !held) {
        // Late (re-sent and answered already), duplicate, of a failed batch, or from a peer not holding the
        // task (a worker it was taken from, one of another pool, a task still queued): only its holder answers.
        ++stats.ignored;
      } else if (command == kResult) {
        if (!take_result(it, t, parts[4].to_string())) w = nullptr;  // dropped: told to register again
      } else if (command == kError) {
        fail(*t->second.batch, "worker " + w->label() + " cannot evaluate " + t->second.problem->describe + ": " +
                                   parts[4].to_string().substr(0, 2000));
      } else {  // NEED: it dropped the problem from its cache; send both again
        w->problems.erase(parts[4].to_string());
        queue.push_front(t->first);
      }
    }
    // Anything from a worker we do not know (expired, or of a pool before us):
    // it registers again.
    if (!w) send(identity, {kVersion, kDisconnect});
  }

  Worker* pick(const PoolProblem& p) {
    Worker* best = nullptr;
    double best_load = 0;
    for (auto& [id, w] : workers) {
      if (w.unreachable || !w.can_do(p)) continue;
      const int cap = w.slots + std::max(0, options.prefetch);
      if (static_cast<int>(w.in_flight.size()) >= cap) continue;
      const double load = static_cast<double>(w.in_flight.size()) / w.slots;
      if (!best || load < best_load) best = &w, best_load = load;
    }
    return best;
  }

  void dispatch() {
    for (auto it = queue.begin(); it != queue.end();) {
      auto t = tasks.find(*it);
      if (t == tasks.end() || !t->second.batch->error.empty()) {
        it = queue.erase(it);
        continue;
      }
      Task& task = t->second;
      Worker* w = pick(*task.problem);
      if (!w) {
        ++it;
        continue;
      }
      bool ok = true;
      const PoolProblem& p = *task.problem;
      if (!w->problems.count(p.key)) {
        ok = send(w->identity, {kVersion, kProblem, p.key, p.frames[0], p.frames[1], p.frames[2], p.frames[3],
                                p.frames[4], p.frames[5]});
        if (ok) {
          w->problems.insert(p.key);
          ++stats.problems_sent;
        }
      }
      const std::string id = std::to_string(t->first);
      ok = ok && send(w->identity, {kVersion, kTask, id, p.key, task.placement});
      if (!ok) {
        w->unreachable = true;  // dropped by the next expiry pass
        continue;
      }
      w->in_flight.insert(t->first);
      task.starved_since.reset();  // a worker could do it; if it is lost, the wait starts again then
      ++stats.tasks_sent;
      if (task.lost) ++stats.resent, task.lost = false;
      it = queue.erase(it);
    }
  }

  void expire(Clock::time_point now) {
    for (auto it = workers.begin(); it != workers.end();) {
      auto next = std::next(it);
      if (it->second.unreachable)
        drop_worker(it, "is unreachable", true);
      else if (now > it->second.expiry)
        drop_worker(it,
                    "was lost (silent for " + ms_text(std::chrono::duration<double>(it->second.patience).count()) + ")",
                    true);
      it = next;
    }
  }

  // Tasks no live worker can do fail after worker_wait_s without one: counted from when the last that
  // could left (or from the first look), not from when the task was queued, so a worker restarted at
  // once finds the tasks that waited behind it.
  void fail_starved(Clock::time_point now) {
    const auto limit = std::chrono::duration<double>(options.worker_wait_s);
    for (uint64_t id : queue) {
      auto t = tasks.find(id);
      if (t == tasks.end() || !t->second.batch->error.empty()) continue;
      const PoolProblem& p = *t->second.problem;
      std::optional<Clock::time_point>& since = t->second.starved_since;
      if (std::any_of(workers.begin(), workers.end(), [&](const auto& w) { return w.second.can_do(p); })) {
        since.reset();
        continue;
      }
      if (!since) since = now;
      if (now - *since < limit) continue;
      std::vector<std::string> live;
      for (const auto& [wid, w] : workers) live.push_back(w.label());
      std::string message = "no worker able to evaluate " + p.describe + " for " + ms_text(options.worker_wait_s) +
                            " (live workers: " + (live.empty() ? std::string("none") : join(live, ", ")) + ")";
      if (p.measured)
        message += "; measured tasks need a worker with devices " + join(p.needs) + " (placer worker --devices ...)";
      else
        message += "; start one with: placer worker --connect " + endpoint;
      fail(*t->second.batch, message);
    }
  }

  // Every batch waiting fails; `cancelled`: as given up (EvaluationCancelled), not as an error. With mu held.
  void close_all(const std::string& message, bool cancelled) {
    closed = true;
    for (auto& [id, t] : tasks) {
      t.batch->cancelled = t.batch->cancelled || (cancelled && t.batch->error.empty());
      fail(*t.batch, message);
    }
  }

  // A batch's tasks, queued; their ids. Every placement is checked first: none is queued if one is wrong.
  std::vector<uint64_t> enqueue(const std::shared_ptr<Batch>& batch, const PoolProblem& p,
                                const std::vector<Placement>& placements) {
    for (const Placement& placement : placements)
      PLACER_CHECK(static_cast<int32_t>(placement.device_of.size()) == p.ops, "placement of ",
                   placement.device_of.size(), " ops for a graph of ", p.ops);
    std::vector<uint64_t> ids;
    ids.reserve(placements.size());
    std::lock_guard<std::mutex> lock(mu);
    if (closed) throw EvaluationCancelled("workers: the worker pool was shut down");
    for (size_t i = 0; i < placements.size(); ++i) {
      const uint64_t id = next_task++;
      Task t;
      t.batch = batch;
      t.index = i;
      t.problem = &p;
      t.placement = encode_placement(placements[i]);
      tasks.emplace(id, std::move(t));
      queue.push_back(id);
      ids.push_back(id);
    }
    return ids;
  }

  // Waits for the batch, in slices that look at *cancel; a batch failed or given up leaves no task behind.
  std::vector<StepResult> wait(Batch& batch, const std::vector<uint64_t>& ids, const std::atomic<bool>* cancel) {
    std::unique_lock<std::mutex> lock(mu);
    const auto over = [&] { return batch.remaining == 0 || !batch.error.empty() || (cancel && cancel->load()); };
    while (!changed.wait_for(lock, milliseconds(50), over)) {}
    if (batch.remaining == 0) return std::move(batch.results);
    for (uint64_t id : ids) tasks.erase(id);  // queued copies are skipped, late results ignored
    if (batch.error.empty()) throw EvaluationCancelled("workers: the batch was cancelled");
    if (batch.cancelled) throw EvaluationCancelled("workers: " + batch.error);
    throw RemoteError("workers: " + batch.error);
  }

  void io_loop() {
    next_heartbeat = Clock::now() + milliseconds(options.heartbeat_ms);
    const auto tick = milliseconds(std::clamp(options.heartbeat_ms / 4, 10, 100));
    while (!stop) {
      zmq::pollitem_t items[] = {{static_cast<void*>(router), 0, ZMQ_POLLIN, 0}, {nullptr, waker.fd(), ZMQ_POLLIN, 0}};
      if (!poll_interruptible(items, tick)) continue;
      if (items[1].revents & ZMQ_POLLIN) waker.drain();
      std::lock_guard<std::mutex> lock(mu);
      if (items[0].revents & ZMQ_POLLIN)
        for (int n = 0; n < 1024; ++n) {
          std::vector<zmq::message_t> parts;
          if (!zmq::recv_multipart(router, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
          on_message(parts);
        }
      const auto now = Clock::now();
      if (now >= next_heartbeat) {
        for (auto& [id, w] : workers)
          if (!send(id, {kVersion, kHeartbeat, std::to_string(options.heartbeat_ms)})) w.unreachable = true;
        next_heartbeat = now + milliseconds(options.heartbeat_ms);
      }
      expire(now);
      dispatch();
      fail_starved(now);
    }
  }
};

WorkerPool::WorkerPool(WorkerPoolOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (options.heartbeat_ms < 10 || options.liveness < 1 || options.max_attempts < 1 || options.worker_wait_s < 0)
    throw InputError("workers: heartbeat_ms must be >= 10, liveness and max_attempts >= 1, worker_wait_s >= 0");
  m.options = std::move(options);
  m.router = zmq::socket_t(m.ctx, zmq::socket_type::router);
  m.router.set(zmq::sockopt::linger, 0);
  m.router.set(zmq::sockopt::router_mandatory, 1);
  m.router.set(zmq::sockopt::maxmsgsize, int64_t{64} << 20);  // results are small; a larger message is not a worker's
  try {
    m.router.bind(m.options.bind);
  } catch (const zmq::error_t& e) {
    throw InputError("workers bind: cannot bind " + m.options.bind + ": " + e.what());
  }
  m.endpoint = m.router.get(zmq::sockopt::last_endpoint);
  m.io = std::thread([&m] { m.io_loop(); });
}

WorkerPool::~WorkerPool() {
  Impl& m = *impl_;
  m.stop = true;
  m.waker.wake();
  m.io.join();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.close_all("the worker pool was shut down", false);
  }
  m.router.close();
  m.ctx.shutdown();
  m.ctx.close();
}

std::string WorkerPool::endpoint() const { return impl_->endpoint; }

std::shared_ptr<const RemoteProblem> WorkerPool::prepare(const Graph& graph, const Cluster& cluster,
                                                         const RemoteSettings& settings) {
  if (settings.mode == RewardMode::Hybrid)
    throw InputError("workers: hybrid mode is not a remote mode (send its measurements as measured)");
  auto p = std::make_shared<PoolProblem>();
  p->owner = this;
  p->frames = {reward_mode_name(settings.mode),
               std::to_string(settings.measure.warmup_steps),
               measure_frame(settings.measure),
               graph_to_json(graph),
               cluster_to_json(cluster),
               settings.profile ? profile_to_json(*settings.profile) : ""};
  p->key = content_key(p->frames);
  p->measured = settings.mode == RewardMode::Measured;
  for (const Device& d : cluster.devices) p->needs.push_back(d.name);
  p->ops = graph.size();
  p->describe = "graph '" + graph.name + "' (" + std::to_string(graph.size()) + " ops) on " + cluster.name + ", " +
                reward_mode_name(settings.mode);
  return p;
}

std::vector<StepResult> WorkerPool::evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) {
  return evaluate_cancellable(problem, placements, nullptr);
}

std::vector<StepResult> WorkerPool::evaluate_cancellable(const RemoteProblem& problem,
                                                         const std::vector<Placement>& placements,
                                                         const std::atomic<bool>* cancel) {
  Impl& m = *impl_;
  const auto* p = dynamic_cast<const PoolProblem*>(&problem);
  PLACER_CHECK(p && p->owner == this, "a RemoteProblem prepared by another evaluator");
  if (placements.empty()) return {};
  auto batch = std::make_shared<Batch>();
  batch->results.resize(placements.size());
  batch->remaining = placements.size();
  const std::vector<uint64_t> ids = m.enqueue(batch, *p, placements);
  m.waker.wake();
  return m.wait(*batch, ids, cancel);
}

void WorkerPool::shut_down() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->close_all("the server is shutting down", true);
}

int WorkerPool::wait_for_workers(int count, double timeout_s) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->changed.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_s)),
                          [&] { return static_cast<int>(impl_->workers.size()) >= count; });
  return static_cast<int>(impl_->workers.size());
}

std::vector<WorkerInfo> WorkerPool::workers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<WorkerInfo> out;
  for (const auto& [id, w] : impl_->workers)
    out.push_back({w.name, w.devices, w.slots, static_cast<int>(w.in_flight.size()), w.results});
  return out;
}

WorkerPoolStats WorkerPool::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace placer::service
