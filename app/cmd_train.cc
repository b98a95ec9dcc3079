// `placer train`: trains a learned placer from a config and prints the
// comparison with the baselines.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/agent/train.h"
#include "placer/env/pipeline_objective.h"
#include "placer/graphs/error.h"
#include "placer/graphs/stats.h"
#include "placer/service/metrics.h"
#include "placer/service/workers.h"

namespace placer::cli {

namespace {

struct TrainArgs {
  std::string config;
  bool resume = false;
  bool quiet = false;
  std::string output;
  std::string cluster;
  std::string graph;
  std::string init_from;
  std::string profile;
  std::string reward_mode;
  bool paired = false;
  ObjectiveArgs objective;  // applied only where given on the command line
  int64_t updates = -1;
  int64_t max_samples = -1;
  double time_limit_s = -1;
  int64_t seed = -1;
  int64_t stop_after = -1;
  int threads = 0;
  int metrics_port = -1;
  std::string workers_bind;
  int min_workers = 1;
  double workers_wait_s = 300.0;
};

// The pool `placer worker` processes connect to, once min_workers have joined.
std::shared_ptr<placer::service::WorkerPool> start_workers(const TrainArgs& a) {
  placer::service::WorkerPoolOptions o;
  o.bind = a.workers_bind;
  o.worker_wait_s = a.workers_wait_s;
  o.log = [](const std::string& line) { std::fprintf(stderr, "workers: %s\n", line.c_str()); };
  auto pool = std::make_shared<placer::service::WorkerPool>(o);
  std::fprintf(stderr, "workers: connect with: placer worker --connect %s%s\n", pool->endpoint().c_str(),
               pool->endpoint().find("0.0.0.0") != std::string::npos ? "  (this machine's address for 0.0.0.0)" : "");
  if (a.min_workers > 0) {
    std::fprintf(stderr, "workers: waiting for %d worker(s), at most %.0f s\n", a.min_workers, a.workers_wait_s);
    const int live = pool->wait_for_workers(a.min_workers, a.workers_wait_s);
    if (live < a.min_workers)
      throw InputError("--min-workers: only " + std::to_string(live) + " of " + std::to_string(a.min_workers) +
                       " workers connected to " + pool->endpoint() + " within " +
                       std::to_string(static_cast<int>(a.workers_wait_s)) + " s (--workers-wait)");
  }
  return pool;
}

void print_worker_stats(const placer::service::WorkerPool& pool, const TrainResult& r) {
  const auto s = pool.stats();
  std::printf(
      "  workers: %lld joined, %lld lost, %lld left; %lld tasks sent (%lld re-sent after a loss), "
      "%lld late results ignored; %lld evaluations remote\n",
      static_cast<long long>(s.workers_joined), static_cast<long long>(s.workers_lost),
      static_cast<long long>(s.workers_left), static_cast<long long>(s.tasks_sent), static_cast<long long>(s.resent),
      static_cast<long long>(s.ignored), static_cast<long long>(r.remote_evaluations));
}

// A measured row against the policy's best: is the difference more than the noise?
// Then its rounds paired with the policy's (each round's two steps ran back to back, so the
// machine's drift cancels in their ratio): the Hodges-Lehmann row / policy, its interval, the
// signed-rank test's verdict.
std::string rank_verdict(const BaselineResult& b, double policy_s) {
  if (b.p_vs_policy < 0) return "";
  char v[224];
  int n = std::snprintf(v, sizeof v, "  %s (p=%.2g)", b.verdict_vs_policy(policy_s), b.p_vs_policy);
  if (const std::optional<PairedTest>& p = b.paired_vs_policy; p && n > 0 && n < static_cast<int>(sizeof v)) {
    const char* verdict = !p->significant() ? "no difference" : (p->ratio > 1 ? "policy faster" : "row faster");
    std::snprintf(v + n, sizeof v - n, "; paired by round: row %+.1f%% [%+.1f%%, %+.1f%%], %s (p=%.2g)",
                  100 * (p->ratio - 1), 100 * (p->ratio_low - 1), 100 * (p->ratio_high - 1), verdict, p->p_value);
  }
  return v;
}

// The run in one line, its size, and how the table's rows were made.
void print_run(const TrainConfig& c, const TrainResult& r) {
  std::printf("\n%s: %s on %s, policy %s, %s%s reward%s\n", c.name.c_str(), c.graph.describe().c_str(),
              c.cluster.c_str(), policy_type_name(c.policy.type), reward_mode_name(c.reward.mode),
              c.reward.paired && c.reward.mode != RewardMode::Simulated ? " (paired)" : "",
              objective_note(c.reward).c_str());
  std::printf("  %lld updates, %lld sampled placements, %.1f s\n", static_cast<long long>(r.updates),
              static_cast<long long>(r.samples), r.seconds);
  const bool measured = r.table != "simulated";
  const std::string level = interval_confidence_label();
  std::printf("  every row %s%s\n", measured ? "measured side by side, interleaved, in one fresh run" : "simulated",
              measured ? (" (median step, " + level + " interval)").c_str() : "");
}

// A row's interval, in a measured table.
std::string interval_text(bool measured, double lo, double hi) {
  char b[64] = "";
  if (measured) std::snprintf(b, sizeof b, "[%.6g, %.6g]", lo, hi);
  return std::string(b);
}

// The baselines' and the seen placements' rows against the policy's best (`policy`, 0: none).
void print_rows(const std::vector<const BaselineResult*>& rows, int w, bool measured, double policy) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const BaselineResult& b = *rows[i];
    if (!b.ok) {
      std::printf("  %-*s %12s %25s %10s %10.3f  %s\n", w, b.method.c_str(), "failed", "", "", b.seconds,
                  b.note.substr(0, 80).c_str());
      continue;
    }
    char g[32] = "-";
    if (b.step_s > 0 && policy > 0) std::snprintf(g, sizeof g, "%+.1f%%", 100.0 * (b.step_s - policy) / b.step_s);
    // Two methods that agree are one placement, measured once: say so, or the row looks like a second finding.
    std::string same;
    for (size_t k = 0; k < i && same.empty(); ++k)
      if (rows[k]->ok && !b.placement.device_of.empty() && rows[k]->placement == b.placement)
        same = "  same placement as " + rows[k]->method;
    std::printf("  %-*s %12.6g %25s %10s %10.3f%s%s\n", w, b.method.c_str(), b.step_s,
                interval_text(measured, b.ci_low_s, b.ci_high_s).c_str(), g, b.seconds, rank_verdict(b, policy).c_str(),
                same.c_str());
  }
}

// The policy's row, the rows of every baseline and seen placement, and the probes beside the table.
void print_table(const TrainConfig& c, const TrainResult& r) {
  const bool measured = r.table != "simulated";
  const std::string level = interval_confidence_label();
  // The baselines, then the placements found outside the run (a fine-tuning run's
  // starting answer, the service's fast path), which the result is never worse than.
  std::vector<const BaselineResult*> rows;
  for (const std::vector<BaselineResult>* list : {&r.baselines, &r.seen})
    for (const BaselineResult& b : *list) rows.push_back(&b);
  int w = 22;  // the method column: as wide as its longest name
  for (const BaselineResult* b : rows) w = std::max(w, static_cast<int>(b->method.size()));
  char rank_head[64];
  std::snprintf(rank_head, sizeof rank_head, "  rank test vs policy (%g%%); paired by round", 100 * kRankTestLevel);
  std::printf("  %-*s %12s %25s %10s %10s%s\n", w, "method", "step (s)",
              measured ? (level + " interval (s)").c_str() : "", "vs policy", "place (s)", measured ? rank_head : "");
  // 0: the policy evaluated nothing (0 updates), or its final measurement failed (a penalty, not a step).
  const double policy = r.policy_step_s();
  char policy_step[32] = "-";
  if (policy > 0) std::snprintf(policy_step, sizeof policy_step, "%.6g", policy);
  if (!r.policy_failed.empty()) std::snprintf(policy_step, sizeof policy_step, "failed");
  std::printf("  %-*s %12s %25s %10s %10s%s\n", w, (std::string("policy:") + policy_type_name(c.policy.type)).c_str(),
              policy_step, policy > 0 ? interval_text(measured, r.policy_ci_low_s, r.policy_ci_high_s).c_str() : "", "",
              "", r.policy_failed.empty() ? "" : ("  measured: " + r.policy_failed).c_str());
  // reward.finalists: which of the policy's placements this row is, picked on a separate measurement.
  for (const TrainResult::Finalist& f : r.finalists)
    if (f.picked)
      std::printf(
          "  %-*s picked from %zu of its placements measured side by side before this table (%.6g s "
          "there; training's best %.6g s); found at sample %lld\n",
          w, "", r.finalists.size(), f.step_s, r.finalists[0].step_s, static_cast<long long>(f.found_at_sample));
  print_rows(rows, w, measured, policy);
  if (r.table_core_rtt.read())
    std::printf(
        "  cross-core round trip while the table ran: %.0f ns (median; %.0f-%.0f ns); copy-heavy rows are "
        "slower while it is high\n",
        r.table_core_rtt.median_s * 1e9, r.table_core_rtt.low_s * 1e9, r.table_core_rtt.high_s * 1e9);
  for (size_t k = 0; k < r.table_retakes.size(); ++k) {
    const TrainResult::TableRetake& t = r.table_retakes[k];
    std::printf(
        "  measured again: the table read %.0f ns, over the run's quietest %.0f ns; retake %zu read %.0f ns "
        "and %s\n",
        t.core_rtt_s * 1e9, r.table_quiet_core_rtt_s * 1e9, k + 1, t.retake_core_rtt_s * 1e9,
        t.kept ? "replaced it" : "was not kept");
  }
}

// The fastest placement the run evaluated, and who found it; the policy's own best stays apart.
void print_found(const TrainResult& r) {
  const double policy = r.policy_step_s();
  if (r.best_found_by == "policy")
    std::printf("  result: %.6g s, found by %s\n", r.best_step_s, r.best_found_by.c_str());
  else if (policy > 0)
    std::printf(
        "  result: %.6g s, found by %s (the policy's own best, %.6g s, did not beat it; the result is never "
        "worse than what the run evaluated)\n",
        r.best_step_s, r.best_found_by.c_str(), r.policy_best_step_s);
  else
    std::printf("  result: %.6g s, found by %s (%s)\n", r.best_step_s, r.best_found_by.c_str(),
                r.policy_failed.empty() ? "the policy evaluated nothing"
                                        : ("the policy's own best failed its measurement: " + r.policy_failed).c_str());
}

// The result against the simulator's lower bound (none without a bound).
void print_bound(const TrainResult& r) {
  const double above = r.lower_bound_s > 0 ? 100.0 * (r.best_step_s / r.lower_bound_s - 1.0) : 0.0;
  if (r.lower_bound_s > 0 && above >= 0)
    std::printf("  lower bound %.6g s: the result is %.1f%% above it%s\n", r.lower_bound_s, above,
                r.measurements > 0 ? "" : bound_note(r.best_step_s, r.lower_bound_s));  // simulated steps only
  else if (r.lower_bound_s > 0)  // a measured step under the simulator's bound ("-4.1% above it")
    std::printf(
        "  lower bound %.6g s (the simulator's): the measured result is %.1f%% below it; the simulator "
        "is slower than this machine there\n",
        r.lower_bound_s, -above);
}

// What training ran for real: per update only where there was one (0 updates: the warm start's alone).
void print_measurements(const TrainResult& r) {
  if (r.measurements <= 0) return;
  char per_update[48] = "no updates";
  if (r.updates > 0)
    std::snprintf(per_update, sizeof per_update, "%.1f per update",
                  static_cast<double>(r.measurements) / static_cast<double>(r.updates));
  std::printf("  training ran %lld placements for real (%s), %lld measured steps\n",
              static_cast<long long>(r.measurements), per_update, static_cast<long long>(r.measured_steps));
}

// The result and who found it, what training ran for real, the bound, the held-out graphs. With no
// result (0 updates and no baseline, or every evaluation failed) there is no step to set against the
// bound, and no best_placement.json.
void print_result(const TrainResult& r) {
  // (A graph of inputs alone steps in 0 s: its placement is still a result.)
  const bool found = r.best_found_by != "none" && !r.best_found_by.empty();
  if (found)
    print_found(r);
  else if (r.policy_failed.empty())
    std::printf("  result: none: the run evaluated no placement\n");
  else
    std::printf("  result: none: the policy's own best failed its measurement (%s) and no other row ran\n",
                r.policy_failed.c_str());
  print_measurements(r);
  if (r.calibrations > 0) {
    std::printf("  simulator refit %lld times to those runs: steps x%.3g", static_cast<long long>(r.calibrations),
                r.step_scale);
    if (r.link_factor != 1.0) std::printf(", CPU<->GPU links x%.3g", r.link_factor);
    std::printf("\n");
  }
  if (found && r.best_step_s > 0) print_bound(r);
  for (const auto& [g, v] : r.held_out)
    std::printf("  held-out %-30s %.6g s (placed in %.3f s, no training)\n", g.c_str(), v.first, v.second);
  std::printf("  results in %s (train.csv, reward.svg, %ssummary.json, checkpoint.pt)\n", r.output_dir.c_str(),
              r.best_placement.device.empty() ? "" : "best_placement.json, ");
}

void print_summary(const TrainConfig& c, const TrainResult& r) {
  print_run(c, r);
  print_table(c, r);
  print_result(r);
}

void add_train_options(CLI::App* cmd, TrainArgs& a) {
  cmd->add_option("-c,--config", a.config, "Config file (YAML or JSON), e.g. configs/nmt_k80x4.yaml")->required();
  cmd->add_flag("--resume", a.resume, "Continue from the checkpoint in the output folder");
  cmd->add_option("-o,--output", a.output, "Result folder (default: the config's run.output_dir or runs/<name>)")
      ->check(output_folder());
  cmd->add_option("--cluster", a.cluster,
                  "Override cluster (a preset, a cluster file or a device list, e.g. cpu:8+cuda:0): every graph's, "
                  "also the family and held_out entries that name their own (a note says how many)");
  cmd->add_option("--graph", a.graph,
                  "Override graph: train on this graph file alone (the config's family and held_out dropped)");
  cmd->add_option(
      "--init-from", a.init_from,
      "Override policy.init_from: start from 'pretrained' (the gnn of `make pretrained`) or a result folder's weights "
      "(fine-tuning; configs/finetune_pretrained.yaml). What that policy answers as `placer place --policy` "
      "would, within policy.init_answer_s (1 s), counts as seen: the run never returns a slower placement");
  cmd->add_option("--profile", a.profile, "Override reward.profile (a `placer profile` output for that cluster)");
  cmd->add_option("--reward-mode", a.reward_mode, "Override reward.mode")
      ->check(CLI::IsMember({"simulated", "measured", "hybrid"}));
  add_objective_options(cmd, &a.objective, true, true);
  cmd->add_flag("--paired", a.paired,
                "Set reward.paired: each measured batch beside a reference placement (the first one measured), "
                "and a placement's step the reference's times its median per-round ratio to it");
  // The config's ranges (trainer_config.cc): --threads 100000 went straight to at::set_num_threads, and a
  // negative value read as "not given".
  cmd->add_option("--updates", a.updates, "Override train.updates")->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  cmd->add_option("--max-samples", a.max_samples, "Override train.max_samples")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000000}));
  cmd->add_option("--time-limit", a.time_limit_s, "Override train.time_limit_s (seconds; 0: none)")
      ->check(finite_range(0, 1e9));
  cmd->add_option("--seed", a.seed, "Override run.seed")->check(CLI::Range(int64_t{0}, INT64_MAX));
  cmd->add_option("--threads", a.threads, "Override run.threads (LibTorch intra-op threads)")->check(CLI::Range(1, 256));
  cmd->add_option("--stop-after", a.stop_after,
                  "Stop after this many updates in total (checkpoint kept; --resume continues)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  cmd->add_flag("-q,--quiet", a.quiet, "No progress line");
  cmd->add_option("--metrics-port", a.metrics_port,
                  "Serve Prometheus metrics of this run on 0.0.0.0:PORT/metrics (0 = any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--workers-bind", a.workers_bind,
                  "Evaluate placements on `placer worker` processes that connect here, e.g. 'tcp://*:5557' "
                  "(port * = any free port; the endpoint is printed)");
  cmd->add_option("--min-workers", a.min_workers, "With --workers-bind: workers to wait for before training")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--workers-wait", a.workers_wait_s,
                  "With --workers-bind: seconds to wait for --min-workers, and for a worker able to take a task")
      ->capture_default_str()
      ->check(finite_range(1e-3, 1e7));  // (nan passed, and the wait then reported "within -2147483648 s")
}

// --cluster: the run's cluster and every graph entry's (the family's and held_out's own clusters were kept, and
// the summary's "on <cluster>" named one they did not run on).
void override_cluster(const std::string& cluster, TrainConfig& c) {
  c.cluster = cluster;
  c.cluster_value.reset();
  int replaced = 0;
  auto replace = [&](GraphSource& s) {
    replaced += !s.cluster.empty();
    s.cluster.clear();
  };
  replace(c.graph);
  for (GraphSource& s : c.family) replace(s);
  for (GraphSource& s : c.held_out) replace(s);
  if (replaced > 0)
    std::fprintf(stderr, "note: --cluster %s replaced the cluster of %d graph entr%s that named %s own\n",
                 cluster.c_str(), replaced, replaced == 1 ? "y" : "ies", replaced == 1 ? "its" : "their");
}

// The command line's overrides of the config.
void apply_overrides(const TrainArgs& a, const CLI::App& cmd, TrainConfig& c) {
  // --objective, --microbatches, --schedule override reward.objective/microbatches/schedule one by one.
  if (cmd.count("--objective")) c.reward.objective = objective_named(a.objective.objective);
  if (cmd.count("--microbatches")) c.reward.pipeline.microbatches = a.objective.microbatches;
  if (cmd.count("--schedule")) c.reward.pipeline.schedule = schedule_named(a.objective.schedule);
  if (!a.output.empty()) c.run.output_dir = a.output;
  if (!a.graph.empty()) {
    c.graph = GraphSource{};
    c.graph.file = a.graph;
    c.family.clear();
    c.held_out.clear();
  }
  if (!a.cluster.empty()) override_cluster(a.cluster, c);
  if (!a.init_from.empty()) c.policy.init_from = a.init_from;
  if (!a.profile.empty()) c.reward.profile = a.profile;
  if (!a.reward_mode.empty()) c.reward.mode = parse_reward_mode(a.reward_mode);
  if (a.paired) c.reward.paired = true;
  if (a.updates >= 0) c.optimizer.updates = a.updates;
  if (a.max_samples >= 0) c.optimizer.max_samples = a.max_samples;
  if (a.time_limit_s >= 0) c.optimizer.time_limit_s = a.time_limit_s;
  if (a.seed >= 0) c.run.seed = static_cast<uint64_t>(a.seed);
  if (a.threads > 0) c.run.threads = a.threads;
}

// config.yaml keeps the config's text as written; its first line names the overrides that changed the run.
void note_overrides(const CLI::App& cmd, TrainConfig& c) {
  std::string given;
  for (const char* o :
       {"-o", "--cluster", "--graph", "--init-from", "--profile", "--reward-mode", "--objective", "--microbatches",
        "--schedule", "--paired", "--updates", "--max-samples", "--time-limit", "--seed", "--threads"})
    if (cmd.count(o) > 0) given += (given.empty() ? "" : ", ") + std::string(o);
  if (!given.empty() && !c.source_text.empty())
    c.source_text = "# the effective config is config.json: this one as written, with " + given + "\n" + c.source_text;
}

void run_train(const TrainArgs& a, const CLI::App& cmd) {
  if (a.workers_bind.empty())
    refuse_given(cmd, {"--min-workers", "--workers-wait"}, "applies with --workers-bind only (no worker pool here)");
  TrainConfig c = load_train_config(a.config);
  apply_overrides(a, cmd, c);
  refuse_pipeline_options(cmd, c.reward.objective == Objective::Pipeline,
                          "--objective pipeline, or the config's reward.objective: pipeline");
  if (c.reward.mode == RewardMode::Simulated)
    refuse_given(cmd, {"--paired"},
                 "needs measured or hybrid rewards (--reward-mode, or the config's reward.mode); these are simulated");
  note_overrides(cmd, c);
  TrainControls ctl;
  ctl.resume = a.resume;
  ctl.progress = !a.quiet;
  ctl.stop_after_updates = a.stop_after;
  std::unique_ptr<MetricsSink> sink;
  if (a.metrics_port >= 0) {
    sink = placer::service::make_prometheus_sink(a.metrics_port, c.name, c.graph.describe());
    auto* prom = dynamic_cast<placer::service::PrometheusSink*>(sink.get());
    std::fprintf(stderr, "metrics: serving http://0.0.0.0:%d/metrics\n", prom ? prom->port() : a.metrics_port);
  }
  std::shared_ptr<placer::service::WorkerPool> pool;
  if (!a.workers_bind.empty()) {
    pool = start_workers(a);
    ctl.remote = pool;
  }
  TrainResult r = train(c, sink.get(), ctl);
  print_summary(c, r);
  if (pool) print_worker_stats(*pool, r);
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a learned placer (seq2seq, hierarchical or gnn) from a config");
  add_train_options(cmd, *args);
  cmd->callback([args, cmd]() { run_train(*args, *cmd); });

  auto from = std::make_shared<std::string>(), to = std::make_shared<std::string>();
  CLI::App* ex = app.add_subcommand(
      "export-policy",
      "Write a trained policy alone (config and weights; no optimizer state, no record of samples): the small file "
      "`make pretrained` ships, read by `place --policy` and policy.init_from");
  ex->add_option("from", *from, "A `placer train` result folder or its checkpoint.pt")->required();
  ex->add_option("-o,--output", *to, "The file to write, e.g. policies/pretrained/checkpoint.pt")
      ->required()
      ->check(output_file());
  ex->callback([from, to]() {
    const ExportedPolicy e = export_policy(*from, *to);
    std::printf("wrote %s: %.2f MB (the checkpoint: %.2f MB)\n", to->c_str(), e.to_bytes / 1e6, e.from_bytes / 1e6);
  });
}

}  // namespace placer::cli
