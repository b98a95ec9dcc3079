// validate_graph: every check a graph from outside must pass before anything
// else reads it. Errors name the op and the field ("op 'fc1': outputs[0].shape[1]:
// negative size -4"). Sizes are checked before they are multiplied, so no
// overflow and no call into dtype tables with a value that is not a dtype.
#include "placer/graphs/validate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"

namespace placer {

namespace {

constexpr double kMaxFlops = 1e21;                    // a zettaFLOP for one op is absurd
constexpr int64_t kMaxParamBytes = int64_t{1} << 50;  // 1 PiB (groups sum their members)
constexpr size_t kMaxEdgesPerOp = 1 << 20;

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

bool valid_dtype(DType t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(DType::Bool); }

// Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF). Names are echoed in errors,
// JSON files and service replies: a binary graph named "m\xffp" loaded, and the JSON file written
// from it was refused by the JSON reader.
bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int more = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    }
    if (b >= 0xC2 && b <= 0xDF) {
      more = 1, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      more = 2, cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      more = 3, cp = b & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(more) >= s.size()) return false;  // cut short
    for (int k = 1; k <= more; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if ((more == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += static_cast<size_t>(more) + 1;
  }
  return true;
}

// What is wrong with a text field, or nullptr: not UTF-8, or a U+0000, which the writers cannot keep (they
// cut an attr key at it, so a written file was refused when read back).
const char* text_problem(std::string_view s) {
  if (!is_utf8(s)) return "not UTF-8 text";
  if (s.find('\0') != std::string_view::npos) return "holds U+0000 (NUL)";
  return nullptr;
}

// The text with each U+0000 written as \u0000 (for an error message).
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '\0' ? std::string("\\u0000") : std::string(1, c);
  return out;
}

class Validator {
 public:
  explicit Validator(const Graph& g) : g_(g) {}

  void run() {
    if (const char* problem = text_problem(g_.name)) throw GraphError(std::string("graph: name: ") + problem);
    check_attrs();
    if (g_.size() > kMaxOps)
      throw GraphError(detail::concat("graph '", g_.name, "': ", g_.size(), " ops, over the limit ", kMaxOps));
    // A pipelined mini-batch's attrs come together (with one left out the graph ran as a plain step) and
    // every op's micro-batch is below their count.
    if (g_.attrs.count(kAttrMicrobatches) != g_.attrs.count(kAttrSchedule))
      throw GraphError(std::string("graph attrs: ") + kAttrMicrobatches + " and " + kAttrSchedule +
                       " come together; only " +
                       (g_.attrs.count(kAttrMicrobatches) ? kAttrMicrobatches : kAttrSchedule) + " is given");
    pipeline_ = pipeline_spec_of(g_);
    std::unordered_set<std::string> names;
    names.reserve(g_.ops().size());
    if (pipeline_) reach_.assign(g_.ops().size(), -1);
    for (int32_t i = 0; i < g_.size(); ++i) {
      id_ = i;
      const Op& op = g_.op(OpId(i));
      if (op.name.empty()) fail_at(detail::concat("ops[", i, "]"), "name", "empty name");
      if (const char* problem = text_problem(op.name)) fail_at(detail::concat("ops[", i, "]"), "name", problem);
      if (!names.insert(op.name).second) fail("name", "duplicate op name");
      check_basics(op);
    }
    // Shape checks read other ops' outputs: only after every op passed the basics.
    for (int32_t i = 0; i < g_.size(); ++i) {
      id_ = i;
      check_semantics(g_.op(OpId(i)));
    }
  }

 private:
  [[noreturn]] void fail_at(const std::string& who, const std::string& field, const std::string& message) const {
    throw GraphError(who + ": " + field + ": " + message);
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    fail_at("op '" + g_.op(OpId(id_)).name + "'", field, message);
  }

  const TensorSpec& spec(TensorRef t) const { return g_.op(t.op).outputs[t.output]; }

  // Attr keys and values are text (the message shows a key's U+0000 as \u0000).
  void check_attrs() const {
    const std::string who = "graph '" + shown(g_.name) + "': attrs: ";
    for (const auto& [key, value] : g_.attrs) {
      if (!is_utf8(key) || !is_utf8(value)) throw GraphError(who + "not UTF-8 text");
      if (const char* problem = text_problem(key)) throw GraphError(who + "key '" + shown(key) + "': " + problem);
      if (const char* problem = text_problem(value))
        throw GraphError(who + "value of '" + shown(key) + "': " + problem);
    }
  }

  // Its texts (UTF-8, no U+0000) and counts.
  void check_texts_and_counts(const Op& op) {
    if (op.type.empty()) fail("type", "empty op type");
    if (const char* problem = text_problem(op.type)) fail("type", problem);
    if (const char* problem = text_problem(op.group)) fail("group", problem);
    if (const char* problem = text_problem(op.layer)) fail("layer", problem);
    if (op.layer.size() > kMaxLayerBytes)
      fail("layer", detail::concat(op.layer.size(), " bytes, over the limit ", kMaxLayerBytes));
    if (op.args.size() > kMaxArgsPerOp) fail("args", detail::concat(op.args.size(), " arguments, over ", kMaxArgsPerOp));
    if (static_cast<uint8_t>(op.phase) > static_cast<uint8_t>(Phase::Update)) fail("phase", "not a phase");
    if (op.inputs.size() > kMaxEdgesPerOp) fail("inputs", "absurd number of inputs");
    if (op.outputs.size() > kMaxEdgesPerOp) fail("outputs", "absurd number of outputs");
  }

  // A micro-batch copy only in a pipelined mini-batch, below its count; -1: not a copy.
  void check_microbatch(const Op& op) {
    if (op.microbatch < -1) fail("microbatch", detail::concat(op.microbatch, " is not -1 or a micro-batch index"));
    if (op.microbatch >= 0 && !pipeline_)
      fail("microbatch", "set, but the graph is no pipelined mini-batch (its attrs name no pipeline.microbatches)");
    if (pipeline_ && op.microbatch >= pipeline_->microbatches)
      fail("microbatch", detail::concat(op.microbatch, " is not below the graph's ", kAttrMicrobatches, " ",
                                        pipeline_->microbatches));
    if (pipeline_) check_microbatch_inputs(op);
  }

  // In a pipelined mini-batch an op reads only its own or an earlier micro-batch: 1F1B admits a device's
  // micro-batches in order, and micro-batch 0 waiting on micro-batch 1 stalled the simulation. reach_[i]:
  // the latest micro-batch op i depends on, through ops of no micro-batch (params, updates); inputs are
  // not gated (MicrobatchGate), so they count as none, as params do.
  void check_microbatch_inputs(const Op& op) {
    const bool gated = op.microbatch >= 0 && op.type != op_types::kInput;
    int32_t reach = gated ? op.microbatch : -1;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t in = op.inputs[k].op.value;
      const Op& producer = g_.op(OpId(in));
      if (gated && reach_[in] > op.microbatch)
        fail(detail::concat("inputs[", k, "]"),
             detail::concat("reads '", producer.name, "'",
                            producer.microbatch == reach_[in] ? " of micro-batch " : ", which depends on micro-batch ",
                            reach_[in], producer.microbatch == reach_[in] ? "" : ",", " from micro-batch ",
                            op.microbatch, " (an op reads only its own or an earlier micro-batch: they run in order)"));
      reach = std::max(reach, reach_[in]);
    }
    reach_[id_] = reach;
  }

  void check_basics(const Op& op) {
    check_texts_and_counts(op);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const TensorRef& t = op.inputs[k];
      const std::string f = detail::concat("inputs[", k, "]");
      if (!t.op.valid() || t.op.value >= id_)
        fail(f, detail::concat("refers to op #", t.op.value, ", not an earlier op"));
      const Op& producer = g_.op(t.op);
      if (t.output < 0 || t.output >= static_cast<int32_t>(producer.outputs.size()))
        fail(f, detail::concat("reads output ", t.output, " of '", producer.name, "', which has ",
                               producer.outputs.size(), " output(s)"));
    }
    for (size_t k = 0; k < op.outputs.size(); ++k) check_tensor(op.outputs[k], detail::concat("outputs[", k, "]"));
    check_view_of(op);
    check_microbatch(op);
    if (op.param_bytes < 0) fail("param_bytes", detail::concat("negative size ", op.param_bytes));
    if (op.param_bytes > kMaxParamBytes) fail("param_bytes", detail::concat("absurd size ", op.param_bytes));
    add_to_totals(op);
    if (!std::isfinite(op.flops) || op.flops < 0)
      fail("flops", detail::concat("must be finite and >= 0, got ", op.flops));
    if (op.flops > kMaxFlops) fail("flops", detail::concat("absurd value ", op.flops));
    for (size_t k = 0; k < op.args.size(); ++k) check_arg(op, op.args[k], detail::concat("args[", k, "]"));
    if (op.forward.valid()) {
      if (op.forward.value >= g_.size()) fail("forward", detail::concat("refers to missing op #", op.forward.value));
      if (op.forward.value == id_) fail("forward", "refers to the op itself");
    } else if (op.forward.value != -1) {
      fail("forward", detail::concat("bad op id ", op.forward.value));
    }
    if (op.phase != Phase::Forward && !op.forward.valid())
      fail("forward", std::string("a ") + phase_name(op.phase) + " op must name its forward op");
    // (Placements keep an op with the op it names, co-location groups only a backward or update op: a forward
    // op naming one passed here and then failed every placer that places groups.)
    if (op.phase == Phase::Forward && op.forward.valid())
      fail("forward", "a forward op names no forward op; only backward and update ops do");
  }

  // The graph's sums, checked as they grow (each term is capped far below kMaxGraphBytes, so no sum overflows).
  void add_to_totals(const Op& op) {
    auto over = [](const char* what) {
      return detail::concat("the graph's ", what, " bytes pass ", kMaxGraphBytes, " (4 PiB) here");
    };
    total_param_bytes_ += op.param_bytes;
    if (total_param_bytes_ > kMaxGraphBytes) fail("param_bytes", over("param"));
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      total_output_bytes_ += op.outputs[k].bytes();
      if (total_output_bytes_ > kMaxGraphBytes) fail(detail::concat("outputs[", k, "]"), over("output"));
    }
  }

  // view_of: empty (not recorded) or one entry per output, each -1 or an input index. The JSON reader
  // checked this; a binary graph's was trusted (exec_plan read entries out of range as -1).
  void check_view_of(const Op& op) {
    if (!op.view_of.empty() && op.view_of.size() != op.outputs.size())
      fail("view_of", detail::concat(op.view_of.size(), " entries for ", op.outputs.size(), " output(s)"));
    for (size_t k = 0; k < op.view_of.size(); ++k)
      if (op.view_of[k] < -1 || op.view_of[k] >= static_cast<int64_t>(op.inputs.size()))
        fail(detail::concat("view_of[", k, "]"),
             detail::concat(op.view_of[k], " is not -1 or an input index (the op has ", op.inputs.size(), " input(s))"));
  }

  void check_tensor(const TensorSpec& t, const std::string& f) {
    if (!valid_dtype(t.dtype)) fail(f + ".dtype", detail::concat("not a dtype (", static_cast<int>(t.dtype), ")"));
    if (static_cast<int64_t>(t.shape.size()) > kMaxRank)
      fail(f + ".shape", detail::concat("rank ", t.shape.size(), " is over the limit ", kMaxRank));
    int64_t bytes = dtype_size(t.dtype);
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const int64_t n = t.shape[d];
      if (n < 0) fail(detail::concat(f, ".shape[", d, "]"), detail::concat("negative size ", n));
      if (n > 0 && bytes > kMaxTensorBytes / n)
        fail(f + ".shape",
             "absurd size " + shape_str(t.shape) + " (over " + std::to_string(kMaxTensorBytes) + " bytes)");
      // (Each dimension alone too: beside a dimension of 0 the byte count stays 0, and shape arithmetic such
      // as conv2d's output size would overflow on a dimension near 2^63.)
      if (n > kMaxTensorBytes)
        fail(f + ".shape", detail::concat("absurd size ", shape_str(t.shape), " (dimension ", d, " over ",
                                          kMaxTensorBytes, ")"));
      bytes *= n;
    }
    if (bytes > kMaxTensorBytes) fail(f + ".shape", "absurd size " + shape_str(t.shape));
  }

  void check_arg(const Op& op, const Arg& a, const std::string& f) {
    const int64_t n_inputs = static_cast<int64_t>(op.inputs.size());
    switch (a.kind) {
      case Arg::Kind::Tensor:
        if (a.i < 0 || a.i >= n_inputs)
          fail(f, detail::concat("tensor argument refers to input ", a.i, ", the op has ", n_inputs, " input(s)"));
        break;
      case Arg::Kind::TensorList:  // -1: None (an optional tensor list, e.g. aten::index's indices)
        for (int64_t x : a.ints)
          if (x < -1 || x >= n_inputs)
            fail(f, detail::concat("tensor list refers to input ", x, ", the op has ", n_inputs, " input(s)"));
        break;
      case Arg::Kind::Bools:
        for (int64_t x : a.ints)
          if (x != 0 && x != 1) fail(f, detail::concat("bool list holds ", x));
        break;
      case Arg::Kind::ScalarType:
        if (a.i < 0 || a.i > static_cast<int64_t>(DType::Bool)) fail(f, detail::concat("not a dtype (", a.i, ")"));
        break;
      case Arg::Kind::None:
      case Arg::Kind::Int:
      case Arg::Kind::Double:
      case Arg::Kind::Bool:
      case Arg::Kind::Ints:
      case Arg::Kind::Doubles:
      case Arg::Kind::String:
      case Arg::Kind::Device: break;
      default: fail(f, detail::concat("not an argument kind (", static_cast<int>(a.kind), ")"));
    }
  }

  // Tensor operands in schema order: the Tensor args when the op has args,
  // else its inputs in order.
  std::vector<TensorRef> operands(const Op& op) const {
    std::vector<TensorRef> out;
    if (op.args.empty()) return op.inputs;
    for (const Arg& a : op.args)
      if (a.kind == Arg::Kind::Tensor) out.push_back(op.inputs[a.i]);
    return out;
  }

  void expect_shape(const Op& op, const std::vector<int64_t>& want, const std::string& why) {
    if (op.outputs.empty()) fail("outputs", "missing (expected " + shape_str(want) + ")");
    if (op.outputs[0].shape != want)
      fail("outputs[0].shape",
           shape_str(op.outputs[0].shape) + " does not match " + why + ": expected " + shape_str(want));
  }

  void expect_rank(const std::vector<int64_t>& shape, size_t rank, const std::string& what) {
    if (shape.size() != rank)
      fail("inputs", detail::concat(what, " must have rank ", rank, ", got ", shape_str(shape)));
  }

  void check_semantics(const Op& op) {
    if (op.type == op_types::kParam) return check_param(op);
    if (op.type == op_types::kInput) {
      if (!op.inputs.empty()) fail("inputs", "an input op has no inputs");
      return;
    }
    if (op.type == op_types::kBackward) return check_backward(op);
    if (op.type == op_types::kSgd) return check_sgd(op);
    if (op.type.rfind("aten::", 0) == 0) check_aten_shapes(op);
  }

  void check_param(const Op& op) {
    if (!op.inputs.empty()) fail("inputs", "a param op has no inputs");
    if (op.outputs.size() != 1) fail("outputs", "a param op has exactly one output");
    const int64_t bytes = op.outputs[0].bytes();
    if (op.param_bytes != bytes)
      fail("param_bytes", detail::concat(op.param_bytes, " but the param tensor ", shape_str(op.outputs[0].shape), " ",
                                         dtype_name(op.outputs[0].dtype), " has ", bytes, " bytes"));
  }

  void check_backward(const Op& op) {
    if (op.phase != Phase::Backward)
      fail("phase", std::string("a backward op has phase backward, not ") + phase_name(op.phase));
    const Op& fwd = g_.op(op.forward);
    if (fwd.phase != Phase::Forward) fail("forward", "'" + fwd.name + "' is not a forward op");
    if (op.inputs.empty() || op.inputs[0].op != op.forward || op.inputs[0].output != 0)
      fail("inputs[0]", "must be output 0 of its forward op '" + fwd.name + "'");
    if (op.args.size() < 2 || op.args[0].kind != Arg::Kind::Ints || op.args[1].kind != Arg::Kind::Ints)
      fail("args", "a backward op has args [ints: forward output per gradient input, ints: forward input per output]");
    const auto& grad_of = op.args[0].ints;
    const auto& input_of = op.args[1].ints;
    if (grad_of.size() + 1 != op.inputs.size())
      fail("args[0]",
           detail::concat("has ", grad_of.size(), " entries for ", op.inputs.size() - 1, " gradient input(s)"));
    if (input_of.size() != op.outputs.size())
      fail("args[1]", detail::concat("has ", input_of.size(), " entries for ", op.outputs.size(), " output(s)"));
    for (size_t m = 0; m < grad_of.size(); ++m) {
      const int64_t k = grad_of[m];
      if (k < 0 || k >= static_cast<int64_t>(fwd.outputs.size()))
        fail(detail::concat("args[0][", m, "]"), detail::concat("forward op '", fwd.name, "' has no output ", k));
      const TensorSpec& g = spec(op.inputs[m + 1]);
      if (g.shape != fwd.outputs[k].shape)
        fail(detail::concat("inputs[", m + 1, "]"),
             detail::concat("gradient shape ", shape_str(g.shape), " does not match output ", k, " of '", fwd.name,
                            "' ", shape_str(fwd.outputs[k].shape)));
    }
    for (size_t j = 0; j < input_of.size(); ++j) {
      const int64_t k = input_of[j];
      if (k < 0 || k >= static_cast<int64_t>(fwd.inputs.size()))
        fail(detail::concat("args[1][", j, "]"), detail::concat("forward op '", fwd.name, "' has no input ", k));
      const TensorSpec& x = spec(fwd.inputs[k]);
      if (op.outputs[j] != x)
        fail(detail::concat("outputs[", j, "]"),
             detail::concat("gradient ", shape_str(op.outputs[j].shape), " ", dtype_name(op.outputs[j].dtype),
                            " does not match input ", k, " of '", fwd.name, "' ", shape_str(x.shape), " ",
                            dtype_name(x.dtype)));
    }
  }

  void check_sgd(const Op& op) {
    if (op.phase != Phase::Update)
      fail("phase", std::string("an sgd op has phase update, not ") + phase_name(op.phase));
    const Op& param = g_.op(op.forward);
    if (param.type != op_types::kParam) fail("forward", "'" + param.name + "' is not a param op");
    if (op.inputs.empty() || op.inputs[0].op != op.forward || op.inputs[0].output != 0)
      fail("inputs[0]", "must be the output of its param op '" + param.name + "'");
    if (op.args.empty() || op.args[0].kind != Arg::Kind::Double) fail("args[0]", "must be the learning rate (double)");
    if (!std::isfinite(op.args[0].d) || op.args[0].d < 0)  // NaN went on into every update
      fail("args[0]", detail::concat("the learning rate must be finite and >= 0, got ", op.args[0].d));
    for (size_t m = 1; m < op.inputs.size(); ++m) {
      const TensorSpec& g = spec(op.inputs[m]);
      if (g.shape != param.outputs[0].shape)
        fail(detail::concat("inputs[", m, "]"), "gradient shape " + shape_str(g.shape) + " does not match param '" +
                                                    param.name + "' " + shape_str(param.outputs[0].shape));
    }
  }

  // Broadcast of two shapes (numpy rules); false if they do not broadcast.
  static bool broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out) {
    const size_t n = std::max(a.size(), b.size());
    out.assign(n, 1);
    for (size_t i = 0; i < n; ++i) {
      const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
      const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
      if (x != y && x != 1 && y != 1) return false;
      out[i] = x == 1 ? y : x;
    }
    return true;
  }

  // Only what the IR can check for sure; an op whose operands are not in the
  // expected form (fewer tensor operands than the schema has) is left alone.
  void check_aten_shapes(const Op& op) {
    const std::string& type = op.type;
    const size_t dot = type.find('.');
    const std::string base = type.substr(0, dot);
    const std::string overload = dot == std::string::npos ? "" : type.substr(dot + 1);
    const std::vector<TensorRef> xs = operands(op);

    static const std::unordered_set<std::string> kSameShape = {
        "aten::relu",       "aten::relu_",       "aten::sigmoid",   "aten::tanh",        "aten::gelu",
        "aten::dropout",    "aten::neg",         "aten::exp",       "aten::log",         "aten::sqrt",
        "aten::rsqrt",      "aten::silu",        "aten::hardtanh",  "aten::relu6",       "aten::leaky_relu",
        "aten::hardswish",  "aten::hardsigmoid", "aten::softmax",   "aten::log_softmax", "aten::batch_norm",
        "aten::layer_norm", "aten::clone",       "aten::contiguous"};
    static const std::unordered_set<std::string> kBroadcast = {"aten::add", "aten::sub", "aten::mul", "aten::div"};
    using Rule = void (Validator::*)(const Op&, const std::vector<TensorRef>&);
    static const std::unordered_map<std::string, Rule> kRules = {
        {"aten::mm", &Validator::check_mm},         {"aten::addmm", &Validator::check_addmm},
        {"aten::bmm", &Validator::check_bmm},       {"aten::linear", &Validator::check_linear},
        {"aten::conv2d", &Validator::check_conv2d},
    };

    if (kSameShape.count(base) || (kBroadcast.count(base) && overload == "Scalar")) {
      if (xs.empty()) return;
      return expect_shape(op, spec(xs[0]).shape, "its input " + shape_str(spec(xs[0]).shape));
    }
    if ((kBroadcast.count(base) && overload == "Tensor") || type == "aten::maximum" || type == "aten::minimum")
      return check_broadcast(op, xs);
    if (type == "aten::cat") return check_cat(op);
    const auto rule = kRules.find(type);
    if (rule != kRules.end()) (this->*rule->second)(op, xs);
  }

  // Elementwise binary op: the output is the broadcast of both inputs.
  void check_broadcast(const Op& op, const std::vector<TensorRef>& xs) {
    if (xs.size() < 2) return;
    const auto &a = spec(xs[0]).shape, &b = spec(xs[1]).shape;
    std::vector<int64_t> out;
    if (!broadcast(a, b, out)) fail("inputs", "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    expect_shape(op, out, "the broadcast of its inputs");
  }

  // The shape of the product of two matrices; `first` names the left one in errors.
  std::vector<int64_t> matrix_product(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* first) {
    expect_rank(a, 2, first);
    expect_rank(b, 2, "mat2");
    if (a[1] != b[0]) fail("inputs", "inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
    return {a[0], b[1]};
  }

  void check_mm(const Op& op, const std::vector<TensorRef>& xs) {
    if (xs.size() < 2) return;
    expect_shape(op, matrix_product(spec(xs[0]).shape, spec(xs[1]).shape, "self"), "the matrix product");
  }

  void check_addmm(const Op& op, const std::vector<TensorRef>& xs) {
    if (xs.size() < 3) return;
    const std::vector<int64_t>& self = spec(xs[0]).shape;
    const std::vector<int64_t> prod = matrix_product(spec(xs[1]).shape, spec(xs[2]).shape, "mat1");
    std::vector<int64_t> out;
    if (!broadcast(self, prod, out) || out != prod)
      fail("inputs", "self " + shape_str(self) + " does not broadcast to " + shape_str(prod));
    expect_shape(op, prod, "the matrix product");
  }

  void check_bmm(const Op& op, const std::vector<TensorRef>& xs) {
    if (xs.size() < 2) return;
    const auto &a = spec(xs[0]).shape, &b = spec(xs[1]).shape;
    expect_rank(a, 3, "self");
    expect_rank(b, 3, "mat2");
    if (a[0] != b[0] || a[2] != b[1])
      fail("inputs", "batch or inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
    expect_shape(op, {a[0], a[1], b[2]}, "the batched matrix product");
  }

  void check_linear(const Op& op, const std::vector<TensorRef>& xs) {
    if (xs.size() < 2) return;
    const auto &x = spec(xs[0]).shape, &w = spec(xs[1]).shape;
    if (x.empty()) fail("inputs", "input must have rank >= 1");
    expect_rank(w, 2, "weight");
    if (x.back() != w[1]) fail("inputs", "input " + shape_str(x) + " does not match weight " + shape_str(w));
    if (xs.size() >= 3 && spec(xs[2]).shape != std::vector<int64_t>{w[0]})
      fail("inputs", "bias " + shape_str(spec(xs[2]).shape) + " does not match weight " + shape_str(w));
    std::vector<int64_t> out = x;
    out.back() = w[0];
    expect_shape(op, out, "input x weight^T");
  }

  void check_cat(const Op& op) {
    if (op.args.empty() || op.args[0].kind != Arg::Kind::TensorList) return;  // no schema args: nothing to check
    const auto& list = op.args[0].ints;
    if (list.empty()) fail("args[0]", "cat of no tensors");
    for (int64_t k : list)
      if (k < 0) fail("args[0]", "cat of None (tensor list entry -1)");
    int64_t dim = op.args.size() > 1 && op.args[1].kind == Arg::Kind::Int ? op.args[1].i : 0;
    const std::vector<int64_t>& first = spec(op.inputs[list[0]]).shape;
    const int64_t rank = static_cast<int64_t>(first.size());
    if (dim < -rank || dim >= rank) fail("args[1]", detail::concat("dim ", dim, " out of range for rank ", rank));
    if (dim < 0) dim += rank;
    std::vector<int64_t> out = first;
    out[dim] = 0;
    for (size_t e = 0; e < list.size(); ++e) {
      const std::vector<int64_t>& s = spec(op.inputs[list[e]]).shape;
      bool ok = static_cast<int64_t>(s.size()) == rank;
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == dim || s[d] == first[d];
      if (!ok)
        fail("inputs", detail::concat("cat along dim ", dim, " of ", shape_str(first), " and ", shape_str(s),
                                      ": other dimensions differ"));
      // Each size is at most kMaxTensorBytes (check_tensor), so the sum is checked before it can overflow
      // (2^24 inputs of 2^40 wrapped to 0).
      if (s[dim] > kMaxTensorBytes - out[dim])
        fail(detail::concat("args[0][", e, "]"), detail::concat("cat along dim ", dim, ": the sizes sum past ",
                                                                kMaxTensorBytes, " (the largest size of a dimension)"));
      out[dim] += s[dim];
    }
    expect_shape(op, out, "the concatenation");
  }

  // conv2d(input, weight, bias, stride, padding, dilation, groups)
  void check_conv2d(const Op& op, const std::vector<TensorRef>& xs) {
    const auto& a = op.args;
    if (a.size() != 7 || a[3].kind != Arg::Kind::Ints || a[4].kind != Arg::Kind::Ints || a[5].kind != Arg::Kind::Ints ||
        a[6].kind != Arg::Kind::Int || xs.size() < 2)
      return;
    const auto &x = spec(xs[0]).shape, &w = spec(xs[1]).shape;
    expect_rank(x, 4, "conv2d input");
    expect_rank(w, 4, "conv2d weight");
    const int64_t groups = a[6].i;
    if (groups < 1 || x[1] % groups != 0 || x[1] / groups != w[1])
      fail("inputs",
           detail::concat("input ", shape_str(x), " does not match weight ", shape_str(w), " with groups ", groups));
    auto pick = [](const std::vector<int64_t>& v, size_t k) { return v.size() == 1 ? v[0] : v.at(k); };
    std::vector<int64_t> out = {x[0], w[0], 0, 0};
    for (size_t k = 0; k < 2; ++k) {
      if (a[3].ints.empty() || a[4].ints.empty() || a[5].ints.empty() || a[3].ints.size() > 2 || a[4].ints.size() > 2 ||
          a[5].ints.size() > 2)
        fail("args", "stride, padding and dilation need 1 or 2 values");
      const int64_t stride = pick(a[3].ints, k), pad = pick(a[4].ints, k), dil = pick(a[5].ints, k);
      if (stride < 1 || dil < 1 || pad < 0) fail("args", "bad stride, padding or dilation");
      // Bounded so the arithmetic below cannot overflow (shapes are at most kMaxTensorBytes per dimension).
      constexpr int64_t kMaxConvArg = int64_t{1} << 20;
      if (stride > kMaxConvArg || dil > kMaxConvArg || pad > kMaxConvArg)
        fail("args", detail::concat("absurd stride, padding or dilation (", stride, ", ", pad, ", ", dil,
                                    "; at most ", kMaxConvArg, ")"));
      const int64_t span = dil * (w[2 + k] - 1) + 1;
      out[2 + k] = (x[2 + k] + 2 * pad - span) / stride + 1;
      if (x[2 + k] + 2 * pad < span) fail("inputs", "kernel larger than the padded input " + shape_str(x));
    }
    expect_shape(op, out, "the convolution of " + shape_str(x) + " with " + shape_str(w));
  }

  const Graph& g_;
  std::optional<PipelineSpec> pipeline_;  // a pipelined mini-batch's spec, from the attrs
  std::vector<int32_t> reach_;            // pipelined: per op, the latest micro-batch it depends on (-1: none)
  int32_t id_ = 0;
  int64_t total_param_bytes_ = 0, total_output_bytes_ = 0;
};

}  // namespace

void validate_graph(const Graph& graph) { Validator(graph).run(); }

}  // namespace placer
