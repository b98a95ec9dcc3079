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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "export_importer.h"
#include "zip_sizes.h"

namespace placer {
namespace detail {
namespace {

template <class Names>
std::string space_separated(const Names& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : " ") + n;
  return text;
}

}  // namespace

// Modules that hold another module some node ran in (a layer's block), the
// modules called (in first-call order) and those called again, and the values
// some node or output uses.
void ExportImporter::scan_nodes(const rj::Value& nodes) {
  std::set<std::string> called;
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) {
    const std::vector<ModuleCall> stack = nodes[i].IsObject() ? module_calls(nodes[i]) : std::vector<ModuleCall>();
    for (const ModuleCall& m : stack) {
      if (called.insert(m.path).second) called_modules_.push_back(m.path);
      if (m.again) repeated_modules_.insert(m.path);
    }
    const std::string path = stack.empty() ? std::string() : stack.back().path;
    for (auto d = path.rfind('.'); d != std::string::npos; d = path.rfind('.', d - 1)) {
      parent_modules_.insert(path.substr(0, d));
      if (d == 0) break;
    }
  }
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) {
    if (nodes[i].IsObject() && nodes[i].HasMember("inputs")) collect_used(nodes[i]["inputs"]);
  }
  if (const rj::Value* outs = json_.member(*graph_, "outputs")) collect_used(*outs);
}

// Outputs: the user's, and the loss when the program marks one.
std::vector<TensorRef> ExportImporter::program_outputs(std::optional<TensorRef>* loss) const {
  const std::string where = "graph_module.signature.output_specs";
  const rj::Value& specs =
      json_.array(json_.require(doc_["graph_module"]["signature"], "output_specs", where), where, "output_specs");
  std::vector<TensorRef> outputs;
  for (rj::SizeType i = 0; i < specs.Size(); ++i) {
    const std::string spec_at = detail::concat(where, "[", i, "]");
    const rj::Value& spec = json_.object(specs[i], spec_at, "");
    if (spec.MemberCount() != 1) fail(spec_at + ": expected one kind of output");
    const std::string kind = spec.MemberBegin()->name.GetString();
    if (kind != "user_output" && kind != "loss_output") continue;  // buffer and input mutations: state, not results
    const rj::Value& arg = json_.require(spec.MemberBegin()->value, "arg", spec_at + "." + kind);
    const rj::Value* t = arg.IsObject() && arg.HasMember("as_tensor") ? &arg["as_tensor"] : &arg;
    if (!t->IsObject() || !t->HasMember("name") || !(*t)["name"].IsString()) continue;  // a constant output
    const Val& v = val((*t)["name"].GetString(), where);
    if (!v.value.isTensor() || v.refs.empty() || !v.refs[0]) continue;
    if (kind == "loss_output") *loss = *v.refs[0];
    if (kind == "user_output") outputs.push_back(*v.refs[0]);
  }
  return outputs;
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
  scan_nodes(nodes);
  bind_inputs(samples);
  for (rj::SizeType i = 0; i < nodes.Size(); ++i) visit(nodes[i], i);
  std::optional<TensorRef> loss;
  const std::vector<TensorRef> outputs = program_outputs(&loss);

  std::string said;
  for (const auto& [name, text] : inputs_said_) said += (said.empty() ? "" : " ") + name + ":" + text;
  out.attrs["input_shapes"] = said;
  // The modules the program calls (a ModuleList holding blocks is not one):
  // where a pipeline split may begin (frontends/pipeline_split.h).
  out.attrs["modules"] = space_separated(called_modules_);
  // Never a split point: pipeline() would cut at each call.
  if (!repeated_modules_.empty()) out.attrs["repeated_modules"] = space_separated(repeated_modules_);
  if (!synthesized_.empty()) {
    out.attrs["weights"] = detail::concat(synthesized_.size(), " tensor(s) not stored raw in the archive; made up");
  }
  return rec_.finish(outputs, loss);
}

}  // namespace detail

using detail::ExportImporter;

bool is_exported_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, 4) || std::memcmp(magic, "PK\x03\x04", 4) != 0) return false;
  // The reader inflates the `version` record as it opens: an archive whose records would expand past what its
  // size allows is not opened here (the TorchScript importer then refuses it, naming the record).
  if (detail::zip_size_error(path, std::numeric_limits<uint64_t>::max(), "")) return false;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const std::string& r : reader.getAllRecords()) {
      if (r.rfind("models/", 0) == 0 || r == "serialized_exported_program.json") return true;
    }
  } catch (const std::exception&) {}
  return false;
}

namespace {

// An archive's program (`bytes`, or null to read `file`), imported. What escapes the importer is an
// InputError naming the file: a c10::Error (import_guarded), or RapidJSON's assertion on a value of
// another type than the program's schema says (cereal makes it throw) that no check caught.
Graph import_archive(const std::string& file, const std::string* bytes, const std::vector<SampleInput>& inputs,
                     const ImportOptions& options) {
  if (!(options.learning_rate > 0.0)) throw InputError("learning rate must be positive");
  return detail::import_guarded(file, [&] {
    try {
      ExportImporter importer(file, bytes, options);
      return importer.run(inputs);
    } catch (const cereal::RapidJSONException& e) {
      throw InputError(file + ": the program does not follow the torch.export schema (" + e.what() + ")");
    }
  });
}

}  // namespace

Graph import_exported_program(const std::string& path, const std::vector<SampleInput>& inputs,
                              const ImportOptions& options) {
  return import_archive(path, nullptr, inputs, options);
}

Graph import_exported_program_bytes(const std::string& bytes, const std::string& label,
                                    const std::vector<SampleInput>& inputs, const ImportOptions& options) {
  return import_archive(label, &bytes, inputs, options);
}

Graph import_model(const std::string& path, const std::vector<SampleInput>& inputs, const ImportOptions& options) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".pt2" || is_exported_program(path)) return import_exported_program(path, inputs, options);
  return import_torchscript(path, inputs, options);
}

}  // namespace placer
