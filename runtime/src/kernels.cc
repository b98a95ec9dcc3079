// Graph ops as real ATen calls: schema lookup, argument binding, the special
// placer:: ops (input, param, backward, sgd).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "internal.h"
#include "placer/graphs/error.h"

namespace placer {

std::string shape_string(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? "," : "") << sizes[i];
  out << "]";
  return out.str();
}
std::string shape_string(const std::vector<int64_t>& sizes) { return shape_string(at::IntArrayRef(sizes)); }

namespace {

[[noreturn]] void bad_op(const Op& op, const std::string& what) {
  throw GraphError("op '" + op.name + "' (" + op.type + "): " + what);
}

c10::TypeKind base_kind(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::OptionalType) return type->containedType(0)->kind();
  return type->kind();
}

c10::TypePtr unwrap_optional(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::OptionalType ? type->containedType(0) : type;
}

// A constant Arg as the IValue the schema type expects (ints where it wants
// floats and so on: builders and importers write what they know).
c10::IValue constant_ivalue(const Op& op, const Arg& arg, const c10::Argument& schema_arg) {
  const c10::TypePtr type = unwrap_optional(schema_arg.type());
  const c10::TypeKind kind = type->kind();
  switch (arg.kind) {
    case Arg::Kind::None: return c10::IValue();
    case Arg::Kind::Int:
      if (kind == c10::TypeKind::FloatType) return c10::IValue(static_cast<double>(arg.i));
      if (kind == c10::TypeKind::BoolType) return c10::IValue(arg.i != 0);
      if (kind == c10::TypeKind::ListType) {
        // "int[2] stride=1" style broadcast of a single int.
        return c10::IValue(std::vector<int64_t>{arg.i});
      }
      return c10::IValue(arg.i);
    case Arg::Kind::Double:
      if (kind == c10::TypeKind::IntType) return c10::IValue(static_cast<int64_t>(arg.d));
      return c10::IValue(arg.d);
    case Arg::Kind::Bool:
      if (kind == c10::TypeKind::IntType) return c10::IValue(static_cast<int64_t>(arg.b));
      return c10::IValue(arg.b);
    case Arg::Kind::Ints:
      if (kind == c10::TypeKind::ListType && type->containedType(0)->kind() == c10::TypeKind::FloatType)
        return c10::IValue(std::vector<double>(arg.ints.begin(), arg.ints.end()));
      if (kind == c10::TypeKind::ListType && type->containedType(0)->kind() == c10::TypeKind::BoolType) {
        c10::List<bool> bools;
        for (int64_t v : arg.ints) bools.push_back(v != 0);
        return c10::IValue(bools);
      }
      return c10::IValue(arg.ints);
    case Arg::Kind::Doubles: return c10::IValue(arg.doubles);
    case Arg::Kind::Bools: {
      c10::List<bool> bools;
      for (int64_t v : arg.ints) bools.push_back(v != 0);
      return c10::IValue(bools);
    }
    case Arg::Kind::String: return c10::IValue(arg.s);
    case Arg::Kind::ScalarType:
      if (arg.i < 0 || arg.i > static_cast<int64_t>(DType::Bool))
        bad_op(op, "scalar type " + std::to_string(arg.i) + " is unknown");
      return c10::IValue(static_cast<int64_t>(to_scalar_type(static_cast<DType>(arg.i))));
    default: break;
  }
  bad_op(op,
         std::string("argument '") + schema_arg.name() + "' of kind " + arg_kind_name(arg.kind) + " is not a constant");
}

bool is_tensor_type(const c10::TypePtr& type) { return base_kind(type) == c10::TypeKind::TensorType; }

uint64_t op_seed(const Op& op, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : op.name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h & 0x7fffffffffffffffull;
}

// A list argument's tensors. A list the kernel writes (_foreach_add_: Tensor(a!)[]) gets private copies, as a
// single tensor does: every op functional.
at::Tensor list_element(const ArgSlot& slot, const std::vector<at::Tensor>& inputs, int64_t i) {
  if (i < 0) return at::Tensor();
  return slot.cloned ? inputs[i].clone() : inputs[i];
}

c10::List<at::Tensor> tensor_list(const ArgSlot& slot, const std::vector<at::Tensor>& inputs) {
  c10::List<at::Tensor> list;
  list.reserve(slot.inputs.size());
  for (int64_t i : slot.inputs) list.push_back(list_element(slot, inputs, i));
  return list;
}

c10::List<c10::optional<at::Tensor>> optional_tensor_list(const ArgSlot& slot, const std::vector<at::Tensor>& inputs) {
  c10::List<c10::optional<at::Tensor>> list;
  list.reserve(slot.inputs.size());
  for (int64_t i : slot.inputs)
    list.push_back(i >= 0 ? c10::optional<at::Tensor>(list_element(slot, inputs, i)) : c10::optional<at::Tensor>());
  return list;
}

// Whether the kernel writes this argument: Tensor(a!), or a list of them (Tensor(a!)[]).
bool written(const c10::AliasInfo* alias) {
  if (!alias) return false;
  const auto& elems = alias->containedTypes();
  return alias->isWrite() || std::any_of(elems.begin(), elems.end(), [](const auto& e) { return e.isWrite(); });
}

}  // namespace

OpCall bind_op(const Op& op) {
  OpCall call;
  const std::string& type = op.type;
  const size_t ns = type.find("::");
  if (ns == std::string::npos) bad_op(op, "type is not a schema name (expected ns::name[.overload])");
  const size_t dot = type.find('.', ns + 2);
  const std::string name = type.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : type.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) bad_op(op, "no ATen operator with this schema name in this LibTorch");
  call.handle = *handle;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& params = schema.arguments();
  if (op.args.size() > params.size())
    bad_op(op, "has " + std::to_string(op.args.size()) + " args, the schema " + c10::toString(schema) + " takes " +
                   std::to_string(params.size()));
  call.constants.resize(params.size());
  call.slots.resize(params.size());
  for (size_t a = 0; a < params.size(); ++a) {
    const c10::Argument& p = params[a];
    ArgSlot& slot = call.slots[a];
    slot.cloned = written(p.alias_info());
    if (a >= op.args.size()) {
      if (!p.default_value()) bad_op(op, std::string("argument '") + p.name() + "' is missing and has no default");
      call.constants[a] = *p.default_value();
      continue;
    }
    const Arg& arg = op.args[a];
    auto check_input = [&](int64_t i) {
      if (i < 0 || i >= static_cast<int64_t>(op.inputs.size()))
        bad_op(op, std::string("argument '") + p.name() + "' refers to input " + std::to_string(i) + " of " +
                       std::to_string(op.inputs.size()));
    };
    switch (arg.kind) {
      case Arg::Kind::Tensor:
        check_input(arg.i);
        slot.from = ArgSlot::From::Tensor;
        slot.input = arg.i;
        break;
      case Arg::Kind::TensorList: {
        for (int64_t i : arg.ints)
          if (i >= 0) check_input(i);
        slot.inputs = arg.ints;
        const c10::TypePtr list = unwrap_optional(p.type());
        const bool optional_elems =
            list->kind() == c10::TypeKind::ListType && list->containedType(0)->kind() == c10::TypeKind::OptionalType;
        slot.from = optional_elems ? ArgSlot::From::OptionalTensorList : ArgSlot::From::TensorList;
        if (!optional_elems)
          for (int64_t i : arg.ints)
            if (i < 0)
              bad_op(op, std::string("argument '") + p.name() + "' holds None, but its tensors are not optional");
        break;
      }
      case Arg::Kind::Device: slot.from = ArgSlot::From::Device; break;
      default:
        if (is_tensor_type(p.type()) && arg.kind != Arg::Kind::None)
          bad_op(op, std::string("argument '") + p.name() + "' needs a tensor, got " + arg_kind_name(arg.kind));
        call.constants[a] = constant_ivalue(op, arg, p);
    }
  }
  return call;
}

std::vector<at::Tensor> call_op(const OpCall& call, const Op& op, const std::vector<at::Tensor>& inputs,
                                const c10::Device& device) {
  torch::jit::Stack stack;
  stack.reserve(call.slots.size());
  for (size_t a = 0; a < call.slots.size(); ++a) {
    const ArgSlot& slot = call.slots[a];
    switch (slot.from) {
      case ArgSlot::From::Constant: stack.push_back(call.constants[a]); break;
      case ArgSlot::From::Tensor:
        stack.emplace_back(slot.cloned ? inputs[slot.input].clone() : inputs[slot.input]);
        break;
      case ArgSlot::From::TensorList: stack.emplace_back(tensor_list(slot, inputs)); break;
      case ArgSlot::From::OptionalTensorList: stack.emplace_back(optional_tensor_list(slot, inputs)); break;
      case ArgSlot::From::Device: stack.emplace_back(device); break;
    }
  }
  call.handle->callBoxed(&stack);
  std::vector<at::Tensor> outputs;
  outputs.reserve(op.outputs.size());
  for (const c10::IValue& v : stack) {
    if (v.isTensor()) {
      outputs.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) outputs.push_back(t);
    } else if (v.isTuple()) {
      for (const c10::IValue& e : v.toTupleRef().elements())
        outputs.push_back(e.isTensor() ? e.toTensor() : at::Tensor());
    } else if (v.isInt()) {
      outputs.push_back(at::scalar_tensor(v.toInt(), at::TensorOptions().dtype(at::kLong).device(device)));
    } else if (v.isDouble()) {
      outputs.push_back(at::scalar_tensor(v.toDouble(), at::TensorOptions().dtype(at::kDouble).device(device)));
    } else if (v.isBool()) {
      outputs.push_back(at::scalar_tensor(v.toBool(), at::TensorOptions().dtype(at::kBool).device(device)));
    } else {
      outputs.emplace_back();
    }
  }
  return outputs;
}

at::Tensor make_input(const Op& op, uint64_t seed, const c10::Device& device) {
  PLACER_CHECK(op.outputs.size() == 1, "input op has one output");
  const TensorSpec& spec = op.outputs[0];
  auto gen = at::make_generator<at::CPUGeneratorImpl>(op_seed(op, seed));
  const at::ScalarType st = to_scalar_type(spec.dtype);
  at::Tensor t;
  if (is_floating(spec.dtype)) {
    t = at::randn(spec.shape, gen, at::TensorOptions().dtype(at::kFloat)).to(st);
  } else if (spec.dtype == DType::Bool) {
    t = at::randint(2, spec.shape, gen, at::TensorOptions().dtype(at::kLong)).to(st);
  } else {
    int64_t high = 1;
    if (!op.args.empty() && op.args[0].kind == Arg::Kind::Int) high = std::max<int64_t>(1, op.args[0].i);
    t = at::randint(high, spec.shape, gen, at::TensorOptions().dtype(at::kLong)).to(st);
  }
  return device.is_cpu() ? t : t.to(device);
}

at::Tensor make_param(const Op& op, uint64_t seed, const c10::Device& device) {
  PLACER_CHECK(op.outputs.size() == 1, "param op has one output");
  const TensorSpec& spec = op.outputs[0];
  auto gen = at::make_generator<at::CPUGeneratorImpl>(op_seed(op, seed));
  at::Tensor t;
  if (is_floating(spec.dtype)) {
    // Uniform in +-1/sqrt(fan_in), the default of torch.nn's linear and conv layers.
    const int64_t numel = std::max<int64_t>(1, spec.numel());
    const int64_t fan_in =
        spec.shape.size() >= 2 ? numel / std::max<int64_t>(1, spec.shape[0]) : (spec.shape.empty() ? 1 : spec.shape[0]);
    const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, fan_in)));
    t = (at::rand(spec.shape, gen, at::TensorOptions().dtype(at::kFloat)) * (2 * bound) - bound)
            .to(to_scalar_type(spec.dtype));
  } else {
    t = at::zeros(spec.shape, at::TensorOptions().dtype(to_scalar_type(spec.dtype)));
  }
  return device.is_cpu() ? t : t.to(device);
}

namespace {

bool engine_backward() {
  static const bool on = [] {
    const char* v = std::getenv("PLACER_AUTOGRAD_ENGINE");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

}  // namespace

std::vector<at::Tensor> run_backward(const Op& backward, const Op& forward, ForwardState& state,
                                     const std::vector<at::Tensor>& inputs, bool is_loss, bool retain_graph) {
  const std::vector<int64_t>& grad_of_output =
      backward.args.size() > 0 ? backward.args[0].ints : std::vector<int64_t>{};
  const std::vector<int64_t>& grad_for_input =
      backward.args.size() > 1 ? backward.args[1].ints : std::vector<int64_t>{};
  // Incoming gradients summed per forward output.
  std::vector<at::Tensor> grad_out(state.outputs.size());
  for (size_t m = 1; m < inputs.size(); ++m) {
    const int64_t k = grad_of_output[m - 1];
    at::Tensor g = inputs[m];
    grad_out[k] = grad_out[k].defined() ? grad_out[k] + g : g;
  }
  std::vector<at::Tensor> outs, grads;
  for (size_t k = 0; k < state.outputs.size(); ++k) {
    const at::Tensor& y = state.outputs[k];
    if (!y.defined() || !y.requires_grad()) continue;
    if (!grad_out[k].defined()) {
      if (!is_loss) continue;  // zeros: contributes nothing
      grad_out[k] = at::ones_like(y);
    }
    outs.push_back(y);
    grads.push_back(grad_out[k]);
  }
  std::vector<at::Tensor> leaves;
  leaves.reserve(grad_for_input.size());
  for (int64_t i : grad_for_input) leaves.push_back(state.leaves[i]);
  std::vector<at::Tensor> result(grad_for_input.size());
  if (!outs.empty()) {
    if (engine_backward()) {  // PLACER_AUTOGRAD_ENGINE=1: the engine, for comparison (bench/results/gpu_*.md)
      at::AutoGradMode grad_mode(true);
      result = torch::autograd::grad(outs, leaves, grads, retain_graph, false, /*allow_unused=*/true);
    } else {
      result = grad_in_this_thread(outs, grads, leaves, retain_graph);
    }
  }
  for (size_t j = 0; j < result.size(); ++j)
    if (!result[j].defined()) result[j] = at::zeros_like(leaves[j]);
  return result;
}

void run_sgd(const Op& sgd, const std::vector<at::Tensor>& inputs) {
  const double lr = sgd.args.empty() ? 0.01 : (sgd.args[0].kind == Arg::Kind::Int ? sgd.args[0].i : sgd.args[0].d);
  if (inputs.size() < 2) return;
  at::NoGradGuard no_grad;
  at::Tensor g = inputs[1];
  for (size_t m = 2; m < inputs.size(); ++m) g = g + inputs[m];
  at::Tensor param = inputs[0];
  param.sub_(g, lr);
}

// A forward op whose placer::backward runs later: its kernel runs under
// autograd on detached leaves, `state` keeps the leaves and the attached
// outputs, and the step gets the outputs detached.
std::vector<at::Tensor> run_kept_forward(const OpPlan& p, const Op& op, const std::vector<at::Tensor>& in,
                                         const c10::Device& device, ForwardState& state) {
  state.leaves.assign(in.size(), at::Tensor());
  std::vector<at::Tensor> args = in;
  for (int32_t pos : p.leaf_inputs) {
    state.leaves[pos] = in[pos].detach().requires_grad_(true);
    args[pos] = state.leaves[pos];
  }
  std::vector<at::Tensor> out;
  {
    at::AutoGradMode grad_mode(true);
    out = call_op(*p.call, op, args, device);
  }
  state.outputs = out;
  for (at::Tensor& t : out)
    if (t.defined() && t.requires_grad()) t = t.detach();
  return out;
}

}  // namespace placer
