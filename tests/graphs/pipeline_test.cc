// make_pipeline_graph and MicrobatchGate on the hand-made tiny training graph.
#include "placer/graphs/pipeline.h"

#include <gtest/gtest.h>

#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"
#include "tiny_graphs.h"

namespace placer {
namespace {

using testing::tiny_training;

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Op& op : g.ops()) out.push_back(op.name);
  return out;
}

TEST(PipelineGraph, GPipeOrdersEveryForwardBeforeAnyBackward) {
  const PipelineGraph p = make_pipeline_graph(tiny_training(), {2, PipelineSchedule::GPipe});
  const std::vector<std::string> want = {"w",
                                         "b",
                                         "x@mb0",
                                         "fc@mb0",
                                         "relu@mb0",
                                         "loss@mb0",
                                         "x@mb1",
                                         "fc@mb1",
                                         "relu@mb1",
                                         "loss@mb1",
                                         "loss_grad@mb0",
                                         "relu_grad@mb0",
                                         "fc_grad@mb0",
                                         "loss_grad@mb1",
                                         "relu_grad@mb1",
                                         "fc_grad@mb1",
                                         "w_sgd",
                                         "b_sgd"};
  EXPECT_EQ(names(p.graph), want);
  EXPECT_EQ(p.graph.attrs.at(kAttrMicrobatches), "2");
  EXPECT_EQ(p.graph.attrs.at(kAttrSchedule), "gpipe");
  EXPECT_NO_THROW(validate_graph(p.graph));
}

TEST(PipelineGraph, OneFOneBHasTheSameOrderItsGateMakesTheDifference) {
  const PipelineGraph gpipe = make_pipeline_graph(tiny_training(), {2, PipelineSchedule::GPipe});
  const PipelineGraph ofob = make_pipeline_graph(tiny_training(), {2, PipelineSchedule::OneFOneB});
  EXPECT_EQ(names(ofob.graph), names(gpipe.graph));
  EXPECT_EQ(ofob.graph.attrs.at(kAttrSchedule), "1f1b");
}

TEST(PipelineGraph, CopiesShareParamsAndGradientsAccumulateIntoOneBuffer) {
  const Graph base = tiny_training();
  const PipelineGraph p = make_pipeline_graph(base, {3, PipelineSchedule::OneFOneB});
  // params, 3 x (x, fc, relu, loss and 3 backward ops), micro-batch 1 adding into each param's sum, updates
  ASSERT_EQ(p.graph.size(), 2 + 3 * 7 + 2 + 2);
  const Graph& g = p.graph;
  const OpId w = *g.find("w");
  for (int k = 0; k < 3; ++k) {
    const Op& fc = g.op(*g.find("fc@mb" + std::to_string(k)));
    EXPECT_EQ(fc.microbatch, k);
    EXPECT_EQ(fc.inputs[2].op, w);                                      // the one param
    EXPECT_EQ(g.op(fc.inputs[1].op).name, "x@mb" + std::to_string(k));  // its own micro-batch's input
    const Op& grad = g.op(*g.find("fc_grad@mb" + std::to_string(k)));
    EXPECT_EQ(grad.forward, *g.find("fc@mb" + std::to_string(k)));
    EXPECT_EQ(grad.inputs[0].op, grad.forward);
  }
  // Micro-batch 0's gradient starts the sum, micro-batch 1 adds into it (right after its backward ops),
  // the update adds the last micro-batch's.
  const OpId acc = *g.find("w_sgd@mb1/acc1");
  const Op& add = g.op(acc);
  EXPECT_EQ(add.type, "aten::add.Tensor");
  EXPECT_EQ(add.microbatch, 1);
  EXPECT_EQ(g.op(add.inputs[0].op).name, "fc_grad@mb0");
  EXPECT_EQ(g.op(add.inputs[1].op).name, "fc_grad@mb1");
  EXPECT_EQ(add.inputs[0].output, 1);
  EXPECT_EQ(add.outputs[0], base.op(OpId(1)).outputs[0]);
  EXPECT_EQ(g.op(OpId(acc.value + 1)).name, "b_sgd@mb1/acc1");
  EXPECT_EQ(g.op(OpId(acc.value - 1)).name, "fc_grad@mb1");
  const Op& sgd = g.op(*g.find("w_sgd"));
  EXPECT_EQ(sgd.microbatch, -1);
  EXPECT_EQ(sgd.forward, w);
  ASSERT_EQ(sgd.inputs.size(), 3u);  // the param, the sum of micro-batches 0 and 1, micro-batch 2's gradient
  EXPECT_EQ(sgd.inputs[1].op, acc);
  EXPECT_EQ(g.op(sgd.inputs[2].op).name, "fc_grad@mb2");
  EXPECT_DOUBLE_EQ(sgd.args[0].d, 0.01 / 3);  // the mean over the mini-batch
  // base_op maps every op back.
  for (int32_t i = 0; i < g.size(); ++i) {
    const std::string& name = g.op(OpId(i)).name;
    EXPECT_EQ(name.substr(0, name.find('@')), base.op(p.base_op[i]).name);
  }
  EXPECT_NO_THROW(validate_graph(g));
}

TEST(PipelineGraph, ExpandPutsEveryCopyWithItsOp) {
  const Graph base = tiny_training();
  const PipelineGraph p = make_pipeline_graph(base, {2, PipelineSchedule::GPipe});
  Placement bp;
  for (int32_t i = 0; i < base.size(); ++i) bp.device_of.push_back(DeviceId(i % 2));
  const Placement e = p.expand(bp);
  ASSERT_EQ(e.device_of.size(), static_cast<size_t>(p.graph.size()));
  for (int32_t i = 0; i < p.graph.size(); ++i) EXPECT_EQ(e.device_of[i], bp.device_of[p.base_op[i].value]);
}

TEST(PipelineGraph, SavedGraphKeepsItsScheduleAndMicrobatches) {
  const PipelineGraph p = make_pipeline_graph(tiny_training(), {2, PipelineSchedule::OneFOneB});
  const Graph json = graph_from_json(graph_to_json(p.graph));
  EXPECT_EQ(json, p.graph);
  EXPECT_EQ(graph_from_binary(graph_to_binary(p.graph)), p.graph);
  const auto spec = pipeline_spec_of(json);
  ASSERT_TRUE(spec);
  EXPECT_EQ(*spec, (PipelineSpec{2, PipelineSchedule::OneFOneB}));
  EXPECT_FALSE(pipeline_spec_of(tiny_training()));
}

TEST(PipelineGraph, BadInputIsAnError) {
  EXPECT_THROW(make_pipeline_graph(testing::tiny_forward(), {2, PipelineSchedule::GPipe}), GraphError);
  EXPECT_THROW(make_pipeline_graph(tiny_training(), {0, PipelineSchedule::GPipe}), GraphError);
  const PipelineGraph p = make_pipeline_graph(tiny_training(), {2, PipelineSchedule::GPipe});
  EXPECT_THROW(make_pipeline_graph(p.graph, {2, PipelineSchedule::GPipe}), GraphError);
  Graph g = tiny_training();
  g.attrs[kAttrMicrobatches] = "two";
  g.attrs[kAttrSchedule] = "gpipe";
  EXPECT_THROW(pipeline_spec_of(g), GraphError);
  EXPECT_EQ(parse_schedule("interleaved"), std::nullopt);
  EXPECT_EQ(parse_objective("pipeline"), Objective::Pipeline);
}

// An update the unrolled graph cannot carry (only sgd's running sum is built) is refused, not dropped.
TEST(PipelineGraph, AnUpdateOtherThanSgdIsRefused) {
  Graph g = tiny_training();
  g.mutable_op(*g.find("w_sgd")).type = "my::adam";
  try {
    make_pipeline_graph(g, {2, PipelineSchedule::GPipe});
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(),
                 "op 'w_sgd': type 'my::adam': a pipelined update must be placer::sgd (the pipeline supports sgd "
                 "updates only)");
  }
}

// Two stages: x, fc and their backward ops on device 0; relu, loss and theirs on device 1.
struct TwoStages {
  PipelineGraph p = make_pipeline_graph(tiny_training(), {4, PipelineSchedule::OneFOneB});
  std::vector<DeviceId> device_of;
  TwoStages() {
    for (int32_t i = 0; i < p.graph.size(); ++i) {
      const std::string base = tiny_training().op(p.base_op[i]).name;
      const bool second = base.rfind("relu", 0) == 0 || base.rfind("loss", 0) == 0;
      device_of.push_back(DeviceId(second ? 1 : 0));
    }
  }
  int32_t id(const std::string& name) const { return p.graph.find(name)->value; }
};

TEST(MicrobatchGate, OneFOneBCapsMicrobatchesInFlightByStage) {
  TwoStages t;
  MicrobatchGate gate(t.p.graph, t.device_of, 2);
  ASSERT_TRUE(gate.active());
  EXPECT_EQ(gate.cap(0), 2);  // first stage: S - 0
  EXPECT_EQ(gate.cap(1), 1);  // last stage: one at a time
  // Stage 0 admits micro-batches 0 and 1, then waits for micro-batch 0 to end there.
  for (int k = 0; k < 2; ++k) {
    const int32_t o = t.id("fc@mb" + std::to_string(k));
    ASSERT_TRUE(gate.admits(o)) << k;
    gate.started(o);
    gate.finished(o);
  }
  EXPECT_FALSE(gate.admits(t.id("fc@mb2")));
  EXPECT_FALSE(gate.admits(t.id("fc@mb3")));  // admitted in order only
  EXPECT_TRUE(gate.admits(t.id("w_sgd")));    // shared ops are never held
  EXPECT_TRUE(gate.admits(t.id("x@mb3")));    // nor inputs
  gate.started(t.id("fc_grad@mb0"));
  EXPECT_FALSE(gate.admits(t.id("fc@mb2")));  // micro-batch 0 still has an op running here
  gate.finished(t.id("fc_grad@mb0"));
  EXPECT_TRUE(gate.admits(t.id("fc@mb2")));
  // Stage 1 holds one micro-batch at a time.
  gate.started(t.id("relu@mb0"));
  gate.finished(t.id("relu@mb0"));
  EXPECT_FALSE(gate.admits(t.id("relu@mb1")));
  for (const char* op : {"loss@mb0", "loss_grad@mb0", "relu_grad@mb0"}) {
    ASSERT_TRUE(gate.admits(t.id(op))) << op;
    gate.started(t.id(op));
    gate.finished(t.id(op));
  }
  EXPECT_TRUE(gate.admits(t.id("relu@mb1")));
  gate.reset();
  EXPECT_FALSE(gate.admits(t.id("relu@mb1")));
  EXPECT_TRUE(gate.admits(t.id("relu@mb0")));
}

// An input placed with the last stage (a loss's labels go where the loss is) comes first in op order; the
// stages still rank by their first forward op that is no input or param (x@mb0 is op 2, fc@mb0 op 3).
TEST(MicrobatchGate, AnInputOnTheLastStageDoesNotRankItFirst) {
  TwoStages t;
  for (int32_t i = 0; i < t.p.graph.size(); ++i)
    if (t.p.graph.op(OpId(i)).type == op_types::kInput) t.device_of[i] = DeviceId(1);
  ASSERT_LT(t.id("x@mb0"), t.id("fc@mb0"));
  MicrobatchGate gate(t.p.graph, t.device_of, 2);
  EXPECT_EQ(gate.cap(0), 2);  // fc's device is stage 0
  EXPECT_EQ(gate.cap(1), 1);
  // The inputs on the last stage take none of its one slot: its micro-batch 0 in flight, the next
  // micro-batch's input still runs (stage 0 ran F0 B0 F1 where 1F1B runs F0 F1 B0: 1.53x the mini-batch).
  gate.started(t.id("relu@mb0"));
  EXPECT_TRUE(gate.admits(t.id("x@mb1")));
  // A device with inputs only is no stage: the two stages keep their bounds (it added one to each), and
  // it is not bounded.
  std::vector<DeviceId> three = t.device_of;
  for (int32_t i = 0; i < t.p.graph.size(); ++i)
    if (t.p.graph.op(OpId(i)).type == op_types::kInput) three[i] = DeviceId(2);
  MicrobatchGate gate3(t.p.graph, three, 3);
  EXPECT_EQ(gate3.cap(0), 2);
  EXPECT_EQ(gate3.cap(1), 1);
  EXPECT_EQ(gate3.cap(2), 4);
}

// A device holding two stages (A B A B over two devices): a micro-batch crosses four stages, so the
// bound counts four, not two devices. Each device's bound is the stages from its first to the last.
TEST(MicrobatchGate, ADeviceHoldingTwoStagesIsBoundedByTheStagesAMicrobatchCrosses) {
  BuilderOptions o;
  o.values = {{"layers", 4}, {"batch", 4}, {"width", 8}};
  const Graph base = build_graph("mlp", o);
  const PipelineGraph p = make_pipeline_graph(base, {8, PipelineSchedule::OneFOneB});
  // Base forward ops split into 4 runs in op order, device = run % 2; backward ops with their forward op.
  std::vector<int32_t> forward;
  for (int32_t i = 0; i < base.size(); ++i)
    if (base.op(OpId(i)).phase == Phase::Forward) forward.push_back(i);
  std::vector<int32_t> device(base.size(), 0);
  for (size_t k = 0; k < forward.size(); ++k) device[forward[k]] = static_cast<int32_t>(k * 4 / forward.size()) % 2;
  for (int32_t i = 0; i < base.size(); ++i)
    if (base.op(OpId(i)).phase != Phase::Forward) device[i] = device[base.op(OpId(i)).forward.value];
  std::vector<DeviceId> device_of;
  for (int32_t i = 0; i < p.graph.size(); ++i) device_of.push_back(DeviceId(device[p.base_op[i].value]));
  MicrobatchGate gate(p.graph, device_of, 2);
  EXPECT_EQ(gate.cap(0), 4);  // stages 0 and 2: 4 - 0
  EXPECT_EQ(gate.cap(1), 3);  // stages 1 and 3: 4 - 1
}

TEST(PipelineGraph, MicrobatchesInAGraphsAttrsAreAWholeNumberInRange) {
  Graph g = tiny_training();
  g.attrs[kAttrSchedule] = "1f1b";
  for (const char* bad : {"400000000", "-1", "0", "8abc", "", "1e3", "1025"}) {
    g.attrs[kAttrMicrobatches] = bad;
    EXPECT_THROW(pipeline_spec_of(g), GraphError) << bad;
  }
  g.attrs[kAttrMicrobatches] = "1024";
  EXPECT_EQ(pipeline_spec_of(g)->microbatches, 1024);
  for (const char* bad : {" 4", "+4"}) {
    g.attrs[kAttrMicrobatches] = bad;
    EXPECT_THROW(pipeline_spec_of(g), GraphError) << bad;
  }
}

// A saved pipelined graph is checked against its attrs: a micro-batch past their count was simulated as if
// it were not there, and with one attr left out the graph ran as a plain step; `graph validate` said ok.
TEST(PipelineGraph, ValidationChecksTheAttrsAgainstTheOps) {
  const PipelineGraph p = make_pipeline_graph(tiny_training(), {4, PipelineSchedule::GPipe});
  EXPECT_NO_THROW(validate_graph(p.graph));
  Graph g = p.graph;
  g.mutable_op(*g.find("fc@mb3")).microbatch = 7;
  try {
    validate_graph(g);
    ADD_FAILURE() << "microbatch 7 of 4 validated";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'fc@mb3': microbatch: 7 is not below the graph's pipeline.microbatches 4"),
              std::string::npos)
        << e.what();
  }
  g = p.graph;
  g.attrs.erase(kAttrSchedule);
  try {
    validate_graph(g);
    ADD_FAILURE() << "a graph with pipeline.microbatches alone validated";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("come together; only pipeline.microbatches is given"), std::string::npos)
        << e.what();
  }
  g.attrs.erase(kAttrMicrobatches);
  EXPECT_THROW(validate_graph(g), GraphError);  // micro-batch copies in a graph that is no pipelined mini-batch
}

// An op reads its own micro-batch, an earlier one, or an op of none (a param, an update): under 1F1B a
// device admits micro-batches in order, so micro-batch 0 waiting on micro-batch 1 stalled the simulator
// (`graph validate` said ok, then `simulate` aborted). Through an op of no micro-batch too.
TEST(PipelineGraph, AnOpReadsOnlyItsOwnOrAnEarlierMicrobatch) {
  for (int M : {1, 2, 3}) {
    for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      const PipelineGraph p = make_pipeline_graph(tiny_training(), {M, s});
      EXPECT_NO_THROW(validate_graph(p.graph)) << M;  // gradient sums read earlier micro-batches
    }
  }
  auto stall = [](int32_t via_mb) {
    Graph g;
    g.name = "stall";
    g.attrs[kAttrMicrobatches] = "2";
    g.attrs[kAttrSchedule] = "1f1b";
    const OpId x = g.add_op(testing::make_op("x", op_types::kInput, {}, {testing::f32({4})}));
    Op a = testing::make_op("a", "aten::relu", {{x, 0}}, {testing::f32({4})});
    a.microbatch = 1;
    OpId last = g.add_op(std::move(a));
    Op v = testing::make_op("v", "custom::id", {{last, 0}}, {testing::f32({4})});
    v.microbatch = via_mb;
    if (via_mb != 0) last = g.add_op(std::move(v));
    Op b = testing::make_op("b", "aten::relu", {{last, 0}}, {testing::f32({4})});
    b.microbatch = 0;
    g.add_op(std::move(b));
    return g;
  };
  EXPECT_EQ(testing::error_of<GraphError>([&] { validate_graph(stall(0)); }),
            "op 'b': inputs[0]: reads 'a' of micro-batch 1 from micro-batch 0 (an op reads only its own or an "
            "earlier micro-batch: they run in order)");
  EXPECT_EQ(
      testing::error_of<GraphError>([&] { validate_graph(stall(-1)); }),
      "op 'b': inputs[0]: reads 'v', which depends on micro-batch 1, from micro-batch 0 (an op reads only its own "
      "or an earlier micro-batch: they run in order)");
  Graph input = stall(0);
  input.mutable_op(OpId(0)).microbatch = 1;
  input.mutable_op(OpId(2)).inputs[0] = {OpId(0), 0};  // b reads micro-batch 1's input x: inputs are not gated
  EXPECT_NO_THROW(validate_graph(input));
  Graph ok = stall(-1);
  ok.mutable_op(OpId(3)).microbatch = 1;  // b in micro-batch 1 as well
  EXPECT_NO_THROW(validate_graph(ok));
}

// The unroller copies each phase after the one before it: a forward op reading a backward op's output (or a
// backward op reading an update) was copied before its input and read op #-1.
TEST(PipelineGraph, AnOpReadingALaterPhaseIsRefused) {
  Graph g = tiny_training();
  g.add_op(testing::make_op("c", "aten::relu", {{*g.find("relu_grad"), 0}}, {testing::f32({4, 2})}));
  EXPECT_EQ(testing::error_of<GraphError>([&] {
              make_pipeline_graph(g, {2, PipelineSchedule::OneFOneB});
            }),
            "op 'c': inputs[0]: a forward op reads 'relu_grad', a backward op (a pipelined mini-batch runs every "
            "forward op before any backward op, and every backward op before any update)");
  g = tiny_training();
  g.mutable_op(*g.find("w_sgd")).outputs = {testing::f32({3, 2})};
  Op late = testing::make_op("late_grad", op_types::kBackward, {{*g.find("w_sgd"), 0}}, {testing::f32({3, 2})});
  late.phase = Phase::Backward;
  late.forward = *g.find("fc");
  g.add_op(std::move(late));
  EXPECT_EQ(testing::error_of<GraphError>([&] {
              make_pipeline_graph(g, {2, PipelineSchedule::GPipe});
            }),
            "op 'late_grad': inputs[0]: a backward op reads 'w_sgd', an update op (a pipelined mini-batch runs every "
            "forward op before any backward op, and every backward op before any update)");
}

// The unrolled graph's size is checked before it is built: 1024 micro-batches of a graph of 9768 ops made a
// file of over kMaxOps ops that load_graph refused, and 2 micro-batches of a 3.1-million-op nmt (6.2 million ops,
// under kMaxOps) ran out of memory at 10.8 GB. An unrolled graph takes about 2 KB per op: at most 4 million.
TEST(PipelineGraph, TheUnrolledGraphFitsTheOpLimit) {
  Graph g = tiny_training();
  // 4 shared ops, 7 per micro-batch, M - 2 gradient sums per sgd op: 9 M ops, and M per extra forward op.
  for (int i = 0; i < 3898; ++i)
    g.add_op(testing::make_op("e" + std::to_string(i), "custom::e", {{OpId(0), 0}}, {testing::f32({1})}));
  EXPECT_EQ(testing::error_of<GraphError>([&] {
              make_pipeline_graph(g, {1024, PipelineSchedule::OneFOneB});
            }),
            "microbatches: 1024 micro-batches of graph 'tiny' (3909 ops) make 4000768 ops, over the limit 4000000 "
            "(about 2 KB of memory per op: 8 GB; use fewer micro-batches)");
  // What make_pipeline_graph counts is what it builds.
  EXPECT_EQ(make_pipeline_graph(g, {1, PipelineSchedule::GPipe}).graph.size(), 4 + 7 + 3898);
  for (int M : {2, 5}) EXPECT_EQ(make_pipeline_graph(g, {M, PipelineSchedule::GPipe}).graph.size(), 9 * M + 3898 * M);
}

TEST(MicrobatchGate, GPipeAndPlainStepsAdmitEverything) {
  const PipelineGraph p = make_pipeline_graph(tiny_training(), {4, PipelineSchedule::GPipe});
  MicrobatchGate gpipe(p.graph, std::vector<DeviceId>(p.graph.size(), DeviceId(0)), 1);
  EXPECT_FALSE(gpipe.active());
  EXPECT_TRUE(gpipe.admits(p.graph.find("x@mb3")->value));
  const Graph plain = tiny_training();
  EXPECT_FALSE(MicrobatchGate(plain, std::vector<DeviceId>(plain.size(), DeviceId(0)), 1).active());
}

}  // namespace
}  // namespace placer
