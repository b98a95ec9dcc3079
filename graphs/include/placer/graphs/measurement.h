// The result of one training step, measured by the runtime or simulated by
// the environment: the same shape either way, so rewards and reports do not
// care where it came from. Execution failures are a status, never an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placer/graphs/stats.h"

namespace placer {

enum class StepStatus : uint8_t { Ok, Oom, Timeout, Error };
const char* step_status_name(StepStatus status);  // "ok", "oom", "timeout", "error"

struct DeviceStats {
  std::string device;
  double busy_s = 0.0;     // time spent running operators in one step
  int64_t peak_bytes = 0;  // peak bytes of live tensors (params, activations, grads)
};

struct StepResult {
  StepStatus status = StepStatus::Ok;
  std::string message;            // for non-ok: what failed
  double step_s = 0.0;            // median step time
  double iqr_s = 0.0;             // spread of the samples (Q3 - Q1)
  std::vector<double> samples_s;  // every measured step
  // How many of samples_s were given beforehand (a placement measured again
  // keeps its samples); the rest are this measurement's rounds, in order.
  int64_t prior_samples = 0;
  // Measured results: the median's confidence interval (graphs/stats.h), the
  // coverage it reaches, and why measuring stopped ("target": the interval
  // was narrow enough, "max_steps", "budget", "steps": a fixed count,
  // "min_time": held past the count until the steps added up to the minimum time).
  // Simulated results: the interval is the step itself and `stop` is empty.
  double ci_low_s = 0.0;
  double ci_high_s = 0.0;
  double ci_level = 0.0;
  std::string stop;
  std::vector<DeviceStats> devices;
  int64_t transfer_bytes = 0;  // bytes moved between devices in one step
  // Measured over two or more pinned CPU devices: a cache line's round trip
  // between the first cores of the first two, probed before each round, one
  // entry per step this measurement took (the last core_rtt_s.size() of
  // samples_s; samples given beforehand have none; 0 where the probe could not
  // be read, cache_line_round_trip_s). On a VM it moves in spells,
  // and copies between those devices cost more then (copy_probe_cpu2.md).
  std::vector<double> core_rtt_s;
  // status == Oom: the device that overflowed and the bytes it would have needed.
  std::string oom_device;
  int64_t oom_needed_bytes = 0;
  int64_t oom_capacity_bytes = 0;

  bool ok() const { return status == StepStatus::Ok; }
  // Recomputes step_s, iqr_s and the interval from samples_s (ok results).
  void summarize(double confidence = kIntervalConfidence);
  std::vector<double> core_rtt_readings() const;  // core_rtt_s without the rounds it could not read (0)
  double core_rtt_median_s() const;               // the median of those readings; 0 when none
};

// Two results of one side-by-side measurement, paired by the rounds both took
// (their samples after the prior ones, as many as the one that stopped first
// has): b against a (PairedTest::ratio > 1: b is slower). None when either
// failed or they share fewer than kMinPairedRounds rounds.
inline constexpr int64_t kMinPairedRounds = 6;
std::optional<PairedTest> paired_by_round(const StepResult& a, const StepResult& b);

// Every result's probe readings pooled (StepResult::core_rtt_readings): placements
// measured side by side share their rounds, so this is the run's reading.
std::vector<double> core_rtt_readings(const std::vector<StepResult>& results);

// Probe readings summed up: their median, lowest and highest (all 0: none read).
struct CoreRttRange {
  double median_s = 0.0, low_s = 0.0, high_s = 0.0;
  bool read() const { return median_s > 0; }
};
CoreRttRange core_rtt_range(const std::vector<double>& readings);

// A reading more than this many times the quietest one of the same run: it was
// taken in one of a shared machine's slow spells while another was not.
// Readings sit at ~80-90 ns on the 2-core VM and at 350-450 ns in a spell, when
// copies between CPU devices slow 1.1-1.2x (bench/results/copy_probe_cpu2.md).
// placer fidelity measures such a round again; the trainer, such a final table.
inline constexpr double kSpellRatio = 2.0;

// The entries of `probe_s` (probe readings, one per round or measurement; 0 or
// less: not read) that exceed `ratio` (>= 1) times the lowest positive reading,
// highest reading first. Empty with fewer than two readings.
std::vector<size_t> rounds_in_a_spell(const std::vector<double>& probe_s, double ratio = kSpellRatio);
// The lowest positive reading of `probe_s` (0: none was read).
double quietest_reading(const std::vector<double>& probe_s);

// One interval on a timeline lane (a device or a transfer channel).
struct TimelineEvent {
  std::string name;  // op name or "a->b tensor"
  std::string lane;  // "cpu:0", "cpu:0->cpu:1"
  double start_s = 0.0;
  double duration_s = 0.0;
  std::string category;  // "forward", "backward", "update", "transfer"
};

// Writes Chrome trace-event JSON (opens in Perfetto / chrome://tracing),
// one lane (tid) per device and per transfer channel. Throws InputError if
// the file cannot be written. With `measured`, the trace's `otherData` holds
// its median step, the 95% interval, the step count and why measuring stopped.
void write_chrome_trace(const std::vector<TimelineEvent>& events, const std::string& path,
                        const StepResult* measured = nullptr);

}  // namespace placer
