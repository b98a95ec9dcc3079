// TorchScript importer: executing the graph's nodes. Structural nodes (lists
// and tuples of tracked tensors) are one rule per node kind; data-independent
// work is folded; every other ATen node is one call through the Recorder.
#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <unordered_map>

#include "placer/graphs/error.h"
#include "torchscript_importer.h"

namespace placer::detail {

using torch::jit::Node;
using torch::jit::Value;

void Importer::visit_constant(Node* node) {
  Slot s;
  s.value = *torch::jit::toIValue(node->output());
  // An archive frozen before saving (torch.jit.freeze) has no parameters
  // left: its weights are constants. Float tensor constants are then the
  // trainable weights.
  if (!any_parameters_ && s.value.isTensor() && s.value.toTensor().defined() &&
      at::isFloatingType(s.value.toTensor().scalar_type()) && s.value.toTensor().numel() > 1) {
    const TensorRef ref = rec_.param(s.value.toTensor(), node->output()->debugName(), "");
    s.kind = Slot::Kind::Tensor;
    s.refs = {ref};
  }
  slots_[node->output()] = std::move(s);
}

// Whether some input is a tracked tensor (or holds one); `tensor_input`: some
// input's type holds a tensor.
bool Importer::tracked_inputs(Node* node, bool* tensor_input) {
  bool tracked = false;
  for (const Value* in : node->inputs()) {
    const Slot& s = slot(in);
    if (s.kind == Slot::Kind::Module) fail(describe(node) + " takes a module as an argument; not supported");
    tracked = tracked || s.tracked();
    *tensor_input = *tensor_input || type_has_tensor(in->type());
  }
  return tracked;
}

void Importer::visit_list_construct(Node* node) {
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
}

void Importer::visit_list_unpack(Node* node) {
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
}

void Importer::visit_tuple_construct(Node* node) {
  Slot s;
  s.kind = Slot::Kind::Tuple;
  for (const Value* in : node->inputs()) s.elems.push_back(slot(in));
  slots_[node->output()] = std::move(s);
}

void Importer::visit_tuple_unpack(Node* node) {
  const Slot tuple = slot(node->input());
  if (tuple.kind != Slot::Kind::Tuple || tuple.elems.size() != node->outputs().size()) {
    fail(describe(node) + " unpacks a value that is not a tuple of that size");
  }
  for (size_t i = 0; i < tuple.elems.size(); ++i) slots_[node->output(i)] = tuple.elems[i];
}

void Importer::visit_tuple_index(Node* node) {
  const Slot tuple = slot(node->input(0));
  const c10::IValue index = ivalue(slot(node->input(1)));
  if (tuple.kind != Slot::Kind::Tuple || !index.isInt()) fail(describe(node) + " indexes a non-tuple");
  int64_t i = index.toInt();
  if (i < 0) i += static_cast<int64_t>(tuple.elems.size());
  if (i < 0 || i >= static_cast<int64_t>(tuple.elems.size())) fail(describe(node) + " index out of range");
  slots_[node->output()] = tuple.elems[i];
}

void Importer::visit(Node* node) {
  using Rule = void (Importer::*)(Node*);
  // Nodes read whatever their inputs are.
  static const std::unordered_map<c10::Symbol, Rule> kAlways = {
      {c10::prim::Constant, &Importer::visit_constant},
      {c10::prim::GetAttr, &Importer::visit_get_attr},
  };
  // Lists and tuples that hold a tracked tensor.
  static const std::unordered_map<c10::Symbol, Rule> kTracked = {
      {c10::prim::ListConstruct, &Importer::visit_list_construct},
      {c10::prim::ListUnpack, &Importer::visit_list_unpack},
      {c10::prim::TupleConstruct, &Importer::visit_tuple_construct},
      {c10::prim::TupleUnpack, &Importer::visit_tuple_unpack},
      {c10::prim::TupleIndex, &Importer::visit_tuple_index},
  };
  const auto kind = node->kind();
  if (const auto rule = kAlways.find(kind); rule != kAlways.end()) return (this->*rule->second)(node);

  bool tensor_input = false;
  const bool tracked = tracked_inputs(node, &tensor_input);
  bool tensor_output = false;
  for (const Value* out : node->outputs()) tensor_output = tensor_output || type_has_tensor(out->type());
  if (tracked) {
    if (const auto rule = kTracked.find(kind); rule != kTracked.end()) return (this->*rule->second)(node);
  }

  // Data-independent work is evaluated now: shape arithmetic (outputs hold no
  // tensor), or tensor math on constants only (e.g. NumToTensor results).
  if (!tensor_output || (!tracked && (tensor_input || !kind.is_aten()))) return fold(node);
  if (kind.is_aten()) return execute_aten(node);
  fail(describe(node) + " is not an ATen operator; not supported");
}

// ---------------------------------------------------------------- ATen calls

namespace {

// The block an op belongs to: its module, or the enclosing one for leaf
// modules such as a conv inside a ResNet block ("layer1.0").
std::string op_layer(const Node* node, const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return path;
  auto frame = node->callstack();
  if (!frame) return path;
  std::optional<torch::jit::ModuleInstanceInfo> last;
  for (auto f = frame; f; f = (*f)->callee()) {
    if (auto instance = (*f)->module_instance()) last = *instance;
  }
  if (!last || !last->class_type()) return path;
  for (const auto& attr : last->class_type()->containedTypes()) {
    if (attr->kind() == c10::TypeKind::ClassType) return path;
  }
  return path.substr(0, dot);
}

}  // namespace

std::vector<CallArg> Importer::aten_arguments(Node* node, const c10::FunctionSchema& schema) {
  const auto& arguments = schema.arguments();
  std::vector<CallArg> args;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Value* in = node->input(i);
    const Slot& s = slot(in);
    CallArg arg;
    arg.value = ivalue(s);
    if (s.kind == Slot::Kind::Tensor || (s.kind == Slot::Kind::Const && arg.value.isTensor())) {
      arg.refs = {tensor_ref(s, in)};
    } else if (s.kind == Slot::Kind::TensorList) {
      arg.refs.assign(s.refs.begin(), s.refs.end());
    } else if (s.kind == Slot::Kind::Const && arg.value.isTensorList()) {
      for (const at::Tensor& t : arg.value.toTensorVector()) arg.refs.push_back(rec_.constant(t, in->debugName()));
    } else if (s.kind != Slot::Kind::Const) {
      fail(describe(node) + " argument '" + arguments[i].name() + "' is a tuple or module, not supported");
    }
    args.push_back(std::move(arg));
  }
  return args;
}

void Importer::bind_aten_returns(Node* node, const RecordedCall& call) {
  if (call.returns.size() != node->outputs().size()) {
    fail(describe(node) + " returned " + std::to_string(call.returns.size()) + " values, the graph expects " +
         std::to_string(node->outputs().size()));
  }
  for (size_t i = 0; i < call.returns.size(); ++i) {
    const c10::IValue& v = call.returns[i];
    Slot s;
    s.value = v;
    if (v.isTensor()) {
      s.kind = Slot::Kind::Tensor;
    } else if (v.isTensorList()) {
      s.kind = Slot::Kind::TensorList;
    } else if (type_has_tensor(node->output(i)->type()) && !v.isNone()) {
      fail(describe(node) + " output " + std::to_string(i) + " is a " + v.tagKind() + ", not supported");
    }
    s.refs = call.refs[i];
    slots_[node->output(i)] = std::move(s);
  }
}

void Importer::execute_aten(Node* node) {
  const auto& schema = node->schema();
  const c10::OperatorName& opname = schema.operator_name();
  const auto handle = c10::Dispatcher::singleton().findSchema(opname);
  if (!handle) fail(describe(node) + " is not an ATen dispatcher operator; the runtime cannot call it");
  if (schema.is_mutable()) {
    fail(describe(node) + " mutates an input in place and could not be made functional; not supported");
  }
  if (schema.arguments().size() != node->inputs().size()) {
    fail(describe(node) + " has " + std::to_string(node->inputs().size()) + " inputs but its schema " +
         std::to_string(schema.arguments().size()) + " arguments");
  }
  const std::vector<CallArg> args = aten_arguments(node, schema);
  const std::string base = opname.name;
  const std::string path = module_path(node);
  const std::string short_kind = base.substr(base.find("::") + 2);
  const RecordedCall call = rec_.call(*handle, args, describe(node),
                                      path.empty() ? short_kind : path + "/" + short_kind, op_layer(node, path));
  bind_aten_returns(node, call);
}

}  // namespace placer::detail
