// FLOPs of one recorded call (estimate_flops, recorder.h): a table of rules
// keyed by op schema name, and a few rules for a family of names sharing a
// prefix (conv2d, conv_transpose3d, max_pool2d_with_indices, ...). A name no
// rule knows costs one op per output element.
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "recorder.h"

namespace placer::detail {

namespace {

// What a rule sees of one call.
struct FlopCall {
  const std::string& base;  // schema name without overload: "aten::conv2d"
  const std::vector<c10::IValue>& in;
  double out_numel = 0;  // all outputs
  double first_out = 0;  // the first output

  at::Tensor tensor(size_t i) const { return i < in.size() && in[i].isTensor() ? in[i].toTensor() : at::Tensor(); }
};

using FlopRule = double (*)(const FlopCall&);

double numel_of(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().defined() ? static_cast<double>(v.toTensor().numel()) : 0.0;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Views, copies of metadata and aliases: no arithmetic.
double no_flops(const FlopCall&) { return 0.0; }

// 2 x (one multiply-add per weight element per output position) + bias.
double convolution(const FlopCall& c) {
  const at::Tensor input = c.tensor(0), weight = c.tensor(1), bias = c.tensor(2);
  if (!input.defined() || !weight.defined() || weight.dim() < 1) return c.first_out;
  bool transposed = starts_with(c.base, "aten::conv_transpose");
  if ((c.base == "aten::_convolution" || c.base == "aten::convolution") && c.in.size() > 6 && c.in[6].isBool()) {
    transposed = c.in[6].toBool();
  }
  const double per_position = static_cast<double>(weight.numel()) / static_cast<double>(weight.size(0));
  const double positions = transposed ? static_cast<double>(input.numel()) : c.first_out;
  return 2.0 * positions * per_position + (bias.defined() ? c.first_out : 0.0);
}

double linear(const FlopCall& c) {
  const at::Tensor weight = c.tensor(1), bias = c.tensor(2);
  if (!weight.defined()) return c.first_out;
  const double k = static_cast<double>(weight.dim() == 2 ? weight.size(1) : weight.size(0));
  return 2.0 * c.first_out * k + (bias.defined() ? c.first_out : 0.0);
}

// matmul, mm, bmm, dot, mv: 2 x output elements x the contracted size.
double matrix_product(const FlopCall& c) {
  const at::Tensor a = c.tensor(0);
  if (!a.defined() || a.dim() == 0) return c.first_out;
  return 2.0 * std::max(1.0, c.first_out) * static_cast<double>(a.size(-1));
}

// q[..., L, E] k[..., S, E] v[..., S, Ev]: scores q k^T (2 L S E per
// batch-head), softmax (about 5 L S), and the weighted sum of v (2 L S Ev).
double attention(const FlopCall& c) {
  const at::Tensor q = c.tensor(0), k = c.tensor(1), v = c.tensor(2);
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() < 2 || k.dim() < 2 || v.dim() < 2) return c.first_out;
  const double e = static_cast<double>(q.size(-1)), l = static_cast<double>(q.size(-2));
  const double s = static_cast<double>(k.size(-2)), ev = static_cast<double>(v.size(-1));
  const double heads = static_cast<double>(q.numel()) / (l * e);
  return heads * l * s * (2.0 * e + 5.0 + 2.0 * ev);
}

// addmm, baddbmm, addmv: the product of inputs 1 and 2, plus the add.
double matrix_product_add(const FlopCall& c) {
  const at::Tensor a = c.tensor(1);
  if (!a.defined() || a.dim() == 0) return c.first_out;
  return 2.0 * c.first_out * static_cast<double>(a.size(-1)) + c.first_out;
}

// lstm, gru, rnn_tanh, rnn_relu: input, hx, params, has_biases, num_layers,
// dropout, train, bidirectional, batch_first.
double recurrent(const FlopCall& c) {
  const at::Tensor input = c.tensor(0);
  if (!input.defined() || c.in.size() < 8 || !c.in[2].isTensorList() || !c.in[3].isBool()) return c.first_out;
  const auto params = c.in[2].toTensorList();
  const bool has_biases = c.in[3].toBool();
  const size_t stride = has_biases ? 4 : 2;
  const double tokens = static_cast<double>(input.numel()) / static_cast<double>(input.size(-1));
  const int gates_per_hidden = c.base == "aten::lstm" ? 4 : c.base == "aten::gru" ? 3 : 1;
  const int elementwise_per_hidden = c.base == "aten::lstm" ? 9 : c.base == "aten::gru" ? 8 : 1;
  double flops = 0;
  for (size_t i = 0; i + 1 < params.size(); i += stride) {
    const at::Tensor w_ih = params[i], w_hh = params[i + 1];
    const double gates = static_cast<double>(w_ih.size(0));
    const double hidden = gates / gates_per_hidden;
    flops += tokens * (2.0 * static_cast<double>(w_ih.numel() + w_hh.numel()) + (has_biases ? 2.0 * gates : 0.0) +
                       elementwise_per_hidden * hidden);
  }
  return flops;
}

// max_pool*, avg_pool*: one op per window element per output element.
double pooling(const FlopCall& c) {
  if (c.in.size() > 1 && c.in[1].isIntList()) {
    double window = 1;
    for (int64_t k : c.in[1].toIntVector()) window *= static_cast<double>(k);
    return c.first_out * window;
  }
  return numel_of(c.in[0]);
}

// Reductions (and adaptive pooling) read every input element once.
double reduction(const FlopCall& c) { return c.in.empty() ? c.out_numel : std::max(c.out_numel, numel_of(c.in[0])); }

// The rules for whole schema names.
const std::unordered_map<std::string, FlopRule>& rules_by_name() {
  static const std::unordered_map<std::string, FlopRule> kRules = [] {
    std::unordered_map<std::string, FlopRule> rules;
    const auto add = [&](FlopRule rule, std::initializer_list<const char*> names) {
      for (const char* name : names) rules.emplace(name, rule);
    };
    add(no_flops,
        {"aten::view",         "aten::reshape",    "aten::_reshape_alias",   "aten::flatten",    "aten::unflatten",
         "aten::unsqueeze",    "aten::squeeze",    "aten::transpose",        "aten::t",          "aten::permute",
         "aten::expand",       "aten::expand_as",  "aten::select",           "aten::slice",      "aten::narrow",
         "aten::chunk",        "aten::split",      "aten::split_with_sizes", "aten::unbind",     "aten::detach",
         "aten::alias",        "aten::as_strided", "aten::view_as",          "aten::reshape_as", "aten::numpy_T",
         "aten::_unsafe_view", "aten::view_copy",  "aten::lift_fresh_copy"});
    add(convolution, {"aten::_convolution", "aten::convolution"});
    add(linear, {"aten::linear"});
    add(matrix_product, {"aten::matmul", "aten::mm", "aten::bmm", "aten::dot", "aten::mv"});
    add(matrix_product_add, {"aten::addmm", "aten::baddbmm", "aten::addmv"});
    add(recurrent, {"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"});
    add(reduction, {"aten::sum", "aten::mean", "aten::var", "aten::std", "aten::norm", "aten::amax", "aten::amin",
                    "aten::max", "aten::min", "aten::argmax", "aten::argmin", "aten::prod", "aten::logsumexp",
                    "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d",
                    "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d"});
    return rules;
  }();
  return kRules;
}

// The rules for families of names; no name of rules_by_name() starts with one of these prefixes.
const std::vector<std::pair<const char*, FlopRule>>& rules_by_prefix() {
  static const std::vector<std::pair<const char*, FlopRule>> kRules = {
      {"aten::conv1d", convolution},
      {"aten::conv2d", convolution},
      {"aten::conv3d", convolution},
      {"aten::conv_transpose", convolution},
      {"aten::scaled_dot_product_attention", attention},
      {"aten::_scaled_dot_product_", attention},
      {"aten::max_pool", pooling},
      {"aten::avg_pool", pooling},
  };
  return kRules;
}

}  // namespace

double estimate_flops(const std::string& base, const std::vector<c10::IValue>& in, const std::vector<at::Tensor>& out) {
  FlopCall call{base, in};
  for (const auto& t : out) call.out_numel += static_cast<double>(t.numel());
  call.first_out = out.empty() ? 0.0 : static_cast<double>(out[0].numel());
  if (auto it = rules_by_name().find(base); it != rules_by_name().end()) return it->second(call);
  for (const auto& [prefix, rule] : rules_by_prefix())
    if (starts_with(base, prefix)) return rule(call);
  return call.out_numel;  // elementwise and everything else: one op per output element
}

}  // namespace placer::detail
