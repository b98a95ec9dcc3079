// What the service does with a parsed request, independent of the transport:
// place, evaluate, baselines, policies, health, and optimize jobs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "placer/service/config.h"
#include "placer/service/protocol.h"

namespace placer {
class LoadedPolicy;
class PreparedProblem;
}  // namespace placer

namespace placer::service {

class ServiceMetrics;
class PrometheusSink;
using Clock = std::chrono::steady_clock;

struct PreparedRequest;  // prepared.h
struct PlaceAnswer;      // service.cc
class JobManager;
class WorkerPool;

class PlacementService {
 public:
  explicit PlacementService(ServiceConfig config, ServiceMetrics* metrics = nullptr);
  ~PlacementService();  // cancels jobs
  PlacementService(const PlacementService&) = delete;
  PlacementService& operator=(const PlacementService&) = delete;

  // The reply's "result" object as JSON text. Throws RequestError for bad
  // requests; other exceptions are internal errors.
  std::string handle(const Request& request, Clock::time_point deadline);

  // Stops job runners: running jobs are cancelled; search jobs are recorded
  // failed ("server shut down"), learned jobs with a state_dir go back to
  // queued for the next server to resume. Idempotent.
  // At a SIGTERM: begin_shutdown() (jobs told to stop, waiters woken), then the server's stop(), then
  // shutdown() (jobs joined).
  void begin_shutdown();
  void shutdown();

  const ServiceConfig& config() const { return config_; }
  int64_t running_jobs() const;
  // The bound rollout endpoint ("" = none), for the log line and tests.
  std::string rollouts_endpoint() const;
  // Hooks for the transport to report its state in `health`.
  std::function<int64_t()> queue_depth;

 private:
  std::shared_ptr<const PreparedRequest> prepare(const Request& request);
  // A policy by name: its entry and the policy loaded from its checkpoint,
  // reloaded only when the checkpoint file changes. nullptr if no such name.
  struct PolicyHandle {
    PolicyEntry entry;
    std::shared_ptr<const LoadedPolicy> policy;
    std::string version;  // the checkpoint's change time
  };
  std::optional<PolicyHandle> find_policy(const std::string& name);
  void save_policy(const std::string& name, const std::string& run_dir, const std::string& description);
  void load_saved_policies();
  std::vector<PolicyEntry> policy_list();
  std::string handle_place(const Request& request, Clock::time_point deadline);
  // handle_place's steps (service.cc).
  std::optional<PolicyHandle> place_policy(const Request& request, const std::string& policy_name);
  static void decode_with_policy(const PolicyHandle& policy, const Request& request, const PreparedRequest& prepared,
                                 Clock::time_point deadline, PlaceAnswer& answer);
  // evaluate.cc: simulates, or with request.measure measures on the server's
  // devices (one measurement at a time, with measured learned jobs).
  std::string handle_evaluate(const Request& request, Clock::time_point deadline);
  std::string handle_baselines(const Request& request, Clock::time_point deadline);
  std::string handle_policies();
  std::string handle_health();

  ServiceConfig config_;
  ServiceMetrics* metrics_;
  Clock::time_point started_;
  std::unique_ptr<JobManager> jobs_;
  std::shared_ptr<WorkerPool> rollouts_;  // rollout workers for learned jobs (rollouts.bind)

  // Policies: the config's, then those kept by learned jobs (save_as).
  std::mutex policies_mutex_;
  std::vector<PolicyEntry> policies_;
  std::map<std::string, std::pair<std::string, std::shared_ptr<const LoadedPolicy>>>
      loaded_;             // name -> (version, policy)
  std::string saved_dir_;  // where save_as keeps policies (state_dir/policies, or a temporary folder)
  bool saved_dir_temporary_ = false;

  std::mutex cache_mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const PreparedRequest>>> cache_;  // most recent first
};

}  // namespace placer::service
