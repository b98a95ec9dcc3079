// Optimize jobs: a bounded queue, a few runner threads, records that outlive
// the client (and, with a state_dir, the server process).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "placer/agent/train.h"
#include "placer/graphs/placement.h"
#include "placer/service/config.h"
#include "placer/service/protocol.h"
#include "prepared.h"

namespace placer {
class RemoteEvaluator;
}  // namespace placer

namespace placer::service {

class ServiceMetrics;

enum class JobState { Queued, Running, Done, Failed, Cancelled };

// A row of a finished learned job's final table, as the trainer made it
// (TrainResult: the policy's best, the baselines, the seen placements): all
// simulated, or all measured side by side in one run, each with its median's
// 95% interval and a rank test against the policy's best.
struct TableRow {
  std::string method;
  std::string role;  // "policy", "baseline" or "seen" (found outside the run: the fast path)
  double step_s = 0, ci_low_s = 0, ci_high_s = 0;
  double p_vs_policy = -1;  // -1: not tested
  std::string verdict;      // the rank test's (BaselineResult::verdict_vs_policy); "" = not tested
  // Its rounds paired with the policy's (BaselineResult::paired_vs_policy); none: not paired.
  std::optional<PairedTest> paired;
};
const char* job_state_name(JobState state);
bool finished(JobState s);                  // done, failed or cancelled
bool valid_job_id(const std::string& id);  // "j-" and 16 hex digits, as new jobs get
double unix_now();

struct Job {
  std::string id;
  Request request;  // the optimize request (graph spec, budget, methods)
  std::shared_ptr<const PreparedRequest> prepared;
  JobState state = JobState::Queued;
  std::atomic<bool> cancel{false};  // set by cancel() and at shutdown
  bool cancelled_by_user = false;   // cancel() (not the shutdown)
  // A learned job's trainer ran to its end (not stopped): a shutdown then does not put it back in the queue
  // (its final phase ran again on the next server, counted as a restart).
  bool trainer_finished = false;
  double created_unix = 0, started_unix = 0, finished_unix = 0;
  int64_t samples = 0;
  double elapsed_s = 0;
  int64_t rounds = 0;
  std::string best_method;
  double best_step_s = 0;  // 0 = none yet
  NamedPlacement best_placement;
  // A learned job's last best with a placement (the fast path's, say) while the policy's training best,
  // whose placement the trainer hands over at its end, is the best: the answer if the trainer fails.
  struct Placed {
    double step_s = 0;
    std::string method, found_by;
    NamedPlacement placement;
    bool measured = false;
  };
  std::optional<Placed> last_placed;
  // A best without its placement becomes the last one that had it (none: no best).
  void restore_last_placed() {
    if (!best_placement.device.empty()) return;
    if (last_placed) {
      best_step_s = last_placed->step_s;
      best_method = last_placed->method;
      best_found_by = last_placed->found_by;
      best_placement = last_placed->placement;
      best_measured = last_placed->measured;
    } else {
      best_step_s = 0;  // a time without its placement means nothing
    }
  }
  double lower_bound_s = 0;
  double start_step_s = 0;  // the best fast-path baseline the search started from
  std::string start_method;
  std::string error;
  std::string graph_name, cluster_name;
  std::vector<std::pair<std::string, double>> baselines;  // the fast path's, simulated (method, step s)

  // Learned jobs (request.is_learned()): `placer train` in the runner.
  bool learned = false;
  // The config this server process trains with (graph and cluster as values);
  // null for a job resumed from its record, whose config is train_json.
  std::shared_ptr<const TrainConfig> train;
  std::string train_json;  // the resolved train config (train_config_to_json), in the job's record
  std::string policy_type, reward_mode;
  std::string save_as, saved_as;
  std::string dir;  // the trainer's output folder (checkpoint, train.csv, reward.svg)
  int64_t updates = 0, budget_updates = 0;
  bool best_measured = false;
  // Who found the best: "policy", "baseline" (the trainer's warm start or
  // compare methods) or "fast_path" (the service's own answer for the graph
  // and cluster); the policy's own best stays apart (0 = none yet).
  std::string best_found_by;
  double policy_best_step_s = 0;
  double best_simulated_s = 0;  // a measured best placement's simulated step time (0 = not simulated)
  std::string table;            // how the final table was made (TrainResult::table); "" until trained
  std::vector<TableRow> table_rows;
  // The cross-core probe over the measured table's steps: median, lowest, highest (0 = not read;
  // TrainResult::table_core_rtt).
  CoreRttRange table_core_rtt;
  int64_t restarts = 0;  // server restarts this job resumed from
  int64_t resumed_at_update = -1;
  std::string waiting;                                   // why the job is not progressing now ("" = it is)
  double devices_from_unix = 0, devices_until_unix = 0;  // measured jobs: when they held the server's devices
  std::deque<UpdateMetrics> curve;                       // the last kCurvePoints updates
  std::shared_ptr<MetricsSink> series;                   // its Prometheus series, while exported
  int64_t remote_evaluations = 0;                        // done by rollout workers (this server process)
};

inline constexpr size_t kCurvePoints = 32;
// How a learned job's trainer names the service's fast-path answer, a placement it has seen ("fast_path:m_etf").
inline const std::string kFastPath = "fast_path:";

class JobManager {
 public:
  JobManager(const ServiceConfig& config, ServiceMetrics* metrics);
  ~JobManager();
  void start();  // starts the runners (after the hooks below are set)

  // Queues a job for a prepared request; throws RequestError(busy) when the
  // queue is full. Returns the job id.
  std::string submit(const Request& request, std::shared_ptr<const PreparedRequest> prepared);
  std::string status_json(const std::string& id);
  // A finished job's result; the record is dropped once fetched.
  std::string result_json(const std::string& id, bool include_placement);
  std::string cancel(const std::string& id);
  // Stops taking work and wakes every waiter: jobs are told to stop, a request waiting for the devices
  // gets shutting_down. Then the request threads can finish, then shutdown() joins the jobs.
  void begin_shutdown();
  void shutdown();
  // Set by the service before jobs run.
  // Keeps a finished learned job's run folder as a named policy; throws InputError.
  std::function<void(const std::string& name, const std::string& run_dir, const std::string& description)> save_policy;
  // Rejects a save_as name the server's config already uses (throws RequestError).
  std::function<void(const std::string& name)> check_policy_name;
  std::shared_ptr<RemoteEvaluator> remote;  // rollout workers for learned jobs, when configured
  // Runs `work` holding the server's devices, as a measuring learned job
  // does, so that measurements never overlap; waits until `deadline`, then
  // throws RequestError(busy) naming the job that measures (learned_job.cc).
  void with_devices(const std::string& holder, std::chrono::steady_clock::time_point deadline,
                    const std::function<void()>& work);
  int64_t running() const { return running_.load(); }
  int64_t queued() const;
  int64_t stored() const;

 private:
  void runner();
  void run(Job& job);
  void run_learned(Job& job);  // learned_job.cc
  struct DeviceLease;
  std::unique_ptr<DeviceLease> lease_devices(Job& job);
  TrainResult train_job(Job& job, const TrainConfig& config, std::chrono::steady_clock::time_point start,
                        double elapsed_before);
  // A learned job's config, folder and files, checked at submit (learned_job.cc).
  void prepare_learned(Job& job);
  std::shared_ptr<const TrainConfig> resumed_config(const Job& job) const;  // from the record (learned_job.cc)
  std::string jobs_dir() const;                                             // state_dir/jobs, or a temporary folder
  void export_series(Job& job);                                             // call with mutex_ held
  void limit_series();                                                      // call with mutex_ held
  std::shared_ptr<Job> find(const std::string& id);                         // throws RequestError(not_found)
  void persist(const Job& job);                                             // call with mutex_ held
  void forget(const std::string& id);                                       // call with mutex_ held
  void release_inputs(Job& job);  // a finished job's graph and prepared problem dropped (call with mutex_ held)
  void load_persisted();
  // An unfinished job after a restart: true if it resumes from its checkpoint, else marked failed and persisted.
  bool settle_restarted(Job& job, const std::string& state_text);   // call with mutex_ held
  void settle_failed(Job& job, const std::string& error);           // call with mutex_ held
  void expire();                                                    // call with mutex_ held
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
  std::string temp_dir_;  // jobs_dir() without a state_dir
  std::set<std::string> unwritten_;  // jobs whose record could not be written (said once each)
  // Measured jobs use the server's devices one at a time.
  std::mutex devices_mutex_;
  std::condition_variable devices_free_;
  std::string devices_holder_;  // who measures now ("job ID", "an evaluate request")
  bool devices_closed_ = false;  // begin_shutdown(): nobody waits for them any longer
};

}  // namespace placer::service
