// `placer train` under the pipeline objective: the config's reward section
// names it (reward.objective, microbatches, schedule), errors name the field,
// and a run trains on the pipelined mini-batch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "config_errors.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

const std::string kOk = "name: x\ngraph: {builder: mlp}\ncluster: k80x2\n";

using testing_config::expect_error;

TEST(PipelineTrainConfig, ReadsTheObjective) {
  const TrainConfig step = parse_train_config(kOk, "ok.yaml");
  EXPECT_EQ(step.reward.objective, Objective::Step);
  EXPECT_EQ(train_config_to_json(step).find("objective"), std::string::npos);  // a step run's config as before

  const TrainConfig c =
      parse_train_config(kOk + "reward: {objective: pipeline, microbatches: 8, schedule: gpipe}\n", "p.yaml");
  EXPECT_EQ(c.reward.objective, Objective::Pipeline);
  EXPECT_EQ(c.reward.pipeline.microbatches, 8);
  EXPECT_EQ(c.reward.pipeline.schedule, PipelineSchedule::GPipe);
  const TrainConfig back = parse_train_config(train_config_to_json(c), "back");
  EXPECT_EQ(back.reward.objective, Objective::Pipeline);
  EXPECT_EQ(back.reward.pipeline, c.reward.pipeline);
  EXPECT_EQ(train_config_to_json(back), train_config_to_json(c));

  const TrainConfig d = parse_train_config(kOk + "reward: {objective: pipeline}\n", "d.yaml");
  EXPECT_EQ(d.reward.pipeline, PipelineSpec{});  // 4 micro-batches, 1f1b
  EXPECT_EQ(d.reward.pipeline.microbatches, 4);
  EXPECT_EQ(d.reward.pipeline.schedule, PipelineSchedule::OneFOneB);
}

TEST(PipelineTrainConfig, ErrorsNameTheField) {
  expect_error(kOk + "reward: {objective: throughput}\n",
               "reward.objective: unknown objective 'throughput' (known: step, pipeline)");
  expect_error(kOk + "reward: {objective: pipeline, schedule: zigzag}\n",
               "reward.schedule: unknown schedule 'zigzag' (known: gpipe, 1f1b)");
  expect_error(kOk + "reward: {microbatches: 0}\n", "reward.microbatches: must be in [1, 1024]");
  expect_error(kOk + "reward: {microbatches: many}\n", "reward.microbatches: expected an integer");
  expect_error(kOk + "reward: {micro_batches: 4}\n", "reward.micro_batches: unknown field");
}

TEST(PipelineTrainConfig, TheShippedConfigReads) {
  const TrainConfig c = load_train_config(std::string(PLACER_SOURCE_DIR) + "/configs/pipeline_transformer_k80x4.yaml");
  EXPECT_EQ(c.reward.objective, Objective::Pipeline);
  EXPECT_GE(c.reward.pipeline.microbatches, 2);
}

TEST(PipelineTrain, TrainsOnTheMiniBatch) {
  const std::string dir = (fs::path(testing::TempDir()) / ("pipeline_train_" + std::to_string(::getpid()))).string();
  placer::remove_tree(dir);
  TrainConfig c = parse_train_config(
      "name: p\ngraph: {builder: mlp, options: {layers: 3, width: 128, batch: 16}}\ncluster: k80x2\n"
      "policy: {type: seq2seq, hidden: 16}\n"
      "reward: {objective: pipeline, microbatches: 4, schedule: 1f1b}\n"
      "train: {updates: 3, samples_per_update: 4}\n"
      "warm_start: {methods: [single, expert], bc_steps: 5}\n"
      "compare: [single]\nrun: {output_dir: " +
          dir + "}\n",
      "p.yaml");
  TrainControls quiet;
  quiet.progress = false;
  const TrainResult r = train(c, nullptr, quiet);
  ASSERT_FALSE(r.best_placement.device.empty());

  // The result is the pipeline objective's: what an environment under it gives the best placement.
  EnvOptions o;
  o.threads = 1;
  o.objective = Objective::Pipeline;
  o.pipeline = {4, PipelineSchedule::OneFOneB};
  const Graph g = c.graph.load();
  const Cluster cluster = cluster_preset("k80x2");
  Environment env(g, cluster, o);
  EXPECT_DOUBLE_EQ(env.evaluate(from_named(g, cluster, r.best_placement)).step_s, r.best_step_s);
  EXPECT_DOUBLE_EQ(env.lower_bound(), r.lower_bound_s);
  Environment step(g, cluster);
  EXPECT_GT(r.best_step_s, step.evaluate(from_named(g, cluster, r.best_placement)).step_s);

  const std::string summary = read_file(dir + "/summary.json");
  EXPECT_NE(summary.find("\"objective\": \"pipeline\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"bubble_fraction\""), std::string::npos) << summary;
  placer::remove_tree(dir);
}

}  // namespace
}  // namespace placer
