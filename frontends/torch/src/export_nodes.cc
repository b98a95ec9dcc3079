// torch.export importer: executing the program's nodes (ATen calls and symbolic sizes) through the Recorder.
#include "export_importer.h"

#include <algorithm>

namespace placer::detail {

// The module calls a node ran in, outermost first ("layer1", "layer1.0",
// "layer1.0.conv1"), from nn_module_stack ("L__self__,,Net;L__self___layer1_0,
// layer1.0,Bottleneck;..."); the root module (an empty path) is left out. A
// key with an "@N" suffix ("L__self___fc@1,fc,Linear") is a later call.
std::vector<ExportImporter::ModuleCall> ExportImporter::module_calls(const rj::Value& node) const {
  std::vector<ModuleCall> calls;
  const rj::Value* metadata = json_.member(node, "metadata");
  if (!metadata || !metadata->IsObject()) return calls;
  const rj::Value* stack = json_.member(*metadata, "nn_module_stack");
  if (!stack || !stack->IsString()) return calls;
  const std::string text = stack->GetString();
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string entry = text.substr(start, end - start);
    const auto first = entry.find(','), last = entry.rfind(',');
    if (first != std::string::npos && last != first && last > first + 1) {
      const auto at = entry.rfind('@', first);
      const bool again = at != std::string::npos && at + 1 < first &&
                         std::all_of(entry.begin() + at + 1, entry.begin() + first,
                                     [](unsigned char c) { return std::isdigit(c) != 0; });
      calls.push_back({entry.substr(first + 1, last - first - 1), again});
    }
    start = end + 1;
  }
  return calls;
}

std::vector<std::string> ExportImporter::module_stack(const rj::Value& node) const {
  std::vector<std::string> paths;
  for (ModuleCall& c : module_calls(node)) paths.push_back(std::move(c.path));
  return paths;
}

// The module a node ran in: the innermost of its stack.
std::string ExportImporter::module_of(const rj::Value& node) const {
  const std::vector<std::string> stack = module_stack(node);
  return stack.empty() ? std::string() : stack.back();
}

void ExportImporter::check_output(const std::string& name, const at::Tensor& t, const std::string& where) const {
  const rj::Value* recorded = json_.member(*tensor_values_, name.c_str());
  if (!recorded) return;
  const Meta m = meta(*recorded, "tensor '" + name + "'");
  bool same = m.dtype == t.scalar_type() && static_cast<int64_t>(m.sizes.size()) == t.dim();
  for (size_t d = 0; same && d < m.sizes.size(); ++d) {
    // A symbolic size may differ from its example when --input changed it.
    if (m.symbols[d].empty() || !overridden_) same = m.sizes[d] == t.size(static_cast<int64_t>(d));
  }
  // PyTorch's own shape rules are wrong for a few outputs nobody uses (the
  // hidden states of aten::lstm, for one); what the kernel made is kept.
  if (!same && used_.count(name)) {
    std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    fail(where + ": output '" + name + "' is " + std::string(c10::toString(t.scalar_type())) + " " + shape_text(sizes) +
         " when run, but the program records " + std::string(c10::toString(m.dtype)) + " " + shape_text(m.sizes));
  }
}

void ExportImporter::visit(const rj::Value& node, size_t index) {
  if (!planned_) plan_lifetimes();
  const std::string where = visit_node(node, index);
  release_values(node, index, where);
}

std::string ExportImporter::visit_node(const rj::Value& node, size_t index) {
  const std::string at = detail::concat("graph.nodes[", index, "]");
  json_.object(node, at, "node");
  const std::string target = json_.string(json_.require(node, "target", at), at, "target");
  const std::string name = json_.opt_string(node, "name", at);
  const std::string where = "node '" + (name.empty() ? at : name) + "' (" + target + ")";
  static const std::set<std::string> kChecks = {"torch.ops.aten._assert_tensor_metadata.default",
                                                "torch.ops.aten._assert_scalar.default",
                                                "torch.ops.aten.sym_constrain_range_for_size.default",
                                                "torch.ops.aten.sym_constrain_range.default",
                                                "torch.ops.aten._assert_async.msg",
                                                "torch.ops.aten._assert_async.default"};
  if (kChecks.count(target)) return where;  // checks of the exporter's assumptions; nothing to place
  if (target.rfind("torch.ops.aten.sym_", 0) == 0 || target.rfind("_operator.", 0) == 0 ||
      target.rfind("torch.sym_", 0) == 0 || target.rfind("math.", 0) == 0) {
    visit_symbolic(node, target, where);
    return where;
  }
  if (target.rfind("torch.ops.higher_order.", 0) == 0) {
    fail(where +
         ": higher-order ops (control flow such as torch.cond, while_loop, or wrapped regions) are not "
         "supported; export the model without them");
  }
  if (target.rfind("torch.ops.aten.", 0) != 0) {
    fail(where + ": not an ATen operator (a custom op or a Python function); the runtime can only call ATen ops");
  }
  visit_aten(node, target, where);
  return where;
}

namespace {

// The arguments of a symbolic operation, read as its rule needs them.
struct SymArgs {
  const std::vector<c10::IValue>& args;
  const std::string& where;
  const Recorder& rec;
  int64_t integer(size_t i) const {
    if (i >= args.size() || !(args[i].isInt() || args[i].isBool())) rec.fail(where + ": expects integer arguments");
    return args[i].isBool() ? args[i].toBool() : args[i].toInt();
  }
  at::Tensor tensor() const {
    if (args.empty() || !args[0].isTensor()) rec.fail(where + ": expects a tensor argument");
    return args[0].toTensor();
  }
  // Argument `i` as a dimension of the tensor argument (negative counts from the end), checked: the file
  // gives it, and Tensor::size() throws c10::IndexError on one out of range.
  int64_t dim(size_t i) const {
    const int64_t d = integer(i), rank = tensor().dim();
    if (d < -rank || d >= rank)
      rec.fail(detail::concat(where, ": dimension ", d, " is out of range for a tensor of ", rank, " dimensions"));
    return d < 0 ? d + rank : d;
  }
  // The result of `x op y`, or an error when int64 cannot hold it (Python's ints never overflow).
  [[noreturn]] void overflow(int64_t x, const char* op, int64_t y) const {
    rec.fail(detail::concat(where, ": ", x, " ", op, " ", y, " overflows int64"));
  }
};

int64_t sym_add(const SymArgs& a) {
  int64_t r;
  if (__builtin_add_overflow(a.integer(0), a.integer(1), &r)) a.overflow(a.integer(0), "+", a.integer(1));
  return r;
}
int64_t sym_sub(const SymArgs& a) {
  int64_t r;
  if (__builtin_sub_overflow(a.integer(0), a.integer(1), &r)) a.overflow(a.integer(0), "-", a.integer(1));
  return r;
}
int64_t sym_mul(const SymArgs& a) {
  int64_t r;
  if (__builtin_mul_overflow(a.integer(0), a.integer(1), &r)) a.overflow(a.integer(0), "*", a.integer(1));
  return r;
}
int64_t sym_neg(const SymArgs& a) {
  int64_t r;
  if (__builtin_sub_overflow(int64_t{0}, a.integer(0), &r)) a.overflow(0, "-", a.integer(0));
  return r;
}

// Python's floor division and modulo of integers. INT64_MIN / -1 traps (SIGFPE), as does INT64_MIN % -1.
int64_t sym_floordiv(const SymArgs& a) {
  const int64_t x = a.integer(0), y = a.integer(1);
  if (y == 0) a.rec.fail(a.where + ": division by zero");
  if (x == std::numeric_limits<int64_t>::min() && y == -1) a.overflow(x, "//", y);
  return x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);
}
int64_t sym_mod(const SymArgs& a) {
  const int64_t x = a.integer(0), y = a.integer(1);
  if (y == 0) a.rec.fail(a.where + ": division by zero");
  if (y == -1) return 0;
  const int64_t r = x % y;
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

// One rule per symbolic target: sizes of a tensor and integer arithmetic.
using SymRule = c10::IValue (*)(const SymArgs&);
const std::map<std::string, SymRule>& symbolic_rules() {
  static const std::map<std::string, SymRule> kRules = {
      {"torch.ops.aten.sym_size.int", [](const SymArgs& a) { return c10::IValue(a.tensor().size(a.dim(1))); }},
      {"torch.ops.aten.sym_numel.default", [](const SymArgs& a) { return c10::IValue(a.tensor().numel()); }},
      {"torch.ops.aten.sym_stride.int", [](const SymArgs& a) { return c10::IValue(a.tensor().stride(a.dim(1))); }},
      {"torch.ops.aten.sym_storage_offset.default",
       [](const SymArgs& a) { return c10::IValue(a.tensor().storage_offset()); }},
      {"_operator.add", [](const SymArgs& a) { return c10::IValue(sym_add(a)); }},
      {"_operator.sub", [](const SymArgs& a) { return c10::IValue(sym_sub(a)); }},
      {"_operator.mul", [](const SymArgs& a) { return c10::IValue(sym_mul(a)); }},
      {"_operator.floordiv", [](const SymArgs& a) { return c10::IValue(sym_floordiv(a)); }},
      {"_operator.mod", [](const SymArgs& a) { return c10::IValue(sym_mod(a)); }},
      {"_operator.neg", [](const SymArgs& a) { return c10::IValue(sym_neg(a)); }},
      {"_operator.eq", [](const SymArgs& a) { return c10::IValue(a.integer(0) == a.integer(1)); }},
      {"_operator.ne", [](const SymArgs& a) { return c10::IValue(a.integer(0) != a.integer(1)); }},
      {"_operator.lt", [](const SymArgs& a) { return c10::IValue(a.integer(0) < a.integer(1)); }},
      {"_operator.le", [](const SymArgs& a) { return c10::IValue(a.integer(0) <= a.integer(1)); }},
      {"_operator.gt", [](const SymArgs& a) { return c10::IValue(a.integer(0) > a.integer(1)); }},
      {"_operator.ge", [](const SymArgs& a) { return c10::IValue(a.integer(0) >= a.integer(1)); }},
      {"torch.sym_max", [](const SymArgs& a) { return c10::IValue(std::max(a.integer(0), a.integer(1))); }},
      {"torch.sym_min", [](const SymArgs& a) { return c10::IValue(std::min(a.integer(0), a.integer(1))); }},
  };
  return kRules;
}

}  // namespace

void ExportImporter::visit_symbolic(const rj::Value& node, const std::string& target, const std::string& where) {
  const rj::Value& ins = json_.array(json_.require(node, "inputs", where), where, "inputs");
  std::vector<c10::IValue> args;
  for (rj::SizeType i = 0; i < ins.Size(); ++i) {
    args.push_back(
        argument(json_.require(json_.object(ins[i], where, "inputs[]"), "arg", where), nullptr, where).value);
  }
  const auto rule = symbolic_rules().find(target);
  if (rule == symbolic_rules().end()) {
    const std::string op = target.substr(target.rfind('.') == std::string::npos ? 0 : target.find('.') + 1);
    fail(where + ": symbolic operation '" + op + "' is not supported");
  }
  const c10::IValue result = rule->second(SymArgs{args, where, rec_});
  const rj::Value& outs = json_.array(json_.require(node, "outputs", where), where, "outputs");
  if (outs.Size() != 1 || !outs[0].IsObject() || outs[0].MemberCount() != 1) fail(where + ": expects one output");
  const rj::Value& out = outs[0].MemberBegin()->value;
  if (!out.IsObject() || !out.HasMember("as_name") || !out["as_name"].IsString()) fail(where + ": output has no name");
  values_[out["as_name"].GetString()] = Val{result, {}};
}

namespace {

// The overload of `op` that takes a Scalar where `numbers` name arguments:
// add.Tensor -> add.Scalar, pow.Tensor_Tensor -> pow.Tensor_Scalar,
// where.self -> where.ScalarOther. None when no overload fits.
std::optional<c10::OperatorHandle> scalar_overload(const std::string& op, const c10::OperatorHandle& handle,
                                                   const std::vector<std::string>& numbers) {
  for (const char* candidate :
       {"Scalar", "Tensor_Scalar", "Scalar_Tensor", "ScalarOther", "ScalarSelf", "Scalar_other"}) {
    auto h = c10::Dispatcher::singleton().findSchema({op, candidate});
    if (!h || h->schema().is_mutable() || h->schema().arguments().size() != handle.schema().arguments().size())
      continue;
    bool fits = true;
    for (size_t k = 0; k < h->schema().arguments().size(); ++k) {
      const auto& a = h->schema().arguments()[k];
      const bool number = std::find(numbers.begin(), numbers.end(), a.name()) != numbers.end();
      const bool tensor = a.real_type()->kind() == c10::TypeKind::TensorType;
      if (a.name() != handle.schema().arguments()[k].name() || (number && tensor)) fits = false;
    }
    if (fits) return h;
  }
  return std::nullopt;
}

}  // namespace

// "torch.ops.aten.add_.Tensor" -> aten::add_ overload Tensor ("default": none);
// an in-place op (relu_, add_, detach_) as its functional variant, whose
// result stands for the mutated value from then on.
ExportImporter::AtenCall ExportImporter::resolve_aten(const std::string& target, const std::string& where) const {
  const std::string rest = target.substr(std::string("torch.ops.aten.").size());
  const auto dot = rest.rfind('.');
  if (dot == std::string::npos) fail(where + ": target has no overload");
  AtenCall call;
  call.op = "aten::" + rest.substr(0, dot);
  call.overload = rest.substr(dot + 1) == "default" ? "" : rest.substr(dot + 1);
  call.handle = c10::Dispatcher::singleton().findSchema({call.op, call.overload});
  if (!call.handle) fail(where + ": not an ATen dispatcher operator in this build; the runtime cannot call it");
  if (call.handle->schema().is_mutable()) make_functional(call, where);
  return call;
}

void ExportImporter::make_functional(AtenCall& call, const std::string& where) const {
  for (const auto& a : call.handle->schema().arguments()) {
    if (a.alias_info() && a.alias_info()->isWrite()) {
      if (!call.mutated_arg.empty() || a.name() != "self" || a.kwarg_only())
        call.mutated_arg = "?";
      else
        call.mutated_arg = a.name();
    }
  }
  const std::string& op = call.op;
  std::optional<c10::OperatorHandle> functional;
  if (call.mutated_arg == "self" && op.back() == '_') {
    functional = c10::Dispatcher::singleton().findSchema({op.substr(0, op.size() - 1), call.overload});
  }
  if (!functional || functional->schema().is_mutable() ||
      functional->schema().arguments().size() != call.handle->schema().arguments().size()) {
    fail(where +
         ": mutates an input in place and has no functional ATen variant; export with "
         "run_decompositions() or avoid the in-place op");
  }
  call.handle = functional;
  call.op = op.substr(0, op.size() - 1);
}

// The arguments in schema order; a Python number where the schema wants a
// tensor (x * 0.5 is exported as mul.Tensor) is listed in call.numbers.
std::vector<CallArg> ExportImporter::bind_call(AtenCall& call, const std::map<std::string, const rj::Value*>& named,
                                               const std::string& where) {
  std::vector<CallArg> args;
  call.numbers.clear();
  std::map<std::string, const rj::Value*> left = named;
  for (const auto& a : call.handle->schema().arguments()) {
    const std::string at = where + " argument '" + a.name() + "'";
    auto it = left.find(a.name());
    CallArg call_arg;
    if (it != left.end()) {
      Val v = argument(*it->second, &a, at);
      call_arg.value = v.value;
      call_arg.refs = v.refs;
      if (a.name() == call.mutated_arg && it->second->HasMember("as_tensor")) {
        call.mutated_name = (*it->second)["as_tensor"]["name"].GetString();
      }
      const bool wants_tensor = a.real_type()->kind() == c10::TypeKind::TensorType;
      if (wants_tensor && (v.value.isInt() || v.value.isDouble() || v.value.isBool())) call.numbers.push_back(a.name());
      left.erase(it);
    } else if (a.default_value()) {
      call_arg.value = *a.default_value();
    } else {
      fail(at + " is missing and has no default");
    }
    args.push_back(std::move(call_arg));
  }
  if (!left.empty()) fail(where + ": the operator has no argument '" + left.begin()->first + "'");
  return args;
}

// Python numbers for tensors: the Scalar overload when there is one, else
// each number as a 0-dim constant tensor, as eager PyTorch wraps it.
void ExportImporter::bind_numbers(AtenCall& call, const std::map<std::string, const rj::Value*>& named,
                                  const std::string& where, std::vector<CallArg>& args) {
  if (auto scalar = scalar_overload(call.op, *call.handle, call.numbers)) {
    call.handle = scalar;
    args = bind_call(call, named, where);
    return;
  }
  for (size_t k = 0; k < args.size(); ++k) {
    const auto& a = call.handle->schema().arguments()[k];
    if (std::find(call.numbers.begin(), call.numbers.end(), a.name()) == call.numbers.end()) continue;
    at::Tensor t = c10::scalar_to_tensor(args[k].value.toScalar());
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    args[k].refs = {rec_.constant(t, "scalar")};
    args[k].value = t;
  }
}

// Outputs: one Argument per return, or one as_tensors for a Tensor[] return.
void ExportImporter::bind_outputs(const rj::Value& node, const RecordedCall& call, const std::string& mutated_name,
                                  const std::string& where) {
  const rj::Value& outs = json_.array(json_.require(node, "outputs", where), where, "outputs");
  if (outs.Size() != call.returns.size()) {
    fail(detail::concat(where, ": the program names ", outs.Size(), " outputs, the operator returned ",
                        call.returns.size()));
  }
  for (rj::SizeType i = 0; i < outs.Size(); ++i) {
    const std::string field = detail::concat("outputs[", i, "]");
    const rj::Value& out = json_.object(outs[i], where, field.c_str());
    const c10::IValue& r = call.returns[i];
    if (out.HasMember("as_tensor") && r.isTensor()) {
      const rj::Value& t = json_.object(out["as_tensor"], where, (field + ".as_tensor").c_str());
      const std::string name = json_.string(json_.require(t, "name", where), where, "name");
      check_output(name, r.toTensor(), where);
      values_[name] = Val{r, {call.refs[i].at(0)}};
      if (!mutated_name.empty()) values_[mutated_name] = values_[name];
    } else if (out.HasMember("as_tensors") && r.isTensorList()) {
      const rj::Value& list = json_.array(out["as_tensors"], where, (field + ".as_tensors").c_str());
      const auto tensors = r.toTensorVector();
      if (list.Size() != tensors.size()) fail(where + ": the number of returned tensors differs from the program's");
      for (rj::SizeType k = 0; k < list.Size(); ++k) {
        const std::string at = detail::concat(field, ".as_tensors[", k, "]");
        const rj::Value& t = json_.object(list[k], where, at.c_str());
        const std::string name = json_.string(json_.require(t, "name", where), where, "name");
        check_output(name, tensors[k], where);
        values_[name] = Val{tensors[k], {call.refs[i].at(k)}};
      }
    } else if (!out.HasMember("as_none")) {
      fail(detail::concat(where, ": output ", i, " is ",
                          out.MemberCount() ? out.MemberBegin()->name.GetString() : "empty",
                          " in the program but the operator returned ", r.tagKind()));
    }
  }
}

// An in-place op keeps its argument's dtype (half.add_(float) stays Half); its functional variant promotes
// (half.add(float) is Float). The result is cast back, as the in-place kernel would have written it.
void ExportImporter::cast_back(const AtenCall& aten, const std::vector<CallArg>& args, const std::string& op_name,
                               const std::string& layer, const std::string& where, RecordedCall& call) {
  const auto& arguments = aten.handle->schema().arguments();
  const auto self = std::find_if(arguments.begin(), arguments.end(),
                                 [&](const c10::Argument& a) { return a.name() == aten.mutated_arg; });
  if (self == arguments.end() || call.returns.empty() || !call.returns[0].isTensor()) return;
  const c10::IValue& written = args[self - arguments.begin()].value;
  if (!written.isTensor() || written.toTensor().scalar_type() == call.returns[0].toTensor().scalar_type()) return;
  static const c10::OperatorHandle to_copy = *c10::Dispatcher::singleton().findSchema({"aten::_to_copy", ""});
  std::vector<CallArg> cast_args;
  for (const c10::Argument& a : to_copy.schema().arguments()) {
    CallArg arg;
    if (a.name() == "self")
      arg = CallArg{call.returns[0], {call.refs[0].at(0)}};
    else if (a.name() == "dtype")
      arg.value = static_cast<int64_t>(written.toTensor().scalar_type());
    else if (a.default_value())
      arg.value = *a.default_value();
    cast_args.push_back(std::move(arg));
  }
  const RecordedCall cast =
      rec_.call(to_copy, cast_args, where + " (cast back to its input's dtype)", op_name + "_cast", layer);
  call.returns[0] = cast.returns[0];
  call.refs[0] = cast.refs[0];
}

void ExportImporter::visit_aten(const rj::Value& node, const std::string& target, const std::string& where) {
  AtenCall aten = resolve_aten(target, where);
  const rj::Value& ins = json_.array(json_.require(node, "inputs", where), where, "inputs");
  std::map<std::string, const rj::Value*> named;
  for (rj::SizeType i = 0; i < ins.Size(); ++i) {
    const rj::Value& in = json_.object(ins[i], where, "inputs[]");
    named[json_.string(json_.require(in, "name", where), where, "inputs[].name")] = &json_.require(in, "arg", where);
  }
  std::vector<CallArg> args = bind_call(aten, named, where);
  if (!aten.numbers.empty()) bind_numbers(aten, named, where, args);

  // The block the op belongs to: its module, or the enclosing one for a leaf
  // module such as a conv inside a ResNet block ("layer1.0").
  const std::string path = module_of(node);
  const std::string short_kind = aten.op.substr(aten.op.find("::") + 2);
  std::string layer = path;
  if (const auto d = path.rfind('.'); d != std::string::npos && !parent_modules_.count(path)) layer = path.substr(0, d);
  const std::string op_name = path.empty() ? short_kind : path + "/" + short_kind;
  check_live_budget(aten, args, where);
  RecordedCall call = rec_.call(*aten.handle, args, where, op_name, layer);
  if (!aten.mutated_name.empty()) cast_back(aten, args, op_name, layer, where, call);
  bind_outputs(node, call, aten.mutated_name, where);
  track_aliases(node, aten, named, where);
}

namespace {

// The program values an argument or output names: one for as_tensor, each of an as_tensors list (the
// outputs of chunk, split, unbind: Tensor(a)[]), none for a non-tensor one.
std::vector<std::string> tensor_names(const rj::Value& v) {
  std::vector<std::string> names;
  const auto add = [&](const rj::Value& t) {
    if (t.IsObject() && t.HasMember("name") && t["name"].IsString()) names.push_back(t["name"].GetString());
  };
  if (!v.IsObject()) return names;
  if (v.HasMember("as_tensor")) add(v["as_tensor"]);
  if (v.HasMember("as_tensors") && v["as_tensors"].IsArray())
    for (const rj::Value& t : v["as_tensors"].GetArray()) add(t);
  return names;
}

}  // namespace

// A view op's outputs join the group of the arguments they alias; an in-place write makes the other
// names of its argument's group stale (ExportImporter::val refuses to read them).
void ExportImporter::track_aliases(const rj::Value& node, const AtenCall& aten,
                                   const std::map<std::string, const rj::Value*>& named, const std::string& where) {
  if (!aten.mutated_name.empty()) {
    const auto g = alias_group_.find(aten.mutated_name);
    if (g == alias_group_.end()) return;
    std::vector<std::string>& members = alias_members_[g->second];
    for (const std::string& m : members)
      if (m != aten.mutated_name) stale_[m] = where;
    members.erase(std::remove(members.begin(), members.end(), aten.mutated_name), members.end());
    alias_group_.erase(g);  // the name now holds the write's result, storage of its own
    return;
  }
  const c10::FunctionSchema& schema = aten.handle->schema();
  const auto& returns = schema.returns();
  if (std::none_of(returns.begin(), returns.end(),
                   [](const c10::Argument& r) { return r.alias_info() && !r.alias_info()->isWrite(); }))
    return;  // not a view
  std::vector<std::string> names;
  for (const auto& a : schema.arguments())
    if (auto it = named.find(a.name()); a.alias_info() && !a.alias_info()->isWrite() && it != named.end())
      for (std::string& n : tensor_names(*it->second)) names.push_back(std::move(n));
  if (names.empty()) return;
  const rj::Value& outs = node["outputs"];
  for (rj::SizeType i = 0; i < outs.Size(); ++i)
    for (std::string& n : tensor_names(outs[i])) names.push_back(std::move(n));
  join_aliases(names);
}

// One group for `names`: the first name's (its own when new); the others' groups merge into it.
void ExportImporter::join_aliases(const std::vector<std::string>& names) {
  const auto first = alias_group_.find(names[0]);
  const std::string root = first != alias_group_.end() ? first->second : names[0];
  std::vector<std::string>& into = alias_members_[root];
  if (into.empty()) into.push_back(root), alias_group_[root] = root;
  for (const std::string& n : names) {
    const auto g = alias_group_.find(n);
    if (g == alias_group_.end()) {
      alias_group_[n] = root;
      into.push_back(n);
      continue;
    }
    const std::string old = g->second;  // (g->second changes below)
    if (old == root) continue;
    for (const std::string& m : alias_members_[old]) alias_group_[m] = root, into.push_back(m);
    alias_members_.erase(old);
  }
}

}  // namespace placer::detail
