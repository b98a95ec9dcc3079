// Each component registers its subcommands on the `placer` CLI11 app.
// A subcommand's callback throws InputError (or a subclass) for bad input;
// main() prints "error: <what>" to stderr and exits 2.
#pragma once

namespace CLI {
class App;
}

namespace placer {
struct MeasureOptions;  // runtime.h
}

namespace placer::cli {

// The measurement protocol's options (--warmup, --steps, --max-steps, --target, --budget, --timeout, --seed).
void add_measure_options(CLI::App* cmd, MeasureOptions* options);

void add_graph_commands(CLI::App& app);    // graph build|import|info|validate   (cmd_graph.cc)
void add_runtime_commands(CLI::App& app);  // measure, profile                   (cmd_runtime.cc)
void add_env_commands(CLI::App& app);      // simulate, fidelity                 (cmd_env.cc)
void add_agent_commands(CLI::App& app);    // place, baseline, train             (cmd_agent.cc)
void add_service_commands(CLI::App& app);  // serve, query                       (cmd_service.cc)
void add_train_commands(CLI::App& app);    // train                              (cmd_train.cc)
void add_worker_commands(CLI::App& app);   // worker                             (cmd_worker.cc)

}  // namespace placer::cli
