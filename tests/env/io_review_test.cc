// Review findings on reading outside input: profiles, step results and
// graphs refuse what they cannot mean, naming the field; a profile with an op
// timed twice and another not at all does not count as timing every op.
#include <gtest/gtest.h>

#include <string>

#include "../error_of.h"
#include "placer/env/cost_model.h"
#include "placer/env/simulator.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

using testing::error_of;

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "got: " << (text)

std::string profile_error(const std::string& body) {
  return error_of<InputError>([&] { profile_from_json(R"({"format":"placer.profile","version":1,)" + body + "}"); });
}

std::string step_error(const std::string& body) {
  return error_of<InputError>(
      [&] { step_result_from_json(R"({"format":"placer.step_result","version":1,"status":"ok",)" + body + "}"); });
}

// ---- 1. a profile's device_kind -------------------------------------------------

TEST(IoReview, ProfileDeviceKindIsAKnownKind) {
  const std::string op = R"("ops":[{"op":"a","device":"cpu:0","seconds":1,"device_kind":)";
  EXPECT_HAS(profile_error(op + R"("gpu"}])"), "ops[0]: device_kind: unknown device kind 'gpu' (known: cpu, cuda)");
  EXPECT_HAS(profile_error(op + R"("CPU"}])"), "device_kind: unknown device kind 'CPU'");
  for (const char* kind : {R"("cpu")", R"("cuda")", R"("")"})
    EXPECT_NO_THROW(profile_from_json(R"({"format":"placer.profile","version":1,)" + op + kind + "}]}")) << kind;
  EXPECT_NO_THROW(profile_from_json(R"({"format":"placer.profile","version":1,"ops":[{"op":"a","device":"cpu:0",)"
                                    R"("seconds":1}]})"));
}

// ---- 4. a profile's link fit given twice ----------------------------------------------

TEST(IoReview, ProfileLinkFitGivenTwiceIsRefused) {
  const std::string fit = R"({"from":"cpu:0","to":"cpu:1","alpha_s":1e-6,"beta_Bps":1e9})";
  const std::string msg = profile_error(R"("ops":[],"links":[)" + fit + "," + fit + "]");
  EXPECT_HAS(msg, "links[1]");
  EXPECT_HAS(msg, "'cpu:0' to 'cpu:1'");
  EXPECT_HAS(msg, "given twice");
  // The other direction is another link.
  const std::string back = R"({"from":"cpu:1","to":"cpu:0","alpha_s":1e-6,"beta_Bps":1e9})";
  EXPECT_EQ(profile_from_json(R"({"format":"placer.profile","version":1,"ops":[],"links":[)" + fit + "," + back + "]}")
                .links.size(),
            2u);
}

// ---- 3. step results ----------------------------------------------------------------

TEST(IoReview, StepResultRefusesUnknownFields) {
  EXPECT_HAS(step_error(R"("step_s":0.1,"stepp_s":0.2)"), "stepp_s: unknown field");
  EXPECT_HAS(step_error(R"("step_s":0.1,"step_s":0.2)"), "step_s: given twice");
  EXPECT_HAS(step_error(R"("step_s":0.1,"devices":[{"device":"cpu:0","busy":1}])"), "devices[0]: busy: unknown field");
  // What step_result_to_json writes reads back (its "steps" included).
  StepResult r;
  r.step_s = 0.1;
  r.samples_s = {0.1};
  r.devices = {DeviceStats{"cpu:0", 0.05, 10}};
  EXPECT_NO_THROW(step_result_from_json(step_result_to_json(r)));
}

TEST(IoReview, StepResultRefusesNanAndNegativeTimesAndSizes) {
  struct Case {
    std::string body, expected;
  };
  const std::vector<Case> cases = {
      {R"("step_s":NaN)", "step_s"},
      {R"("step_s":0.1,"iqr_s":-1)", "iqr_s"},
      {R"("step_s":0.1,"iqr_s":NaN)", "iqr_s"},
      {R"("step_s":0.1,"ci_low_s":-0.1)", "ci_low_s"},
      {R"("step_s":0.1,"ci_high_s":Infinity)", "ci_high_s"},
      {R"("step_s":0.1,"ci_level":NaN)", "ci_level"},
      {R"("step_s":0.1,"ci_level":2)", "ci_level"},
      {R"("step_s":0.1,"samples_s":[0.1,NaN])", "samples_s[1]"},
      {R"("step_s":0.1,"samples_s":[-0.1])", "samples_s[0]"},
      {R"("step_s":0.1,"samples_s":[0.1],"core_rtt_s":[-1e-7])", "core_rtt_s[0]"},
      {R"("step_s":0.1,"devices":[{"device":"cpu:0","busy_s":-1}])", "devices[0]: busy_s"},
      {R"("step_s":0.1,"devices":[{"device":"cpu:0","busy_s":NaN}])", "devices[0]: busy_s"},
      {R"("step_s":0.1,"devices":[{"device":"cpu:0","peak_bytes":-5}])", "devices[0]: peak_bytes"},
      {R"("step_s":0.1,"transfer_bytes":-1)", "transfer_bytes"},
      {R"("step_s":0.1,"oom_needed_bytes":-1)", "oom_needed_bytes"},
      {R"("step_s":0.1,"oom_capacity_bytes":-1)", "oom_capacity_bytes"},
  };
  for (const Case& c : cases) {
    const std::string msg = step_error(c.body);
    EXPECT_HAS(msg, c.expected + ":") << " for " << c.body;
  }
  // A failed step's time is still a time.
  EXPECT_HAS(error_of<InputError>([] {
               step_result_from_json(R"({"format":"placer.step_result","version":1,"status":"oom","step_s":-2})");
             }),
             "step_s:");
}

// ---- 5. a binary graph's attribute given twice ---------------------------------------

Graph one_input_graph(int32_t microbatch = -1) {
  Graph g;
  g.name = "g";
  Op op;
  op.name = "x";
  op.type = op_types::kInput;
  op.outputs.push_back(TensorSpec{{4}, DType::Float32});
  op.microbatch = microbatch;
  g.add_op(std::move(op));
  return g;
}

TEST(IoReview, BinaryGraphAttrGivenTwiceIsRefused) {
  Graph g = one_input_graph();
  g.attrs["keyA"] = "1";
  g.attrs["keyB"] = "2";
  std::string bytes = graph_to_binary(g);
  EXPECT_NO_THROW(graph_from_binary(bytes));
  const size_t at = bytes.find("keyB");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = 'A';  // both keys now "keyA"
  const std::string msg = error_of<GraphError>([&] { graph_from_binary(bytes); });
  EXPECT_HAS(msg, "attrs");
  EXPECT_HAS(msg, "'keyA'");
  EXPECT_HAS(msg, "given twice");
}

// ---- 6. validate_graph and microbatch ----------------------------------------------

TEST(IoReview, ValidateRefusesMicrobatchBelowMinusOne) {
  const std::string msg = error_of<GraphError>([] { validate_graph(one_input_graph(-2)); });
  EXPECT_HAS(msg, "op 'x': microbatch: ");
  EXPECT_HAS(msg, "-2");
  EXPECT_NO_THROW(validate_graph(one_input_graph(-1)));
}

// ---- 2. timed_every_op counts ops, not entries -----------------------------------------

// x -> y1 -> y2 -> y3 (relu), 4000 bytes each.
Graph relu_chain() {
  Graph g;
  g.name = "chain";
  for (int i = 0; i < 4; ++i) {
    Op op;
    op.name = i ? "y" + std::to_string(i) : "x";
    op.type = i ? "aten::relu" : op_types::kInput;
    if (i) op.inputs = {{OpId(i - 1), 0}};
    op.outputs.push_back(TensorSpec{{1000}, DType::Float32});
    g.add_op(std::move(op));
  }
  return g;
}

// The CPU steps anchor the model only on a profile that timed every op of the graph: one op timed
// twice does not make up for another not timed.
TEST(IoReview, DuplicateTimingsDoNotMakeUpForAMissingOp) {
  const Graph g = relu_chain();
  const Cluster two_cpus = parse_device_list("cpu:2");
  Profile p;
  p.graph = "chain";
  for (const Op& op : g.ops()) p.ops.push_back({op.name, "", "cpu:0", "cpu", op.type == op_types::kInput ? 0 : 0.1});
  const double timed =
      simulate(g, single_device(g, DeviceId(0)), two_cpus, CostModel::calibrated(g, two_cpus, p)).step_s;
  p.cpu_steps = {{"cpu:0", 1.25 * timed}, {"cpu:1", 1.2 * timed}};
  EXPECT_NEAR(CostModel::calibrated(g, two_cpus, p).cpu_step_anchor(), 1.25, 1e-9);  // every op timed
  Profile gap = p;
  gap.ops.back() = gap.ops[1];  // y1 twice, y3 not at all: as many entries as ops
  ASSERT_EQ(gap.ops.size(), static_cast<size_t>(g.size()));
  EXPECT_EQ(CostModel::calibrated(g, two_cpus, gap).cpu_step_anchor(), 1.0);
}

}  // namespace
}  // namespace placer
