// torch.export (.pt2) -> placer IR.
//
// An archive written by torch.export.save is a zip file. Its program is JSON
// (models/<name>.json, torch/_export/serde/schema.py, schema 8.x in torch
// 2.11): graph nodes with ATen targets and named arguments, tensor metadata,
// and a signature that says which placeholders are parameters, buffers,
// constants and user inputs. Weights are raw bytes under data/weights/.
//
// Like the TorchScript importer, this one *executes* the program node by node
// on CPU with real tensors (Recorder), so every op's output specs are what
// the kernel produced; they are checked against the archive's metadata. The
// default (training IR) form keeps in-place ops such as relu_: each becomes
// its functional ATen variant, and later uses of the mutated value see the
// result. Symbolic sizes (sym_size, operator.mul, ...) are evaluated on the
// spot from the sample shapes.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "placer/torchscript/import.h"
#include "recorder.h"

namespace placer {
namespace {

constexpr size_t kMaxProgramBytes = size_t{1} << 30;  // the program JSON
constexpr int kSchemaMajor = 8;                       // torch 2.11 writes 8.17

// The ScalarType enum of the export schema, which is not c10's numbering.
std::optional<at::ScalarType> schema_dtype(int64_t v) {
  switch (v) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    default: return std::nullopt;
  }
}

std::optional<c10::MemoryFormat> schema_memory_format(int64_t v) {
  switch (v) {
    case 1: return c10::MemoryFormat::Contiguous;
    case 2: return c10::MemoryFormat::ChannelsLast;
    case 3: return c10::MemoryFormat::ChannelsLast3d;
    case 4: return c10::MemoryFormat::Preserve;
    default: return std::nullopt;
  }
}

// "Symbol('s77', positive=True, integer=True)" or "s77" -> "s77"; "" for an expression.
std::string symbol_name(const std::string& expr) {
  const std::string prefix = "Symbol('";
  if (expr.rfind(prefix, 0) == 0) {
    const auto end = expr.find('\'', prefix.size());
    if (end != std::string::npos) return expr.substr(prefix.size(), end - prefix.size());
  }
  const bool identifier = !expr.empty() && std::all_of(expr.begin(), expr.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return identifier ? expr : std::string();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

// A tensor's metadata as the archive records it.
struct Meta {
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> sizes;        // the example's (hint) for a symbolic size
  std::vector<std::string> symbols;  // per dim: "" when static, else the symbol or expression
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  bool dynamic() const {
    return std::any_of(symbols.begin(), symbols.end(), [](const std::string& s) { return !s.empty(); });
  }
};

// A named value of the program while it is executed.
struct Val {
  c10::IValue value;                           // tensor, tensor list, int, float, bool, none
  std::vector<std::optional<TensorRef>> refs;  // where the graph has the tensor(s)
};

class ExportImporter {
 public:
  // `bytes`: the archive itself (then `file` only names it in errors), or null to read `file`.
  ExportImporter(const std::string& file, const std::string* bytes, const ImportOptions& options)
      : file_(file), bytes_(bytes), rec_(file, options), json_{"torch.export program"} {}

  Graph run(const std::vector<SampleInput>& samples);

 private:
  [[noreturn]] void fail(const std::string& message) const { rec_.fail(message); }

  void open();
  std::string record(const std::string& name, size_t cap);
  Meta meta(const rj::Value& v, const std::string& where) const;
  std::map<std::string, std::pair<std::string, bool>> payloads(const std::string& config, const std::string& dir);
  at::Tensor load_tensor(const std::string& name, const Meta& m, const std::string& record_name, bool pickled,
                         bool trainable);
  void bind_inputs(const std::vector<SampleInput>& samples);
  int64_t integer_input_high(const std::string& name) const;
  const Val& val(const std::string& name, const std::string& where) const;
  Val argument(const rj::Value& arg, const c10::Argument* schema_arg, const std::string& where);
  double real(const rj::Value& v, const std::string& where, const char* field) const;
  void collect_used(const rj::Value& v);
  void visit(const rj::Value& node, size_t index);
  void visit_aten(const rj::Value& node, const std::string& target, const std::string& where);
  void visit_symbolic(const rj::Value& node, const std::string& target, const std::string& where);
  std::string module_of(const rj::Value& node) const;
  void check_output(const std::string& name, const at::Tensor& t, const std::string& where) const;

  std::string file_;
  const std::string* bytes_;
  pt::Recorder rec_;
  JsonReader<InputError> json_;
  std::unique_ptr<std::istringstream> stream_;  // outlives archive_, which reads it
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive_;
  rj::Document doc_;
  const rj::Value* graph_ = nullptr;
  const rj::Value* tensor_values_ = nullptr;
  std::unordered_map<std::string, Val> values_;
  std::set<std::string> parent_modules_;            // modules that hold another module some node ran in
  std::map<std::string, std::string> inputs_said_;  // user input -> where its shape came from
  std::set<std::string> synthesized_;               // weights not stored in the archive
  bool overridden_ = false;                         // some --input changed a symbolic size
  std::set<std::string> used_;                      // values some node or output uses
};

// ---------------------------------------------------------------- the archive

void ExportImporter::open() {
  std::error_code ec;
  if (!bytes_ && !std::filesystem::is_regular_file(file_, ec)) fail("no such file");
  try {
    if (bytes_) {
      stream_ = std::make_unique<std::istringstream>(*bytes_);
      archive_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(stream_.get());
    } else {
      archive_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(file_);
    }
  } catch (const std::exception& e) {
    fail("not a torch.export archive (torch.export.save output, a zip file): " + pt::first_line(e.what()));
  }
  std::vector<std::string> programs;
  for (const std::string& r : archive_->getAllRecords()) {
    if (r.rfind("models/", 0) == 0 && r.size() > 12 && r.compare(r.size() - 5, 5, ".json") == 0) programs.push_back(r);
  }
  if (programs.empty()) {
    if (archive_->hasRecord("serialized_exported_program.json")) {
      fail(
          "written by torch.export.save of torch 2.5 or older; this build reads the format of torch 2.6+ "
          "(schema 8.x); export it again with the project environment's torch");
    }
    if (archive_->hasRecord("data.pkl") || archive_->hasRecord("constants.pkl")) {
      fail("a TorchScript or torch.save archive, not a torch.export program (use a .pt file for TorchScript)");
    }
    fail("not a torch.export archive: no models/<name>.json record");
  }
  std::string chosen = programs.front();
  if (programs.size() > 1) {
    if (std::find(programs.begin(), programs.end(), "models/model.json") == programs.end()) {
      std::string list;
      for (const auto& p : programs) list += (list.empty() ? "" : ", ") + p;
      fail("the archive holds several programs (" + list + "); this build imports one named 'model'");
    }
    chosen = "models/model.json";
  }
  doc_ = json_.parse_object(record(chosen, kMaxProgramBytes), file_ + ": " + chosen + " is not a torch.export program");
  const std::string where = chosen;
  const rj::Value& version = json_.object(json_.require(doc_, "schema_version", where), where, "schema_version");
  const int64_t major = json_.integer(json_.require(version, "major", where), where, "schema_version.major");
  const int64_t minor = json_.integer(json_.require(version, "minor", where), where, "schema_version.minor");
  if (major != kSchemaMajor) {
    fail(detail::concat(chosen, ": export schema ", major, ".", minor, " (torch ",
                        json_.opt_string(doc_, "torch_version", where, "?"), "); this build reads schema ",
                        kSchemaMajor, ".x (torch 2.6 to 2.11)"));
  }
  const rj::Value& gm = json_.object(json_.require(doc_, "graph_module", where), where, "graph_module");
  graph_ = &json_.object(json_.require(gm, "graph", where), where, "graph_module.graph");
  tensor_values_ = &json_.object(json_.require(*graph_, "tensor_values", where), where, "graph.tensor_values");
}

std::string ExportImporter::record(const std::string& name, size_t cap) {
  if (!archive_->hasRecord(name)) fail("the archive has no record '" + name + "'");
  const size_t size = archive_->getRecordSize(name);
  if (size > cap) fail(detail::concat("record '", name, "' is ", size, " bytes, over the limit of ", cap));
  auto [data, n] = archive_->getRecord(name);
  return std::string(static_cast<const char*>(data.get()), n);
}

Meta ExportImporter::meta(const rj::Value& v, const std::string& where) const {
  json_.object(v, where, "tensor_meta");
  Meta m;
  const int64_t dtype = json_.integer(json_.require(v, "dtype", where), where, "dtype");
  const auto type = schema_dtype(dtype);
  if (!type) fail(detail::concat(where, ": dtype ", dtype, " (export schema ScalarType) is not supported"));
  m.dtype = *type;
  const auto sym_ints = [&](const rj::Value& list, const char* field, std::vector<int64_t>* out,
                            std::vector<std::string>* symbols) {
    json_.array(list, where, field);
    for (rj::SizeType i = 0; i < list.Size(); ++i) {
      const std::string f = detail::concat(field, "[", i, "]");
      const rj::Value& s = json_.object(list[i], where, f.c_str());
      if (const rj::Value* n = json_.member(s, "as_int")) {
        out->push_back(json_.integer(*n, where, f.c_str()));
        if (symbols) symbols->push_back("");
        continue;
      }
      const rj::Value* expr = json_.member(s, "as_expr");
      if (!expr) fail(where + ": field '" + f + "' is neither as_int nor as_expr");
      const std::string text = json_.opt_string(*expr, "expr_str", where);
      const rj::Value* hint = json_.member(*expr, "hint");
      const rj::Value* hint_int = hint && hint->IsObject() ? json_.member(*hint, "as_int") : nullptr;
      // A size without an example value: -1 until an --input gives it.
      out->push_back(hint_int ? json_.integer(*hint_int, where, f.c_str()) : -1);
      if (symbols) symbols->push_back(text.empty() ? "?" : text);
    }
  };
  sym_ints(json_.require(v, "sizes", where), "sizes", &m.sizes, &m.symbols);
  if (const rj::Value* strides = json_.member(v, "strides")) {
    std::vector<std::string> ignored;
    sym_ints(*strides, "strides", &m.strides, &ignored);
  }
  if (const rj::Value* off = json_.member(v, "storage_offset"); off && off->IsObject()) {
    if (const rj::Value* n = json_.member(*off, "as_int"))
      m.storage_offset = json_.integer(*n, where, "storage_offset");
  }
  return m;
}

// FQN -> (record path, pickled) from data/<dir>/model_<dir>_config.json.
std::map<std::string, std::pair<std::string, bool>> ExportImporter::payloads(const std::string& config,
                                                                             const std::string& dir) {
  std::map<std::string, std::pair<std::string, bool>> out;
  if (!archive_->hasRecord(config)) return out;
  const rj::Document doc = json_.parse_object(record(config, kMaxProgramBytes), file_ + ": " + config);
  const rj::Value* entries = json_.member(doc, "config");
  if (!entries || !entries->IsObject()) return out;
  for (auto it = entries->MemberBegin(); it != entries->MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    const std::string where = config + " '" + name + "'";
    json_.object(it->value, where, "config");
    const std::string path = json_.string(json_.require(it->value, "path_name", where), where, "path_name");
    const rj::Value* pickle = json_.member(it->value, "use_pickle");
    out[name] = {dir + path, pickle && json_.boolean(*pickle, where, "use_pickle")};
  }
  return out;
}

// A parameter, buffer or constant: its bytes from the archive when they are
// stored raw (checked against the metadata, never trusted), else made up.
at::Tensor ExportImporter::load_tensor(const std::string& name, const Meta& m, const std::string& record_name,
                                       bool pickled, bool trainable) {
  for (int64_t s : m.sizes) {
    if (s < 0) fail("tensor '" + name + "' has a symbolic size; parameters and buffers must be static");
  }
  if (!record_name.empty() && !pickled && archive_->hasRecord(record_name) && m.strides.size() == m.sizes.size()) {
    const int64_t item = static_cast<int64_t>(c10::elementSize(m.dtype));
    int64_t extent = m.storage_offset + 1;
    bool empty = false;
    for (size_t i = 0; i < m.sizes.size(); ++i) {
      if (m.sizes[i] == 0) empty = true;
      if (m.strides[i] < 0) fail("tensor '" + name + "' has a negative stride");
      extent += (m.sizes[i] - 1) * m.strides[i];
    }
    const size_t bytes = archive_->getRecordSize(record_name);
    if (!empty && static_cast<int64_t>(bytes) < extent * item) {
      fail(detail::concat("record '", record_name, "' of '", name, "' has ", bytes, " bytes; its metadata needs ",
                          extent * item));
    }
    at::Tensor storage = at::empty({static_cast<int64_t>(bytes) / item}, at::TensorOptions().dtype(m.dtype));
    if (bytes >= static_cast<size_t>(item)) archive_->getRecord(record_name, storage.data_ptr(), storage.nbytes());
    if (empty) return at::empty(m.sizes, at::TensorOptions().dtype(m.dtype));
    return storage.as_strided(m.sizes, m.strides, m.storage_offset).clone();
  }
  // Not stored raw: float values like a fresh layer's, integers zero (a safe index).
  synthesized_.insert(name);
  if (at::isFloatingType(m.dtype)) {
    const double bound = trainable ? 0.1 : 1.0;
    return (at::rand(m.sizes, rec_.generator(), at::TensorOptions().dtype(at::kFloat)) * (2 * bound) - bound)
        .to(m.dtype);
  }
  return at::zeros(m.sizes, at::TensorOptions().dtype(m.dtype));
}

// ---------------------------------------------------------------- inputs

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
    std::string weight, indices, first;
    for (rj::SizeType k = 0; k < ins.Size(); ++k) {
      const rj::Value& a = ins[k];
      if (!a.IsObject() || !a.HasMember("arg") || !a["arg"].IsObject() || !a["arg"].HasMember("as_tensor")) continue;
      const rj::Value& t = a["arg"]["as_tensor"];
      if (!t.IsObject() || !t.HasMember("name") || !t["name"].IsString()) continue;
      const std::string name = t["name"].GetString();
      const std::string arg = a.HasMember("name") && a["name"].IsString() ? a["name"].GetString() : "";
      if (k == 0) first = name;
      if (arg == "weight") weight = name;
      if (arg == "indices") indices = name;
    }
    if (target == "torch.ops.aten.embedding.default" && names.count(indices)) {
      auto w = values_.find(weight);
      if (w != values_.end() && w->second.value.isTensor() && w->second.value.toTensor().dim() >= 1) {
        return std::max<int64_t>(1, w->second.value.toTensor().size(0));
      }
    }
    if (kPassThrough.count(target) && names.count(first) && node.HasMember("outputs") && node["outputs"].IsArray() &&
        node["outputs"].Size() == 1 && node["outputs"][0].IsObject() && node["outputs"][0].HasMember("as_tensor")) {
      const rj::Value& out = node["outputs"][0]["as_tensor"];
      if (out.IsObject() && out.HasMember("name") && out["name"].IsString()) names.insert(out["name"].GetString());
    }
  }
  return 2;
}

void ExportImporter::bind_inputs(const std::vector<SampleInput>& samples) {
  const rj::Value& gm = doc_["graph_module"];
  const std::string where = "graph_module.signature";
  const rj::Value& signature = json_.object(json_.require(gm, "signature", where), where, "signature");
  const rj::Value& specs = json_.array(json_.require(signature, "input_specs", where), where, "input_specs");
  const auto weights = payloads("data/weights/model_weights_config.json", "data/weights/");
  const auto constants = payloads("data/constants/model_constants_config.json", "data/constants/");
  const rj::Value* ranges = json_.member(doc_, "range_constraints");

  // The user's tensor inputs, by placeholder name.
  std::vector<std::string> user_inputs;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const rj::Value& spec = json_.object(specs[i], where, "input_specs[]");
    if (const rj::Value* u = json_.member(spec, "user_input")) {
      const rj::Value* arg = json_.member(*u, "arg");
      if (arg && arg->IsObject() && arg->HasMember("as_tensor")) {
        user_inputs.push_back(json_.string(json_.require((*arg)["as_tensor"], "name", where), where, "name"));
      }
    }
  }
  std::string names;
  for (const auto& n : user_inputs) names += (names.empty() ? "" : ", ") + n;
  std::map<std::string, SampleInput> given;
  for (const auto& s : samples) {
    if (std::find(user_inputs.begin(), user_inputs.end(), s.name) == user_inputs.end()) {
      fail("the program has no input '" + s.name + "' (its tensor inputs: " + (names.empty() ? "none" : names) + ")");
    }
    if (!given.emplace(s.name, s).second) fail("input '" + s.name + "' is given twice");
  }

  std::string input_specs;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const rj::Value& spec = specs[i];
    const std::string at = detail::concat(where, ".input_specs[", i, "]");
    if (spec.MemberCount() != 1) fail(at + ": expected one kind of input");
    const std::string kind(spec.MemberBegin()->name.GetString());
    const rj::Value& body = spec.MemberBegin()->value;
    const auto tensor_name = [&]() {
      const rj::Value& arg = json_.object(json_.require(body, "arg", at), at, "arg");
      return json_.string(json_.require(arg, "name", at), at, "arg.name");
    };
    const auto placeholder_meta = [&](const std::string& name) {
      return meta(json_.require(*tensor_values_, name.c_str(), "graph.tensor_values"), "tensor '" + name + "'");
    };
    if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
      const std::string name = tensor_name();
      const char* fqn_field = kind == "parameter" ? "parameter_name"
                              : kind == "buffer"  ? "buffer_name"
                                                  : "tensor_constant_name";
      const std::string fqn = json_.string(json_.require(body, fqn_field, at), at, fqn_field);
      const Meta m = placeholder_meta(name);
      const auto& table = kind == "tensor_constant" ? constants : weights;
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
      v.refs = {kind == "parameter" && at::isFloatingType(t.scalar_type()) ? rec_.param(t, fqn, layer)
                                                                           : rec_.constant(t, fqn, layer)};
      values_[name] = std::move(v);
    } else if (kind == "user_input") {
      const rj::Value& arg = json_.object(json_.require(body, "arg", at), at, "arg");
      if (!arg.HasMember("as_tensor")) continue;  // a constant the exporter specialized into the nodes
      const std::string name = json_.string(json_.require(arg["as_tensor"], "name", at), at, "name");
      Meta m = placeholder_meta(name);
      std::string said = "recorded example";
      if (auto g = given.find(name); g != given.end()) {
        const SampleInput& s = g->second;
        if (s.shape.size() != m.sizes.size()) {
          fail(detail::concat("input '", name, "' has ", m.sizes.size(), " dimensions in the program; --input gives ",
                              s.shape.size()));
        }
        for (size_t d = 0; d < s.shape.size(); ++d) {
          if (m.symbols[d].empty() && s.shape[d] != m.sizes[d]) {
            fail(detail::concat("input '", name, "' dimension ", d, " is ", m.sizes[d],
                                " in the program (a static size); --input gives ", s.shape[d]));
          }
          if (!m.symbols[d].empty() && s.shape[d] != m.sizes[d]) overridden_ = true;
          const std::string sym = symbol_name(m.symbols[d]);
          if (!sym.empty() && ranges && ranges->IsObject() && ranges->HasMember(sym.c_str())) {
            const rj::Value& r = (*ranges)[sym.c_str()];
            const rj::Value* lo = json_.member(r, "min_val");
            const rj::Value* hi = json_.member(r, "max_val");
            if ((lo && lo->IsInt64() && s.shape[d] < lo->GetInt64()) ||
                (hi && hi->IsInt64() && s.shape[d] > hi->GetInt64())) {
              fail(detail::concat("input '", name, "' dimension ", d, " (", sym, ") must be in [",
                                  lo && lo->IsInt64() ? std::to_string(lo->GetInt64()) : "-inf", ", ",
                                  hi && hi->IsInt64() ? std::to_string(hi->GetInt64()) : "inf",
                                  "] as exported; --input gives ", s.shape[d]));
            }
          }
        }
        if (pt::to_scalar_type(s.dtype) != m.dtype) {
          fail("input '" + name + "' is " + std::string(c10::toString(m.dtype)) + " in the program; --input gives " +
               std::string(dtype_name(s.dtype)));
        }
        m.sizes = s.shape;
        said = "--input";
      } else {
        for (size_t d = 0; d < m.sizes.size(); ++d) {
          if (m.sizes[d] < 0) {
            fail("input '" + name + "' dimension " + std::to_string(d) + " is symbolic (" + m.symbols[d] +
                 ") and the archive records no example; give --input " + name + ":SHAPE:DTYPE");
          }
        }
      }
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
      const auto dtype = pt::to_dtype(m.dtype);
      input_specs += (input_specs.empty() ? "" : " ") + name + ":" + std::string(dtype ? dtype_name(*dtype) : "?");
      inputs_said_[name] = shape_text(m.sizes) + " (" + said + ")";
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

// ---------------------------------------------------------------- arguments

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

// ---------------------------------------------------------------- nodes

// The module a node ran in ("layer1.0.conv1"), from nn_module_stack
// ("L__self__,,Net;L__self___layer1_0,layer1.0,Bottleneck;...").
std::string ExportImporter::module_of(const rj::Value& node) const {
  const rj::Value* metadata = json_.member(node, "metadata");
  if (!metadata || !metadata->IsObject()) return {};
  const rj::Value* stack = json_.member(*metadata, "nn_module_stack");
  if (!stack || !stack->IsString()) return {};
  const std::string text = stack->GetString();
  const auto start = text.rfind(';') == std::string::npos ? 0 : text.rfind(';') + 1;
  const std::string entry = text.substr(start);
  const auto first = entry.find(','), last = entry.rfind(',');
  if (first == std::string::npos || last == first) return {};
  return entry.substr(first + 1, last - first - 1);
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
  if (kChecks.count(target)) return;  // checks of the exporter's assumptions; nothing to place
  if (target.rfind("torch.ops.aten.sym_", 0) == 0 || target.rfind("_operator.", 0) == 0 ||
      target.rfind("torch.sym_", 0) == 0 || target.rfind("math.", 0) == 0) {
    return visit_symbolic(node, target, where);
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
}

void ExportImporter::visit_symbolic(const rj::Value& node, const std::string& target, const std::string& where) {
  const rj::Value& ins = json_.array(json_.require(node, "inputs", where), where, "inputs");
  std::vector<c10::IValue> args;
  for (rj::SizeType i = 0; i < ins.Size(); ++i) {
    args.push_back(
        argument(json_.require(json_.object(ins[i], where, "inputs[]"), "arg", where), nullptr, where).value);
  }
  const auto integer = [&](size_t i) -> int64_t {
    if (i >= args.size() || !(args[i].isInt() || args[i].isBool())) fail(where + ": expects integer arguments");
    return args[i].isBool() ? args[i].toBool() : args[i].toInt();
  };
  const auto tensor = [&]() -> at::Tensor {
    if (args.empty() || !args[0].isTensor()) fail(where + ": expects a tensor argument");
    return args[0].toTensor();
  };
  const std::string op = target.substr(target.rfind('.') == std::string::npos ? 0 : target.find('.') + 1);
  c10::IValue result;
  if (target == "torch.ops.aten.sym_size.int") {
    result = tensor().size(integer(1));
  } else if (target == "torch.ops.aten.sym_numel.default") {
    result = tensor().numel();
  } else if (target == "torch.ops.aten.sym_stride.int") {
    result = tensor().stride(integer(1));
  } else if (target == "torch.ops.aten.sym_storage_offset.default") {
    result = tensor().storage_offset();
  } else if (target == "_operator.add") {
    result = integer(0) + integer(1);
  } else if (target == "_operator.sub") {
    result = integer(0) - integer(1);
  } else if (target == "_operator.mul") {
    result = integer(0) * integer(1);
  } else if (target == "_operator.floordiv" || target == "_operator.mod") {
    const int64_t a = integer(0), b = integer(1);
    if (b == 0) fail(where + ": division by zero");
    const int64_t q = a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);  // Python floors
    result = target == "_operator.floordiv" ? q : a - q * b;
  } else if (target == "_operator.neg") {
    result = -integer(0);
  } else if (target == "_operator.eq") {
    result = integer(0) == integer(1);
  } else if (target == "_operator.ne") {
    result = integer(0) != integer(1);
  } else if (target == "_operator.lt") {
    result = integer(0) < integer(1);
  } else if (target == "_operator.le") {
    result = integer(0) <= integer(1);
  } else if (target == "_operator.gt") {
    result = integer(0) > integer(1);
  } else if (target == "_operator.ge") {
    result = integer(0) >= integer(1);
  } else if (target == "torch.sym_max") {
    result = std::max(integer(0), integer(1));
  } else if (target == "torch.sym_min") {
    result = std::min(integer(0), integer(1));
  } else {
    fail(where + ": symbolic operation '" + op + "' is not supported");
  }
  const rj::Value& outs = json_.array(json_.require(node, "outputs", where), where, "outputs");
  if (outs.Size() != 1 || !outs[0].IsObject() || outs[0].MemberCount() != 1) fail(where + ": expects one output");
  const rj::Value& out = outs[0].MemberBegin()->value;
  if (!out.IsObject() || !out.HasMember("as_name") || !out["as_name"].IsString()) fail(where + ": output has no name");
  values_[out["as_name"].GetString()] = Val{result, {}};
}

void ExportImporter::visit_aten(const rj::Value& node, const std::string& target, const std::string& where) {
  // "torch.ops.aten.add_.Tensor" -> aten::add_ overload Tensor ("default": none)
  const std::string rest = target.substr(std::string("torch.ops.aten.").size());
  const auto dot = rest.rfind('.');
  if (dot == std::string::npos) fail(where + ": target has no overload");
  std::string op = "aten::" + rest.substr(0, dot);
  const std::string overload = rest.substr(dot + 1) == "default" ? "" : rest.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema({op, overload});
  if (!handle) fail(where + ": not an ATen dispatcher operator in this build; the runtime cannot call it");

  // In place (relu_, add_, detach_): run the functional variant instead, and
  // let the result stand for the mutated value from here on.
  std::string mutated_arg;
  if (handle->schema().is_mutable()) {
    for (const auto& a : handle->schema().arguments()) {
      if (a.alias_info() && a.alias_info()->isWrite()) {
        if (!mutated_arg.empty() || a.name() != "self" || a.kwarg_only())
          mutated_arg = "?";
        else
          mutated_arg = a.name();
      }
    }
    std::optional<c10::OperatorHandle> functional;
    if (mutated_arg == "self" && op.back() == '_') {
      functional = c10::Dispatcher::singleton().findSchema({op.substr(0, op.size() - 1), overload});
    }
    if (!functional || functional->schema().is_mutable() ||
        functional->schema().arguments().size() != handle->schema().arguments().size()) {
      fail(where +
           ": mutates an input in place and has no functional ATen variant; export with "
           "run_decompositions() or avoid the in-place op");
    }
    handle = functional;
    op = op.substr(0, op.size() - 1);
  }

  const rj::Value& ins = json_.array(json_.require(node, "inputs", where), where, "inputs");
  std::map<std::string, const rj::Value*> named;
  for (rj::SizeType i = 0; i < ins.Size(); ++i) {
    const rj::Value& in = json_.object(ins[i], where, "inputs[]");
    named[json_.string(json_.require(in, "name", where), where, "inputs[].name")] = &json_.require(in, "arg", where);
  }
  // The arguments in schema order; a Python number where the schema wants a
  // tensor (x * 0.5 is exported as mul.Tensor) is listed in `numbers`.
  std::string mutated_name;
  std::vector<std::string> numbers;
  const auto bind = [&](const c10::FunctionSchema& schema) {
    std::vector<pt::CallArg> args;
    numbers.clear();
    std::map<std::string, const rj::Value*> left = named;
    for (const auto& a : schema.arguments()) {
      const std::string at = where + " argument '" + a.name() + "'";
      auto it = left.find(a.name());
      pt::CallArg call_arg;
      if (it != left.end()) {
        Val v = argument(*it->second, &a, at);
        call_arg.value = v.value;
        call_arg.refs = v.refs;
        if (a.name() == mutated_arg && it->second->HasMember("as_tensor")) {
          mutated_name = (*it->second)["as_tensor"]["name"].GetString();
        }
        const bool wants_tensor = a.real_type()->kind() == c10::TypeKind::TensorType;
        if (wants_tensor && (v.value.isInt() || v.value.isDouble() || v.value.isBool())) numbers.push_back(a.name());
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
  };
  std::vector<pt::CallArg> args = bind(handle->schema());
  if (!numbers.empty()) {
    // The overload that takes a Scalar there: add.Tensor -> add.Scalar,
    // pow.Tensor_Tensor -> pow.Tensor_Scalar, where.self -> where.ScalarOther.
    std::optional<c10::OperatorHandle> scalar;
    for (const char* candidate :
         {"Scalar", "Tensor_Scalar", "Scalar_Tensor", "ScalarOther", "ScalarSelf", "Scalar_other"}) {
      auto h = c10::Dispatcher::singleton().findSchema({op, candidate});
      if (!h || h->schema().is_mutable() || h->schema().arguments().size() != handle->schema().arguments().size())
        continue;
      bool fits = true;
      for (size_t k = 0; k < h->schema().arguments().size(); ++k) {
        const auto& a = h->schema().arguments()[k];
        const bool number = std::find(numbers.begin(), numbers.end(), a.name()) != numbers.end();
        const bool tensor = a.real_type()->kind() == c10::TypeKind::TensorType;
        if (a.name() != handle->schema().arguments()[k].name() || (number && tensor)) fits = false;
      }
      if (fits) {
        scalar = h;
        break;
      }
    }
    if (scalar) {
      handle = scalar;
      args = bind(handle->schema());
    } else {
      // No Scalar overload: the number becomes a 0-dim constant tensor, as eager PyTorch wraps it.
      for (size_t k = 0; k < args.size(); ++k) {
        const auto& a = handle->schema().arguments()[k];
        if (std::find(numbers.begin(), numbers.end(), a.name()) == numbers.end()) continue;
        at::Tensor t = c10::scalar_to_tensor(args[k].value.toScalar());
        t.unsafeGetTensorImpl()->set_wrapped_number(true);
        args[k].refs = {rec_.constant(t, "scalar")};
        args[k].value = t;
      }
    }
  }

  // The block the op belongs to: its module, or the enclosing one for a leaf
  // module such as a conv inside a ResNet block ("layer1.0").
  const std::string path = module_of(node);
  const std::string short_kind = op.substr(op.find("::") + 2);
  std::string layer = path;
  if (const auto d = path.rfind('.'); d != std::string::npos && !parent_modules_.count(path)) layer = path.substr(0, d);
  const pt::RecordedCall call =
      rec_.call(*handle, args, where, path.empty() ? short_kind : path + "/" + short_kind, layer);

  // Outputs: one Argument per return, or one as_tensors for a Tensor[] return.
  const rj::Value& outs = json_.array(json_.require(node, "outputs", where), where, "outputs");
  if (outs.Size() != call.returns.size()) {
    fail(detail::concat(where, ": the program names ", outs.Size(), " outputs, the operator returned ",
                        call.returns.size()));
  }
  for (rj::SizeType i = 0; i < outs.Size(); ++i) {
    const rj::Value& out = json_.object(outs[i], where, "outputs[]");
    const c10::IValue& r = call.returns[i];
    if (out.HasMember("as_tensor") && r.isTensor()) {
      const std::string name = json_.string(json_.require(out["as_tensor"], "name", where), where, "name");
      check_output(name, r.toTensor(), where);
      values_[name] = Val{r, {call.refs[i].at(0)}};
      if (!mutated_name.empty()) values_[mutated_name] = values_[name];
    } else if (out.HasMember("as_tensors") && r.isTensorList()) {
      const rj::Value& list = json_.array(out["as_tensors"], where, "as_tensors");
      const auto tensors = r.toTensorVector();
      if (list.Size() != tensors.size()) fail(where + ": the number of returned tensors differs from the program's");
      for (rj::SizeType k = 0; k < list.Size(); ++k) {
        const std::string name = json_.string(json_.require(list[k], "name", where), where, "name");
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

Graph ExportImporter::run(const std::vector<SampleInput>& samples) {
  open();
  Graph& out = rec_.graph();
  out.name = std::filesystem::path(file_).stem().string();
  out.attrs["source"] = "torch.export";
  out.attrs["file"] = std::filesystem::path(file_).filename().string();
  if (const rj::Value* v = json_.member(doc_, "torch_version"); v && v->IsString())
    out.attrs["exported_by"] = v->GetString();

  const rj::Value& nodes = json_.array(json_.require(*graph_, "nodes", "graph"), "graph", "nodes");
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) {
    const std::string path = nodes[i].IsObject() ? module_of(nodes[i]) : std::string();
    for (auto d = path.rfind('.'); d != std::string::npos; d = path.rfind('.', d - 1)) {
      parent_modules_.insert(path.substr(0, d));
      if (d == 0) break;
    }
  }
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) {
    if (nodes[i].IsObject() && nodes[i].HasMember("inputs")) collect_used(nodes[i]["inputs"]);
  }
  if (const rj::Value* outs = json_.member(*graph_, "outputs")) collect_used(*outs);
  bind_inputs(samples);
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) visit(nodes[i], i);

  // Outputs: the user's, and the loss when the program marks one.
  const std::string where = "graph_module.signature.output_specs";
  const rj::Value& specs =
      json_.array(json_.require(doc_["graph_module"]["signature"], "output_specs", where), where, "output_specs");
  std::vector<TensorRef> outputs;
  std::optional<TensorRef> loss;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const rj::Value& spec = json_.object(specs[i], where, "output_specs[]");
    if (spec.MemberCount() != 1) fail(where + ": expected one kind of output");
    const std::string kind = spec.MemberBegin()->name.GetString();
    if (kind != "user_output" && kind != "loss_output") continue;  // buffer and input mutations: state, not results
    const rj::Value& arg = json_.require(spec.MemberBegin()->value, "arg", where);
    const rj::Value* t = arg.IsObject() && arg.HasMember("as_tensor") ? &arg["as_tensor"] : &arg;
    if (!t->IsObject() || !t->HasMember("name") || !(*t)["name"].IsString()) continue;  // a constant output
    const Val& v = val((*t)["name"].GetString(), where);
    if (!v.value.isTensor() || v.refs.empty() || !v.refs[0]) continue;
    if (kind == "loss_output") loss = *v.refs[0];
    if (kind == "user_output") outputs.push_back(*v.refs[0]);
  }

  std::string said;
  for (const auto& [name, text] : inputs_said_) said += (said.empty() ? "" : " ") + name + ":" + text;
  out.attrs["input_shapes"] = said;
  if (!synthesized_.empty()) {
    out.attrs["weights"] = detail::concat(synthesized_.size(), " tensor(s) not stored raw in the archive; made up");
  }
  return rec_.finish(outputs, loss);
}

}  // namespace

bool is_exported_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, 4) || std::memcmp(magic, "PK\x03\x04", 4) != 0) return false;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const std::string& r : reader.getAllRecords()) {
      if (r.rfind("models/", 0) == 0 || r == "serialized_exported_program.json") return true;
    }
  } catch (const std::exception&) {}
  return false;
}

Graph import_exported_program(const std::string& path, const std::vector<SampleInput>& inputs,
                              const ImportOptions& options) {
  if (!(options.learning_rate > 0.0)) throw InputError("learning rate must be positive");
  ExportImporter importer(path, nullptr, options);
  return importer.run(inputs);
}

Graph import_exported_program_bytes(const std::string& bytes, const std::string& label,
                                    const std::vector<SampleInput>& inputs, const ImportOptions& options) {
  if (!(options.learning_rate > 0.0)) throw InputError("learning rate must be positive");
  ExportImporter importer(label, &bytes, options);
  return importer.run(inputs);
}

Graph import_model(const std::string& path, const std::vector<SampleInput>& inputs, const ImportOptions& options) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".pt2" || is_exported_program(path)) return import_exported_program(path, inputs, options);
  return import_torchscript(path, inputs, options);
}

}  // namespace placer
