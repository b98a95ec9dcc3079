// TorchScript -> placer IR.
//
// The module is loaded, frozen (parameters kept as attributes so they keep
// their names and are not folded into other constants), inlined and cleaned
// up. Then the graph is *executed* node by node on CPU with real tensors built
// from the sample inputs: every ATen node becomes one Op whose output shapes
// are the shapes the kernel really produced. Shape arithmetic (aten::size,
// aten::Int, list building, ...) is evaluated on the spot and becomes constant
// arguments, since the sample shapes fix it.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "placer/graphs/builders.h"
#include "placer/graphs/error.h"
#include "placer/torchscript/import.h"

namespace placer {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// ---------------------------------------------------------------- dtypes

std::optional<DType> to_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::Float32;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kDouble: return DType::Float64;
    case at::kLong: return DType::Int64;
    case at::kInt: return DType::Int32;
    case at::kShort: return DType::Int16;
    case at::kChar: return DType::Int8;
    case at::kByte: return DType::UInt8;
    case at::kBool: return DType::Bool;
    default: return std::nullopt;
  }
}

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return at::kFloat;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float64: return at::kDouble;
    case DType::Int64: return at::kLong;
    case DType::Int32: return at::kInt;
    case DType::Int16: return at::kShort;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

// ---------------------------------------------------------------- node descriptions for errors

std::string module_path(const Node* node) {
  std::string path;
  auto frame = node->callstack();
  while (frame) {
    if (auto instance = (*frame)->module_instance()) {
      if (!path.empty()) path += ".";
      path += instance->instance_name();
    }
    frame = (*frame)->callee();
  }
  return path;
}

std::string describe(const Node* node) {
  std::ostringstream out;
  out << node->kind().toQualString();
  if (node->maybeSchema()) {
    const auto& name = node->schema().operator_name();
    if (!name.overload_name.empty()) out << "." << name.overload_name;
  }
  const std::string path = module_path(node);
  if (!path.empty()) out << " in module '" << path << "'";
  const auto range = node->sourceRange();
  if (range.source()) {
    if (auto loc = range.file_line_col()) {
      out << " at " << std::get<0>(*loc) << ":" << std::get<1>(*loc) << ":" << std::get<2>(*loc);
    } else {
      std::string text = range.text().str();
      if (text.size() > 80) text = text.substr(0, 80) + "...";
      if (!text.empty()) out << " ('" << text << "')";
    }
  }
  return out.str();
}

bool type_has_tensor(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& contained : type->containedTypes()) {
    if (type_has_tensor(contained)) return true;
  }
  return false;
}

void reject_control_flow(torch::jit::Block* block, const std::string& file) {
  for (Node* node : block->nodes()) {
    const auto kind = node->kind();
    if (kind == c10::prim::If || kind == c10::prim::Loop) {
      throw InputError(file + ": control flow is not supported: " + describe(node) +
                       " (trace the model with torch.jit.trace, or make the branch/loop static)");
    }
    if (kind == c10::prim::CallFunction || kind == c10::prim::CallMethod) {
      throw InputError(file + ": call that could not be inlined: " + describe(node));
    }
    for (auto* sub : node->blocks()) reject_control_flow(sub, file);
  }
}

// ---------------------------------------------------------------- FLOPs

double numel_of(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().defined() ? static_cast<double>(v.toTensor().numel()) : 0.0;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

double estimate_flops(const std::string& base, const std::vector<c10::IValue>& in,
                      const std::vector<at::Tensor>& out) {
  double out_numel = 0;
  for (const auto& t : out) out_numel += static_cast<double>(t.numel());
  const double first_out = out.empty() ? 0.0 : static_cast<double>(out[0].numel());
  const auto tensor = [&](size_t i) -> at::Tensor {
    return i < in.size() && in[i].isTensor() ? in[i].toTensor() : at::Tensor();
  };

  static const std::set<std::string> kViews = {
      "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::flatten", "aten::unflatten",
      "aten::unsqueeze", "aten::squeeze", "aten::transpose", "aten::t", "aten::permute",
      "aten::expand", "aten::expand_as", "aten::select", "aten::slice", "aten::narrow",
      "aten::chunk", "aten::split", "aten::split_with_sizes", "aten::unbind", "aten::detach",
      "aten::alias", "aten::as_strided", "aten::view_as", "aten::reshape_as", "aten::numpy_T"};
  if (kViews.count(base)) return 0.0;

  const bool conv = base == "aten::_convolution" || base == "aten::convolution" ||
                    starts_with(base, "aten::conv1d") || starts_with(base, "aten::conv2d") ||
                    starts_with(base, "aten::conv3d") || starts_with(base, "aten::conv_transpose");
  if (conv) {
    // 2 x (one multiply-add per weight element per output position) + bias.
    const at::Tensor input = tensor(0), weight = tensor(1), bias = tensor(2);
    if (!input.defined() || !weight.defined() || weight.dim() < 1) return first_out;
    bool transposed = starts_with(base, "aten::conv_transpose");
    if ((base == "aten::_convolution" || base == "aten::convolution") && in.size() > 6 && in[6].isBool()) {
      transposed = in[6].toBool();
    }
    const double per_position = static_cast<double>(weight.numel()) / static_cast<double>(weight.size(0));
    const double positions = transposed ? static_cast<double>(input.numel()) : first_out;
    return 2.0 * positions * per_position + (bias.defined() ? first_out : 0.0);
  }
  if (base == "aten::linear") {
    const at::Tensor weight = tensor(1), bias = tensor(2);
    if (!weight.defined()) return first_out;
    const double k = static_cast<double>(weight.dim() == 2 ? weight.size(1) : weight.size(0));
    return 2.0 * first_out * k + (bias.defined() ? first_out : 0.0);
  }
  if (base == "aten::matmul" || base == "aten::mm" || base == "aten::bmm" || base == "aten::dot" ||
      base == "aten::mv") {
    const at::Tensor a = tensor(0);
    if (!a.defined() || a.dim() == 0) return first_out;
    return 2.0 * std::max(1.0, first_out) * static_cast<double>(a.size(-1));
  }
  if (base == "aten::scaled_dot_product_attention") {
    // q[..., L, E] k[..., S, E] v[..., S, Ev]: scores q k^T (2 L S E per
    // batch-head), softmax (about 5 L S), and the weighted sum of v (2 L S Ev).
    const at::Tensor q = tensor(0), k = tensor(1), v = tensor(2);
    if (!q.defined() || !k.defined() || !v.defined() || q.dim() < 2 || k.dim() < 2 || v.dim() < 2) return first_out;
    const double e = static_cast<double>(q.size(-1)), l = static_cast<double>(q.size(-2));
    const double s = static_cast<double>(k.size(-2)), ev = static_cast<double>(v.size(-1));
    const double heads = static_cast<double>(q.numel()) / (l * e);
    return heads * l * s * (2.0 * e + 5.0 + 2.0 * ev);
  }
  if (base == "aten::addmm" || base == "aten::baddbmm" || base == "aten::addmv") {
    const at::Tensor a = tensor(1);
    if (!a.defined() || a.dim() == 0) return first_out;
    return 2.0 * first_out * static_cast<double>(a.size(-1)) + first_out;
  }
  if (base == "aten::lstm" || base == "aten::gru" || base == "aten::rnn_tanh" || base == "aten::rnn_relu") {
    // input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first
    const at::Tensor input = tensor(0);
    if (!input.defined() || in.size() < 8 || !in[2].isTensorList() || !in[3].isBool()) return first_out;
    const auto params = in[2].toTensorList();
    const bool has_biases = in[3].toBool();
    const size_t stride = has_biases ? 4 : 2;
    const double tokens = static_cast<double>(input.numel()) / static_cast<double>(input.size(-1));
    const int gates_per_hidden = base == "aten::lstm" ? 4 : base == "aten::gru" ? 3 : 1;
    const int elementwise_per_hidden = base == "aten::lstm" ? 9 : base == "aten::gru" ? 8 : 1;
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
  if (starts_with(base, "aten::max_pool") || starts_with(base, "aten::avg_pool")) {
    if (in.size() > 1 && in[1].isIntList()) {
      double window = 1;
      for (int64_t k : in[1].toIntVector()) window *= static_cast<double>(k);
      return first_out * window;
    }
    return numel_of(in[0]);
  }
  static const std::set<std::string> kReductions = {
      "aten::sum", "aten::mean", "aten::var", "aten::std", "aten::norm", "aten::amax", "aten::amin",
      "aten::max", "aten::min", "aten::argmax", "aten::argmin", "aten::prod", "aten::logsumexp",
      "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d",
      "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d"};
  if (kReductions.count(base)) return in.empty() ? out_numel : std::max(out_numel, numel_of(in[0]));
  return out_numel;  // elementwise and everything else: one op per output element
}

// ---------------------------------------------------------------- the importer

enum class GradStatus { Differentiable, NoGradient, NotImplemented };

// What a TorchScript value stands for while the graph is executed.
struct Slot {
  enum class Kind { Const, Tensor, TensorList, Tuple, Module } kind = Kind::Const;
  c10::IValue value;               // the real value (Tuple: rebuilt on demand)
  std::vector<TensorRef> refs;     // Tensor: one; TensorList: one per element
  std::vector<Slot> elems;         // Tuple
  torch::jit::Module module;
  std::string path;                // Module: attribute path from the root
  bool tracked() const {
    if (kind == Kind::Tensor || kind == Kind::TensorList) return true;
    for (const auto& e : elems) {
      if (e.tracked()) return true;
    }
    return false;
  }
};

class Importer {
 public:
  Importer(std::string file, const ImportOptions& options) : file_(std::move(file)), options_(options) {}

  Graph run(const std::vector<SampleInput>& samples);

 private:
  [[noreturn]] void fail(const std::string& message) const { throw InputError(file_ + ": " + message); }

  torch::jit::Module load();
  void check_inputs(const torch::jit::Module& module, const std::vector<SampleInput>& samples);
  int64_t integer_input_high(const Value* input);
  std::optional<c10::IValue> static_value(const Value* value);

  Slot& slot(const Value* v);
  c10::IValue ivalue(const Slot& s);
  TensorRef tensor_ref(const Slot& s, const Value* v);
  TensorRef materialize(const at::Tensor& t, const std::string& hint);
  std::string unique_name(const std::string& base);

  void visit(Node* node);
  void visit_get_attr(Node* node);
  void fold(Node* node);
  void execute_aten(Node* node);
  GradStatus grad_status(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& inputs,
                         const std::vector<char>& needs_grad, std::string* reason);
  void add_loss();

  std::string file_;
  ImportOptions options_;
  torch::jit::Module root_;
  std::shared_ptr<torch::jit::Graph> graph_;
  Graph out_;
  std::unordered_map<const Value*, Slot> slots_;
  std::unordered_map<const c10::TensorImpl*, TensorRef> tensor_ops_;  // params and constants, by identity
  std::unordered_set<const c10::TensorImpl*> parameters_;
  std::unordered_map<std::string, int> name_counts_;
  // Autograd check results, cached by op type and which arguments need a
  // gradient; op_grad_key_ maps each op name to its entry.
  std::map<std::string, GradStatus> grad_status_;
  std::map<std::string, std::string> grad_reason_;
  std::unordered_map<std::string, std::string> op_grad_key_;
  std::set<std::pair<int32_t, int32_t>> requires_grad_;  // (op, output) carrying a param's gradient
  std::vector<TensorRef> graph_outputs_;
  at::Generator generator_ = at::make_generator<at::CPUGeneratorImpl>(20240607);
};

torch::jit::Module Importer::load() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file_, ec)) fail("no such file");
  try {
    return torch::jit::load(file_, c10::kCPU);
  } catch (const std::exception& e) {
    std::string what = e.what();
    const auto newline = what.find('\n');
    if (newline != std::string::npos) what = what.substr(0, newline);
    fail("not a TorchScript archive (torch.jit.save output): " + what);
  }
}

void Importer::check_inputs(const torch::jit::Module& module, const std::vector<SampleInput>& samples) {
  const auto method = module.find_method("forward");
  if (!method) fail("the module has no forward method");
  const auto& arguments = method->function().getSchema().arguments();
  std::vector<std::string> expected;
  for (size_t i = 1; i < arguments.size(); ++i) expected.push_back(arguments[i].name());
  std::ostringstream names;
  for (size_t i = 0; i < expected.size(); ++i) names << (i ? ", " : "") << expected[i];

  std::set<std::string> given;
  for (const auto& sample : samples) {
    if (!given.insert(sample.name).second) fail("input '" + sample.name + "' is given twice");
    if (std::find(expected.begin(), expected.end(), sample.name) == expected.end()) {
      fail("forward() has no argument '" + sample.name + "' (its arguments: " + names.str() + ")");
    }
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!given.count(expected[i])) {
      fail("missing --input for forward() argument '" + expected[i] + "' (its arguments: " + names.str() + ")");
    }
    const auto& type = arguments[i + 1].type();
    if (type->kind() != c10::TypeKind::TensorType) {
      fail("forward() argument '" + expected[i] + "' has type " + type->str() + "; only Tensor arguments are supported");
    }
  }
}

// Values known without executing anything: constants and attribute chains.
std::optional<c10::IValue> Importer::static_value(const Value* value) {
  const Node* node = value->node();
  if (node->kind() == c10::prim::Constant) return torch::jit::toIValue(value);
  if (node->kind() == c10::prim::Param) {
    if (value == graph_->inputs()[0]) return root_._ivalue();
    return std::nullopt;
  }
  if (node->kind() == c10::prim::GetAttr) {
    auto owner = static_value(node->input(0));
    if (!owner || !owner->isObject()) return std::nullopt;
    const auto object = owner->toObject();
    const auto& name = node->s(c10::attr::name);
    if (!object->type()->hasAttribute(name)) return std::nullopt;
    return object->getAttr(name);
  }
  return std::nullopt;
}

// Integer inputs are drawn from [0, high): an embedding's table size when the
// input indexes one (possibly through views), else 2.
int64_t Importer::integer_input_high(const Value* input) {
  static const std::set<std::string> kPassThrough = {"aten::view", "aten::reshape", "aten::t", "aten::transpose",
                                                     "aten::permute", "aten::contiguous", "aten::flatten",
                                                     "aten::unsqueeze", "aten::squeeze", "aten::select",
                                                     "aten::slice", "aten::to", "aten::narrow"};
  std::vector<const Value*> frontier = {input};
  std::set<const Value*> seen;
  while (!frontier.empty()) {
    const Value* v = frontier.back();
    frontier.pop_back();
    if (!seen.insert(v).second) continue;
    for (const auto& use : v->uses()) {
      const Node* user = use.user;
      const std::string kind = user->kind().toQualString();
      if (kind == "aten::embedding" && use.offset == 1) {
        if (auto weight = static_value(user->input(0)); weight && weight->isTensor()) {
          return std::max<int64_t>(1, weight->toTensor().size(0));
        }
      }
      if (kPassThrough.count(kind) && use.offset == 0) frontier.push_back(user->output(0));
    }
  }
  return 2;
}

std::string Importer::unique_name(const std::string& base) {
  int& count = name_counts_[base];
  std::string name = count == 0 ? base : base + "_" + std::to_string(count);
  ++count;
  while (out_.find(name)) name = base + "_" + std::to_string(count++);
  return name;
}

Slot& Importer::slot(const Value* v) {
  auto it = slots_.find(v);
  PLACER_CHECK(it != slots_.end(), "value %", v->debugName(), " used before it was defined");
  return it->second;
}

c10::IValue Importer::ivalue(const Slot& s) {
  if (s.kind != Slot::Kind::Tuple) return s.value;
  std::vector<c10::IValue> elems;
  for (const auto& e : s.elems) elems.push_back(ivalue(e));
  return c10::ivalue::Tuple::create(std::move(elems));
}

// A constant tensor (a buffer such as running_var, or a literal) consumed by a
// real op becomes a non-trainable placer::input. Integer constants keep their
// value range (high = max + 1) since they are often indices.
TensorRef Importer::materialize(const at::Tensor& t, const std::string& hint) {
  auto it = tensor_ops_.find(t.unsafeGetTensorImpl());
  if (it != tensor_ops_.end()) return it->second;
  const auto dtype = to_dtype(t.scalar_type());
  if (!dtype) fail("constant '" + hint + "' has unsupported dtype " + std::string(c10::toString(t.scalar_type())));
  Op op;
  op.name = unique_name(hint.empty() ? "constant" : hint);
  op.type = op_types::kInput;
  op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
  if (!is_floating(*dtype) && t.numel() > 0) {
    op.args.push_back(Arg::integer(std::max<int64_t>(1, t.max().item<int64_t>() + 1)));
  }
  const TensorRef ref{out_.add_op(std::move(op)), 0};
  tensor_ops_.emplace(t.unsafeGetTensorImpl(), ref);
  return ref;
}

TensorRef Importer::tensor_ref(const Slot& s, const Value* v) {
  if (s.kind == Slot::Kind::Tensor) return s.refs.at(0);
  PLACER_CHECK(s.kind == Slot::Kind::Const && s.value.isTensor(), "not a tensor slot");
  return materialize(s.value.toTensor(), v->debugName());
}

// The block a module's tensors belong to, as for ops: the module itself, or
// the enclosing one for a leaf module inside a block ("layer1.0").
std::string layer_of(const Slot& module) {
  const std::string& path = module.path;
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return path;
  const bool leaf = module.module.children().size() == 0;
  return leaf ? path.substr(0, dot) : path;
}

void Importer::visit_get_attr(Node* node) {
  const Slot& owner = slot(node->input(0));
  if (owner.kind != Slot::Kind::Module) fail("prim::GetAttr on a value that is not a module: " + describe(node));
  const std::string& name = node->s(c10::attr::name);
  const auto object = owner.module._ivalue();
  if (!object->type()->hasAttribute(name)) fail("module '" + owner.path + "' has no attribute '" + name + "'");
  const c10::IValue value = object->getAttr(name);
  const std::string path = owner.path.empty() ? name : owner.path + "." + name;
  Slot result;
  if (value.isModule()) {
    result.kind = Slot::Kind::Module;
    result.module = value.toModule();
    result.path = path;
  } else if (value.isTensor() && parameters_.count(value.toTensor().unsafeGetTensorImpl())) {
    const at::Tensor& t = value.toTensor();
    auto it = tensor_ops_.find(t.unsafeGetTensorImpl());
    TensorRef ref;
    if (it != tensor_ops_.end()) {
      ref = it->second;
    } else {
      const auto dtype = to_dtype(t.scalar_type());
      if (!dtype) fail("parameter '" + path + "' has unsupported dtype");
      Op op;
      op.name = unique_name(path);
      op.type = op_types::kParam;
      op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
      op.param_bytes = op.outputs[0].bytes();
      op.layer = layer_of(owner);
      ref = TensorRef{out_.add_op(std::move(op)), 0};
      tensor_ops_.emplace(t.unsafeGetTensorImpl(), ref);
      if (at::isFloatingType(t.scalar_type())) requires_grad_.insert({ref.op.value, 0});
    }
    result.kind = Slot::Kind::Tensor;
    result.value = value;
    result.refs = {ref};
  } else if (value.isObject()) {
    fail("attribute '" + path + "' is a custom class object (" + value.type()->str() + "), not supported: " +
         describe(node));
  } else {
    result.kind = Slot::Kind::Const;  // a buffer or a plain attribute
    result.value = value;
    if (value.isTensor()) {  // names the op after the buffer
      const TensorRef ref = materialize(value.toTensor(), path);
      if (out_.op(ref.op).layer.empty()) out_.mutable_op(ref.op).layer = layer_of(owner);
    }
  }
  slots_[node->output()] = std::move(result);
}

// Evaluates a node whose result does not depend on the data: shape arithmetic,
// constant lists, attribute lookups.
void Importer::fold(Node* node) {
  torch::jit::Stack stack;
  for (const Value* in : node->inputs()) stack.push_back(ivalue(slot(in)));
  const auto kind = node->kind();
  try {
    // The structural prim ops have no registered operator to call.
    if (kind == c10::prim::ListConstruct) {
      const auto list_type = node->output()->type()->expect<c10::ListType>();
      c10::impl::GenericList list(list_type->getElementType());
      for (auto& v : stack) list.push_back(std::move(v));
      stack = {c10::IValue(std::move(list))};
    } else if (kind == c10::prim::ListUnpack) {
      auto list = stack.at(0).toListRef().vec();
      if (list.size() != node->outputs().size()) fail(describe(node) + " unpacks a list of the wrong size");
      stack = std::move(list);
    } else if (kind == c10::prim::TupleConstruct) {
      stack = {c10::ivalue::Tuple::create(std::move(stack))};
    } else if (kind == c10::prim::TupleUnpack) {
      auto elems = stack.at(0).toTupleRef().elements().vec();
      stack = std::move(elems);
    } else if (kind == c10::prim::TupleIndex) {
      const auto& elems = stack.at(0).toTupleRef().elements();
      int64_t i = stack.at(1).toInt();
      if (i < 0) i += static_cast<int64_t>(elems.size());
      stack = {elems.at(i)};
    } else {
      node->getOperation()(stack);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    fail("evaluating " + describe(node) + " failed: " + e.what());
  }
  PLACER_CHECK(stack.size() == node->outputs().size(), "folding ", describe(node), " returned ", stack.size(),
               " values for ", node->outputs().size(), " outputs");
  for (size_t i = 0; i < stack.size(); ++i) {
    Slot s;
    s.value = std::move(stack[i]);
    slots_[node->output(i)] = std::move(s);
  }
}

GradStatus Importer::grad_status(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& inputs,
                                 const std::vector<char>& needs_grad, std::string* reason) {
  c10::AutoGradMode enable_grad(true);
  torch::jit::Stack stack;
  std::vector<at::Tensor> leaves;
  bool any_float = false;
  const auto leaf = [&](const at::Tensor& t, bool needed) {
    if (!needed || !t.defined() || !at::isFloatingType(t.scalar_type())) return t;
    any_float = true;
    leaves.push_back(t.detach().clone().requires_grad_(true));
    return leaves.back();
  };
  size_t next = 0;  // needs_grad has one entry per tensor, lists flattened
  for (const auto& v : inputs) {
    if (v.isTensor()) {
      stack.push_back(leaf(v.toTensor(), needs_grad.at(next++)));
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorVector()) list.push_back(leaf(t, needs_grad.at(next++)));
      stack.push_back(c10::IValue(list));
    } else {
      stack.push_back(v);
    }
  }
  if (!any_float) return GradStatus::NoGradient;
  try {
    handle.callBoxed(stack);
  } catch (const std::exception& e) {
    *reason = e.what();
    const auto newline = reason->find('\n');
    if (newline != std::string::npos) reason->resize(newline);
    return GradStatus::NotImplemented;
  }
  // Some derivatives are declared but "not implemented": they fail only when
  // the backward runs, so run it, as the runtime's placer::backward will.
  std::vector<at::Tensor> outputs, grad_outputs;
  for (const auto& v : stack) {
    std::vector<at::Tensor> outs;
    if (v.isTensor()) outs.push_back(v.toTensor());
    if (v.isTensorList()) outs = v.toTensorVector();
    for (const auto& t : outs) {
      if (!t.defined() || !t.requires_grad()) continue;
      outputs.push_back(t);
      grad_outputs.push_back(at::ones_like(t));
    }
  }
  if (outputs.empty()) return GradStatus::NoGradient;
  try {
    torch::autograd::grad(outputs, leaves, grad_outputs, /*retain_graph=*/false, /*create_graph=*/false,
                          /*allow_unused=*/true);
  } catch (const std::exception& e) {
    *reason = e.what();
    const auto newline = reason->find('\n');
    if (newline != std::string::npos) reason->resize(newline);
    return GradStatus::NotImplemented;
  }
  return GradStatus::Differentiable;
}

void Importer::execute_aten(Node* node) {
  const auto& schema = node->schema();
  const c10::OperatorName& opname = schema.operator_name();
  const auto handle = c10::Dispatcher::singleton().findSchema(opname);
  if (!handle) fail(describe(node) + " is not an ATen dispatcher operator; the runtime cannot call it");
  if (schema.is_mutable()) {
    fail(describe(node) + " mutates an input in place and could not be made functional; not supported");
  }
  const std::string type = opname.name + (opname.overload_name.empty() ? "" : "." + opname.overload_name);
  const auto& arguments = schema.arguments();
  if (arguments.size() != node->inputs().size()) {
    fail(describe(node) + " has " + std::to_string(node->inputs().size()) + " inputs but its schema " +
         std::to_string(arguments.size()) + " arguments");
  }

  Op op;
  op.type = type;
  std::vector<c10::IValue> values;
  std::vector<char> needs_grad;  // per tensor argument (lists flattened)
  const auto input_index = [&](TensorRef ref) -> int64_t {
    needs_grad.push_back(requires_grad_.count({ref.op.value, ref.output}) ? 1 : 0);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ref) return static_cast<int64_t>(i);
    }
    op.inputs.push_back(ref);
    return static_cast<int64_t>(op.inputs.size() - 1);
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Value* in = node->input(i);
    const Slot& s = slot(in);
    const c10::IValue v = ivalue(s);
    values.push_back(v);
    const auto& arg = arguments[i];
    const auto where = [&] { return describe(node) + " argument '" + arg.name() + "'"; };
    if (s.kind == Slot::Kind::Tensor || (s.kind == Slot::Kind::Const && v.isTensor())) {
      op.args.push_back(Arg::tensor(input_index(tensor_ref(s, in))));
    } else if (s.kind == Slot::Kind::TensorList || (s.kind == Slot::Kind::Const && v.isTensorList())) {
      std::vector<int64_t> indices;
      if (s.kind == Slot::Kind::TensorList) {
        for (const auto& ref : s.refs) indices.push_back(input_index(ref));
      } else {
        for (const at::Tensor& t : v.toTensorVector()) indices.push_back(input_index(materialize(t, in->debugName())));
      }
      op.args.push_back(Arg::tensor_list(std::move(indices)));
    } else if (s.kind != Slot::Kind::Const) {
      fail(where() + " is a tuple or module, not supported");
    } else if (v.isNone()) {
      op.args.push_back(Arg::none());
    } else if (arg.real_type()->kind() == c10::TypeKind::ScalarTypeType ||
               (arg.real_type()->kind() == c10::TypeKind::OptionalType &&
                arg.real_type()->containedTypes().at(0)->kind() == c10::TypeKind::ScalarTypeType)) {
      const auto dtype = to_dtype(static_cast<at::ScalarType>(v.toInt()));
      if (!dtype) fail(where() + " names an unsupported dtype");
      op.args.push_back(Arg::scalar_type(*dtype));
    } else if (v.isBool()) {
      op.args.push_back(Arg::boolean(v.toBool()));
    } else if (v.isInt()) {
      op.args.push_back(Arg::integer(v.toInt()));
    } else if (v.isDouble()) {
      op.args.push_back(Arg::real(v.toDouble()));
    } else if (v.isIntList()) {
      op.args.push_back(Arg::int_list(v.toIntVector()));
    } else if (v.isDoubleList()) {
      op.args.push_back(Arg::real_list(v.toDoubleVector()));
    } else if (v.isBoolList()) {
      std::vector<int64_t> bools;
      for (bool b : v.toBoolList()) bools.push_back(b ? 1 : 0);
      op.args.push_back(Arg::bool_list(std::move(bools)));
    } else if (v.isString()) {
      op.args.push_back(Arg::string(v.toStringRef()));
    } else if (v.isDevice()) {
      op.args.push_back(Arg::device(v.toDevice().str()));
    } else {
      fail(where() + " has a value of type " + v.tagKind() + ", not supported");
    }
  }

  torch::jit::Stack stack = values;
  try {
    at::NoGradGuard no_grad;
    handle->callBoxed(stack);
  } catch (const std::exception& e) {
    std::string what = e.what();
    const auto newline = what.find('\n');
    if (newline != std::string::npos) what.resize(newline);
    fail("running " + describe(node) + " on the sample inputs failed: " + what);
  }
  if (stack.size() != node->outputs().size()) {
    fail(describe(node) + " returned " + std::to_string(stack.size()) + " values, the graph expects " +
         std::to_string(node->outputs().size()));
  }

  // Outputs: tensors and tensor lists are flattened into Op::outputs in order.
  std::vector<at::Tensor> produced;
  std::vector<Slot> out_slots(stack.size());
  for (size_t i = 0; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    Slot& s = out_slots[i];
    s.value = v;
    if (v.isTensor()) {
      s.kind = Slot::Kind::Tensor;
      produced.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      s.kind = Slot::Kind::TensorList;
      for (const at::Tensor& t : v.toTensorVector()) produced.push_back(t);
    } else if (type_has_tensor(node->output(i)->type()) && !v.isNone()) {
      fail(describe(node) + " output " + std::to_string(i) + " is a " + v.tagKind() + ", not supported");
    }
  }
  for (const at::Tensor& t : produced) {
    if (!t.defined()) fail(describe(node) + " returned an undefined tensor, not supported");
    const auto dtype = to_dtype(t.scalar_type());
    if (!dtype) fail(describe(node) + " produces dtype " + std::string(c10::toString(t.scalar_type())) + ", not supported");
    op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
  }
  if (op.outputs.empty()) fail(describe(node) + " produces no tensor; nothing to place");

  const std::string base = opname.name;
  op.flops = estimate_flops(base, values, produced);
  const std::string path = module_path(node);
  const std::string short_kind = base.substr(base.find("::") + 2);
  op.name = unique_name(path.empty() ? short_kind : path + "/" + short_kind);
  // The block the op belongs to: its module, or the enclosing one for leaf
  // modules such as a conv inside a ResNet block ("layer1.0").
  op.layer = path;
  if (const auto dot = path.rfind('.'); dot != std::string::npos) {
    bool leaf = false;
    if (auto frame = node->callstack()) {
      std::optional<torch::jit::ModuleInstanceInfo> last;
      for (auto f = frame; f; f = (*f)->callee()) {
        if (auto instance = (*f)->module_instance()) last = *instance;
      }
      if (last && last->class_type()) {
        leaf = true;
        for (const auto& attr : last->class_type()->containedTypes()) {
          if (attr->kind() == c10::TypeKind::ClassType) leaf = false;
        }
      }
    }
    if (leaf) op.layer = path.substr(0, dot);
  }

  const bool any_grad = std::find(needs_grad.begin(), needs_grad.end(), 1) != needs_grad.end();
  if (!options_.forward_only && any_grad) {
    std::string key = type + "|";
    for (char c : needs_grad) key.push_back(c ? '1' : '0');
    if (!grad_status_.count(key)) {
      std::string reason;
      grad_status_[key] = grad_status(*handle, values, needs_grad, &reason);
      grad_reason_[key] = reason;
    }
    op_grad_key_[op.name] = key;
  }

  const OpId id = out_.add_op(std::move(op));
  if (any_grad) {
    for (size_t j = 0; j < produced.size(); ++j) {
      if (at::isFloatingType(produced[j].scalar_type())) requires_grad_.insert({id.value, static_cast<int32_t>(j)});
    }
  }
  int32_t next = 0;
  for (Slot& s : out_slots) {
    if (s.kind == Slot::Kind::Tensor) {
      s.refs = {TensorRef{id, next++}};
    } else if (s.kind == Slot::Kind::TensorList) {
      for (size_t j = 0; j < s.value.toTensorVector().size(); ++j) s.refs.push_back(TensorRef{id, next++});
    }
  }
  for (size_t i = 0; i < out_slots.size(); ++i) slots_[node->output(i)] = std::move(out_slots[i]);
}

void Importer::visit(Node* node) {
  const auto kind = node->kind();
  if (kind == c10::prim::Constant) {
    Slot s;
    s.value = *torch::jit::toIValue(node->output());
    // An archive frozen before saving (torch.jit.freeze) has no parameters
    // left: its weights are constants. Float tensor constants are then the
    // trainable weights.
    if (parameters_.empty() && s.value.isTensor() && s.value.toTensor().defined() &&
        at::isFloatingType(s.value.toTensor().scalar_type()) && s.value.toTensor().numel() > 1) {
      const at::Tensor& t = s.value.toTensor();
      TensorRef ref;
      if (auto it = tensor_ops_.find(t.unsafeGetTensorImpl()); it != tensor_ops_.end()) {
        ref = it->second;
      } else {
        Op op;
        op.name = unique_name(node->output()->debugName());
        op.type = op_types::kParam;
        op.outputs.push_back(TensorSpec{t.sizes().vec(), *to_dtype(t.scalar_type())});
        op.param_bytes = op.outputs[0].bytes();
        ref = TensorRef{out_.add_op(std::move(op)), 0};
        tensor_ops_.emplace(t.unsafeGetTensorImpl(), ref);
        requires_grad_.insert({ref.op.value, 0});
      }
      s.kind = Slot::Kind::Tensor;
      s.refs = {ref};
    }
    slots_[node->output()] = std::move(s);
    return;
  }
  if (kind == c10::prim::GetAttr) return visit_get_attr(node);

  bool tracked = false;
  bool tensor_input = false;
  for (const Value* in : node->inputs()) {
    const Slot& s = slot(in);
    if (s.kind == Slot::Kind::Module) fail(describe(node) + " takes a module as an argument; not supported");
    tracked = tracked || s.tracked();
    tensor_input = tensor_input || type_has_tensor(in->type());
  }
  bool tensor_output = false;
  for (const Value* out : node->outputs()) tensor_output = tensor_output || type_has_tensor(out->type());

  if (kind == c10::prim::ListConstruct && tracked) {
    Slot s;
    s.kind = Slot::Kind::TensorList;
    std::vector<at::Tensor> list;
    for (const Value* in : node->inputs()) {
      const Slot& e = slot(in);
      if (!(e.kind == Slot::Kind::Tensor || (e.kind == Slot::Kind::Const && e.value.isTensor()))) {
        fail(describe(node) + " mixes tensors with None or other values; not supported");
      }
      s.refs.push_back(tensor_ref(e, in));
      list.push_back(e.value.toTensor());
    }
    s.value = c10::IValue(list);
    slots_[node->output()] = std::move(s);
    return;
  }
  if (kind == c10::prim::ListUnpack && tracked) {
    const Slot& list = slot(node->input());
    PLACER_CHECK(list.kind == Slot::Kind::TensorList, "ListUnpack of a non-list");
    if (list.refs.size() != node->outputs().size()) {
      fail(describe(node) + " unpacks " + std::to_string(node->outputs().size()) + " values from a list of " +
           std::to_string(list.refs.size()));
    }
    const auto tensors = list.value.toTensorVector();
    for (size_t i = 0; i < list.refs.size(); ++i) {
      Slot s;
      s.kind = Slot::Kind::Tensor;
      s.value = tensors[i];
      s.refs = {list.refs[i]};
      slots_[node->output(i)] = std::move(s);
    }
    return;
  }
  if (kind == c10::prim::TupleConstruct && tracked) {
    Slot s;
    s.kind = Slot::Kind::Tuple;
    for (const Value* in : node->inputs()) s.elems.push_back(slot(in));
    slots_[node->output()] = std::move(s);
    return;
  }
  if (kind == c10::prim::TupleUnpack && tracked) {
    const Slot tuple = slot(node->input());
    if (tuple.kind != Slot::Kind::Tuple || tuple.elems.size() != node->outputs().size()) {
      fail(describe(node) + " unpacks a value that is not a tuple of that size");
    }
    for (size_t i = 0; i < tuple.elems.size(); ++i) slots_[node->output(i)] = tuple.elems[i];
    return;
  }
  if (kind == c10::prim::TupleIndex && tracked) {
    const Slot tuple = slot(node->input(0));
    const c10::IValue index = ivalue(slot(node->input(1)));
    if (tuple.kind != Slot::Kind::Tuple || !index.isInt()) fail(describe(node) + " indexes a non-tuple");
    int64_t i = index.toInt();
    if (i < 0) i += static_cast<int64_t>(tuple.elems.size());
    if (i < 0 || i >= static_cast<int64_t>(tuple.elems.size())) fail(describe(node) + " index out of range");
    slots_[node->output()] = tuple.elems[i];
    return;
  }

  // Data-independent work is evaluated now: shape arithmetic (outputs hold no
  // tensor), or tensor math on constants only (e.g. NumToTensor results).
  if (!tensor_output || (!tracked && (tensor_input || !kind.is_aten()))) return fold(node);
  if (kind.is_aten()) return execute_aten(node);
  fail(describe(node) + " is not an ATen operator; not supported");
}

void Importer::add_loss() {
  // Backward starts at a scalar float loss: use the output if it is one,
  // else reduce the first floating-point output with aten::mean.
  for (const TensorRef& ref : graph_outputs_) {
    const TensorSpec& spec = out_.op(ref.op).outputs[ref.output];
    if (!is_floating(spec.dtype)) continue;
    if (spec.numel() == 1 && spec.shape.empty() && graph_outputs_.size() == 1) return;
    Op loss;
    loss.name = unique_name("loss");
    loss.type = "aten::mean";
    loss.inputs = {ref};
    loss.args = {Arg::tensor(0), Arg::none()};
    loss.outputs = {TensorSpec{{}, spec.dtype}};
    loss.flops = static_cast<double>(spec.numel());
    loss.layer = "loss";
    out_.add_op(std::move(loss));
    return;
  }
  fail("the model has no floating-point output to train on (use --forward-only for an inference graph)");
}

Graph Importer::run(const std::vector<SampleInput>& samples) {
  torch::jit::Module module = load();
  check_inputs(module, samples);
  module.eval();
  for (const auto& p : module.parameters(/*recurse=*/true)) parameters_.insert(p.unsafeGetTensorImpl());

  try {
    root_ = torch::jit::freeze_module(module, {}, /*freezeInterfaces=*/true, /*preserveParameters=*/true);
    graph_ = root_.get_method("forward").graph()->copy();
    torch::jit::Inline(*graph_);
    torch::jit::RemoveTensorMutation(graph_);
    torch::jit::RemoveListMutation(graph_);
    torch::jit::ConstantPropagationImmutableTypes(graph_);
    torch::jit::ConstantPooling(graph_);
    torch::jit::EliminateDeadCode(graph_);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    const auto newline = what.find('\n');
    if (newline != std::string::npos) what.resize(newline);
    fail("freezing/inlining the module failed: " + what);
  }
  reject_control_flow(graph_->block(), file_);

  out_.name = std::filesystem::path(file_).stem().string();
  out_.attrs["source"] = "torchscript";
  out_.attrs["file"] = std::filesystem::path(file_).filename().string();

  // Forward arguments become placer::input ops, in the forward's order.
  std::map<std::string, SampleInput> by_name;
  for (const auto& s : samples) by_name[s.name] = s;
  const auto& arguments = root_.get_method("forward").function().getSchema().arguments();
  {
    Slot self;
    self.kind = Slot::Kind::Module;
    self.module = root_;
    slots_[graph_->inputs()[0]] = std::move(self);
  }
  std::string input_specs;
  for (size_t i = 1; i < graph_->inputs().size(); ++i) {
    const Value* input = graph_->inputs()[i];
    const SampleInput& sample = by_name.at(arguments.at(i).name());
    const at::ScalarType type = to_scalar_type(sample.dtype);
    Op op;
    op.name = unique_name(sample.name);
    op.type = op_types::kInput;
    op.outputs = {TensorSpec{sample.shape, sample.dtype}};
    at::Tensor value;
    if (is_floating(sample.dtype)) {
      value = at::randn(sample.shape, generator_, at::TensorOptions().dtype(at::kFloat)).to(type);
    } else {
      const int64_t high = sample.dtype == DType::Bool ? 2 : integer_input_high(input);
      op.args.push_back(Arg::integer(high));
      value = at::randint(0, high, sample.shape, generator_, at::TensorOptions().dtype(type));
    }
    Slot s;
    s.kind = Slot::Kind::Tensor;
    s.value = value;
    s.refs = {TensorRef{out_.add_op(std::move(op)), 0}};
    slots_[input] = std::move(s);
    input_specs += (input_specs.empty() ? "" : " ") + sample.name + ":" + std::string(dtype_name(sample.dtype));
  }
  out_.attrs["inputs"] = input_specs;

  for (Node* node : graph_->nodes()) visit(node);

  // Graph outputs, flattened.
  std::function<void(const Slot&, const Value*)> collect = [&](const Slot& s, const Value* v) {
    if (s.kind == Slot::Kind::Tensor) graph_outputs_.push_back(s.refs.at(0));
    if (s.kind == Slot::Kind::TensorList) graph_outputs_.insert(graph_outputs_.end(), s.refs.begin(), s.refs.end());
    for (const auto& e : s.elems) collect(e, v);
  };
  for (const Value* v : graph_->outputs()) collect(slot(v), v);
  if (graph_outputs_.empty()) fail("forward() returns no tensor computed from its inputs or parameters");

  if (options_.forward_only) return std::move(out_);
  add_loss();
  const auto is_differentiable = [this](const Op& op) {
    auto key = op_grad_key_.find(op.name);
    if (key == op_grad_key_.end()) return true;
    return grad_status_.at(key->second) != GradStatus::NotImplemented;
  };
  try {
    return make_training_graph(out_, options_.learning_rate, is_differentiable);
  } catch (const GraphError& e) {
    std::string message = e.what();
    for (const auto& [name, key] : op_grad_key_) {
      if (message.find("'" + name + "'") != std::string::npos && !grad_reason_[key].empty()) {
        message += " (" + grad_reason_[key] + ")";
        break;
      }
    }
    throw GraphError(file_ + ": " + message);
  }
}

}  // namespace

Graph import_torchscript(const std::string& path, const std::vector<SampleInput>& inputs,
                         const ImportOptions& options) {
  if (!(options.learning_rate > 0.0)) throw InputError("learning rate must be positive");
  Importer importer(path, options);
  return importer.run(inputs);
}

}  // namespace placer
