// What `placer place` and `placer baseline` share: the graph, cluster, seed,
// budgets, method options and objective of a placement, and what is made of
// them (cmd_agent.cc).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/graphs/cluster.h"

namespace placer::cli {

struct PlaceArgs {
  std::string method;
  std::string checkpoint;
  std::string policy;
  double time_budget_s = 1.0;
  bool no_refine = false;
  bool no_fast_path = false;
  std::string graph;
  std::string cluster;
  std::string devices;
  std::string output;
  std::string split_spec;
  std::string profile;  // `placer profile`'s file: the simulator calibrated on it instead of the roofline
  uint64_t seed = 0;
  double time_limit_s = 60.0;
  int64_t budget = 2000;
  bool budget_given = false;  // --budget on the command line (with --policy --no-refine: placements to sample)
  std::vector<std::string> options;
  ObjectiveArgs objective;
};

Cluster cluster_of(const PlaceArgs& a);  // --cluster or --devices, exactly one
std::map<std::string, std::string> parse_options(const std::vector<std::string>& items);  // --option KEY=VALUE
void add_common(CLI::App* cmd, PlaceArgs& a);  // --graph, --cluster, --devices, --seed, --profile, budgets, --option
PlaceContext context_of(const PlaceArgs& a, const Graph& graph, const Cluster& cluster, Environment& env);
EnvOptions env_options(const PlaceArgs& a);
// "roofline costs", or "costs calibrated on P (N% of ops measured)": which simulator judged the placements.
std::string costs_note(const PlaceArgs& a, const Environment& env);
void add_baseline_command(CLI::App& app);  // cmd_baseline.cc

}  // namespace placer::cli
