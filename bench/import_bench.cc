// How long TorchScript import takes, and whether the runtime can execute what
// it produced.
//
//   import_bench MODEL.pt NAME:SHAPE:DTYPE... [--repeat N] [--forward-only] [--run]
//
// Prints one markdown table row per model: ops (forward/backward/update),
// forward GFLOP, param MB, and the wall time of import_torchscript() (load,
// freeze, execute op by op, training graph), best and median of N runs.
// --run executes the imported training step once on cpu:0 with the runtime
// and reports its status and step time (a check that every op is callable).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/validate.h"
#include "placer/runtime/runtime.h"
#include "placer/torchscript/import.h"

int main(int argc, char** argv) {
  using namespace placer;
  std::string model;
  std::vector<SampleInput> inputs;
  int repeat = 3;
  bool run = false;
  ImportOptions options;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--repeat" && i + 1 < argc) {
        repeat = std::max(1, std::atoi(argv[++i]));
      } else if (a == "--forward-only") {
        options.forward_only = true;
      } else if (a == "--run") {
        run = true;
      } else if (a == "-h" || a == "--help") {
        std::printf("usage: import_bench MODEL.pt NAME:SHAPE:DTYPE... [--repeat N] [--forward-only] [--run]\n");
        return 0;
      } else if (model.empty()) {
        model = a;
      } else {
        inputs.push_back(parse_sample_input(a));
      }
    }
    if (model.empty() || inputs.empty()) {
      std::fprintf(stderr, "usage: import_bench MODEL.pt NAME:SHAPE:DTYPE... [--repeat N] [--forward-only] [--run]\n");
      return 2;
    }

    std::vector<double> times;
    Graph g;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      g = import_torchscript(model, inputs, options);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    validate_graph(g);
    std::sort(times.begin(), times.end());
    int64_t forward = 0, backward = 0, update = 0, param_bytes = 0;
    double gflop = 0;
    for (const Op& op : g.ops()) {
      forward += op.phase == Phase::Forward;
      backward += op.phase == Phase::Backward;
      update += op.phase == Phase::Update;
      param_bytes += op.param_bytes;
      if (op.phase == Phase::Forward) gflop += op.flops / 1e9;
    }
    std::printf("| %s | %lld (%lld/%lld/%lld) | %.2f | %.1f | %.2f | %.2f |", g.name.c_str(),
                static_cast<long long>(g.size()), static_cast<long long>(forward), static_cast<long long>(backward),
                static_cast<long long>(update), gflop, static_cast<double>(param_bytes) / 1e6, times.front(),
                times[times.size() / 2]);
    if (run) {
      const Cluster cluster = parse_device_list("cpu:1");
      Runtime runtime(cluster);
      MeasureOptions measure;
      measure.warmup_steps = 1;
      measure.measured_steps = 1;
      const StepResult result = runtime.measure(g, single_device(g, DeviceId(0)), measure);
      std::printf(" %s %.3f s |", result.ok() ? "ok" : ("FAILED: " + result.message).c_str(), result.step_s);
    }
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
