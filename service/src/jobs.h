// Optimize jobs: a bounded queue, a few runner threads, records that outlive
// the client (and, with a state_dir, the server process).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "placer/graphs/placement.h"
#include "placer/service/service.h"

namespace placer::service {

struct Job {
  std::string id;
  Request request;                       // the optimize request (graph spec, budget, methods)
  std::shared_ptr<const Problem> problem;
  JobState state = JobState::Queued;
  std::atomic<bool> cancel{false};
  double created_unix = 0, started_unix = 0, finished_unix = 0;
  int64_t samples = 0;
  double elapsed_s = 0;
  int64_t rounds = 0;
  std::string best_method;
  double best_step_s = 0;                // 0 = none yet
  NamedPlacement best_placement;
  double lower_bound_s = 0;
  double start_step_s = 0;               // the best fast-path baseline the search started from
  std::string start_method;
  std::string error;
  std::string graph_name, cluster_name;
};

class JobManager {
 public:
  JobManager(const ServiceConfig& config, ServiceMetrics* metrics);
  ~JobManager();

  // Queues a job for a prepared problem; throws RequestError(busy) when the
  // queue is full. Returns the job id.
  std::string submit(const Request& request, std::shared_ptr<const Problem> problem);
  std::string status_json(const std::string& id);
  // A finished job's result; the record is dropped once fetched.
  std::string result_json(const std::string& id, bool include_placement);
  std::string cancel(const std::string& id);
  void shutdown();
  int64_t running() const { return running_.load(); }
  int64_t queued() const;
  int64_t stored() const;

 private:
  void runner();
  void run(Job& job);
  std::shared_ptr<Job> find(const std::string& id);  // throws RequestError(not_found)
  void persist(const Job& job);      // call with mutex_ held
  void forget(const std::string& id);  // call with mutex_ held
  void load_persisted();
  void expire();                     // call with mutex_ held
  std::string describe(const Job& job, bool with_placement) const;  // call with mutex_ held

  const ServiceConfig& config_;
  ServiceMetrics* metrics_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> runners_;
  std::atomic<int64_t> running_{0};
  bool stopping_ = false;
};

}  // namespace placer::service
