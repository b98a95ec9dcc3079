// The simulator's error against real measurements: diverse placements of one
// graph, measured and simulated, compared by rank correlation and by MAPE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"
#include "placer/graphs/stats.h"

namespace placer {

// Spearman's rho (Pearson on tie-averaged ranks) and Kendall's tau-b.
// Need two samples of the same size >= 2; undefined (NaN) when either is
// constant (all its values tied: there is no ranking to correlate).
double spearman(const std::vector<double>& a, const std::vector<double>& b);
double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b);
// A rank correlation as printed: `printf_format` of it, or "undefined (all values tied)" where it is NaN.
std::string rank_correlation_text(double rho, const char* printf_format = "%.3g");
// Mean of |predicted - actual| / actual over actual > 0.
double mean_absolute_percentage_error(const std::vector<double>& actual, const std::vector<double>& predicted);

// Up to `count` distinct placements that keep co-location groups together:
// every op on one device, round robin, contiguous splits at several cut
// points, random, and perturbations of those. Each is named by its kind.
// `device_class[d]`: devices of one class are interchangeable (same kind, threads,
// memory and roofline); every op on one device is then proposed for at most two
// devices of each class (the second measures the same work again), so that
// cpu:8+cuda:0 does not spend 8 of its placements on equal CPU singles.
std::vector<std::pair<std::string, Placement>> diverse_placements(const Graph& graph, int32_t devices, int count,
                                                                  uint64_t seed,
                                                                  const std::vector<int32_t>& device_class = {});
std::vector<std::pair<std::string, Placement>> diverse_placements(const Graph& graph, const Cluster& cluster, int count,
                                                                  uint64_t seed);

// Indices of at most `count` of `simulated` (step times) whose values are at
// least `gap` (relative) apart: greedily from the fastest up, then thinned
// evenly (the fastest and the slowest kept) when more qualify. Placements that
// the simulator expects to differ by more than the measurement's noise can be
// ranked by a measurement at all; the choice never looks at a measured time.
std::vector<size_t> spread_by_simulated(const std::vector<double>& simulated, int count, double gap);

// A round measured again because its probe read a spell (rounds_in_a_spell).
struct FidelityRetake {
  int round = 0;                // 0-based, in the report's order
  double probe_s = 0.0;         // the round's reading that called for the retake
  double quiet_s = 0.0;         // the quietest round's reading then
  double retake_probe_s = 0.0;  // the retake's reading (0: not read)
  bool kept = false;            // the retake replaced the round: its reading was lower
};

struct FidelityPoint {
  std::string kind;         // "single", "round_robin", "split", "random", "perturbed"
  double measured_s = 0.0;  // measured step time: the median of every round's samples
  double measured_iqr_s = 0.0;
  double simulated_s = 0.0;
  // The same simulator without the copy cost fitted on the mixed step (0: no
  // such cost was fitted): the fit's effect on the same measurements.
  double simulated_unfitted_s = 0.0;
  // The same simulator with that cost fitted per copy instead of per byte
  // (CostModel::GroupCopyPricing::PerCopy; 0: not computed).
  double simulated_per_copy_s = 0.0;
  // The same simulator without the profile's CPU device steps: the ops as timed,
  // every CPU device as fast as the one they were timed on (0: the steps were not
  // measured or not applied, Profile::cpu_steps): their effect on the same measurements.
  double simulated_equal_cpus_s = 0.0;
  // The simulator calibrated the other way (0: not computed, one round): on each
  // op's fastest round where simulated_s is calibrated on the rounds' mean, and
  // the reverse (FidelityReport::calibration and other_calibration(); in the
  // JSON, "simulated_fastest_round_s" or "simulated_round_mean_s").
  double simulated_other_calibration_s = 0.0;
  int64_t transfer_bytes = 0;
  std::vector<double> rounds_s;            // each round's median step, in order
  double ci_low_s = 0.0, ci_high_s = 0.0;  // the median's interval, asked for at 95%
  int64_t steps = 0;                       // measured steps, all rounds
  // The coverage the interval reaches (StepResult::ci_level: below 95% with few steps). Reports written before
  // it was recorded read as 95%, the level they were printed at.
  double ci_level = kIntervalConfidence;
};

struct FidelityReport {
  std::string graph;
  int64_t ops = 0;
  std::string devices;
  std::string command;
  std::string host;
  std::string selection;  // how the placements were chosen (empty: the first --placements diverse ones)
  // Set under the pipeline objective: every placement was judged as one
  // mini-batch of pipeline->microbatches micro-batches under its schedule
  // (measured and simulated on the unrolled graph), every time is one
  // mini-batch's. Unset: one training step (the JSON then has no such fields).
  std::optional<PipelineSpec> pipeline;
  double calibrated_fraction = 0.0;
  double per_op_overhead_s = 0.0;
  // CPU-to-CPU copies: seconds per byte beyond the link fit, fitted on the
  // profile's mixed step (0: not fitted; CostModel::group_copy_s_per_byte).
  double copy_s_per_byte = 0.0;
  // The same fitted per copy (simulated_per_copy_s's simulator; 0: not fitted).
  double copy_s_per_copy = 0.0;
  // CPU<->GPU copies: seconds per copy beyond the link fit, fitted on the
  // mixed step over the CPU devices and a GPU (0: not fitted; CostModel::cross_copy_s).
  double cross_copy_s = 0.0;
  // Reports written before that (replot only): seconds per byte on those copies.
  double cross_copy_s_per_byte = 0.0;
  // Each CPU device's step of the graph alone, as the profile (the rounds'
  // mean) measured it; the simulator scales each device's ops by its step over
  // the first's. Empty: not measured (one CPU device, older reports).
  std::vector<DeviceStep> cpu_steps;
  // How the rounds' profiles calibrate simulated_s: "rounds_mean" (each op's
  // mean over the rounds, what one `placer profile` estimates; the default since
  // the twentieth session) or "fastest_round" (each op's fastest round: reports
  // made before, whose JSON names none).
  std::string calibration = "rounds_mean";
  // The cross-core probe (StepResult::core_rtt_s), one entry per round where it was read: while
  // its profile's mixed step ran (the copy cost is fitted there), and the
  // median while its placements were measured. Empty: not probed (one CPU
  // device, a GPU split, older reports). Copy-heavy placements measure slower
  // while it is high (bench/results/copy_probe_cpu2.md).
  std::vector<double> core_rtt_profiled_s, core_rtt_measured_s;
  // Rounds measured again because their probe read a spell, in order; the
  // figures above are of the rounds kept. Empty: none (or older reports).
  std::vector<FidelityRetake> retakes;
  double spell_ratio = kSpellRatio;  // the threshold they were taken at (in the JSON where there are retakes)
  const char* other_calibration() const { return calibration == "rounds_mean" ? "fastest_round" : "rounds_mean"; }
  std::vector<FidelityPoint> points;  // ok measurements only
  int failed = 0;                     // placements whose measurement failed
  // NaN (undefined; null in the JSON) when every measured or every simulated time is alike.
  double spearman = 0.0;
  double kendall = 0.0;
  double mape = 0.0;
  // Spearman and MAPE of simulated_unfitted_s (NaN when not computed; the Spearman alone NaN: all tied).
  double spearman_unfitted = 0.0;
  double mape_unfitted = 0.0;
  // Spearman and MAPE of simulated_per_copy_s (NaN when not computed).
  double spearman_per_copy = 0.0;
  double mape_per_copy = 0.0;
  // Spearman and MAPE of simulated_equal_cpus_s (NaN when not computed).
  double spearman_equal_cpus = 0.0;
  double mape_equal_cpus = 0.0;
  // Spearman and MAPE of simulated_other_calibration_s (NaN when not computed).
  double spearman_other_calibration = 0.0;
  double mape_other_calibration = 0.0;
  // The measurement against itself: Spearman between the first two rounds'
  // times (the most any simulator's rank correlation can be expected to
  // reach on this machine); NaN with fewer than two rounds (or all tied).
  double retest_spearman = 0.0;
  // With four rounds or more: Spearman between the two halves of the rounds
  // (each point's mean round median over the first half against the same over
  // the rest), what a measurement of half the rounds agrees with another such
  // measurement; the pooled figure over all rounds is at least as reliable.
  // NaN with fewer than four rounds (or all tied). Recomputed from rounds_s, never read.
  double split_half_spearman = 0.0;
  // The fewest rounds any point has (0: no points): the measurement is set against itself from 2
  // (retest_spearman) and by halves from 4 (split_half_spearman), either of which may still be undefined.
  size_t min_rounds() const;

  void compute_statistics();
  // Reads what to_json() wrote (statistics are recomputed); throws InputError
  // naming the field for anything else.
  static FidelityReport from_json(const std::string& text);
  std::string to_json() const;
  std::string to_markdown() const;
  std::string to_svg() const;  // scatter plot, simulated vs measured, log axes
};

}  // namespace placer
