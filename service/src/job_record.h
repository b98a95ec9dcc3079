// The job records JobManager::persist writes to state_dir/jobs (job_persist.cc), and reading them back (a
// restarted server's jobs).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "jobs.h"
#include "json_out.h"

namespace placer::service {

// The record at `path` as a Job with the given id (a learned job's folder under jobs_dir); a missing or mistyped
// field reads as "", 0 or false. nullptr, with *why saying why, when the file cannot be read, is not a JSON
// object, is not of format 1 or has a state this server does not know (it is skipped, and left on disk).
// *state_text gets the record's state as written.
// The record's parts that replies show too: {"baselines": [...]} and a finished learned job's
// {"final_table": {...}} (nothing before the trainer's result) (job_persist.cc).
void write_baselines(JsonOut& o, const Job& job);
void write_final_table(JsonOut& o, const Job& job);

// state_dir/jobs made and written into at start: a server whose records would all be lost does not start
// (throws InputError naming state_dir).
void check_state_dir(const std::string& state_dir);

std::shared_ptr<Job> read_job_record(const std::filesystem::path& path, const std::string& id,
                                     const std::string& jobs_dir, std::string* state_text, std::string* why);

}  // namespace placer::service
