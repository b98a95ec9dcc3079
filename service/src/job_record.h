// Reading back the job records JobManager::persist writes to state_dir/jobs (a restarted server's jobs).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "jobs.h"

namespace placer::service {

// The record at `path` as a Job with the given id (a learned job's folder under jobs_dir); a missing or mistyped
// field reads as "", 0 or false. nullptr, with *why saying why, when the file cannot be read, is not a JSON
// object, is not of format 1 or has a state this server does not know (it is skipped, and left on disk).
// *state_text gets the record's state as written.
std::shared_ptr<Job> read_job_record(const std::filesystem::path& path, const std::string& id,
                                     const std::string& jobs_dir, std::string* state_text, std::string* why);

}  // namespace placer::service
