// How long model import takes (TorchScript .pt or torch.export .pt2), and
// whether the runtime can execute what it produced.
//
//   import_bench MODEL.pt|MODEL.pt2 [NAME:SHAPE:DTYPE...] [--repeat N] [--forward-only] [--run]
//                [--eager VALUES.pt]
//
// Prints one markdown table row per model: ops (forward/backward/update),
// forward GFLOP, param MB, and the wall time of import_model() (load, execute
// op by op, training graph), best and median of N runs.
// --run executes the imported training step once on cpu:0 with the runtime
// and reports its status and step time (a check that every op is callable).
// --eager runs one step on cpu:2 (ops split by co-location group) with the
// weights and inputs of VALUES.pt (scripts/make_export_fixtures.py) and
// compares the loss and the updated parameters with eager PyTorch's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/validate.h"
#include "placer/runtime/runtime.h"

int main(int argc, char** argv) {
  using namespace placer;
  std::string model;
  std::vector<SampleInput> inputs;
  int repeat = 3;
  bool run = false;
  std::string eager;
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
      } else if (a == "--eager" && i + 1 < argc) {
        eager = argv[++i];
      } else if (a == "-h" || a == "--help") {
        std::printf(
            "usage: import_bench MODEL.pt|MODEL.pt2 [NAME:SHAPE:DTYPE...] [--repeat N] [--forward-only] [--run] "
            "[--eager VALUES.pt]\n");
        return 0;
      } else if (model.empty()) {
        model = a;
      } else {
        inputs.push_back(parse_sample_input(a));
      }
    }
    if (model.empty()) {
      std::fprintf(stderr,
                   "usage: import_bench MODEL.pt|MODEL.pt2 [NAME:SHAPE:DTYPE...] [--repeat N] [--forward-only] "
                   "[--run] [--eager VALUES.pt]\n");
      return 2;
    }

    std::vector<double> times;
    Graph g;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      g = import_model(model, inputs, options);
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
    if (!eager.empty()) {
      // Eager's weights and inputs in, eager's loss and update out.
      const auto values = load_tensor_dict(eager);
      StepValues feed;
      for (const auto& [key, v] : values) {
        if (key.rfind("feed/", 0) == 0 && g.find(key.substr(5))) feed.tensors[key.substr(5)] = v;
      }
      const Grouping groups = colocation_groups(g);
      Placement split;
      split.device_of.assign(g.size(), DeviceId(0));
      for (int32_t k = 0; k < groups.size(); ++k)
        for (OpId op : groups.members[k]) split.device_of[op.value] = DeviceId(k % 2);
      Runtime runtime(parse_device_list("cpu:2"));
      const StepValues got = runtime.run_once(g, split, 0, &feed);
      std::string loss = g.find("loss") ? "loss" : "";
      for (const Op& op : g.ops()) {
        if (!loss.empty()) break;
        if (op.phase == Phase::Forward && op.outputs.size() == 1 && op.outputs[0].shape.empty() &&
            op.type != op_types::kInput && got.tensors.count(op.name))
          loss = op.name;
      }
      const double want = values.at("expect/loss").at(0);
      const double have = got.tensors.count(loss) ? got.tensors.at(loss).at(0) : NAN;
      double worst = 0;  // relative to the parameter's largest magnitude
      for (const auto& [key, v] : values) {
        if (key.rfind("expect/", 0) != 0 || key == "expect/loss") continue;
        const auto& mine = got.tensors.at(key.substr(7));
        double diff = 0, scale = 1;
        for (size_t k = 0; k < v.size() && k < mine.size(); ++k) {
          diff = std::max(diff, std::fabs(static_cast<double>(mine[k]) - v[k]));
          scale = std::max(scale, std::fabs(static_cast<double>(v[k])));
        }
        worst = std::max(worst, diff / scale);
      }
      const double loss_err = std::fabs(have - want) / std::max(1.0, std::fabs(want));
      std::printf(" loss %.6g vs eager %.6g (rel err %.1e), params after SGD max rel err %.1e: %s |", have, want,
                  loss_err, worst, loss_err <= 1e-4 && worst <= 1e-4 ? "match" : "MISMATCH");
    }
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
