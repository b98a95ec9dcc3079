// Review 8 of the learned placer's trainer: a resume under another reward scale, compare's budget in a family
// run, a cancel during the elite pool's seeding or the held-out placements, stale placement files, the
// counters of a resumed run, and an update dropped at a remote cancel.
#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../scratch_dir.h"
#include "chain_graphs.h"
#include "giving_up_remote.h"
#include "op_timings.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using testing::GivingUpRemote;
using testing::quiet;
using testing::two_chains;

struct RunDir {
  std::unique_ptr<ScratchDir> scratch;
  std::string dir;

  explicit RunDir(const std::string& name) : scratch(std::make_unique<ScratchDir>("review8_trainer_" + name)) {
    dir = scratch->path();
    save_graph(two_chains(4), dir + "/g.json");
  }
  // A seq2seq run on two chains of 4 on cpu:2, into `out` (under dir), `extra` YAML appended.
  TrainConfig config(const std::string& out, int64_t updates, const std::string& extra = "",
                     const std::string& warm = "[]", const std::string& policy = "{type: seq2seq, hidden: 16}") const {
    std::ostringstream o;
    o << "name: r8\ngraph: {file: " << dir << "/g.json}\ncluster: cpu:2\n"
      << "policy: " << policy << "\n"
      << "train: {updates: " << updates << ", samples_per_update: 8, lr: 0.02, logit_noise: 0.3}\n"
      << "warm_start: {methods: " << warm << ", bc_steps: 2}\n"
      << "run: {seed: 7, checkpoint_every: 2, output_dir: " << dir << "/" << out << "}\n"
      << extra;
    return parse_train_config(o.str(), "r8.yaml");
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// 1. A resume under another reward scale is refused, naming the field and both values (its best, baseline and
// elites are rewards of the checkpoint's scale: the run's best was lost to a slower placement).
TEST(Review8Trainer, AResumeUnderAnotherRewardScaleIsRefused) {
  const RunDir run("scale");
  TrainControls stop = quiet();
  stop.stop_after_updates = 2;
  train(run.config("out", 6, "reward: {exponent: 0.5}\n"), nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  const std::string e = error_of([&] { train(run.config("out", 6, "reward: {exponent: 4}\n"), nullptr, resume); });
  EXPECT_NE(e.find("reward.exponent"), std::string::npos) << e;
  EXPECT_NE(e.find("0.5"), std::string::npos) << e;
  EXPECT_NE(e.find("asks 4"), std::string::npos) << e;
  const std::string p =
      error_of([&] { train(run.config("out", 6, "reward: {failure_penalty_s: 7}\n"), nullptr, resume); });
  EXPECT_NE(p.find("reward.failure_penalty_s"), std::string::npos) << p;
  EXPECT_NE(p.find("100"), std::string::npos) << p;
  // The same scale resumes.
  EXPECT_EQ(train(run.config("out", 6, "reward: {exponent: 0.5}\n"), nullptr, resume).updates, 6);
}

// ... and the profile is the same by its contents: the same file under another path resumes, another profile
// written over the file does not (the path as typed was compared: ./p.json and its absolute path were refused).
TEST(Review8Trainer, AResumeComparesTheProfilesContentsNotItsPath) {
  const RunDir run("profile");
  const Graph g = load_graph(run.dir + "/g.json");
  const Cluster cluster = resolve_cluster("cpu:2");
  auto write_profile = [&](double ms) {
    Profile profile;
    profile.devices = "cpu:2";
    for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v)
      testing::time_on_every_device(profile, cluster, g.op(OpId(v)).name, ms);
    save_profile(profile, run.dir + "/p.json");
  };
  write_profile(1.0);
  const std::string other_path = run.dir + "/./p.json";
  TrainControls stop = quiet();
  stop.stop_after_updates = 2;
  train(run.config("out", 6, "reward: {profile: " + run.dir + "/p.json}\n"), nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  stop.stop_after_updates = 4;
  stop.resume = true;
  EXPECT_EQ(train(run.config("out", 6, "reward: {profile: " + other_path + "}\n"), nullptr, stop).updates, 4);
  write_profile(2.0);
  const std::string e =
      error_of([&] { train(run.config("out", 6, "reward: {profile: " + run.dir + "/p.json}\n"), nullptr, resume); });
  EXPECT_NE(e.find("reward.profile (--profile)"), std::string::npos) << e;
  EXPECT_NE(e.find("another file's contents"), std::string::npos) << e;
}

// 2. In a family run, compare's search gets the samples spent on graph 0, the graph it is compared on (it got
// the whole family's).
TEST(Review8Trainer, AFamilyRunComparesOnGraphZerosSamples) {
  const RunDir run("family");
  save_graph(two_chains(3), run.dir + "/g3.json");
  std::ostringstream o;
  o << "name: fam\nfamily: [{file: " << run.dir << "/g.json}, {file: " << run.dir << "/g3.json}]\n"
    << "cluster: cpu:2\ncompare: [local_search]\npolicy: {type: gnn, hidden: 16}\n"
    << "train: {updates: 4, samples_per_update: 8}\nwarm_start: {methods: []}\n"
    << "run: {seed: 3, output_dir: " << run.dir << "/out}\n";
  const TrainConfig c = parse_train_config(o.str(), "fam.yaml");
  const TrainResult r = train(c, nullptr, quiet());
  ASSERT_EQ(r.samples, 32);
  ASSERT_EQ(r.baselines.size(), 1u);
  // local_search on graph 0 with its 16 samples.
  Environment env(load_graph(run.dir + "/g.json"), resolve_cluster("cpu:2"));
  PlaceContext ctx = PlaceContext::on(env, c.run.seed);
  ctx.sample_budget = 16;
  EXPECT_EQ(r.baselines[0].note, make_placer("local_search")->place(ctx).note);
}

// 3. A cancel that gives up a remote batch while the warm start's placements seed the elite pool ends the run
// as stopped with its outputs (the EvaluationCancelled went through train()).
TEST(Review8Trainer, ACancelWhileSeedingTheElitesEndsTheRunAsStopped) {
  const RunDir run("seed_cancel");
  std::atomic<bool> cancel{false};
  TrainControls ctl = quiet();
  ctl.cancel = &cancel;
  // Batch 1: the warm start's placement; batch 2: its cut to the policy's 2 groups, seeding the pool.
  ctl.remote = std::make_shared<GivingUpRemote>(&cancel, [](int b, const std::string&, size_t) { return b >= 2; });
  const TrainResult r =
      train(run.config("out", 6, "", "[m_etf], split_units: false", "{type: seq2seq, hidden: 16, max_groups: 2}"),
            nullptr, ctl);
  EXPECT_EQ(r.ended_by, "stopped");
  EXPECT_EQ(r.updates, 0);
  EXPECT_FALSE(r.best_placement.device.empty());
  EXPECT_TRUE(fs::exists(run.dir + "/out/summary.json"));
}

// 3. ... and while the trained policy's placement of a held-out graph is evaluated.
TEST(Review8Trainer, ACancelWhilePlacingHeldOutGraphsEndsTheRunAsStopped) {
  const RunDir run("held_out_cancel");
  Graph held = two_chains(3);
  held.name = "held";
  save_graph(held, run.dir + "/held.json");
  std::ostringstream o;
  o << "name: h\nfamily: [{file: " << run.dir << "/g.json}]\nheld_out: [{file: " << run.dir << "/held.json}]\n"
    << "cluster: cpu:2\npolicy: {type: gnn, hidden: 16}\ntrain: {updates: 2, samples_per_update: 4}\n"
    << "warm_start: {methods: []}\nrun: {seed: 3, output_dir: " << run.dir << "/out}\n";
  std::atomic<bool> cancel{false};
  TrainControls ctl = quiet();
  ctl.cancel = &cancel;
  ctl.remote = std::make_shared<GivingUpRemote>(&cancel, [](int, const std::string& g, size_t) { return g == "held"; });
  const TrainResult r = train(parse_train_config(o.str(), "h.yaml"), nullptr, ctl);
  EXPECT_EQ(r.ended_by, "stopped");
  EXPECT_TRUE(r.held_out.empty());
  EXPECT_TRUE(fs::exists(run.dir + "/out/summary.json"));
}

// 4. A run that writes no placement files removes those an earlier run left in its folder (they were listed
// as this run's).
TEST(Review8Trainer, PlacementFilesOfAnEarlierRunAreRemoved) {
  const RunDir run("stale");
  train(run.config("out", 2, "", "[m_topo]"), nullptr, quiet());
  for (const char* f : {"best_placement.json", "policy_best_placement.json", "warm_start_placement.json"})
    ASSERT_TRUE(fs::exists(run.dir + "/out/" + f)) << f;
  const TrainResult r = train(run.config("out", 0), nullptr, quiet());
  EXPECT_TRUE(r.best_placement.device.empty());
  for (const char* f : {"best_placement.json", "policy_best_placement.json", "warm_start_placement.json"})
    EXPECT_FALSE(fs::exists(run.dir + "/out/" + f)) << f;
}

// 4. ... but a resumed run keeps (writes again) its earlier sessions' files.
TEST(Review8Trainer, AResumedRunKeepsItsPlacementFiles) {
  const RunDir run("stale_resume");
  TrainControls stop = quiet();
  stop.stop_after_updates = 2;
  train(run.config("out", 4, "", "[m_topo]"), nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  train(run.config("out", 4, "", "[m_topo]"), nullptr, resume);
  for (const char* f : {"best_placement.json", "policy_best_placement.json", "warm_start_placement.json"})
    EXPECT_TRUE(fs::exists(run.dir + "/out/" + f)) << f;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The column `name` of a train.csv.
std::vector<std::string> csv_column(const std::string& path, const std::string& name) {
  const std::vector<std::string> lines = lines_of(path);
  std::vector<std::string> out;
  if (lines.empty()) return out;
  auto cells = [](const std::string& l) {
    std::vector<std::string> c;
    std::stringstream s(l);
    for (std::string x; std::getline(s, x, ',');) c.push_back(x);
    return c;
  };
  const std::vector<std::string> head = cells(lines[0]);
  const size_t col = std::find(head.begin(), head.end(), name) - head.begin();
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> c = cells(lines[i]);
    out.push_back(col < c.size() ? c[col] : "(none)");
  }
  return out;
}

// 5. A resumed run's counters cover the whole run, as its updates and samples do: its train.csv's cache hits
// carry on from its checkpoint's (they restarted at 0 with each session). (They are a straight run's where the
// resumed session repeats no placement of the earlier one: the cache is not kept.)
TEST(Review8Trainer, AResumedRunCountsItsCacheHitsOverTheWholeRun) {
  const RunDir run("counters");
  train(run.config("straight", 8), nullptr, quiet());
  TrainControls stop = quiet();
  stop.stop_after_updates = 3;
  train(run.config("resumed", 8), nullptr, stop);
  TrainControls resume = quiet();
  resume.resume = true;
  train(run.config("resumed", 8), nullptr, resume);
  const std::vector<std::string> straight = csv_column(run.dir + "/straight/train.csv", "cache_hits");
  const std::vector<std::string> resumed = csv_column(run.dir + "/resumed/train.csv", "cache_hits");
  ASSERT_EQ(straight.size(), 8u);
  ASSERT_EQ(resumed.size(), 8u);
  ASSERT_NE(straight[2], "0");  // the first session's hits, which the resumed session counts on from
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(resumed[i], straight[i]);
  for (size_t i = 3; i < 8; ++i) EXPECT_GE(std::stoll(resumed[i]), std::stoll(resumed[i - 1])) << "update " << i + 1;
  EXPECT_EQ(csv_column(run.dir + "/resumed/train.csv", "samples"),
            csv_column(run.dir + "/straight/train.csv", "samples"));
}

// The checkpoint's record of sampled placements and its state's best.
struct Kept {
  std::vector<int32_t> sampled;
  std::string best;
};

Kept kept_of(const std::string& path) {
  torch::serialize::InputArchive a;
  a.load_from(path);
  torch::Tensor s;
  a.read("sampled_0", s);
  s = s.contiguous();
  Kept k;
  k.sampled.assign(s.data_ptr<int32_t>(), s.data_ptr<int32_t>() + s.numel());
  c10::IValue v;
  a.read("state", v);
  const std::string state = v.toStringRef();
  const size_t from = state.find("\"best_reward\"");
  k.best = state.substr(from, state.find("\"warm_method\"") - from);  // best_reward .. sampled_earlier
  const size_t elites = state.find("\"elites\"");
  k.best += state.substr(elites);
  return k;
}

// 6. An update dropped at a remote cancel leaves nothing behind: its placements are not recorded as sampled
// (never evaluated) and a new best or elite its first batch found is not kept (found at a sample that never
// counted). The cancelled run's checkpoint is that of a run stopped after the updates it committed.
TEST(Review8Trainer, AnUpdateDroppedAtACancelLeavesNoTrace) {
  const RunDir run("dropped");
  for (int at = 2; at <= 7; ++at) {
    std::atomic<bool> cancel{false};
    TrainControls ctl = quiet();
    ctl.cancel = &cancel;
    ctl.remote = std::make_shared<GivingUpRemote>(&cancel, [at](int b, const std::string&, size_t) { return b >= at; });
    const std::string out = "c" + std::to_string(at);
    const TrainResult r = train(run.config(out, 20), nullptr, ctl);
    ASSERT_EQ(r.ended_by, "stopped");
    TrainControls stop = quiet();
    stop.stop_after_updates = r.updates;
    std::atomic<bool> never{false};
    stop.cancel = &never;
    stop.remote = std::make_shared<GivingUpRemote>(&never, [](int, const std::string&, size_t) { return false; });
    train(run.config("s" + std::to_string(at), 20), nullptr, stop);
    const Kept cancelled = kept_of(run.dir + "/" + out + "/checkpoint.pt");
    const Kept stopped = kept_of(run.dir + "/s" + std::to_string(at) + "/checkpoint.pt");
    EXPECT_EQ(cancelled.sampled, stopped.sampled) << "cancelled at batch " << at;
    EXPECT_EQ(cancelled.best, stopped.best) << "cancelled at batch " << at;
  }
}

}  // namespace
}  // namespace placer
