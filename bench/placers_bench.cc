// Speed of the algorithmic placers against the targets of issue 5:
//  - dp on a ~200-op NMT graph on 4 devices: < 1 s;
//  - ilp proves optimality on a 20-op graph on 4 devices in < 10 s and
//    reports a gap on a 40-op graph;
//  - list schedulers and mincut on a ~10,000-op graph: < 1 s.
// Usage: build/bench/placers_bench [--quick]   (prints a Markdown report)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "bench_help.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"

using namespace placer;

namespace {

struct Run {
  PlaceResult result;
  double step_s = 0.0;
  double wall_s = 0.0;
};

Run place(const std::string& method, const Graph& graph, const Cluster& cluster, Environment& env,
          double time_limit = 60.0, std::map<std::string, std::string> options = {}) {
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.time_limit_s = time_limit;
  ctx.options = std::move(options);
  const auto t0 = std::chrono::steady_clock::now();
  Run r;
  r.result = make_placer(method)->place(ctx);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.step_s = env.simulate(r.result.placement).step_s;
  return r;
}

// A random layered DAG of n ops (seeded), 4 ops per layer after one source:
// each op reads 1-2 ops of the layer before, costs 1-9 ms (profile) and
// outputs 4-32 MiB (0.4-3 ms over a p100x4 PCIe link).
std::pair<Graph, Profile> layered_dag(int n, uint64_t seed, const Cluster& cluster) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.name = "dag" + std::to_string(n);
  Profile prof;
  prof.graph = g.name;
  std::vector<OpId> ids;
  constexpr int kWidth = 4;
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = i == 0 ? "placer::input" : "aten::relu";
    if (i > 0) {
      const int layer = (i - 1) / kWidth;
      const int lo = layer == 0 ? 0 : 1 + (layer - 1) * kWidth, hi = layer == 0 ? 1 : 1 + layer * kWidth;
      const int fan = 1 + static_cast<int>(rng() % 2);
      for (int f = 0; f < fan; ++f) {
        const OpId in = ids[lo + static_cast<int>(rng() % (hi - lo))];
        bool dup = false;
        for (auto& r : op.inputs) dup |= r.op == in;
        if (!dup) op.inputs.push_back({in, 0});
      }
    }
    op.outputs.push_back(TensorSpec{{static_cast<int64_t>((1 + rng() % 8) << 20)}, DType::Float32});
    ids.push_back(g.add_op(std::move(op)));
    const double ms = i == 0 ? 0.0 : 1.0 + static_cast<double>(rng() % 9);
    for (const Device& d : cluster.devices) prof.ops.push_back({"op" + std::to_string(i), "", d.name, "", ms * 1e-3});
  }
  return {g, prof};
}

BuilderOptions nmt_options(int64_t steps) {
  BuilderOptions o;
  o.values = {{"layers", 2}, {"hidden", 512}, {"steps", steps}, {"batch", 64}, {"vocab", 10000}};
  return o;
}

constexpr char kUsage[] =
    "usage: placers_bench [--quick]\n"
    "Speed of the algorithmic placers (dp, ilp, list schedulers, mincut) against issue 5's targets.\n";

}  // namespace

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const Cluster p100 = cluster_preset("p100x4");
  std::printf("# Placer speed (issue 5 targets)\n\n");

  // 1. dp on a ~200-op NMT graph.
  {
    int64_t steps = 1;
    Graph g = build_graph("nmt", nmt_options(steps));
    while (g.size() < 200) g = build_graph("nmt", nmt_options(++steps));
    Environment env(g, p100);
    const Run r = place("dp", g, p100, env);
    std::printf("## dp on NMT (%lld ops, steps=%lld) on p100x4\n\n", static_cast<long long>(g.size()),
                static_cast<long long>(steps));
    std::printf("| time to place (s) | simulated step (ms) | target |\n|---|---|---|\n| %.3f | %.3f | < 1 s: %s |\n\n",
                r.result.place_seconds, r.step_s * 1e3, r.result.place_seconds < 1.0 ? "met" : "MISSED");
    std::printf("note: %s\n\n", r.result.note.c_str());
  }

  // 2. ilp on 20- and 40-op random DAGs on 4 devices.
  std::printf("## ilp on random layered DAGs (ops cost 1-9 ms, 4-32 MiB tensors) on p100x4\n\n");
  std::printf(
      "| ops | seed | time limit (s) | time (s) | proven optimal | incumbent (ms) | bound (ms) | gap | "
      "warm start (ms) | simulated step (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : {20, 40}) {
    const int seeds = quick ? 1 : 3;
    for (int s = 0; s < seeds; ++s) {
      auto [g, prof] = layered_dag(n, 100 + s, p100);
      EnvOptions eo;
      eo.profile = prof;
      Environment env(g, p100, eo);
      const double limit = n == 20 ? 10.0 : 20.0;
      const Run r = place("ilp", g, p100, env, limit);
      const auto& st = r.result.stats;
      std::printf("| %d | %d | %.0f | %.2f | %s | %.3f | %.3f | %.1f%% | %.3f | %.3f |\n", n, 100 + s, limit,
                  r.result.place_seconds, st.at("optimal") > 0 ? "yes" : "no", st.at("incumbent_s") * 1e3,
                  st.at("bound_s") * 1e3, 100 * st.at("gap"),
                  st.count("warm_start_s") ? st.at("warm_start_s") * 1e3 : std::nan(""), r.step_s * 1e3);
    }
  }
  std::printf("\n");

  // 3. List schedulers and mincut on ~10,000 ops.
  {
    int64_t steps = 10;
    Graph g = build_graph("nmt", nmt_options(steps));
    while (g.size() < 10000) {
      steps = steps * 10000 / g.size() + 1;
      g = build_graph("nmt", nmt_options(steps));
    }
    Environment env(g, p100);
    std::printf("## List schedulers and mincut on NMT (%lld ops, steps=%lld) on p100x4\n\n",
                static_cast<long long>(g.size()), static_cast<long long>(steps));
    std::printf("| method | time to place (s) | simulated step (ms) | target < 1 s |\n|---|---|---|---|\n");
    for (const char* m : {"m_topo", "m_etf", "m_sct", "heft", "mincut", "expert", "dp"}) {
      const Run r = place(m, g, p100, env);
      std::printf("| %s | %.3f | %.3f | %s |\n", m, r.result.place_seconds, r.step_s * 1e3,
                  r.result.place_seconds < 1.0 ? "met" : "missed");
    }
    std::printf("\n");
  }
  return 0;
}
