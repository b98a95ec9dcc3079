// Pipeline dp against single device and the expert's equal stages, on the
// simulator: one mini-batch of M micro-batches under GPipe and 1F1B.
//   pipeline_dp_bench [cluster] [graph...]     (default: k80x4 mlp transformer;
//   mlp with 8 layers of width 4096 and batch 512, the rest at the builders' defaults)
// Prints a Markdown table (bench/results/pipeline_dp.md) and the stage
// report of dp's split for each graph at M = 16 under 1F1B.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench_help.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/simulator.h"
#include "placer/env/stage_report.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/pipeline.h"

namespace placer {
namespace {

bool is_split_op(const Op& op) {
  return op.phase == Phase::Forward && op.type != op_types::kParam && op.type != op_types::kInput;
}

// The expert's cut: the forward ops other than params and inputs in op order,
// in `stages` runs of equal count; a param or input with its first consumer,
// backward and update ops with their forward op.
Placement equal_stages(const Graph& g, int32_t stages) {
  std::vector<int32_t> split;
  for (int32_t v = 0; v < g.size(); ++v)
    if (is_split_op(g.op(OpId(v)))) split.push_back(v);
  Placement p;
  p.device_of.assign(g.size(), DeviceId(-1));
  for (size_t k = 0; k < split.size(); ++k)
    p.device_of[split[k]] = DeviceId(static_cast<int32_t>(k * stages / split.size()));
  for (int32_t v = g.size() - 1; v >= 0; --v) {  // consumers come later
    if (g.op(OpId(v)).phase != Phase::Forward || p.device_of[v].value >= 0) continue;
    p.device_of[v] = DeviceId(0);
    for (OpId c : g.consumers(OpId(v)))
      if (g.op(c).phase == Phase::Forward) {
        p.device_of[v] = p.device_of[c.value];
        break;
      }
  }
  for (int32_t v = 0; v < g.size(); ++v)
    if (g.op(OpId(v)).phase != Phase::Forward) p.device_of[v] = p.device_of[g.op(OpId(v)).forward.value];
  return p;
}

struct Run {
  StepResult result;
  std::vector<TimelineEvent> timeline;
};

Run simulate_minibatch(const Graph& g, const Cluster& c, const Placement& placement, PipelineSpec spec) {
  const PipelineGraph p = make_pipeline_graph(g, spec);
  Run run;
  run.result = simulate(p.graph, p.expand(placement), c, CostModel::roofline(p.graph, c), {}, &run.timeline);
  return run;
}

std::string seconds(const StepResult& r) {
  if (!r.ok()) return "OOM";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", r.step_s);
  return buf;
}

void bench_graph(const std::string& name, const Cluster& c, std::string* reports) {
  BuilderOptions options;
  if (name == "mlp") options.values = {{"layers", 8}, {"batch", 512}, {"width", 4096}};
  const Graph g = build_graph(name, options);
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB})
    for (int M : {4, 16}) {
      const PipelineSpec spec{M, schedule};
      const Run single = simulate_minibatch(g, c, single_device(g, DeviceId(0)), spec);
      const Run expert = simulate_minibatch(g, c, equal_stages(g, c.size()), spec);
      EnvOptions o;
      o.objective = Objective::Pipeline;
      o.pipeline = spec;
      Environment env(g, c, o);
      PlaceContext ctx{&g, &c, &env};
      std::string dp_cell = "none fits", model = "", stages = "", place_ms = "";
      try {
        const PlaceResult r = make_placer("dp")->place(ctx);
        const Run dp = simulate_minibatch(g, c, r.placement, spec);
        char buf[160];
        std::snprintf(buf, sizeof buf, "%.4f", r.stats.at("pipeline_model_s"));
        model = buf;
        stages = std::to_string(static_cast<int>(r.stats.at("stages")));
        std::snprintf(buf, sizeof buf, "%.1f", 1e3 * r.place_seconds);
        place_ms = buf;
        dp_cell = seconds(dp.result);
        if (getenv("PIPELINE_DP_BENCH_DEBUG") && !dp.result.ok())
          std::fprintf(stderr, "%s\n%s\n", dp.result.message.c_str(), r.note.c_str());
        if (M == 16 && schedule == PipelineSchedule::OneFOneB)
          *reports +=
              "### " + name + ", dp, 1f1b, M = 16 (simulated)\n\n```\n" +
              stage_report_text(stage_report(g, r.placement, c, CostModel::roofline(g, c), spec, &dp.timeline)) +
              "```\n\n";
      } catch (const NoFeasiblePlacement&) {
        dp_cell = "none fits";
      }
      std::printf("| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", name.c_str(), schedule_name(schedule), M,
                  seconds(single.result).c_str(), seconds(expert.result).c_str(), dp_cell.c_str(), model.c_str(),
                  stages.c_str(), place_ms.c_str());
      std::fflush(stdout);
    }
}

}  // namespace
}  // namespace placer

constexpr char kUsage[] =
    "usage: pipeline_dp_bench [CLUSTER=k80x4] [GRAPH...=mlp transformer]\n"
    "Pipeline dp against one device and the expert's equal stages, simulated, GPipe and 1F1B.\n";

int main(int argc, char** argv) try {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  using namespace placer;
  const std::string cluster = argc > 1 ? argv[1] : "k80x4";
  std::vector<std::string> graphs;
  for (int i = 2; i < argc; ++i) graphs.push_back(argv[i]);
  if (graphs.empty()) graphs = {"mlp", "transformer"};
  const Cluster c = cluster_preset(cluster);
  std::printf("Mini-batch time (s, simulated) on %s\n\n", cluster.c_str());
  std::printf("| graph | schedule | M | single | expert equal stages | dp | dp model | dp stages | dp place ms |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  std::string reports;
  for (const std::string& g : graphs) bench_graph(g, c, &reports);
  std::printf("\n%s", reports.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
