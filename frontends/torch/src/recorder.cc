// The recorder both importers share: see recorder.h.
#include "recorder.h"
#include "output_size.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "placer/graphs/error.h"
#include "placer/graphs/training.h"

namespace placer::detail {

std::string first_line(std::string text) {
  const auto newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  return text;
}

namespace {

// The alias sets of a return or argument: its own, and for a list (Tensor(a)[]: chunk, split, unbind) its
// elements', which is where the schema puts them.
std::vector<c10::Symbol> alias_sets(const c10::AliasInfo& info) {
  std::vector<c10::Symbol> sets(info.beforeSets().begin(), info.beforeSets().end());
  for (const c10::AliasInfo& element : info.containedTypes())
    sets.insert(sets.end(), element.beforeSets().begin(), element.beforeSets().end());
  return sets;
}

bool writes(const c10::AliasInfo& info) {
  const auto& contained = info.containedTypes();
  return info.isWrite() || std::any_of(contained.begin(), contained.end(), [](const auto& e) { return e.isWrite(); });
}

// Which argument a returned view shares storage with (alias sets of the schema).
int64_t aliased_argument(const c10::FunctionSchema& schema, const c10::Argument& ret) {
  const auto* ret_alias = ret.alias_info();
  if (!ret_alias || writes(*ret_alias)) return -1;
  const std::vector<c10::Symbol> ret_sets = alias_sets(*ret_alias);
  for (size_t a = 0; a < schema.arguments().size(); ++a) {
    const auto* arg_alias = schema.arguments()[a].alias_info();
    if (!arg_alias) continue;
    for (const c10::Symbol& set : alias_sets(*arg_alias))
      if (std::find(ret_sets.begin(), ret_sets.end(), set) != ret_sets.end()) return static_cast<int64_t>(a);
  }
  return -1;
}

// Alias facts (Op::view_of) from the schema: per output, the Op::inputs
// index of the argument it shares storage with, or -1. A returned list
// (Tensor(a)[]) aliases as a whole.
std::vector<int32_t> schema_views(const c10::FunctionSchema& schema, const Op& op) {
  auto input_of_arg = [&](int64_t a) -> int32_t {
    if (a < 0 || a >= static_cast<int64_t>(op.args.size()) || op.args[a].kind != Arg::Kind::Tensor) return -1;
    return static_cast<int32_t>(op.args[a].i);
  };
  const auto& returns = schema.returns();
  std::vector<int32_t> views(op.outputs.size(), -1);
  auto returns_list = [&] {
    if (returns.size() != 1) return false;
    const c10::TypePtr& type = returns[0].type();
    const c10::TypePtr& base = type->kind() == c10::TypeKind::OptionalType ? type->containedType(0) : type;
    return base->kind() == c10::TypeKind::ListType;
  };
  if (returns_list()) {
    std::fill(views.begin(), views.end(), input_of_arg(aliased_argument(schema, returns[0])));
  } else {
    for (size_t r = 0; r < returns.size() && r < op.outputs.size(); ++r)
      views[r] = input_of_arg(aliased_argument(schema, returns[r]));
  }
  return views;
}

// A kernel whose outputs the meta device cannot size (LibTorch has no meta kernel for relu or conv, nor for
// tril_indices or max_unpool2d, whose sizes come from the file) runs with its allocations capped: the CPU
// allocator, wrapped once, refuses one over the limit this thread set (other threads allocate as before).
thread_local size_t tls_allocation_limit = 0;  // bytes; 0: none
thread_local size_t tls_refused_bytes = 0;     // the allocation it refused last

class CappedCpuAllocator final : public c10::Allocator {
 public:
  explicit CappedCpuAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) override {
    if (tls_allocation_limit != 0 && n > tls_allocation_limit) {
      tls_refused_bytes = n;
      throw std::length_error(detail::concat("allocation of ", n, " bytes over the limit of ", tls_allocation_limit));
    }
    return base_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return base_->raw_deleter(); }
  bool is_simple_data_ptr(const c10::DataPtr& data) const override { return base_->is_simple_data_ptr(data); }
  void copy_data(void* dest, const void* src, size_t n) const override { base_->copy_data(dest, src, n); }

 private:
  c10::Allocator* base_;
};

// While it lives, one allocation on this thread holds at most `bytes`.
class AllocationCap {
 public:
  explicit AllocationCap(size_t bytes) : saved_limit_(tls_allocation_limit), saved_refused_(tls_refused_bytes) {
    static const bool installed = [] {  // the wrapper lives as long as the process
      c10::SetAllocator(c10::DeviceType::CPU, new CappedCpuAllocator(c10::GetAllocator(c10::DeviceType::CPU)),
                        std::numeric_limits<uint8_t>::max());
      return true;
    }();
    (void)installed;
    tls_allocation_limit = bytes;
    tls_refused_bytes = 0;
  }
  ~AllocationCap() { tls_allocation_limit = saved_limit_, tls_refused_bytes = saved_refused_; }
  size_t refused() const { return tls_refused_bytes; }

 private:
  size_t saved_limit_, saved_refused_;
};

// One allocation of a kernel the meta device could not size: the bytes of 2^31 elements of 4 bytes.
constexpr size_t kMaxUnsizedAllocation = static_cast<size_t>(kMaxTensorElements) * 4;

template <class Ints>
std::string joined(const Ints& ints) {
  std::string s;
  for (const int64_t i : ints) s += (s.empty() ? "" : "x") + std::to_string(i);
  return s.empty() ? "scalar" : s;
}

// "" when every element of `t` lies in its storage, else why not. ATen's view ops do not check sizes and strides
// from a file (_reshape_alias, as_strided): the next kernel would read or write past the end of the storage.
std::string outside_storage(const at::Tensor& t) {
  if (!t.defined() || t.layout() != at::kStrided || !t.has_storage() || t.numel() == 0) return "";
  int64_t first = t.storage_offset(), last = first, end = 0;
  bool overflow = false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t step = 0;
    overflow |= __builtin_mul_overflow(t.size(d) - 1, t.stride(d), &step);
    overflow |= step < 0 ? __builtin_add_overflow(first, step, &first) : __builtin_add_overflow(last, step, &last);
  }
  overflow |= __builtin_add_overflow(last, 1, &end) || __builtin_mul_overflow(end, t.element_size(), &end);
  const auto bytes = static_cast<int64_t>(t.storage().nbytes());
  if (!overflow && first >= 0 && end <= bytes) return "";
  const std::string what = detail::concat("(", c10::toString(t.scalar_type()), " ", joined(t.sizes()), ", strides ",
                                          joined(t.strides()), ", offset ", t.storage_offset(), ") ");
  const std::string reach = overflow    ? std::string("reaches past byte 2^63")
                            : first < 0 ? detail::concat("starts at element ", first)
                                        : detail::concat("reaches byte ", end);
  return what + reach + detail::concat(" of a storage of ", bytes, " bytes");
}

}  // namespace

std::string fused_op_hint(const std::string& type) {
  static const std::map<std::string, std::string> kHints = {
      {"aten::_transformer_encoder_layer_fwd",
       "PyTorch took the fused inference fast path of nn.TransformerEncoderLayer; trace or export the model in "
       "training mode (model.train(), or with dropout=0.0 for deterministic results) so the layer is recorded "
       "as its reference ops, export it with torch.export (which records the reference ops), or import it with "
       "--forward-only"},
      {"aten::_native_multi_head_attention",
       "PyTorch took the fused inference fast path of nn.MultiheadAttention; trace or export the model in "
       "training mode (model.train()) so attention is recorded as its reference ops, or import it with "
       "--forward-only"},
  };
  const std::string base = type.substr(0, type.find('.'));
  auto it = kHints.find(base);
  return it == kHints.end() ? std::string() : it->second;
}

// ---------------------------------------------------------------- Recorder

Recorder::Recorder(std::string file, const ImportOptions& options)
    : file_(std::move(file)), options_(options), generator_(at::make_generator<at::CPUGeneratorImpl>(20240607)) {}

void Recorder::fail(const std::string& message) const { throw InputError(file_ + ": " + message); }

std::string Recorder::unique_name(const std::string& base) {
  int& count = name_counts_[base];
  std::string name = count == 0 ? base : base + "_" + std::to_string(count);
  ++count;
  while (out_.find(name)) name = base + "_" + std::to_string(count++);
  return name;
}

std::optional<TensorRef> Recorder::known(const at::Tensor& t) const {
  auto it = tensors_.find(t.unsafeGetTensorImpl());
  if (it == tensors_.end()) return std::nullopt;
  return it->second;
}

TensorRef Recorder::param(const at::Tensor& t, const std::string& name, const std::string& layer) {
  if (auto ref = known(t)) return *ref;
  const auto dtype = to_dtype(t.scalar_type());
  if (!dtype) fail("parameter '" + name + "' has unsupported dtype " + std::string(c10::toString(t.scalar_type())));
  Op op;
  op.name = unique_name(name);
  op.type = op_types::kParam;
  op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
  op.param_bytes = op.outputs[0].bytes();
  op.layer = layer;
  const TensorRef ref{out_.add_op(std::move(op)), 0};
  tensors_.emplace(t.unsafeGetTensorImpl(), ref);
  held_.push_back(t);
  if (at::isFloatingType(t.scalar_type())) requires_grad_.insert({ref.op.value, 0});
  return ref;
}

TensorRef Recorder::constant(const at::Tensor& t, const std::string& name, const std::string& layer) {
  if (auto ref = known(t)) return *ref;
  const auto dtype = to_dtype(t.scalar_type());
  if (!dtype) fail("constant '" + name + "' has unsupported dtype " + std::string(c10::toString(t.scalar_type())));
  Op op;
  op.name = unique_name(name.empty() ? "constant" : name);
  op.type = op_types::kInput;
  op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
  if (!is_floating(*dtype) && t.numel() > 0) {
    op.args.push_back(Arg::integer(std::max<int64_t>(1, t.max().item<int64_t>() + 1)));
  }
  op.layer = layer;
  const TensorRef ref{out_.add_op(std::move(op)), 0};
  tensors_.emplace(t.unsafeGetTensorImpl(), ref);
  held_.push_back(t);
  return ref;
}

TensorRef Recorder::input(const std::string& name, const at::Tensor& value, int64_t high) {
  const auto dtype = to_dtype(value.scalar_type());
  if (!dtype) fail("input '" + name + "' has unsupported dtype " + std::string(c10::toString(value.scalar_type())));
  Op op;
  op.name = unique_name(name);
  op.type = op_types::kInput;
  op.outputs = {TensorSpec{value.sizes().vec(), *dtype}};
  if (!is_floating(*dtype)) op.args.push_back(Arg::integer(high));
  return TensorRef{out_.add_op(std::move(op)), 0};
}

Recorder::GradStatus Recorder::grad_status(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& inputs,
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
    } else if (v.isList() && v.toListRef().size() > 0 &&
               v.type()->containedType(0)->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> list;
      for (const auto& e : v.toListRef()) {
        list.push_back(e.isNone() ? std::optional<at::Tensor>()
                                  : std::optional<at::Tensor>(leaf(e.toTensor(), needs_grad.at(next++))));
      }
      stack.push_back(c10::IValue(list));
    } else {
      stack.push_back(v);
    }
  }
  if (!any_float) return GradStatus::NoGradient;
  try {
    handle.callBoxed(stack);
  } catch (const std::exception& e) {
    *reason = first_line(e.what());
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
    *reason = first_line(e.what());
    return GradStatus::NotImplemented;
  }
  return GradStatus::Differentiable;
}

namespace {

bool is_scalar_type_argument(const c10::Argument& arg) {
  const c10::TypePtr& type = arg.real_type();
  if (type->kind() == c10::TypeKind::ScalarTypeType) return true;
  return type->kind() == c10::TypeKind::OptionalType &&
         type->containedTypes().at(0)->kind() == c10::TypeKind::ScalarTypeType;
}

// A constant (non-tensor) argument of a call as an Arg; `rec` fails on an
// unsupported value, naming `where` and the argument.
Arg constant_arg(const Recorder& rec, const c10::Argument& arg, const c10::IValue& v, const std::string& where) {
  const auto argument = [&] { return where + " argument '" + arg.name() + "'"; };
  if (v.isNone()) return Arg::none();
  if (is_scalar_type_argument(arg)) {
    const auto dtype = to_dtype(static_cast<at::ScalarType>(v.toInt()));
    if (!dtype) rec.fail(argument() + " names an unsupported dtype");
    return Arg::scalar_type(*dtype);
  }
  if (v.isBool()) return Arg::boolean(v.toBool());
  if (v.isInt()) return Arg::integer(v.toInt());
  if (v.isDouble()) return Arg::real(v.toDouble());
  if (v.isIntList()) return Arg::int_list(v.toIntVector());
  if (v.isDoubleList()) return Arg::real_list(v.toDoubleVector());
  if (v.isBoolList()) {
    std::vector<int64_t> bools;
    for (bool b : v.toBoolList()) bools.push_back(b ? 1 : 0);
    return Arg::bool_list(std::move(bools));
  }
  if (v.isString()) return Arg::string(v.toStringRef());
  if (v.isDevice()) return Arg::device(v.toDevice().str());
  if (v.isTensorList() || v.isList()) {
    rec.fail(argument() + " is an empty or unsupported list (" + v.type()->str() + "), not supported");
  }
  rec.fail(argument() + " has a value of type " + v.tagKind() + ", not supported");
}

}  // namespace

void Recorder::record_arguments(const c10::FunctionSchema& schema, const std::vector<CallArg>& args,
                                const std::string& where, Op& op, std::vector<char>& needs_grad) {
  const auto input_index = [&](TensorRef ref) -> int64_t {
    needs_grad.push_back(requires_grad_.count({ref.op.value, ref.output}) ? 1 : 0);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ref) return static_cast<int64_t>(i);
    }
    op.inputs.push_back(ref);
    return static_cast<int64_t>(op.inputs.size() - 1);
  };
  const auto& arguments = schema.arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& v = args[i].value;
    const auto& refs = args[i].refs;
    if (v.isTensor()) {
      // An importer that reads a number as a tensor (a file's symbolic float naming one) must not abort.
      if (refs.size() != 1 || !refs[0]) fail(where + " argument '" + arguments[i].name() + "': no op produces it");
      op.args.push_back(Arg::tensor(input_index(*refs[0])));
    } else if (!refs.empty()) {  // Tensor[] or Tensor?[]
      std::vector<int64_t> indices;
      for (const auto& ref : refs) indices.push_back(ref ? input_index(*ref) : -1);
      op.args.push_back(Arg::tensor_list(std::move(indices)));
    } else {
      op.args.push_back(constant_arg(*this, arguments[i], v, where));
    }
  }
}

namespace {

// Runs the kernel on `stack`; with `capped`, each of its allocations is capped (see AllocationCap).
void call_kernel(const Recorder& rec, const c10::OperatorHandle& handle, torch::jit::Stack& stack,
                 const std::string& where, bool capped) {
  std::optional<AllocationCap> cap;
  if (capped) cap.emplace(kMaxUnsizedAllocation);
  try {
    at::NoGradGuard no_grad;
    handle.callBoxed(stack);
  } catch (const std::exception& e) {
    // (The refusal may reach here wrapped in a c10::Error, so it is read from the cap, not the exception.)
    if (cap && cap->refused() != 0)
      rec.fail(detail::concat(where, ": running it allocates ", cap->refused(), " bytes at once, over the limit of ",
                              kMaxUnsizedAllocation, " (2^31 elements of 4 bytes) for one tensor"));
    rec.fail("running " + where + " on the sample inputs failed: " + first_line(e.what()));
  }
}

// Each output lies in its storage; one the meta device could not size (`unsized`) and with memory of its
// own holds at most 2^31 elements, as a sized one would.
void check_produced(const Recorder& rec, const std::vector<at::Tensor>& produced,
                    const std::vector<c10::IValue>& values, const std::string& where, bool unsized) {
  for (size_t k = 0; k < produced.size(); ++k) {
    if (const std::string why = outside_storage(produced[k]); !why.empty())
      rec.fail(detail::concat(where, ": output ", k, " ", why));
    if (unsized && produced[k].defined() && produced[k].numel() > kMaxTensorElements &&
        !shares_storage(produced[k], values))
      rec.fail(detail::concat(where, ": an output holds ", produced[k].numel(),
                              " elements, over the limit of 2^31 for one tensor"));
  }
}

}  // namespace

std::vector<at::Tensor> Recorder::run_kernel(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values,
                                             const std::string& where, RecordedCall& result,
                                             std::vector<size_t>& counts) const {
  // The file gives the sizes (of aten::ones, full, repeat, arange, expand then clone): an output is capped
  // as an --input is, before the kernel allocates it; an op the meta device cannot run, while it runs.
  const std::optional<OutputSize> size = dry_run_outputs(handle, values);
  if (size && size->largest_elements > static_cast<double>(kMaxTensorElements))
    fail(detail::concat(where, ": an output would hold ", size->largest_elements,
                        " elements, over the limit of 2^31 for one tensor"));
  torch::jit::Stack stack = values;
  call_kernel(*this, handle, stack, where, !size);
  // Outputs: tensors and tensor lists are flattened into Op::outputs in order.
  std::vector<at::Tensor> produced;
  result.returns = stack;
  result.refs.resize(stack.size());
  counts.assign(stack.size(), 0);
  for (size_t i = 0; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      produced.push_back(v.toTensor());
      counts[i] = 1;
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) produced.push_back(t);
      counts[i] = v.toTensorVector().size();
    }
  }
  check_produced(*this, produced, values, where, !size);
  return produced;
}

void Recorder::record_outputs(const std::vector<at::Tensor>& produced, const std::string& where, Op& op) const {
  for (const at::Tensor& t : produced) {
    if (!t.defined()) fail(where + " returned an undefined tensor, not supported");
    const auto dtype = to_dtype(t.scalar_type());
    if (!dtype) fail(where + " produces dtype " + std::string(c10::toString(t.scalar_type())) + ", not supported");
    op.outputs.push_back(TensorSpec{t.sizes().vec(), *dtype});
  }
  if (op.outputs.empty()) fail(where + " produces no tensor; nothing to place");
}

void Recorder::check_gradient(const c10::OperatorHandle& handle, const Op& op, const std::vector<c10::IValue>& values,
                              const std::vector<char>& needs_grad) {
  std::string key = op.type + "|";
  for (char c : needs_grad) key.push_back(c ? '1' : '0');
  if (!grad_status_.count(key)) {
    std::string reason;
    grad_status_[key] = grad_status(handle, values, needs_grad, &reason);
    if (const std::string hint = fused_op_hint(op.type); !hint.empty()) reason += "; " + hint;
    grad_reason_[key] = reason;
  }
  op_grad_key_[op.name] = key;
}

RecordedCall Recorder::call(const c10::OperatorHandle& handle, const std::vector<CallArg>& args,
                            const std::string& where, const std::string& name, const std::string& layer) {
  const c10::FunctionSchema& schema = handle.schema();
  const c10::OperatorName& opname = schema.operator_name();
  const std::string type = opname.name + (opname.overload_name.empty() ? "" : "." + opname.overload_name);
  PLACER_CHECK(schema.arguments().size() == args.size(), "call of ", type, " with ", args.size(), " arguments");

  Op op;
  op.type = type;
  std::vector<char> needs_grad;  // per tensor argument (lists flattened)
  record_arguments(schema, args, where, op, needs_grad);
  std::vector<c10::IValue> values;
  for (const CallArg& arg : args) values.push_back(arg.value);

  RecordedCall result;
  std::vector<size_t> counts;  // tensors per return
  const std::vector<at::Tensor> produced = run_kernel(handle, values, where, result, counts);
  record_outputs(produced, where, op);
  op.view_of = schema_views(schema, op);
  for (size_t k = 0; k < op.view_of.size() && k < produced.size(); ++k)
    if (op.view_of[k] >= 0 && !shares_storage(produced[k], values)) op.view_of[k] = -1;  // copied: its own memory
  op.flops = estimate_flops(opname.name, values, produced);
  op.name = unique_name(name);
  op.layer = layer;

  const bool any_grad = std::find(needs_grad.begin(), needs_grad.end(), 1) != needs_grad.end();
  if (!options_.forward_only && any_grad) check_gradient(handle, op, values, needs_grad);

  result.op = out_.add_op(std::move(op));
  if (any_grad) {
    for (size_t j = 0; j < produced.size(); ++j) {
      if (at::isFloatingType(produced[j].scalar_type()))
        requires_grad_.insert({result.op.value, static_cast<int32_t>(j)});
    }
  }
  int32_t next = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    for (size_t j = 0; j < counts[i]; ++j) result.refs[i].push_back(TensorRef{result.op, next++});
  }
  return result;
}

TensorRef Recorder::add_loss(const std::vector<TensorRef>& outputs) {
  // Backward starts at a scalar float loss: the one output that is a 0-dim float (a model returning
  // (logits, loss) trains on its loss: it trained on mean(logits)), else the first floating-point output
  // reduced with aten::mean.
  std::vector<TensorRef> scalars;
  for (const TensorRef& ref : outputs) {
    const TensorSpec& spec = out_.op(ref.op).outputs[ref.output];
    if (is_floating(spec.dtype) && spec.shape.empty()) scalars.push_back(ref);
  }
  if (scalars.size() == 1) return scalars[0];
  for (const TensorRef& ref : outputs) {
    const TensorSpec& spec = out_.op(ref.op).outputs[ref.output];
    if (!is_floating(spec.dtype)) continue;
    Op loss;
    loss.name = unique_name("loss");
    loss.type = "aten::mean";
    loss.inputs = {ref};
    loss.args = {Arg::tensor(0), Arg::none()};
    loss.outputs = {TensorSpec{{}, spec.dtype}};
    loss.flops = static_cast<double>(spec.numel());
    loss.layer = "loss";
    return TensorRef{out_.add_op(std::move(loss)), 0};
  }
  fail("the model has no floating-point output to train on (use --forward-only for an inference graph)");
}

namespace {

// The ops that `roots` depend on, in the original order, with refs renumbered.
// Work nothing needs (a buffer's in-place counter, an unused branch) goes.
Graph live_subgraph(const Graph& g, const std::vector<TensorRef>& roots, TensorRef* follow) {
  std::vector<char> live(g.size(), 0);
  std::vector<int32_t> stack;
  for (const TensorRef& r : roots) stack.push_back(r.op.value);
  while (!stack.empty()) {
    const int32_t id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = 1;
    for (const TensorRef& in : g.op(OpId(id)).inputs) stack.push_back(in.op.value);
  }
  Graph out;
  out.name = g.name;
  out.attrs = g.attrs;
  std::vector<int32_t> remap(g.size(), -1);
  for (int32_t i = 0; i < static_cast<int32_t>(g.size()); ++i) {
    if (!live[i]) continue;
    Op op = g.op(OpId(i));
    for (TensorRef& in : op.inputs) in.op = OpId(remap[in.op.value]);
    remap[i] = out.add_op(std::move(op)).value;
  }
  if (follow) follow->op = OpId(remap[follow->op.value]);  // a root, so live
  return out;
}

}  // namespace

Graph Recorder::finish(const std::vector<TensorRef>& outputs, std::optional<TensorRef> loss) {
  if (outputs.empty() && !loss) fail("the program returns no tensor computed from its inputs or parameters");
  std::vector<TensorRef> roots = outputs;
  TensorRef chosen;
  if (!options_.forward_only) roots.push_back(chosen = loss ? *loss : add_loss(outputs));
  const Graph live = live_subgraph(out_, roots, options_.forward_only ? nullptr : &chosen);
  if (options_.forward_only) return live;
  const auto is_differentiable = [this](const Op& op) {
    auto key = op_grad_key_.find(op.name);
    if (key == op_grad_key_.end()) return true;
    return grad_status_.at(key->second) != GradStatus::NotImplemented;
  };
  try {
    // The loss named: the last scalar sink could be another output (return loss, y.mean()).
    return make_training_graph(live, options_.learning_rate, is_differentiable, chosen.op);
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

}  // namespace placer::detail
