// Private helpers for the benchmark builders: one function per ATen op that
// appends a real call (full schema name, complete argument list in schema
// order) with its output shape and FLOPs.
//
// FLOP conventions (tests recompute these by hand):
//   mm / addmm / linear / bmm:      2*M*N*K (the bias add is not counted)
//   conv2d:                         2*N*Cout*Hout*Wout*(Cin/groups)*kh*kw
//   elementwise (add, mul, relu, sigmoid, tanh, gelu, mul.Scalar): numel(out)
//   batch_norm, layer_norm:         kNormFlopsPerElem * numel(out)
//   softmax / log_softmax:          kSoftmaxFlopsPerElem * numel(out)
//   cross_entropy_loss:             kSoftmaxFlopsPerElem * numel(logits)
//   max/avg pool:                   numel(out) * kh * kw
//   adaptive_avg_pool2d, mean:      numel(in)
//   views and copies (reshape, transpose, flatten, chunk, unbind,
//   unsqueeze, cat, stack, embedding): 0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer::detail {

inline constexpr double kNormFlopsPerElem = 4.0;
inline constexpr double kSoftmaxFlopsPerElem = 3.0;

// Appends ops to a graph; every op gets the current `layer` tag.
class OpBuilder {
 public:
  explicit OpBuilder(Graph& graph) : g_(graph) {}

  std::string layer;  // Op::layer of the ops added next

  Graph& graph() { return g_; }
  const TensorSpec& spec(TensorRef t) const;
  const std::vector<int64_t>& shape(TensorRef t) const { return spec(t).shape; }

  // Generic append; returns all outputs.
  std::vector<TensorRef> add(std::string name, std::string type, std::vector<TensorRef> inputs, std::vector<Arg> args,
                             std::vector<TensorSpec> outputs, double flops);
  TensorRef add1(std::string name, std::string type, std::vector<TensorRef> inputs, std::vector<Arg> args,
                 TensorSpec output, double flops);

  // placer::input. Integer inputs (token ids, labels) are drawn from [0, high).
  TensorRef input(std::string name, std::vector<int64_t> shape, DType dtype = DType::Float32, int64_t high = 0);
  // placer::param with param_bytes = its bytes.
  TensorRef param(std::string name, std::vector<int64_t> shape);

  // ATen ops. Names are full op names.
  TensorRef addmm(std::string name, TensorRef bias, TensorRef x, TensorRef w);  // x[M,K] w[K,N] bias[N]
  TensorRef mm(std::string name, TensorRef a, TensorRef b);
  TensorRef linear(std::string name, TensorRef x, TensorRef w, const TensorRef* bias);  // w[N,K]
  TensorRef bmm(std::string name, TensorRef a, TensorRef b);
  TensorRef add(std::string name, TensorRef a, TensorRef b);  // aten::add.Tensor, broadcasting
  TensorRef mul(std::string name, TensorRef a, TensorRef b);  // aten::mul.Tensor, broadcasting
  TensorRef mul_scalar(std::string name, TensorRef x, double s);
  TensorRef sigmoid(std::string name, TensorRef x) { return unary(std::move(name), "aten::sigmoid", x); }
  TensorRef tanh(std::string name, TensorRef x) { return unary(std::move(name), "aten::tanh", x); }
  TensorRef relu(std::string name, TensorRef x) { return unary(std::move(name), "aten::relu", x); }
  TensorRef gelu(std::string name, TensorRef x);
  std::vector<TensorRef> chunk(std::string name, TensorRef x, int64_t chunks, int64_t dim);
  std::vector<TensorRef> unbind(std::string name, TensorRef x, int64_t dim);
  TensorRef cat(std::string name, const std::vector<TensorRef>& xs, int64_t dim);
  TensorRef stack(std::string name, const std::vector<TensorRef>& xs, int64_t dim);
  TensorRef embedding(std::string name, TensorRef weight, TensorRef ids);
  TensorRef conv2d(std::string name, TensorRef x, TensorRef w, std::vector<int64_t> stride,
                   std::vector<int64_t> padding);
  TensorRef batch_norm(std::string name, TensorRef x, TensorRef gamma, TensorRef beta, double eps);
  TensorRef max_pool2d(std::string name, TensorRef x, int64_t kernel, int64_t stride, int64_t padding);
  TensorRef avg_pool2d(std::string name, TensorRef x, int64_t kernel, int64_t stride, int64_t padding);
  TensorRef adaptive_avg_pool2d(std::string name, TensorRef x, int64_t out_h, int64_t out_w);
  TensorRef flatten(std::string name, TensorRef x, int64_t start_dim, int64_t end_dim);
  TensorRef softmax(std::string name, TensorRef x, int64_t dim);
  TensorRef transpose(std::string name, TensorRef x, int64_t dim0, int64_t dim1);
  // A view of x, as ATen's reshape gives where x's strides allow; `view` false where they do not (after a
  // transpose that the new shape merges across), and ATen copies.
  TensorRef reshape(std::string name, TensorRef x, std::vector<int64_t> shape, bool view = true);
  TensorRef unsqueeze(std::string name, TensorRef x, int64_t dim);
  TensorRef layer_norm(std::string name, TensorRef x, TensorRef w, TensorRef b, double eps);  // last dim
  TensorRef cross_entropy(std::string name, TensorRef logits, TensorRef target);              // mean reduction
  TensorRef mean(std::string name, TensorRef x);

  // Composites used by several models.
  // conv2d (no bias) + batch_norm (training, batch statistics) + relu, each with params.
  TensorRef conv_bn_relu(const std::string& name, TensorRef x, int64_t out_channels, int64_t kh, int64_t kw,
                         int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w, double eps,
                         bool relu = true);

 private:
  TensorRef unary(std::string name, const char* type, TensorRef x);
  // Records that these outputs are views of their op's input 0 (Op::view_of).
  std::vector<TensorRef> views_of_input0(std::vector<TensorRef> outputs);
  Graph& g_;
};

// Number of elements of a shape.
int64_t numel_of(const std::vector<int64_t>& shape);
// Output size of a conv/pool window; throws InputError when it is < 1.
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t padding, const std::string& op_name);

// An option table entry: default and accepted range (inclusive).
struct OptionSpec {
  int64_t fallback;
  int64_t min;
  int64_t max;
};
using OptionTable = std::map<std::string, OptionSpec>;

// Resolved options: every key of the table, checked against its range.
class Options {
 public:
  Options(const std::string& builder, const OptionTable& table, const std::map<std::string, int64_t>& given);
  int64_t operator[](const std::string& key) const;
  const std::map<std::string, int64_t>& values() const { return values_; }

 private:
  std::string builder_;
  std::map<std::string, int64_t> values_;
};

// The size of a builder's forward graph, from its options alone (each builder's documented formula): its
// op count, the options that set it ("layers=64 x steps=1000") and which of them to lower.
struct OpCount {
  int64_t forward_ops;
  std::string sized_by;
  std::string lower;
};
// build_graph refuses a builder graph of more forward ops before building it: the training step has about twice
// as many, and 980,232 of those took 13 s and 1.9 GB to build (about 2 KB per op), 20 times the largest graph of
// configs/ and bench/ (nmt layers=8 x steps=125: 50,612 ops). Only rnnlm and nmt reach it within their ranges.
inline constexpr int64_t kMaxBuilderForwardOps = 500'000;
// The count for builder `name` (defined with the registry, in builders.cc); throws InputError as build_graph
// does for an unknown builder or option or a bad value.
OpCount count_forward_ops(const std::string& name, const std::map<std::string, int64_t>& values);

// The forward graphs; each returns a forward-only Graph with a scalar loss.
OptionTable rnnlm_options();
OptionTable nmt_options();
OptionTable inception_v3_options();
OptionTable resnet_options();
OptionTable mlp_options();
OptionTable transformer_options();
Graph build_rnnlm(const Options& o);
Graph build_nmt(const Options& o);
Graph build_inception_v3(const Options& o);
Graph build_resnet(const Options& o);
Graph build_mlp(const Options& o);
Graph build_transformer(const Options& o);
OpCount rnnlm_op_count(const Options& o);
OpCount nmt_op_count(const Options& o);
OpCount inception_v3_op_count(const Options& o);
OpCount resnet_op_count(const Options& o);
OpCount mlp_op_count(const Options& o);
OpCount transformer_op_count(const Options& o);

// One LSTM cell step (TF BasicLSTMCell layout, as in ColocRL's models):
//   gates = addmm(b[4H], cat([x, h], 1), W[in+H, 4H]); i, f, g, o = chunk(gates, 4, 1)
//   c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c')
// 12 ops, named "<prefix>/<op>".
struct LstmState {
  TensorRef h;
  TensorRef c;
};
LstmState lstm_cell(OpBuilder& b, const std::string& prefix, TensorRef x, LstmState prev, TensorRef w, TensorRef bias);

}  // namespace placer::detail
