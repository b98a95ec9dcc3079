// placer measure / placer profile: run a placed graph for real.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/runtime/runtime.h"

namespace placer::cli {

namespace {

struct MeasureArgs {
  std::string graph, placement, devices = "cpu:2", trace, json;
  int warmup = 2, steps = 5;
  double timeout = 120.0;
  uint64_t seed = 0;
};

struct ProfileArgs {
  std::string graph, devices = "cpu:2", out;
  int repetitions = 5;
};

void run_measure(const MeasureArgs& a) {
  const Graph graph = load_graph(a.graph);
  const Cluster cluster = parse_device_list(a.devices);
  const Placement placement = from_named(graph, cluster, load_placement(a.placement));
  Runtime runtime(cluster);
  MeasureOptions o;
  o.warmup_steps = a.warmup;
  o.measured_steps = a.steps;
  o.timeout_s = a.timeout;
  o.seed = a.seed;
  o.timeline = !a.trace.empty();
  std::vector<TimelineEvent> events;
  const StepResult r = runtime.measure(graph, placement, o, o.timeline ? &events : nullptr);
  if (!a.json.empty()) write_file_atomic(a.json, step_result_to_json(r));
  if (o.timeline && r.ok()) write_chrome_trace(events, a.trace);
  if (!r.ok()) {
    std::fprintf(stderr, "measure: %s: %s\n", step_status_name(r.status), r.message.c_str());
    throw CLI::RuntimeError(1);
  }
  std::printf("graph %s on %s: step %.6f s (median of %zu, IQR %.6f s), transfers %lld bytes\n", graph.name.c_str(),
              cluster.name.c_str(), r.step_s, r.samples_s.size(), r.iqr_s, static_cast<long long>(r.transfer_bytes));
  for (const DeviceStats& d : r.devices)
    std::printf("  %-8s busy %.6f s  peak %lld bytes\n", d.device.c_str(), d.busy_s,
                static_cast<long long>(d.peak_bytes));
  if (o.timeline) std::printf("trace: %s (%zu events)\n", a.trace.c_str(), events.size());
}

void run_profile(const ProfileArgs& a) {
  const Graph graph = load_graph(a.graph);
  Runtime runtime(parse_device_list(a.devices));
  ProfileOptions o;
  o.repetitions = a.repetitions;
  const Profile p = runtime.profile(graph, o);
  save_profile(p, a.out);
  std::printf("profiled %zu op timings, %zu links, executor overhead %.2f us/op -> %s\n", p.ops.size(), p.links.size(),
              p.per_op_overhead_s * 1e6, a.out.c_str());
}

}  // namespace

void add_runtime_commands(CLI::App& app) {
  auto margs = std::make_shared<MeasureArgs>();
  CLI::App* measure = app.add_subcommand("measure", "Run a placed graph for real and measure its step time");
  measure->add_option("--graph", margs->graph, "Graph file (.json or binary)")->required();
  measure->add_option("--placement", margs->placement, "Placement file (JSON: op name -> device name)")->required();
  measure->add_option("--devices", margs->devices, "Devices: cpu:N, cpu,cuda:0, cuda:0,cuda:1, vcuda:N")
      ->capture_default_str();
  measure->add_option("--warmup", margs->warmup, "Warm-up steps")->capture_default_str()->check(CLI::Range(0, 100000));
  measure->add_option("--steps", margs->steps, "Measured steps")->capture_default_str()->check(CLI::Range(1, 100000));
  measure->add_option("--timeout", margs->timeout, "Per-step time limit in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  measure->add_option("--seed", margs->seed, "Seed of inputs and parameters")->capture_default_str();
  measure->add_option("--trace", margs->trace, "Write the last step as a Chrome trace (Perfetto) JSON file");
  measure->add_option("--json", margs->json, "Write the result as JSON");
  measure->callback([margs] { run_measure(*margs); });

  auto pargs = std::make_shared<ProfileArgs>();
  CLI::App* profile =
      app.add_subcommand("profile", "Measure per-op times and link latency/bandwidth for the simulator");
  profile->add_option("--graph", pargs->graph, "Graph file (.json or binary)")->required();
  profile->add_option("--devices", pargs->devices, "Devices: cpu:N, cpu,cuda:0, ...")->capture_default_str();
  profile->add_option("-o,--out", pargs->out, "Profile file to write (JSON)")->required();
  profile->add_option("--repetitions", pargs->repetitions, "Runs per op (median kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  profile->callback([pargs] { run_profile(*pargs); });
}

}  // namespace placer::cli
