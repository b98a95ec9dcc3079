// torch.export importer: node arguments as the values the ATen schema expects.
#include "export_importer.h"

namespace placer::detail {

// A float of the program: a number, or "Infinity", "-Infinity", "NaN" as the serializer writes them.
double ExportImporter::real(const rj::Value& v, const std::string& where, const char* field) const {
  if (v.IsString()) {
    const std::string s = v.GetString();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return json_.number(v, where, field);
}

// Every "name" under `v`, walked with a stack of its own: the file says how deep `v` nests (a node's inputs
// 10^6 arrays deep overflowed the call stack when this recursed), and nothing has checked it yet.
void ExportImporter::collect_used(const rj::Value& v) {
  std::vector<const rj::Value*> stack = {&v};
  while (!stack.empty()) {
    const rj::Value& e = *stack.back();
    stack.pop_back();
    if (e.IsArray()) {
      for (rj::SizeType i = 0; i < e.Size(); ++i) stack.push_back(&e[i]);
    } else if (e.IsObject()) {
      for (auto it = e.MemberBegin(); it != e.MemberEnd(); ++it) {
        if (it->value.IsString() && std::strcmp(it->name.GetString(), "name") == 0) used_.insert(it->value.GetString());
        stack.push_back(&it->value);
      }
    }
  }
}

const Val& ExportImporter::val(const std::string& name, const std::string& where) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(where + " uses '" + name + "' before it is defined");
  if (auto s = stale_.find(name); s != stale_.end())
    fail(where + " reads '" + name + "', which shares its storage with a tensor that " + s->second +
         " wrote into in place: the importer makes in-place ops functional and cannot follow a write through a "
         "view (z[:, :2] = y, say); write it out of place (torch.cat, torch.slice_scatter, index_put)");
  return it->second;
}

// One Argument's payload while it is read: the value under its kind, where it
// is (for errors), the kind as the field name, and the schema type it feeds.
struct ExportImporter::ArgIn {
  const rj::Value& v;
  const std::string& where;
  const char* field;
  c10::TypeKind wanted;
};

const Val& ExportImporter::tensor_of(const ArgIn& a, const rj::Value& t) const {
  const std::string name =
      json_.string(json_.require(json_.object(t, a.where, a.field), "name", a.where), a.where, "name");
  const Val& found = val(name, a.where);
  if (!found.value.isTensor()) fail(a.where + ": '" + name + "' is not a tensor");
  // Every tensor value is some op's output; one that is not (a constant input made of a number) has no place.
  if (found.refs.size() != 1 || !found.refs[0])
    fail(a.where + ": '" + name + "' is a tensor no op of the graph produces");
  return found;
}

int64_t ExportImporter::sym_int_of(const ArgIn& a, const rj::Value& s) const {
  json_.object(s, a.where, a.field);
  if (const rj::Value* n = json_.member(s, "as_int")) return json_.integer(*n, a.where, a.field);
  const std::string name = json_.string(json_.require(s, "as_name", a.where), a.where, "as_name");
  const Val& found = val(name, a.where);
  if (!found.value.isInt()) fail(a.where + ": '" + name + "' is not an integer");
  return found.value.toInt();
}

namespace {

// An int where the operator wants a float becomes one.
c10::IValue int_value(int64_t i, c10::TypeKind wanted) {
  return wanted == c10::TypeKind::FloatType ? c10::IValue(static_cast<double>(i)) : c10::IValue(i);
}

Val of(c10::IValue value) { return Val{std::move(value), {}}; }

}  // namespace

Val ExportImporter::arg_none(const ArgIn&) { return Val{}; }

Val ExportImporter::arg_tensor(const ArgIn& a) { return tensor_of(a, a.v); }

Val ExportImporter::arg_tensors(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  Val out;
  std::vector<at::Tensor> list;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) {
    const Val& t = tensor_of(a, a.v[i]);
    list.push_back(t.value.toTensor());
    out.refs.push_back(t.refs[0]);
  }
  out.value = c10::IValue(list);
  return out;
}

Val ExportImporter::arg_optional_tensors(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  Val out;
  c10::List<std::optional<at::Tensor>> list;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) {
    const rj::Value& e = json_.object(a.v[i], a.where, a.field);
    if (e.HasMember("as_tensor")) {
      const Val& t = tensor_of(a, e["as_tensor"]);
      list.push_back(t.value.toTensor());
      out.refs.push_back(t.refs[0]);
    } else {
      list.push_back(std::nullopt);
      out.refs.push_back(std::nullopt);
    }
  }
  if (out.refs.empty()) fail(a.where + ": an empty optional tensor list is not supported");
  out.value = c10::IValue(list);
  return out;
}

Val ExportImporter::arg_optional_tensor(const ArgIn& a) {
  const rj::Value& e = json_.object(a.v, a.where, a.field);
  if (e.HasMember("as_tensor")) return tensor_of(a, e["as_tensor"]);
  return Val{};
}

Val ExportImporter::arg_int(const ArgIn& a) { return of(int_value(json_.integer(a.v, a.where, a.field), a.wanted)); }

Val ExportImporter::arg_sym_int(const ArgIn& a) { return of(int_value(sym_int_of(a, a.v), a.wanted)); }

Val ExportImporter::arg_ints(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  std::vector<int64_t> ints;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) ints.push_back(json_.integer(a.v[i], a.where, a.field));
  return of(c10::IValue(ints));
}

Val ExportImporter::arg_sym_ints(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  std::vector<int64_t> ints;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) ints.push_back(sym_int_of(a, a.v[i]));
  return of(c10::IValue(ints));
}

Val ExportImporter::arg_float(const ArgIn& a) { return of(c10::IValue(real(a.v, a.where, a.field))); }

Val ExportImporter::arg_floats(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  std::vector<double> reals;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) reals.push_back(real(a.v[i], a.where, a.field));
  return of(c10::IValue(reals));
}

Val ExportImporter::arg_bool(const ArgIn& a) { return of(c10::IValue(json_.boolean(a.v, a.where, a.field))); }

Val ExportImporter::arg_bools(const ArgIn& a) {
  json_.array(a.v, a.where, a.field);
  c10::List<bool> bools;
  for (rj::SizeType i = 0; i < a.v.Size(); ++i) bools.push_back(json_.boolean(a.v[i], a.where, a.field));
  return of(c10::IValue(bools));
}

Val ExportImporter::arg_string(const ArgIn& a) { return of(c10::IValue(json_.string(a.v, a.where, a.field))); }

Val ExportImporter::arg_scalar_type(const ArgIn& a) {
  const int64_t code = json_.integer(a.v, a.where, a.field);
  const auto type = schema_dtype(code);
  if (!type) fail(detail::concat(a.where, ": scalar type ", code, " is not supported"));
  return of(c10::IValue(static_cast<int64_t>(*type)));
}

Val ExportImporter::arg_memory_format(const ArgIn& a) {
  const auto format = schema_memory_format(json_.integer(a.v, a.where, a.field));
  if (!format) fail(a.where + ": unknown memory format");
  return of(c10::IValue(*format));
}

Val ExportImporter::arg_layout(const ArgIn& a) {
  if (json_.integer(a.v, a.where, a.field) != 7) fail(a.where + ": only strided tensors are supported (layout 7)");
  return of(c10::IValue(at::kStrided));
}

// Import runs on the CPU; the runtime puts each op on its placed device.
Val ExportImporter::arg_device(const ArgIn&) { return of(c10::IValue(c10::Device(c10::kCPU))); }

// The number a symbolic float or bool names: a value some symbolic node computed (an int, float or bool),
// never a tensor or a list, which would reach the kernel as a tensor argument no op of the graph produces.
c10::IValue ExportImporter::sym_number_of(const ArgIn& a, const rj::Value& s, const char* what) const {
  const std::string name = json_.string(json_.require(s, "as_name", a.where), a.where, "as_name");
  const c10::IValue& v = val(name, a.where).value;
  if (!v.isInt() && !v.isDouble() && !v.isBool())
    fail(a.where + ": '" + name + "' is " + (v.isTensor() ? "a tensor" : "a " + v.tagKind()) + ", not " + what);
  return v;
}

Val ExportImporter::arg_sym_float(const ArgIn& a) {
  const rj::Value& s = json_.object(a.v, a.where, a.field);
  if (const rj::Value* f = json_.member(s, "as_float")) return of(c10::IValue(real(*f, a.where, a.field)));
  const c10::IValue v = sym_number_of(a, s, "a symbolic float");
  if (v.isDouble()) return of(v);
  return of(c10::IValue(v.isInt() ? static_cast<double>(v.toInt()) : (v.toBool() ? 1.0 : 0.0)));
}

Val ExportImporter::arg_sym_bool(const ArgIn& a) {
  const rj::Value& s = json_.object(a.v, a.where, a.field);
  if (const rj::Value* b = json_.member(s, "as_bool")) return of(c10::IValue(json_.boolean(*b, a.where, a.field)));
  const c10::IValue v = sym_number_of(a, s, "a symbolic bool");
  if (v.isBool()) return of(v);
  return of(c10::IValue(v.isInt() ? v.toInt() != 0 : v.toDouble() != 0.0));
}

// One Argument of the schema (a one-key union) as a value, read by the rule
// for its kind; `schema_arg` lets ints become floats where the operator wants floats.
Val ExportImporter::argument(const rj::Value& arg, const c10::Argument* schema_arg, const std::string& where) {
  using Rule = Val (ExportImporter::*)(const ArgIn&);
  static const std::map<std::string, Rule> kRules = {
      {"as_none", &ExportImporter::arg_none},
      {"as_tensor", &ExportImporter::arg_tensor},
      {"as_tensors", &ExportImporter::arg_tensors},
      {"as_optional_tensors", &ExportImporter::arg_optional_tensors},
      {"as_optional_tensor", &ExportImporter::arg_optional_tensor},
      {"as_int", &ExportImporter::arg_int},
      {"as_sym_int", &ExportImporter::arg_sym_int},
      {"as_ints", &ExportImporter::arg_ints},
      {"as_sym_ints", &ExportImporter::arg_sym_ints},
      {"as_float", &ExportImporter::arg_float},
      {"as_floats", &ExportImporter::arg_floats},
      {"as_bool", &ExportImporter::arg_bool},
      {"as_bools", &ExportImporter::arg_bools},
      {"as_string", &ExportImporter::arg_string},
      {"as_scalar_type", &ExportImporter::arg_scalar_type},
      {"as_memory_format", &ExportImporter::arg_memory_format},
      {"as_layout", &ExportImporter::arg_layout},
      {"as_device", &ExportImporter::arg_device},
      {"as_sym_float", &ExportImporter::arg_sym_float},
      {"as_sym_bool", &ExportImporter::arg_sym_bool},
  };
  if (!arg.IsObject() || arg.MemberCount() != 1) fail(where + ": an argument must be an object with one field");
  const std::string kind(arg.MemberBegin()->name.GetString());
  c10::TypeKind wanted = c10::TypeKind::AnyType;
  if (schema_arg) {
    c10::TypePtr t = schema_arg->real_type();
    if (t->kind() == c10::TypeKind::OptionalType) t = t->containedType(0);
    wanted = t->kind();
  }
  const auto rule = kRules.find(kind);
  if (rule == kRules.end()) fail(where + ": argument kind '" + kind + "' is not supported");
  return (this->*rule->second)(ArgIn{arg.MemberBegin()->value, where, kind.c_str(), wanted});
}

}  // namespace placer::detail
