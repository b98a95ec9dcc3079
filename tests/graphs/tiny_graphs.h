// Hand-made graphs for the graphs/ tests; every number here is checked by hand.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"
#include "../error_of.h"

namespace placer::testing {

inline Op make_op(std::string name, std::string type, std::vector<TensorRef> inputs, std::vector<TensorSpec> outputs,
                  double flops = 0.0, std::vector<Arg> args = {}) {
  Op op;
  op.name = std::move(name);
  op.type = std::move(type);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.flops = flops;
  op.args = std::move(args);
  return op;
}

inline TensorSpec f32(std::vector<int64_t> shape) { return TensorSpec{std::move(shape), DType::Float32}; }

inline OpId add_param(Graph& g, const std::string& name, std::vector<int64_t> shape) {
  Op op = make_op(name, op_types::kParam, {}, {f32(std::move(shape))});
  op.param_bytes = op.outputs[0].bytes();
  return g.add_op(std::move(op));
}

// Forward: x[4,3] -> fc = addmm(b[2], x, w[3,2]) [4,2] -> relu [4,2] -> loss = mean [] .
//   ids: x=0 w=1 b=2 fc=3 relu=4 loss=5
//   flops: fc 2*4*3*2 = 48, relu 8, loss 8  (total 64)
//   params: w 24 bytes, b 8 bytes
inline Graph tiny_forward() {
  Graph g;
  g.name = "tiny";
  g.attrs["batch"] = "4";
  OpId x = g.add_op(make_op("x", op_types::kInput, {}, {f32({4, 3})}));
  OpId w = add_param(g, "w", {3, 2});
  OpId b = add_param(g, "b", {2});
  Op fc = make_op("fc", "aten::addmm", {{b, 0}, {x, 0}, {w, 0}}, {f32({4, 2})}, 48.0,
                  {Arg::tensor(0), Arg::tensor(1), Arg::tensor(2), Arg::integer(1), Arg::integer(1)});
  fc.layer = "dense";
  OpId fc_id = g.add_op(std::move(fc));
  Op relu = make_op("relu", "aten::relu", {{fc_id, 0}}, {f32({4, 2})}, 8.0, {Arg::tensor(0)});
  relu.layer = "dense";
  OpId relu_id = g.add_op(std::move(relu));
  g.add_op(make_op("loss", "aten::mean", {{relu_id, 0}}, {f32({})}, 8.0, {Arg::tensor(0), Arg::none()}));
  return g;
}

// tiny_forward() plus its backward and update ops:
//   ids: loss_grad=6 relu_grad=7 fc_grad=8 w_sgd=9 b_sgd=10
//   backward flops = 2 x forward: 16, 16, 96 (total 64 + 128 = 192)
inline Graph tiny_training() {
  Graph g = tiny_forward();
  auto backward = [&](const std::string& name, OpId fwd, std::vector<TensorRef> grads, std::vector<int64_t> grad_of,
                      std::vector<int64_t> input_of, std::vector<TensorSpec> outs, double flops) {
    std::vector<TensorRef> inputs = {{fwd, 0}};
    inputs.insert(inputs.end(), grads.begin(), grads.end());
    Op op = make_op(name, op_types::kBackward, inputs, std::move(outs), flops,
                    {Arg::int_list(std::move(grad_of)), Arg::int_list(std::move(input_of))});
    op.phase = Phase::Backward;
    op.forward = fwd;
    return g.add_op(std::move(op));
  };
  OpId loss_grad = backward("loss_grad", OpId(5), {}, {}, {0}, {f32({4, 2})}, 16.0);
  OpId relu_grad = backward("relu_grad", OpId(4), {{loss_grad, 0}}, {0}, {0}, {f32({4, 2})}, 16.0);
  OpId fc_grad = backward("fc_grad", OpId(3), {{relu_grad, 0}}, {0}, {0, 2}, {f32({2}), f32({3, 2})}, 96.0);
  auto sgd = [&](const std::string& name, OpId param, TensorRef grad) {
    Op op = make_op(name, op_types::kSgd, {{param, 0}, grad}, {}, 0.0, {Arg::real(0.01)});
    op.phase = Phase::Update;
    op.forward = param;
    return g.add_op(std::move(op));
  };
  sgd("w_sgd", OpId(1), {fc_grad, 1});
  sgd("b_sgd", OpId(2), {fc_grad, 0});
  return g;
}

// One op holding every argument kind (a non-ATen type, so no shape rules).
inline Graph every_arg_kind() {
  Graph g;
  g.name = "args \"quoted\" \\ name";
  OpId a = g.add_op(make_op("a", op_types::kInput, {}, {f32({2, 2})}));
  OpId b = g.add_op(make_op("b", op_types::kInput, {}, {TensorSpec{{5}, DType::Int64}}));
  Op op =
      make_op("all/args \xc3\xa9", "custom::everything", {{a, 0}, {b, 0}, {a, 0}},
              {f32({2, 2}), TensorSpec{{}, DType::Bool}, TensorSpec{{0, 3}, DType::Float16}}, 1.5e-7,
              {Arg::none(), Arg::tensor(1), Arg::tensor_list({0, 2}), Arg::integer(-9007199254740993LL), Arg::real(0.1),
               Arg::real(-std::numeric_limits<double>::infinity()), Arg::real(1e-300), Arg::boolean(true),
               Arg::int_list({}), Arg::int_list({1, -2, 3}), Arg::real_list({0.5, -1e20}), Arg::bool_list({1, 0, 1}),
               Arg::string("mean\n\"x\""), Arg::scalar_type(DType::BFloat16), Arg::device("cuda:1")});
  op.group = "g1";
  op.layer = "layer/0";
  g.add_op(std::move(op));
  return g;
}

}  // namespace placer::testing
