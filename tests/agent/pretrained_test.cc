// A pretrained gnn (the mechanism of configs/pretrain_gnn.yaml and `make
// pretrained`, here trained in a second from tests/fixtures/pretrain_tiny.yaml
// and named by PLACER_PRETRAINED) places graphs it was not trained on; a named
// policy that is missing or corrupt is an error naming the path; family entries
// may name their cluster.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "../scratch_dir.h"
#include "placer/agent/learned.h"
#include "placer/agent/placer.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/placement.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

// Trains tests/fixtures/pretrain_tiny.yaml once per process and names it as
// "pretrained" ($PLACER_PRETRAINED); returns its folder, removed at exit.
const std::string& tiny_pretrained() {
  static const ScratchDir dir("placer_pretrain_tiny");
  static const bool trained = [] {
    TrainConfig c = load_train_config(std::string(PLACER_FIXTURES_DIR) + "/pretrain_tiny.yaml");
    c.run.output_dir = dir.path();
    TrainControls quiet;
    quiet.progress = false;
    train(c, nullptr, quiet);
    return true;
  }();
  (void)trained;
  setenv("PLACER_PRETRAINED", dir.path().c_str(), 1);
  return dir.path();
}

PlaceContext context_of(Environment& env, uint64_t seed) { return PlaceContext::on(env, seed); }

// A graph of no family entry (a transformer; the family is an mlp and an
// rnnlm) on both clusters the policy was trained for.
TEST(Pretrained, PlacesAnUnseenGraphIntoAValidPlacement) {
  EXPECT_EQ(pretrained_policy_dir(), tiny_pretrained());
  ASSERT_TRUE(fs::exists(pretrained_policy_dir() + "/checkpoint.pt")) << pretrained_policy_dir();
  const std::shared_ptr<const LoadedPolicy> policy = load_named_policy("pretrained");
  EXPECT_EQ(policy->policy_type(), "gnn");
  BuilderOptions bo;
  bo.values = {{"layers", 3}, {"dec_layers", 1}, {"d_model", 128}, {"seq", 32}, {"batch", 8}, {"vocab", 3000}};
  const Graph g = build_graph("transformer", bo);
  for (const char* preset : {"k80x4", "p100x4"}) {
    Environment env(g, resolve_cluster(preset));
    const PolicyAnswer a = place_with_policy(*policy, context_of(env, 1), 1.0, /*refine=*/true);
    ASSERT_EQ(static_cast<int64_t>(a.policy.placement.device_of.size()), g.size()) << preset;
    EXPECT_NO_THROW(validate_placement(g, env.cluster(), a.policy.placement)) << preset;
    EXPECT_NO_THROW(validate_placement(g, env.cluster(), a.placement)) << preset;
    EXPECT_TRUE(a.policy_ok) << preset;
    EXPECT_EQ(a.policy_step_s, env.simulate(a.policy.placement).step_s) << preset;
    // The refinement starts from the policy's placement: the answer is never slower.
    EXPECT_TRUE(a.refined) << preset;
    EXPECT_LE(a.step_s, a.policy_step_s) << preset;
    EXPECT_EQ(a.step_s, env.simulate(a.placement).step_s) << preset;
    EXPECT_EQ(a.improved, a.step_s < a.policy_step_s) << preset;
    EXPECT_GE(a.step_s, env.lower_bound() * (1 - 1e-9)) << preset;
  }
}

// With a fast path (what `placer place --policy` runs by default), the answer
// is the fastest of the policy's placement, the heuristics' and the
// refinement's, and `found_by` names which; the policy's own figure stays apart.
TEST(Pretrained, AnswerIsTheFastestOfThePolicyAndTheFastPathAndSaysWhoFoundIt) {
  tiny_pretrained();
  const std::shared_ptr<const LoadedPolicy> policy = load_named_policy("pretrained");
  BuilderOptions bo;
  bo.values = {{"layers", 3}, {"dec_layers", 1}, {"d_model", 128}, {"seq", 32}, {"batch", 8}, {"vocab", 3000}};
  const Graph g = build_graph("transformer", bo);
  int heuristic_won = 0;
  for (const char* preset : {"k80x4", "p100x4"}) {
    Environment env(g, resolve_cluster(preset));
    double fastest_heuristic = 1e30;
    for (const std::string& m : policy_fast_path())
      fastest_heuristic =
          std::min(fastest_heuristic, env.simulate(make_placer(m)->place(context_of(env, 1)).placement).step_s);
    const PolicyAnswer a = place_with_policy(*policy, context_of(env, 1), 1e9, /*refine=*/false, policy_fast_path());
    // The policy's own figure is untouched: its fixed decode's.
    EXPECT_EQ(a.policy_step_s, env.simulate(policy->place(context_of(env, 1)).placement).step_s) << preset;
    const PolicyAnswer alone = place_with_policy(*policy, context_of(env, 1), 0.2, /*refine=*/false);
    EXPECT_EQ(alone.found_by, "policy") << preset;
    EXPECT_TRUE(alone.fast_path_method.empty()) << preset;
    EXPECT_DOUBLE_EQ(a.fast_path_step_s, fastest_heuristic) << preset;
    EXPECT_DOUBLE_EQ(a.step_s, std::min(a.policy_step_s, fastest_heuristic)) << preset;
    EXPECT_EQ(a.step_s, env.simulate(a.placement).step_s) << preset;
    EXPECT_EQ(a.found_by, a.fast_path_step_s < a.policy_step_s ? a.fast_path_method : "policy") << preset;
    heuristic_won += a.found_by != "policy";
    // Refined: local_search starts from the faster of the two, then from the
    // slower (the time split), and the answer is never slower than the faster.
    // The budget leaves time to refine on a slow machine too: twice what the policy and the fast path took, plus
    // 1 s (the time is measured in another call, so a loaded machine may run this one slower).
    const double budget_s = 2 * a.seconds + 1.0;
    const PolicyAnswer r =
        place_with_policy(*policy, context_of(env, 1), budget_s, /*refine=*/true, policy_fast_path());
    EXPECT_TRUE(r.refined) << preset;
    // Before the refinement the policy samples for half the budget: its samples
    // add to the fixed decode of the same seed, so it is never slower than a's.
    EXPECT_GE(r.policy.evaluations, a.policy.evaluations) << preset;
    EXPECT_LE(r.policy_step_s, a.policy_step_s) << preset;
    EXPECT_EQ(r.fast_path_method, a.fast_path_method) << preset;
    EXPECT_LE(r.step_s, a.step_s) << preset;
    const std::string faster = r.fast_path_step_s < r.policy_step_s ? r.fast_path_method : "policy";
    const std::string other = faster == "policy" ? r.fast_path_method : "policy";
    ASSERT_EQ(r.refine_starts, (std::vector<std::string>{faster, other})) << preset;
    if (r.improved)
      EXPECT_TRUE(r.found_by == faster + "+local_search" || r.found_by == other + "+local_search") << r.found_by;
    else
      EXPECT_EQ(r.found_by, faster) << preset;
    EXPECT_EQ(r.step_s, env.simulate(r.placement).step_s) << preset;
    EXPECT_GT(r.refine_evaluations, 0) << preset;
  }
  // The tiny policy (trained for a second) is slower than a heuristic somewhere:
  // the heuristics' branch is exercised.
  EXPECT_GE(heuristic_won, 1);
}

// The policy alone has the whole budget: its anytime decode keeps drawing
// rounds of samples until the budget is nearly spent. It only adds candidates
// to the fixed decode of the same seed, so it is never slower; beside the fast
// path (or the refinement) the policy decodes its fixed rounds and leaves them the time.
TEST(Pretrained, PolicyAloneSamplesUntilItsBudgetAndIsNeverSlowerThanTheFixedDecode) {
  tiny_pretrained();
  const std::shared_ptr<const LoadedPolicy> policy = load_named_policy("pretrained");
  BuilderOptions bo;
  bo.values = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 64}, {"seq", 16}, {"batch", 4}, {"vocab", 500}};
  const Graph g = build_graph("transformer", bo);
  for (const char* preset : {"k80x4", "p100x4"}) {
    Environment env(g, resolve_cluster(preset));
    const PlaceResult fixed = policy->place(context_of(env, 3));
    // Time for more rounds however slow the machine: five times the fixed decode (timed in another call).
    const double budget_s = std::max(0.2, 5.0 * fixed.place_seconds);
    const PlaceResult timed = policy->place(context_of(env, 3), budget_s);
    EXPECT_GT(timed.evaluations, fixed.evaluations) << preset;
    EXPECT_GT(timed.stats.at("decode_rounds"), fixed.stats.at("decode_rounds")) << preset;
    EXPECT_NE(timed.note.find("rounds of"), std::string::npos) << timed.note;
    EXPECT_LE(env.simulate(timed.placement).step_s, env.simulate(fixed.placement).step_s) << preset;
    EXPECT_NO_THROW(validate_placement(g, env.cluster(), timed.placement)) << preset;
    EXPECT_LT(timed.place_seconds, budget_s + 0.5) << preset;  // it stops (loosely: a shared machine)
    // With more time, half the further rounds (policy.place_around's default) draw near the best so far.
    const PlaceResult longer = policy->place(context_of(env, 3), 4.0 * budget_s);
    EXPECT_GT(longer.stats.at("decode_near_rounds"), 0) << preset;
    EXPECT_LE(longer.stats.at("decode_near_rounds"), longer.stats.at("decode_rounds") / 2) << preset;
    EXPECT_NE(longer.note.find("near the best so far"), std::string::npos) << longer.note;
    EXPECT_LE(env.simulate(longer.placement).step_s, env.simulate(fixed.placement).step_s) << preset;

    const PolicyAnswer alone = place_with_policy(*policy, context_of(env, 3), budget_s, /*refine=*/false);
    EXPECT_GT(alone.policy.evaluations, fixed.evaluations) << preset;
    EXPECT_LE(alone.policy_step_s, env.simulate(fixed.placement).step_s) << preset;
    const PolicyAnswer beside = place_with_policy(*policy, context_of(env, 3), budget_s, false, policy_fast_path());
    EXPECT_EQ(beside.policy.evaluations, fixed.evaluations) << preset;
    EXPECT_EQ(beside.policy_step_s, env.simulate(fixed.placement).step_s) << preset;
  }
}

TEST(Pretrained, MissingOrCorruptPolicyIsAnErrorNamingThePath) {
  const fs::path dir = fs::temp_directory_path() / ("placer_pretrained_" + std::to_string(::getpid()));
  remove_tree(dir.string());
  auto error_of = [](const std::string& name) -> std::string {
    try {
      load_named_policy(name);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  std::string e = error_of(dir.string());
  EXPECT_NE(e.find(dir.string()), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
  fs::create_directories(dir);
  e = error_of(dir.string());
  EXPECT_NE(e.find((dir / "checkpoint.pt").string() + ": no checkpoint here"), std::string::npos) << e;
  std::ofstream(dir / "checkpoint.pt") << "not a checkpoint";
  e = error_of(dir.string());
  EXPECT_NE(e.find((dir / "checkpoint.pt").string() + ": not a readable checkpoint"), std::string::npos) << e;
  // "pretrained" names $PLACER_PRETRAINED when set, and the error says how to remake it.
  setenv("PLACER_PRETRAINED", (dir / "nope").c_str(), 1);
  e = error_of("pretrained");
  tiny_pretrained();  // "pretrained" is the tiny policy again
  EXPECT_NE(e.find("policy 'pretrained': " + (dir / "nope").string() + " does not exist"), std::string::npos) << e;
  EXPECT_NE(e.find("make pretrained"), std::string::npos) << e;
  remove_tree(dir.string());
}

// One gnn trained on a family whose entries name different clusters: each
// graph's environment is on its own cluster.
TEST(Pretrained, FamilyEntriesMayNameTheirCluster) {
  const fs::path dir = fs::temp_directory_path() / ("placer_family_clusters_" + std::to_string(::getpid()));
  remove_tree(dir.string());
  const TrainConfig c = parse_train_config(R"(
name: fam
cluster: k80x2
family:
  - {builder: mlp, options: {layers: 2, width: 64, input: 32, batch: 8}}
  - {builder: mlp, options: {layers: 3, width: 64, input: 32, batch: 8}, cluster: p100x4}
policy: {type: gnn, hidden: 16, gnn_layers: 1, place_samples: 2}
train: {updates: 2, samples_per_update: 4}
warm_start: {methods: [m_etf], bc_steps: 2}
run: {output_dir: )" + dir.string() + "}\n");
  ASSERT_EQ(c.family.size(), 2u);
  EXPECT_EQ(c.family[0].cluster, "");
  EXPECT_EQ(c.family[1].cluster, "p100x4");
  EXPECT_EQ(c.family[1].describe(), "mlp(batch=8,input=32,layers=3,width=64) on p100x4");
  TrainControls quiet;
  quiet.progress = false;
  const TrainResult r = train(c, nullptr, quiet);
  EXPECT_EQ(r.samples, 8);
  // The result folder's config keeps the entry's cluster, so a checkpoint reloads with it.
  const TrainConfig again = load_train_config((dir / "config.json").string());
  ASSERT_EQ(again.family.size(), 2u);
  EXPECT_EQ(again.family[1].cluster, "p100x4");
  EXPECT_EQ(LoadedPolicy::load(dir.string())->policy_type(), "gnn");
  remove_tree(dir.string());
}

// policy.place_levels: placing without training also decodes over 1/2, 1/4,
// ... of the units; the fine decode is among the candidates, so the answer is
// never slower than it (the same weights: place_levels does not touch training).
TEST(Pretrained, CoarserDecodesAreNeverSlowerThanTheFineDecodeAlone) {
  const fs::path dir = fs::temp_directory_path() / ("placer_place_levels_" + std::to_string(::getpid()));
  remove_tree(dir.string());
  auto run = [&](int levels) {
    const TrainConfig c = parse_train_config(R"(
name: levels
cluster: p100x4
family:
  - {builder: mlp, options: {layers: 3, width: 64, input: 32, batch: 8}}
held_out:
  - {builder: transformer, options: {layers: 2, dec_layers: 1, d_model: 64, seq: 16, batch: 4, vocab: 500}}
policy: {type: gnn, hidden: 16, gnn_layers: 1, place_samples: 4, place_levels: )" +
                                             std::to_string(levels) + R"(}
train: {updates: 2, samples_per_update: 4}
warm_start: {methods: [m_etf], bc_steps: 2}
run: {output_dir: )" + (dir / std::to_string(levels)).string() +
                                             "}\n");
    TrainControls quiet;
    quiet.progress = false;
    return train(c, nullptr, quiet);
  };
  const TrainResult fine = run(1), levels = run(4);
  ASSERT_EQ(fine.held_out.size(), 1u);
  ASSERT_EQ(levels.held_out.size(), 1u);
  const double fine_s = fine.held_out.begin()->second.first, levels_s = levels.held_out.begin()->second.first;
  EXPECT_GT(fine_s, 0.0);
  EXPECT_LE(levels_s, fine_s);
  // A loaded policy says what it decoded.
  BuilderOptions bo;
  bo.values = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 64}, {"seq", 16}, {"batch", 4}, {"vocab", 500}};
  Environment env(build_graph("transformer", bo), resolve_cluster("p100x4"));
  const PlaceResult r = LoadedPolicy::load((dir / "4").string())->place(context_of(env, 1));
  EXPECT_NE(r.note.find("and the same over 1/2 to 1/8 as many"), std::string::npos) << r.note;
  EXPECT_EQ(r.evaluations, 16);
  const PlaceResult one = LoadedPolicy::load((dir / "1").string())->place(context_of(env, 1));
  EXPECT_EQ(one.note.find("1/2"), std::string::npos) << one.note;
  EXPECT_LE(env.simulate(r.placement).step_s, env.simulate(one.placement).step_s);
  remove_tree(dir.string());
}

// On a family (pretraining) the default distinct_redraws is off: the redrawn
// placements the elites clone are each graph's own noisy finds, and the shipped
// policy placed 6 of 12 held-out cells within 5% zero-shot with them, 9 without.
TEST(Pretrained, FamilyTrainingDoesNotRedrawRepeatsByDefault) {
  const fs::path dir = fs::temp_directory_path() / ("placer_family_redraws_" + std::to_string(::getpid()));
  remove_tree(dir.string());
  auto run = [&](int redraws) {
    const TrainConfig c = parse_train_config(R"(
name: fam
cluster: k80x2
family:
  - {builder: mlp, options: {layers: 2, width: 64, input: 32, batch: 8}}
  - {builder: mlp, options: {layers: 3, width: 64, input: 32, batch: 8}}
policy: {type: gnn, hidden: 16, gnn_layers: 1, place_samples: 2}
train: {updates: 4, samples_per_update: 8, logit_noise: 0, temperature: 0.05, distinct_redraws: )" +
                                             std::to_string(redraws) + R"(}
warm_start: {methods: [m_etf], bc_steps: 300}
run: {output_dir: )" + (dir / std::to_string(redraws)).string() +
                                             "}\n");
    TrainControls quiet;
    quiet.progress = false;
    return train(c, nullptr, quiet);
  };
  const TrainResult off = run(0), on = run(4), by_default = run(-1);
  EXPECT_GT(on.distinct_samples, off.distinct_samples);  // the setting does repeat samples
  EXPECT_EQ(by_default.distinct_samples, off.distinct_samples);
  EXPECT_EQ(by_default.best_step_s, off.best_step_s);
  remove_tree(dir.string());
}

// Fine-tuning never returns a slower placement than the policy it started from
// (one lstm_lm seed of bench/results/learned_heldout.md ended at twice its
// zero-shot answer), nor than what `placer place --policy` answers (on the
// held-out transformer_mt p100x4, fine-tuning returned 31.466 ms where the
// answer was 31.319): that answer is a seen row of the run, named by who found it.
TEST(Pretrained, FineTuningIsNeverSlowerThanItsZeroShotAnswer) {
  const fs::path dir = fs::temp_directory_path() / ("placer_finetune_" + std::to_string(::getpid()));
  remove_tree(dir.string());
  tiny_pretrained();
  TrainConfig c = load_train_config(std::string(PLACER_SOURCE_DIR) + "/configs/finetune_pretrained.yaml");
  c.graph = GraphSource{};
  c.graph.builder = "transformer";
  c.graph.options = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 128}, {"seq", 16}, {"batch", 8}, {"vocab", 2000}};
  c.optimizer.updates = 1;
  c.optimizer.samples_per_update = 2;
  c.policy.init_answer_s = 0.3;
  c.run.output_dir = dir.string();
  TrainControls quiet;
  quiet.progress = false;
  auto seen_row = [](const TrainResult& r, const std::string& prefix) {
    return std::find_if(r.seen.begin(), r.seen.end(),
                        [&](const BaselineResult& b) { return b.method.rfind(prefix, 0) == 0; });
  };
  const TrainResult r = train(c, nullptr, quiet);
  const auto answer = seen_row(r, "init_from:pretrained (zero-shot answer: ");
  ASSERT_NE(answer, r.seen.end());
  ASSERT_TRUE(answer->ok) << answer->note;
  EXPECT_LE(r.best_step_s, answer->step_s);
  // The answer is no slower than the policy's fixed decode nor any fast-path heuristic.
  Environment env(c.graph.load(), resolve_cluster(c.cluster));
  const PlaceResult fixed = load_named_policy("pretrained")->place(context_of(env, c.run.seed));
  EXPECT_LE(answer->step_s, env.simulate(fixed.placement).step_s);
  for (const std::string& m : policy_fast_path())
    EXPECT_LE(answer->step_s, env.simulate(make_placer(m)->place(context_of(env, c.run.seed)).placement).step_s) << m;
  // policy.init_answer_s: 0: the policy's fixed decode alone, the first rounds of
  // what `placer place --policy pretrained --no-refine` decodes.
  c.policy.init_answer_s = 0;
  remove_tree(dir.string());
  const TrainResult alone = train(c, nullptr, quiet);
  const auto zero_shot = seen_row(alone, "init_from:pretrained (zero-shot)");
  ASSERT_NE(zero_shot, alone.seen.end());
  EXPECT_DOUBLE_EQ(zero_shot->step_s, env.simulate(fixed.placement).step_s);
  EXPECT_LE(alone.best_step_s, zero_shot->step_s);
  const PolicyAnswer a = place_with_policy("pretrained", context_of(env, c.run.seed), 0.2, /*refine=*/false);
  EXPECT_LE(a.policy_step_s, zero_shot->step_s);
  remove_tree(dir.string());
}

// `placer export-policy` (what `make pretrained` ships): the policy alone is a
// fraction of the run's checkpoint, places exactly as the checkpoint does,
// fine-tuning starts from it, and resuming from it is an error that says why.
TEST(Pretrained, ExportedPolicyIsSmallAndPlacesAsItsCheckpoint) {
  const std::string run = tiny_pretrained();
  const ScratchDir out("placer_export_policy");
  const std::string file = out.path() + "/checkpoint.pt";
  const ExportedPolicy e = export_policy(run, file);
  EXPECT_EQ(e.to_bytes, static_cast<int64_t>(fs::file_size(file)));
  EXPECT_EQ(e.from_bytes, static_cast<int64_t>(fs::file_size(run + "/checkpoint.pt")));
  EXPECT_LT(e.to_bytes, e.from_bytes / 2);
  BuilderOptions bo;
  bo.values = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 64}, {"seq", 16}, {"batch", 8}, {"vocab", 2000}};
  const Graph g = build_graph("transformer", bo);
  Environment env(g, resolve_cluster("p100x4"));
  const PlaceResult full = load_named_policy(run)->place(context_of(env, 3));
  const PlaceResult slim = load_named_policy(out.path())->place(context_of(env, 3));
  EXPECT_EQ(full.placement.device_of, slim.placement.device_of);
  EXPECT_DOUBLE_EQ(env.simulate(full.placement).step_s, env.simulate(slim.placement).step_s);
  // A run that starts from it (policy.init_from) trains.
  TrainConfig c = load_train_config(std::string(PLACER_SOURCE_DIR) + "/configs/finetune_pretrained.yaml");
  c.graph = GraphSource{};
  c.graph.builder = "transformer";
  c.graph.options = bo.values;
  c.cluster = "p100x4";
  c.policy.init_from = out.path();
  c.optimizer.updates = 1;
  c.optimizer.samples_per_update = 2;
  c.run.output_dir = out.path() + "/finetune";
  TrainControls quiet;
  quiet.progress = false;
  EXPECT_GT(train(c, nullptr, quiet).samples, 0);
  // It is not a run to resume: no optimizer state, and the error names the field.
  TrainConfig r = load_train_config(std::string(PLACER_FIXTURES_DIR) + "/pretrain_tiny.yaml");
  r.run.output_dir = out.path();
  TrainControls resume = quiet;
  resume.resume = true;
  try {
    train(r, nullptr, resume);
    ADD_FAILURE() << "resumed from an exported policy";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("optimizer"), std::string::npos) << err.what();
  }
  EXPECT_THROW(export_policy(out.path() + "/none", out.path() + "/x.pt"), InputError);
}

// train.refine_evaluations anneals from the fastest placement the run has
// evaluated, a seen one included (a fine-tuning run's zero-shot answer, the
// service's fast path): here a seen m_etf placement, far faster than the
// run's own rows (single, and two samples of a barely trained policy).
TEST(Pretrained, RefinementStartsFromTheFastestRowSeenOnesIncluded) {
  tiny_pretrained();
  const ScratchDir out("placer_refine_seen");
  TrainConfig c = load_train_config(std::string(PLACER_SOURCE_DIR) + "/configs/finetune_pretrained.yaml");
  c.graph = GraphSource{};
  c.graph.builder = "transformer";
  c.graph.options = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 128}, {"seq", 16}, {"batch", 8}, {"vocab", 2000}};
  c.policy.init_from.clear();  // a policy from scratch: its samples are slow
  c.warm_start.methods = {"single"};
  c.optimizer.updates = 1;
  c.optimizer.samples_per_update = 2;
  c.optimizer.refine_evaluations = 300;
  c.run.output_dir = out.path();
  const Graph g = c.graph.load();
  Environment env(g, resolve_cluster(c.cluster));
  TrainControls ctl;
  ctl.progress = false;
  // The seen row: a short search's placement, faster than anything two samples of a policy from scratch
  // find (m_etf's was not always: on block units, policy.layer_units, a sample beat it), and still
  // leaving the refinement's 300 evaluations something to find.
  PlaceContext short_search = context_of(env, 1);
  short_search.sample_budget = 100;
  ctl.seen.push_back({"fast_path:local_search", make_placer("local_search")->place(short_search).placement});
  const double seen_s = env.simulate(ctl.seen[0].placement).step_s;
  const TrainResult r = train(c, nullptr, ctl);
  ASSERT_LT(seen_s, r.policy_best_step_s) << "the test needs a seen row faster than the policy's samples";
  const auto refine = std::find_if(r.baselines.begin(), r.baselines.end(),
                                   [](const BaselineResult& b) { return b.method == "refine"; });
  ASSERT_NE(refine, r.baselines.end()) << "local_search found nothing faster than the seen placement";
  EXPECT_NE(refine->note.find("from fast_path:local_search"), std::string::npos) << refine->note;
  EXPECT_LT(refine->step_s, seen_s);
  EXPECT_EQ(r.best_found_by, "refine");
}

}  // namespace
}  // namespace placer
