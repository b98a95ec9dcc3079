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

#include "output_size.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "recorder.h"
#include "torchscript_importer.h"
#include "zip_sizes.h"

namespace placer {
namespace detail {

using torch::jit::Node;
using torch::jit::Value;

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

namespace {

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

}  // namespace

// ---------------------------------------------------------------- the importer

// A zip record's size is what reading it allocates, whatever it takes in the file (6 GiB of zeros deflate to
// 6 MB), and the archive reader reads one (`version`) as it opens the archive: the records' sizes, from the zip's
// directory, are capped in all (ImportOptions::max_weight_bytes, as the torch.export importer caps its weights;
// and 32 times the file's size) before anything reads a record.
void Importer::check_archive_size() {
  const uint64_t cap = static_cast<uint64_t>(std::max<int64_t>(0, max_weight_bytes_));
  if (const auto error = zip_size_error(file_, cap, "for all of them")) fail(*error);
}

torch::jit::Module Importer::load() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file_, ec)) fail("no such file");
  check_archive_size();
  try {
    return torch::jit::load(file_, c10::kCPU);
  } catch (const std::exception& e) {
    fail("not a TorchScript archive (torch.jit.save output): " + detail::first_line(e.what()));
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
      fail("forward() argument '" + expected[i] + "' has type " + type->str() +
           "; only Tensor arguments are supported");
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
  static const std::set<std::string> kPassThrough = {
      "aten::view",       "aten::reshape", "aten::t",         "aten::transpose", "aten::permute",
      "aten::contiguous", "aten::flatten", "aten::unsqueeze", "aten::squeeze",   "aten::select",
      "aten::slice",      "aten::to",      "aten::narrow"};
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

TensorRef Importer::tensor_ref(const Slot& s, const Value* v) {
  if (s.kind == Slot::Kind::Tensor) return s.refs.at(0);
  PLACER_CHECK(s.kind == Slot::Kind::Const && s.value.isTensor(), "not a tensor slot");
  return rec_.constant(s.value.toTensor(), v->debugName());
}

namespace {

// The block a module's tensors belong to, as for ops: the module itself, or
// the enclosing one for a leaf module inside a block ("layer1.0").
std::string layer_of(const Slot& module) {
  const std::string& path = module.path;
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return path;
  const bool leaf = module.module.children().size() == 0;
  return leaf ? path.substr(0, dot) : path;
}

}  // namespace

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
    const TensorRef ref = rec_.param(value.toTensor(), path, layer_of(owner));
    result.kind = Slot::Kind::Tensor;
    result.value = value;
    result.refs = {ref};
  } else if (value.isObject()) {
    fail("attribute '" + path + "' is a custom class object (" + value.type()->str() +
         "), not supported: " + describe(node));
  } else {
    result.kind = Slot::Kind::Const;  // a buffer or a plain attribute
    result.value = value;
    if (value.isTensor()) rec_.constant(value.toTensor(), path, layer_of(owner));  // names the op after the buffer
  }
  slots_[node->output()] = std::move(result);
}

// Tensor math on constants (a buffer's repeat) allocates what the file's sizes ask for: a folded op's outputs are
// capped as the Recorder caps a call's (2^31 elements for one tensor), before its kernel runs.
void Importer::check_fold_size(Node* node, const torch::jit::Stack& stack) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema) return;
  bool tensor_output = false;
  for (const Value* out : node->outputs()) tensor_output = tensor_output || type_has_tensor(out->type());
  if (!tensor_output) return;
  const auto handle = c10::Dispatcher::singleton().findSchema(schema->operator_name());
  if (!handle) return;
  if (auto error = over_tensor_cap(*handle, stack, describe(node))) fail(*error);
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
      check_fold_size(node, stack);
      node->getOperation()(stack);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    fail("evaluating " + describe(node) + " failed: " + detail::first_line(e.what()));
  }
  PLACER_CHECK(stack.size() == node->outputs().size(), "folding ", describe(node), " returned ", stack.size(),
               " values for ", node->outputs().size(), " outputs");
  for (size_t i = 0; i < stack.size(); ++i) {
    Slot s;
    s.value = std::move(stack[i]);
    slots_[node->output(i)] = std::move(s);
  }
}

Graph Importer::run(const std::vector<SampleInput>& samples) {
  torch::jit::Module module = load();
  check_inputs(module, samples);
  module.eval();
  // Trainable parameters only: a frozen one (requires_grad false) is a constant, as in torch.export's import.
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    any_parameters_ = true;
    if (p.requires_grad()) parameters_.insert(p.unsafeGetTensorImpl());
  }

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
    fail("freezing/inlining the module failed: " + detail::first_line(e.what()));
  }
  reject_control_flow(graph_->block(), file_);

  Graph& out = rec_.graph();
  out.name = std::filesystem::path(file_).stem().string();
  out.attrs["source"] = "torchscript";
  out.attrs["file"] = std::filesystem::path(file_).filename().string();

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
    at::Tensor value;
    int64_t high = 0;
    if (is_floating(sample.dtype)) {
      value = at::randn(sample.shape, rec_.generator(), at::TensorOptions().dtype(at::kFloat)).to(type);
    } else {
      high = sample.dtype == DType::Bool ? 2 : integer_input_high(input);
      value = at::randint(0, high, sample.shape, rec_.generator(), at::TensorOptions().dtype(type));
    }
    Slot s;
    s.kind = Slot::Kind::Tensor;
    s.value = value;
    s.refs = {rec_.input(sample.name, value, high)};
    slots_[input] = std::move(s);
    input_specs += (input_specs.empty() ? "" : " ") + sample.name + ":" + std::string(dtype_name(sample.dtype));
  }
  out.attrs["inputs"] = input_specs;

  for (Node* node : graph_->nodes()) visit(node);

  // Graph outputs, flattened.
  std::function<void(const Slot&, const Value*)> collect = [&](const Slot& s, const Value* v) {
    if (s.kind == Slot::Kind::Tensor) graph_outputs_.push_back(s.refs.at(0));
    if (s.kind == Slot::Kind::TensorList) graph_outputs_.insert(graph_outputs_.end(), s.refs.begin(), s.refs.end());
    for (const auto& e : s.elems) collect(e, v);
  };
  for (const Value* v : graph_->outputs()) collect(slot(v), v);
  if (graph_outputs_.empty()) fail("forward() returns no tensor computed from its inputs or parameters");
  return rec_.finish(graph_outputs_);
}

}  // namespace detail

Graph import_torchscript(const std::string& path, const std::vector<SampleInput>& inputs,
                         const ImportOptions& options) {
  if (!(options.learning_rate > 0.0)) throw InputError("learning rate must be positive");
  return detail::import_guarded(path, [&] {
    detail::Importer importer(path, options);
    return importer.run(inputs);
  });
}

}  // namespace placer