// placer fidelity: diverse placements measured for real and simulated; the simulator's measured error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "commands.h"
#include "placer/env/cost_model.h"
#include "placer/env/fidelity.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/profile_rounds.h"
#include "placer/env/simulator.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

namespace placer::cli {

namespace {

struct FidelityArgs {
  std::string graph, devices = "cpu:2", out = ".", name, save_placements, placements_from, replot;
  int placements = 50, repetitions = 5, rounds = 4;
  int retakes = 2;  // rounds measured again at most, where the probe read a spell (rounds_in_a_spell)
  double spell_ratio = kSpellRatio;
  double spread = 0;        // > 0: choose placements whose simulated steps are this far apart (relative)
  MeasureOptions protocol;  // its seed also draws the placements
  ObjectiveArgs objective;  // under pipeline each placement is judged as its unrolled mini-batch
  FidelityArgs() {
    protocol.seed = 1;
    protocol.lockstep = true;  // bench/results/fidelity_s33_lockstep/
  }
};

// A folder the run writes into, made with any missing above it.
void make_folder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot make folder '" + dir + "': " + ec.message());
}

// Re-renders a report's markdown and plot from its JSON, measuring nothing.
// With `out_dir` (-o given) they go there, under the report's own name; else beside it.
void replot_fidelity(const std::string& path, const std::string& out_dir) {
  FidelityReport report;
  try {
    report = FidelityReport::from_json(read_file(path));
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  std::string stem = path;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  if (!out_dir.empty()) {
    make_folder(out_dir);
    stem = out_dir + "/" + stem.substr(stem.find_last_of('/') + 1);
  }
  write_file_atomic(stem + ".md", report.to_markdown());
  write_file_atomic(stem + ".svg", report.to_svg());
  std::printf("%s on %s: %zu placements: Spearman %s, MAPE %.1f%% -> %s.{md,svg}\n", report.graph.c_str(),
              report.devices.c_str(), report.points.size(), rank_correlation_text(report.spearman, "%.3f").c_str(),
              100 * report.mape, stem.c_str());
}

// The command line that reproduces the run, recorded in the report.
std::string fidelity_command(const FidelityArgs& a) {
  std::ostringstream command;
  const MeasureOptions& mo = a.protocol;
  command << "placer fidelity --graph " << a.graph << " --devices " << a.devices;
  if (a.placements_from.empty())
    command << " --placements " << a.placements;
  else
    command << " --placements-from " << a.placements_from;
  command << " --seed " << mo.seed << " --warmup " << mo.warmup_steps << " --steps " << mo.measured_steps
          << " --max-steps " << mo.max_steps << " --target " << mo.target_halfwidth << " --budget " << mo.budget_s
          << " --repetitions " << a.repetitions << " --rounds " << a.rounds << " --retakes " << a.retakes
          << " --spell-ratio " << a.spell_ratio << " -o " << a.out;
  if (!a.name.empty()) command << " --name " << a.name;
  if (a.spread > 0) command << " --spread " << a.spread;
  if (mo.rewarm_steps > 0) command << " --rewarm " << mo.rewarm_steps;
  // (Left out, the recorded command did not make such a run again.)
  if (mo.min_time_s > 0) command << " --min-time " << mo.min_time_s;
  if (mo.timeout_s != MeasureOptions{}.timeout_s) command << " --timeout " << mo.timeout_s;
  if (!mo.lockstep) command << " --no-lockstep";
  if (a.objective.pipeline())
    command << " --objective pipeline --microbatches " << a.objective.microbatches << " --schedule "
            << a.objective.schedule;
  return command.str();
}

using NamedPlacements = std::vector<std::pair<std::string, Placement>>;  // diverse_placements()

// One round: a profile, then every live placement measured with the protocol, interleaved.
struct FidelityRound {
  Profile profile;
  // Per placement: its result (a failure included); unset where another kept round had seen it fail.
  std::vector<std::optional<StepResult>> results;
  double measured_core_rtt_s = 0.0;  // the probe's median over the round's steps (0: not read)
  // The round's probe reading: the higher of its profile's mixed step and its measurement (0: neither was read).
  double probe_s() const { return std::max({profile.mixed.core_rtt_s, measured_core_rtt_s, 0.0}); }
};

// What the rounds measured, and what they pool to (pool_rounds): the minimum profile, and per placement its pooled
// result, whether it failed, and each round's median.
struct FidelityMeasurements {
  std::vector<FidelityRound> rounds;  // the rounds kept, in order
  std::vector<FidelityRetake> retakes;
  std::vector<bool> failed;  // pooled: a placement that failed in a kept round is left out
  Profile profile;           // each op's fastest round (merge_profile_minimum)
  Profile mean;              // the rounds' mean (one round: its own): what the report's simulator is calibrated on
  std::vector<StepResult> best;
  std::vector<std::vector<double>> round_s;
  std::vector<Profile> profiles() const {
    std::vector<Profile> out;
    for (const FidelityRound& r : rounds) out.push_back(r.profile);
    return out;
  }
  // The placements that failed in a kept round other than `except` (-1: any): not measured again.
  std::vector<bool> failed_in_kept(size_t placements, int except = -1) const {
    std::vector<bool> out(placements, false);
    for (size_t k = 0; k < rounds.size(); ++k)
      if (static_cast<int>(k) != except)
        for (size_t i = 0; i < placements; ++i)
          out[i] = out[i] || (rounds[k].results[i] && !rounds[k].results[i]->ok());
    return out;
  }
};

// One round's interleaved measurement of the placements not in `skip` (failed in another kept round); a failure
// is kept as the placement's result. `label` names the round in the progress lines.
FidelityRound measure_round(Runtime& runtime, const RunGraph& run, const NamedPlacements& placements,
                            const FidelityArgs& a, const std::string& label, Profile profile,
                            const std::vector<bool>& skip) {
  FidelityRound round;
  round.profile = std::move(profile);
  round.results.resize(placements.size());
  std::vector<size_t> live;
  std::vector<Placement> batch;
  for (size_t i = 0; i < placements.size(); ++i)
    if (!skip[i]) {
      live.push_back(i);
      batch.push_back(run.at(placements[i].second));
    }
  std::fprintf(stderr, "%s: measuring %zu placements interleaved...\n", label.c_str(), batch.size());
  // Each round is a full measurement of its own (its median is the round's
  // figure); the point's figure pools every round's samples (pool_rounds).
  const std::vector<StepResult> results = runtime.measure_interleaved(run.graph(), batch, a.protocol);
  if (const std::vector<double> rtt = core_rtt_readings(results); !rtt.empty())
    round.measured_core_rtt_s = quantile(rtt, 0.5);
  for (size_t k = 0; k < live.size(); ++k) {
    const size_t i = live[k];
    const StepResult& r = results[k];
    round.results[i] = r;
    if (!r.ok()) {
      std::fprintf(stderr, "[%zu/%zu] %-11s %s: %s\n", i + 1, placements.size(), placements[i].first.c_str(),
                   step_status_name(r.status), r.message.c_str());
      continue;
    }
    std::fprintf(stderr, "[%zu/%zu] %-11s this round %.6g s [%.6g, %.6g], %zu steps\n", i + 1, placements.size(),
                 placements[i].first.c_str(), r.step_s, r.ci_low_s, r.ci_high_s, r.samples_s.size());
  }
  if (round.probe_s() > 0) std::fprintf(stderr, "%s: cross-core probe %.0f ns\n", label.c_str(), round.probe_s() * 1e9);
  return round;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A profile of `graph` (--repetitions), and the seconds it took.
struct TimedProfile {
  Profile profile;
  double seconds = 0.0;
};
TimedProfile timed_profile(Runtime& runtime, const Graph& graph, const FidelityArgs& a) {
  // --timeout bounds the profiles' steps as it does the measured ones.
  const ProfileOptions po{a.repetitions, ProfileOptions{}.transfer_sizes, a.protocol.timeout_s};
  const auto start = std::chrono::steady_clock::now();
  Profile profile = runtime.profile(graph, po);
  return {std::move(profile), seconds_since(start)};
}

// How long a fidelity run's rounds take: each profile's seconds (--spread's first one among them, which round 1
// reuses) and each round's measurement's.
struct RoundClock {
  std::vector<double> profiles_s, measures_s;
  static double mean(const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  }
  double profile_s() const { return mean(profiles_s); }
  double measure_s() const { return mean(measures_s); }
  // The rounds after those measured, about: each profiles and measures as long as those so far did on average
  // (round 1's time alone left out the profile every later round takes, when --spread had taken round 1's).
  double left_s(int rounds) const {
    return static_cast<double>(rounds - static_cast<int>(measures_s.size())) * (profile_s() + measure_s());
  }
};

// A round from the start: profile (unless `reuse` gives it), then measure; its times into `clock`.
FidelityRound run_round(Runtime& runtime, const Graph& graph, const RunGraph& run, const Cluster& cluster,
                        const NamedPlacements& placements, const FidelityArgs& a, const std::string& label,
                        const Profile* reuse, const std::vector<bool>& skip, RoundClock& clock) {
  TimedProfile profiled;
  if (!reuse) {
    std::fprintf(stderr, "%s: profiling %s (%lld ops) on %s...\n", label.c_str(), graph.name.c_str(),
                 static_cast<long long>(graph.size()), cluster.name.c_str());
    profiled = timed_profile(runtime, graph, a);
    clock.profiles_s.push_back(profiled.seconds);
  }
  const auto start = std::chrono::steady_clock::now();
  FidelityRound round =
      measure_round(runtime, run, placements, a, label, reuse ? *reuse : std::move(profiled.profile), skip);
  clock.measures_s.push_back(seconds_since(start));
  return round;
}

// Pools the kept rounds: each op's fastest round into m.profile, their mean into m.mean; per placement, whether it
// failed in any of them (or was left out of one, after failing in a round since taken again), and else every round's
// samples (its median and interval) and each round's median.
void pool_rounds(FidelityMeasurements& m, size_t n) {
  m.failed = m.failed_in_kept(n);
  for (const FidelityRound& r : m.rounds)
    for (size_t i = 0; i < n; ++i) m.failed[i] = m.failed[i] || !r.results[i];
  m.best.assign(n, StepResult{});
  m.round_s.assign(n, {});
  std::vector<std::vector<double>> samples(n);
  for (size_t k = 0; k < m.rounds.size(); ++k) {
    merge_profile_minimum(m.profile, m.rounds[k].profile, k == 0);
    for (size_t i = 0; i < n; ++i) {
      const std::optional<StepResult>& r = m.rounds[k].results[i];
      if (m.failed[i]) continue;
      m.round_s[i].push_back(r->step_s);
      samples[i].insert(samples[i].end(), r->samples_s.begin(), r->samples_s.end());
      m.best[i] = *r;
    }
  }
  m.mean = m.rounds.size() >= 2 ? mean_profile(m.profiles()) : m.profile;
  for (size_t i = 0; i < n; ++i) {
    if (m.failed[i] || samples[i].empty()) continue;
    m.best[i].samples_s = std::move(samples[i]);
    m.best[i].summarize();
  }
}

// Each round profiles, then measures every placement with the protocol,
// interleaved. Each round's profile is kept (the report calibrates on their
// mean) and so is each op's fastest round; a placement's measured step is the median of all
// its samples, every round's, with its interval; each round's median is kept
// for the measurement-against-itself figure. The profile is always of the
// training graph (a micro-batch copy "x@mbK" is timed as "x"); the
// measurements are of what `run` runs.
// A round whose cross-core probe read a slow spell while another round's did
// not (rounds_in_a_spell) is taken again, profile and all, --retakes times at
// most over the run; the retake replaces it when it reads lower.
FidelityMeasurements measure_rounds(Runtime& runtime, const Graph& graph, const RunGraph& run, const Cluster& cluster,
                                    const NamedPlacements& placements, const FidelityArgs& a,
                                    const std::optional<TimedProfile>& first_profile) {
  FidelityMeasurements m;
  const size_t n = placements.size();
  const auto start = std::chrono::steady_clock::now();
  RoundClock clock;
  if (first_profile) clock.profiles_s.push_back(first_profile->seconds);
  for (int round = 0; round < a.rounds; ++round) {
    // --spread profiled already
    const Profile* reuse = round == 0 && first_profile ? &first_profile->profile : nullptr;
    const std::string label = "round " + std::to_string(round + 1) + "/" + std::to_string(a.rounds);
    m.rounds.push_back(
        run_round(runtime, graph, run, cluster, placements, a, label, reuse, m.failed_in_kept(n), clock));
    if (round + 1 < a.rounds)
      std::fprintf(stderr,
                   "%s done after %.0f s in all; about %.0f s left for the other rounds (each profiles for about "
                   "%.3g s and measures for about %.3g s; retakes not counted)\n",
                   label.c_str(), seconds_since(start), clock.left_s(a.rounds), clock.profile_s(), clock.measure_s());
  }
  for (int left = a.retakes; left > 0; --left) {
    std::vector<double> probes;
    for (const FidelityRound& r : m.rounds) probes.push_back(r.probe_s());
    const std::vector<size_t> spell = rounds_in_a_spell(probes, a.spell_ratio);
    if (spell.empty()) break;
    FidelityRetake t;
    t.round = static_cast<int>(spell.front());
    t.probe_s = probes[spell.front()];
    t.quiet_s = quietest_reading(probes);
    const std::string label = "retake of round " + std::to_string(t.round + 1);
    std::fprintf(stderr, "round %d read the probe at %.0f ns, over %.3gx the quietest round's %.0f ns: %s\n",
                 t.round + 1, t.probe_s * 1e9, a.spell_ratio, t.quiet_s * 1e9, label.c_str());
    FidelityRound again =
        run_round(runtime, graph, run, cluster, placements, a, label, nullptr, m.failed_in_kept(n, t.round), clock);
    t.retake_probe_s = again.probe_s();
    t.kept = t.retake_probe_s > 0 && t.retake_probe_s < t.probe_s;
    std::fprintf(
        stderr, "%s: %s\n", label.c_str(),
        t.kept ? "kept, in place of the round" : "not kept: the round read lower (or the retake was not probed)");
    if (t.kept) m.rounds[t.round] = std::move(again);
    m.retakes.push_back(t);
  }
  pool_rounds(m, n);
  return m;
}

// The report: each placement that measured ok, measured against the simulator calibrated on the rounds' profile
// (both of what `run` runs).
FidelityReport fidelity_report(const RunGraph& run, const Cluster& cluster, const FidelityArgs& a,
                               const NamedPlacements& placements, const FidelityMeasurements& m) {
  const Graph& graph = run.graph();
  // Calibrated on the rounds' mean profile: each op's fastest round is the minimum of noisy medians, biased low
  // (a lower MAPE on 14 of the 15 graph-runs that reported both; bench/results/fidelity_summary.md). The fastest
  // round's simulator is reported beside it, on the same measurements.
  const Profile& profile = m.mean;
  const CostModel costs = run.calibrated(cluster, profile);
  std::optional<CostModel> unfitted;  // the same without what is fitted on the mixed step, when something is
  if (costs.group_copy_s_per_byte() > 0 || costs.cross_copy_s() > 0) {
    Profile unmixed = profile;
    unmixed.mixed = MixedStep{};
    unfitted = run.calibrated(cluster, unmixed);
  }
  std::optional<CostModel> per_copy;  // that cost between CPU devices fitted per copy, not per byte
  if (costs.group_copy_s_per_byte() > 0) per_copy = run.calibrated(cluster, profile, true);
  std::optional<CostModel> equal_cpus;  // the same without the device steps: the ops as timed, every CPU device alike
  if (profile.cpu_steps.size() >= 2) {
    Profile equal = profile;
    equal.cpu_steps.clear();
    equal_cpus = run.calibrated(cluster, equal);
  }
  std::optional<CostModel> fastest;  // calibrated on each op's fastest round
  if (m.rounds.size() >= 2) fastest = run.calibrated(cluster, m.profile);
  const SimContext context(graph);
  FidelityReport report;
  report.graph = graph.name;
  report.ops = graph.size();
  report.pipeline = run.spec();
  report.devices = a.devices;
  report.command = fidelity_command(a);
  report.host = m.profile.host;
  report.calibrated_fraction = costs.calibrated_fraction();
  report.calibration = "rounds_mean";
  report.per_op_overhead_s = profile.per_op_overhead_s;
  report.copy_s_per_byte = costs.group_copy_s_per_byte();
  report.copy_s_per_copy = per_copy ? per_copy->group_copy_s() : 0.0;
  report.cross_copy_s = costs.cross_copy_s();
  report.cpu_steps = profile.cpu_steps;
  for (const FidelityRound& r : m.rounds) {
    if (r.profile.mixed.core_rtt_s > 0) report.core_rtt_profiled_s.push_back(r.profile.mixed.core_rtt_s);
    if (r.measured_core_rtt_s > 0) report.core_rtt_measured_s.push_back(r.measured_core_rtt_s);
  }
  report.retakes = m.retakes;
  report.spell_ratio = a.spell_ratio;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (m.failed[i]) {
      ++report.failed;
      continue;
    }
    const Placement evaluated = run.at(placements[i].second);  // expanded once under the pipeline objective
    const StepResult simulated = simulate(context, evaluated, cluster, costs);
    FidelityPoint point;
    point.kind = placements[i].first;
    point.measured_s = m.best[i].step_s;
    point.measured_iqr_s = m.best[i].iqr_s;
    point.ci_low_s = m.best[i].ci_low_s;
    point.ci_high_s = m.best[i].ci_high_s;
    point.ci_level = m.best[i].ci_level;
    point.steps = static_cast<int64_t>(m.best[i].samples_s.size());
    point.simulated_s = simulated.step_s;
    if (unfitted) point.simulated_unfitted_s = simulate(context, evaluated, cluster, *unfitted).step_s;
    if (per_copy) point.simulated_per_copy_s = simulate(context, evaluated, cluster, *per_copy).step_s;
    if (equal_cpus) point.simulated_equal_cpus_s = simulate(context, evaluated, cluster, *equal_cpus).step_s;
    if (fastest) point.simulated_other_calibration_s = simulate(context, evaluated, cluster, *fastest).step_s;
    point.transfer_bytes = simulated.transfer_bytes;
    point.rounds_s = m.round_s[i];
    report.points.push_back(std::move(point));
  }
  return report;
}

// `placements` without the one the profile measures to fit the simulator's
// copy costs (round_robin_groups over mixed_step_devices: Profile::mixed),
// at most `count` of them: a point that
// calibrated the simulator is not one that tests it.
NamedPlacements without_profiled(const Graph& graph, const Cluster& cluster, NamedPlacements placements, int count) {
  const std::vector<DeviceId> cpus = mixed_step_devices(cluster);
  if (!cpus.empty()) {
    const Placement profiled = round_robin_groups(graph, cpus);
    placements.erase(std::remove_if(placements.begin(), placements.end(),
                                    [&](const auto& p) { return p.second.device_of == profiled.device_of; }),
                     placements.end());
  }
  if (static_cast<int>(placements.size()) > count) placements.resize(count);
  return placements;
}

// The placements to measure: the first --placements diverse ones; or, with
// --spread, those of four times as many whose simulated steps (the simulator
// calibrated on a first profile, which then serves as round 1's) are at least
// --spread apart. Nothing measured takes part in the choice.
// --placements-from DIR: every DIR/*.json in file name order, each named by its
// file's stem (what --save-placements wrote reads back as it was).
NamedPlacements placements_from(const Graph& graph, const Cluster& cluster, const std::string& dir,
                                std::string& selection) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("fidelity: --placements-from '" + dir + "' is not a folder");
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  NamedPlacements out;
  for (const fs::path& f : files) {
    try {
      out.emplace_back(f.stem().string(), placement_from_file(graph, cluster, f.string()));
    } catch (const std::exception& e) {
      throw InputError("fidelity: --placements-from: " + f.string() + ": " + e.what());
    }
  }
  const size_t read = out.size();
  out = without_profiled(graph, cluster, std::move(out), static_cast<int>(read));
  if (out.size() < 2)
    throw InputError("fidelity: --placements-from '" + dir + "' holds " + std::to_string(out.size()) +
                     " placement(s) to measure (*.json, the profile's round robin left out); at least 2 are needed");
  selection = std::to_string(out.size()) + " placements from " + dir + " (in file name order" +
              (out.size() < read ? ", the profile's round-robin step left out)" : ")");
  return out;
}

NamedPlacements choose_placements(Runtime& runtime, const Graph& graph, const RunGraph& run, const Cluster& cluster,
                                  const FidelityArgs& a, std::optional<TimedProfile>& first_profile,
                                  std::string& selection) {
  if (!a.placements_from.empty()) return placements_from(graph, cluster, a.placements_from, selection);
  if (a.spread <= 0)
    return without_profiled(graph, cluster, diverse_placements(graph, cluster, a.placements + 1, a.protocol.seed),
                            a.placements);
  const NamedPlacements pool = without_profiled(
      graph, cluster, diverse_placements(graph, cluster, 4 * a.placements + 1, a.protocol.seed), 4 * a.placements);
  std::fprintf(stderr, "choosing %d of %zu placements: profiling %s on %s...\n", a.placements, pool.size(),
               graph.name.c_str(), cluster.name.c_str());
  first_profile = timed_profile(runtime, graph, a);
  const CostModel costs = run.calibrated(cluster, first_profile->profile);
  const SimContext context(run.graph());
  std::vector<double> simulated;
  for (const auto& [kind, p] : pool) simulated.push_back(simulate(context, run.at(p), cluster, costs).step_s);
  NamedPlacements chosen;
  for (size_t i : spread_by_simulated(simulated, a.placements, a.spread)) chosen.push_back(pool[i]);
  std::ostringstream text;
  text << chosen.size() << " of " << pool.size() << " diverse placements (seed " << a.protocol.seed
       << "), chosen before any measurement for simulated steps at least " << 100 * a.spread
       << "% apart (the simulator calibrated on a first profile, which is round 1's unless round 1 was taken again)";
  selection = text.str();
  if (chosen.size() < 2)
    throw InputError("fidelity: --spread " + std::to_string(a.spread) + " left " + std::to_string(chosen.size()) +
                     " placement(s); use a smaller --spread");
  return chosen;
}

// --replot measures nothing: every option but -o is refused (they were ignored, --graph and --devices too).
void refuse_with_replot(const CLI::App& fid) {
  std::vector<std::string> given;
  for (const CLI::Option* o : fid.get_options())
    if (o->get_name() != "--replot" && o->get_name() != "--out" && o->get_name() != "--help")
      given.push_back(o->get_name());
  refuse_given(fid, given, "--replot re-renders a report as it was measured (it takes -o alone)");
}

void run_fidelity(const FidelityArgs& a, bool out_given) {
  if (!a.replot.empty()) {
    replot_fidelity(a.replot, out_given ? a.out : "");
    return;
  }
  if (a.graph.empty()) throw InputError("fidelity: --graph is required (or --replot REPORT.json)");
  const Graph graph = load_graph(a.graph);
  const Cluster cluster = parse_device_list(a.devices);
  make_folder(a.out);
  // A graph's own name may hold any character: '/' in it pointed the report into a folder that does not
  // exist, found only when every round had been measured.
  std::string name = a.name.empty() ? graph.name : a.name;
  for (char& c : name)
    if (c == '/' || c == '\0') c = '_';
  const std::string stem = (std::filesystem::path(a.out) / ("fidelity_" + name)).string();  // "fid/": no "fid//"
  Runtime runtime(cluster);
  const RunGraph run(graph, a.objective);
  std::optional<TimedProfile> first_profile;
  std::string selection;
  const NamedPlacements placements = choose_placements(runtime, graph, run, cluster, a, first_profile, selection);
  if (!a.save_placements.empty()) {
    make_folder(a.save_placements);
    for (size_t i = 0; i < placements.size(); ++i)
      save_placement(to_named(graph, cluster, placements[i].second),
                     a.save_placements + "/" + std::to_string(i) + "_" + placements[i].first + ".json");
  }
  const FidelityMeasurements m = measure_rounds(runtime, graph, run, cluster, placements, a, first_profile);
  if (!a.save_placements.empty()) {
    // The profiles beside them, so that the report's simulated steps can be made again (and other calibrations
    // tried) on the same measurements: `placer simulate --profile DIR/profiles/mean.json` gives simulated_s.
    const std::string dir = a.save_placements + "/profiles";
    make_folder(dir);
    save_profile(m.mean, dir + "/mean.json");
    for (size_t k = 0; k < m.rounds.size(); ++k)
      save_profile(m.rounds[k].profile, dir + "/round_" + std::to_string(k + 1) + ".json");
  }
  FidelityReport report = fidelity_report(run, cluster, a, placements, m);
  report.selection = selection;
  if (report.points.size() < 2) throw InputError("fidelity: fewer than two placements measured ok");
  report.compute_statistics();
  write_file_atomic(stem + ".json", report.to_json());
  write_file_atomic(stem + ".md", report.to_markdown());
  write_file_atomic(stem + ".svg", report.to_svg());
  std::printf("%s on %s: %zu placements (%d failed): Spearman %s, Kendall tau-b %s, MAPE %.1f%%", graph.name.c_str(),
              a.devices.c_str(), report.points.size(), report.failed,
              rank_correlation_text(report.spearman, "%.3f").c_str(),
              rank_correlation_text(report.kendall, "%.3f").c_str(), 100 * report.mape);
  if (report.min_rounds() >= 2)
    std::printf(" (re-measured: Spearman %s)", rank_correlation_text(report.retest_spearman, "%.3f").c_str());
  if (report.min_rounds() >= 4)
    std::printf(" (by halves of the rounds: Spearman %s)",
                rank_correlation_text(report.split_half_spearman, "%.3f").c_str());
  if (run.spec()) std::printf(" (pipeline objective: %s)", pipeline_spec_text(*run.spec()).c_str());
  std::printf(" -> %s.{md,json,svg}\n", stem.c_str());
}
}  // namespace

void add_fidelity_command(CLI::App& app) {
  auto fargs = std::make_shared<FidelityArgs>();
  CLI::App* fid = app.add_subcommand(
      "fidelity",
      "Measure diverse placements for real and in the calibrated simulator; report rank correlation and MAPE");
  fid->add_option("--graph", fargs->graph, "Graph file (.json or binary); required unless --replot");
  fid->add_option("--replot", fargs->replot,
                  "Re-render REPORT.md and REPORT.svg from a fidelity REPORT.json written earlier (measures nothing), "
                  "beside it or, with -o, in that folder");
  fid->add_option("--devices", fargs->devices, "Devices to measure on: cpu:N, cpu,cuda:0, ...")->capture_default_str();
  CLI::Option* count = fid->add_option("--placements", fargs->placements, "Number of placements")
                           ->capture_default_str()
                           ->check(CLI::Range(2, 100000));
  CLI::Option* spread =
      fid->add_option(
             "--spread", fargs->spread,
             "Choose --placements of 4x as many diverse placements whose simulated steps are at least this "
             "far apart (relative, e.g. 0.04), so that the measurement can rank them; 0: the first --placements")
          ->capture_default_str()
          ->check(finite_range(0.0, 10.0));
  fid->add_option("--placements-from", fargs->placements_from,
                  "Measure the placements in DIR/*.json instead of drawing diverse ones (e.g. a --save-placements "
                  "folder, to measure the same placements on other devices)")
      ->excludes(count)
      ->excludes(spread);
  fid->add_option("--save-placements", fargs->save_placements,
                  "Also write each placement as DIR/<index>_<kind>.json (to measure or simulate one again), and the "
                  "profiles as DIR/profiles/mean.json (the one the report's simulator is calibrated on) and "
                  "round_<k>.json")
      ->check(output_folder());
  fid->add_option("-o,--out", fargs->out, "Output directory for fidelity_<graph>.{md,json,svg}")
      ->capture_default_str()
      ->check(output_folder());
  fid->add_option("--name", fargs->name, "File name stem instead of the graph name")->check(file_name_part());
  add_measure_options(fid, &fargs->protocol);
  fid->add_flag("--lockstep,!--no-lockstep", fargs->protocol.lockstep,
                "Within each round every placement takes every step until all have enough, so that their medians "
                "cover one span of time (the default); --no-lockstep: each stops at its own target, and a drifting "
                "machine's minutes fall on the placements unevenly (transformer's rounds re-ranked themselves at "
                "0.50 so, 0.91 in lockstep: bench/results/fidelity_s33_lockstep/)");
  fid->add_option(
         "--rounds", fargs->rounds,
         "Rounds of profile + measure-all (interleaved); the simulator is calibrated on the rounds' mean profile "
         "(each op's fastest round reported beside it), measurements pool every round's samples. Four or more "
         "also set the halves of the rounds against each other; pooling four averages over a shared machine's "
         "drift between rounds (bench/results/fidelity_s23_rounds4/)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  fid->add_option("--retakes", fargs->retakes,
                  "Rounds to measure again at most, where a round's cross-core probe read over --spell-ratio times "
                  "the quietest round's (a slow spell of a shared machine; the retake replaces the round when it "
                  "reads lower); 0: never")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  fid->add_option("--spell-ratio", fargs->spell_ratio,
                  "A round whose probe reads over this many times the quietest round's is taken again (--retakes)")
      ->capture_default_str()
      ->check(finite_range(1.0, 1000.0));
  fid->add_option("--repetitions", fargs->repetitions, "Profile runs per op (median kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_objective_options(fid, &fargs->objective);
  fid->callback([fargs, fid] {
    if (!fargs->replot.empty()) refuse_with_replot(*fid);
    refuse_pipeline_options(*fid, fargs->objective.pipeline());
    run_fidelity(*fargs, fid->count("--out") > 0);
  });
}

}  // namespace placer::cli
