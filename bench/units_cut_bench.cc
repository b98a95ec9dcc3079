// How much of the best placement a search finds survives the learned policy's
// units: local_search@2,000's placement of a graph, contracted to the units the
// gnn places (co-location groups coarsened to at most N; each unit on the device
// of its first op) and expanded back, simulated. A unit count whose cut is far
// slower than the placement itself caps every policy over those units. Rows for
// the units as they were (plain coarsening: weights merged first) and with
// `policy.state_units` (parameters and their updates kept apart from their
// layers), and with `policy.layer_units` beside it (merges inside a model block
// first). Prints one Markdown row per unit count.
//
//   units_cut_bench GRAPH.json --name NAME --cluster k80x4 [--units 256,128,64,32] [--seed 1] [--budget 2000]
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "../agent/src/features.h"
#include "bench_help.h"
#include "heldout_common.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"

using namespace placer;

namespace {

const char* kUsage =
    "units_cut_bench GRAPH.json --name NAME --cluster PRESET [--units 256,128,64,32] [--seed 1] [--budget 2000]\n"
    "  local_search's placement cut to the learned policy's units: plain, with policy.state_units, and with\n"
    "  state_units and layer_units; one Markdown row per unit count (bench/results/learned_heldout.md, \"The policy's "
    "units\").\n";

std::vector<int32_t> int_list(const std::string& text, const std::string& field) {
  std::vector<int32_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw InputError(field + ": expected a comma-separated list of integers, got '" + text + "'");
    }
    if (out.back() < 1) throw InputError(field + ": every unit count must be >= 1, got " + item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  try {
    std::string graph_path, name, cluster = "k80x4";
    std::vector<int32_t> units = {256, 128, 64, 32};
    uint64_t seed = 1;
    int64_t budget = 2000;
    for (int i = 1; i < argc; ++i) {
      const std::string k = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw InputError(k + ": expected a value");
        return argv[++i];
      };
      if (k == "--name")
        name = value();
      else if (k == "--cluster")
        cluster = value();
      else if (k == "--units")
        units = int_list(value(), "--units");
      else if (k == "--seed")
        seed = std::stoull(value());
      else if (k == "--budget")
        budget = std::stoll(value());
      else if (!k.empty() && k[0] == '-')
        throw InputError("unknown option " + k + "\n" + kUsage);
      else
        graph_path = k;
    }
    if (graph_path.empty()) throw InputError(std::string("a graph file is required\n") + kUsage);
    if (name.empty()) name = graph_path;
    Environment env(placer::bench::graph_file(graph_path), resolve_cluster(cluster));
    const PlaceResult ls = make_placer("local_search")->place(placer::bench::context(env, seed, budget));
    const double best = env.simulate(ls.placement).step_s;
    const int32_t groups = colocation_groups(env.graph()).size();
    for (int32_t n : units) {
      std::printf("| %s | %s | %d | %.3f | %d |", name.c_str(), cluster.c_str(), groups, best * 1e3, n);
      CoarsenOptions state_apart, state_and_layers;
      state_apart.state_apart = state_and_layers.state_apart = true;
      state_and_layers.layers_first = true;
      for (const CoarsenOptions& how : {CoarsenOptions{}, state_apart, state_and_layers}) {
        PolicyInputOptions po;
        po.max_units = n;
        po.coarsen = how;
        const PolicyInput p = make_policy_input(env.graph(), env.cluster(), *env.costs(), po);
        const double cut = env.simulate(p.expand(p.contract(ls.placement))).step_s;
        std::printf(" %d | %.3f %+.1f%% |", p.n, cut * 1e3, 100.0 * (cut / best - 1.0));
      }
      std::printf("\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
