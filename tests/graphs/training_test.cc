// make_training_graph on small hand-built graphs whose backward and update
// ops are written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

TensorSpec f32(std::vector<int64_t> shape) { return TensorSpec{std::move(shape), DType::Float32}; }

OpId add(Graph& g, const std::string& name, const std::string& type, std::vector<TensorRef> inputs,
         std::vector<Arg> args, std::vector<TensorSpec> outputs, double flops = 0) {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.args = std::move(args);
  op.outputs = std::move(outputs);
  op.flops = flops;
  op.layer = "L_" + name;
  if (type == op_types::kParam) op.param_bytes = op.outputs[0].bytes();
  return g.add_op(std::move(op));
}

TensorRef out(OpId id, int32_t k = 0) { return TensorRef{id, k}; }
std::vector<Arg> ab(int n) {
  std::vector<Arg> a;
  for (int k = 0; k < n; ++k) a.push_back(Arg::tensor(k));
  return a;
}

const Op& named(const Graph& g, const std::string& name) {
  auto id = g.find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return g.op(*id);
}

TEST(Training, ChainByHand) {
  Graph f;
  f.name = "chain";
  OpId x = add(f, "x", op_types::kInput, {}, {}, {f32({4, 3})});
  OpId w = add(f, "w", op_types::kParam, {}, {}, {f32({3, 2})});
  OpId mm = add(f, "mm", "aten::mm", {out(x), out(w)}, ab(2), {f32({4, 2})}, 48);
  OpId relu = add(f, "relu", "aten::relu", {out(mm)}, ab(1), {f32({4, 2})}, 8);
  OpId loss = add(f, "loss", "aten::mean", {out(relu)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 8);

  Graph g = make_training_graph(f, 0.5);
  ASSERT_EQ(g.size(), 9);
  for (int32_t k = 0; k < f.size(); ++k) EXPECT_EQ(g.ops()[k].name, f.ops()[k].name);

  const Op& gl = g.op(OpId(5));
  EXPECT_EQ(gl.name, "loss/grad");
  EXPECT_EQ(gl.type, op_types::kBackward);
  EXPECT_EQ(gl.phase, Phase::Backward);
  EXPECT_EQ(gl.forward, loss);
  EXPECT_EQ(gl.inputs, (std::vector<TensorRef>{out(loss)}));
  EXPECT_EQ(gl.args, (std::vector<Arg>{Arg::int_list({}), Arg::int_list({0})}));
  EXPECT_EQ(gl.outputs, (std::vector<TensorSpec>{f32({4, 2})}));
  EXPECT_DOUBLE_EQ(gl.flops, 16);
  EXPECT_EQ(gl.layer, "L_loss");

  const Op& gr = g.op(OpId(6));
  EXPECT_EQ(gr.name, "relu/grad");
  EXPECT_EQ(gr.inputs, (std::vector<TensorRef>{out(relu), out(OpId(5))}));
  EXPECT_EQ(gr.args, (std::vector<Arg>{Arg::int_list({0}), Arg::int_list({0})}));
  EXPECT_EQ(gr.outputs, (std::vector<TensorSpec>{f32({4, 2})}));

  // x is an input (no gradient): mm's backward only produces dL/dw.
  const Op& gm = g.op(OpId(7));
  EXPECT_EQ(gm.name, "mm/grad");
  EXPECT_EQ(gm.inputs, (std::vector<TensorRef>{out(mm), out(OpId(6))}));
  EXPECT_EQ(gm.args, (std::vector<Arg>{Arg::int_list({0}), Arg::int_list({1})}));
  EXPECT_EQ(gm.outputs, (std::vector<TensorSpec>{f32({3, 2})}));
  EXPECT_DOUBLE_EQ(gm.flops, 96);

  const Op& up = g.op(OpId(8));
  EXPECT_EQ(up.name, "w/update");
  EXPECT_EQ(up.type, op_types::kSgd);
  EXPECT_EQ(up.phase, Phase::Update);
  EXPECT_EQ(up.forward, w);
  EXPECT_EQ(up.inputs, (std::vector<TensorRef>{out(w), out(OpId(7))}));
  EXPECT_EQ(up.args, (std::vector<Arg>{Arg::real(0.5)}));
  EXPECT_TRUE(up.outputs.empty());
  EXPECT_DOUBLE_EQ(up.flops, 12);  // p -= lr * g: 2 flops per element
  EXPECT_TRUE(g.is_training());
  EXPECT_NO_THROW(validate_graph(g));
}

TEST(Training, SharedParamAndMultiOutputByHand) {
  Graph f;
  OpId x = add(f, "x", op_types::kInput, {}, {}, {f32({3, 2})});
  OpId w = add(f, "w", op_types::kParam, {}, {}, {f32({2, 4})});
  OpId a = add(f, "a", "aten::mm", {out(x), out(w)}, ab(2), {f32({3, 4})}, 48);
  OpId c = add(f, "c", "aten::chunk", {out(a)}, {Arg::tensor(0), Arg::integer(2), Arg::integer(1)},
               {f32({3, 2}), f32({3, 2})});
  OpId m = add(f, "m", "aten::mul.Tensor", {out(c, 0), out(c, 1)}, ab(2), {f32({3, 2})}, 6);
  OpId n = add(f, "n", "aten::mm", {out(m), out(w)}, ab(2), {f32({3, 4})}, 48);
  OpId loss = add(f, "loss", "aten::mean", {out(n)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 12);

  Graph g = make_training_graph(f);
  ASSERT_EQ(g.size(), 7 + 5 + 1);
  const OpId gl(7), gn(8), gm(9), gc(10), ga(11);
  EXPECT_EQ(g.op(gl).name, "loss/grad");
  EXPECT_EQ(g.op(gn).name, "n/grad");
  EXPECT_EQ(g.op(gn).inputs, (std::vector<TensorRef>{out(n), out(gl)}));
  EXPECT_EQ(g.op(gn).args, (std::vector<Arg>{Arg::int_list({0}), Arg::int_list({0, 1})}));
  EXPECT_EQ(g.op(gn).outputs, (std::vector<TensorSpec>{f32({3, 2}), f32({2, 4})}));
  EXPECT_EQ(g.op(gm).name, "m/grad");
  EXPECT_EQ(g.op(gm).inputs, (std::vector<TensorRef>{out(m), out(gn, 0)}));
  EXPECT_EQ(g.op(gm).args, (std::vector<Arg>{Arg::int_list({0}), Arg::int_list({0, 1})}));
  // Both chunk outputs get their gradient, tagged with the output index.
  EXPECT_EQ(g.op(gc).name, "c/grad");
  EXPECT_EQ(g.op(gc).inputs, (std::vector<TensorRef>{out(c), out(gm, 0), out(gm, 1)}));
  EXPECT_EQ(g.op(gc).args, (std::vector<Arg>{Arg::int_list({0, 1}), Arg::int_list({0})}));
  EXPECT_EQ(g.op(gc).outputs, (std::vector<TensorSpec>{f32({3, 4})}));
  EXPECT_EQ(g.op(ga).name, "a/grad");
  EXPECT_EQ(g.op(ga).inputs, (std::vector<TensorRef>{out(a), out(gc)}));
  EXPECT_EQ(g.op(ga).args, (std::vector<Arg>{Arg::int_list({0}), Arg::int_list({1})}));
  // The shared weight is updated once with the sum of both gradients.
  const Op& up = g.op(OpId(12));
  EXPECT_EQ(up.name, "w/update");
  EXPECT_EQ(up.inputs, (std::vector<TensorRef>{out(w), out(gn, 1), out(ga, 0)}));
  EXPECT_DOUBLE_EQ(up.flops, 8 * 1 + 2 * 8);
  EXPECT_EQ(g.op(up.forward).name, "w");
  (void)loss;
  EXPECT_NO_THROW(validate_graph(g));
}

TEST(Training, OnlyOpsOnTheLossPathGetBackward) {
  Graph f;
  OpId ids = add(f, "ids", op_types::kInput, {}, {Arg::integer(10)}, {TensorSpec{{5}, DType::Int64}});
  OpId emb = add(f, "emb", op_types::kParam, {}, {}, {f32({10, 3})});
  OpId e =
      add(f, "lookup", "aten::embedding", {out(emb), out(ids)},
          {Arg::tensor(0), Arg::tensor(1), Arg::integer(-1), Arg::boolean(false), Arg::boolean(false)}, {f32({5, 3})});
  OpId s = add(f, "side", "aten::sigmoid", {out(e)}, ab(1), {f32({5, 3})}, 15);
  add(f, "side_mean", "aten::mean", {out(s)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 15);
  OpId other = add(f, "other", op_types::kInput, {}, {}, {f32({5, 3})});
  OpId t = add(f, "t", "aten::tanh", {out(other)}, ab(1), {f32({5, 3})}, 15);  // no param upstream
  OpId sum = add(f, "sum", "aten::add.Tensor",
                 {
                     out(e),
                     out(t),
                 },
                 {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)}, {f32({5, 3})}, 15);
  add(f, "loss", "aten::mean", {out(sum)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 15);

  Graph g = make_training_graph(f);
  // loss, sum, lookup get backward ops; t (no param upstream) does not; side/side_mean (not on the path
  // to the last scalar sink) are left out of the step.
  std::vector<std::string> names;
  for (const Op& op : g.ops())
    if (op.phase != Phase::Forward) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"loss/grad", "sum/grad", "lookup/grad", "emb/update"}));
  EXPECT_FALSE(g.find("side").has_value());
  EXPECT_FALSE(g.find("side_mean").has_value());
  EXPECT_TRUE(g.find("t").has_value());
  EXPECT_EQ(g.attrs.at("training.dropped_ops"), "2");
  // add's gradient only for input 0 (input 1 does not depend on a param);
  // the embedding's only for its weight (ids are integers).
  EXPECT_EQ(named(g, "sum/grad").args[1], Arg::int_list({0}));
  EXPECT_EQ(named(g, "lookup/grad").args[1], Arg::int_list({0}));
  EXPECT_EQ(named(g, "lookup/grad").outputs, (std::vector<TensorSpec>{f32({10, 3})}));
  (void)e;
  EXPECT_NO_THROW(validate_graph(g));
}

Graph small_forward();

// A forward op that reads a param but leads to no loss (a model returning `(fc(x), fc(y))`, trained on the
// first) had no order against the param's update: on another device it could read the updated weights.
// It is left out of the step; an op on the loss path is ordered before every update through the loss.
TEST(Training, AParamReaderOffTheLossPathIsLeftOut) {
  Graph f;
  OpId x = add(f, "x", op_types::kInput, {}, {}, {f32({4, 3})});
  OpId y = add(f, "y", op_types::kInput, {}, {}, {f32({4, 3})});
  OpId w = add(f, "w", op_types::kParam, {}, {}, {f32({3, 2})});
  OpId used = add(f, "fc_x", "aten::mm", {out(x), out(w)}, ab(2), {f32({4, 2})}, 48);
  add(f, "fc_y", "aten::mm", {out(y), out(w)}, ab(2), {f32({4, 2})}, 48);  // a second output of the model
  add(f, "loss", "aten::mean", {out(used)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 8);
  const Graph g = make_training_graph(f);
  EXPECT_FALSE(g.find("fc_y").has_value());
  EXPECT_TRUE(g.find("y").has_value());  // inputs and params stay
  EXPECT_EQ(g.attrs.at("training.dropped_ops"), "1");
  // Every op reading w comes before its update: here the update needs fc_x's gradient, after the loss.
  const Op& update = named(g, "w/update");
  EXPECT_EQ(g.op(update.inputs.at(1).op).name, "fc_x/grad");
  EXPECT_NO_THROW(validate_graph(g));
  // Nothing dropped: the graph and its attrs as before.
  EXPECT_EQ(make_training_graph(small_forward()).attrs.count("training.dropped_ops"), 0u);
}

Graph small_forward() {
  Graph f;
  f.name = "small";
  OpId x = add(f, "x", op_types::kInput, {}, {}, {f32({4, 3})});
  OpId w = add(f, "w", op_types::kParam, {}, {}, {f32({3, 2})});
  OpId mm = add(f, "mm", "aten::mm", {out(x), out(w)}, ab(2), {f32({4, 2})}, 48);
  OpId r = add(f, "act", "aten::relu", {out(mm)}, ab(1), {f32({4, 2})}, 8);
  add(f, "loss", "aten::mean", {out(r)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 8);
  return f;
}

void rejects_non_differentiable_op_by_name() {
  try {
    make_training_graph(small_forward(), 0.01, [](const Op& op) { return op.type != "aten::relu"; });
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("'act'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("aten::relu"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(make_training_graph(small_forward(), 0.01, [](const Op&) { return true; }));
}

TEST(Training, Errors) {
  rejects_non_differentiable_op_by_name();
  Graph f;
  f.name = "noloss";
  OpId x = add(f, "x", op_types::kInput, {}, {}, {f32({4, 3})});
  OpId w = add(f, "w", op_types::kParam, {}, {}, {f32({3, 2})});
  add(f, "mm", "aten::mm", {out(x), out(w)}, ab(2), {f32({4, 2})}, 48);
  EXPECT_THROW(make_training_graph(f), GraphError);

  // A scalar loss that no param reaches: nothing to train.
  Graph h;
  OpId y = add(h, "y", op_types::kInput, {}, {}, {f32({4})});
  add(h, "loss", "aten::mean", {out(y)}, {Arg::tensor(0), Arg::none()}, {f32({})}, 4);
  EXPECT_THROW(make_training_graph(h), GraphError);

  // Already a training graph.
  Graph t = make_training_graph(small_forward());
  EXPECT_THROW(make_training_graph(t), GraphError);
}

}  // namespace
}  // namespace placer
