// Policies kept by learned jobs (save_as): state_dir/policies/NAME/, found at
// start and replaced without a moment where neither the old nor the new exists.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/service/metrics.h"
#include "placer/service/service.h"

namespace placer::service {

// Policies kept by earlier learned jobs (save_as) in state_dir/policies/NAME/.
void PlacementService::load_saved_policies() {
  std::error_code ec;
  if (!std::filesystem::is_directory(saved_dir_, ec)) return;
  std::vector<PolicyEntry> found;
  // What a save cut off left (save_policy): a staged copy is dropped; a policy moved aside to be replaced
  // comes back where its replacement never arrived, else it is dropped.
  std::vector<std::filesystem::path> leftovers;
  for (const auto& entry : std::filesystem::directory_iterator(saved_dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 1 && name.front() == '.' &&
        (name.find(".saving-") != std::string::npos || name.find(".replaced-") != std::string::npos))
      leftovers.push_back(entry.path());
  }
  for (const auto& path : leftovers) {
    const std::string name = path.filename().string();
    const size_t cut = name.find(".replaced-");
    const std::filesystem::path original = path.parent_path() / name.substr(1, cut == std::string::npos ? 0 : cut - 1);
    if (cut != std::string::npos && !std::filesystem::exists(original, ec))
      std::filesystem::rename(path, original, ec);
    else
      placer::remove_tree(path);
  }
  for (const auto& entry : std::filesystem::directory_iterator(saved_dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || name.empty() || name.front() == '.' ||
        !std::filesystem::exists(entry.path() / "checkpoint.pt", ec))
      continue;
    if (std::any_of(config_.policies.begin(), config_.policies.end(),
                    [&](const PolicyEntry& p) { return p.name == name; }))
      continue;  // the config's policy of that name wins
    PolicyEntry e;
    e.name = name;
    e.checkpoint = entry.path().string();
    try {
      e.description = read_file((entry.path() / "description.txt").string());
    } catch (const std::exception&) {}
    found.push_back(e);
  }
  std::sort(found.begin(), found.end(), [](const PolicyEntry& a, const PolicyEntry& b) { return a.name < b.name; });
  policies_.insert(policies_.end(), found.begin(), found.end());
}

// Copies a finished run's policy files to saved_dir_/NAME (replacing an
// earlier saved policy of that name) and registers it.
void PlacementService::save_policy(const std::string& name, const std::string& run_dir,
                                   const std::string& description) {
  namespace fs = std::filesystem;
  fs::path target = fs::path(saved_dir_) / name;
  static std::atomic<uint64_t> saves{0};
  fs::path staging =
      fs::path(saved_dir_) / ("." + name + ".saving-" + std::to_string(::getpid()) + "-" + std::to_string(saves++));
  placer::remove_tree(staging);
  fs::create_directories(staging);
  // Each file (and the staging folder's entry for it) on the disk before the rename: a crash after it left the
  // policy's files empty.
  // policy_best_placement.json too: without it the saved policy took the run's best (a baseline's, say) for its own.
  for (const char* file : {"checkpoint.pt", "config.json", "best_placement.json", "policy_best_placement.json",
                           "warm_start_placement.json", "summary.json", "train.csv", "reward.svg"}) {
    std::error_code ec;
    if (fs::exists(fs::path(run_dir) / file, ec))
      write_file_durable((staging / file).string(), read_file((fs::path(run_dir) / file).string()));
  }
  if (!fs::exists(staging / "checkpoint.pt")) throw InputError("the run left no checkpoint.pt");
  write_file_durable((staging / "description.txt").string(), description);
  std::lock_guard<std::mutex> lock(policies_mutex_);
  // The policy it replaces is moved aside, not deleted, until the new one is in place: a crash between a
  // delete and the rename lost both (load_saved_policies puts a moved-aside one back).
  const fs::path aside = fs::path(saved_dir_) / ("." + name + ".replaced-" + std::to_string(::getpid()) + "-" +
                                                 std::to_string(saves++));
  std::error_code ec;
  if (fs::exists(target, ec)) fs::rename(target, aside);
  fs::rename(staging, target);
  placer::sync_directory(saved_dir_);  // the new one in place on the disk before the old one goes
  placer::remove_tree(aside);
  auto it = std::find_if(policies_.begin(), policies_.end(), [&](const PolicyEntry& p) { return p.name == name; });
  if (it == policies_.end()) it = policies_.insert(policies_.end(), PolicyEntry{});
  it->name = name;
  it->checkpoint = target.string();
  it->description = description;
  loaded_.erase(name);
  if (metrics_) metrics_->set_policies(static_cast<int64_t>(policies_.size()));
}

}  // namespace placer::service
