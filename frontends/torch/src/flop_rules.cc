// FLOPs of one recorded call (estimate_flops, recorder.h): a table of rules
// keyed by op schema name, and a few rules for a family of names sharing a
// prefix (conv2d, conv_transpose3d, max_pool2d_with_indices, ...). A name no
// rule knows costs one op per output element.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

// addmm, baddbmm, addmv, _addmm_activation: the product of inputs 1 and 2, plus the add.
double matrix_product_add(const FlopCall& c) {
  const at::Tensor a = c.tensor(1);
  if (!a.defined() || a.dim() == 0) return c.first_out;
  return 2.0 * c.first_out * static_cast<double>(a.size(-1)) + c.first_out;
}

// addbmm: self + sum over b of batch1[b] (n x m) @ batch2[b] (m x p): 2 b n m p,
// plus the add.
double batch_product_sum_add(const FlopCall& c) {
  const at::Tensor b1 = c.tensor(1), b2 = c.tensor(2);
  if (!b1.defined() || !b2.defined() || b1.dim() != 3 || b2.dim() != 3) return c.first_out;
  return 2.0 * static_cast<double>(b1.numel()) * static_cast<double>(b2.size(2)) + c.first_out;
}

// addr: self + vec1 (n) outer vec2 (m): one product and one sum per output element.
double outer_product_add(const FlopCall& c) { return 2.0 * c.first_out; }

// bilinear: x1 [*, in1], x2 [*, in2], weight [out, in1, in2], bias: per output
// element x1 W_k (in1 in2 multiply-adds), then its dot with x2 (in2).
double bilinear(const FlopCall& c) {
  const at::Tensor weight = c.tensor(2), bias = c.tensor(3);
  if (!weight.defined() || weight.dim() != 3) return c.first_out;
  const double in1 = static_cast<double>(weight.size(1)), in2 = static_cast<double>(weight.size(2));
  return 2.0 * c.first_out * (in1 * in2 + in2) + (bias.defined() ? c.first_out : 0.0);
}

// tensordot(a, b, dims_a, dims_b): 2 x output elements x the contracted sizes.
double tensordot(const FlopCall& c) {
  const at::Tensor a = c.tensor(0);
  if (!a.defined() || c.in.size() < 3 || !c.in[2].isIntList()) return c.first_out;
  double contracted = 1;
  for (int64_t d : c.in[2].toIntVector()) {
    if (d < -a.dim() || d >= a.dim()) return c.first_out;
    contracted *= static_cast<double>(a.size(d));
  }
  return 2.0 * std::max(1.0, c.first_out) * contracted;
}

// einsum's equation: a term per operand ("bij", "...ij", "b i j"), then "->" and the
// output's term, or none (implicit output: the letters seen once, in order, after the
// ellipsis). Labels: a letter as its character code, the dimensions an ellipsis
// covers as -1, -2, ... counted from the right (so they broadcast aligned right).
struct EinsumTerm {
  std::vector<int> before, after;  // letters before and after the ellipsis
  bool ellipsis = false;
};

std::optional<EinsumTerm> parse_einsum_term(const std::string& text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size();) {
    const char ch = text[i];
    if (ch == ' ') {
      ++i;
    } else if (ch == '.') {
      if (term.ellipsis || text.compare(i, 3, "...") != 0) return std::nullopt;
      term.ellipsis = true;
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(ch))) {
      (term.ellipsis ? term.after : term.before).push_back(ch);
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return term;
}

std::vector<int> einsum_labels(const EinsumTerm& term, int64_t ellipsis_dims) {
  std::vector<int> labels(term.before);
  for (int64_t j = ellipsis_dims; j >= 1; --j) labels.push_back(-static_cast<int>(j));
  labels.insert(labels.end(), term.after.begin(), term.after.end());
  return labels;
}

struct EinsumLabels {
  std::vector<std::vector<int>> operands;
  std::map<int, double> size;  // the largest size seen (size 1 broadcasts)
  int64_t ellipsis_dims = 0;
  std::map<int, int> count;  // how many times each letter appears on the left
};

// The labels of every operand and their sizes, or nullopt where the terms do not fit the operands.
std::optional<EinsumLabels> einsum_operand_labels(const std::string& lhs, const std::vector<at::Tensor>& operands) {
  EinsumLabels out;
  size_t start = 0;
  for (const at::Tensor& t : operands) {
    if (start > lhs.size() || !t.defined()) return std::nullopt;
    const size_t comma = std::min(lhs.find(',', start), lhs.size());
    const std::optional<EinsumTerm> term = parse_einsum_term(lhs.substr(start, comma - start));
    start = comma + 1;
    if (!term) return std::nullopt;
    const int64_t letters = static_cast<int64_t>(term->before.size() + term->after.size());
    if (term->ellipsis ? letters > t.dim() : letters != t.dim()) return std::nullopt;
    const int64_t ellipsis_dims = t.dim() - letters;
    out.ellipsis_dims = std::max(out.ellipsis_dims, ellipsis_dims);
    out.operands.push_back(einsum_labels(*term, ellipsis_dims));
    for (int64_t d = 0; d < t.dim(); ++d) {
      const int label = out.operands.back()[static_cast<size_t>(d)];
      out.size[label] = std::max(out.size[label], static_cast<double>(t.size(d)));
      if (label > 0) ++out.count[label];
    }
  }
  if (start <= lhs.size() || operands.empty()) return std::nullopt;  // more terms than operands
  return out;
}

// The output's labels: the explicit term after "->", else the letters seen once and the ellipsis.
std::optional<std::set<int>> einsum_output(const std::string& equation, size_t arrow, const EinsumLabels& in) {
  std::set<int> out;
  for (int64_t j = 1; j <= in.ellipsis_dims; ++j) out.insert(-static_cast<int>(j));
  if (arrow == std::string::npos) {
    for (const auto& [label, n] : in.count)
      if (n == 1) out.insert(label);
    return out;
  }
  const std::optional<EinsumTerm> term = parse_einsum_term(equation.substr(arrow + 2));
  if (!term) return std::nullopt;
  if (!term->ellipsis) out.clear();
  for (const std::vector<int>* letters : {&term->before, &term->after})
    for (int label : *letters) {
      if (!in.count.count(label)) return std::nullopt;
      out.insert(label);
    }
  return out;
}

// FLOPs of an einsum contracted left to right, as torch does without opt_einsum:
// each step multiplies the running result by the next operand over the union of
// their labels and sums out the labels nothing later needs, 2 FLOPs per point of
// that union (one multiply-add; 1 where nothing is summed, as an elementwise product).
// A single operand costs one add per element where it sums, else nothing (a
// transpose or diagonal). nullopt: an equation this cannot read.
std::optional<double> einsum_flops(const std::string& equation, const std::vector<at::Tensor>& operands) {
  const size_t arrow = equation.find("->");
  const std::optional<EinsumLabels> in = einsum_operand_labels(equation.substr(0, arrow), operands);
  if (!in) return std::nullopt;
  const std::optional<std::set<int>> out = einsum_output(equation, arrow, *in);
  if (!out) return std::nullopt;
  const auto points = [&](const std::set<int>& labels) {
    double n = 1;
    for (int label : labels) n *= in->size.at(label);
    return n;
  };
  std::set<int> running(in->operands[0].begin(), in->operands[0].end());
  const auto sums = [&](const std::set<int>& labels) {
    return std::any_of(labels.begin(), labels.end(), [&](int l) { return !out->count(l); });
  };
  if (in->operands.size() == 1) return sums(running) ? points(running) : 0.0;
  double flops = 0;
  for (size_t k = 1; k < in->operands.size(); ++k) {
    std::set<int> joined = running, needed = *out;
    joined.insert(in->operands[k].begin(), in->operands[k].end());
    for (size_t later = k + 1; later < in->operands.size(); ++later)
      needed.insert(in->operands[later].begin(), in->operands[later].end());
    running.clear();
    for (int label : joined)
      if (needed.count(label)) running.insert(label);
    flops += points(joined) * (running.size() < joined.size() ? 2.0 : 1.0);
  }
  return flops;
}

// einsum(equation, tensors): einsum_flops; an equation it cannot read costs one op per output element.
double einsum(const FlopCall& c) {
  if (c.in.size() < 2 || !c.in[0].isString() || !c.in[1].isList()) return c.first_out;
  std::vector<at::Tensor> operands;
  for (const c10::IValue& v : c.in[1].toListRef()) operands.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
  try {
    const std::optional<double> flops = einsum_flops(c.in[0].toStringRef(), operands);
    return flops ? *flops : c.first_out;
  } catch (const std::exception&) {
    return c.first_out;
  }
}

// One step of a recurrent cell for one row (lstm, gru, rnn_tanh, rnn_relu and
// their *_cell forms): the input and hidden matmuls (and an LSTM's projection
// w_hr), the two biases, and the gates' pointwise work per hidden unit (LSTM:
// 3 sigmoids, 2 tanh, 3 products, 1 sum; GRU: 2 sigmoids, 1 tanh, 3 products,
// 2 sums).
double cell_step(const std::string& base, const at::Tensor& w_ih, const at::Tensor& w_hh, const at::Tensor& w_hr,
                 bool has_biases) {
  if (!w_ih.defined() || !w_hh.defined() || w_ih.dim() < 1) return 0.0;
  const bool lstm = starts_with(base, "aten::lstm"), gru = starts_with(base, "aten::gru");
  const double gates = static_cast<double>(w_ih.size(0));
  const double hidden = gates / (lstm ? 4 : gru ? 3 : 1);
  const double pointwise = lstm ? 9 : gru ? 8 : 1;
  const double weights = static_cast<double>(w_ih.numel() + w_hh.numel() + (w_hr.defined() ? w_hr.numel() : 0));
  return 2.0 * weights + (has_biases ? 2.0 * gates : 0.0) + pointwise * hidden;
}

// Rows of a call's input: every position but the feature dimension.
double rows_of(const at::Tensor& input) {
  if (!input.defined() || input.dim() == 0 || input.size(-1) == 0) return 0.0;
  return static_cast<double>(input.numel()) / static_cast<double>(input.size(-1));
}

// lstm, gru, rnn_tanh, rnn_relu: (input, hx, params, has_biases, num_layers, dropout,
// train, bidirectional, batch_first), or the packed form (data, batch_sizes, hx, params,
// has_biases, ...). params: per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr]
// (nn.LSTM's flat weights; w_hr where proj_size > 0, seen as h0 narrower than c0).
double recurrent(const FlopCall& c) {
  const size_t hx_at = c.in.size() > 3 && c.in[2].isTensorList() && c.in[3].isBool()   ? 1
                       : c.in.size() > 4 && c.in[3].isTensorList() && c.in[4].isBool() ? 2
                                                                                       : 0;
  if (hx_at == 0 || !c.tensor(0).defined()) return c.first_out;
  const auto params = c.in[hx_at + 1].toTensorList();
  const bool has_biases = c.in[hx_at + 2].toBool();
  bool projected = false;
  if (c.base == "aten::lstm" && c.in[hx_at].isTensorList() && c.in[hx_at].toTensorList().size() == 2) {
    const at::Tensor h0 = c.in[hx_at].toTensorList()[0], c0 = c.in[hx_at].toTensorList()[1];
    projected = h0.defined() && c0.defined() && h0.dim() > 0 && c0.dim() > 0 && h0.size(-1) != c0.size(-1);
  }
  const size_t stride = (has_biases ? 4 : 2) + (projected ? 1 : 0);
  const double tokens = rows_of(c.tensor(0));
  double flops = 0;
  for (size_t i = 0; i + stride <= params.size(); i += stride) {
    const at::Tensor w_hr = projected ? at::Tensor(params[i + stride - 1]) : at::Tensor();
    flops += tokens * cell_step(c.base, params[i], params[i + 1], w_hr, has_biases);
  }
  return flops;
}

// lstm_cell (input, hx[2], w_ih, w_hh, b_ih?, b_hh?), gru_cell, rnn_tanh_cell,
// rnn_relu_cell (input, hx, w_ih, w_hh, b_ih?, b_hh?): one step of recurrent().
double recurrent_cell(const FlopCall& c) {
  const at::Tensor input = c.tensor(0), w_ih = c.tensor(2), w_hh = c.tensor(3);
  if (!input.defined() || !w_ih.defined() || !w_hh.defined()) return c.first_out;
  const bool has_biases = c.tensor(4).defined() || c.tensor(5).defined();
  return rows_of(input) * cell_step(c.base, w_ih, w_hh, at::Tensor(), has_biases);
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
    add(matrix_product_add, {"aten::addmm", "aten::baddbmm", "aten::addmv", "aten::_addmm_activation"});
    add(batch_product_sum_add, {"aten::addbmm"});
    add(outer_product_add, {"aten::addr"});
    add(bilinear, {"aten::bilinear"});
    add(tensordot, {"aten::tensordot"});
    add(einsum, {"aten::einsum"});
    add(recurrent, {"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"});
    add(recurrent_cell, {"aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell"});
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
