// The diverse placements `placer fidelity` draws for a graph on cpu:N+cuda:0
// (env/fidelity.h, seed 1), with the profile's round-robin step over every
// device first, each with the bytes it moves and the copies it makes between a
// CPU device and the GPU and between CPU devices (as the step's plan makes
// them: plan_step, the executor's and the simulator's). Reports of
// runs before the fidelity runs saved their placements are matched to these by
// their bytes moved (bench/gpu_crossings.py).
//
//   fidelity_crossings_bench GRAPH.json CPU_DEVICES COUNT [OUT_DIR]
//
// Prints one line per placement: index, kind, bytes, cross copies (CPU<->GPU),
// their bytes, copies between CPU devices. With OUT_DIR, writes each as
// OUT_DIR/<index>.json (devices cpu:0..cpu:N-1 and cuda:0).
#include <cstdio>
#include <string>
#include <vector>

#include "placer/env/fidelity.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/graphs/exec_plan.h"
#include "placer/graphs/serialize.h"

using namespace placer;

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: fidelity_crossings_bench GRAPH.json CPU_DEVICES COUNT [OUT_DIR]\n"
                 "  the round-robin step over every device, then COUNT diverse placements (seed 1) on\n"
                 "  cpu:CPU_DEVICES+cuda:0: index, kind, bytes, CPU<->GPU copies and bytes, CPU<->CPU copies\n");
    return argc == 2 ? 0 : 2;
  }
  try {
    const Graph g = load_graph(argv[1]);
    const int ncpu = std::stoi(argv[2]);
    const int count = std::stoi(argv[3]);
    if (ncpu < 1 || count < 1) throw InputError("CPU_DEVICES and COUNT must be at least 1");
    std::vector<int32_t> device_class(ncpu, 0);
    device_class.push_back(1);
    std::vector<DeviceId> all;
    for (int d = 0; d <= ncpu; ++d) all.push_back(DeviceId(d));
    auto placements = diverse_placements(g, ncpu + 1, count, 1, device_class);
    placements.insert(placements.begin(), {"round_robin_all", round_robin_groups(g, all)});
    const ExecRules rules(g);
    StepPlan plan;
    std::vector<int32_t> device(g.size());
    int index = 0;
    for (const auto& [kind, p] : placements) {
      for (int i = 0; i < g.size(); ++i) device[i] = p.device_of[i].value;
      plan_step(rules, device.data(), ncpu + 1, plan);
      long long bytes = 0, gpu_copies = 0, gpu_bytes = 0, cpu_copies = 0;
      for (int32_t x = 0; x < plan.transfers(); ++x) {
        const int32_t t = plan.xfer_tensor[x];
        const long long b = rules.tensor_bytes[t];
        bytes += b;
        if ((device[rules.tensor_op[t]] == ncpu) != (plan.xfer_dst[x] == ncpu)) {
          ++gpu_copies;
          gpu_bytes += b;
        } else {
          ++cpu_copies;
        }
      }
      if (argc == 5) {
        NamedPlacement named;
        named.graph = g.name;
        for (int i = 0; i < g.size(); ++i) {
          const int d = p.device_of[i].value;
          named.device[g.op(OpId(i)).name] = d == ncpu ? "cuda:0" : "cpu:" + std::to_string(d);
        }
        save_placement(named, std::string(argv[4]) + "/" + std::to_string(index) + ".json");
      }
      std::printf("%d %s %lld %lld %lld %lld\n", index++, kind.c_str(), bytes, gpu_copies, gpu_bytes, cpu_copies);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fidelity_crossings_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
