// An imported torch.export program, executed by the runtime with eager
// PyTorch's weights and inputs, computes eager's loss and eager's SGD update
// (to 1e-4), on one device and split across two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/error.h"
#include "placer/runtime/runtime.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

std::string fixture(const std::string& name) { return std::string(PLACER_EXPORT_FIXTURES_DIR) + "/" + name; }

// The loss: the op the importer added, else the program's own scalar output.
std::string loss_name(const Graph& g) {
  if (g.find("loss")) return "loss";
  for (const Op& op : g.ops()) {
    if (op.phase != Phase::Forward || op.outputs.size() != 1 || !op.outputs[0].shape.empty()) continue;
    bool only_backward = true;
    for (OpId c : g.consumers(g.find(op.name).value()))
      only_backward = only_backward && g.op(c).phase != Phase::Forward;
    if (only_backward && is_floating(op.outputs[0].dtype) && op.type != op_types::kInput) return op.name;
  }
  return "";
}

void expect_matches_eager(const std::string& name, int devices) {
  SCOPED_TRACE(name + " on " + std::to_string(devices) + " device(s)");
  const Graph g = import_exported_program(fixture(name + ".pt2"), {});
  const auto eager = load_tensor_dict(fixture(name + ".eager.pt"));
  StepValues feed;
  for (const auto& [key, values] : eager) {
    // Buffers no output needs (batch norm's counter) are not in the graph.
    if (key.rfind("feed/", 0) == 0 && g.find(key.substr(5))) feed.tensors[key.substr(5)] = values;
  }
  Runtime runtime(rt_test::cpus(devices));
  const Placement placement = rt_test::round_robin_groups(g, devices);
  const StepValues got = runtime.run_once(g, placement, 0, &feed);

  const std::string loss = loss_name(g);
  ASSERT_FALSE(loss.empty());
  ASSERT_TRUE(got.tensors.count(loss)) << loss;
  const double want = eager.at("expect/loss").at(0), have = got.tensors.at(loss).at(0);
  EXPECT_NEAR(have, want, 1e-4 * std::max(1.0, std::fabs(want))) << "loss";

  int checked = 0;
  for (const auto& [key, values] : eager) {
    if (key.rfind("expect/", 0) != 0 || key == "expect/loss") continue;
    const std::string param = key.substr(7);
    ASSERT_TRUE(got.tensors.count(param)) << "no updated value for parameter " << param;
    const auto& mine = got.tensors.at(param);
    ASSERT_EQ(mine.size(), values.size()) << param;
    double worst = 0, scale = 1;
    for (size_t i = 0; i < values.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(mine[i]) - values[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(values[i])));
    }
    EXPECT_LE(worst, 1e-4 * scale) << "parameter " << param << " after one SGD step";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ExportEager, OneStepMatchesEagerPyTorch) {
  for (const char* name : {"tiny_cnn", "tiny_cnn_core", "tiny_lstm_lm", "tiny_gpt", "tiny_transformer",
                           "tiny_regression", "tiny_dynamic", "tiny_gather"}) {
    expect_matches_eager(name, 1);
    expect_matches_eager(name, 2);
  }
}

TEST(ExportEager, GivenValuesAreChecked) {
  const Graph g = import_exported_program(fixture("tiny_regression.pt2"), {});
  Runtime runtime(rt_test::cpus(1));
  const Placement placement = rt_test::round_robin_groups(g, 1);
  StepValues feed;
  feed.tensors["fc.weight"] = {1.0f, 2.0f};  // 2x3 wanted
  EXPECT_THROW(runtime.run_once(g, placement, 0, &feed), InputError);
  feed.tensors.clear();
  feed.tensors["nope"] = {1.0f};
  EXPECT_THROW(runtime.run_once(g, placement, 0, &feed), InputError);
}

}  // namespace
}  // namespace placer
