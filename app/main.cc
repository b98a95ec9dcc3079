// placer: learns where to run each operator of a neural network.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "placer/graphs/error.h"
#include "placer/runtime/runtime.h"

int main(int argc, char** argv) {
  placer::configure_host_memory();  // before LibTorch's first allocation
  placer::cli::record_invocation(argc, argv);
  CLI::App app{"placer: learns where to run each operator of a neural network"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag(
      "--version", [] { return "placer " PLACER_VERSION "\n" + placer::describe(placer::build_info()); },
      "Print the version, the LibTorch and CUDA it was built with, and the GPUs it sees");
  placer::cli::add_graph_commands(app);
  placer::cli::add_runtime_commands(app);
  placer::cli::add_env_commands(app);
  placer::cli::add_fidelity_command(app);
  placer::cli::add_agent_commands(app);
  placer::cli::add_service_commands(app);
  placer::cli::add_train_commands(app);
  placer::cli::add_worker_commands(app);
  // A first word that is no command: name it and the commands (CLI11 says "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "error: unknown command '%s' (commands: %s; placer --help)\n", argv[1], known.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const placer::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
