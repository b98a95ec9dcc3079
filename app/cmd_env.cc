#include <CLI/CLI.hpp>

#include "commands.h"

namespace placer::cli {

void add_env_commands(CLI::App& app) {}

}  // namespace placer::cli
