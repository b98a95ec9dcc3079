// Learned optimize jobs: the client's train config (the `placer train`
// schema) completed with the request's graph, cluster and budget, trained in
// the job runner by the same train() as the CLI, with checkpoints in the
// job's folder so a restarted server resumes it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>

#include "jobs.h"
#include "method_list.h"
#include "objective.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/serialize.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

namespace fs = std::filesystem;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Training progress into the job record (status, the reward curve) and its
// Prometheus series.
class JobSink : public MetricsSink {
 public:
  // on_progress runs with the mutex held after every update.
  JobSink(std::mutex& mutex, Job& job, std::chrono::steady_clock::time_point start, double offset_s, bool resumed,
          std::function<void()> on_progress)
      : mutex_(mutex),
        job_(job),
        start_(start),
        offset_s_(offset_s),
        resumed_(resumed),
        on_progress_(std::move(on_progress)) {}
  void on_update(const UpdateMetrics& m) override {
    std::shared_ptr<MetricsSink> series;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (resumed_ && job_.resumed_at_update < 0) job_.resumed_at_update = m.update - 1;  // the checkpoint's update
      job_.updates = m.update;
      job_.samples = m.samples;
      job_.elapsed_s = offset_s_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (m.best_step_s > 0) job_.policy_best_step_s = m.best_step_s;
      if (m.best_step_s > 0 && (job_.best_step_s == 0 || m.best_step_s < job_.best_step_s)) {
        if (!job_.best_placement.device.empty())
          job_.last_placed = Job::Placed{job_.best_step_s, job_.best_method, job_.best_found_by, job_.best_placement,
                                          job_.best_measured};
        job_.best_step_s = m.best_step_s;
        job_.best_method = "learned:" + job_.policy_type;
        job_.best_found_by = "policy";
        job_.best_measured = m.best_measured;  // a measured job said "measured": false until it ended
        job_.best_placement = {};  // the trainer hands out the policy's placement when it ends
      }
      job_.curve.push_back(m);
      while (job_.curve.size() > kCurvePoints) job_.curve.pop_front();
      series = job_.series;
      on_progress_();
    }
    if (series) series->on_update(m);
  }
  void on_reference(double lower_bound_s, const std::vector<BaselineResult>& baselines) override {
    std::shared_ptr<MetricsSink> series;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      series = job_.series;
    }
    if (series) series->on_reference(lower_bound_s, baselines);
  }

 private:
  std::mutex& mutex_;
  Job& job_;
  std::chrono::steady_clock::time_point start_;
  double offset_s_;
  bool resumed_;
  std::function<void()> on_progress_;
};

}  // namespace

namespace {

const std::string kField = "learned";
// The service's fast-path answer for the job's graph and cluster, in the job's
// folder for a restarted server (the trainer names it kFastPath + method).
const std::string kFastPathFile = "fast_path_placement.json";

// A learned job's config errors: bad_request at the field ("learned.train.lr").
FieldFail learned_fail() {
  return [](const std::string& path, const std::string& problem, FieldProblem) {
    throw RequestError(codes::kBadRequest, path, problem);
  };
}

// What the server sets in a job's config, and the sections it writes into,
// checked before the config is read.
void check_server_fields(const Request& r) {
  const JsonNode& l = r.learned;
  for (const char* key : {"name", "graph", "cluster", "family", "held_out"})
    if (l.member(key).present())
      throw RequestError(
          codes::kBadRequest, kField + "." + key,
          "set by the server from the request (graph, cluster, devices); leave it out of the train config");
  if (l.member("run").member("output_dir").present())
    throw RequestError(codes::kBadRequest, kField + ".run.output_dir",
                       "the server keeps the job's files in its state folder");
  if (l.member("reward").member("profile").present())
    throw RequestError(codes::kBadRequest, kField + ".reward.profile", "a request cannot name a file on the server");
  // A folder or file there would be opened as given (another job's run folder, or a probe of what exists).
  const JsonNode init_from = l.member("policy").member("init_from");
  const std::optional<std::string> policy_name = init_from.string();
  if (init_from.present() && !(policy_name && (*policy_name == "pretrained" || policy_name->empty())))
    throw RequestError(codes::kBadRequest, kField + ".policy.init_from",
                       "a request cannot name a file on the server; 'pretrained' (the shipped policy) is the one "
                       "value it takes");
  std::vector<const char*> written = {"train", "run"};
  if (!r.reward_mode.empty()) written.insert(written.begin(), "reward");
  for (const char* key : written)
    if (l.member(key).present() && !l.member(key).is_map())
      throw RequestError(codes::kBadRequest, kField + "." + key, "expected an object");
}

// The request's train config completed with its graph, cluster (as values,
// named as the job's record names them), budget, seed and folder.
TrainConfig learned_config(const Request& r, const std::shared_ptr<const PreparedRequest>& p, const std::string& id,
                           const std::string& dir) {
  TrainConfig c = read_train_config(r.learned, kField, learned_fail());
  if (!r.learned_policy.empty()) c.policy.type = parse_policy_type(r.learned_policy);
  c.name = id;
  if (!r.graph.builder.empty()) {
    c.graph.builder = r.graph.builder;
    c.graph.options = r.graph.options;
    c.graph.forward_only = r.graph.forward_only;
  } else {
    c.graph.file = dir + "/graph.bin";
  }
  c.graph.value = std::shared_ptr<const Graph>(p, &p->graph);
  c.cluster = !r.cluster.preset.empty()    ? r.cluster.preset
              : !r.cluster.devices.empty() ? r.cluster.devices
                                           : dir + "/cluster.json";
  c.cluster_value = std::shared_ptr<const Cluster>(p, &p->cluster);
  if (r.cluster.preset.empty() && r.cluster.devices.empty() && p->cluster.name.empty()) {
    auto named = std::make_shared<Cluster>(p->cluster);
    named->name = "cluster";  // as a cluster file without a name reads
    c.cluster_value = named;
  }
  if (!r.reward_mode.empty()) c.reward.mode = parse_reward_mode(r.reward_mode);
  apply_objective(r, c.reward);  // the request's, which its learned.reward agrees with (protocol.cc)
  if (r.budget.samples > 0) c.optimizer.max_samples = r.budget.samples;
  if (r.budget.seconds > 0) c.optimizer.time_limit_s = r.budget.seconds;
  if (!r.learned.member("train").member("updates").present()) c.optimizer.updates = 100000000;  // the budget decides
  if (r.seed != 0) c.run.seed = r.seed;
  c.run.output_dir = dir;
  complete_train_config(c, kField, learned_fail());
  // A job shares the server: one LibTorch thread.
  c.run.threads = 1;
  c.run.env_threads = 1;
  return c;
}

}  // namespace

void JobManager::prepare_learned(Job& job) {
  const Request& r = job.request;
  check_server_fields(r);
  job.learned = true;
  job.dir = (fs::path(jobs_dir()) / job.id).string();
  auto train = std::make_shared<TrainConfig>(learned_config(r, job.prepared, job.id, job.dir));
  const TrainConfig& c = *train;
  // A config's lists of placers, checked at submit (an unknown name failed the job later).
  check_method_list(c.warm_start.methods, kField + ".warm_start.methods", MethodNames::kRegistered);
  check_method_list(c.compare, kField + ".compare", MethodNames::kRegistered);
  // A bounded warm start (the budget counts training time only).
  if (c.warm_start.bc_steps > 5000)
    throw RequestError(codes::kBadRequest, kField + ".warm_start.bc_steps",
                       "at most 5000 in a service job, got " + std::to_string(c.warm_start.bc_steps));
  // The refinement runs after the budget, outside it: bounded too (1e12 evaluations held the runner, and
  // with it cancel, shutdown and every restart, for days).
  if (c.optimizer.refine_evaluations > 100000)
    throw RequestError(codes::kBadRequest, kField + ".train.refine_evaluations",
                       "at most 100000 in a service job, got " + std::to_string(c.optimizer.refine_evaluations));
  if (c.policy.hidden > 1024)
    throw RequestError(codes::kBadRequest, kField + ".policy.hidden",
                       "at most 1024 in a service job, got " + std::to_string(c.policy.hidden));
  if (c.reward.mode != RewardMode::Simulated) {
    if (!config_.measure_jobs)
      throw RequestError(codes::kBadRequest, "reward_mode",
                         std::string("'") + reward_mode_name(c.reward.mode) +
                             "' runs the model on this server's devices; the server's config does not allow it "
                             "(jobs.measure: false); use simulated");
    if (r.cluster.devices.empty())
      throw RequestError(codes::kBadRequest, "devices",
                         std::string("a ") + reward_mode_name(c.reward.mode) +
                             " job runs on the server's own devices: give \"devices\" (e.g. \"cpu:2\"), not a cluster");
  }
  if (!r.save_as.empty() && check_policy_name) check_policy_name(r.save_as);
  job.train = train;
  job.train_json = train_config_to_json(c);
  job.policy_type = policy_type_name(c.policy.type);
  job.reward_mode = reward_mode_name(c.reward.mode);
  job.budget_updates = c.optimizer.updates;
  job.save_as = r.save_as;
  fs::create_directories(job.dir);
  // The trainer gets the graph and cluster as values; a restarted server
  // resumes the job from its record, which names these files.
  if (config_.state_dir.empty()) return;
  if (!c.graph.file.empty()) save_graph(job.prepared->graph, c.graph.file);
  if (c.cluster == job.dir + "/cluster.json") save_cluster(*c.cluster_value, c.cluster);
  const PreparedRequest& p = *job.prepared;
  if (p.best >= 0)
    save_placement(to_named(p.graph, p.cluster, p.baselines[p.best].placement), job.dir + "/" + kFastPathFile);
}

// A job of an earlier server process: the config of its record, whose files
// follow the job's folder (a state_dir may move between runs).
std::shared_ptr<const TrainConfig> JobManager::resumed_config(const Job& job) const {
  auto c = std::make_shared<TrainConfig>(parse_train_config(job.train_json, job.id + " (job record)"));
  c->run.output_dir = job.dir;
  if (!c->graph.file.empty()) c->graph.file = job.dir + "/graph.bin";
  if (fs::path(c->cluster).filename() == "cluster.json") c->cluster = job.dir + "/cluster.json";
  apply_objective(job.request, c->reward);  // the record's objective
  return c;
}

// The server's devices, held by one measuring job at a time; released when destroyed.
struct JobManager::DeviceLease {
  JobManager* m;
  Job* job;
  DeviceLease(const DeviceLease&) = delete;
  DeviceLease& operator=(const DeviceLease&) = delete;
  ~DeviceLease() {
    {
      std::lock_guard<std::mutex> lock(m->mutex_);
      job->devices_until_unix = unix_seconds();
    }
    std::lock_guard<std::mutex> dl(m->devices_mutex_);
    m->devices_holder_.clear();
    m->devices_free_.notify_all();
  }
};

// Waits for the devices; null when the job is cancelled meanwhile.
std::unique_ptr<JobManager::DeviceLease> JobManager::lease_devices(Job& job) {
  std::unique_lock<std::mutex> dl(devices_mutex_);
  while (!devices_holder_.empty() && !job.cancel) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job.waiting = "waiting for the server's devices: " + devices_holder_ + " is measuring";
    }
    devices_free_.wait_for(dl, std::chrono::milliseconds(200));
  }
  if (job.cancel) return nullptr;
  devices_holder_ = "job " + job.id;
  std::unique_ptr<DeviceLease> lease(new DeviceLease{this, &job});  // in place: a temporary would release
  std::lock_guard<std::mutex> lock(mutex_);
  job.waiting.clear();
  job.devices_from_unix = unix_seconds();
  return lease;
}

void JobManager::with_devices(const std::string& holder, std::chrono::steady_clock::time_point deadline,
                              const std::function<void()>& work) {
  {
    std::unique_lock<std::mutex> dl(devices_mutex_);
    // A SIGTERM waited here for the request's whole deadline (24 s) while a job measured on.
    if (!devices_free_.wait_until(dl, deadline, [&] { return devices_holder_.empty() || devices_closed_; }))
      throw RequestError(codes::kBusy, "measure",
                         "the server's devices are busy: " + devices_holder_ + " is measuring");
    if (devices_closed_) throw RequestError(codes::kShuttingDown, "", "the server is shutting down");
    devices_holder_ = holder;
  }
  struct Release {
    JobManager* m;
    ~Release() {
      std::lock_guard<std::mutex> dl(m->devices_mutex_);
      m->devices_holder_.clear();
      m->devices_free_.notify_all();
    }
  } release{this};
  work();
}

namespace {

// A measured best placement is also simulated, so the two can be compared (0 = not simulated).
double simulated_best(const TrainConfig& c, const TrainResult& r) {
  if (!r.best_measured || r.best_placement.device.empty()) return 0;
  const Graph graph = c.graph.load();
  const Cluster cluster = c.cluster_value ? *c.cluster_value : resolve_cluster(c.cluster);
  EnvOptions eo;
  eo.threads = 1;
  eo.objective = c.reward.objective;
  eo.pipeline = c.reward.pipeline;
  StepResult sim = Environment(graph, cluster, eo).simulate(from_named(graph, cluster, r.best_placement));
  return sim.ok() ? sim.step_s : 0;
}

// The service's fast-path answer (what `place` answers without a policy), a
// placement the job's trainer has seen: the job's answer is never worse. A
// resumed job reads it from its folder.
std::vector<SeenPlacement> fast_path_seen(const Job& job, const TrainConfig& c) {
  if (job.prepared) {
    const PreparedRequest& p = *job.prepared;
    if (p.best < 0) return {};
    return {{kFastPath + p.baselines[p.best].method, p.baselines[p.best].placement}};
  }
  const std::string file = job.dir + "/" + kFastPathFile;
  if (job.start_method.empty() || !fs::exists(file)) return {};
  const Graph graph = c.graph.load();
  const Cluster cluster = c.cluster_value ? *c.cluster_value : resolve_cluster(c.cluster);
  return {{kFastPath + job.start_method, from_named(graph, cluster, load_placement(file))}};
}

// A simulated job's best before training: the fast-path answer, which the
// policy must beat (call with the mutex held).
void start_from_fast_path(Job& job, const TrainConfig& c) {
  if (!job.prepared || job.best_step_s > 0 || c.reward.mode != RewardMode::Simulated) return;
  const PreparedRequest& p = *job.prepared;
  if (p.best < 0) return;
  job.best_step_s = p.baselines[p.best].result.step_s;
  job.best_method = p.baselines[p.best].method;
  job.best_found_by = "fast_path";
  job.best_placement = to_named(p.graph, p.cluster, p.baselines[p.best].placement);
}

// The trainer's result into the job record (call with the mutex held).
void record_result(Job& job, const TrainConfig& c, const TrainResult& r) {
  job.updates = r.updates;
  job.samples = r.samples;
  job.remote_evaluations += r.remote_evaluations;
  // A failed final measurement leaves a penalty, not a step: the policy's best is then unknown (0).
  if (r.policy_step_s() > 0 || !r.policy_failed.empty()) job.policy_best_step_s = r.policy_step_s();
  // Simulated steps are deterministic: an answer already recorded with its placement (before a restart,
  // say) that is faster than the trainer's stays the answer.
  const bool kept = c.reward.mode == RewardMode::Simulated && !job.best_placement.device.empty() &&
                    job.best_step_s > 0 && job.best_step_s < r.best_step_s;
  if (r.best_step_s > 0 && std::isfinite(r.best_step_s) && !kept) {
    job.best_step_s = r.best_step_s;
    job.best_measured = r.best_measured;
    // Never worse than what it saw: a baseline or the fast path that the policy
    // did not beat is the answer, under its own name.
    job.best_method = r.best_found_by;
    job.best_found_by = "baseline";
    if (r.best_found_by == "policy") {
      job.best_method = std::string("learned:") + policy_type_name(c.policy.type);
      job.best_found_by = "policy";
    } else if (r.best_found_by.rfind(kFastPath, 0) == 0) {
      job.best_method = r.best_found_by.substr(kFastPath.size());
      job.best_found_by = "fast_path";
    }
    job.best_placement = r.best_placement;
  }
  job.restore_last_placed();  // a trainer that had no result (a failed final measurement): not a bare time
  // `baselines` stays simulated: a measured job's rows are in its final table only.
  const bool simulated = c.reward.mode == RewardMode::Simulated;
  if (simulated)
    for (const auto& b : r.baselines)
      if (b.ok &&
          std::none_of(job.baselines.begin(), job.baselines.end(), [&](const auto& x) { return x.first == b.method; }))
        job.baselines.emplace_back(b.method, b.step_s);
  // The final table as the trainer made it, like with like. A measuring job stopped before its
  // side-by-side run (cancelled, the server stopping) has none: its rows were measured apart.
  job.table_rows.clear();
  job.table_core_rtt = r.table_core_rtt;
  job.table = simulated || r.table != "simulated" ? r.table : "";
  if (job.table.empty()) return;
  // The policy's row, unless its measurement failed (a penalty, not a step time).
  if (r.policy_step_s() > 0)
    job.table_rows.push_back({std::string("learned:") + policy_type_name(c.policy.type), "policy", r.policy_step_s(),
                              r.policy_ci_low_s, r.policy_ci_high_s, -1, ""});
  for (const auto& [rows, role] : {std::pair{&r.baselines, "baseline"}, std::pair{&r.seen, "seen"}})
    for (const BaselineResult& b : *rows)
      if (b.ok && std::isfinite(b.step_s))
        job.table_rows.push_back({b.method, role, b.step_s, b.ci_low_s, b.ci_high_s, b.p_vs_policy,
                                  b.verdict_vs_policy(r.policy_best_step_s), b.paired_vs_policy});
}

}  // namespace

// train() with the job's controls and a sink that feeds its record.
TrainResult JobManager::train_job(Job& job, const TrainConfig& c, std::chrono::steady_clock::time_point start,
                                  double elapsed_before) {
  TrainControls ctl;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job.resumed_at_update = -1;
  }
  ctl.resume = fs::exists(job.dir + "/checkpoint.pt");
  ctl.progress = false;
  ctl.cancel = &job.cancel;
  // Rollout workers evaluate simulated jobs; a measured or hybrid job measures on the server's own devices,
  // which it holds (its measurements went to the workers' machines while it held them, and its final table
  // was measured here).
  ctl.remote = c.reward.mode == RewardMode::Simulated ? remote : nullptr;
  ctl.seen = fast_path_seen(job, c);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start_from_fast_path(job, c);
  }
  double last_persist = 0;
  JobSink sink(mutex_, job, start, elapsed_before, ctl.resume, [&] {
    if (job.elapsed_s - last_persist < 2.0) return;  // the record on disk follows within 2 s
    last_persist = job.elapsed_s;
    persist(job);
  });
  return train(c, &sink, ctl);
}

void JobManager::run_learned(Job& job) {
  const std::shared_ptr<const TrainConfig> config = job.train ? job.train : resumed_config(job);
  const TrainConfig& c = *config;
  if (c.reward.mode != RewardMode::Simulated && !config_.measure_jobs)
    throw InputError("the server's config no longer allows measuring jobs (jobs.measure: false)");
  const auto start = std::chrono::steady_clock::now();
  double elapsed_before;  // of earlier server processes
  {
    std::lock_guard<std::mutex> lock(mutex_);
    elapsed_before = job.elapsed_s;
  }
  // Measured rewards use the server's devices: one such job at a time.
  std::unique_ptr<DeviceLease> lease;
  if (c.reward.mode != RewardMode::Simulated && !(lease = lease_devices(job))) return;
  const TrainResult r = train_job(job, c, start, elapsed_before);
  const double simulated_s = simulated_best(c, r);

  std::unique_lock<std::mutex> lock(mutex_);
  job.best_simulated_s = simulated_s;
  job.elapsed_s = elapsed_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record_result(job, c, r);
  job.trainer_finished = r.ended_by != "stopped";
  // A shutdown's cancel after the trainer's end does not stop the policy being kept; a user's does.
  if (job.save_as.empty() || job.cancelled_by_user || !job.trainer_finished || !save_policy) return;
  const std::string name = job.save_as;
  const std::string description = std::string(policy_type_name(c.policy.type)) + " policy learned by job " + job.id +
                                  " for " + job.graph_name + " on " + job.cluster_name;
  lock.unlock();  // copying a checkpoint must not stall status requests and other jobs
  std::string error;
  try {
    save_policy(name, job.dir, description);
  } catch (const std::exception& e) {
    error = e.what();
  }
  lock.lock();
  if (error.empty())
    job.saved_as = name;
  else
    job.error = "the job finished but could not be kept as policy '" + name + "': " + error;
}

void JobManager::export_series(Job& job) {
  if (!metrics_ || !job.learned) return;
  auto sink = std::make_shared<PrometheusSink>(metrics_->registry(), job.id, job.graph_name);
  if (job.lower_bound_s > 0) sink->set_lower_bound(job.lower_bound_s);
  for (const auto& [method, step] : job.baselines) sink->set_baseline(method, step);
  job.series = sink;
  limit_series();
}

// At most job_metric_series jobs keep series in /metrics: the oldest
// finished ones lose theirs first (running jobs always keep them).
void JobManager::limit_series() {
  std::vector<Job*> with;
  for (auto& [id, job] : jobs_)
    if (job->series) with.push_back(job.get());
  std::sort(with.begin(), with.end(), [](const Job* a, const Job* b) { return a->finished_unix < b->finished_unix; });
  size_t excess =
      with.size() > static_cast<size_t>(config_.job_metric_series) ? with.size() - config_.job_metric_series : 0;
  for (Job* j : with) {
    if (excess == 0) break;
    if (j->state == JobState::Running || j->state == JobState::Queued) continue;
    j->series.reset();
    --excess;
  }
}

std::string JobManager::jobs_dir() const {
  if (!config_.state_dir.empty()) return (fs::absolute(config_.state_dir) / "jobs").lexically_normal().string();
  return temp_dir_;
}

}  // namespace placer::service
