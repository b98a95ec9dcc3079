// Issue 25 part 2 on one held-out graph and one cluster preset: the pretrained
// gnn (policies/pretrained) zero-shot, alone and with local_search started from
// its placement within a 1 s budget, and fine-tuned with 100 samples
// (configs/finetune_pretrained.yaml), against local_search at 2,000
// evaluations; median and worst of the seeds, the lower bound, wall times.
// Prints one Markdown row; per-seed lines go to stderr.
//
//   pretrained_bench GRAPH.json --name NAME --cluster k80x4 [--seeds 1,2,3,4,5]
//                    [--policy pretrained] [--finetune configs/finetune_pretrained.yaml] [--out DIR]
//                    [--answer]   (instead: what `placer place --policy` answers by default, and who found it)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_help.h"
#include "heldout_common.h"
#include "placer/agent/learned.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"

using namespace placer;
using placer::bench::context;
using placer::bench::Runs;
using placer::bench::seconds_since;

namespace {

struct Args {
  std::string graph, name, cluster = "k80x4", out = "bench_runs/pretrained";
  std::string policy = "pretrained", finetune = "configs/finetune_pretrained.yaml";
  std::vector<uint64_t> seeds = {1, 2, 3, 4, 5};
  int64_t budget = 2000;
  bool answer = false;          // only the product's answer (the policy, the fast path, local_search within 1 s)
  bool finetune_only = false;   // only the fine-tuning, beside local_search at 2,000 and at its own evaluations
  bool zero_shot_only = false;  // only the policy alone, zero-shot (comparing pretraining seeds)
  bool fixed_decode = false;    // the policy alone decodes its fixed rounds only (not anytime for its second)
  int64_t placements = 0;       // > 0: the policy alone samples this many placements, whatever the time
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError(k + ": expected a value");
      return argv[++i];
    };
    if (k == "--name") {
      a.name = value();
    } else if (k == "--cluster") {
      a.cluster = value();
    } else if (k == "--policy") {
      a.policy = value();
    } else if (k == "--finetune") {
      a.finetune = value();
    } else if (k == "--answer") {
      a.answer = true;
    } else if (k == "--finetune-only") {
      a.finetune_only = true;
    } else if (k == "--zero-shot-only") {
      a.zero_shot_only = true;
    } else if (k == "--fixed-decode") {
      a.fixed_decode = true;
    } else if (k == "--placements") {
      a.placements = std::stoll(value());
      if (a.placements <= 0) throw InputError("--placements: must be > 0");
    } else if (k == "--out") {
      a.out = value();
    } else if (k == "--seeds") {
      a.seeds.clear();
      std::stringstream in(value());
      std::string item;
      while (std::getline(in, item, ',')) a.seeds.push_back(std::strtoull(item.c_str(), nullptr, 10));
    } else if (a.graph.empty()) {
      a.graph = k;
    } else {
      throw InputError("unexpected argument '" + k + "'");
    }
  }
  if (a.graph.empty() || a.seeds.empty()) throw InputError("give GRAPH.json and --seeds (--help)");
  if (a.name.empty()) a.name = a.graph;
  return a;
}

void log_seed(const Args& a, uint64_t seed, const char* what, double step, double wall) {
  std::fprintf(stderr, "%s %s seed %llu %s: %.4f ms, %.3f s\n", a.name.c_str(), a.cluster.c_str(),
               static_cast<unsigned long long>(seed), what, step * 1e3, wall);
}

Runs local_search_runs(const Args& a, const Graph& g, const Cluster& c, int64_t budget) {
  Runs runs;
  for (uint64_t seed : a.seeds) {
    Environment env(g, c);  // a fresh cache per seed
    const auto t0 = std::chrono::steady_clock::now();
    const PlaceResult r = make_placer("local_search")->place(context(env, seed, budget));
    runs.wall_s.push_back(seconds_since(t0));
    runs.step_s.push_back(env.simulate(r.placement).step_s);
    log_seed(a, seed, "local_search", runs.step_s.back(), runs.wall_s.back());
  }
  return runs;
}

// Zero-shot, the checkpoint loaded by each run (its load counted): the policy
// alone (refine false), with local_search from it within 1 s, or (a fast path,
// `found_by` given) what `placer place --policy` answers by default: the policy
// and the fast path's heuristics, then local_search from the faster within 1 s;
// `found_by` collects who found each seed's answer.
Runs zero_shot_runs(const Args& a, const Graph& g, const Cluster& c, bool refine,
                    std::vector<std::string>* found_by = nullptr) {
  static const std::vector<std::string> kNone;
  Runs runs;
  for (uint64_t seed : a.seeds) {
    Environment env(g, c);
    if (a.fixed_decode && !refine && !found_by) {  // the fixed rounds alone, as before the anytime decode
      const auto t0 = std::chrono::steady_clock::now();
      const PlaceResult r = load_named_policy(a.policy)->place(context(env, seed, a.budget));
      runs.wall_s.push_back(seconds_since(t0));
      const StepResult s = env.simulate(r.placement);
      runs.step_s.push_back(s.ok() ? s.step_s : 1e9);
      log_seed(a, seed, "zero-shot (fixed decode)", runs.step_s.back(), runs.wall_s.back());
      continue;
    }
    const bool alone = !refine && !found_by;  // (a budget of placements is the policy alone's)
    const PolicyAnswer pa = place_with_policy(a.policy, context(env, seed, a.budget), 1.0, refine,
                                              found_by ? policy_fast_path() : kNone, alone ? a.placements : 0);
    runs.step_s.push_back(pa.policy_ok || found_by ? pa.step_s : 1e9);
    runs.wall_s.push_back(pa.seconds);
    if (found_by) found_by->push_back(pa.found_by);
    const std::string what = found_by ? "answer, found by " + pa.found_by
                             : refine ? "zero-shot+local_search"
                                      : "zero-shot";
    log_seed(a, seed, what.c_str(), runs.step_s.back(), runs.wall_s.back());
  }
  return runs;
}

// "m_etf+local_search x2, policy+local_search x3"
std::string tally(const std::vector<std::string>& names) {
  std::map<std::string, int> count;
  for (const std::string& name : names) ++count[name];
  std::string out;
  for (const auto& [name, k] : count) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(k);
  return out;
}

// The fine-tuning on each seed; `policy_own` gets the policy's own best (its
// samples alone) and `found_by` who found each seed's result.
Runs finetune_runs(const Args& a, Runs* policy_own = nullptr, std::vector<std::string>* found_by = nullptr) {
  Runs runs;
  for (uint64_t seed : a.seeds) {
    TrainConfig c = load_train_config(a.finetune);
    c.graph = GraphSource{};
    c.graph.file = a.graph;
    c.cluster = a.cluster;
    c.policy.init_from = a.policy;
    c.run.seed = seed;
    c.run.checkpoint_every = 1000000;
    c.run.output_dir = a.out + "/" + a.name + "_" + a.cluster + "_s" + std::to_string(seed);
    TrainControls quiet;
    quiet.progress = false;
    const auto t0 = std::chrono::steady_clock::now();
    const TrainResult r = train(c, nullptr, quiet);
    runs.wall_s.push_back(seconds_since(t0));
    // The run's result: the fastest of its samples and the zero-shot answer it
    // started from (a seen row; the fine-tuning config runs no baseline).
    runs.step_s.push_back(r.best_step_s > 0 ? r.best_step_s : 1e9);
    if (policy_own) policy_own->step_s.push_back(r.policy_best_step_s > 0 ? r.policy_best_step_s : 1e9);
    if (found_by) found_by->push_back(r.best_found_by);
    log_seed(a, seed, ("fine-tuned (" + std::to_string(r.samples) + " samples)").c_str(), runs.step_s.back(),
             runs.wall_s.back());
  }
  return runs;
}

// median / worst (ms) | median vs local_search's median (+ = slower) and whether the target holds.
std::string cell(const Runs& r, const Runs& ls, double slack) {
  char buf[160];
  const double vs = 100.0 * (r.median() / ls.median() - 1.0);
  std::snprintf(buf, sizeof buf, "%.3f / %.3f | %+.1f%%%s", r.median() * 1e3, r.worst() * 1e3, vs,
                r.median() <= ls.median() * (1.0 + slack) ? " met" : " **missed**");
  return buf;
}

constexpr char kUsage[] =
    "usage: pretrained_bench GRAPH.json --name NAME --cluster k80x4 [--seeds 1,2,3,4,5]\n"
    "                        [--policy pretrained] [--finetune configs/finetune_pretrained.yaml] [--out DIR]\n"
    "                        [--answer | --finetune-only | --zero-shot-only] [--fixed-decode] [--placements N]\n"
    "The pretrained gnn zero-shot (alone, sampling for its 1 s, and with local_search within 1 s) and fine-tuned\n"
    "with 100 samples,\n"
    "against local_search at 2,000 evaluations (issue 25 part 2): one Markdown row on stdout.\n"
    "--answer: instead, what `placer place --policy` answers by default (the policy and the fast path's\n"
    "heuristics, then local_search from the faster within 1 s) and who found it.\n"
    "--finetune-only: instead, local_search at the fine-tuning's own evaluations (100) and the fine-tuning,\n"
    "beside local_search at 2,000, who found each seed's result, and the policy's own best (its samples alone).\n"
    "--zero-shot-only: only the policy alone, zero-shot, beside local_search at 2,000 (--policy DIR: any policy).\n"
    "--fixed-decode: the policy alone decodes its fixed rounds only (the greedy decode and samples at each\n"
    "unit level), not more rounds for the rest of its second.\n"
    "--placements N: the policy alone samples N placements whatever the time (`placer place --policy P --no-refine\n"
    "--budget N`), not for 1 s: figures that do not depend on the machine's speed.\n";

}  // namespace

int main(int argc, char** argv) try {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  const Args a = parse(argc, argv);
  const Graph g = placer::bench::graph_file(a.graph);
  const Cluster c = resolve_cluster(a.cluster);
  const double bound = Environment(g, c).lower_bound();
  const Runs ls = local_search_runs(a, g, c, a.budget);
  if (a.answer) {
    std::vector<std::string> found_by;
    const Runs answer = zero_shot_runs(a, g, c, true, &found_by);
    std::printf("| %s | %s | %.3f | %.3f / %.3f | %s | %.3f s | %s |\n", a.name.c_str(), a.cluster.c_str(), bound * 1e3,
                ls.median() * 1e3, ls.worst() * 1e3, cell(answer, ls, 0.05).c_str(), answer.max_wall(),
                tally(found_by).c_str());
    return 0;
  }
  if (a.finetune_only) {
    // At the fine-tuning's own budget too: what plain search makes of the same evaluations
    // (its warm start's heuristics, its samples and its refinement: 100 in the shipped config).
    const TrainConfig f = load_train_config(a.finetune);
    const int64_t evaluations = static_cast<int64_t>(f.warm_start.methods.size()) +
                                f.optimizer.updates * f.optimizer.samples_per_update + f.optimizer.refine_evaluations;
    const Runs ls_equal = local_search_runs(a, g, c, evaluations);
    Runs own;
    std::vector<std::string> found_by;
    const Runs tuned = finetune_runs(a, &own, &found_by);
    std::printf("| %s | %s | %.3f | %.3f / %.3f | %s | %s | %.1f s | %s | %s |\n", a.name.c_str(), a.cluster.c_str(),
                bound * 1e3, ls.median() * 1e3, ls.worst() * 1e3, cell(ls_equal, ls, 0.0).c_str(),
                cell(tuned, ls, 0.0).c_str(), tuned.median_wall(), tally(found_by).c_str(), cell(own, ls, 0.0).c_str());
    return 0;
  }
  const Runs zero = zero_shot_runs(a, g, c, false);
  if (a.zero_shot_only) {
    std::printf("| %s | %s | %.3f | %.3f / %.3f | %s | %.3f s |\n", a.name.c_str(), a.cluster.c_str(), bound * 1e3,
                ls.median() * 1e3, ls.worst() * 1e3, cell(zero, ls, 0.05).c_str(), zero.max_wall());
    return 0;
  }
  const Runs refined = zero_shot_runs(a, g, c, true);
  const Runs tuned = finetune_runs(a);
  std::printf("| %s | %s | %.3f | %.3f / %.3f | %.2f s | %s | %.3f s | %s | %.3f s | %s | %.1f s |\n", a.name.c_str(),
              a.cluster.c_str(), bound * 1e3, ls.median() * 1e3, ls.worst() * 1e3, ls.median_wall(),
              cell(zero, ls, 0.05).c_str(), zero.max_wall(), cell(refined, ls, 0.05).c_str(), refined.max_wall(),
              cell(tuned, ls, 0.0).c_str(), tuned.median_wall());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
