// Internals of the trainer shared with learned.cc (checkpoints) and the
// training log (CSV, SVG plot, progress line). Private to agent/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placer/agent/train.h"

namespace placer {

// ------------------------------------------------------------------ log
struct LogRow {
  int64_t update = 0;
  int64_t samples = 0;
  double elapsed_s = 0.0;
  double reward_mean = 0.0;
  double step_mean_s = 0.0;
  double best_step_s = 0.0;
  double entropy = 0.0;
  double loss = 0.0;
  double lr = 0.0;
  double noise = 0.0;
  double samples_per_s = 0.0;
  int64_t cache_hits = 0;
  int32_t task = 0;
};

extern const char* const kCsvHeader;
std::string csv_row(const LogRow& row);
// Rows of a train.csv with update <= max_update (malformed lines are an InputError naming the file and line).
std::vector<LogRow> read_csv(const std::string& path, int64_t max_update);
// Reward curve and best step time against samples, one SVG with two panels.
std::string reward_svg(const std::vector<LogRow>& rows, const std::string& title, double lower_bound_s,
                       double reference_s, const std::string& reference_name);
// One line: "update 12/100 | 16.3 samples/s | step 1.234 s | best 1.100 s | ETA 1m23s".
std::string progress_line(const LogRow& row, int64_t total_updates, double eta_s);

// ------------------------------------------------------------ checkpoint
inline constexpr const char* kCheckpointFile = "checkpoint.pt";
inline constexpr const char* kCheckpointFormat = "placer-learned-checkpoint-v1";
// The most devices the checkpoint's policy trained on (device index embeddings beyond are untrained);
// absent in checkpoints made before it was kept (their config's clusters say, where they resolve).
inline constexpr const char* kTrainedDevicesKey = "trained_devices";

// The config stored in a checkpoint. Throws InputError naming the file.
TrainConfig read_checkpoint_config(const std::string& path);

}  // namespace placer
