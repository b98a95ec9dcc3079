// Pipelined vs plain training steps on cpu:2, measured and simulated
// (results in bench/results/pipeline_cpu2.md; bench/run_pipeline_cpu2.sh runs it).
//
// Per graph (mlp, transformer): the plain step at batch B on one device and on
// two contiguous stages, and one mini-batch of M = 4 micro-batches of B / 4 on
// the same two stages under GPipe and 1F1B (the same work and the same update
// as the plain step). Measured: the configurations are measured in rounds
// (A B C D A B C D ...; each round one warm-up step and two measured steps of
// each, every sample kept), until every median's 95% interval is within 2% or
// --rounds rounds. Simulated: the roofline model of cpu:2 and the model
// calibrated on a profile of that graph taken on this machine (Runtime::profile).
//
//   build/bench/pipeline_cpu2_bench [--rounds 15] [--graphs mlp,transformer]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_help.h"
#include "placer/env/cost_model.h"
#include "placer/env/simulator.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

using namespace placer;

namespace {

constexpr int kMicrobatches = 4;

struct Config {
  std::string name;
  Graph graph;
  Placement placement;
  std::vector<double> samples;
  StepResult measured;
  double roofline_s = 0, calibrated_s = 0;
};

// Contiguous stages: the forward ops split into runs of equal count in op
// order, backward and update ops with their forward (or param) op.
Placement two_stages(const Graph& g) {
  std::vector<int32_t> forward;
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase == Phase::Forward) forward.push_back(i);
  Placement p;
  p.device_of.assign(g.size(), DeviceId(0));
  for (size_t k = 0; k < forward.size(); ++k) p.device_of[forward[k]] = DeviceId(k * 2 >= forward.size() ? 1 : 0);
  const Grouping groups = colocation_groups(g);
  for (const auto& members : groups.members)
    for (OpId op : members) p.device_of[op.value] = p.device_of[members.front().value];
  return p;
}

BuilderOptions options_of(const std::string& name, int64_t batch) {
  BuilderOptions o;
  if (name == "mlp")
    o.values = {{"batch", batch}, {"input", 512}, {"width", 512}, {"classes", 64}, {"layers", 6}};
  else
    o.values = {{"batch", batch}, {"layers", 2}, {"dec_layers", 2}, {"d_model", 128},
                {"heads", 4},     {"ffn", 512},  {"seq", 32},       {"vocab", 1000}};
  return o;
}

std::vector<Config> configs_of(const std::string& name) {
  const int64_t batch = name == "mlp" ? 512 : 32;
  const Graph plain = build_graph(name, options_of(name, batch));
  const Graph micro = build_graph(name, options_of(name, batch / kMicrobatches));
  const Placement stages = two_stages(micro);
  std::vector<Config> out;
  out.push_back({"plain, one device", plain, single_device(plain, DeviceId(0))});
  out.push_back({"plain, 2 stages", plain, two_stages(plain)});
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    PipelineGraph p = make_pipeline_graph(micro, {kMicrobatches, s});
    const Placement placement = p.expand(stages);
    out.push_back({std::string("pipelined M=4 ") + schedule_name(s) + ", 2 stages", std::move(p.graph), placement});
  }
  return out;
}

// Rounds of every configuration until each median's interval is within 2%.
void measure_in_rounds(Runtime& rt, std::vector<Config>& configs, int rounds) {
  MeasureOptions o;
  o.warmup_steps = 1;
  for (int r = 0; r < rounds; ++r) {
    bool narrow = r > 0;
    for (Config& c : configs) {
      const std::vector<std::vector<double>> prior = {c.samples};
      o.measured_steps = o.max_steps = static_cast<int>(c.samples.size()) + 2;  // the prior samples count
      c.measured = rt.measure_interleaved(c.graph, {c.placement}, o, &prior).at(0);
      if (!c.measured.ok()) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), c.measured.message.c_str());
        std::exit(1);
      }
      c.samples = c.measured.samples_s;
      narrow = narrow && median_interval(c.samples).relative_halfwidth() <= 0.02;
    }
    if (narrow && r >= 2) break;
  }
}

void simulate_all(Runtime& rt, std::vector<Config>& configs) {
  const Cluster& cluster = rt.cluster();
  Profile plain_profile, piped_profile;
  for (Config& c : configs) {
    const bool piped = pipeline_spec_of(c.graph).has_value();
    Profile& profile = piped ? piped_profile : plain_profile;
    if (profile.ops.empty()) profile = rt.profile(c.graph, ProfileOptions{});  // one per graph: the op names match
    c.roofline_s = simulate(c.graph, c.placement, cluster, CostModel::roofline(c.graph, cluster)).step_s;
    c.calibrated_s = simulate(c.graph, c.placement, cluster, CostModel::calibrated(c.graph, cluster, profile)).step_s;
  }
}

void print_table(const std::string& name, const std::vector<Config>& configs) {
  std::printf("\n### %s (%d ops plain, %d pipelined)\n\n", name.c_str(), static_cast<int>(configs[0].graph.size()),
              static_cast<int>(configs.back().graph.size()));
  std::printf(
      "| configuration | measured median | %s interval | samples | vs plain, 2 stages | simulated, calibrated | "
      "calibrated / measured | simulated, roofline |\n|---|---|---|---|---|---|---|---|\n",
      interval_confidence_label().c_str());
  const double base = configs[1].measured.step_s;
  for (const Config& c : configs) {
    const StepResult& m = c.measured;
    std::printf("| %s | %.1f ms | %.1f - %.1f ms | %zu | %.2fx | %.1f ms | %.2f | %.2f ms |\n", c.name.c_str(),
                1e3 * m.step_s, 1e3 * m.ci_low_s, 1e3 * m.ci_high_s, m.samples_s.size(), base / m.step_s,
                1e3 * c.calibrated_s, c.calibrated_s / m.step_s, 1e3 * c.roofline_s);
  }
}

constexpr char kUsage[] =
    "usage: pipeline_cpu2_bench [--rounds 15] [--graphs mlp,transformer]\n"
    "Pipelined vs plain training steps on cpu:2, measured (interleaved rounds) and simulated.\n";

}  // namespace

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  configure_host_memory();
  int rounds = 15;
  std::vector<std::string> graphs = {"mlp", "transformer"};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--graphs")) {
      graphs.clear();
      std::string s = argv[i + 1];
      for (size_t at = 0; at <= s.size();) {
        const size_t comma = std::min(s.find(',', at), s.size());
        graphs.push_back(s.substr(at, comma - at));
        at = comma + 1;
      }
    }
  }
  Runtime rt(parse_device_list("cpu:2"));
  for (const std::string& name : graphs) {
    std::vector<Config> configs = configs_of(name);
    measure_in_rounds(rt, configs, rounds);
    simulate_all(rt, configs);
    print_table(name, configs);
    std::fflush(stdout);
  }
  return 0;
}
