// Rollout throughput: placements evaluated per second by an Environment on
// its own (1 thread, and one per core) and through a WorkerPool with 1, 2, 4
// `placer worker` processes (simulated evaluation), side by side in one run,
// on the same fresh placements (the `random` placer's) in trainer-sized batches. Remote results are
// checked against the local ones (they must be equal).
//
//   build/bench/workers_bench --builder inception_v3 --cluster k80x4 --samples 1600 --batch 16 --workers 1,2,4
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/timing.h"
#include "placer/service/workers.h"

extern char** environ;

using namespace placer;

namespace {

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// The `random` placer's placements (memory-aware, one device per co-location group).
std::vector<Placement> random_placements(Environment& env, int count, uint64_t seed) {
  auto placer = make_placer("random");
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  std::vector<Placement> out;
  for (int k = 0; k < count; ++k) {
    ctx.seed = seed + static_cast<uint64_t>(k);
    out.push_back(placer->place(ctx).placement);
  }
  return out;
}

pid_t spawn_worker(const std::string& placer, const std::string& endpoint, const std::string& name, int slow_ms) {
  std::vector<std::string> args = {placer, "worker", "--connect", endpoint, "--name", name, "--threads", "1"};
  if (slow_ms > 0) args.insert(args.end(), {"--slow-ms", std::to_string(slow_ms)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, placer.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw InputError("cannot start " + placer + " worker");
  return pid;
}

struct Run {
  std::string what;
  int slow_ms = 0;  // workers wait this long per evaluation (an expensive evaluation's stand-in)
  int workers = 0;
  double setup_s = 0;  // workers: first batch (problem sent, environments built)
  double seconds = 0;
  int samples = 0;
  bool equal = true;
};

// Evaluates every batch in `batches` with env; returns the seconds taken.
double evaluate_all(Environment& env, const std::vector<std::vector<Placement>>& batches, std::vector<double>* steps) {
  const auto t0 = Clock::now();
  for (const auto& b : batches)
    for (const Evaluation& e : env.evaluate_batch(b)) steps->push_back(e.result.step_s);
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"workers_bench: placements evaluated per second, local vs `placer worker` processes"};
  // build/bench/workers_bench -> build/placer
  std::string placer = (std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "placer").string();
  std::string builder = "inception_v3", cluster_name = "k80x4";
  std::vector<std::string> options;
  std::vector<int> worker_counts = {1, 2, 4};
  int samples = 1600, batch = 16, prefetch = service::WorkerPoolOptions{}.prefetch;
  app.add_option("--placer", placer, "The placer binary that runs the workers")->capture_default_str();
  app.add_option("--builder", builder, "Graph builder")->capture_default_str();
  app.add_option("--opt", options, "Builder option key=value (repeatable)");
  app.add_option("--cluster", cluster_name, "Cluster preset or device list")->capture_default_str();
  app.add_option("--samples", samples, "Placements per configuration")->capture_default_str();
  app.add_option("--batch", batch, "Placements per evaluate_batch call (the trainer's samples_per_update)")
      ->capture_default_str();
  app.add_option("--workers", worker_counts, "Worker process counts")->delimiter(',');
  app.add_option("--prefetch", prefetch, "Tasks sent to a worker beyond its slots")->capture_default_str();
  int slow_ms = 0, slow_samples = 400;
  app.add_option("--slow-ms", slow_ms,
                 "Also run the workers with --slow-ms (each evaluation waits this long, as an expensive "
                 "measurement would, without using a core)");
  app.add_option("--slow-samples", slow_samples, "Placements for the --slow-ms runs")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  BuilderOptions bo;
  for (const auto& kv : options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw InputError("--opt: expected key=value, got " + kv);
    bo.values[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
  }
  const Graph graph = build_graph(builder, bo);
  const Cluster cluster = resolve_cluster(cluster_name);
  Environment scratch(graph, cluster);
  const auto all = random_placements(scratch, samples, 12345);
  std::vector<std::vector<Placement>> batches;
  for (int i = 0; i < samples; i += batch)
    batches.emplace_back(all.begin() + i, all.begin() + std::min(samples, i + batch));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("graph %s (%d ops), cluster %s (%d devices), %d fresh placements in batches of %d, %u hardware threads\n",
              graph.name.c_str(), static_cast<int>(graph.size()), cluster.name.c_str(), cluster.size(), samples, batch,
              cores);
  std::printf("load average at start: %s\n", loadavg().c_str());
  std::fflush(stdout);

  std::vector<Run> runs;
  std::vector<double> reference;
  for (int threads : {1, static_cast<int>(cores)}) {
    EnvOptions o;
    o.threads = threads;
    Environment env(graph, cluster, o);
    std::vector<double> steps;
    Run r;
    r.what = "local, " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : "");
    r.seconds = evaluate_all(env, batches, &steps);
    r.samples = samples;
    if (reference.empty()) reference = steps;
    r.equal = steps == reference;
    runs.push_back(r);
    std::printf("  %-32s %8.1f placements/s\n", r.what.c_str(), r.samples / r.seconds);
    std::fflush(stdout);
    if (cores == 1) break;
  }

  std::vector<std::pair<int, int>> plan;  // (workers, slow_ms)
  for (int count : worker_counts) plan.push_back({count, 0});
  if (slow_ms > 0)
    for (int count : worker_counts) plan.push_back({count, slow_ms});
  for (auto [count, slow] : plan) {
    const int n = slow > 0 ? std::min(samples, slow_samples) : samples;
    const std::vector<std::vector<Placement>> these(batches.begin(), batches.begin() + (n + batch - 1) / batch);
    service::WorkerPoolOptions po;
    po.worker_wait_s = 120;
    po.prefetch = prefetch;
    auto pool = std::make_shared<service::WorkerPool>(po);
    std::vector<pid_t> pids;
    for (int w = 0; w < count; ++w)
      pids.push_back(spawn_worker(placer, pool->endpoint(), "w" + std::to_string(w), slow));
    if (pool->wait_for_workers(count, 120) < count) throw InputError("workers did not connect");
    EnvOptions o;
    o.remote = pool;
    Environment env(graph, cluster, o);
    Run r;
    r.what = std::to_string(count) + " worker process" + (count > 1 ? "es" : "") +
             (slow > 0 ? ", +" + std::to_string(slow) + " ms each" : "");
    r.slow_ms = slow;
    r.workers = count;
    // Warm-up: the problem goes to every worker and each builds its environment.
    const auto warm = random_placements(scratch, 4 * count, 999);
    const auto t0 = Clock::now();
    env.evaluate_batch(warm);
    r.setup_s = seconds_since(t0);
    std::vector<double> steps;
    r.seconds = evaluate_all(env, these, &steps);
    r.samples = static_cast<int>(steps.size());
    r.equal = std::equal(steps.begin(), steps.end(), reference.begin());
    runs.push_back(r);
    std::printf("  %-32s %8.1f placements/s (first batch %.3f s), results %s\n", r.what.c_str(), r.samples / r.seconds,
                r.setup_s, r.equal ? "equal to local" : "DIFFER FROM LOCAL");
    std::fflush(stdout);
    for (pid_t pid : pids) kill(pid, SIGTERM);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  }
  std::printf("load average at end: %s\n\n", loadavg().c_str());

  const double base = runs[0].samples / runs[0].seconds;
  const double sim_ms = 1000.0 / base;
  std::printf("| evaluation | placements/s | vs local 1 thread | vs ideal | first batch (s) | results equal local |\n");
  std::printf("|---|---:|---:|---:|---:|---|\n");
  for (const Run& r : runs) {
    const double rate = r.samples / r.seconds;
    // ideal for the --slow-ms runs: every worker busy all the time
    const std::string ideal =
        r.slow_ms > 0 ? std::to_string(static_cast<int>(100 * rate / (r.workers * 1000.0 / (r.slow_ms + sim_ms)))) + "%"
                      : "-";
    char setup[32] = "-";
    if (r.setup_s > 0) std::snprintf(setup, sizeof setup, "%.3f", r.setup_s);
    std::printf("| %s | %.1f | %.2fx | %s | %s | %s |\n", r.what.c_str(), rate, rate / base, ideal.c_str(), setup,
                r.equal ? "yes" : "NO");
  }
  bool ok = true;
  for (const Run& r : runs) ok = ok && r.equal;
  return ok ? 0 : 1;
}
