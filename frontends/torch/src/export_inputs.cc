// torch.export importer: the program's inputs (parameters, buffers, constants and user inputs) bound to values.
#include "export_importer.h"

namespace placer::detail {

namespace {

// The tensor arguments of a program node that integer_input_high follows.
struct NodeTensors {
  std::string first;    // argument 0
  std::string weight;   // the argument named "weight"
  std::string indices;  // the argument named "indices"
};

NodeTensors node_tensors(const rj::Value& ins) {
  NodeTensors out;
  for (rj::SizeType k = 0; k < ins.Size(); ++k) {
    const rj::Value& a = ins[k];
    if (!a.IsObject() || !a.HasMember("arg") || !a["arg"].IsObject() || !a["arg"].HasMember("as_tensor")) continue;
    const rj::Value& t = a["arg"]["as_tensor"];
    if (!t.IsObject() || !t.HasMember("name") || !t["name"].IsString()) continue;
    const std::string name = t["name"].GetString();
    const std::string arg = a.HasMember("name") && a["name"].IsString() ? a["name"].GetString() : "";
    if (k == 0) out.first = name;
    if (arg == "weight") out.weight = name;
    if (arg == "indices") out.indices = name;
  }
  return out;
}

// The name of a node's one tensor output, if it has exactly one output and that is a tensor.
std::optional<std::string> single_tensor_output(const rj::Value& node) {
  if (!node.HasMember("outputs") || !node["outputs"].IsArray() || node["outputs"].Size() != 1 ||
      !node["outputs"][0].IsObject() || !node["outputs"][0].HasMember("as_tensor"))
    return std::nullopt;
  const rj::Value& out = node["outputs"][0]["as_tensor"];
  if (!out.IsObject() || !out.HasMember("name") || !out["name"].IsString()) return std::nullopt;
  return std::string(out["name"].GetString());
}

}  // namespace

// Integer inputs are drawn from [0, high): an embedding's table size when the
// input indexes one (possibly through views), else 2.
int64_t ExportImporter::integer_input_high(const std::string& input) const {
  static const std::set<std::string> kPassThrough = {
      "torch.ops.aten.view.default",       "torch.ops.aten.reshape.default",   "torch.ops.aten.t.default",
      "torch.ops.aten.transpose.int",      "torch.ops.aten.permute.default",   "torch.ops.aten.contiguous.default",
      "torch.ops.aten.flatten.using_ints", "torch.ops.aten.unsqueeze.default", "torch.ops.aten.squeeze.dim",
      "torch.ops.aten.select.int",         "torch.ops.aten.slice.Tensor",      "torch.ops.aten.clone.default",
      "torch.ops.aten._to_copy.default",   "torch.ops.aten.to.dtype"};
  const rj::Value& nodes = (*graph_)["nodes"];
  std::set<std::string> names = {input};
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) {
    const rj::Value& node = nodes[i];
    if (!node.IsObject() || !node.HasMember("target") || !node["target"].IsString() || !node.HasMember("inputs"))
      continue;
    const std::string target = node["target"].GetString();
    const rj::Value& ins = node["inputs"];
    if (!ins.IsArray()) continue;
    const NodeTensors args = node_tensors(ins);
    if (target == "torch.ops.aten.embedding.default" && names.count(args.indices)) {
      auto w = values_.find(args.weight);
      if (w != values_.end() && w->second.value.isTensor() && w->second.value.toTensor().dim() >= 1) {
        return std::max<int64_t>(1, w->second.value.toTensor().size(0));
      }
    }
    if (kPassThrough.count(target) && names.count(args.first)) {
      if (const std::optional<std::string> out = single_tensor_output(node)) names.insert(*out);
    }
  }
  return 2;
}

// The user's tensor inputs, by placeholder name, in the program's order.
std::vector<std::string> ExportImporter::user_input_names(const rj::Value& specs, const std::string& where) const {
  std::vector<std::string> user_inputs;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const std::string at = detail::concat(where, ".input_specs[", i, "]");
    const rj::Value& spec = json_.object(specs[i], at, "");
    if (const rj::Value* u = json_.member(spec, "user_input", at)) {
      const rj::Value* arg = json_.member(*u, "arg", at + ".user_input");
      if (arg && arg->IsObject() && arg->HasMember("as_tensor")) {
        const std::string t = at + ".user_input.arg.as_tensor";
        user_inputs.push_back(json_.string(json_.require((*arg)["as_tensor"], "name", t), t, "name"));
      }
    }
  }
  return user_inputs;
}

// The --input samples by name: each names a user input, and only once.
std::map<std::string, SampleInput> ExportImporter::samples_by_name(const std::vector<SampleInput>& samples,
                                                                   const std::vector<std::string>& user_inputs) const {
  std::string names;
  for (const auto& n : user_inputs) names += (names.empty() ? "" : ", ") + n;
  std::map<std::string, SampleInput> given;
  for (const auto& s : samples) {
    if (std::find(user_inputs.begin(), user_inputs.end(), s.name) == user_inputs.end()) {
      fail("the program has no input '" + s.name + "' (its tensor inputs: " + (names.empty() ? "none" : names) + ")");
    }
    if (!given.emplace(s.name, s).second) fail("input '" + s.name + "' is given twice");
  }
  return given;
}

Meta ExportImporter::placeholder_meta(const std::string& name) const {
  return meta(json_.require(*tensor_values_, name.c_str(), "graph.tensor_values"), "tensor '" + name + "'");
}

// A parameter, buffer or tensor constant: its stored payload (or a synthesized
// one) as a param (a trainable float parameter) or a constant of the graph.
void ExportImporter::bind_stored_tensor(const std::string& kind, const rj::Value& body, const std::string& at,
                                        const Payloads& table) {
  const rj::Value& arg = json_.object(json_.require(body, "arg", at), at, "arg");
  const std::string name = json_.string(json_.require(arg, "name", at), at, "arg.name");
  const char* fqn_field = kind == "parameter" ? "parameter_name"
                          : kind == "buffer"  ? "buffer_name"
                                              : "tensor_constant_name";
  const std::string fqn = json_.string(json_.require(body, fqn_field, at), at, fqn_field);
  const Meta m = placeholder_meta(name);
  auto payload = table.find(fqn);
  const at::Tensor t = load_tensor(fqn, m, payload == table.end() ? "" : payload->second.first,
                                   payload != table.end() && payload->second.second, kind == "parameter");
  const auto dot = fqn.rfind('.');
  const std::string owner = dot == std::string::npos ? "" : fqn.substr(0, dot);
  // The block a tensor belongs to: its module, or the enclosing one (as for ops).
  const auto dot2 = owner.rfind('.');
  const std::string layer = dot2 == std::string::npos ? owner : owner.substr(0, dot2);
  Val v;
  v.value = t;
  // A frozen parameter (requires_grad false, a fine-tuned model's backbone) is a constant: it was trained
  // as the rest, a step of up to twice the work.
  v.refs = {kind == "parameter" && m.requires_grad && at::isFloatingType(t.scalar_type())
                ? rec_.param(t, fqn, layer)
                : rec_.constant(t, fqn, layer)};
  values_[name] = std::move(v);
}

// A size --input gives for a symbolic dimension must lie in the symbol's exported range.
void ExportImporter::check_symbol_range(const std::string& name, size_t d, const std::string& symbol, int64_t size,
                                        const rj::Value* ranges) const {
  const std::string sym = symbol_name(symbol);
  if (sym.empty() || !ranges || !ranges->IsObject() || !ranges->HasMember(sym.c_str())) return;
  const rj::Value& r = (*ranges)[sym.c_str()];
  const rj::Value* lo = json_.member(r, "min_val");
  const rj::Value* hi = json_.member(r, "max_val");
  if ((lo && lo->IsInt64() && size < lo->GetInt64()) || (hi && hi->IsInt64() && size > hi->GetInt64())) {
    fail(detail::concat("input '", name, "' dimension ", d, " (", sym, ") must be in [",
                        lo && lo->IsInt64() ? std::to_string(lo->GetInt64()) : "-inf", ", ",
                        hi && hi->IsInt64() ? std::to_string(hi->GetInt64()) : "inf", "] as exported; --input gives ",
                        size));
  }
}

// The shape --input gives for a user input, checked against the program's metadata, replaces the example's.
void ExportImporter::apply_sample(const std::string& name, const SampleInput& s, const rj::Value* ranges, Meta* m) {
  if (s.shape.size() != m->sizes.size()) {
    fail(detail::concat("input '", name, "' has ", m->sizes.size(), " dimensions in the program; --input gives ",
                        s.shape.size()));
  }
  for (size_t d = 0; d < s.shape.size(); ++d) {
    if (m->symbols[d].empty() && s.shape[d] != m->sizes[d]) {
      fail(detail::concat("input '", name, "' dimension ", d, " is ", m->sizes[d],
                          " in the program (a static size); --input gives ", s.shape[d]));
    }
    if (!m->symbols[d].empty() && s.shape[d] != m->sizes[d]) overridden_ = true;
    check_symbol_range(name, d, m->symbols[d], s.shape[d], ranges);
  }
  if (to_scalar_type(s.dtype) != m->dtype) {
    fail("input '" + name + "' is " + std::string(c10::toString(m->dtype)) + " in the program; --input gives " +
         std::string(dtype_name(s.dtype)));
  }
  m->sizes = s.shape;
}

// Without --input, every size must have an example in the archive.
void ExportImporter::check_recorded_example(const std::string& name, const Meta& m) const {
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] < 0) {
      fail("input '" + name + "' dimension " + std::to_string(d) + " is symbolic (" + m.symbols[d] +
           ") and the archive records no example; give --input " + name + ":SHAPE:DTYPE");
    }
  }
}

// A user input: a random tensor of its shape (floats normal, integers in [0, high)) as a placer::input.
void ExportImporter::bind_user_input(const rj::Value& body, const std::string& at,
                                     const std::map<std::string, SampleInput>& given, const rj::Value* ranges,
                                     std::string* input_specs) {
  const rj::Value& arg = json_.object(json_.require(body, "arg", at), at, "arg");
  if (!arg.HasMember("as_tensor")) return;  // a constant the exporter specialized into the nodes
  const std::string name =
      json_.string(json_.require(arg["as_tensor"], "name", at + ".arg.as_tensor"), at, "arg.as_tensor.name");
  Meta m = placeholder_meta(name);
  std::string said = "recorded example";
  if (auto g = given.find(name); g != given.end()) {
    apply_sample(name, g->second, ranges, &m);
    said = "--input";
  } else {
    check_recorded_example(name, m);
  }
  double elements = 1.0;  // (--input is capped as it is parsed; the archive's example is not trusted either)
  for (int64_t s : m.sizes) elements *= static_cast<double>(s);
  if (elements > static_cast<double>(kMaxTensorElements))
    fail("input '" + name + "': its " + said + " " + shape_text(m.sizes) + " has more than 2^31 elements");
  at::Tensor value;
  int64_t high = 0;
  if (at::isFloatingType(m.dtype)) {
    value = at::randn(m.sizes, rec_.generator(), at::TensorOptions().dtype(at::kFloat)).to(m.dtype);
  } else {
    high = m.dtype == at::kBool ? 2 : integer_input_high(name);
    value = at::randint(0, high, m.sizes, rec_.generator(), at::TensorOptions().dtype(m.dtype));
  }
  Val v;
  v.value = value;
  v.refs = {rec_.input(name, value, high)};
  values_[name] = std::move(v);
  const auto dtype = to_dtype(m.dtype);
  *input_specs += (input_specs->empty() ? "" : " ") + name + ":" + std::string(dtype ? dtype_name(*dtype) : "?");
  inputs_said_[name] = shape_text(m.sizes) + " (" + said + ")";
}

void ExportImporter::bind_inputs(const std::vector<SampleInput>& samples) {
  const rj::Value& gm = doc_["graph_module"];
  const std::string where = "graph_module.signature";
  const rj::Value& signature = json_.object(json_.require(gm, "signature", where), where, "signature");
  const rj::Value& specs = json_.array(json_.require(signature, "input_specs", where), where, "input_specs");
  const Payloads weights = payloads("data/weights/model_weights_config.json", "data/weights/");
  const Payloads constants = payloads("data/constants/model_constants_config.json", "data/constants/");
  const rj::Value* ranges = json_.member(doc_, "range_constraints");
  const std::map<std::string, SampleInput> given = samples_by_name(samples, user_input_names(specs, where));

  std::string input_specs;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const std::string spec_at = detail::concat(where, ".input_specs[", i, "]");
    const rj::Value& spec = json_.object(specs[i], spec_at, "");
    if (spec.MemberCount() != 1) fail(spec_at + ": expected one kind of input");
    const std::string kind(spec.MemberBegin()->name.GetString());
    const std::string at = spec_at + "." + kind;
    const rj::Value& body = json_.object(spec.MemberBegin()->value, at, "");
    if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
      bind_stored_tensor(kind, body, at, kind == "tensor_constant" ? constants : weights);
    } else if (kind == "user_input") {
      bind_user_input(body, at, given, ranges, &input_specs);
    } else if (kind == "constant_input") {
      const std::string name = json_.string(json_.require(body, "name", at), at, "name");
      const rj::Value& value = json_.object(json_.require(body, "value", at), at, "value");
      values_[name] = argument(value, nullptr, at);
    } else {
      fail(at + ": input of kind '" + kind + "' (custom objects, effect tokens) is not supported");
    }
  }
  rec_.graph().attrs["inputs"] = input_specs;
}

}  // namespace placer::detail
