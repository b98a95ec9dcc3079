#include "placer/graphs/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "placer/graphs/error.h"
#include "tiny_graphs.h"

namespace placer {
namespace {

using testing::add_param;
using testing::f32;
using testing::make_op;
using testing::tiny_forward;
using testing::tiny_training;

std::string validate_error(const Graph& g) {
  try {
    validate_graph(g);
  } catch (const GraphError& e) {
    return e.what();
  }
  ADD_FAILURE() << "graph validated";
  return "";
}

#define EXPECT_VALIDATE_ERROR(graph, text)                                                        \
  do {                                                                                            \
    const std::string _msg = validate_error(graph);                                               \
    EXPECT_NE(_msg.find(text), std::string::npos) << "got: " << _msg << "\nexpected: " << (text); \
  } while (0)

TEST(Validate, TinyGraphsAreValid) {
  EXPECT_NO_THROW(validate_graph(tiny_forward()));
  EXPECT_NO_THROW(validate_graph(tiny_training()));
  EXPECT_NO_THROW(validate_graph(testing::every_arg_kind()));
  EXPECT_NO_THROW(validate_graph(Graph{}));
}

// Only a backward or update op names its forward op: a forward op naming one passed, and then every placer
// that places co-location groups failed on it ("op 'b' must share a device with 'a'").
TEST(Validate, AForwardOpNamesNoForwardOp) {
  Graph g = tiny_training();
  g.mutable_op(OpId(4)).forward = OpId(3);  // relu naming fc
  EXPECT_VALIDATE_ERROR(g, "a forward op names no forward op; only backward and update ops do");
}

TEST(Validate, SizesAndNumbers) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(4)).outputs[0].shape = {4, -2};
  EXPECT_VALIDATE_ERROR(g, "op 'relu': outputs[0].shape[1]: negative size -2");

  g = tiny_forward();
  g.mutable_op(OpId(0)).outputs[0].shape = {int64_t{1} << 40, 4};  // 16 TiB of floats
  EXPECT_VALIDATE_ERROR(g, "op 'x': outputs[0].shape: absurd size [1099511627776,4]");

  g = tiny_forward();
  g.mutable_op(OpId(0)).outputs[0].shape = {INT64_MAX, INT64_MAX};  // would overflow a product
  EXPECT_VALIDATE_ERROR(g, "op 'x': outputs[0].shape: absurd size");

  g = tiny_forward();  // a zero dimension kept the byte count at 0, so any other dimension passed
  g.mutable_op(OpId(0)).outputs[0].shape = {0, int64_t{1} << 62};
  EXPECT_VALIDATE_ERROR(g, "op 'x': outputs[0].shape: absurd size [0,4611686018427387904] (dimension 1 over");

  g = tiny_forward();
  g.mutable_op(OpId(3)).flops = std::nan("");
  EXPECT_VALIDATE_ERROR(g, "op 'fc': flops: must be finite and >= 0");

  g = tiny_forward();
  g.mutable_op(OpId(3)).flops = 1e30;
  EXPECT_VALIDATE_ERROR(g, "op 'fc': flops: absurd value");

  g = tiny_forward();
  g.mutable_op(OpId(1)).param_bytes = -24;
  EXPECT_VALIDATE_ERROR(g, "op 'w': param_bytes: negative size -24");

  g = tiny_forward();
  g.mutable_op(OpId(0)).outputs[0].dtype = static_cast<DType>(42);
  EXPECT_VALIDATE_ERROR(g, "op 'x': outputs[0].dtype: not a dtype (42)");
}

// Each op's sizes are capped, but their sums over a graph (total_param_bytes, total_output_bytes, quotient
// graphs) overflowed int64 past 8,200 ops of 1 PiB: a graph passes 2^52 bytes (4 PiB) of either at no op.
TEST(Validate, GraphTotalsAreCapped) {
  Graph g;
  for (int i = 0; i < 5; ++i) {
    Op op = make_op("p" + std::to_string(i), op_types::kInput, {}, {f32({1})});
    op.param_bytes = int64_t{1} << 50;  // the per-op cap
    g.add_op(std::move(op));
  }
  EXPECT_VALIDATE_ERROR(g, "op 'p4': param_bytes: the graph's param bytes pass 4503599627370496 (4 PiB) here");
  Graph h;
  for (int i = 0; i < 4; ++i)
    h.add_op(make_op("x" + std::to_string(i), op_types::kInput, {}, {f32({int64_t{1} << 38})}));
  EXPECT_NO_THROW(validate_graph(h));  // 4 TiB: far below
  Op wide = make_op("wide", op_types::kInput, {}, {});
  wide.outputs.assign(4093, f32({int64_t{1} << 38}));  // 1 TiB each: 4097 TiB with the four above
  h.add_op(std::move(wide));
  EXPECT_VALIDATE_ERROR(h, "op 'wide': outputs[4092]: the graph's output bytes pass 4503599627370496 (4 PiB) here");
}

// A layer tag is matched by regular expressions (the expert placer's): 100,000 characters overflowed std::regex's
// stack.
TEST(Validate, LayerTagsAreCapped) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(3)).layer = std::string(1024, 'l');
  EXPECT_NO_THROW(validate_graph(g));
  g.mutable_op(OpId(3)).layer = std::string(1025, 'l');
  EXPECT_VALIDATE_ERROR(g, "op 'fc': layer: 1025 bytes, over the limit 1024");
}

TEST(Validate, ParamBytesMustMatchTheTensor) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(1)).param_bytes = 25;
  EXPECT_VALIDATE_ERROR(g, "op 'w': param_bytes: 25 but the param tensor [3,2] float has 24 bytes");
}

TEST(Validate, ArgsMustReferToInputs) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(3)).args[2] = Arg::tensor(3);
  EXPECT_VALIDATE_ERROR(g, "op 'fc': args[2]: tensor argument refers to input 3, the op has 3 input(s)");
  g = tiny_forward();
  g.mutable_op(OpId(4)).args = {Arg::tensor_list({0, -2})};
  EXPECT_VALIDATE_ERROR(g, "op 'relu': args[0]: tensor list refers to input -2");
  g = tiny_forward();  // -1 is None in an optional tensor list (aten::index's indices): the schema decides
  g.mutable_op(OpId(4)).args = {Arg::tensor_list({0, -1})};
  EXPECT_NO_THROW(validate_graph(g));
  g = tiny_forward();
  g.mutable_op(OpId(5)).args[1] = Arg::bool_list({1, 2});
  EXPECT_VALIDATE_ERROR(g, "op 'loss': args[1]: bool list holds 2");
  g = tiny_forward();
  g.mutable_op(OpId(5)).args[1] = Arg::scalar_type(DType::Float32);
  g.mutable_op(OpId(5)).args[1].i = 99;
  EXPECT_VALIDATE_ERROR(g, "op 'loss': args[1]: not a dtype (99)");
}

TEST(Validate, MatrixShapes) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(3)).outputs[0].shape = {4, 3};
  g.mutable_op(OpId(4)).outputs[0].shape = {4, 3};
  EXPECT_VALIDATE_ERROR(g, "op 'fc': outputs[0].shape: [4,3] does not match the matrix product: expected [4,2]");

  // mm with mismatched inner dimensions.
  Graph h;
  OpId a = h.add_op(make_op("a", op_types::kInput, {}, {f32({4, 3})}));
  OpId b = h.add_op(make_op("b", op_types::kInput, {}, {f32({2, 5})}));
  h.add_op(make_op("mm", "aten::mm", {{a, 0}, {b, 0}}, {f32({4, 5})}, 0, {Arg::tensor(0), Arg::tensor(1)}));
  EXPECT_VALIDATE_ERROR(h, "op 'mm': inputs: inner dimensions differ: [4,3] x [2,5]");

  // bmm and linear, right and wrong.
  Graph k;
  OpId x = k.add_op(make_op("x", op_types::kInput, {}, {f32({8, 4, 3})}));
  OpId y = k.add_op(make_op("y", op_types::kInput, {}, {f32({8, 3, 5})}));
  OpId w = add_param(k, "w", {6, 5});
  OpId bias = add_param(k, "bias", {6});
  OpId bmm =
      k.add_op(make_op("bmm", "aten::bmm", {{x, 0}, {y, 0}}, {f32({8, 4, 5})}, 0, {Arg::tensor(0), Arg::tensor(1)}));
  k.add_op(make_op("lin", "aten::linear", {{bmm, 0}, {w, 0}, {bias, 0}}, {f32({8, 4, 6})}, 0,
                   {Arg::tensor(0), Arg::tensor(1), Arg::tensor(2)}));
  EXPECT_NO_THROW(validate_graph(k));
  k.mutable_op(OpId(5)).outputs[0].shape = {8, 4, 5};
  EXPECT_VALIDATE_ERROR(k, "op 'lin': outputs[0].shape: [8,4,5] does not match input x weight^T: expected [8,4,6]");
}

TEST(Validate, ElementwiseAndBroadcast) {
  Graph g;
  OpId a = g.add_op(make_op("a", op_types::kInput, {}, {f32({4, 1, 3})}));
  OpId b = g.add_op(make_op("b", op_types::kInput, {}, {f32({5, 1})}));
  g.add_op(make_op("add", "aten::add.Tensor", {{a, 0}, {b, 0}}, {f32({4, 5, 3})}, 60,
                   {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)}));
  g.add_op(make_op("mul", "aten::mul.Scalar", {{a, 0}}, {f32({4, 1, 3})}, 12, {Arg::tensor(0), Arg::real(2.0)}));
  EXPECT_NO_THROW(validate_graph(g));
  g.mutable_op(OpId(2)).outputs[0].shape = {4, 5, 1};
  EXPECT_VALIDATE_ERROR(
      g, "op 'add': outputs[0].shape: [4,5,1] does not match the broadcast of its inputs: expected [4,5,3]");
  g.mutable_op(OpId(1)).outputs[0].shape = {5, 2};
  EXPECT_VALIDATE_ERROR(g, "op 'add': inputs: shapes [4,1,3] and [5,2] do not broadcast");
  g = tiny_forward();
  g.mutable_op(OpId(4)).outputs[0].shape = {2, 4};
  EXPECT_VALIDATE_ERROR(g, "op 'relu': outputs[0].shape: [2,4] does not match its input [4,2]");
}

TEST(Validate, Cat) {
  Graph g;
  OpId a = g.add_op(make_op("a", op_types::kInput, {}, {f32({2, 3})}));
  OpId b = g.add_op(make_op("b", op_types::kInput, {}, {f32({2, 5})}));
  g.add_op(
      make_op("cat", "aten::cat", {{a, 0}, {b, 0}}, {f32({2, 8})}, 0, {Arg::tensor_list({0, 1}), Arg::integer(-1)}));
  EXPECT_NO_THROW(validate_graph(g));
  g.mutable_op(OpId(2)).args[1] = Arg::integer(0);
  EXPECT_VALIDATE_ERROR(g, "op 'cat': inputs: cat along dim 0 of [2,3] and [2,5]: other dimensions differ");
  g.mutable_op(OpId(2)).args[1] = Arg::integer(2);
  EXPECT_VALIDATE_ERROR(g, "op 'cat': args[1]: dim 2 out of range for rank 2");
}

TEST(Validate, Conv2d) {
  Graph g;
  OpId x = g.add_op(make_op("x", op_types::kInput, {}, {f32({2, 3, 32, 32})}));
  OpId w = add_param(g, "w", {16, 3, 3, 3});
  // stride 2, padding 1: (32 + 2 - 3) / 2 + 1 = 16
  g.add_op(make_op("conv", "aten::conv2d", {{x, 0}, {w, 0}}, {f32({2, 16, 16, 16})}, 0,
                   {Arg::tensor(0), Arg::tensor(1), Arg::none(), Arg::int_list({2, 2}), Arg::int_list({1, 1}),
                    Arg::int_list({1, 1}), Arg::integer(1)}));
  EXPECT_NO_THROW(validate_graph(g));
  g.mutable_op(OpId(2)).outputs[0].shape = {2, 16, 15, 15};
  EXPECT_VALIDATE_ERROR(g, "op 'conv': outputs[0].shape: [2,16,15,15] does not match the convolution");
  // Padding or dilation near 2^62 overflowed the output size's arithmetic (undefined behaviour).
  g.mutable_op(OpId(2)).outputs[0].shape = {2, 16, 16, 16};
  g.mutable_op(OpId(2)).args[4] = Arg::int_list({int64_t{1} << 62, 1});
  EXPECT_VALIDATE_ERROR(g, "op 'conv': args: absurd stride, padding or dilation");
  g.mutable_op(OpId(2)).args[4] = Arg::int_list({1, 1});
  g.mutable_op(OpId(2)).args[5] = Arg::int_list({int64_t{1} << 62});
  EXPECT_VALIDATE_ERROR(g, "op 'conv': args: absurd stride, padding or dilation");
}

TEST(Validate, BackwardAndUpdateOps) {
  Graph g = tiny_training();
  g.mutable_op(OpId(8)).outputs[1].shape = {2, 3};
  EXPECT_VALIDATE_ERROR(g, "op 'fc_grad': outputs[1]: gradient [2,3] float does not match input 2 of 'fc' [3,2] float");

  g = tiny_training();
  g.mutable_op(OpId(8)).args[1].ints = {0, 7};
  EXPECT_VALIDATE_ERROR(g, "op 'fc_grad': args[1][1]: forward op 'fc' has no input 7");

  g = tiny_training();
  g.mutable_op(OpId(7)).args[0].ints = {};
  EXPECT_VALIDATE_ERROR(g, "op 'relu_grad': args[0]: has 0 entries for 1 gradient input(s)");

  g = tiny_training();
  g.mutable_op(OpId(7)).forward = OpId();
  EXPECT_VALIDATE_ERROR(g, "op 'relu_grad': forward: a backward op must name its forward op");

  g = tiny_training();
  g.mutable_op(OpId(9)).forward = OpId(3);  // sgd of a non-param
  EXPECT_VALIDATE_ERROR(g, "op 'w_sgd': forward: 'fc' is not a param op");

  g = tiny_training();
  g.mutable_op(OpId(9)).args = {Arg::integer(1)};
  EXPECT_VALIDATE_ERROR(g, "op 'w_sgd': args[0]: must be the learning rate (double)");

  g = tiny_training();
  g.mutable_op(OpId(10)).phase = Phase::Backward;
  EXPECT_VALIDATE_ERROR(g, "op 'b_sgd': phase: an sgd op has phase update, not backward");

  // A NaN learning rate went on into every update (and through `graph pipeline` into its file).
  for (double lr : {std::nan(""), -std::numeric_limits<double>::infinity(), -0.1}) {
    g = tiny_training();
    g.mutable_op(OpId(9)).args[0] = Arg::real(lr);
    EXPECT_VALIDATE_ERROR(g, "op 'w_sgd': args[0]: the learning rate must be finite and >= 0");
  }
}

// Names are UTF-8 text (a binary graph named "m\xffp" loaded, and the JSON written from it did not), and
// an op has at most kMaxArgsPerOp arguments (a binary file's count is checked before they are read).
TEST(Validate, NamesAreUtf8AndArgsAreFew) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(4)).name = "re\xfflu";
  EXPECT_VALIDATE_ERROR(g, "ops[4]: name: not UTF-8 text");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "caf\xc3"}) {  // overlong, surrogate, > U+10FFFF, cut
    g = tiny_forward();
    g.mutable_op(OpId(4)).layer = bad;
    EXPECT_VALIDATE_ERROR(g, "op 'relu': layer: not UTF-8 text");
  }
  g = tiny_forward();
  g.name = "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80";  // "café → 😀"
  g.mutable_op(OpId(4)).group = "\xe6\x97\xa5";
  EXPECT_NO_THROW(validate_graph(g));
  g.attrs["k"] = "\xff";
  EXPECT_VALIDATE_ERROR(g, "attrs: not UTF-8 text");
  g = tiny_forward();
  g.mutable_op(OpId(4)).args.assign(kMaxArgsPerOp + 1, Arg::integer(0));
  EXPECT_VALIDATE_ERROR(g, "op 'relu': args: 1025 arguments, over 1024");
}

// U+0000 is well-formed UTF-8 but no text field may hold it: the writers keep attr keys as C strings, so a
// key "k\0001" was written as "k" (two such keys collided and the file was refused when read back).
TEST(Validate, TextHoldsNoNul) {
  using namespace std::string_literals;
  Graph g = tiny_forward();
  g.mutable_op(OpId(4)).name = "re\0lu"s;
  EXPECT_VALIDATE_ERROR(g, "ops[4]: name: holds U+0000 (NUL)");
  g = tiny_forward();
  g.mutable_op(OpId(4)).layer = "dense\0"s;
  EXPECT_VALIDATE_ERROR(g, "op 'relu': layer: holds U+0000 (NUL)");
  g = tiny_forward();
  g.mutable_op(OpId(4)).group = "\0"s;
  EXPECT_VALIDATE_ERROR(g, "op 'relu': group: holds U+0000 (NUL)");
  g = tiny_forward();
  g.mutable_op(OpId(4)).type = "aten::relu\0"s;
  EXPECT_VALIDATE_ERROR(g, "op 'relu': type: holds U+0000 (NUL)");
  g = tiny_forward();
  g.name = "ti\0ny"s;
  EXPECT_VALIDATE_ERROR(g, "graph: name: holds U+0000 (NUL)");
  g = tiny_forward();
  g.attrs["k\0001"s] = "a";  // k, U+0000, 1
  EXPECT_VALIDATE_ERROR(g, "graph 'tiny': attrs: key 'k\\u00001': holds U+0000 (NUL)");
  g = tiny_forward();
  g.attrs["k"] = "a\0"s;
  EXPECT_VALIDATE_ERROR(g, "graph 'tiny': attrs: value of 'k': holds U+0000 (NUL)");
  g = tiny_forward();
  g.attrs["k"] = "\xff";
  EXPECT_VALIDATE_ERROR(g, "attrs: not UTF-8 text");
}

// The sizes along cat's dim are summed with a check before each add: 2^24 inputs of 2^40 elements wrapped
// to 0 and a declared [0] was accepted.
TEST(Validate, CatSizesSumWithoutOverflow) {
  Graph g;
  g.name = "cat";
  const OpId x = g.add_op(make_op("x", op_types::kInput, {}, {TensorSpec{{int64_t{1} << 40}, DType::UInt8}}));
  auto cat_of = [&](size_t entries, std::vector<int64_t> declared) {
    Graph c = g;
    c.add_op(make_op("c", "aten::cat", {{x, 0}}, {TensorSpec{std::move(declared), DType::UInt8}}, 0,
                     {Arg::tensor_list(std::vector<int64_t>(entries, 0)), Arg::integer(0)}));
    return c;
  };
  EXPECT_VALIDATE_ERROR(cat_of(size_t{1} << 24, {0}),
                        "op 'c': args[0][1]: cat along dim 0: the sizes sum past 1099511627776 (the largest size of "
                        "a dimension)");
  EXPECT_VALIDATE_ERROR(cat_of(2, {int64_t{1} << 40}), "op 'c': args[0][1]: cat along dim 0: the sizes sum past");
  EXPECT_NO_THROW(validate_graph(cat_of(1, {int64_t{1} << 40})));
}

TEST(Validate, InputsMustBeEarlierOps) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(4)).inputs[0] = TensorRef{OpId(5), 0};  // an edit that makes a cycle
  EXPECT_VALIDATE_ERROR(g, "op 'relu': inputs[0]: refers to op #5, not an earlier op");
  g = tiny_forward();
  g.mutable_op(OpId(4)).inputs[0] = TensorRef{OpId(3), 1};
  EXPECT_VALIDATE_ERROR(g, "op 'relu': inputs[0]: reads output 1 of 'fc', which has 1 output(s)");
}

}  // namespace
}  // namespace placer
