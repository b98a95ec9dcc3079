// The op helpers and option tables every builder shares (builder_util.h).
#include <algorithm>
#include <utility>

#include "builder_util.h"
#include "placer/graphs/error.h"

namespace placer {
namespace detail {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t padding, const std::string& op_name) {
  int64_t out = (in + 2 * padding - kernel) / stride + 1;
  if (in + 2 * padding < kernel || out < 1) {
    throw InputError(detail::concat("op ", op_name, ": input size ", in, " is too small for a window of ", kernel,
                                    " (stride ", stride, ", padding ", padding, "); use a larger image"));
  }
  return out;
}

namespace {

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const std::string& name) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    PLACER_CHECK(da == db || da == 1 || db == 1, "op ", name, ": shapes do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, size_t rank) { return dim < 0 ? dim + static_cast<int64_t>(rank) : dim; }

}  // namespace

const TensorSpec& OpBuilder::spec(TensorRef t) const { return g_.op(t.op).outputs.at(t.output); }

std::vector<TensorRef> OpBuilder::add(std::string name, std::string type, std::vector<TensorRef> inputs,
                                      std::vector<Arg> args, std::vector<TensorSpec> outputs, double flops) {
  Op op;
  op.name = std::move(name);
  op.type = std::move(type);
  op.inputs = std::move(inputs);
  op.args = std::move(args);
  op.outputs = std::move(outputs);
  op.flops = flops;
  op.layer = layer;
  op.view_of.assign(op.outputs.size(), -1);  // alias facts: views_of_input0() marks the views
  size_t n = op.outputs.size();
  OpId id = g_.add_op(std::move(op));
  std::vector<TensorRef> refs;
  for (size_t k = 0; k < n; ++k) refs.push_back(TensorRef{id, static_cast<int32_t>(k)});
  return refs;
}

std::vector<TensorRef> OpBuilder::views_of_input0(std::vector<TensorRef> outputs) {
  for (const TensorRef& r : outputs) g_.mutable_op(r.op).view_of.at(r.output) = 0;
  return outputs;
}

TensorRef OpBuilder::add1(std::string name, std::string type, std::vector<TensorRef> inputs, std::vector<Arg> args,
                          TensorSpec output, double flops) {
  return add(std::move(name), std::move(type), std::move(inputs), std::move(args), {std::move(output)}, flops)[0];
}

TensorRef OpBuilder::input(std::string name, std::vector<int64_t> shape, DType dtype, int64_t high) {
  std::vector<Arg> args;
  if (high > 0) args.push_back(Arg::integer(high));
  return add1(std::move(name), op_types::kInput, {}, std::move(args), TensorSpec{std::move(shape), dtype}, 0.0);
}

TensorRef OpBuilder::param(std::string name, std::vector<int64_t> shape) {
  TensorRef t = add1(std::move(name), op_types::kParam, {}, {}, TensorSpec{std::move(shape), DType::Float32}, 0.0);
  Op& op = g_.mutable_op(t.op);
  op.param_bytes = op.outputs[0].bytes();
  return t;
}

TensorRef OpBuilder::addmm(std::string name, TensorRef bias, TensorRef x, TensorRef w) {
  const auto& xs = shape(x);
  const auto& ws = shape(w);
  PLACER_CHECK(xs.size() == 2 && ws.size() == 2 && xs[1] == ws[0], "addmm ", name);
  double flops = 2.0 * xs[0] * ws[1] * xs[1];
  return add1(std::move(name), "aten::addmm", {bias, x, w},
              {Arg::tensor(0), Arg::tensor(1), Arg::tensor(2), Arg::integer(1), Arg::integer(1)},
              TensorSpec{{xs[0], ws[1]}, DType::Float32}, flops);
}

TensorRef OpBuilder::mm(std::string name, TensorRef a, TensorRef b) {
  const auto& as = shape(a);
  const auto& bs = shape(b);
  PLACER_CHECK(as.size() == 2 && bs.size() == 2 && as[1] == bs[0], "mm ", name);
  double flops = 2.0 * as[0] * bs[1] * as[1];
  return add1(std::move(name), "aten::mm", {a, b}, {Arg::tensor(0), Arg::tensor(1)},
              TensorSpec{{as[0], bs[1]}, DType::Float32}, flops);
}

TensorRef OpBuilder::linear(std::string name, TensorRef x, TensorRef w, const TensorRef* bias) {
  std::vector<int64_t> out = shape(x);
  const auto& ws = shape(w);
  PLACER_CHECK(!out.empty() && ws.size() == 2 && out.back() == ws[1], "linear ", name);
  int64_t k = out.back();
  out.back() = ws[0];
  double flops = 2.0 * numel_of(out) * k;
  std::vector<TensorRef> inputs{x, w};
  std::vector<Arg> args{Arg::tensor(0), Arg::tensor(1), Arg::none()};
  if (bias) {
    inputs.push_back(*bias);
    args[2] = Arg::tensor(2);
  }
  return add1(std::move(name), "aten::linear", std::move(inputs), std::move(args),
              TensorSpec{std::move(out), DType::Float32}, flops);
}

TensorRef OpBuilder::bmm(std::string name, TensorRef a, TensorRef b) {
  const auto& as = shape(a);
  const auto& bs = shape(b);
  PLACER_CHECK(as.size() == 3 && bs.size() == 3 && as[0] == bs[0] && as[2] == bs[1], "bmm ", name);
  double flops = 2.0 * as[0] * as[1] * bs[2] * as[2];
  return add1(std::move(name), "aten::bmm", {a, b}, {Arg::tensor(0), Arg::tensor(1)},
              TensorSpec{{as[0], as[1], bs[2]}, DType::Float32}, flops);
}

TensorRef OpBuilder::add(std::string name, TensorRef a, TensorRef b) {
  auto out = broadcast_shapes(shape(a), shape(b), name);
  double flops = static_cast<double>(numel_of(out));
  return add1(std::move(name), "aten::add.Tensor", {a, b}, {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)},
              TensorSpec{std::move(out), DType::Float32}, flops);
}

TensorRef OpBuilder::mul(std::string name, TensorRef a, TensorRef b) {
  auto out = broadcast_shapes(shape(a), shape(b), name);
  double flops = static_cast<double>(numel_of(out));
  return add1(std::move(name), "aten::mul.Tensor", {a, b}, {Arg::tensor(0), Arg::tensor(1)},
              TensorSpec{std::move(out), DType::Float32}, flops);
}

TensorRef OpBuilder::mul_scalar(std::string name, TensorRef x, double s) {
  TensorSpec out = spec(x);
  double flops = static_cast<double>(out.numel());
  return add1(std::move(name), "aten::mul.Scalar", {x}, {Arg::tensor(0), Arg::real(s)}, std::move(out), flops);
}

TensorRef OpBuilder::unary(std::string name, const char* type, TensorRef x) {
  TensorSpec out = spec(x);
  double flops = static_cast<double>(out.numel());
  return add1(std::move(name), type, {x}, {Arg::tensor(0)}, std::move(out), flops);
}

TensorRef OpBuilder::gelu(std::string name, TensorRef x) {
  TensorSpec out = spec(x);
  double flops = static_cast<double>(out.numel());
  return add1(std::move(name), "aten::gelu", {x}, {Arg::tensor(0), Arg::string("none")}, std::move(out), flops);
}

std::vector<TensorRef> OpBuilder::chunk(std::string name, TensorRef x, int64_t chunks, int64_t dim) {
  TensorSpec piece = spec(x);
  int64_t d = wrap_dim(dim, piece.shape.size());
  PLACER_CHECK(d >= 0 && d < static_cast<int64_t>(piece.shape.size()) && piece.shape[d] % chunks == 0, "chunk ", name);
  piece.shape[d] /= chunks;
  return views_of_input0(add(std::move(name), "aten::chunk", {x},
                             {Arg::tensor(0), Arg::integer(chunks), Arg::integer(dim)},
                             std::vector<TensorSpec>(chunks, piece), 0.0));
}

std::vector<TensorRef> OpBuilder::unbind(std::string name, TensorRef x, int64_t dim) {
  TensorSpec piece = spec(x);
  int64_t d = wrap_dim(dim, piece.shape.size());
  PLACER_CHECK(d >= 0 && d < static_cast<int64_t>(piece.shape.size()), "unbind ", name);
  int64_t n = piece.shape[d];
  piece.shape.erase(piece.shape.begin() + d);
  return views_of_input0(add(std::move(name), "aten::unbind.int", {x}, {Arg::tensor(0), Arg::integer(dim)},
                             std::vector<TensorSpec>(n, piece), 0.0));
}

TensorRef OpBuilder::cat(std::string name, const std::vector<TensorRef>& xs, int64_t dim) {
  PLACER_CHECK(!xs.empty(), "cat ", name);
  TensorSpec out = spec(xs[0]);
  int64_t d = wrap_dim(dim, out.shape.size());
  out.shape[d] = 0;
  std::vector<int64_t> idx;
  for (size_t k = 0; k < xs.size(); ++k) {
    const auto& s = shape(xs[k]);
    PLACER_CHECK(s.size() == out.shape.size(), "cat ", name);
    out.shape[d] += s[d];
    idx.push_back(static_cast<int64_t>(k));
  }
  return add1(std::move(name), "aten::cat", xs, {Arg::tensor_list(std::move(idx)), Arg::integer(dim)}, std::move(out),
              0.0);
}

TensorRef OpBuilder::stack(std::string name, const std::vector<TensorRef>& xs, int64_t dim) {
  PLACER_CHECK(!xs.empty(), "stack ", name);
  TensorSpec out = spec(xs[0]);
  int64_t d = dim < 0 ? dim + static_cast<int64_t>(out.shape.size()) + 1 : dim;
  out.shape.insert(out.shape.begin() + d, static_cast<int64_t>(xs.size()));
  std::vector<int64_t> idx;
  for (size_t k = 0; k < xs.size(); ++k) idx.push_back(static_cast<int64_t>(k));
  return add1(std::move(name), "aten::stack", xs, {Arg::tensor_list(std::move(idx)), Arg::integer(dim)}, std::move(out),
              0.0);
}

TensorRef OpBuilder::embedding(std::string name, TensorRef weight, TensorRef ids) {
  std::vector<int64_t> out = shape(ids);
  out.push_back(shape(weight).at(1));
  return add1(std::move(name), "aten::embedding", {weight, ids},
              {Arg::tensor(0), Arg::tensor(1), Arg::integer(-1), Arg::boolean(false), Arg::boolean(false)},
              TensorSpec{std::move(out), DType::Float32}, 0.0);
}

TensorRef OpBuilder::conv2d(std::string name, TensorRef x, TensorRef w, std::vector<int64_t> stride,
                            std::vector<int64_t> padding) {
  const auto& xs = shape(x);
  const auto& ws = shape(w);
  PLACER_CHECK(xs.size() == 4 && ws.size() == 4 && xs[1] == ws[1], "conv2d ", name);
  int64_t ho = window_out(xs[2], ws[2], stride[0], padding[0], name);
  int64_t wo = window_out(xs[3], ws[3], stride[1], padding[1], name);
  double flops = 2.0 * xs[0] * ws[0] * ho * wo * ws[1] * ws[2] * ws[3];
  return add1(std::move(name), "aten::conv2d", {x, w},
              {Arg::tensor(0), Arg::tensor(1), Arg::none(), Arg::int_list(std::move(stride)),
               Arg::int_list(std::move(padding)), Arg::int_list({1, 1}), Arg::integer(1)},
              TensorSpec{{xs[0], ws[0], ho, wo}, DType::Float32}, flops);
}

TensorRef OpBuilder::batch_norm(std::string name, TensorRef x, TensorRef gamma, TensorRef beta, double eps) {
  TensorSpec out = spec(x);
  double flops = kNormFlopsPerElem * out.numel();
  // Training mode with batch statistics and no running buffers: the step is
  // the same computation, and the graph stays free of non-parameter state.
  return add1(std::move(name), "aten::batch_norm", {x, gamma, beta},
              {Arg::tensor(0), Arg::tensor(1), Arg::tensor(2), Arg::none(), Arg::none(), Arg::boolean(true),
               Arg::real(0.1), Arg::real(eps), Arg::boolean(true)},
              std::move(out), flops);
}

TensorRef OpBuilder::max_pool2d(std::string name, TensorRef x, int64_t kernel, int64_t stride, int64_t padding) {
  const auto& xs = shape(x);
  PLACER_CHECK(xs.size() == 4, "max_pool2d ", name);
  int64_t ho = window_out(xs[2], kernel, stride, padding, name);
  int64_t wo = window_out(xs[3], kernel, stride, padding, name);
  TensorSpec out{{xs[0], xs[1], ho, wo}, DType::Float32};
  double flops = static_cast<double>(out.numel()) * kernel * kernel;
  return add1(std::move(name), "aten::max_pool2d", {x},
              {Arg::tensor(0), Arg::int_list({kernel, kernel}), Arg::int_list({stride, stride}),
               Arg::int_list({padding, padding}), Arg::int_list({1, 1}), Arg::boolean(false)},
              std::move(out), flops);
}

TensorRef OpBuilder::avg_pool2d(std::string name, TensorRef x, int64_t kernel, int64_t stride, int64_t padding) {
  const auto& xs = shape(x);
  PLACER_CHECK(xs.size() == 4, "avg_pool2d ", name);
  int64_t ho = window_out(xs[2], kernel, stride, padding, name);
  int64_t wo = window_out(xs[3], kernel, stride, padding, name);
  TensorSpec out{{xs[0], xs[1], ho, wo}, DType::Float32};
  double flops = static_cast<double>(out.numel()) * kernel * kernel;
  return add1(std::move(name), "aten::avg_pool2d", {x},
              {Arg::tensor(0), Arg::int_list({kernel, kernel}), Arg::int_list({stride, stride}),
               Arg::int_list({padding, padding}), Arg::boolean(false), Arg::boolean(true), Arg::none()},
              std::move(out), flops);
}

TensorRef OpBuilder::adaptive_avg_pool2d(std::string name, TensorRef x, int64_t out_h, int64_t out_w) {
  const TensorSpec& in = spec(x);
  PLACER_CHECK(in.shape.size() == 4, "adaptive_avg_pool2d ", name);
  double flops = static_cast<double>(in.numel());
  return add1(std::move(name), "aten::adaptive_avg_pool2d", {x}, {Arg::tensor(0), Arg::int_list({out_h, out_w})},
              TensorSpec{{in.shape[0], in.shape[1], out_h, out_w}, DType::Float32}, flops);
}

TensorRef OpBuilder::flatten(std::string name, TensorRef x, int64_t start_dim, int64_t end_dim) {
  const auto& in = shape(x);
  int64_t s = wrap_dim(start_dim, in.size());
  int64_t e = wrap_dim(end_dim, in.size());
  std::vector<int64_t> out(in.begin(), in.begin() + s);
  int64_t merged = 1;
  for (int64_t k = s; k <= e; ++k) merged *= in[k];
  out.push_back(merged);
  out.insert(out.end(), in.begin() + e + 1, in.end());
  return views_of_input0(add(std::move(name), "aten::flatten.using_ints", {x},
                             {Arg::tensor(0), Arg::integer(start_dim), Arg::integer(end_dim)},
                             {TensorSpec{std::move(out), spec(x).dtype}}, 0.0))[0];
}

TensorRef OpBuilder::softmax(std::string name, TensorRef x, int64_t dim) {
  TensorSpec out = spec(x);
  double flops = kSoftmaxFlopsPerElem * out.numel();
  return add1(std::move(name), "aten::softmax.int", {x}, {Arg::tensor(0), Arg::integer(dim), Arg::none()},
              std::move(out), flops);
}

TensorRef OpBuilder::transpose(std::string name, TensorRef x, int64_t dim0, int64_t dim1) {
  TensorSpec out = spec(x);
  std::swap(out.shape.at(wrap_dim(dim0, out.shape.size())), out.shape.at(wrap_dim(dim1, out.shape.size())));
  return views_of_input0(add(std::move(name), "aten::transpose.int", {x},
                             {Arg::tensor(0), Arg::integer(dim0), Arg::integer(dim1)}, {std::move(out)}, 0.0))[0];
}

TensorRef OpBuilder::reshape(std::string name, TensorRef x, std::vector<int64_t> new_shape, bool view) {
  TensorSpec out = spec(x);
  PLACER_CHECK(numel_of(new_shape) == out.numel(), "reshape ", name);
  out.shape = new_shape;
  std::vector<TensorRef> made =
      add(std::move(name), "aten::reshape", {x}, {Arg::tensor(0), Arg::int_list(std::move(new_shape))}, {std::move(out)},
          0.0);
  return view ? views_of_input0(std::move(made))[0] : made[0];  // a copy: its memory counted, its input free to go
}

TensorRef OpBuilder::unsqueeze(std::string name, TensorRef x, int64_t dim) {
  TensorSpec out = spec(x);
  int64_t d = dim < 0 ? dim + static_cast<int64_t>(out.shape.size()) + 1 : dim;
  out.shape.insert(out.shape.begin() + d, 1);
  return views_of_input0(
      add(std::move(name), "aten::unsqueeze", {x}, {Arg::tensor(0), Arg::integer(dim)}, {std::move(out)}, 0.0))[0];
}

TensorRef OpBuilder::layer_norm(std::string name, TensorRef x, TensorRef w, TensorRef b, double eps) {
  TensorSpec out = spec(x);
  double flops = kNormFlopsPerElem * out.numel();
  int64_t last = out.shape.back();
  return add1(
      std::move(name), "aten::layer_norm", {x, w, b},
      {Arg::tensor(0), Arg::int_list({last}), Arg::tensor(1), Arg::tensor(2), Arg::real(eps), Arg::boolean(true)},
      std::move(out), flops);
}

TensorRef OpBuilder::cross_entropy(std::string name, TensorRef logits, TensorRef target) {
  const TensorSpec& in = spec(logits);
  PLACER_CHECK(in.shape.size() == 2 && shape(target).size() == 1 && shape(target)[0] == in.shape[0], "cross_entropy ",
               name);
  double flops = kSoftmaxFlopsPerElem * in.numel();
  return add1(std::move(name), "aten::cross_entropy_loss", {logits, target},
              {Arg::tensor(0), Arg::tensor(1), Arg::none(), Arg::integer(1), Arg::integer(-100), Arg::real(0.0)},
              TensorSpec{{}, DType::Float32}, flops);
}

TensorRef OpBuilder::mean(std::string name, TensorRef x) {
  double flops = static_cast<double>(spec(x).numel());
  return add1(std::move(name), "aten::mean", {x}, {Arg::tensor(0), Arg::none()}, TensorSpec{{}, DType::Float32}, flops);
}

TensorRef OpBuilder::conv_bn_relu(const std::string& name, TensorRef x, int64_t out_channels, int64_t kh, int64_t kw,
                                  int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w, double eps,
                                  bool with_relu) {
  int64_t in_channels = shape(x).at(1);
  TensorRef w = param(name + "/weight", {out_channels, in_channels, kh, kw});
  TensorRef y = conv2d(name + "/conv", x, w, {stride_h, stride_w}, {pad_h, pad_w});
  TensorRef gamma = param(name + "/bn_weight", {out_channels});
  TensorRef beta = param(name + "/bn_bias", {out_channels});
  y = batch_norm(name + "/bn", y, gamma, beta, eps);
  return with_relu ? relu(name + "/relu", y) : y;
}

LstmState lstm_cell(OpBuilder& b, const std::string& prefix, TensorRef x, LstmState prev, TensorRef w, TensorRef bias) {
  TensorRef xh = b.cat(prefix + "/concat", {x, prev.h}, 1);
  TensorRef gates = b.addmm(prefix + "/gates", bias, xh, w);
  auto ifgo = b.chunk(prefix + "/split", gates, 4, 1);
  TensorRef i = b.sigmoid(prefix + "/input_gate", ifgo[0]);
  TensorRef f = b.sigmoid(prefix + "/forget_gate", ifgo[1]);
  TensorRef g = b.tanh(prefix + "/candidate", ifgo[2]);
  TensorRef o = b.sigmoid(prefix + "/output_gate", ifgo[3]);
  TensorRef keep = b.mul(prefix + "/keep", f, prev.c);
  TensorRef write = b.mul(prefix + "/write", i, g);
  TensorRef c = b.add(prefix + "/c", keep, write);
  TensorRef tc = b.tanh(prefix + "/tanh_c", c);
  TensorRef h = b.mul(prefix + "/h", o, tc);
  return LstmState{h, c};
}

Options::Options(const std::string& builder, const OptionTable& table, const std::map<std::string, int64_t>& given)
    : builder_(builder) {
  for (const auto& [key, value] : given) {
    if (!table.count(key)) {
      std::string known;
      for (const auto& [k, s] : table) known += (known.empty() ? "" : ", ") + k;
      throw InputError(detail::concat("builder ", builder, ": unknown option '", key, "' (options: ", known, ")"));
    }
  }
  for (const auto& [key, s] : table) {
    const auto it = given.find(key);
    const int64_t v = it == given.end() ? s.fallback : it->second;
    if (v < s.min || v > s.max) {
      throw InputError(detail::concat("builder ", builder, ": option '", key, "' = ", v, " is out of range [", s.min,
                                      ", ", s.max, "]"));
    }
    values_[key] = v;
  }
}

int64_t Options::operator[](const std::string& key) const {
  auto it = values_.find(key);
  PLACER_CHECK(it != values_.end(), "builder ", builder_, " reads undeclared option ", key);
  return it->second;
}

}  // namespace detail

}  // namespace placer
