// Review 8 of the learned policies: a loaded policy credits itself only with its own best in
// training, reads side files only of its own run, refuses weights its config does not build and a
// trained device count out of range; a cluster over the device limit leaves the answer to the fast
// path; of decodes that all fail, the least bad is kept.
#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "../../agent/src/policy.h"
#include "../../agent/src/trainer.h"
#include "../scratch_dir.h"
#include "chain_graphs.h"
#include "placer/agent/learned.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using testing::two_chains;

struct Runs {
  ScratchDir scratch{"review8_policy"};
  std::string graph = scratch.path() + "/graph.json";
  Runs() { save_graph(two_chains(3), graph); }

  // A tiny run on cpu:2 in folder `out`; returns the folder.
  std::string train_run(const std::string& out, const std::string& policy, const std::string& train_options,
                        const std::string& warm = "{methods: []}") const {
    const std::string dir = scratch.path() + "/" + out;
    std::ostringstream o;
    o << "name: test\ngraph: {file: " << graph << "}\ncluster: \"cpu:2\"\npolicy: " << policy
      << "\ntrain: " << train_options << "\nwarm_start: " << warm << "\nrun: {seed: 7, output_dir: " << dir << "}\n";
    TrainControls quiet;
    quiet.progress = false;
    train(parse_train_config(o.str(), "test"), nullptr, quiet);
    return dir;
  }
};

// The checkpoint `from` written to `to` with its config edited and trained_devices set (nullopt: left out).
void doctor(const std::string& from, const std::string& to, const std::function<void(std::string&)>& edit,
            const std::optional<c10::IValue>& trained) {
  TrainConfig config;
  const std::shared_ptr<PolicyImpl> policy = load_policy(from, &config);
  torch::serialize::InputArchive in;
  in.load_from(from);
  torch::serialize::OutputArchive out, model;
  for (const std::string key : {"format", "config", "state"}) {
    c10::IValue v;
    in.read(key, v);
    std::string text = v.toStringRef();
    if (key == "config") edit(text);
    out.write(key, c10::IValue(text));
  }
  if (trained) out.write(kTrainedDevicesKey, *trained);
  policy->save(model);
  out.write("model", model);
  out.save_to(to);
}

void replace(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << text;
  text.replace(at, from.size(), to);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct OnTwoChains {
  Graph graph = two_chains(3);
  Environment env{graph, resolve_cluster("cpu:2")};
  PlaceContext context = PlaceContext::on(env, 3);
};

// Finding 1: a run whose policy evaluated nothing (0 updates) wrote a warm start's best_placement.json
// and no policy_best_placement.json; the policy answered with that baseline as "its best in training".
TEST(Review8Policy, ARunWhosePolicyEvaluatedNothingHasNoStoredBest) {
  const Runs runs;
  const std::string dir = runs.train_run("u0", "{type: seq2seq, hidden: 16}", "{updates: 0, samples_per_update: 4}",
                                         "{methods: [local_search], bc_steps: 0}");
  ASSERT_TRUE(fs::exists(dir + "/best_placement.json"));
  ASSERT_FALSE(fs::exists(dir + "/policy_best_placement.json"));
  OnTwoChains on;
  const PlaceResult r = LoadedPolicy::load(dir)->place(on.context);
  EXPECT_EQ(r.stats.count("best_found_simulated_s"), 0u) << r.note;
  EXPECT_EQ(r.note.find("training run"), std::string::npos) << r.note;
}

// ... while a run made before policy_best_placement.json existed, whose summary credits the policy,
// still offers its best_placement.json.
TEST(Review8Policy, AnOlderRunCreditingThePolicyKeepsItsBest) {
  const Runs runs;
  const std::string dir = runs.train_run("old", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 4}");
  ASSERT_TRUE(fs::remove(dir + "/policy_best_placement.json"));
  OnTwoChains on;
  EXPECT_EQ(LoadedPolicy::load(dir)->place(on.context).stats.count("best_found_simulated_s"), 1u);
}

// Finding 2: "checkpoint.pt" given bare read its side files from "/"; a policy file of another name in a
// run's folder (an exported policy) picked up that run's best.
TEST(Review8Policy, SideFilesAreTheCheckpointsOwnRunsOnly) {
  const Runs runs;
  const std::string dir = runs.train_run("side", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 4}");
  OnTwoChains on;
  const fs::path was = fs::current_path();
  fs::current_path(dir);
  const PlaceResult bare = LoadedPolicy::load(kCheckpointFile)->place(on.context);
  fs::current_path(was);
  EXPECT_EQ(bare.stats.count("best_found_simulated_s"), 1u) << bare.note;
  fs::copy_file(dir + "/" + kCheckpointFile, dir + "/exported.pt");
  const PlaceResult exported = LoadedPolicy::load(dir + "/exported.pt")->place(on.context);
  EXPECT_EQ(exported.stats.count("best_found_simulated_s"), 0u) << exported.note;
}

// Finding 3: a checkpoint's config relabelled to a policy with fewer weights loaded, dropping the rest.
TEST(Review8Policy, WeightsTheConfigsPolicyLacksAreRefused) {
  const Runs runs;
  const std::string h = runs.train_run("h", "{type: hierarchical, hidden: 16}", "{updates: 1, samples_per_update: 2}");
  const std::string g =
      runs.train_run("g", "{type: gnn, hidden: 16, gnn_layers: 3}", "{updates: 1, samples_per_update: 2}");
  const std::string s = runs.train_run("s", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 2}");
  const std::string dir = runs.scratch.path();
  doctor(
      h + "/checkpoint.pt", dir + "/h_as_s.pt", [](std::string& c) { replace(c, "hierarchical", "seq2seq"); }, 2);
  doctor(
      g + "/checkpoint.pt", dir + "/g3_as_g1.pt",
      [](std::string& c) { replace(c, "\"gnn_layers\": 3", "\"gnn_layers\": 1"); }, 2);
  doctor(
      s + "/checkpoint.pt", dir + "/s_as_h.pt", [](std::string& c) { replace(c, "seq2seq", "hierarchical"); }, 2);
  for (const char* file : {"h_as_s.pt", "g3_as_g1.pt", "s_as_h.pt"}) {
    const std::string e = error_of([&] { LoadedPolicy::load(dir + "/" + file); });
    EXPECT_NE(e.find(std::string(file) + ": field 'model': parameter '"), std::string::npos) << file << ": " << e;
  }
  EXPECT_NE(error_of([&] { LoadedPolicy::load(dir + "/h_as_s.pt"); }).find("is in the file but not in the seq2seq"),
            std::string::npos);
  EXPECT_NE(error_of([&] { LoadedPolicy::load(dir + "/s_as_h.pt"); }).find("is missing from the file"),
            std::string::npos);
  // Untouched, each loads.
  doctor(
      g + "/checkpoint.pt", dir + "/g.pt", [](std::string&) {}, 2);
  EXPECT_EQ(LoadedPolicy::load(dir + "/g.pt")->policy_type(), "gnn");
}

// Finding 4: trained_devices 4294967298 read as 2, -3 as unknown.
TEST(Review8Policy, TrainedDevicesOutOfRangeIsRefused) {
  const Runs runs;
  const std::string s = runs.train_run("s", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 2}");
  const std::string to = runs.scratch.path() + "/td.pt";
  for (const int64_t bad : {int64_t{4294967298}, int64_t{-3}, int64_t{0}, int64_t{17}}) {
    doctor(
        s + "/checkpoint.pt", to, [](std::string&) {}, c10::IValue(bad));
    const std::string e = error_of([&] { LoadedPolicy::load(to); });
    EXPECT_NE(e.find(to + ": field 'trained_devices': expected an integer in 1..16"), std::string::npos)
        << bad << ": " << e;
  }
  // ... and as policy.init_from, named so (it named neither the key nor the file).
  const std::string init = error_of([&] {
    runs.train_run("i", "{type: seq2seq, hidden: 16, init_from: " + to + "}", "{updates: 1, samples_per_update: 2}");
  });
  EXPECT_NE(init.find("policy.init_from: " + to + ": field 'trained_devices'"), std::string::npos) << init;
  doctor(
      s + "/checkpoint.pt", to, [](std::string&) {}, c10::IValue(std::string("2")));
  EXPECT_NE(error_of([&] { LoadedPolicy::load(to); }).find("'trained_devices'"), std::string::npos);
  doctor(
      s + "/checkpoint.pt", to, [](std::string&) {}, c10::IValue(int64_t{16}));
  EXPECT_EQ(LoadedPolicy::load(to)->trained_devices(), 16);
}

// Finding 5: with the trained device count unknown, a cluster over the policies' device limit was a plain
// InputError: beside a fast path the policy is skipped (PolicyOutOfRange) and the fast path answers.
TEST(Review8Policy, OverTheDeviceLimitTheFastPathAnswers) {
  const Runs runs;
  const std::string s = runs.train_run("s", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 2}");
  const std::string to = runs.scratch.path() + "/unknown.pt";
  doctor(
      s + "/checkpoint.pt", to,
      [&](std::string& c) { replace(c, "\"cpu:2\"", "\"" + runs.scratch.path() + "/gone.json\""); }, std::nullopt);
  const std::shared_ptr<const LoadedPolicy> p = LoadedPolicy::load(to);
  ASSERT_EQ(p->trained_devices(), 0);
  const Graph g = two_chains(3);
  Environment env(g, resolve_cluster("cpu:20"));
  const PlaceContext ctx = PlaceContext::on(env, 1);
  EXPECT_THROW(p->place(ctx), PolicyOutOfRange);
  const PolicyAnswer a = place_with_policy(*p, ctx, 0.5, false, policy_fast_path());
  EXPECT_NE(a.found_by, "policy");
  EXPECT_NE(a.policy.note.find("skipped: cluster"), std::string::npos) << a.policy.note;
}

// Finding 6: when every decoded placement fails (out of memory), the rounds' least bad failure is kept
// (decode_best ranks failures by their simulated step), not the first round's.
TEST(Review8Policy, OfFailedDecodesTheLeastBadIsKept) {
  Cluster tiny = resolve_cluster("cpu:2");
  for (Device& d : tiny.devices) d.memory_bytes = 8;  // nothing fits
  const Graph g = two_chains(6);
  Environment env(g, tiny);
  PolicyOptions o;
  o.kind = PolicyType::Seq2Seq;
  o.hidden = 16;
  const std::shared_ptr<PolicyImpl> policy = make_policy(o, 1);
  PolicyInputOptions po;
  const PolicyInput problem = make_policy_input(g, tiny, *env.costs(), po);
  const DecodeOptions d{2, 1, 1.0, 5, 0.5, 0.0};
  StepResult kept;
  DecodeStats stats;
  decode_levels(*policy, problem, po, env, d, &kept, &stats);
  ASSERT_FALSE(kept.ok());
  ASSERT_GT(stats.rounds, 1);
  double least = 1e300, first = 0.0;
  for (int r = 0; r < stats.rounds; ++r) {  // LevelDecoder's rounds: seed, then seed + 0x9E37... * r
    StepResult sim;
    decode_best(*policy, problem, env, d.samples, d.temperature, d.seed + 0x9E3779B97F4A7C15ULL * r, &sim, r == 0);
    ASSERT_FALSE(sim.ok());
    least = std::min(least, sim.step_s);
    if (r == 0) first = sim.step_s;
  }
  ASSERT_LT(least, first) << "the test needs a later round to fail less badly";
  EXPECT_EQ(kept.step_s, least);
}

// A truncated checkpoint's error is LibTorch's first line in whole words (it was cut at 200 characters:
// "... there is a high likelihood that your checkpoint file is)").
TEST(Review8Policy, AnUnreadableCheckpointSaysWhyInWholeWords) {
  const Runs runs;
  const std::string s = runs.train_run("s", "{type: seq2seq, hidden: 16}", "{updates: 1, samples_per_update: 2}");
  const std::string cut = runs.scratch.path() + "/cut.pt";
  std::string bytes = read_file(s + "/checkpoint.pt");
  write_file_atomic(cut, bytes.substr(0, bytes.size() / 2));
  const std::string e = error_of([&] { LoadedPolicy::load(cut); });
  EXPECT_NE(e.find(cut + ": not a readable checkpoint ("), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(e.find("checkpoint file is)"), std::string::npos) << e;
  EXPECT_EQ(e.back(), ')') << e;
}

}  // namespace
}  // namespace placer
