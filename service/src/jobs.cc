#include "jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include <unistd.h>

#include "job_record.h"
#include "json_out.h"
#include "objective.h"
#include "placer/agent/placer.h"
#include "placer/agent/search.h"
#include "placer/env/environment.h"
#include "placer/env/remote.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

std::string new_job_id() {
  static std::mutex m;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(m);
  char buf[24];
  std::snprintf(buf, sizeof buf, "j-%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

constexpr double kRoundSeconds = 0.5;  // cancellation answers within about one placer run
constexpr int64_t kRoundSamples = 200;

}  // namespace

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

bool valid_job_id(const std::string& id) {
  if (id.size() != 18 || id.rfind("j-", 0) != 0) return false;
  return std::all_of(id.begin() + 2, id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool finished(JobState s) { return s == JobState::Done || s == JobState::Failed || s == JobState::Cancelled; }

const char* job_state_name(JobState state) {
  switch (state) {
    case JobState::Queued: return "queued";
    case JobState::Running: return "running";
    case JobState::Done: return "done";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
  }
  return "unknown";
}

JobManager::JobManager(const ServiceConfig& config, ServiceMetrics* metrics) : config_(config), metrics_(metrics) {
  if (config_.state_dir.empty()) {
    // Learned jobs' folders live only as long as this process.
    temp_dir_ = (std::filesystem::temp_directory_path() /
                 ("placer-jobs-" + std::to_string(::getpid()) + "-" + new_job_id().substr(2, 8)))
                    .string();
  } else {
    check_state_dir(config_.state_dir);
    load_persisted();
  }
}

void JobManager::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runners_.empty() || stopping_) return;
  for (int i = 0; i < config_.job_runners; ++i) runners_.emplace_back([this] { runner(); });
}

JobManager::~JobManager() {
  shutdown();
  if (!temp_dir_.empty()) {
    std::error_code ec;
    placer::remove_tree(temp_dir_);
  }
}

void JobManager::begin_shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (auto& [id, job] : jobs_) job->cancel = true;
  }
  if (remote) remote->shut_down();  // a batch waiting for a rollout worker ends now
  wake_.notify_all();
  {
    std::lock_guard<std::mutex> dl(devices_mutex_);
    devices_closed_ = true;
  }
  devices_free_.notify_all();
}

void JobManager::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && runners_.empty() && queue_.empty()) return;
  }
  begin_shutdown();
  for (auto& t : runners_) t.join();
  runners_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& job : queue_) {
    if (job->learned && !config_.state_dir.empty()) continue;  // stays queued on disk: the next server runs it
    settle_failed(*job, "server shut down before the job started; submit it again");
  }
  queue_.clear();
}

std::string JobManager::submit(const Request& request, std::shared_ptr<const PreparedRequest> prepared) {
  auto job = std::make_shared<Job>();
  job->id = new_job_id();
  job->request = request;
  job->prepared = std::move(prepared);
  job->created_unix = unix_now();
  job->graph_name = job->prepared->graph.name;
  job->cluster_name = job->prepared->cluster.name;
  job->lower_bound_s = job->prepared->lower_bound_s;
  for (const auto& b : job->prepared->baselines)
    if (b.error.empty() && b.result.ok()) job->baselines.emplace_back(b.method, b.result.step_s);
  if (job->prepared->best >= 0) {
    job->start_method = job->prepared->baselines[job->prepared->best].method;
    job->start_step_s = job->prepared->baselines[job->prepared->best].result.step_s;
  }
  auto admit = [&](bool insert) {  // with mutex_ held
    if (stopping_) throw RequestError(codes::kShuttingDown, "", "the server is shutting down");
    expire();
    if (static_cast<int>(queue_.size()) >= config_.job_queue)
      throw RequestError(codes::kBusy, "",
                         std::to_string(queue_.size()) + " optimize jobs are already waiting; try again later");
    if (static_cast<int>(jobs_.size()) >= config_.max_jobs)
      throw RequestError(codes::kBusy, "",
                         "the server holds " + std::to_string(jobs_.size()) +
                             " job records; fetch results (or wait for them to expire) first");
    if (!insert) return;
    jobs_[job->id] = job;
    queue_.push_back(job);
    persist(*job);
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    admit(false);  // refuse before a learned job writes its folder
  }
  try {
    if (request.is_learned()) prepare_learned(*job);  // throws RequestError naming the field
    std::lock_guard<std::mutex> lock(mutex_);
    admit(true);
  } catch (...) {
    std::error_code ec;
    if (!job->dir.empty()) placer::remove_tree(job->dir);
    throw;
  }
  wake_.notify_one();
  return job->id;
}

namespace {

// A job that ran to its end, failed or was cancelled: its state and what the reply says of it.
void settle_ended(Job& job, const std::string& error) {
  // A best without its placement (a resumed job's policy time, its trainer never reached: cancelled while
  // it waited for the devices, say) becomes the last one that had it.
  job.restore_last_placed();
  if (!error.empty()) {
    job.state = JobState::Failed;
    job.error = (job.learned ? "training failed: " : "the search failed: ") + error;
  } else if (job.cancel && !job.cancelled_by_user && !job.trainer_finished) {
    job.state = JobState::Failed;
    job.error = "server shut down while the job ran; its best placement so far is kept";
  } else if (job.cancel && job.cancelled_by_user) {
    job.state = JobState::Cancelled;
    job.error = "cancelled by request; its best placement so far is kept";
  } else {
    job.state = JobState::Done;
  }
  // A measuring job stopped before its side-by-side run: its best is one measurement of many taken in
  // training (a low one, as the lowest of noisy figures is), not a fresh interleaved one. Said with it.
  if (error.empty() && job.cancel && job.learned && job.best_measured && job.table.empty() && job.best_step_s > 0)
    job.error += " (its step is the one measurement of it in training, not re-measured side by side)";
}

}  // namespace

void JobManager::runner() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      if (job->cancel) continue;  // cancelled while queued (already recorded)
      job->state = JobState::Running;
      if (job->started_unix == 0) job->started_unix = unix_now();
      export_series(*job);
      persist(*job);
      // The gauge under the lock: set outside it, two runners' writes landed in either order.
      running_++;
      if (metrics_) metrics_->set_running_jobs(running_);
    }
    std::string error;
    try {
      if (job->learned)
        run_learned(*job);
      else
        run(*job);
    } catch (const EvaluationCancelled& e) {
      if (!job->cancel) error = e.what();  // else stopped as the cancel says
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    std::lock_guard<std::mutex> lock(mutex_);
    running_--;
    if (metrics_) metrics_->set_running_jobs(running_);
    job->finished_unix = unix_now();
    job->waiting.clear();
    if (stopping_ && job->learned && !job->cancelled_by_user && !job->trainer_finished && !config_.state_dir.empty()) {
      // Checkpointed: the next server resumes it (an error now is most likely the shutdown's). Counted
      // here: it is saved as queued, which settle_restarted does not count (a crash leaves it running).
      job->state = JobState::Queued;
      job->restarts += 1;
      persist(*job);
      continue;
    }
    settle_ended(*job, error);
    if (metrics_) metrics_->job_finished(job_state_name(job->state));
    limit_series();
    persist(*job);
    release_inputs(*job);
  }
}

// A finished job's record keeps what status and result report; the graph and what was made of it go (each
// finished record pinned the client's graph, up to 16 MiB of text, its parsed document and the prepared
// problem, for up to keep_results_s, max_jobs of them).
void JobManager::release_inputs(Job& job) {
  job.prepared.reset();
  job.train.reset();
  job.request.graph = GraphSpec{};
  job.request.placement.clear();
  job.request.learned = JsonNode{};
  job.request.document.reset();
}

void JobManager::run(Job& job) {
  const PreparedRequest& p = *job.prepared;
  Environment env(p.prepared, simulated_env(job.request));
  std::optional<SearchCandidate> start;
  if (p.best >= 0) {
    const auto& b = p.baselines[p.best];
    start = SearchCandidate{b.method, b.placement, b.result};
    std::lock_guard<std::mutex> lock(mutex_);
    if (b.result.ok() && (job.best_step_s == 0 || b.result.step_s < job.best_step_s)) {
      job.best_step_s = b.result.step_s;
      job.best_method = b.method;
      job.best_placement = to_named(p.graph, p.cluster, b.placement);
    }
    job.start_method = b.method;
    job.start_step_s = b.result.step_s;
  }
  PlaceContext ctx;
  ctx.graph = &p.graph;
  ctx.cluster = &p.cluster;
  ctx.env = &env;
  ctx.seed = job.request.seed;
  SearchOptions so;
  so.methods = job.request.methods.empty() ? config_.optimize_methods : job.request.methods;
  so.budget.samples = job.request.budget.samples;
  so.budget.seconds = job.request.budget.seconds;
  so.budget.cancel = &job.cancel;
  so.run_samples = kRoundSamples;
  so.run_seconds = kRoundSeconds;
  double last_persist = 0;
  const SearchResult res = search(ctx, so, start ? &*start : nullptr, [&](const SearchProgress& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (s.improved) {
      job.best_step_s = s.result.step_s;
      job.best_method = s.method;
      job.best_placement = to_named(p.graph, p.cluster, s.placement);
    }
    job.samples = s.samples;
    job.rounds = s.rounds;
    job.elapsed_s = s.elapsed_s;
    if (job.elapsed_s - last_persist > 1.0) {
      persist(job);
      last_persist = job.elapsed_s;
    }
  });
  std::lock_guard<std::mutex> lock(mutex_);
  job.elapsed_s = res.elapsed_s;
}

std::shared_ptr<Job> JobManager::find(const std::string& id) {
  auto it = valid_job_id(id) ? jobs_.find(id) : jobs_.end();
  if (it == jobs_.end())
    throw RequestError(codes::kNotFound, "job_id",
                       "no job '" + id + "' (finished results are dropped once fetched or after " +
                           json_number(config_.job_keep_s) + " s)");
  return it->second;
}

std::string JobManager::describe(const Job& job, bool with_placement) const {
  JsonOut o;
  o.begin()
      .field("job_id", job.id)
      .field("state", job_state_name(job.state))
      .field("kind", job.learned ? "learned" : "search");
  o.field("graph", job.graph_name).field("cluster", job.cluster_name);
  write_objective(o, job.request.objective, job.request.pipeline);
  if (job.learned) o.field("policy_type", job.policy_type).field("reward_mode", job.reward_mode);
  if (!job.waiting.empty()) o.field("waiting", job.waiting);
  if (job.devices_from_unix > 0)
    o.begin_object("devices_held")
        .field("from_unix", job.devices_from_unix)
        .field("until_unix", job.devices_until_unix)
        .end();
  o.begin_object("progress")
      .field("samples", job.samples)
      .field("budget_samples", job.request.budget.samples)
      .field("elapsed_s", job.elapsed_s)
      .field("budget_seconds", job.request.budget.seconds);
  if (job.learned) {
    o.field("updates", job.updates).field("restarts", job.restarts).field("remote_evaluations", job.remote_evaluations);
    if (job.resumed_at_update >= 0) o.field("resumed_at_update", job.resumed_at_update);
  } else {
    o.field("rounds", job.rounds);
  }
  o.end();
  if (job.learned) {
    // The last updates' reward curve, oldest first.
    o.begin_array("curve");
    for (const auto& p : job.curve)
      o.begin()
          .field("update", p.update)
          .field("samples", p.samples)
          .field("reward_mean", p.reward_mean)
          .field("reward_best", p.reward_best)
          .field("best_step_s", p.best_step_s)
          .field("entropy", p.entropy)
          .field("elapsed_s", p.elapsed_s)
          .end();
    o.end_array();
  }
  o.key("best");
  if (job.best_step_s > 0) {
    o.begin().field("method", job.best_method).field("step_s", job.best_step_s);
    if (job.learned) o.field("found_by", job.best_found_by).field("measured", job.best_measured);
    if (job.best_simulated_s > 0) o.field("simulated_step_s", job.best_simulated_s);
    if (job.learned && job.reward_mode != "simulated") {  // measured or hybrid, also while it runs
      // Like with like: the start's own measured step (its row of the final table), not
      // its simulated one; the lower bound is simulated, so no gap to it.
      for (const TableRow& r : job.table_rows)
        if (r.role == "seen" && r.method == kFastPath + job.start_method)
          o.field("speedup_vs_start", r.step_s / job.best_step_s);
    } else {
      if (job.lower_bound_s > 0) o.field("gap_to_lower_bound", job.best_step_s / job.lower_bound_s - 1.0);
      if (job.start_step_s > 0) o.field("speedup_vs_start", job.start_step_s / job.best_step_s);
    }
    o.end();
  } else {
    o.null();
  }
  if (job.learned) {  // the policy's own best, never credited with a baseline's or the fast path's find
    o.key("policy_best");
    if (job.policy_best_step_s > 0)
      o.begin().field("method", "learned:" + job.policy_type).field("step_s", job.policy_best_step_s).end();
    else
      o.null();
    write_final_table(o, job);
  }
  o.field("lower_bound_s", job.lower_bound_s);
  o.begin_object("start").field("method", job.start_method).field("step_s", job.start_step_s).end();
  write_baselines(o, job);
  if (!job.save_as.empty()) o.field("save_as", job.save_as).field("saved", job.saved_as == job.save_as);
  if (!job.error.empty()) o.field("error", job.error);
  if (with_placement && job.best_step_s > 0) o.placement("placement", job.best_placement);
  o.end();
  return o.text();
}

std::string JobManager::status_json(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  expire();
  return describe(*find(id), false);
}

std::string JobManager::result_json(const std::string& id, bool include_placement) {
  std::lock_guard<std::mutex> lock(mutex_);
  expire();
  auto job = find(id);
  if (!finished(job->state))
    throw RequestError(codes::kBadRequest, "job_id",
                       "job '" + id + "' is " + job_state_name(job->state) +
                           "; ask for `status`, or `cancel` it to get the best so far");
  std::string text = describe(*job, include_placement);
  forget(id);
  return text;
}

std::string JobManager::cancel(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto job = find(id);
  const bool requested = !finished(job->state);  // an ended job has nothing left to stop
  if (requested) {
    job->cancel = true;
    job->cancelled_by_user = true;
    if (job->state == JobState::Queued) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
      job->state = JobState::Cancelled;
      job->error = "cancelled before it started";
      job->restore_last_placed();  // a resumed job's best may be a time whose placement the trainer held
      job->finished_unix = unix_now();
      if (metrics_) metrics_->job_finished("cancelled");
      persist(*job);
      release_inputs(*job);
    } else {
      persist(*job);  // a restart after a crash must not run a job the user cancelled again
    }
  }
  JsonOut o;
  o.begin().field("job_id", id).field("state", job_state_name(job->state)).field("cancel_requested", requested).end();
  return o.text();
}

int64_t JobManager::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

int64_t JobManager::stored() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(jobs_.size());
}

void JobManager::expire() {
  double now = unix_now();
  std::vector<std::string> old;
  for (const auto& [id, job] : jobs_)
    if (finished(job->state) && now - job->finished_unix > config_.job_keep_s) old.push_back(id);
  for (const auto& id : old) forget(id);
}

void JobManager::forget(const std::string& id) {
  auto it = jobs_.find(id);
  if (it != jobs_.end() && it->second->learned && !it->second->dir.empty()) {
    std::error_code ec;
    placer::remove_tree(it->second->dir);  // a policy kept with save_as has its own copy
  }
  jobs_.erase(id);
  unwritten_.erase(id);
  if (!config_.state_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove(std::filesystem::path(config_.state_dir) / "jobs" / (id + ".json"), ec);
  }
}

}  // namespace placer::service
