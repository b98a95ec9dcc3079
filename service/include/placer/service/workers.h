// Rollouts on several machines. A WorkerPool (the trainer's side, a
// RemoteEvaluator) binds a ROUTER socket; `placer worker` processes (DEALER,
// run_worker) connect to it, announce their devices and evaluate the
// placements it sends them, simulated or measured. Reliability follows the
// ZeroMQ guide's Paranoid Pirate pattern: both sides send heartbeats, a
// worker silent for `liveness` heartbeats is lost and its placements go to
// another worker; every task has an id and only its first result counts, so
// a placement is never lost nor counted twice. Wire protocol: docs/workers.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "placer/env/remote.h"
#include "placer/graphs/error.h"

namespace placer::service {

// A batch the pool cannot finish: no worker able to do it within
// worker_wait_s, a worker that answered it cannot do a task, or placements
// that lost max_attempts workers in a row.
class RemoteError : public InputError {
 public:
  using InputError::InputError;
};

struct WorkerPoolOptions {
  std::string bind = "tcp://127.0.0.1:*";  // tcp://*:5557 for other machines; port * = any free port
  int heartbeat_ms = 1000;
  int liveness = 3;             // heartbeats a worker may miss before it counts as lost
  double worker_wait_s = 60.0;  // a task waits this long for a live worker able to do it, then the batch fails
  int prefetch = 1;             // tasks sent to a worker beyond its slots, to hide the round trip
  int max_attempts = 4;         // a placement whose workers are lost this many times fails its batch
  std::function<void(const std::string&)> log;  // a line when a worker joins, leaves or is lost; null = quiet
};

struct WorkerInfo {
  std::string name;
  std::vector<std::string> devices;
  int slots = 1;
  int in_flight = 0;
  int64_t results = 0;
};

struct WorkerPoolStats {
  int64_t workers_joined = 0;
  int64_t workers_lost = 0;  // expired (missed heartbeats) or unreachable
  int64_t workers_left = 0;  // said goodbye
  int64_t tasks_sent = 0;    // including re-sends
  int64_t results = 0;       // results counted (one per placement)
  int64_t resent = 0;        // tasks sent again after their worker was lost
  int64_t ignored = 0;       // late or duplicate results, and answers from a peer not holding the task
  int64_t problems_sent = 0;
};

class WorkerPool final : public RemoteEvaluator {
 public:
  // Binds and starts the I/O thread; throws InputError naming the endpoint.
  explicit WorkerPool(WorkerPoolOptions options = {});
  // Batches still waiting fail with RemoteError; workers reconnect on their own.
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The bound endpoint, port resolved ("tcp://127.0.0.1:41234", "tcp://0.0.0.0:5557").
  std::string endpoint() const;

  std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                               const RemoteSettings& settings) override;
  // Thread-safe; several batches (from several environments) may run at once.
  std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) override;
  // Checks *cancel every 50 ms; a batch given up leaves the queue (results of its tasks sent already are ignored).
  std::vector<StepResult> evaluate_cancellable(const RemoteProblem& problem, const std::vector<Placement>& placements,
                                               const std::atomic<bool>* cancel) override;
  // Batches waiting now and later throw EvaluationCancelled.
  void shut_down() override;

  // Blocks until at least `count` workers are live or timeout_s passes; returns how many are.
  int wait_for_workers(int count, double timeout_s) const;
  std::vector<WorkerInfo> workers() const;
  WorkerPoolStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct WorkerOptions {
  std::string name;               // default host:pid
  std::string devices = "cpu:2";  // device list (as `placer measure --devices`): what measured tasks may use
  int threads = 1;                // evaluations at a time (measurements always run alone)
  int heartbeat_ms = 1000;
  int liveness = 3;             // pool heartbeats missed before reconnecting
  int max_backoff_ms = 32'000;  // reconnect delay doubles up to this
  int problem_cache = 4;        // environments kept, least recently used dropped
  int slow_ms = 0;              // testing: wait this long before each evaluation
  bool verbose = false;         // a log line per task
};

struct WorkerStats {
  int64_t tasks = 0;   // results sent
  int64_t errors = 0;  // tasks answered with an error
  int64_t reconnects = 0;
};

// Serves the pool at `endpoint` until `stop` becomes true, then says goodbye
// and returns. Logs to stderr. Throws InputError for bad options (devices).
WorkerStats run_worker(const std::string& endpoint, const WorkerOptions& options, const std::atomic<bool>& stop);

}  // namespace placer::service
