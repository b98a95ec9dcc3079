// Simulator speed: simulated operators per second on one core.
//
//   build/bench/sim_bench [--ops 50000] [--reps 20] [--cluster k80x8] [--contention F] [--builder NAME key=value ...]
//
// --contention F: all CPU devices of the cluster form one host (contention
// group, copies made on the destination) with every op F times slower while
// all of them are busy, as a calibrated cpu:N model has: the rate-based path.
// Graphs: a random layered DAG of --ops operators (1-3 inputs from the last
// 64 ops, an occasional long skip, outputs of 4 KiB-4 MiB), and optionally a
// benchmark builder's training graph. Placements: random per op (the most
// transfers), contiguous (one block per device) and round robin. Prints a
// markdown table.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "placer/env/cost_model.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"

using namespace placer;

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of this thread: the machine may be shared, and the figure is per core.
double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Graph random_layered_dag(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.name = "random_dag_" + std::to_string(n);
  for (int64_t o = 0; o < n; ++o) {
    Op op;
    op.name = "op" + std::to_string(o);
    op.type = "aten::add.Tensor";
    const int k = o == 0 ? 0 : 1 + static_cast<int>(rng() % 3);
    for (int j = 0; j < k; ++j) {
      const int64_t back = (rng() % 50 == 0) ? 1 + static_cast<int64_t>(rng() % o)
                                             : 1 + static_cast<int64_t>(rng() % std::min<int64_t>(o, 64));
      op.inputs.push_back({OpId(static_cast<int32_t>(o - back)), 0});
    }
    op.outputs.push_back(TensorSpec{{static_cast<int64_t>(1024 << (rng() % 11))}, DType::Float32});
    op.flops = 1e6 * static_cast<double>(1 + rng() % 1000);
    g.add_op(std::move(op));
  }
  return g;
}

struct Row {
  std::string graph, placement;
  int64_t ops;
  double context_ms, sim_ms, ops_per_s, cold_ops_per_s, wall_ops_per_s, step_s;
  int64_t transfer_bytes;
};

Row run(const Graph& g, const std::string& pname, const Placement& p, const Cluster& cluster, const CostModel& costs,
        int reps) {
  Row row{g.name, pname, g.size(), 0, 0, 0, 0, 0, 0, 0};
  double c0 = thread_cpu_s();
  const SimContext ctx(g);
  row.context_ms = 1e3 * (thread_cpu_s() - c0);
  StepResult r = simulate(ctx, p, cluster, costs);  // warm the workspace
  c0 = thread_cpu_s();
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) r = simulate(ctx, p, cluster, costs);
  const double s = thread_cpu_s() - c0;
  row.wall_ops_per_s = static_cast<double>(g.size()) * reps / std::chrono::duration<double>(Clock::now() - t0).count();
  row.sim_ms = 1e3 * s / reps;
  row.ops_per_s = static_cast<double>(g.size()) * reps / s;
  c0 = thread_cpu_s();
  for (int i = 0; i < reps; ++i) r = simulate(g, p, cluster, costs);  // context built per call
  row.cold_ops_per_s = static_cast<double>(g.size()) * reps / (thread_cpu_s() - c0);
  row.step_s = r.step_s;
  row.transfer_bytes = r.transfer_bytes;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t ops = 50000;
  int reps = 20;
  std::string cluster_spec = "k80x8";
  std::string builder;
  double contention = 0.0;
  BuilderOptions bopts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ops")
      ops = std::atoll(next().c_str());
    else if (a == "--reps")
      reps = std::atoi(next().c_str());
    else if (a == "--cluster")
      cluster_spec = next();
    else if (a == "--builder")
      builder = next();
    else if (a == "--contention")
      contention = std::atof(next().c_str());
    else if (a.find('=') != std::string::npos)
      bopts.values[a.substr(0, a.find('='))] = std::atoll(a.substr(a.find('=') + 1).c_str());
    else {
      std::fprintf(
          stderr,
          "usage: sim_bench [--ops N] [--reps R] [--cluster SPEC] [--contention F] [--builder NAME key=value ...]\n");
      return 2;
    }
  }
  if (ops < 1 || reps < 1) {
    std::fprintf(stderr, "error: --ops and --reps must be >= 1\n");
    return 2;
  }
  try {
    const Cluster cluster = resolve_cluster(cluster_spec);
    const int32_t D = cluster.size();
    std::vector<Graph> graphs;
    graphs.push_back(random_layered_dag(ops, 1));
    if (!builder.empty()) graphs.push_back(build_graph(builder, bopts));

    std::printf(
        "CPU time of one thread (wall-clock rate in the last column; it is lower when the machine is shared)\n\n");
    std::printf(
        "| graph | ops | placement | context build ms | simulate ms | ops/s (prepared) | ops/s (incl. context) | step "
        "s | transfer MB | ops/s wall |\n");
    std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Graph& g : graphs) {
      CostModel costs = CostModel::roofline(g, cluster);
      if (contention > 0) {
        std::vector<DeviceId> cpus;
        for (int32_t d = 0; d < D; ++d)
          if (cluster.devices[d].kind == DeviceKind::Cpu) cpus.push_back(DeviceId(d));
        for (int64_t o = 0; o < g.size(); ++o)
          for (DeviceId d : cpus)
            costs.set_contended_seconds(OpId(static_cast<int32_t>(o)), d,
                                        contention * costs.op_seconds(OpId(static_cast<int32_t>(o)), d));
        costs.set_contention_group(cpus);
      }
      std::mt19937_64 rng(2);
      Placement random, blocks, rr;
      for (int64_t o = 0; o < g.size(); ++o) {
        random.device_of.push_back(DeviceId(static_cast<int32_t>(rng() % D)));
        blocks.device_of.push_back(DeviceId(static_cast<int32_t>(o * D / g.size())));
        rr.device_of.push_back(DeviceId(static_cast<int32_t>(o % D)));
      }
      for (const auto& [name, p] :
           std::vector<std::pair<std::string, Placement>>{{"random", random},
                                                          {"contiguous", blocks},
                                                          {"round_robin", rr},
                                                          {"single", single_device(g, DeviceId(0))}}) {
        const Row r = run(g, name, p, cluster, costs, reps);
        std::printf("| %s | %lld | %s | %.1f | %.2f | %.3g | %.3g | %.4g | %.1f | %.3g |\n", r.graph.c_str(),
                    static_cast<long long>(r.ops), r.placement.c_str(), r.context_ms, r.sim_ms, r.ops_per_s,
                    r.cold_ops_per_s, r.step_s, r.transfer_bytes / 1e6, r.wall_ops_per_s);
      }
      const double c0 = thread_cpu_s();
      const LowerBound lb = lower_bound_parts(g, cluster, costs);
      std::printf(
          "\nlower bound (%s, %s): %.4g s (critical path %.4g, with joins %.4g, average work %.4g, LP %.4g, "
          "co-location "
          "group %.4g) in %.1f ms CPU\n\n",
          g.name.c_str(), cluster.name.c_str(), lb.value(), lb.critical_path_s, lb.joins_s, lb.average_work_s, lb.lp_s,
          lb.group_s, 1e3 * (thread_cpu_s() - c0));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
