// Benchmarks of the learned placer (results in bench/results/learned_*.md).
//
//   learned_bench settings CONFIG...   train each config (simulated presets) and print
//                                      learned vs every baseline, search time, gap to the
//                                      lower bound, samples to reach 2% of the final best
//   learned_bench ilp                  small graphs where `ilp` proves the optimum
//   learned_bench gnn CONFIG           family training, held-out graphs vs per-graph training
//   learned_bench hierarchical CONFIG  time and peak memory of one policy update
//
// Options: --updates N (override), --out DIR (run folders, default bench_runs/),
// --seeds 1,2,3,4,5 (settings: train each config once per seed; the table
// gives the median and the worst seed), --no-warm-start (from scratch),
// --family-updates N (gnn: pretrain the family N updates; per-graph runs keep --updates).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_help.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"

using namespace placer;

namespace {

int64_t g_updates = -1;
int64_t g_family_updates = -1;  // gnn: the family's pretraining updates (default: --updates)
std::string g_out = "bench_runs";
bool g_nowarm = false;
std::vector<uint64_t> g_seeds = {1};

double peak_rss_gb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0 / 1024.0;
}

struct CsvRow {
  int64_t samples;
  double elapsed, best;
};
std::vector<CsvRow> read_log(const std::string& path) {
  std::vector<CsvRow> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    long long u, s;
    double e, rm, sm, b;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf,%lf,%lf,%lf", &u, &s, &e, &rm, &sm, &b) == 6)
      rows.push_back({s, e, b});
  }
  return rows;
}

// First logged point whose best is within 2% of the final best.
std::pair<int64_t, double> within_two_percent(const std::vector<CsvRow>& rows) {
  if (rows.empty()) return {0, 0};
  const double final_best = rows.back().best;
  for (const auto& r : rows)
    if (r.best <= final_best * 1.02) return {r.samples, r.elapsed};
  return {rows.back().samples, rows.back().elapsed};
}

TrainConfig prepare(TrainConfig c) {
  if (g_updates >= 0) c.optimizer.updates = g_updates;
  if (g_nowarm) {
    c.warm_start.methods.clear();
    c.name += "_nowarm";
  }
  c.run.output_dir = g_out + "/" + c.name;
  return c;
}

std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end)
      throw InputError("--seeds: expected a comma-separated list of integers, got '" + text + "'");
    seeds.push_back(v);
  }
  if (seeds.empty()) throw InputError("--seeds: empty list");
  return seeds;
}

TrainControls quiet() {
  TrainControls t;
  t.progress = false;
  return t;
}

// One trained setting and seed, with the baselines of the same seed.
struct SeedRun {
  uint64_t seed = 0;
  std::string best_method, warm_method;
  double best_s = 0, expert_s = 0, warm_s = 0, learned_s = 0, lower_bound_s = 0, train_s = 0, two_s = 0;
  int64_t samples = 0, two_samples = 0, ops = 0, units = 0;
};

SeedRun run_setting(TrainConfig c, uint64_t seed) {
  c.run.seed = seed;
  c.name += "_s" + std::to_string(seed);
  c = prepare(c);
  const TrainResult r = train(c, nullptr, quiet());
  SeedRun out;
  out.seed = seed;
  out.best_method = "-";
  for (const auto& b : r.baselines) {
    if (!b.ok) continue;
    if (out.best_s == 0 || b.step_s < out.best_s) out.best_s = b.step_s, out.best_method = b.method;
    if (b.method == "expert") out.expert_s = b.step_s;
  }
  const auto rows = read_log(c.run.output_dir + "/train.csv");
  const auto two = within_two_percent(rows);
  out.two_samples = two.first, out.two_s = two.second;
  out.train_s = rows.empty() ? 0.0 : rows.back().elapsed;
  std::ifstream sj(c.run.output_dir + "/summary.json");
  std::string summary((std::istreambuf_iterator<char>(sj)), std::istreambuf_iterator<char>());
  if (auto p = summary.find("\"ops\": "); p != std::string::npos) out.ops = std::atoll(summary.c_str() + p + 7);
  if (auto p = summary.find("\"units\": "); p != std::string::npos) out.units = std::atoll(summary.c_str() + p + 9);
  out.warm_method = r.warm_start_method.empty() ? "none" : r.warm_start_method;
  out.warm_s = r.warm_start_step_s;
  out.learned_s = r.best_step_s;
  out.lower_bound_s = r.lower_bound_s;
  out.samples = r.samples;
  return out;
}

// How much faster x is than base, in percent (negative: slower).
double faster(double base, double x) { return base > 0 ? 100.0 * (base - x) / base : 0.0; }

// Median (the lower middle of an even count) and worst (smallest) of speed-ups.
std::pair<double, double> median_worst(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[(v.size() - 1) / 2], v.front()};
}

void settings(const std::vector<std::string>& configs, const std::vector<uint64_t>& seeds) {
  std::vector<std::vector<SeedRun>> all;
  std::vector<std::string> names;
  for (const auto& path : configs) {
    const TrainConfig c = load_train_config(path);
    names.push_back(c.name);
    std::vector<SeedRun> runs;
    for (uint64_t seed : seeds) {
      runs.push_back(run_setting(c, seed));
      const SeedRun& r = runs.back();
      std::fprintf(stderr, "%s seed %llu: learned %.4f s, best baseline %s %.4f s (%+.1f%%), %.0f s\n", c.name.c_str(),
                   static_cast<unsigned long long>(seed), r.learned_s, r.best_method.c_str(), r.best_s,
                   faster(r.best_s, r.learned_s), r.train_s);
    }
    all.push_back(std::move(runs));
  }
  std::printf(
      "| setting | ops | units | seeds | expert | best baseline (per seed) | learned median | learned worst | vs best "
      "baseline median / worst | vs expert median / worst | lower bound gap (median) | samples | train time (median) "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& runs = all[i];
    std::vector<double> learned, vs_best, vs_expert, gap, secs;
    std::map<std::string, int> methods;
    for (const auto& r : runs) {
      learned.push_back(-r.learned_s);  // median_worst takes the smallest as the worst
      vs_best.push_back(faster(r.best_s, r.learned_s));
      vs_expert.push_back(faster(r.expert_s, r.learned_s));
      gap.push_back(-(100.0 * (r.learned_s / r.lower_bound_s - 1.0)));
      secs.push_back(-r.train_s);
      ++methods[r.best_method];
    }
    std::string best;
    for (const auto& [m, n] : methods) best += (best.empty() ? "" : ", ") + m + " x" + std::to_string(n);
    double best_lo = 1e300, best_hi = 0;
    for (const auto& r : runs) best_lo = std::min(best_lo, r.best_s), best_hi = std::max(best_hi, r.best_s);
    const auto [l_med, l_worst] = median_worst(learned);
    const auto [b_med, b_worst] = median_worst(vs_best);
    const auto [e_med, e_worst] = median_worst(vs_expert);
    std::printf(
        "| %s | %lld | %lld | %zu | %.4f s | %.4f-%.4f s (%s) | %.4f s | %.4f s | %+.1f%% / %+.1f%% | %+.1f%% / "
        "%+.1f%% | %.1f%% | %lld | %.0f s |\n",
        names[i].c_str(), static_cast<long long>(runs[0].ops), static_cast<long long>(runs[0].units), runs.size(),
        runs[0].expert_s, best_lo, best_hi, best.c_str(), -l_med, -l_worst, b_med, b_worst, e_med, e_worst,
        -median_worst(gap).first, static_cast<long long>(runs[0].samples), -median_worst(secs).first);
  }
  std::printf(
      "\nPer seed:\n\n| setting | seed | best baseline | warm start | learned | vs best baseline | vs expert | to 2%% "
      "of "
      "final |\n|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < configs.size(); ++i)
    for (const auto& r : all[i])
      std::printf("| %s | %llu | %s %.4f s | %s %.4f s | %.4f s | %+.1f%% | %+.1f%% | %lld samples, %.0f s |\n",
                  names[i].c_str(), static_cast<unsigned long long>(r.seed), r.best_method.c_str(), r.best_s,
                  r.warm_method.c_str(), r.warm_s, r.learned_s, faster(r.best_s, r.learned_s),
                  faster(r.expert_s, r.learned_s), static_cast<long long>(r.two_samples), r.two_s);
  std::fflush(stdout);
}

void ilp(const std::vector<uint64_t>& seeds) {
  struct Case {
    std::string builder;
    std::map<std::string, int64_t> options;
    std::string cluster;
  };
  const std::vector<Case> cases = {
      {"mlp", {{"layers", 2}, {"width", 512}, {"batch", 64}}, "k80x2"},
      {"mlp", {{"layers", 4}, {"width", 1024}, {"batch", 128}}, "k80x2"},
      {"rnnlm", {{"layers", 1}, {"steps", 2}, {"hidden", 512}, {"vocab", 2000}}, "k80x2"},
      {"mlp", {{"layers", 3}, {"width", 2048}, {"batch", 256}}, "k80x4"},
  };
  std::printf(
      "| graph | cluster | ops | ilp (proved optimal?) | learned median | learned worst | gap median / worst | samples "
      "|\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& k : cases) {
    BuilderOptions bo;
    bo.values = k.options;
    Graph g = build_graph(k.builder, bo);
    Environment env(g, resolve_cluster(k.cluster));
    auto p = make_placer("ilp");
    PlaceContext ctx;
    ctx.graph = &env.graph();
    ctx.cluster = &env.cluster();
    ctx.env = &env;
    ctx.time_limit_s = 120;
    PlaceResult pr = p->place(ctx);
    const bool optimal = pr.stats.count("optimal") && pr.stats["optimal"] > 0.5 && pr.stats["coarsened"] < 0.5;
    const StepResult ilp_step = env.simulate(pr.placement);
    std::vector<double> gaps;  // negated: median_worst takes the smallest as the worst
    std::vector<double> steps;
    int64_t samples = 0;
    for (uint64_t seed : seeds) {
      TrainConfig c;
      c.name = "ilp_" + k.builder + "_" + std::to_string(g.size()) + "_" + k.cluster + "_s" + std::to_string(seed);
      c.graph.builder = k.builder;
      c.graph.options = k.options;
      c.cluster = k.cluster;
      c.run.seed = seed;
      c.optimizer.updates = 60;
      c.optimizer.samples_per_update = 16;
      c.optimizer.lr = 0.005;
      c.optimizer.elites = 8;
      c.warm_start.methods = {"m_etf", "m_topo"};
      c = prepare(c);
      const TrainResult r = train(c, nullptr, quiet());
      gaps.push_back(-100.0 * (r.best_step_s / ilp_step.step_s - 1.0));
      steps.push_back(-r.best_step_s);
      samples = r.samples;
    }
    const auto [s_med, s_worst] = median_worst(steps);
    const auto [g_med, g_worst] = median_worst(gaps);
    std::printf("| %s | %s | %lld | %.6f s%s | %.6f s | %.6f s | %+.2f%% / %+.2f%% | %lld x %zu seeds |\n",
                bo.values.empty() ? k.builder.c_str() : GraphSource{k.builder, k.options}.describe().c_str(),
                k.cluster.c_str(), static_cast<long long>(g.size()), ilp_step.step_s,
                optimal ? " (proved)" : " (NOT proved)", -s_med, -s_worst, -g_med, -g_worst,
                static_cast<long long>(samples), seeds.size());
    std::fflush(stdout);
  }
}

// A held-out graph trained on its own: the published seq2seq recipe
// (heuristics cloned, then policy gradient with self-imitation).
TrainResult per_graph(const GraphSource& src, const std::string& cluster, uint64_t seed) {
  TrainConfig per;
  per.name = "pergraph_" + src.builder + "_" + std::to_string(std::hash<std::string>()(src.describe()) % 10000) + "_s" +
             std::to_string(seed);
  per.graph = src;
  per.cluster = cluster;
  per.run.seed = seed;
  per.optimizer.updates = 100;
  per.optimizer.samples_per_update = 16;
  per.optimizer.lr = 0.005;
  per.optimizer.logit_noise = 0.1;
  per.optimizer.logit_noise_decay = 0.99;
  per.optimizer.elites = 8;
  per.warm_start.methods = {"m_etf", "m_topo", "expert"};
  per.warm_start.bc_steps = 1000;
  per.warm_start.bc_lr = 0.02;
  per.compare = {};
  return train(prepare(per), nullptr, quiet());
}

// The family policy fine-tuned on a held-out graph: policy gradient with
// self-imitation from the pretrained weights, `updates` x 16 samples.
TrainResult fine_tune(const TrainConfig& family, const std::string& family_dir, const GraphSource& src,
                      int64_t updates) {
  TrainConfig ft = family;
  ft.name = family.name + "_ft_" + std::to_string(std::hash<std::string>()(src.describe()) % 10000);
  ft.graph = src;
  ft.family.clear();
  ft.held_out.clear();
  ft.compare.clear();
  ft.policy.init_from = family_dir;
  // The heuristics seed the elite pool but are not cloned (bc_steps 0): the
  // pretrained weights are what the policy starts from.
  ft.warm_start.methods = {"m_etf", "m_topo", "expert"};
  ft.warm_start.bc_steps = 0;
  ft.optimizer.updates = updates;
  ft.optimizer.samples_per_update = 16;
  ft.optimizer.logit_noise = 0.0;
  ft.optimizer.elites = 8;
  ft = prepare(ft);
  ft.optimizer.updates = updates;  // --updates sizes the family and per-graph runs, not this budget
  return train(ft, nullptr, quiet());
}

void gnn(const std::string& path, const std::vector<uint64_t>& seeds) {
  const TrainConfig base = load_train_config(path);
  constexpr int64_t kFineTuneUpdates = 6;  // 96 samples: the "at most 100"
  struct Row {
    double zero, secs, best_base, per, ft;
    std::string best_m;
  };
  std::map<std::string, std::vector<Row>> rows;
  for (uint64_t seed : seeds) {
    TrainConfig c = base;
    c.run.seed = seed;
    c.name += "_s" + std::to_string(seed);
    c = prepare(c);
    if (g_family_updates >= 0) c.optimizer.updates = g_family_updates;
    const auto t0 = std::chrono::steady_clock::now();
    const TrainResult fam = train(c, nullptr, quiet());
    const double fam_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("seed %llu: family training on %zu graphs, %lld updates, %lld samples, %.0f s\n",
                static_cast<unsigned long long>(seed), c.family.size(), static_cast<long long>(fam.updates),
                static_cast<long long>(fam.samples), fam_s);
    for (const auto& src : c.held_out) {
      const auto& [zero, secs] = fam.held_out.at(src.describe());
      const TrainResult r = per_graph(src, c.cluster, seed);
      const TrainResult ft = fine_tune(c, c.run.output_dir, src, kFineTuneUpdates);
      Row row{zero, secs, 0, r.best_step_s, ft.best_step_s, "-"};
      for (const auto& b : r.baselines)
        if (b.ok && (row.best_base == 0 || b.step_s < row.best_base)) row.best_base = b.step_s, row.best_m = b.method;
      rows[src.describe()].push_back(row);
    }
    std::fflush(stdout);
  }
  std::printf(
      "\n| held-out graph | seed | gnn zero-shot | place time | fine-tuned (%lld samples) | best baseline | per-graph "
      "trained (seq2seq, 1600 samples) | zero-shot vs per-graph | fine-tuned vs per-graph |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      static_cast<long long>(kFineTuneUpdates * 16));
  for (const auto& [graph, rs] : rows)
    for (size_t i = 0; i < rs.size(); ++i)
      std::printf("| %s | %llu | %.4f s | %.3f s | %.4f s | %s %.4f s | %.4f s | %+.1f%% | %+.1f%% |\n", graph.c_str(),
                  static_cast<unsigned long long>(seeds[i]), rs[i].zero, rs[i].secs, rs[i].ft, rs[i].best_m.c_str(),
                  rs[i].best_base, rs[i].per, 100.0 * (rs[i].zero / rs[i].per - 1.0),
                  100.0 * (rs[i].ft / rs[i].per - 1.0));
  std::printf(
      "\nOver %zu seeds (slower than per-graph training; median / worst):\n\n| held-out graph | zero-shot | fine-tuned "
      "| place time (max) |\n|---|---|---|---|\n",
      seeds.size());
  for (const auto& [graph, rs] : rows) {
    std::vector<double> z, f;
    double place_max = 0;
    for (const auto& r : rs) {
      z.push_back(-100.0 * (r.zero / r.per - 1.0));
      f.push_back(-100.0 * (r.ft / r.per - 1.0));
      place_max = std::max(place_max, r.secs);
    }
    const auto [z_med, z_worst] = median_worst(z);
    const auto [f_med, f_worst] = median_worst(f);
    std::printf("| %s | %+.1f%% / %+.1f%% | %+.1f%% / %+.1f%% | %.3f s |\n", graph.c_str(), -z_med, -z_worst, -f_med,
                -f_worst, place_max);
  }
  std::fflush(stdout);
}

void hierarchical(const std::string& path) {
  TrainConfig c = prepare(load_train_config(path));
  if (g_updates < 0) c.optimizer.updates = 3;
  const auto t0 = std::chrono::steady_clock::now();
  const TrainResult r = train(c, nullptr, quiet());
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto rows = read_log(c.run.output_dir + "/train.csv");
  std::printf(
      "| graph | ops | updates | samples/update | seconds per update (incl. %d simulations) | peak RSS | setup (graph, "
      "features, env) |\n|---|---|---|---|---|---|---|\n",
      c.optimizer.samples_per_update);
  double prev = 0, worst = 0;
  for (const auto& row : rows) worst = std::max(worst, row.elapsed - prev), prev = row.elapsed;
  std::ifstream sj(c.run.output_dir + "/summary.json");
  std::string summary((std::istreambuf_iterator<char>(sj)), std::istreambuf_iterator<char>());
  long long ops = 0;
  if (auto p = summary.find("\"ops\": "); p != std::string::npos) ops = std::atoll(summary.c_str() + p + 7);
  std::printf("| %s | %lld | %lld | %d | max %.1f s, mean %.1f s | %.2f GB | %.1f s |\n", c.graph.describe().c_str(),
              ops, static_cast<long long>(r.updates), c.optimizer.samples_per_update, worst,
              rows.empty() ? 0.0 : rows.back().elapsed / rows.size(), peak_rss_gb(),
              total - (rows.empty() ? 0.0 : rows.back().elapsed));
}

constexpr char kUsage[] =
    "usage: learned_bench settings CONFIG...   learned vs every baseline per config\n"
    "       learned_bench ilp                  small graphs where `ilp` proves the optimum\n"
    "       learned_bench gnn CONFIG           family training, held-out graphs vs per-graph training\n"
    "       learned_bench hierarchical CONFIG  time and peak memory of one policy update\n"
    "options: --updates N, --out DIR (default bench_runs/), --seeds 1,2,3,4,5, --no-warm-start,\n"
    "         --family-updates N (gnn)\n";

}  // namespace

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  std::vector<std::string> args;
  std::string seeds_text;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--updates") && i + 1 < argc)
      g_updates = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      g_out = argv[++i];
    else if (!std::strcmp(argv[i], "--family-updates") && i + 1 < argc)
      g_family_updates = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds_text = argv[++i];
    else if (!std::strcmp(argv[i], "--no-warm-start"))
      g_nowarm = true;
    else
      args.push_back(argv[i]);
  }
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    if (!seeds_text.empty()) g_seeds = parse_seeds(seeds_text);
    const std::string mode = args[0];
    if (mode == "settings")
      settings({args.begin() + 1, args.end()}, g_seeds);
    else if (mode == "ilp")
      ilp(g_seeds);
    else if (mode == "gnn" && args.size() == 2)
      gnn(args[1], g_seeds);
    else if (mode == "hierarchical" && args.size() == 2)
      hierarchical(args[1]);
    else
      throw InputError("unknown mode '" + mode + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
