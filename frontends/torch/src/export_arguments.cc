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

void ExportImporter::collect_used(const rj::Value& v) {
  if (v.IsArray()) {
    for (rj::SizeType i = 0; i < v.Size(); ++i) collect_used(v[i]);
  } else if (v.IsObject()) {
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      if (it->value.IsString() && std::strcmp(it->name.GetString(), "name") == 0) used_.insert(it->value.GetString());
      collect_used(it->value);
    }
  }
}

const Val& ExportImporter::val(const std::string& name, const std::string& where) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(where + " uses '" + name + "' before it is defined");
  return it->second;
}

// One Argument of the schema (a one-key union) as a value; `schema_arg` lets
// ints become floats where the operator wants floats.
Val ExportImporter::argument(const rj::Value& arg, const c10::Argument* schema_arg, const std::string& where) {
  if (!arg.IsObject() || arg.MemberCount() != 1) fail(where + ": an argument must be an object with one field");
  const std::string kind(arg.MemberBegin()->name.GetString());
  const rj::Value& v = arg.MemberBegin()->value;
  const char* field = kind.c_str();
  const auto tensor = [&](const rj::Value& t) -> const Val& {
    const std::string name = json_.string(json_.require(json_.object(t, where, field), "name", where), where, "name");
    const Val& found = val(name, where);
    if (!found.value.isTensor()) fail(where + ": '" + name + "' is not a tensor");
    return found;
  };
  const auto sym_int = [&](const rj::Value& s) -> int64_t {
    json_.object(s, where, field);
    if (const rj::Value* n = json_.member(s, "as_int")) return json_.integer(*n, where, field);
    const std::string name = json_.string(json_.require(s, "as_name", where), where, "as_name");
    const Val& found = val(name, where);
    if (!found.value.isInt()) fail(where + ": '" + name + "' is not an integer");
    return found.value.toInt();
  };
  const c10::TypeKind wanted = [&] {
    if (!schema_arg) return c10::TypeKind::AnyType;
    c10::TypePtr t = schema_arg->real_type();
    if (t->kind() == c10::TypeKind::OptionalType) t = t->containedType(0);
    return t->kind();
  }();
  Val out;
  if (kind == "as_none") {
    out.value = c10::IValue();
  } else if (kind == "as_tensor") {
    out = tensor(v);
  } else if (kind == "as_tensors") {
    json_.array(v, where, field);
    std::vector<at::Tensor> list;
    for (rj::SizeType i = 0; i < v.Size(); ++i) {
      const Val& t = tensor(v[i]);
      list.push_back(t.value.toTensor());
      out.refs.push_back(t.refs.at(0));
    }
    out.value = c10::IValue(list);
  } else if (kind == "as_optional_tensors") {
    json_.array(v, where, field);
    c10::List<std::optional<at::Tensor>> list;
    for (rj::SizeType i = 0; i < v.Size(); ++i) {
      const rj::Value& e = json_.object(v[i], where, field);
      if (e.HasMember("as_tensor")) {
        const Val& t = tensor(e["as_tensor"]);
        list.push_back(t.value.toTensor());
        out.refs.push_back(t.refs.at(0));
      } else {
        list.push_back(std::nullopt);
        out.refs.push_back(std::nullopt);
      }
    }
    if (out.refs.empty()) fail(where + ": an empty optional tensor list is not supported");
    out.value = c10::IValue(list);
  } else if (kind == "as_optional_tensor") {
    const rj::Value& e = json_.object(v, where, field);
    if (e.HasMember("as_tensor")) out = tensor(e["as_tensor"]);
  } else if (kind == "as_int") {
    const int64_t i = json_.integer(v, where, field);
    out.value = wanted == c10::TypeKind::FloatType ? c10::IValue(static_cast<double>(i)) : c10::IValue(i);
  } else if (kind == "as_sym_int") {
    const int64_t i = sym_int(v);
    out.value = wanted == c10::TypeKind::FloatType ? c10::IValue(static_cast<double>(i)) : c10::IValue(i);
  } else if (kind == "as_ints" || kind == "as_sym_ints") {
    json_.array(v, where, field);
    std::vector<int64_t> ints;
    for (rj::SizeType i = 0; i < v.Size(); ++i) {
      ints.push_back(kind == "as_ints" ? json_.integer(v[i], where, field) : sym_int(v[i]));
    }
    out.value = c10::IValue(ints);
  } else if (kind == "as_float") {
    out.value = c10::IValue(real(v, where, field));
  } else if (kind == "as_floats") {
    json_.array(v, where, field);
    std::vector<double> reals;
    for (rj::SizeType i = 0; i < v.Size(); ++i) reals.push_back(real(v[i], where, field));
    out.value = c10::IValue(reals);
  } else if (kind == "as_bool") {
    out.value = c10::IValue(json_.boolean(v, where, field));
  } else if (kind == "as_bools") {
    json_.array(v, where, field);
    c10::List<bool> bools;
    for (rj::SizeType i = 0; i < v.Size(); ++i) bools.push_back(json_.boolean(v[i], where, field));
    out.value = c10::IValue(bools);
  } else if (kind == "as_string") {
    out.value = c10::IValue(json_.string(v, where, field));
  } else if (kind == "as_scalar_type") {
    const int64_t code = json_.integer(v, where, field);
    const auto type = schema_dtype(code);
    if (!type) fail(detail::concat(where, ": scalar type ", code, " is not supported"));
    out.value = c10::IValue(static_cast<int64_t>(*type));
  } else if (kind == "as_memory_format") {
    const auto format = schema_memory_format(json_.integer(v, where, field));
    if (!format) fail(where + ": unknown memory format");
    out.value = c10::IValue(*format);
  } else if (kind == "as_layout") {
    if (json_.integer(v, where, field) != 7) fail(where + ": only strided tensors are supported (layout 7)");
    out.value = c10::IValue(at::kStrided);
  } else if (kind == "as_device") {
    // Import runs on the CPU; the runtime puts each op on its placed device.
    out.value = c10::IValue(c10::Device(c10::kCPU));
  } else if (kind == "as_sym_float") {
    const rj::Value& s = json_.object(v, where, field);
    if (const rj::Value* f = json_.member(s, "as_float")) {
      out.value = c10::IValue(json_.number(*f, where, field));
    } else {
      const Val& found = val(json_.string(json_.require(s, "as_name", where), where, "as_name"), where);
      out.value = found.value.isInt() ? c10::IValue(static_cast<double>(found.value.toInt())) : found.value;
    }
  } else if (kind == "as_sym_bool") {
    const rj::Value& s = json_.object(v, where, field);
    if (const rj::Value* b = json_.member(s, "as_bool")) {
      out.value = c10::IValue(json_.boolean(*b, where, field));
    } else {
      out.value = val(json_.string(json_.require(s, "as_name", where), where, "as_name"), where).value;
    }
  } else {
    fail(where + ": argument kind '" + kind + "' is not supported");
  }
  return out;
}

}  // namespace placer::detail
