// Learned optimize jobs: the client's train config (the `placer train`
// schema) completed with the request's graph, cluster and budget, trained in
// the job runner by the same train() as the CLI, with checkpoints in the
// job's folder so a restarted server resumes it.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>

#include "jobs.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/serialize.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

namespace fs = std::filesystem;
using rapidjson::Value;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string to_text(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// The object member `key` of `obj`, made an (empty) object if missing.
Value& section(Value& obj, const char* key, rapidjson::Document::AllocatorType& a, const std::string& field) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd()) {
    obj.AddMember(Value(key, a), Value(rapidjson::kObjectType), a);
    it = obj.FindMember(key);
  }
  if (!it->value.IsObject()) throw RequestError(codes::kBadRequest, field + "." + key, "expected an object");
  return it->value;
}

void set(Value& obj, const char* key, Value v, rapidjson::Document::AllocatorType& a) {
  auto it = obj.FindMember(key);
  if (it != obj.MemberEnd())
    it->value = std::move(v);
  else
    obj.AddMember(Value(key, a), std::move(v), a);
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
      if (m.best_step_s > 0 && (job_.best_step_s == 0 || m.best_step_s < job_.best_step_s)) {
        job_.best_step_s = m.best_step_s;
        job_.best_method = "learned:" + job_.policy_type;
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

void JobManager::prepare_learned(Job& job) {
  const Request& r = job.request;
  const std::string F = "learned";
  rapidjson::Document d;
  d.Parse(r.learned_json.c_str(), r.learned_json.size());
  if (d.HasParseError() || !d.IsObject()) throw RequestError(codes::kBadRequest, F, "expected a train-config object");
  auto& a = d.GetAllocator();
  for (const char* key : {"name", "graph", "cluster", "family", "held_out"})
    if (d.HasMember(key))
      throw RequestError(
          codes::kBadRequest, F + "." + key,
          "set by the server from the request (graph, cluster, devices); leave it out of the train config");
  if (d.HasMember("run") && d["run"].IsObject() && d["run"].HasMember("output_dir"))
    throw RequestError(codes::kBadRequest, F + ".run.output_dir",
                       "the server keeps the job's files in its state folder");
  if (d.HasMember("reward") && d["reward"].IsObject() && d["reward"].HasMember("profile"))
    throw RequestError(codes::kBadRequest, F + ".reward.profile", "a request cannot name a file on the server");

  job.learned = true;
  job.dir = (fs::path(jobs_dir()) / job.id).string();
  const PreparedRequest& p = *job.prepared;
  set(d, "name", Value(job.id.c_str(), a), a);
  Value graph(rapidjson::kObjectType);
  if (!r.graph.builder.empty()) {
    graph.AddMember("builder", Value(r.graph.builder.c_str(), a), a);
    Value options(rapidjson::kObjectType);
    for (const auto& [k, v] : r.graph.options)
      options.AddMember(Value(k.c_str(), a), Value(static_cast<int64_t>(v)), a);
    graph.AddMember("options", options, a);
    graph.AddMember("forward_only", Value(r.graph.forward_only), a);
  } else {
    graph.AddMember("file", Value((job.dir + "/graph.bin").c_str(), a), a);
  }
  set(d, "graph", std::move(graph), a);
  std::string cluster = !r.cluster.preset.empty()    ? r.cluster.preset
                        : !r.cluster.devices.empty() ? r.cluster.devices
                                                     : job.dir + "/cluster.json";
  set(d, "cluster", Value(cluster.c_str(), a), a);
  if (!r.reward_mode.empty()) set(section(d, "reward", a, F), "mode", Value(r.reward_mode.c_str(), a), a);
  Value& train_s = section(d, "train", a, F);
  if (r.budget.samples > 0) set(train_s, "max_samples", Value(static_cast<int64_t>(r.budget.samples)), a);
  if (r.budget.seconds > 0) set(train_s, "time_limit_s", Value(r.budget.seconds), a);
  if (!train_s.HasMember("updates"))
    set(train_s, "updates", Value(static_cast<int64_t>(100000000)), a);  // the budget decides
  Value& run_s = section(d, "run", a, F);
  if (r.seed != 0) set(run_s, "seed", Value(static_cast<int64_t>(r.seed)), a);
  set(run_s, "output_dir", Value(job.dir.c_str(), a), a);

  TrainConfig c;
  try {
    c = parse_train_config(to_text(d), F);
  } catch (const InputError& e) {
    // "learned: train.lr: expected a number" -> field learned.train.lr
    std::string what = e.what(), field = F;
    if (what.rfind(F + ": ", 0) == 0) {
      what = what.substr(F.size() + 2);
      auto colon = what.find(": ");
      if (colon != std::string::npos && what.find(' ') >= colon) {
        field += "." + what.substr(0, colon);
        what = what.substr(colon + 2);
      }
    }
    throw RequestError(codes::kBadRequest, field, what);
  }
  // A job shares the server: one LibTorch thread, and a bounded warm start
  // (the budget counts training time only).
  c.run.threads = 1;
  c.run.env_threads = 1;
  if (c.warm_start.bc_steps > 5000)
    throw RequestError(codes::kBadRequest, F + ".warm_start.bc_steps",
                       "at most 5000 in a service job, got " + std::to_string(c.warm_start.bc_steps));
  if (c.policy.hidden > 1024)
    throw RequestError(codes::kBadRequest, F + ".policy.hidden",
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
  job.train_json = train_config_to_json(c);
  job.policy_type = policy_type_name(c.policy.type);
  job.reward_mode = reward_mode_name(c.reward.mode);
  job.budget_updates = c.optimizer.updates;
  job.save_as = r.save_as;
  fs::create_directories(job.dir);
  if (r.graph.builder.empty()) save_graph(p.graph, job.dir + "/graph.bin");
  if (r.cluster.preset.empty() && r.cluster.devices.empty()) save_cluster(p.cluster, job.dir + "/cluster.json");
}

void JobManager::run_learned(Job& job) {
  TrainConfig c = parse_train_config(job.train_json, job.id + " (job record)");
  // Paths inside the job's folder follow the folder (a state_dir may move between runs).
  c.run.output_dir = job.dir;
  if (!c.graph.file.empty()) c.graph.file = job.dir + "/graph.bin";
  if (fs::path(c.cluster).filename() == "cluster.json") c.cluster = job.dir + "/cluster.json";
  if (c.reward.mode != RewardMode::Simulated && !config_.measure_jobs)
    throw InputError("the server's config no longer allows measuring jobs (jobs.measure: false)");
  const auto start = std::chrono::steady_clock::now();
  double elapsed_before;  // of earlier server processes
  {
    std::lock_guard<std::mutex> lock(mutex_);
    elapsed_before = job.elapsed_s;
  }

  // Measured rewards use the server's devices: one such job at a time.
  struct Lease {
    JobManager* m = nullptr;
    Job* job = nullptr;
    ~Lease() {
      if (!m) return;
      {
        std::lock_guard<std::mutex> lock(m->mutex_);
        job->devices_until_unix = unix_seconds();
      }
      std::lock_guard<std::mutex> dl(m->devices_mutex_);
      m->devices_holder_.clear();
      m->devices_free_.notify_all();
    }
  } lease;
  if (c.reward.mode != RewardMode::Simulated) {
    std::unique_lock<std::mutex> dl(devices_mutex_);
    while (!devices_holder_.empty() && !job.cancel) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job.waiting = "waiting for the server's devices: job " + devices_holder_ + " is measuring";
      }
      devices_free_.wait_for(dl, std::chrono::milliseconds(200));
    }
    if (job.cancel) return;
    devices_holder_ = job.id;
    lease.m = this;
    lease.job = &job;
    std::lock_guard<std::mutex> lock(mutex_);
    job.waiting.clear();
    job.devices_from_unix = unix_seconds();
  }

  TrainControls ctl;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job.resumed_at_update = -1;
  }
  ctl.resume = fs::exists(job.dir + "/checkpoint.pt");
  ctl.progress = false;
  ctl.cancel = &job.cancel;
  ctl.remote = remote;
  double last_persist = 0;
  JobSink sink(mutex_, job, start, elapsed_before, ctl.resume, [&] {
    if (job.elapsed_s - last_persist < 2.0) return;  // the record on disk follows within 2 s
    last_persist = job.elapsed_s;
    persist(job);
  });
  TrainResult r = train(c, &sink, ctl);

  // A measured best placement is also simulated, so the two can be compared.
  double simulated_s = 0;
  if (r.best_measured && !r.best_placement.device.empty()) {
    const Graph graph = c.graph.load();
    Cluster cluster = resolve_cluster(c.cluster);
    EnvOptions eo;
    eo.threads = 1;
    StepResult sim = Environment(graph, cluster, eo).simulate(from_named(graph, cluster, r.best_placement));
    if (sim.ok()) simulated_s = sim.step_s;
  }

  std::unique_lock<std::mutex> lock(mutex_);
  job.best_simulated_s = simulated_s;
  job.elapsed_s = elapsed_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  job.updates = r.updates;
  job.samples = r.samples;
  job.remote_evaluations += r.remote_evaluations;
  if (r.best_step_s > 0 && std::isfinite(r.best_step_s)) {
    job.best_step_s = r.best_step_s;
    job.best_measured = r.best_measured;
    // Never worse than what it saw: a baseline that beat the policy is the answer, under its own name.
    job.best_method =
        r.best_found_by == "policy" ? std::string("learned:") + policy_type_name(c.policy.type) : r.best_found_by;
    job.best_placement = r.best_placement;
  }
  for (const auto& b : r.baselines)
    if (b.ok &&
        std::none_of(job.baselines.begin(), job.baselines.end(), [&](const auto& x) { return x.first == b.method; }))
      job.baselines.emplace_back(b.method, b.step_s);
  if (job.save_as.empty() || job.cancel || !save_policy) return;
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
