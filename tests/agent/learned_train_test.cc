// The learned placer: a seeded run finds the known best placement, a resumed
// run continues exactly like an uninterrupted one, and malformed configs and
// checkpoints give errors naming the field or file.
#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "../scratch_dir.h"
#include "chain_graphs.h"
#include "giving_up_remote.h"
#include "config_errors.h"
#include "placer/agent/learned.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using testing::GivingUpRemote;
using testing::quiet;
using testing::two_chains;

Cluster two_devices() {
  Cluster c;
  c.name = "two";
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.memory_bytes = int64_t{1} << 30;
    d.peak_flops = 1e9;
    d.mem_bandwidth = 1e12;
    d.op_overhead_s = 0.0;
    c.devices.push_back(d);
  }
  c.default_link.latency_s = 1e-3;
  c.default_link.bandwidth_Bps = 1e9;
  return c;
}

struct Fixture {
  std::unique_ptr<ScratchDir> scratch;  // removed with the fixture
  std::string dir;
  std::string graph_path;
  std::string cluster_path;
};

Fixture make_fixture(const std::string& name, int len) {
  Fixture f;
  f.scratch = std::make_unique<ScratchDir>("learned_" + name);
  f.dir = f.scratch->path();
  f.graph_path = f.dir + "/graph.json";
  f.cluster_path = f.dir + "/cluster.json";
  save_graph(two_chains(len), f.graph_path);
  save_cluster(two_devices(), f.cluster_path);
  return f;
}

std::string config_text(const Fixture& f, const std::string& out, int64_t updates, const std::string& extra = "") {
  std::ostringstream o;
  o << "name: test\n"
    << "graph: {file: " << f.graph_path << "}\n"
    << "cluster: " << f.cluster_path << "\n"
    << "policy: {type: seq2seq, hidden: 32}\n"
    << "train: {updates: " << updates << ", samples_per_update: 8, lr: 0.02, logit_noise: 0.3}\n"
    << "warm_start: {methods: []}\n"
    << "run: {seed: 7, checkpoint_every: 2, output_dir: " << out << "}\n"
    << extra;
  return o.str();
}

// Brute force over every placement of the graph's ops.
double brute_force_best(const Graph& g, const Cluster& c) {
  Environment env(g, c);
  const int n = static_cast<int>(g.size());
  double best = 1e30;
  for (int64_t mask = 0; mask < (int64_t{1} << n); ++mask) {
    Placement p;
    for (int i = 0; i < n; ++i) p.device_of.push_back(DeviceId(static_cast<int>((mask >> i) & 1)));
    const StepResult r = env.simulate(p);
    if (r.ok()) best = std::min(best, r.step_s);
  }
  return best;
}

// A cancel that gives up a remote batch ends the run as stopped, keeping its best so far and writing its
// checkpoint (the batch's EvaluationCancelled went through train() and the job answered nothing).
TEST(LearnedTrain, ACancelledRemoteBatchEndsTheRunWithItsBestSoFar) {
  const Fixture f = make_fixture("remote_cancel", 3);
  const TrainConfig c = parse_train_config(config_text(f, f.dir + "/run", 50), "test");
  std::atomic<bool> cancel{false};
  TrainControls ctl = quiet();
  ctl.cancel = &cancel;
  ctl.remote = std::make_shared<GivingUpRemote>(&cancel, [](int b, const std::string&, size_t) { return b >= 6; });
  const TrainResult r = train(c, nullptr, ctl);
  EXPECT_EQ(r.ended_by, "stopped");
  EXPECT_GT(r.best_step_s, 0.0);
  EXPECT_FALSE(r.best_placement.device.empty());
  EXPECT_TRUE(std::filesystem::exists(f.dir + "/run/checkpoint.pt"));
}

// The run stopped after `updates` updates, then resumed to its end.
TrainResult stopped_and_resumed(const TrainConfig& c, int64_t updates) {
  TrainControls stop = quiet();
  stop.stop_after_updates = updates;
  train(c, nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  return train(c, nullptr, resume);
}

// A checkpoint names the graph and cluster it was made for: a resume on another cluster with the same device
// names (k80x4 then p100x4) kept the other problem's best and step times and reported them as its own.
TEST(LearnedTrain, AResumeOnAnotherClusterIsRefused) {
  const Fixture f = make_fixture("other_cluster", 3);
  const TrainConfig c = parse_train_config(config_text(f, f.dir + "/run", 4), "test");
  TrainControls stop = quiet();
  stop.stop_after_updates = 2;
  train(c, nullptr, stop);
  Cluster slower = two_devices();
  for (Device& d : slower.devices) d.peak_flops = 1e8;
  save_cluster(slower, f.cluster_path);
  TrainControls resume = quiet();
  resume.resume = true;
  try {
    train(c, nullptr, resume);
    ADD_FAILURE() << "resumed on another cluster";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("another graph or cluster"), std::string::npos) << e.what();
  }
  save_cluster(two_devices(), f.cluster_path);  // the same problem again: it resumes
  EXPECT_EQ(train(c, nullptr, resume).updates, 4);
}

TEST(LearnedTrain, SeededRunFindsTheKnownBest) {
  const Fixture f = make_fixture("best", 5);
  const double optimum = brute_force_best(two_chains(5), two_devices());
  // One chain per device: the input is free (a graph input), one transfer
  // (1 ms + 1024 B), 5 ops of 1 s, then the join (1 ms) on the device of the
  // chain that started later.
  EXPECT_NEAR(optimum, (1e-3 + 1024 / 1e9) + 5.0 + 1e-3, 1e-9);
  // Plain REINFORCE (no elite pool), so that the policy itself converges to
  // one placement; with the default pool it finds the optimum as well.
  std::string text = config_text(f, f.dir + "/run", 40);
  text.replace(text.find("logit_noise: 0.3"), 16, "logit_noise: 0.3, elites: 0");
  TrainConfig c = parse_train_config(text, "test");
  const TrainResult r = train(c, nullptr, quiet());
  const TrainResult pooled = train(parse_train_config(config_text(f, f.dir + "/pooled", 40), "test"), nullptr, quiet());
  EXPECT_NEAR(pooled.best_step_s, optimum, 1e-9);
  EXPECT_EQ(r.updates, 40);
  EXPECT_EQ(r.samples, 320);
  EXPECT_NEAR(r.best_step_s, optimum, 1e-9);
  // Much better than everything on one device (12 s of work).
  const Graph g = two_chains(5);
  Environment env(g, two_devices());
  EXPECT_LT(r.best_step_s, 0.6 * env.simulate(single_device(g, DeviceId(0))).step_s);
  // The policy itself converged there: the last update's samples average
  // within 1% of the optimum (a random placement averages ~9 s).
  {
    std::ifstream csv(f.dir + "/run/train.csv");
    std::string line, last;
    while (std::getline(csv, line)) last = line;
    double step_mean = 0;
    ASSERT_EQ(std::sscanf(last.c_str(), "%*[^,],%*[^,],%*[^,],%*[^,],%lf", &step_mean), 1) << last;
    EXPECT_LT(step_mean, optimum * 1.01) << last;
  }
  for (const char* file : {"train.csv", "reward.svg", "checkpoint.pt", "best_placement.json", "summary.json",
                           "config.yaml", "config.json"})
    EXPECT_TRUE(fs::exists(f.dir + "/run/" + file)) << file;

  // The checkpoint places the same graph at least as well.
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  const PlaceResult placed = place_with_checkpoint(f.dir + "/run", ctx);
  validate_placement(g, env.cluster(), placed.placement);
  EXPECT_NEAR(env.simulate(placed.placement).step_s, optimum, 1e-9);
}

std::vector<std::string> csv_without_timing(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    // Drop elapsed_s (2) and samples_per_s (10), wall-clock dependent, and
    // cache_hits (11): the environment's cache starts empty in a new process.
    std::string kept;
    for (size_t i = 0; i < cells.size(); ++i)
      if (i != 2 && i != 10 && i != 11) kept += cells[i] + ",";
    out.push_back(kept);
  }
  return out;
}

// What a run's policy places two_chains(len) at, by its checkpoint alone
// (the run's remembered best placement removed).
Placement policy_placement(const std::string& run_dir, int len) {
  const Graph g = two_chains(len);
  Environment env(g, two_devices());
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  fs::remove(run_dir + "/best_placement.json");  // the decode alone, not a stored best
  fs::remove(run_dir + "/policy_best_placement.json");
  return place_with_checkpoint(run_dir, ctx).placement;
}

TEST(LearnedTrain, ResumedRunContinuesIdentically) {
  const Fixture f = make_fixture("resume", 3);
  for (const std::string algo : {"reinforce", "ppo"}) {
    const std::string extra = "";
    std::string text = config_text(f, f.dir + "/straight_" + algo, 6);
    // PPO also keeps an elite pool (self-imitation), which the checkpoint carries,
    // seeded from the warm start's baselines.
    text.replace(text.find("lr: 0.02"), 8,
                 "lr: 0.02, algorithm: " + algo + (algo == "ppo" ? ", elites: 3, elite_weight: 0.5" : ""));
    if (algo == "ppo") text.replace(text.find("methods: []"), 11, "methods: [single, round_robin]");
    const TrainConfig straight = parse_train_config(text, "test");
    const TrainResult a = train(straight, nullptr, quiet());

    TrainConfig split = straight;
    split.run.output_dir = f.dir + "/split_" + algo;
    TrainControls stop = quiet();
    stop.stop_after_updates = 3;
    const TrainResult first = train(split, nullptr, stop);
    EXPECT_EQ(first.updates, 3);
    TrainControls resume = quiet();
    resume.resume = true;
    const TrainResult b = train(split, nullptr, resume);
    EXPECT_EQ(b.updates, 6);
    EXPECT_EQ(b.samples, a.samples);
    EXPECT_EQ(b.best_step_s, a.best_step_s);
    EXPECT_EQ(b.best_found_at_sample, a.best_found_at_sample);
    EXPECT_EQ(b.best_placement.device, a.best_placement.device);
    // The warm start's rows keep their intervals across the resume (they came back as [0, 0]).
    ASSERT_EQ(b.baselines.size(), a.baselines.size()) << algo;
    for (size_t i = 0; i < a.baselines.size(); ++i) {
      EXPECT_EQ(b.baselines[i].ci_low_s, a.baselines[i].ci_low_s) << algo << " " << a.baselines[i].method;
      EXPECT_EQ(b.baselines[i].ci_high_s, a.baselines[i].ci_high_s) << algo << " " << a.baselines[i].method;
    }
    EXPECT_EQ(csv_without_timing(straight.run.output_dir + "/train.csv"),
              csv_without_timing(split.run.output_dir + "/train.csv"))
        << algo;
    // Same weights: the greedy decodes agree.
    EXPECT_EQ(policy_placement(straight.run.output_dir, 3), policy_placement(split.run.output_dir, 3));
  }
}

TEST(LearnedTrain, InitFromStartsFromAnotherRunsWeights) {
  const Fixture f = make_fixture("init_from", 3);
  const TrainResult a = train(parse_train_config(config_text(f, f.dir + "/a", 6), "test"), nullptr, quiet());
  ASSERT_EQ(a.updates, 6);
  // No update and no behaviour cloning: the policy is exactly a's.
  const std::string from = "policy: {type: seq2seq, hidden: 32, init_from: " + f.dir + "/a}\n";
  std::string text = config_text(f, f.dir + "/b", 0);
  text.replace(text.find("policy: {type: seq2seq, hidden: 32}\n"), 36, from);
  train(parse_train_config(text, "test"), nullptr, quiet());
  EXPECT_EQ(policy_placement(f.dir + "/a", 3), policy_placement(f.dir + "/b", 3));
  // Errors name the field: a missing run, a policy of another size.
  for (const auto& [init, needle] : std::vector<std::pair<std::string, std::string>>{
           {"policy: {type: seq2seq, hidden: 32, init_from: " + f.dir + "/nowhere}\n", "no checkpoint here"},
           {"policy: {type: seq2seq, hidden: 16, init_from: " + f.dir + "/a}\n", "hidden 32 (the config: 16)"},
           // Another type whose parameters share names and shapes loaded without a word.
           {"policy: {type: hierarchical, hidden: 32, init_from: " + f.dir + "/a}\n",
            "holds another policy: type seq2seq (the config: hierarchical)"}}) {
    std::string bad = config_text(f, f.dir + "/c", 0);
    bad.replace(bad.find("policy: {type: seq2seq, hidden: 32}\n"), 36, init);
    try {
      train(parse_train_config(bad, "test"), nullptr, quiet());
      ADD_FAILURE() << "accepted " << init;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("policy.init_from: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

// The policy clones the best deterministic heuristic; with
// warm_start.clone_search it clones the best placement of all, a search's
// (local_search) included.
TEST(LearnedTrain, CloneSearchClonesTheBestPlacementOfAll) {
  const Fixture f = make_fixture("clone_search", 5);
  auto warm_of = [&](const std::string& run, const std::string& clone) {
    std::string text = config_text(f, f.dir + "/" + run, 1);
    text.replace(text.find("warm_start: {methods: []}"), 25,
                 "warm_start: {methods: [single, local_search], bc_steps: 300, bc_lr: 0.05" + clone + "}");
    return train(parse_train_config(text, "test"), nullptr, quiet());
  };
  const TrainResult heuristic = warm_of("heuristic", "");
  const TrainResult search = warm_of("search", ", clone_search: true");
  EXPECT_EQ(heuristic.warm_start_method, "single");
  EXPECT_EQ(search.warm_start_method, "local_search");
  EXPECT_LT(search.warm_start_step_s, 0.8 * heuristic.warm_start_step_s);
  // The policy reproduces the cloned placement: its greedy decode is as fast.
  Environment env(two_chains(5), two_devices());
  EXPECT_NEAR(env.simulate(policy_placement(f.dir + "/search", 5)).step_s, search.warm_start_step_s, 1e-9);
}

// "Never worse than what it saw": a baseline the run compared with that beats
// the policy's own best is the run's result, credited to the baseline, and the
// policy's own best is reported apart.
TEST(LearnedTrain, ResultIsNeverWorseThanABaselineItRan) {
  const Fixture f = make_fixture("never_worse", 5);
  std::string text = config_text(f, f.dir + "/run", 1);
  text.replace(text.find("samples_per_update: 8"), 21, "samples_per_update: 2");
  text += "compare: [single, local_search]\n";
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  double fastest = 1e30;
  std::string fastest_method;
  for (const BaselineResult& b : r.baselines)
    if (b.ok && b.step_s < fastest) {
      fastest = b.step_s;
      fastest_method = b.method;
    }
  ASSERT_EQ(r.baselines.size(), 2u);
  // Two random samples of an untrained policy: slower than local_search's placement.
  EXPECT_GT(r.policy_best_step_s, fastest * 1.05);
  EXPECT_EQ(r.best_found_by, "local_search");
  EXPECT_EQ(fastest_method, "local_search");
  EXPECT_DOUBLE_EQ(r.best_step_s, fastest);
  EXPECT_EQ(r.table, "simulated");
  // What the run hands out is that placement.
  Environment env(two_chains(5), two_devices());
  const Placement best = from_named(env.graph(), env.cluster(), load_placement(f.dir + "/run/best_placement.json"));
  EXPECT_NEAR(env.simulate(best).step_s, r.best_step_s, 1e-12);
  const Placement own =
      from_named(env.graph(), env.cluster(), load_placement(f.dir + "/run/policy_best_placement.json"));
  EXPECT_NEAR(env.simulate(own).step_s, r.policy_best_step_s, 1e-12);
  std::ifstream summary(f.dir + "/run/summary.json");
  const std::string json((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"best_found_by\": \"local_search\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"policy_best_step_s\""), std::string::npos);
  // The policy placing with this run answers with a decode of its own or its own best in training, never
  // local_search's (which it handed out as its own: found_by "policy").
  const PlaceResult placed = LoadedPolicy::load(f.dir + "/run")->place(PlaceContext::on(env, 7));
  if (placed.note.find("training run") != std::string::npos) {
    EXPECT_EQ(placed.placement, own) << placed.note;
  }
  EXPECT_NE(placed.placement, best) << placed.note;
}

// The evaluations a search's row says it spent ("..., 2000 evaluations, ..."); -1 where it says none.
int64_t evaluations_in(const BaselineResult& b) {
  const size_t at = b.note.find(" evaluations");
  if (at == std::string::npos) return -1;
  const size_t from = b.note.rfind(' ', at - 1) + 1;
  return std::stoll(b.note.substr(from, at - from));
}

// The searches a run compares with get the samples it spent (equal budget): a run ended by its time limit
// with updates at 1e8 (a service job's) gave local_search 1.6e9 evaluations, and no cancel stopped it.
TEST(LearnedTrain, ComparedSearchGetsTheSamplesTheRunSpent) {
  const Fixture f = make_fixture("compare_budget", 5);
  std::string text = config_text(f, f.dir + "/run", 100000000);
  text.replace(text.find("lr: 0.02"), 8, "lr: 0.02, time_limit_s: 0.3");
  text += "compare: [local_search]\n";
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  EXPECT_EQ(r.ended_by, "time_limit");
  ASSERT_EQ(r.baselines.size(), 1u);
  const int64_t evaluations = evaluations_in(r.baselines[0]);
  EXPECT_GE(evaluations, 0) << r.baselines[0].note;
  EXPECT_LE(evaluations, r.samples) << r.baselines[0].note;
}

// A compared search the warm start also ran is run again at the run's budget: the row named local_search
// was the warm start's, at 2000 evaluations, against 16 samples of the policy.
TEST(LearnedTrain, ACompareSearchTheWarmStartRanGetsTheRunsBudgetToo) {
  const Fixture f = make_fixture("compare_warm", 5);
  std::string text = config_text(f, f.dir + "/run", 2);
  text.replace(text.find("warm_start: {methods: []}"), 25, "warm_start: {methods: [local_search]}");
  text += "compare: [local_search]\n";
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  ASSERT_EQ(r.samples, 16);
  int equal = 0, warm = 0;
  for (const BaselineResult& b : r.baselines) {
    if (b.method == "local_search") {
      ++equal;
      EXPECT_LE(evaluations_in(b), r.samples) << b.note;
      EXPECT_GT(evaluations_in(b), 0) << b.note;
    } else if (b.method == "warm_start:local_search") {
      ++warm;
      EXPECT_NE(b.note.find("the warm start's run, 2000 evaluations"), std::string::npos) << b.note;
    }
  }
  EXPECT_EQ(equal, 1);
  EXPECT_EQ(warm, 1);
}

// train.max_samples is a bound: the last update takes the samples left (20 asked, 8 a batch: 24 ran).
TEST(LearnedTrain, MaxSamplesIsNotOvershot) {
  const Fixture f = make_fixture("max_samples", 4);
  std::string text = config_text(f, f.dir + "/run", 100);
  text.replace(text.find("lr: 0.02"), 8, "lr: 0.02, max_samples: 20");
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  EXPECT_EQ(r.ended_by, "max_samples");
  EXPECT_EQ(r.samples, 20);
}

// Off a terminal, a progress line comes each twentieth of the budget that binds: a run ended by its samples
// with updates at 1e8 (a service job's) printed none.
TEST(LearnedTrain, ProgressLinesFollowTheBudgetThatBinds) {
  const Fixture f = make_fixture("progress", 3);
  std::string text = config_text(f, f.dir + "/run", 100000000);
  text.replace(text.find("lr: 0.02"), 8, "lr: 0.02, max_samples: 160");
  TrainControls loud;
  loud.progress = true;
  ::testing::internal::CaptureStderr();
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, loud);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.samples, 160);
  int lines = 0;
  for (size_t at = err.find("update "); at != std::string::npos; at = err.find("update ", at + 1))
    lines += err.compare(at, 7, "update ") == 0 && err.find(" samples/s", at) != std::string::npos;
  EXPECT_GE(lines, 10) << err;
  EXPECT_LE(lines, 22) << err;
  EXPECT_NE(err.find("update 20/"), std::string::npos) << err;  // the last update's line, at 100%
}

// A failed sample (out of memory) is never the policy's best: when every sample fails, the run has no best
// (it reported the penalty as the policy's step, and an out-of-memory placement as its result).
TEST(LearnedTrain, AFailedSampleIsNeverThePolicysBest) {
  const Fixture f = make_fixture("all_fail", 3);
  Cluster tiny = two_devices();
  for (Device& d : tiny.devices) d.memory_bytes = 8;  // nothing fits
  save_cluster(tiny, f.cluster_path);
  const TrainResult r = train(parse_train_config(config_text(f, f.dir + "/run", 2), "test"), nullptr, quiet());
  EXPECT_EQ(r.best_found_by, "none");
  EXPECT_EQ(r.policy_step_s(), 0.0);
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/run/best_placement.json"));
}

// train.distinct_redraws: a policy collapsed onto one placement (cloned to
// near certainty, no logit noise) samples it again and again; with redraws
// each repeat is paid for by a placement not evaluated before, so the run
// evaluates nearly as many distinct placements as it counts samples.
TEST(LearnedTrain, RepeatedSamplesAreDrawnAgain) {
  const Fixture f = make_fixture("distinct", 6);
  auto config = [&](const std::string& name, int redraws) {
    std::string text = config_text(f, f.dir + "/" + name, 8);
    text.replace(text.find("logit_noise: 0.3"), 16,
                 "logit_noise: 0, temperature: 0.05, distinct_redraws: " + std::to_string(redraws));
    text.replace(text.find("methods: []"), 11, "methods: [single], bc_steps: 500");
    return parse_train_config(text, "test");
  };
  const TrainResult without = train(config("without", 0), nullptr, quiet());
  const TrainResult with = train(config("with", 4), nullptr, quiet());
  EXPECT_EQ(without.samples, 64);
  EXPECT_EQ(with.samples, 64);
  EXPECT_LT(without.distinct_samples, 24);  // the setting does collapse: most of the 64 samples repeat
  EXPECT_GE(with.distinct_samples, 56);     // every repeat but the 8 greedy decodes' is replaced
  EXPECT_LE(with.best_step_s, without.best_step_s);
  // The default (-1) redraws 4 times when rewards are simulated.
  EXPECT_EQ(train(config("default", -1), nullptr, quiet()).distinct_samples, with.distinct_samples);
  // Resumed, the run remembers what it sampled (the checkpoint keeps it).
  const TrainResult r = stopped_and_resumed(config("resumed", 4), 4);
  EXPECT_EQ(r.distinct_samples, with.distinct_samples);
  EXPECT_EQ(r.best_step_s, with.best_step_s);
  EXPECT_EQ(csv_without_timing(f.dir + "/with/train.csv"), csv_without_timing(f.dir + "/resumed/train.csv"));
}

// train.unit_stages: the first stages place coarser units (fewer, at least one
// per device), the last the policy's own; the best carries over from stage to
// stage, and a run stopped inside a later stage and resumed continues exactly.
TEST(LearnedTrain, CoarseToFineStagesCarryTheBestAndResumeExactly) {
  const Fixture f = make_fixture("stages", 8);
  auto config = [&](const std::string& name, int stages) {
    std::string text = config_text(f, f.dir + "/" + name, 6);
    text.replace(text.find("logit_noise: 0.3"), 16, "logit_noise: 0.3, unit_stages: " + std::to_string(stages));
    text.replace(text.find("methods: []"), 11, "methods: [single]");
    return parse_train_config(text, "test");
  };
  const TrainResult one = train(config("one", 1), nullptr, quiet());
  const TrainResult three = train(config("three", 3), nullptr, quiet());
  ASSERT_EQ(one.stage_units.size(), 1u);
  ASSERT_EQ(three.stage_units.size(), 3u);
  EXPECT_EQ(three.stage_units[2], one.stage_units[0]);  // the last stage places the policy's own units
  EXPECT_GE(three.stage_units[0], 2);                   // at least one unit per device
  EXPECT_LT(three.stage_units[0], three.stage_units[1]);
  EXPECT_LT(three.stage_units[1], three.stage_units[2]);
  EXPECT_EQ(three.samples, 48);
  EXPECT_GT(three.distinct_samples, 16);  // counted over the stages, not the last one's alone
  // Two chains on two devices: one chain per device is far faster than the warm start's one device.
  double single = 0;
  for (const BaselineResult& b : three.baselines)
    if (b.method == "single") single = b.step_s;
  ASSERT_GT(single, 0.0);
  EXPECT_LT(three.best_step_s, 0.8 * single);
  std::ifstream summary(f.dir + "/three/summary.json");
  const std::string json((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"stage_units\": [" + std::to_string(three.stage_units[0]) + ", "), std::string::npos) << json;
  // Four stages in six updates: the last stage, the policy's own units, is reached (at ceil(6 / 4) = 2 updates a
  // stage, it started at update 6 of 0-5 and never ran).
  const TrainResult four = train(config("four", 4), nullptr, quiet());
  ASSERT_EQ(four.stage_units.size(), 4u);
  ASSERT_LT(four.stage_units[2], four.stage_units[3]);
  std::ifstream four_summary(f.dir + "/four/summary.json");
  const std::string four_json((std::istreambuf_iterator<char>(four_summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(four_json.find("\"units\": " + std::to_string(four.stage_units[3]) + ","), std::string::npos)
      << four_json.substr(0, 400);
  // Stopped inside the second stage (updates 3-4 of 6) and resumed: it goes on with that stage's units.
  const TrainResult r = stopped_and_resumed(config("resumed", 3), 3);
  EXPECT_EQ(r.best_step_s, three.best_step_s);
  EXPECT_EQ(r.distinct_samples, three.distinct_samples);
  EXPECT_EQ(r.stage_units, three.stage_units);
  EXPECT_EQ(csv_without_timing(f.dir + "/three/train.csv"), csv_without_timing(f.dir + "/resumed/train.csv"));
  // Ended by its samples (as a service job is: its updates are unbounded), the run goes through every stage too.
  TrainConfig by_samples = config("by_samples", 3);
  by_samples.optimizer.updates = 1000000;
  by_samples.optimizer.max_samples = 48;
  const TrainResult s = train(by_samples, nullptr, quiet());
  EXPECT_EQ(s.samples, 48);
  EXPECT_EQ(s.best_step_s, three.best_step_s);
  std::ifstream ss(f.dir + "/by_samples/summary.json");
  const std::string sj((std::istreambuf_iterator<char>(ss)), std::istreambuf_iterator<char>());
  EXPECT_NE(sj.find("\"units\": " + std::to_string(three.stage_units[2]) + ","), std::string::npos) << sj;
  // The summary says what ended the updates; a time limit that truncates the run is named (not silent).
  EXPECT_EQ(three.ended_by, "updates");
  EXPECT_EQ(r.ended_by, "updates");
  EXPECT_EQ(s.ended_by, "max_samples");
  EXPECT_NE(sj.find("\"ended_by\": \"max_samples\""), std::string::npos) << sj;
  TrainConfig by_time = config("by_time", 3);
  by_time.optimizer.updates = 1000000;
  by_time.optimizer.time_limit_s = 1e-6;
  const TrainResult t = train(by_time, nullptr, quiet());
  EXPECT_EQ(t.ended_by, "time_limit");
  EXPECT_LT(t.updates, 1000000);
  std::ifstream ts(f.dir + "/by_time/summary.json");
  const std::string tj((std::istreambuf_iterator<char>(ts)), std::istreambuf_iterator<char>());
  EXPECT_NE(tj.find("\"updates_configured\": 1000000,\n  \"ended_by\": \"time_limit\""), std::string::npos) << tj;
}

// train.refine_evaluations: local_search's annealing from the fastest
// placement the run evaluated is one more row ("refine"); the run's result is
// it when it is the fastest, and the policy's own best stays apart.
TEST(LearnedTrain, RefineAnnealsFromTheFastestPlacementItEvaluated) {
  const Fixture f = make_fixture("refine", 5);
  std::string text = config_text(f, f.dir + "/run", 1);
  text.replace(text.find("samples_per_update: 8"), 21, "samples_per_update: 2, refine_evaluations: 300");
  text.replace(text.find("warm_start: {methods: []}"), 25, "warm_start: {methods: [single]}");
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  const BaselineResult* refine = nullptr;
  const BaselineResult* single = nullptr;
  for (const BaselineResult& b : r.baselines) {
    if (b.method == "refine") refine = &b;
    if (b.method == "single") single = &b;
  }
  ASSERT_NE(refine, nullptr);
  ASSERT_NE(single, nullptr);
  ASSERT_TRUE(refine->ok) << refine->note;
  EXPECT_NE(refine->note.find("local_search from "), std::string::npos) << refine->note;
  EXPECT_LE(refine->step_s, single->step_s);
  EXPECT_LE(refine->step_s, r.policy_best_step_s);
  // Two chains on two devices: splitting them beats one device by far.
  EXPECT_LT(refine->step_s, 0.8 * single->step_s);
  EXPECT_EQ(r.best_found_by, "refine");
  EXPECT_DOUBLE_EQ(r.best_step_s, refine->step_s);
  EXPECT_GT(r.policy_best_step_s, 0.0);
  // Started from the fastest placement there is, it finds nothing faster: no row, the start keeps its credit.
  std::string again = config_text(f, f.dir + "/again", 1);
  again.replace(again.find("samples_per_update: 8"), 21, "samples_per_update: 2, refine_evaluations: 50");
  again.replace(again.find("warm_start: {methods: []}"), 25, "warm_start: {methods: [local_search]}");
  const TrainResult a = train(parse_train_config(again, "test"), nullptr, quiet());
  ASSERT_EQ(a.best_found_by, "local_search");
  for (const BaselineResult& b : a.baselines) EXPECT_NE(b.method, "refine") << b.note;
  // Off by default; a negative budget is refused by name.
  EXPECT_EQ(parse_train_config(config_text(f, f.dir + "/off", 1), "test").optimizer.refine_evaluations, 0);
  std::string bad = config_text(f, f.dir + "/bad", 1);
  bad.replace(bad.find("samples_per_update: 8"), 21, "samples_per_update: 2, refine_evaluations: -1");
  try {
    parse_train_config(bad, "test");
    ADD_FAILURE() << "refine_evaluations: -1 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("refine_evaluations"), std::string::npos) << e.what();
  }
}

// A config whose warm start is local_search's placement (`warm`: its other
// fields), with two samples per update.
std::string never_worse_text(const Fixture& f, const std::string& run, int64_t updates, const std::string& warm) {
  std::string text = config_text(f, f.dir + "/" + run, updates);
  text.replace(text.find("samples_per_update: 8"), 21, "samples_per_update: 2");
  text.replace(text.find("warm_start: {methods: []}"), 25, "warm_start: {methods: [local_search], " + warm + "}");
  return text;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

double simulated_best_placement(const std::string& run_dir) {
  Environment env(two_chains(5), two_devices());
  return env.simulate(from_named(env.graph(), env.cluster(), load_placement(run_dir + "/best_placement.json"))).step_s;
}

// A tie goes to the baseline: a policy that reproduces local_search's
// placement (cloned) did not beat it, so it is not credited with it.
TEST(LearnedTrain, ATieWithABaselineIsCreditedToTheBaseline) {
  const Fixture f = make_fixture("tie", 5);
  const std::string text = never_worse_text(f, "run", 2, "bc_steps: 300, bc_lr: 0.05, clone_search: true");
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, quiet());
  ASSERT_EQ(r.warm_start_method, "local_search");
  ASSERT_EQ(r.baselines.size(), 1u);
  ASSERT_TRUE(r.baselines[0].ok);
  // The policy's greedy decode is the cloned placement: exactly as fast, no faster.
  ASSERT_EQ(r.policy_best_step_s, r.baselines[0].step_s);
  EXPECT_EQ(r.best_found_by, "local_search");
  EXPECT_EQ(r.best_found_at_sample, 0);  // no sample of the run found it (it named the policy's)
  EXPECT_EQ(r.best_step_s, r.baselines[0].step_s);
  EXPECT_NE(file_text(f.dir + "/run/summary.json").find("\"best_found_by\": \"local_search\""), std::string::npos);
}

// The final table's verdict names the faster side only when the rank test says
// the difference is more than the noise, and never a side the medians do not.
TEST(LearnedTrain, TheVerdictAgainstThePolicyFollowsTheTestAndTheMedians) {
  BaselineResult b;
  b.step_s = 2.0;
  EXPECT_STREQ(b.verdict_vs_policy(1.0), "");  // not tested (simulated rows)
  b.p_vs_policy = 0.2;
  EXPECT_STREQ(b.verdict_vs_policy(1.0), "no difference");
  b.p_vs_policy = 0.01;
  EXPECT_STREQ(b.verdict_vs_policy(1.0), "policy faster");
  EXPECT_STREQ(b.verdict_vs_policy(3.0), "row faster");
  EXPECT_STREQ(b.verdict_vs_policy(2.0), "differ, equal medians");
}

// A policy whose final measurement failed has no step: its figure is the
// failure penalty, which the table, the summary and a service job never show
// as the policy's step.
TEST(LearnedTrain, AFailedFinalMeasurementLeavesThePolicyWithoutAStep) {
  TrainResult r;
  EXPECT_EQ(r.policy_step_s(), 0.0);  // evaluated nothing
  r.policy_best_step_s = 0.25;
  EXPECT_EQ(r.policy_step_s(), 0.25);
  r.policy_failed = "oom";
  r.policy_best_step_s = 10.0;  // the failure penalty
  EXPECT_EQ(r.policy_step_s(), 0.0);
}

// The warm start counts as seen: a run stopped early (no baselines compared)
// and a resumed run (only the checkpoint's warm start) return local_search's
// placement when the policy's two random samples are slower.
TEST(LearnedTrain, TheWarmStartIsTheResultWhenStoppedEarlyOrResumed) {
  const Fixture f = make_fixture("warm_seen", 5);
  const TrainConfig c = parse_train_config(never_worse_text(f, "run", 2, "bc_steps: 0"), "test");
  TrainControls stop = quiet();
  stop.stop_after_updates = 1;
  const TrainResult a = train(c, nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  const std::string stopped_summary = file_text(f.dir + "/run/summary.json");
  const TrainResult b = train(c, nullptr, resume);
  ASSERT_EQ(a.updates, 1);
  ASSERT_EQ(b.updates, 2);
  for (const TrainResult* r : {&a, &b}) {
    ASSERT_EQ(r->warm_start_method, "local_search");
    ASSERT_GT(r->policy_best_step_s, r->warm_start_step_s);
    EXPECT_EQ(r->best_found_by, "local_search");
    EXPECT_EQ(r->best_step_s, r->warm_start_step_s);
  }
  EXPECT_NE(stopped_summary.find("\"best_found_by\": \"local_search\""), std::string::npos) << stopped_summary;
  EXPECT_NEAR(simulated_best_placement(f.dir + "/run"), b.warm_start_step_s, 1e-12);
}

// A resumed run keeps every warm-start row, not only the one it cloned: single is cloned (a heuristic),
// local_search's faster split only seeds the elites, and it is still the result after a resume (the
// checkpoint used to keep the cloned placement alone, and a resumed service job answered single's, 35%
// slower than what it had already recorded).
TEST(LearnedTrain, AResumedRunKeepsEveryWarmStartRow) {
  const Fixture f = make_fixture("warm_rows", 5);
  std::string text = config_text(f, f.dir + "/run", 2);
  text.replace(text.find("samples_per_update: 8"), 21, "samples_per_update: 2");
  text.replace(text.find("warm_start: {methods: []}"), 25,
               "warm_start: {methods: [single, local_search], bc_steps: 0}");
  const TrainConfig c = parse_train_config(text, "test");
  TrainControls stop = quiet();
  stop.stop_after_updates = 1;
  const TrainResult a = train(c, nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  const TrainResult b = train(c, nullptr, resume);
  ASSERT_EQ(b.updates, 2);
  for (const TrainResult* r : {&a, &b}) {
    ASSERT_EQ(r->warm_start_method, "single");
    ASSERT_EQ(r->baselines.size(), 2u);
    EXPECT_EQ(r->baselines[1].method, "local_search");
    ASSERT_LT(r->baselines[1].step_s, r->baselines[0].step_s);
    EXPECT_EQ(r->best_found_by, "local_search");
    EXPECT_EQ(r->best_step_s, r->baselines[1].step_s);
  }
  EXPECT_EQ(b.baselines[1].placement.device_of, a.baselines[1].placement.device_of);
}

// A cancel during behaviour cloning (a server stopping) leaves a checkpoint of a policy never warm-started;
// the resume clones again instead of going on from it (it went on, and its own best stayed behind the
// placement it was to clone).
TEST(LearnedTrain, AResumeClonesAgainWhenACancelCutTheCloningShort) {
  const Fixture f = make_fixture("bc_cut", 5);
  std::string text = config_text(f, f.dir + "/run", 2);
  text.replace(text.find("warm_start: {methods: []}"), 25,
               "warm_start: {methods: [m_etf], bc_steps: 300, bc_lr: 0.05}");
  const TrainConfig c = parse_train_config(text, "test");
  std::atomic<bool> cancel{true};
  TrainControls stop = quiet();
  stop.cancel = &cancel;
  const TrainResult a = train(c, nullptr, stop);
  EXPECT_EQ(a.updates, 0);
  EXPECT_NE(file_text(f.dir + "/run/summary.json").find("\"bc_reproduced\": false"), std::string::npos);
  TrainControls resume = quiet();
  resume.resume = true;
  const TrainResult b = train(c, nullptr, resume);
  EXPECT_EQ(b.updates, 2);
  const std::string summary = file_text(f.dir + "/run/summary.json");
  EXPECT_NE(summary.find("\"bc_reproduced\": true"), std::string::npos) << summary.substr(0, 600);
}

// A run with warm_start.split_units false trained on units the warm start did not split; its checkpoint
// decodes over the same units on its graph (it split them: 15 units where it trained on 12).
TEST(LearnedTrain, ACheckpointDecodesOverTheUnitsItTrainedOn) {
  ScratchDir dir("learned_nosplit");
  const TrainConfig c = parse_train_config(
      "name: nosplit\n"
      "graph: {builder: rnnlm, options: {layers: 2, hidden: 64, steps: 3, batch: 8, vocab: 100}}\n"
      "cluster: k80x2\n"
      "policy: {type: seq2seq, hidden: 16, max_groups: 12}\n"
      "train: {updates: 1, samples_per_update: 4}\n"
      "warm_start: {methods: [m_etf], bc_steps: 0, split_units: false}\n"
      "run: {seed: 1, output_dir: " +
          dir.path() + "/run}\n",
      "test");
  const TrainResult r = train(c, nullptr, quiet());
  ASSERT_EQ(r.stage_units.size(), 1u);
  BuilderOptions o;
  o.values = {{"layers", 2}, {"hidden", 64}, {"steps", 3}, {"batch", 8}, {"vocab", 100}};
  Environment env(build_graph("rnnlm", o), cluster_preset("k80x2"));
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  const PlaceResult placed = place_with_checkpoint(dir.path() + "/run", ctx);
  EXPECT_NE(placed.note.find("over " + std::to_string(r.stage_units[0]) + " units"), std::string::npos) << placed.note;
}

// grad_clip 0 is no clipping in behaviour cloning as in the updates: the same run as with a clip no gradient
// reaches (cloning clipped every gradient to 1e-6 at 0, and took other steps).
TEST(LearnedTrain, GradClipZeroIsNoClippingInCloningToo) {
  const Fixture f = make_fixture("clip0", 5);
  auto run = [&](const std::string& name, const std::string& clip) {
    std::string text = config_text(f, f.dir + "/" + name, 1);
    text.replace(text.find("logit_noise: 0.3"), 16, "logit_noise: 0.3, grad_clip: " + clip);
    text.replace(text.find("warm_start: {methods: []}"), 25,
                 "warm_start: {methods: [m_etf], bc_steps: 300, bc_lr: 0.05}");
    train(parse_train_config(text, "test"), nullptr, quiet());
    return csv_without_timing(f.dir + "/" + name + "/train.csv");
  };
  EXPECT_EQ(run("zero", "0"), run("huge", "1e6"));
}

// A placement seen outside the run (the service's fast-path answer) is
// evaluated in the run's environment and is the result when it is faster;
// one that does not fit the graph is a failed row, not an error.
TEST(LearnedTrain, APlacementSeenOutsideTheRunIsTheResultWhenFaster) {
  const Fixture f = make_fixture("seen", 5);
  std::string text = config_text(f, f.dir + "/run", 1);
  text.replace(text.find("samples_per_update: 8"), 21, "samples_per_update: 2");
  const Graph g = two_chains(5);
  Placement split;  // one chain per device
  for (const Op& op : g.ops()) split.device_of.push_back(DeviceId(op.name[0] == 'b' ? 1 : 0));
  TrainControls ctl = quiet();
  ctl.seen = {{"fast_path:by_hand", split}, {"wrong_size", Placement{{DeviceId(0)}}}};
  const TrainResult r = train(parse_train_config(text, "test"), nullptr, ctl);
  ASSERT_EQ(r.seen.size(), 2u);
  ASSERT_TRUE(r.seen[0].ok);
  EXPECT_FALSE(r.seen[1].ok);
  EXPECT_FALSE(r.seen[1].note.empty());
  ASSERT_GT(r.policy_best_step_s, r.seen[0].step_s);
  EXPECT_EQ(r.best_found_by, "fast_path:by_hand");
  EXPECT_EQ(r.best_step_s, r.seen[0].step_s);
  EXPECT_NEAR(simulated_best_placement(f.dir + "/run"), r.seen[0].step_s, 1e-12);
  EXPECT_NE(file_text(f.dir + "/run/summary.json").find("{\"found_by\": \"fast_path:by_hand\", \"ok\": true"),
            std::string::npos);
}

using testing_config::expect_error;

TEST(LearnedTrain, MalformedConfigsNameTheField) {
  const std::string ok = "name: x\ngraph: {builder: mlp}\ncluster: k80x2\n";
  EXPECT_NO_THROW(parse_train_config(ok, "ok.yaml"));
  expect_error(ok + "train: {lr: fast}\n", "train.lr: expected a number, got 'fast'");
  expect_error(ok + "train: {lr: 20}\n", "train.lr: must be in [0, 10]");
  expect_error(ok + "train: {updatez: 3}\n", "train.updatez: unknown field");
  expect_error(ok + "policy: {type: lstm}\n", "policy.type: unknown policy 'lstm'");
  expect_error(ok + "reward: {mode: real}\n", "reward.mode: unknown mode 'real'");
  expect_error(ok + "reward: {final_max_steps: -1}\n", "reward.final_max_steps: must be in [0, 100000]");
  expect_error(ok + "reward: {final_target: 0.7}\n", "reward.final_target: must be in [0, 0.5]");
  expect_error(ok + "reward: {finalists: 65}\n", "reward.finalists: must be in [0, 64]");
  expect_error(ok + "reward: {final_retakes: 11}\n", "reward.final_retakes: must be in [0, 10]");
  expect_error(ok + "reward: {spell_ratio: 0.5}\n", "reward.spell_ratio: must be in [1, 1000]");
  expect_error(ok + "train: {distinct_redraws: 65}\n", "train.distinct_redraws: must be in [-1, 64]");
  expect_error(ok + "train: {unit_stages: 0}\n", "train.unit_stages: must be in [1, 8]");
  expect_error(ok + "policy: {place_levels: 9}\n", "policy.place_levels: must be in [1, 8]");
  expect_error(ok + "policy: {place_around: 1.5}\n", "policy.place_around: must be in [0, 1]");
  expect_error(ok + "policy: {init_answer_s: -1}\n", "policy.init_answer_s: must be in [0, 3600]");
  expect_error(ok + "policy: {init_answer_s: soon}\n", "policy.init_answer_s: expected a number, got 'soon'");
  expect_error(ok + "policy: {hidden: 33}\n", "policy.hidden: must be even");
  expect_error(ok + "policy: {place_samples: 0}\n", "policy.place_samples: must be in [1, 4096]");
  expect_error(ok + "policy: {decoder: gru}\n", "policy.decoder: unknown decoder 'gru'");
  expect_error(ok + "graph2: 1\n", "graph2: unknown field");
  expect_error("name: x\ncluster: k80x2\n", "graph: missing");
  expect_error("name: x\ngraph: {builder: mlp, file: a.json}\ncluster: k80x2\n", "graph: give exactly one");
  expect_error("name: x\ngraph: {builder: mlp, options: {layers: two}}\ncluster: k80x2\n",
               "graph.options.layers: expected an integer");
  expect_error("name: [x\n", "not valid YAML/JSON");
  // Method names are checked when training starts.
  TrainConfig c = parse_train_config(ok + "warm_start: {methods: [fastest]}\n", "ok.yaml");
  try {
    train(c, nullptr, quiet());
    ADD_FAILURE() << "unknown warm start method accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("warm_start.methods: unknown method 'fastest'"), std::string::npos)
        << e.what();
  }
  // JSON works too.
  const TrainConfig j = parse_train_config(R"({"name": "j", "graph": {"builder": "mlp"}, "cluster": "k80x4",
      "train": {"updates": 5, "lr": 0.5}})",
                                           "j.json");
  EXPECT_EQ(j.optimizer.updates, 5);
  EXPECT_EQ(j.optimizer.lr, 0.5);
  EXPECT_EQ(j.run.output_dir, "runs/j");
  EXPECT_EQ(j.policy.type, PolicyType::Seq2Seq);
  EXPECT_EQ(j.reward.mode, RewardMode::Simulated);
  const TrainConfig e = parse_train_config(ok + "policy: {type: gnn, decoder: pointwise}\nreward: {mode: hybrid}\n"
                                                "train: {algorithm: ppo}\n",
                                           "e.yaml");
  EXPECT_EQ(e.policy.type, PolicyType::Gnn);
  EXPECT_EQ(e.policy.decoder, DecoderKind::Pointwise);
  EXPECT_EQ(e.reward.mode, RewardMode::Hybrid);
  EXPECT_EQ(e.optimizer.algorithm, Algorithm::Ppo);
  EXPECT_EQ(parse_train_config(train_config_to_json(e), "e2").optimizer.algorithm, Algorithm::Ppo);
  expect_error(ok + "train: {algorithm: a2c}\n", "train.algorithm: unknown algorithm 'a2c'");
  expect_error(ok + "train: {elites: -1}\n", "train.elites: must be in [0, 64]");
  expect_error(ok + "train: {elite_weight: much}\n", "train.elite_weight: expected a number, got 'much'");
  expect_error(ok + "warm_start: {clone_search: maybe}\n", "warm_start.clone_search: ");
  EXPECT_TRUE(parse_train_config(ok + "warm_start: {clone_search: true}\n", "ok.yaml").warm_start.clone_search);
  // The pretrained policy's units: parameters apart (coarsening), and the units a zero-shot placement sees.
  const TrainConfig units = parse_train_config(
      ok + "policy: {state_units: true, layer_units: true}\nwarm_start: {split_units: false}\n", "units.yaml");
  EXPECT_TRUE(units.policy.state_units);
  EXPECT_TRUE(units.policy.layer_units);
  EXPECT_FALSE(units.warm_start.split_units);
  const TrainConfig units_back = parse_train_config(train_config_to_json(units), "units2");
  EXPECT_TRUE(units_back.policy.state_units);
  EXPECT_TRUE(units_back.policy.layer_units);
  EXPECT_FALSE(units_back.warm_start.split_units);
  EXPECT_FALSE(parse_train_config(ok, "ok.yaml").policy.state_units);
  EXPECT_TRUE(parse_train_config(ok, "ok.yaml").warm_start.split_units);
  expect_error(ok + "policy: {state_units: sometimes}\n", "policy.state_units: ");
  EXPECT_FALSE(parse_train_config(ok, "ok.yaml").policy.layer_units);
  expect_error(ok + "policy: {layer_units: 2}\n", "policy.layer_units: ");
  // reward.final_retakes and spell_ratio (a final table measured in a slow spell is taken again) read back.
  const TrainConfig spell = parse_train_config(ok + "reward: {final_retakes: 3, spell_ratio: 1.5}\n", "spell.yaml");
  const TrainConfig spell_back = parse_train_config(train_config_to_json(spell), "spell2");
  EXPECT_EQ(spell_back.reward.final_retakes, 3);
  EXPECT_EQ(spell_back.reward.spell_ratio, 1.5);
  EXPECT_EQ(parse_train_config(ok, "ok.yaml").reward.final_retakes, 1);
  EXPECT_EQ(parse_train_config(ok, "ok.yaml").reward.spell_ratio, kSpellRatio);
  // The stored JSON form reads back to the same config.
  const TrainConfig back = parse_train_config(train_config_to_json(j), "back");
  EXPECT_EQ(train_config_to_json(back), train_config_to_json(j));
}

// The same config read from a parsed JSON node (as the service reads a
// request's) and from YAML text; an error carries its field apart from the message.
TEST(LearnedTrain, ConfigReadsTheSameFromAJsonNode) {
  const std::string text = R"({"name": "j", "graph": {"builder": "mlp", "options": {"layers": 2}}, "cluster": "k80x4",
      "policy": {"type": "gnn", "hidden": 8}, "reward": {"mode": "hybrid", "exponent": 0.25},
      "train": {"updates": 5, "lr": 0.5, "algorithm": "ppo"}, "warm_start": {"methods": "m_etf,m_topo"},
      "run": {"seed": 7}, "compare": ["single"]})";
  rj::Document doc;
  doc.Parse(text.c_str(), text.size());
  ASSERT_FALSE(doc.HasParseError());
  const FieldFail fail = throw_field_error<InputError>("j");
  TrainConfig from_node = read_train_config(JsonNode(&doc), "", fail);
  complete_train_config(from_node, "", fail);
  EXPECT_EQ(train_config_to_json(from_node), train_config_to_json(parse_train_config(text, "j")));
  EXPECT_EQ(from_node.reward.reward.exponent, 0.25);
  EXPECT_EQ(from_node.warm_start.methods, (std::vector<std::string>{"m_etf", "m_topo"}));

  doc.Parse(R"({"train": {"lr": "fast"}})");
  try {
    read_train_config(JsonNode(&doc), "learned", fail);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "learned.train.lr");
    EXPECT_EQ(e.problem(), "expected a number, got \"fast\"");
    EXPECT_STREQ(e.what(), "j: learned.train.lr: expected a number, got \"fast\"");
  }
  try {
    parse_train_config("name: x\ngraph: {builder: mlp}\ncluster: k80x2\npolicy: {type: lstm}\n", "bad.yaml");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "policy.type");
    EXPECT_EQ(e.problem(), "unknown policy 'lstm' (known: seq2seq, hierarchical, gnn)");
  }
}

TEST(LearnedTrain, MalformedCheckpointsNameTheFile) {
  const Fixture f = make_fixture("badckpt", 2);
  const std::string run = f.dir + "/run";
  fs::create_directories(run);
  const Graph g = two_chains(2);
  Environment env(g, two_devices());
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  try {
    place_with_checkpoint(run, ctx);
    ADD_FAILURE() << "missing checkpoint accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(run + "/checkpoint.pt: no checkpoint"), std::string::npos) << e.what();
  }
  { std::ofstream(run + "/checkpoint.pt") << "not a checkpoint"; }
  try {
    place_with_checkpoint(run, ctx);
    ADD_FAILURE() << "garbage checkpoint accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(run + "/checkpoint.pt: not a readable checkpoint"), std::string::npos)
        << e.what();
  }
  TrainConfig c = parse_train_config(config_text(f, run, 2), "test");
  TrainControls resume = quiet();
  resume.resume = true;
  EXPECT_THROW(train(c, nullptr, resume), InputError);
}

}  // namespace
}  // namespace placer
