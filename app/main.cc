// placer: learns where to run each operator of a neural network.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/graphs/error.h"
#include "placer/runtime/runtime.h"

namespace {

// "" when the first word names a command, and, for a command of commands (graph, query), the second word
// one of them; else what is unknown and the known names.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* parent = &app;
  std::string path = "placer";
  for (int i = 1; i < argc && i <= 2 && argv[i][0] != '-'; ++i) {
    const std::vector<CLI::App*> subs = parent->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    std::string known;
    CLI::App* found = nullptr;
    for (CLI::App* sub : subs) {
      if (sub->get_name() == argv[i]) found = sub;
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found)
      return "unknown command '" + std::string(argv[i]) + "' (" + (i == 1 ? "commands" : path + " commands") + ": " +
             known + "; " + path + " --help)";
    parent = found;
    path += " " + found->get_name();
  }
  return "";
}

}  // namespace

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
  // A word that is no command: name it and the commands (CLI11 says "A subcommand is required").
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "error: %s\n", unknown.c_str());
    return 2;
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
