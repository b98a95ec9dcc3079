// Job records on disk (state_dir/jobs/<id>.json): written as a job changes, read back at start, where an
// unfinished job resumes from its checkpoint or is settled as failed. The record's writers serve replies too.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "job_record.h"
#include "json_out.h"
#include "objective.h"
#include "placer/graphs/files.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

// A learned job's last best with a placement, while the policy's (whose placement the trainer holds) is
// the best: in the record, so that a restarted server's answer for the job is not a bare time.
void write_last_placed(JsonOut& o, const Job& job) {
  if (!job.last_placed) return;
  const Job::Placed& p = *job.last_placed;
  o.begin_object("last_placed").field("step_s", p.step_s).field("method", p.method).field("found_by", p.found_by);
  o.field("measured", p.measured).placement("placement", p.placement).end();
}

}  // namespace

// {"baselines": [{"method", "step_s"}...]}: in replies and in the record on disk.
void write_baselines(JsonOut& o, const Job& job) {
  o.begin_array("baselines");
  for (const auto& [method, step] : job.baselines) o.begin().field("method", method).field("step_s", step).end();
  o.end_array();
}

// A finished learned job's {"final_table": {"rows_made", "rows": [...]}}: in
// replies and in the record on disk (nothing before the trainer's result).
void write_final_table(JsonOut& o, const Job& job) {
  if (job.table.empty()) return;
  const bool measured = job.table != "simulated";  // a simulated row has no interval
  o.begin_object("final_table").field("rows_made", job.table).begin_array("rows");
  for (const TableRow& r : job.table_rows) {
    o.begin().field("method", r.method).field("role", r.role).field("step_s", r.step_s);
    if (measured && r.ci_high_s > 0) o.field("ci_low_s", r.ci_low_s).field("ci_high_s", r.ci_high_s);
    if (r.p_vs_policy >= 0) o.field("p_vs_policy", r.p_vs_policy).field("verdict", r.verdict);
    if (r.paired) o.paired("paired_vs_policy", *r.paired);
    o.end();
  }
  o.end_array();
  if (measured && job.table_core_rtt.read())
    o.begin_array("core_rtt_s")
        .num(job.table_core_rtt.median_s)
        .num(job.table_core_rtt.low_s)
        .num(job.table_core_rtt.high_s)
        .end_array();
  o.end();
}

// state_dir/jobs made and written into at start: a server whose records would all be lost does not start.
void check_state_dir(const std::string& state_dir) {
  const std::filesystem::path jobs = std::filesystem::path(state_dir) / "jobs";
  try {
    std::error_code ec;
    std::filesystem::create_directories(jobs, ec);
    if (ec) throw InputError("cannot make '" + jobs.string() + "': " + ec.message());
    const std::string probe = (jobs / (".write-test-" + std::to_string(::getpid()))).string();
    write_file_durable(probe, "placer");
    std::filesystem::remove(probe, ec);
  } catch (const InputError& e) {
    throw InputError("state_dir: job records cannot be kept under '" + state_dir + "': " + e.what());
  }
}

// A job record on disk: enough to answer status/result after a restart.
void JobManager::persist(const Job& job) {
  if (config_.state_dir.empty()) return;
  JsonOut o;
  o.begin().field("format", 1).field("job_id", job.id).field("state", job_state_name(job.state));
  o.field("graph", job.graph_name).field("cluster", job.cluster_name);
  write_objective(o, job.request.objective, job.request.pipeline);
  o.field("created_unix", job.created_unix)
      .field("started_unix", job.started_unix)
      .field("finished_unix", job.finished_unix);
  o.field("samples", job.samples).field("budget_samples", job.request.budget.samples).field("elapsed_s", job.elapsed_s);
  o.field("budget_seconds", job.request.budget.seconds).field("rounds", job.rounds);
  o.field("best_method", job.best_method)
      .field("best_step_s", job.best_step_s)
      .field("lower_bound_s", job.lower_bound_s);
  o.field("start_method", job.start_method).field("start_step_s", job.start_step_s).field("error", job.error);
  o.field("cancel_requested", job.cancelled_by_user);
  write_baselines(o, job);
  if (job.learned) {
    o.field("learned", true).field("train_config", job.train_json).field("policy_type", job.policy_type);
    o.field("reward_mode", job.reward_mode).field("save_as", job.save_as).field("saved_as", job.saved_as);
    o.field("updates", job.updates).field("budget_updates", job.budget_updates).field("restarts", job.restarts);
    o.field("best_measured", job.best_measured).field("best_simulated_s", job.best_simulated_s);
    o.field("best_found_by", job.best_found_by).field("policy_best_step_s", job.policy_best_step_s);
    write_last_placed(o, job);
    write_final_table(o, job);
  }
  o.placement("best_placement", job.best_placement);
  o.end();
  std::filesystem::path dir = std::filesystem::path(config_.state_dir) / "jobs";
  try {
    std::filesystem::create_directories(dir);
    write_file_durable((dir / (job.id + ".json")).string(), o.text());  // read back after a crash
  } catch (const std::exception& e) {
    // The in-memory record stays authoritative; a full disk must not fail the job. Said once per job.
    if (unwritten_.insert(job.id).second)
      std::fprintf(stderr, "placer serve: cannot write the record of job %s under %s: %s (the job goes on; a restart "
                   "would not find it as it is now)\n", job.id.c_str(), dir.string().c_str(), e.what());
  }
}

bool JobManager::settle_restarted(Job& job, const std::string& state_text) {
  if (finished(job.state)) return false;
  if (job.cancelled_by_user) {  // cancelled while it ran; the server stopped before the job did
    job.state = JobState::Cancelled;
    job.error = "cancelled by request (the server restarted before the job stopped); its best placement so far is "
                "kept";
    job.restore_last_placed();
    job.finished_unix = unix_now();
    if (metrics_) metrics_->job_finished("cancelled");
    persist(job);
    return false;
  }
  std::error_code dir_ec;
  if (job.learned && !std::filesystem::is_directory(job.dir, dir_ec)) {
    settle_failed(job, "the server restarted while the job was " + state_text + ", and its folder " + job.dir +
                           " is gone; submit the optimize request again");
    return false;
  }
  if (job.learned && !job.train_json.empty()) {
    // Checkpointed in its folder: it resumes where the last server stopped.
    if (job.state == JobState::Running) job.restarts += 1;
    job.state = JobState::Queued;
    job.cancel = false;
    return true;
  }
  // The process that ran it is gone: report it, keep the best found so far.
  settle_failed(job, "the server restarted while the job was " + state_text +
                         "; its best placement so far is kept; submit the optimize request again to continue");
  return false;
}

// A job that ends without running (a shutdown, a restart): failed, with the last best that had a placement
// (a policy's time whose placement its trainer held is no answer), counted (such jobs were not) and kept.
void JobManager::settle_failed(Job& job, const std::string& error) {
  job.state = JobState::Failed;
  job.error = error;
  job.restore_last_placed();
  job.finished_unix = unix_now();
  if (metrics_) metrics_->job_finished("failed");
  persist(job);
}

void JobManager::load_persisted() {
  std::filesystem::path dir = std::filesystem::path(config_.state_dir) / "jobs";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  std::vector<std::shared_ptr<Job>> resume;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string id = entry.path().stem().string();
    if (entry.path().extension() != ".json" || !valid_job_id(id)) continue;
    std::string state_text, why;
    std::shared_ptr<Job> job = read_job_record(entry.path(), id, jobs_dir(), &state_text, &why);
    if (!job) {  // left on disk (with its folder), not loaded: it may be mended by hand or read by another version
      std::fprintf(stderr, "placer serve: job record %s skipped: %s\n", entry.path().string().c_str(), why.c_str());
      continue;
    }
    if (finished(job->state) && !(job->finished_unix > 0)) job->finished_unix = unix_now();  // kept from now
    if (settle_restarted(*job, state_text)) resume.push_back(job);
    jobs_[id] = job;
  }
  // Folders of learned jobs whose record is gone (a crash between the two deletes of forget()). One whose
  // record is there but could not be read is kept: it holds the job's checkpoint, and the record may be
  // mended by hand (it was deleted with the record's job).
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string id = entry.path().filename().string();
    if (entry.is_directory(ec) && valid_job_id(id) && !jobs_.count(id) &&
        !std::filesystem::exists(dir / (id + ".json"), ec))
      placer::remove_tree(entry.path());
  }
  std::sort(resume.begin(), resume.end(),
            [](const auto& a, const auto& b) { return a->created_unix < b->created_unix; });
  for (auto& job : resume) {
    queue_.push_back(job);
    persist(*job);
  }
}

}  // namespace placer::service
