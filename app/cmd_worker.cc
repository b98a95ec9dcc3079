// `placer worker`: evaluates placements for a trainer's (or a service job's)
// WorkerPool on this machine, simulated or measured on its own devices.
#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "commands.h"
#include "placer/service/server.h"
#include "placer/service/workers.h"

namespace placer::cli {

namespace {

struct WorkerArgs {
  std::string endpoint;
  service::WorkerOptions options;
};

}  // namespace

void add_worker_commands(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Evaluate placements for a trainer elsewhere: connect to its --workers-bind endpoint (docs/workers.md)");
  cmd->footer(
      "Example: placer train --config configs/nmt_k80x4.yaml --workers-bind 'tcp://*:5557' --min-workers 2\n"
      "         placer worker --connect tcp://TRAINER-HOST:5557     (on each box)\n"
      "Simulated tasks run on any worker; measured ones only on a worker whose --devices has every\n"
      "device of the trainer's cluster. Stops on SIGINT/SIGTERM; a lost worker's placements go to others.");
  cmd->add_option("--connect", args->endpoint, "The pool's endpoint, e.g. tcp://10.0.0.5:5557")->required();
  cmd->add_option("--devices", args->options.devices,
                  "This machine's devices for measured tasks: cpu:N, cpu:8+cuda:0, ...")
      ->capture_default_str();
  cmd->add_option("--threads", args->options.threads, "Evaluations at a time (measurements always run alone)")
      ->capture_default_str();
  cmd->add_option("--name", args->options.name, "Name in the trainer's log (default host:pid)");
  cmd->add_option("--heartbeat-ms", args->options.heartbeat_ms,
                  "Heartbeat interval in ms, at most 60000; the worker waits liveness (3) intervals of the "
                  "larger of its own and the pool's before it reconnects")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", args->options.verbose, "A log line per task");
  // Testing only (tests/cli/workers.sh): a worker that holds its task this long.
  cmd->add_option("--slow-ms", args->options.slow_ms, "Testing: wait this long before each evaluation")->group("");
  cmd->callback([args]() {
    // Signals go to this thread only; the worker's threads inherit the mask.
    service::block_shutdown_signals();
    std::atomic<bool> stop{false}, finished{false};
    std::exception_ptr error;
    std::thread run([&] {
      try {
        service::run_worker(args->endpoint, args->options, stop);
      } catch (...) {
        error = std::current_exception();
      }
      finished = true;
    });
    const int sig = service::wait_for_shutdown_signal(&finished);
    if (sig) std::fprintf(stderr, "placer worker: %s received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stop = true;
    run.join();
    if (error) std::rethrow_exception(error);
  });
}

}  // namespace placer::cli
