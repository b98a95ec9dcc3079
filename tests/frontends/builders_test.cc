// Benchmark builders: op counts and FLOPs against hand-computed formulas,
// exact conv/fc FLOPs and parameter counts against torchvision's models,
// every ATen op checked against the dispatcher's schema and executed on CPU
// with the shapes the IR promises, validation and serialization round trips.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../../frontends/src/builder_util.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/aten_dtype.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/training.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

BuilderOptions opts(std::map<std::string, int64_t> values, bool forward_only = false) {
  BuilderOptions o;
  o.values = std::move(values);
  o.forward_only = forward_only;
  return o;
}

struct Tally {
  int64_t ops = 0, inputs = 0, params = 0, backward = 0, sgd = 0, param_bytes = 0;
  double flops = 0, fwd_flops = 0, bwd_flops = 0, sgd_flops = 0;
  std::map<std::string, int64_t> by_type;
  std::map<std::string, double> flops_by_type;
  std::set<std::string> layers;
};

Tally tally(const Graph& g) {
  Tally t;
  for (const Op& op : g.ops()) {
    ++t.ops;
    t.by_type[op.type]++;
    t.flops_by_type[op.type] += op.flops;
    t.flops += op.flops;
    t.param_bytes += op.param_bytes;
    t.layers.insert(op.layer);
    if (op.type == op_types::kInput) ++t.inputs;
    if (op.type == op_types::kParam) ++t.params;
    if (op.phase == Phase::Forward) t.fwd_flops += op.flops;
    if (op.phase == Phase::Backward) ++t.backward, t.bwd_flops += op.flops;
    if (op.phase == Phase::Update) ++t.sgd, t.sgd_flops += op.flops;
  }
  return t;
}

// ---- Execution through the dispatcher -------------------------------------------------

c10::OperatorHandle schema_of(const std::string& type) {
  std::string name = type, overload;
  auto dot = type.find('.');
  if (dot != std::string::npos) {
    name = type.substr(0, dot);
    overload = type.substr(dot + 1);
  }
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  EXPECT_TRUE(handle.has_value()) << "no ATen schema " << type;
  return *handle;
}

// The number of args matches the schema and tensor args sit exactly where the
// schema takes Tensor, Tensor? or Tensor[].
void check_schema(const Op& op) {
  auto handle = schema_of(op.type);
  const auto& arguments = handle.schema().arguments();
  ASSERT_EQ(op.args.size(), arguments.size()) << op.name << " " << op.type << " " << handle.schema();
  for (size_t k = 0; k < arguments.size(); ++k) {
    c10::TypePtr type = arguments[k].type();
    bool optional = false;
    if (auto opt = type->cast<c10::OptionalType>()) {
      type = opt->getElementType();
      optional = true;
    }
    const Arg& a = op.args[k];
    if (optional && a.kind == Arg::Kind::None) continue;
    bool is_tensor = type->kind() == c10::TypeKind::TensorType;
    auto list = type->cast<c10::ListType>();
    bool is_tensor_list = list && list->getElementType()->kind() == c10::TypeKind::TensorType;
    EXPECT_EQ(a.kind == Arg::Kind::Tensor, is_tensor) << op.name << " arg " << arguments[k].name();
    EXPECT_EQ(a.kind == Arg::Kind::TensorList, is_tensor_list) << op.name << " arg " << arguments[k].name();
    if (a.kind == Arg::Kind::None) {
      ADD_FAILURE() << op.name << " passes None to non-optional arg " << arguments[k].name();
    }
  }
}

c10::IValue to_ivalue(const Arg& a, const std::vector<at::Tensor>& in) {
  switch (a.kind) {
    case Arg::Kind::None: return c10::IValue();
    case Arg::Kind::Tensor: return in.at(a.i);
    case Arg::Kind::TensorList: {
      c10::List<at::Tensor> list;
      for (int64_t k : a.ints) list.push_back(in.at(k));
      return list;
    }
    case Arg::Kind::Int: return a.i;
    case Arg::Kind::Double: return a.d;
    case Arg::Kind::Bool: return a.b;
    case Arg::Kind::Ints: return c10::List<int64_t>(a.ints);
    case Arg::Kind::Doubles: return c10::List<double>(a.doubles);
    case Arg::Kind::Bools: {
      c10::List<bool> list;
      for (int64_t v : a.ints) list.push_back(v != 0);
      return list;
    }
    case Arg::Kind::String: return a.s;
    case Arg::Kind::ScalarType: return static_cast<int64_t>(to_scalar_type(static_cast<DType>(a.i)));
    case Arg::Kind::Device: return c10::Device("cpu");
  }
  return c10::IValue();
}

std::vector<at::Tensor> call_aten(const Op& op, const std::vector<at::Tensor>& in) {
  check_schema(op);
  auto handle = schema_of(op.type);
  torch::jit::Stack stack;
  for (const Arg& a : op.args) stack.push_back(to_ivalue(a, in));
  handle.callBoxed(&stack);
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : stack) {
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else {
      EXPECT_TRUE(v.isTensorList()) << op.name;
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    }
  }
  return out;
}

void expect_specs(const Op& op, const std::vector<at::Tensor>& out) {
  ASSERT_EQ(out.size(), op.outputs.size()) << op.name;
  for (size_t j = 0; j < out.size(); ++j) {
    EXPECT_EQ(out[j].sizes().vec(), op.outputs[j].shape) << op.name << " output " << j;
    EXPECT_EQ(out[j].scalar_type(), to_scalar_type(op.outputs[j].dtype)) << op.name << " output " << j;
    if (is_floating(op.outputs[j].dtype)) {
      EXPECT_TRUE(at::isfinite(out[j]).all().item<bool>()) << op.name << " output " << j;
    }
  }
}

// Runs a graph on CPU op by op through the dispatcher, the way ir.h defines
// it, and checks every output against its spec:
//  - forward ops with real tensors (params as autograd leaves);
//  - each placer::backward op as autograd over its single forward op, fed by
//    the gradient tensors its inputs[1..] name (summed per forward output,
//    the loss seeded with ones, unfed outputs with zeros);
//  - each placer::sgd op: the sum of its gradients must equal the param's
//    gradient from one autograd pass over the whole forward graph, which
//    checks the gradient routing of make_training_graph end to end.
// Returns the number of sgd ops checked.
int execute(const Graph& g) {
  at::manual_seed(0);
  std::vector<std::vector<at::Tensor>> values(g.size());
  std::optional<OpId> loss;
  int checked = 0;
  for (int32_t k = 0; k < g.size(); ++k) {
    const Op& op = g.op(OpId(k));
    std::vector<at::Tensor> out;
    if (op.phase == Phase::Forward) {
      std::vector<at::Tensor> in;
      for (const TensorRef& r : op.inputs) in.push_back(values[r.op.value].at(r.output));
      if (op.type == op_types::kParam) {
        out.push_back((at::randn(op.outputs[0].shape) * 0.1).requires_grad_(true));
      } else if (op.type == op_types::kInput) {
        const TensorSpec& s = op.outputs[0];
        auto options = at::TensorOptions().dtype(to_scalar_type(s.dtype));
        if (is_floating(s.dtype)) {
          out.push_back(at::randn(s.shape, options));
        } else {
          EXPECT_EQ(op.args.size(), 1u) << op.name;
          out.push_back(at::randint(op.args.at(0).i, s.shape, options));
        }
      } else {
        EXPECT_EQ(op.type.rfind("aten::", 0), 0u) << op.name;
        out = call_aten(op, in);
      }
    } else if (op.type == op_types::kBackward) {
      const Op& fwd = g.op(op.forward);
      if (!loss) {  // the first backward op is the loss's: one whole-graph pass for reference
        loss = op.forward;
        values[loss->value].at(0).backward();
      }
      std::vector<at::Tensor> in;
      for (const TensorRef& r : fwd.inputs) in.push_back(values[r.op.value].at(r.output).detach());
      std::vector<at::Tensor> wrt;
      for (int64_t i : op.args.at(1).ints) {
        in.at(i) = in.at(i).clone().requires_grad_(true);  // clone: an input used twice is two leaves
        wrt.push_back(in.at(i));
      }
      std::vector<at::Tensor> fwd_out = call_aten(fwd, in);
      std::vector<at::Tensor> seeds(fwd_out.size());
      for (size_t i = 1; i < op.inputs.size(); ++i) {
        int64_t j = op.args.at(0).ints.at(i - 1);
        const at::Tensor& gi = values[op.inputs[i].op.value].at(op.inputs[i].output);
        seeds.at(j) = seeds[j].defined() ? seeds[j] + gi : gi;
      }
      std::vector<at::Tensor> outs, grads;
      for (size_t j = 0; j < fwd_out.size(); ++j) {
        if (!fwd_out[j].requires_grad()) continue;
        outs.push_back(fwd_out[j]);
        grads.push_back(seeds[j].defined()
                            ? seeds[j]
                            : (op.forward == *loss ? at::ones_like(fwd_out[j]) : at::zeros_like(fwd_out[j])));
      }
      auto result = torch::autograd::grad(outs, wrt, grads, /*retain_graph=*/false, /*create_graph=*/false,
                                          /*allow_unused=*/true);
      for (size_t j = 0; j < result.size(); ++j) {
        out.push_back(result[j].defined() ? result[j] : at::zeros_like(wrt[j]));
      }
    } else if (op.type == op_types::kSgd) {
      EXPECT_TRUE(loss.has_value());
      at::Tensor sum;
      for (size_t i = 1; i < op.inputs.size(); ++i) {
        const at::Tensor& gi = values[op.inputs[i].op.value].at(op.inputs[i].output);
        sum = sum.defined() ? sum + gi : gi;
      }
      const at::Tensor& param = values[op.inputs.at(0).op.value].at(0);
      EXPECT_TRUE(param.grad().defined()) << op.name;
      if (param.grad().defined()) {
        EXPECT_TRUE(at::allclose(sum, param.grad(), 1e-3, 1e-6))
            << op.name << ": max difference " << (sum - param.grad()).abs().max().item<double>();
      }
      ++checked;
    }
    expect_specs(op, out);
    values[k] = std::move(out);
  }
  return checked;
}

// Every builder's training graph validates and survives JSON and binary.
void check_io(const Graph& g) {
  EXPECT_NO_THROW(validate_graph(g));
  EXPECT_EQ(graph_from_json(graph_to_json(g)), g);
  EXPECT_EQ(graph_from_binary(graph_to_binary(g)), g);
}

// The structure shared by every training graph: one backward per forward op
// with flops, its forward set and 2x flops; one sgd per param.
void check_training_shape(const Graph& g) {
  for (const Op& op : g.ops()) {
    if (op.phase == Phase::Backward) {
      ASSERT_TRUE(op.forward.valid());
      const Op& fwd = g.op(op.forward);
      EXPECT_EQ(op.name, fwd.name + "/grad");
      EXPECT_EQ(op.inputs.at(0), (TensorRef{op.forward, 0}));
      EXPECT_DOUBLE_EQ(op.flops, 2 * fwd.flops);
      EXPECT_EQ(op.layer, fwd.layer);
    }
    if (op.phase == Phase::Update) {
      const Op& param = g.op(op.forward);
      EXPECT_EQ(param.type, op_types::kParam);
      EXPECT_EQ(op.name, param.name + "/update");
    }
  }
}

// ---- MLP ---------------------------------------------------------------------------

void MlpCountsAndFlopsByHand() {
  const int64_t B = 4, I = 8, W = 16, C = 3, L = 3;
  Graph g = build_graph("mlp", opts({{"batch", B}, {"input", I}, {"width", W}, {"classes", C}, {"layers", L}}));
  Tally t = tally(g);
  // 2 inputs, 2 params + linear per layer, relu between layers, loss.
  EXPECT_EQ(t.ops - t.backward - t.sgd, 4 * L + 2);
  EXPECT_EQ(t.backward, 2 * L);
  EXPECT_EQ(t.sgd, 2 * L);
  EXPECT_EQ(t.ops, 8 * L + 2);
  double fwd = 2.0 * B * W * I + B * W + 2.0 * B * W * W + B * W + 2.0 * B * C * W + 3.0 * B * C;
  EXPECT_DOUBLE_EQ(t.fwd_flops, fwd);  // 3620
  EXPECT_DOUBLE_EQ(fwd, 3620.0);
  EXPECT_DOUBLE_EQ(t.bwd_flops, 2 * fwd);
  const int64_t params = W * I + W + W * W + W + C * W + C;  // 467
  EXPECT_DOUBLE_EQ(t.sgd_flops, 2.0 * params);               // one gradient each: 2 flops/element
  EXPECT_EQ(t.param_bytes, 4 * params);
  EXPECT_EQ(t.layers, (std::set<std::string>{"fc0", "fc1", "fc2", "loss"}));
  check_training_shape(g);
  check_io(g);
}

void MlpTrainingStepRunsOnCpu() { EXPECT_EQ(execute(build_graph("mlp", opts({{"batch", 4}}))), 6); }

// ---- RNNLM --------------------------------------------------------------------------

void RnnlmCountsAndFlopsByHand() {
  const int64_t L = 2, H = 8, T = 3, B = 4, V = 10;
  Graph g = build_graph("rnnlm", opts({{"layers", L}, {"hidden", H}, {"steps", T}, {"batch", B}, {"vocab", V}}));
  Tally t = tally(g);
  // Forward: tokens, embedding weight, lookup, unbind; per layer h0, c0,
  // weight, bias and T cells of 12 ops; softmax: targets, weight, bias,
  // unbind, 2 ops per step, stack, mean.
  const int64_t fwd_ops = 4 + L * (4 + 12 * T) + 6 + 2 * T;
  EXPECT_EQ(fwd_ops, 96);
  EXPECT_EQ(t.inputs, 2 + 2 * L);
  EXPECT_EQ(t.params, 3 + 2 * L);
  // Every forward op except inputs, params and the targets' unbind has a backward op.
  EXPECT_EQ(t.backward, fwd_ops - t.inputs - t.params - 1);
  EXPECT_EQ(t.sgd, t.params);
  EXPECT_EQ(t.ops, fwd_ops + t.backward + t.sgd);
  EXPECT_EQ(t.ops, 185);
  // One cell: addmm 2*B*(4H)*(2H) + 9 elementwise ops on [B,H].
  const double cell = 2.0 * B * 4 * H * 2 * H + 9.0 * B * H;
  const double step_softmax = 2.0 * B * V * H + 3.0 * B * V;
  const double fwd = L * T * cell + T * step_softmax + T;
  EXPECT_DOUBLE_EQ(fwd, 28587.0);
  EXPECT_DOUBLE_EQ(t.fwd_flops, fwd);
  EXPECT_DOUBLE_EQ(t.bwd_flops, 2 * fwd);
  // sgd: (gradients + 1) flops per element; embedding gets 1 gradient, the
  // LSTM and softmax params one per step.
  const double sgd = 2.0 * V * H + L * (T + 1.0) * (2 * H * 4 * H + 4 * H) + (T + 1.0) * (H * V + V);
  EXPECT_DOUBLE_EQ(t.sgd_flops, sgd);
  EXPECT_EQ(t.param_bytes, 4 * (V * H + L * (2 * H * 4 * H + 4 * H) + H * V + V));
  EXPECT_EQ(t.by_type["aten::addmm"], L * T + T);
  EXPECT_EQ(t.by_type["aten::cross_entropy_loss"], T);
  EXPECT_EQ(t.layers, (std::set<std::string>{"embedding", "lstm0", "lstm1", "softmax"}));
  // One weight param shared by all steps of a layer: its sgd sums T gradients.
  const Op& update = g.op(*g.find("lstm1/weight/update"));
  EXPECT_EQ(update.inputs.size(), static_cast<size_t>(1 + T));
  EXPECT_EQ(g.consumers(*g.find("lstm1/weight")).size(), static_cast<size_t>(T + 1));  // T cells + sgd
  check_training_shape(g);
  check_io(g);
}

void RnnlmTrainingStepRunsOnCpu() {
  EXPECT_EQ(
      execute(build_graph("rnnlm", opts({{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"batch", 4}, {"vocab", 10}}))),
      7);
}

// ---- NMT ----------------------------------------------------------------------------

void NmtCountsAndFlopsByHand() {
  const int64_t L = 2, H = 8, S = 3, B = 4, V = 10;
  Graph g = build_graph("nmt", opts({{"layers", L}, {"hidden", H}, {"steps", S}, {"batch", B}, {"vocab", V}}));
  Tally t = tally(g);
  // Two embeddings (4 ops each); encoder layers 4 + 12S ops, decoder layers
  // 2 + 12S (their state comes from the encoder); attention: memory stack and
  // transpose, 2 params, 8 ops per step; softmax 6 + 2 per step.
  const int64_t fwd_ops = 8 + L * (4 + 12 * S) + L * (2 + 12 * S) + 4 + 8 * S + 6 + 2 * S;
  EXPECT_EQ(fwd_ops, 204);
  EXPECT_EQ(t.inputs, 3 + 2 * L);
  EXPECT_EQ(t.params, 6 + 4 * L);
  EXPECT_EQ(t.backward, fwd_ops - t.inputs - t.params - 1);
  EXPECT_EQ(t.sgd, t.params);
  const double cell = 2.0 * B * 4 * H * 2 * H + 9.0 * B * H;
  const double attention_step = 2.0 * B * S * H        // scores bmm
                                + 3.0 * B * S          // softmax
                                + 2.0 * B * H * S      // context bmm
                                + 2.0 * B * H * 2 * H  // combine addmm
                                + 1.0 * B * H;         // tanh
  const double step_softmax = 2.0 * B * V * H + 3.0 * B * V;
  const double fwd = 2 * L * S * cell + S * attention_step + S * step_softmax + S;
  EXPECT_DOUBLE_EQ(fwd, 59319.0);
  EXPECT_DOUBLE_EQ(t.fwd_flops, fwd);
  EXPECT_DOUBLE_EQ(t.bwd_flops, 2 * fwd);
  const double lstm_params = 2 * H * 4 * H + 4 * H;
  EXPECT_DOUBLE_EQ(t.sgd_flops, 2 * 2.0 * V * H + 2 * L * (S + 1.0) * lstm_params + (S + 1.0) * (2 * H * H + H) +
                                    (S + 1.0) * (H * V + V));
  EXPECT_EQ(t.param_bytes, 4 * (2 * V * H + 2 * L * int64_t(lstm_params) + 2 * H * H + H + H * V + V));
  std::set<std::string> layers{"embedding", "attention", "softmax"};
  for (int64_t l = 0; l < L; ++l)
    layers.insert("enc_lstm" + std::to_string(l)), layers.insert("dec_lstm" + std::to_string(l));
  EXPECT_EQ(t.layers, layers);
  // The decoder starts from the encoder's final state.
  const Op& first_dec = g.op(*g.find("dec_lstm1/t0/keep"));
  EXPECT_EQ(g.op(first_dec.inputs[1].op).name, "enc_lstm1/t" + std::to_string(S - 1) + "/c");
  check_training_shape(g);
  check_io(g);
}

void NmtTrainingStepRunsOnCpu() {
  EXPECT_EQ(
      execute(build_graph("nmt", opts({{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"batch", 4}, {"vocab", 10}}))), 14);
}

// ---- Transformer -----------------------------------------------------------------------

void TransformerCountsAndFlopsByHand() {
  const int64_t N = 2, M = 1, D = 16, h = 2, F = 32, S = 5, B = 2, V = 11;
  Graph g = build_graph("transformer", opts({{"layers", N},
                                             {"dec_layers", M},
                                             {"d_model", D},
                                             {"heads", h},
                                             {"ffn", F},
                                             {"seq", S},
                                             {"batch", B},
                                             {"vocab", V}}));
  Tally t = tally(g);
  const int64_t fwd_ops = 5 + 39 * N + 5 + 70 * M + 6;
  EXPECT_EQ(t.ops - t.backward - t.sgd, fwd_ops);
  EXPECT_EQ(t.inputs, 3);
  EXPECT_EQ(t.params, 4 + 12 * N + 20 * M + 2);
  EXPECT_EQ(t.backward, fwd_ops - t.inputs - t.params);
  EXPECT_EQ(t.sgd, t.params);
  const double tokens = B * S, dh = D / h;
  // Per attention: 2 bmm of 2*(B*h)*S*S*dh each; 1 (scale) + 3 (softmax) flops per score.
  const double attention_core = 2 * 2.0 * B * h * S * S * dh + 4.0 * B * h * S * S;
  const double self_attn = 2 * tokens * 3 * D * D + attention_core + 2 * tokens * D * D;
  const double cross_attn = 2 * tokens * D * D + 2 * tokens * 2 * D * D + attention_core + 2 * tokens * D * D;
  const double residual_norm = tokens * D + 4 * tokens * D;
  const double ffn = 2 * tokens * F * D + tokens * F + 2 * tokens * D * F;
  const double enc_layer = self_attn + residual_norm + ffn + residual_norm;
  const double dec_layer = self_attn + residual_norm + cross_attn + residual_norm + ffn + residual_norm;
  const double embed = tokens * D;  // the positional add
  const double head = 2 * tokens * V * D + 3 * tokens * V;
  const double fwd = embed + N * enc_layer + embed + M * dec_layer + head;
  EXPECT_DOUBLE_EQ(t.fwd_flops, fwd);
  EXPECT_DOUBLE_EQ(t.bwd_flops, 2 * fwd);
  EXPECT_EQ(t.by_type["aten::bmm"], 2 * N + 4 * M);
  EXPECT_EQ(t.by_type["aten::softmax.int"], N + 2 * M);
  EXPECT_EQ(t.by_type["aten::layer_norm"], 2 * N + 3 * M);
  EXPECT_EQ(t.layers, (std::set<std::string>{"embedding", "layer0", "layer1", "dec_layer0", "head"}));
  // Encoder-only: no target embedding and no decoder layers.
  Graph enc = build_graph("transformer", opts({{"layers", N},
                                               {"dec_layers", 0},
                                               {"d_model", D},
                                               {"heads", h},
                                               {"ffn", F},
                                               {"seq", S},
                                               {"batch", B},
                                               {"vocab", V}},
                                              true));
  EXPECT_EQ(enc.size(), 5 + 39 * N + 6);
  check_training_shape(g);
  check_io(g);
}

void TransformerTrainingStepRunsOnCpu() {
  EXPECT_EQ(execute(build_graph("transformer", opts({{"layers", 2},
                                                     {"dec_layers", 1},
                                                     {"d_model", 16},
                                                     {"heads", 2},
                                                     {"ffn", 32},
                                                     {"seq", 5},
                                                     {"batch", 2},
                                                     {"vocab", 11}}))),
            50);
}

// ---- Inception-V3 ----------------------------------------------------------------------

// Per image at 299x299 with 1000 classes, measured on torchvision 0.14's
// inception_v3 (aux classifier excluded) with forward hooks: multiply-adds of
// all Conv2d and Linear modules, BatchNorm2d output elements, parameters.
constexpr double kTvInceptionConvMacs = 5711168096.0;
constexpr double kTvInceptionFcMacs = 2048000.0;
constexpr double kTvInceptionBnElems = 8967488.0;
constexpr int64_t kTvInceptionParams = 23834568;

void InceptionMatchesTorchvision() {
  const int64_t B = 2;
  Graph g = build_graph("inception_v3", opts({{"batch", B}}, true));
  Tally t = tally(g);
  EXPECT_EQ(t.by_type["aten::conv2d"], 94);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::conv2d"], 2 * B * kTvInceptionConvMacs);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::linear"], 2 * B * kTvInceptionFcMacs);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::batch_norm"], 4 * B * kTvInceptionBnElems);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::relu"], B * kTvInceptionBnElems);  // every BN is followed by a relu
  EXPECT_EQ(t.param_bytes, 4 * kTvInceptionParams);
  // The last module's output: [B, 2048, 8, 8].
  const Op& last = g.op(*g.find("mixed_7c/concat"));
  EXPECT_EQ(last.outputs[0].shape, (std::vector<int64_t>{B, 2048, 8, 8}));
}

void InceptionCountsByHand() {
  Graph g = build_graph("inception_v3", opts({{"batch", 2}, {"image", 75}, {"width_div", 8}, {"classes", 10}}));
  Tally t = tally(g);
  // 6 ops per BasicConv2d (3 params, conv, bn, relu). Stem 5 convs + 2 pools;
  // A: 7 convs + pool + cat; B: 4 + pool + cat; C: 10 + pool + cat;
  // D: 6 + pool + cat; E: 9 + 2 inner cats + pool + cat; head 7; image 1.
  const int64_t fwd =
      1 + (6 * 5 + 2) + 3 * (6 * 7 + 2) + (6 * 4 + 2) + 4 * (6 * 10 + 2) + (6 * 6 + 2) + 2 * (6 * 9 + 4) + 7;
  EXPECT_EQ(fwd, 600);
  const int64_t params = 3 * 94 + 2;
  EXPECT_EQ(t.params, params);
  EXPECT_EQ(t.backward, fwd - 2 - params);
  EXPECT_EQ(t.sgd, params);
  EXPECT_EQ(t.ops, fwd + (fwd - 2 - params) + params);
  EXPECT_EQ(t.ops, 1198);
  EXPECT_EQ(t.by_type["aten::cat"], 11 + 4);
  for (const char* layer :
       {"stem", "mixed_5b/branch1x1", "mixed_5b/branch5x5", "mixed_5b/branch3x3dbl", "mixed_5b/branch_pool", "mixed_5b",
        "mixed_6a/branch3x3", "mixed_6e/branch7x7dbl", "mixed_7a/branch7x7x3", "mixed_7c/branch3x3", "head"}) {
    EXPECT_TRUE(t.layers.count(layer)) << layer;
  }
  // Channels shrink by width_div: mixed_5b's output has (64+64+96+32)/8 channels.
  EXPECT_EQ(g.op(*g.find("mixed_5b/concat")).outputs[0].shape, (std::vector<int64_t>{2, 32, 7, 7}));
  check_training_shape(g);
  check_io(g);
}

void InceptionTrainingStepRunsOnCpu() {
  EXPECT_EQ(
      execute(build_graph("inception_v3", opts({{"batch", 2}, {"image", 75}, {"width_div", 8}, {"classes", 10}}))),
      284);
}

// ---- ResNet ----------------------------------------------------------------------------

constexpr double kTvResnet50ConvMacs = 4087136256.0;
constexpr double kTvResnet50BnElems = 11113984.0;
constexpr int64_t kTvResnet50Params = 25557032;
constexpr double kTvResnet101ConvMacs = 7799357440.0;
constexpr int64_t kTvResnet101Params = 44549160;

void ResnetMatchesTorchvision() {
  Graph g = build_graph("resnet", opts({{"batch", 1}}, true));
  Tally t = tally(g);
  EXPECT_EQ(t.by_type["aten::conv2d"], 53);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::conv2d"], 2 * kTvResnet50ConvMacs);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::linear"], 2 * 2048000.0);
  EXPECT_DOUBLE_EQ(t.flops_by_type["aten::batch_norm"], 4 * kTvResnet50BnElems);
  EXPECT_EQ(t.param_bytes, 4 * kTvResnet50Params);
  Graph g101 = build_graph("resnet", opts({{"batch", 1}, {"depth", 101}}, true));
  Tally t101 = tally(g101);
  EXPECT_EQ(t101.by_type["aten::conv2d"], 104);
  EXPECT_DOUBLE_EQ(t101.flops_by_type["aten::conv2d"], 2 * kTvResnet101ConvMacs);
  EXPECT_EQ(t101.param_bytes, 4 * kTvResnet101Params);
}

void ResnetCountsByHand() {
  Graph g = build_graph("resnet", opts({{"batch", 2}, {"image", 32}, {"width_div", 16}, {"classes", 10}}));
  Tally t = tally(g);
  // Stem conv-bn-relu (6) + maxpool; bottleneck: 3 convs (6, 6, 5 ops) + add +
  // relu = 19, plus a 5-op downsample in the first block of each stage.
  const int64_t blocks = 3 + 4 + 6 + 3;
  const int64_t fwd = 1 + 7 + 19 * blocks + 5 * 4 + 7;
  EXPECT_EQ(fwd, 339);
  const int64_t params = 3 * (1 + 3 * blocks + 4) + 2;
  EXPECT_EQ(params, 161);
  EXPECT_EQ(t.params, params);
  EXPECT_EQ(t.ops, fwd + (fwd - 2 - params) + params);
  EXPECT_EQ(t.by_type["aten::add.Tensor"], blocks);
  EXPECT_TRUE(t.layers.count("stage1_block0") && t.layers.count("stage4_block2") && t.layers.count("stem") &&
              t.layers.count("head"));
  EXPECT_EQ(g.op(*g.find("stage4_block2/relu")).outputs[0].shape, (std::vector<int64_t>{2, 128, 1, 1}));
  check_training_shape(g);
  check_io(g);
}

void ResnetTrainingStepRunsOnCpu() {
  EXPECT_EQ(execute(build_graph("resnet", opts({{"batch", 2}, {"image", 32}, {"width_div", 16}, {"classes", 10}}))),
            161);
}

// ---- Defaults, options, errors ------------------------------------------------------------

void DefaultSizesBuildFastWithExpectedCounts() {
  // Hand-computed training-graph op counts at the default sizes.
  const std::map<std::string, int64_t> expected{
      {"rnnlm", 538 + 524 + 7},   // 10+4L+12LT+2T forward, L=2 T=20
      {"nmt", 2350 + 2328 + 14},  // 18+6L+24LS+10S forward, L=2 S=40
      {"inception_v3", 600 + 314 + 284}, {"transformer", 670 + 469 + 198},
      {"resnet", 339 + 176 + 161},       {"mlp", 14 + 6 + 6},
  };
  for (const std::string& name : builder_names()) {
    auto start = std::chrono::steady_clock::now();
    Graph g = build_graph(name, BuilderOptions{});
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 1.0) << name;
    EXPECT_EQ(g.size(), expected.at(name)) << name;
    Tally t = tally(g);
    std::printf("%-13s ops %5ld (fwd %4ld, bwd %4ld, sgd %3ld)  flops %.4g  params %.4g MB  built in %.3f s\n",
                name.c_str(), static_cast<long>(t.ops), static_cast<long>(t.ops - t.backward - t.sgd),
                static_cast<long>(t.backward), static_cast<long>(t.sgd), t.flops, t.param_bytes / 1e6, seconds);
    EXPECT_NO_THROW(validate_graph(g)) << name;
    EXPECT_EQ(g.attrs.at("builder"), name);
  }
  EXPECT_EQ(builder_names().size(), 6u);
}

void DefaultsArePublishedSizes() {
  EXPECT_EQ(builder_defaults("nmt").at("batch"), 64);
  EXPECT_EQ(builder_defaults("inception_v3").at("batch"), 32);
  EXPECT_EQ(builder_defaults("inception_v3").at("image"), 299);
  EXPECT_EQ(builder_defaults("resnet").at("depth"), 50);
  EXPECT_EQ(builder_defaults("rnnlm").at("hidden"), 2048);
}

void ForwardOnlyHasNoTrainingOps() {
  Graph g = build_graph("mlp", opts({}, true));
  EXPECT_FALSE(g.is_training());
  EXPECT_EQ(g.size(), 14);
}

void BadOptionsAreInputErrors() {
  auto message = [](const std::string& name, const BuilderOptions& o) -> std::string {
    try {
      build_graph(name, o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("nope", {}).find("unknown builder 'nope'"), std::string::npos);
  EXPECT_NE(message("nmt", opts({{"hiden", 3}})).find("unknown option 'hiden'"), std::string::npos);
  EXPECT_NE(message("nmt", opts({{"batch", 0}})).find("'batch'"), std::string::npos);
  EXPECT_NE(message("rnnlm", opts({{"steps", -1}})).find("'steps'"), std::string::npos);
  EXPECT_NE(message("resnet", opts({{"depth", 77}})).find("'depth'"), std::string::npos);
  EXPECT_NE(message("inception_v3", opts({{"image", 74}})).find("'image'"), std::string::npos);
  EXPECT_NE(message("transformer", opts({{"d_model", 10}, {"heads", 3}})).find("divisible"), std::string::npos);
  EXPECT_THROW(builder_defaults("nope"), InputError);
  // Each option is in range, but the logits would be 64 Ki x 64 Ki x 1 M floats.
  EXPECT_NE(message("transformer", opts({{"batch", 65536}, {"seq", 65536}, {"vocab", 1000000}}, true))
                .find("would produce a tensor"),
            std::string::npos);
}

// The forward op count build_graph checks before building is the one it builds.
void OpCountsMatchTheBuiltGraphs() {
  const std::map<std::string, int64_t> rnn{{"hidden", 8}, {"batch", 2}, {"vocab", 10}};
  const std::map<std::string, int64_t> attn{{"d_model", 16}, {"heads", 2}, {"ffn", 8},
                                            {"seq", 4},      {"batch", 2}, {"vocab", 10}};
  const std::map<std::string, int64_t> cnn{{"batch", 1}, {"width_div", 16}, {"classes", 10}};
  auto with = [](std::map<std::string, int64_t> base, const std::map<std::string, int64_t>& more) {
    for (const auto& [k, v] : more) base[k] = v;
    return base;
  };
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> cases{
      {"rnnlm", with(rnn, {{"layers", 1}, {"steps", 1}})},
      {"rnnlm", with(rnn, {{"layers", 3}, {"steps", 5}})},
      {"nmt", with(rnn, {{"layers", 1}, {"steps", 1}})},
      {"nmt", with(rnn, {{"layers", 3}, {"steps", 5}})},
      {"transformer", with(attn, {{"layers", 1}, {"dec_layers", 0}})},
      {"transformer", with(attn, {{"layers", 2}, {"dec_layers", 3}})},
      {"mlp", {{"layers", 1}}},
      {"mlp", {{"layers", 5}}},
      {"inception_v3", with(cnn, {{"image", 75}})},
      {"resnet", with(cnn, {{"image", 32}, {"depth", 50}})},
      {"resnet", with(cnn, {{"image", 32}, {"depth", 101}})},
      {"resnet", with(cnn, {{"image", 32}, {"depth", 152}})}};
  for (const auto& [name, values] : cases)
    EXPECT_EQ(detail::count_forward_ops(name, values).forward_ops, build_graph(name, opts(values, true)).size())
        << name;
}

// Each option in range still made a 3.1-million-op nmt (33 s and 6.1 GB to build; pipelining it ran out of
// memory): over kMaxBuilderForwardOps forward ops is refused from the options, before anything is built.
void OversizedGraphsAreRefusedBeforeBuilding() {
  auto message = [](const std::string& name, std::map<std::string, int64_t> values) -> std::string {
    values.insert({{"hidden", 8}, {"batch", 2}, {"vocab", 10}});
    try {
      build_graph(name, opts(values));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(message("nmt", {{"layers", 64}, {"steps", 1000}}),
            "builder nmt: layers=64 x steps=1000 make 1546402 forward ops (about twice that with the training "
            "step), over the limit of 500000; lower layers or steps");
  EXPECT_EQ(message("rnnlm", {{"layers", 64}, {"steps", 1000}}),
            "builder rnnlm: layers=64 x steps=1000 make 770266 forward ops (about twice that with the training "
            "step), over the limit of 500000; lower layers or steps");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Just under the limit: 980,232 ops with the training step, 1.9 GB and 13 s to build (counted, not built here).
  EXPECT_EQ(detail::count_forward_ops("nmt", {{"layers", 20}, {"steps", 1000}}).forward_ops, 490138);
  EXPECT_LE(490138, detail::kMaxBuilderForwardOps);
  // The largest graph of configs/ and bench/ (hierarchical_nmt_large_k80x4.yaml: 50,612 ops) is far below.
  EXPECT_EQ(detail::count_forward_ops("nmt", {{"layers", 8}, {"steps", 125}}).forward_ops, 25316);
}

// One test per builder (each test process loads LibTorch, so few large tests run faster).
TEST(Builders, Mlp) {
  {
    SCOPED_TRACE("MlpCountsAndFlopsByHand");
    MlpCountsAndFlopsByHand();
  }
  {
    SCOPED_TRACE("MlpTrainingStepRunsOnCpu");
    MlpTrainingStepRunsOnCpu();
  }
}

TEST(Builders, Rnnlm) {
  {
    SCOPED_TRACE("RnnlmCountsAndFlopsByHand");
    RnnlmCountsAndFlopsByHand();
  }
  {
    SCOPED_TRACE("RnnlmTrainingStepRunsOnCpu");
    RnnlmTrainingStepRunsOnCpu();
  }
}

TEST(Builders, Nmt) {
  {
    SCOPED_TRACE("NmtCountsAndFlopsByHand");
    NmtCountsAndFlopsByHand();
  }
  {
    SCOPED_TRACE("NmtTrainingStepRunsOnCpu");
    NmtTrainingStepRunsOnCpu();
  }
}

TEST(Builders, Transformer) {
  {
    SCOPED_TRACE("TransformerCountsAndFlopsByHand");
    TransformerCountsAndFlopsByHand();
  }
  {
    SCOPED_TRACE("TransformerTrainingStepRunsOnCpu");
    TransformerTrainingStepRunsOnCpu();
  }
}

// ATen's own answer: is the attention's reshape of [B,S,h*dh] (one of `chunks` chunks of the last dimension, or
// the whole tensor where chunks is 1) to [B*h,S,dh] across the transpose a view? And the merge of bmm's
// [B*h,S,dh] back to [B,S,h*dh]?
bool aten_flat_is_view(int64_t B, int64_t S, int64_t h, int64_t dh, int64_t chunks) {
  const at::Tensor x = at::randn({B, S, chunks * h * dh});
  const at::Tensor q = x.chunk(chunks, -1)[0];
  return q.reshape({B, S, h, dh}).transpose(1, 2).reshape({B * h, S, dh}).is_alias_of(x);
}
bool aten_merge_is_view(int64_t B, int64_t S, int64_t h, int64_t dh) {
  const at::Tensor ctx = at::bmm(at::randn({B * h, S, 1}), at::randn({B * h, 1, dh}));
  return ctx.reshape({B, h, S, dh}).transpose(1, 2).reshape({B, S, h * dh}).is_alias_of(ctx);
}

// A reshape that merges dimensions across a transpose is a copy in ATen, not a view: the attention's q/k/v
// `_flat` and `context_merge` (recorded as views, 1.125 GiB of the default transformer's activations went
// uncounted). They are views where ATen's strides allow: `_flat` with one sequence, one head, or one position
// where its input is not a chunk (a chunk of the qkv/kv projection is strided; cross-attention's q is whole),
// `context_merge` with one position, one head or heads of size 1. The reshapes before the transposes stay views.
TEST(Builders, TransformerReshapeViewsMatchATen) {
  struct Case {
    int64_t seq, batch, heads, d_model;
    bool chunk_flat, whole_flat, merge;  // ATen's answers, also checked against ATen below
  };
  const std::vector<Case> cases{{16, 2, 4, 64, false, false, false}, {1, 2, 4, 64, false, true, true},
                                {16, 2, 1, 64, true, true, true},    {16, 1, 4, 64, true, true, false},
                                {1, 1, 4, 64, true, true, true},     {16, 2, 64, 64, false, false, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "seq " << c.seq << " batch " << c.batch << " heads " << c.heads);
    const int64_t dh = c.d_model / c.heads;
    EXPECT_EQ(aten_flat_is_view(c.batch, c.seq, c.heads, dh, 3), c.chunk_flat);
    EXPECT_EQ(aten_flat_is_view(c.batch, c.seq, c.heads, dh, 2), c.chunk_flat);
    EXPECT_EQ(aten_flat_is_view(c.batch, c.seq, c.heads, dh, 1), c.whole_flat);
    EXPECT_EQ(aten_merge_is_view(c.batch, c.seq, c.heads, dh), c.merge);
    const Graph g = build_graph("transformer", opts({{"layers", 1},
                                                     {"dec_layers", 1},
                                                     {"d_model", c.d_model},
                                                     {"heads", c.heads},
                                                     {"ffn", 32},
                                                     {"seq", c.seq},
                                                     {"batch", c.batch},
                                                     {"vocab", 100}}));
    int checked = 0;
    for (const Op& op : g.ops()) {
      if (op.type != "aten::reshape" || op.name == "head/logits_flat") continue;
      ASSERT_EQ(op.view_of.size(), 1u) << op.name;
      const auto ends_with = [&](const std::string& tail) {
        return op.name.size() >= tail.size() && op.name.compare(op.name.size() - tail.size(), tail.size(), tail) == 0;
      };
      bool view = true;  // the reshapes before a transpose
      if (ends_with("_flat")) view = ends_with("cross_attn/q_flat") ? c.whole_flat : c.chunk_flat;
      if (ends_with("context_merge")) view = c.merge;
      EXPECT_EQ(op.view_of[0], view ? 0 : -1) << op.name;
      ++checked;
    }
    EXPECT_EQ(checked, 3 * 8);  // 3 attentions of 3 _heads, 3 _flat, context_heads, context_merge
  }
}

TEST(Builders, InceptionV3) {
  {
    SCOPED_TRACE("InceptionMatchesTorchvision");
    InceptionMatchesTorchvision();
  }
  {
    SCOPED_TRACE("InceptionCountsByHand");
    InceptionCountsByHand();
  }
  {
    SCOPED_TRACE("InceptionTrainingStepRunsOnCpu");
    InceptionTrainingStepRunsOnCpu();
  }
}

TEST(Builders, Resnet) {
  {
    SCOPED_TRACE("ResnetMatchesTorchvision");
    ResnetMatchesTorchvision();
  }
  {
    SCOPED_TRACE("ResnetCountsByHand");
    ResnetCountsByHand();
  }
  {
    SCOPED_TRACE("ResnetTrainingStepRunsOnCpu");
    ResnetTrainingStepRunsOnCpu();
  }
}

TEST(Builders, DefaultsOptionsAndErrors) {
  {
    SCOPED_TRACE("DefaultSizesBuildFastWithExpectedCounts");
    DefaultSizesBuildFastWithExpectedCounts();
  }
  {
    SCOPED_TRACE("DefaultsArePublishedSizes");
    DefaultsArePublishedSizes();
  }
  {
    SCOPED_TRACE("ForwardOnlyHasNoTrainingOps");
    ForwardOnlyHasNoTrainingOps();
  }
  {
    SCOPED_TRACE("BadOptionsAreInputErrors");
    BadOptionsAreInputErrors();
  }
  {
    SCOPED_TRACE("OpCountsMatchTheBuiltGraphs");
    OpCountsMatchTheBuiltGraphs();
  }
  {
    SCOPED_TRACE("OversizedGraphsAreRefusedBeforeBuilding");
    OversizedGraphsAreRefusedBeforeBuilding();
  }
}

}  // namespace
}  // namespace placer
