// torch.export importer: the archive (zip records, the program JSON, tensor metadata and weights).
#include "export_importer.h"
#include "zip_sizes.h"

#include <algorithm>

namespace placer::detail {

void ExportImporter::open() {
  std::error_code ec;
  if (!bytes_ && !std::filesystem::is_regular_file(file_, ec)) fail("no such file");
  // What the records would allocate, from the zip's directory, before the reader reads one (it reads `version`
  // as it opens): a deflated record may expand 1000 times (the weights' cap counts them as they are read).
  const uint64_t any = std::numeric_limits<uint64_t>::max();
  if (const auto error = bytes_ ? zip_bytes_size_error(*bytes_, any, "") : zip_size_error(file_, any, "")) fail(*error);
  try {
    if (bytes_) {
      stream_ = std::make_unique<std::istringstream>(*bytes_);
      archive_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(stream_.get());
    } else {
      archive_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(file_);
    }
  } catch (const std::exception& e) {
    fail("not a torch.export archive (torch.export.save output, a zip file): " + first_line(e.what()));
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
        // A negative static size is no size (it read as "symbolic" before); a negative stride is refused
        // where the tensor is read.
        if (out->back() < 0 && std::string(field) == "sizes")
          fail(detail::concat(where, ": ", f, ": negative size ", out->back()));
        if (symbols) symbols->push_back("");
        continue;
      }
      const rj::Value* expr = json_.member(s, "as_expr");
      if (!expr) fail(where + ": field '" + f + "' is neither as_int nor as_expr");
      const std::string at = f + ".as_expr";
      const std::string text = json_.opt_string(json_.object(*expr, where, at.c_str()), "expr_str", where);
      const rj::Value* hint = json_.member(*expr, "hint");
      const rj::Value* hint_int = hint && hint->IsObject() ? json_.member(*hint, "as_int") : nullptr;
      // A size without an example value: -1 until an --input gives it.
      out->push_back(hint_int ? json_.integer(*hint_int, where, (at + ".hint").c_str()) : -1);
      if (hint_int && out->back() < 0)
        fail(detail::concat(where, ": ", at, ".hint: negative example size ", out->back()));
      if (symbols) symbols->push_back(text.empty() ? "?" : text);
    }
  };
  sym_ints(json_.require(v, "sizes", where), "sizes", &m.sizes, &m.symbols);
  if (const rj::Value* strides = json_.member(v, "strides")) {
    std::vector<std::string> ignored;
    sym_ints(*strides, "strides", &m.strides, &ignored);
  }
  if (const rj::Value* rg = json_.member(v, "requires_grad"); rg && rg->IsBool()) m.requires_grad = rg->GetBool();
  if (const rj::Value* off = json_.member(v, "storage_offset"); off && off->IsObject()) {
    if (const rj::Value* n = json_.member(*off, "as_int"))
      m.storage_offset = json_.integer(*n, where, "storage_offset");
    if (m.storage_offset < 0) fail(detail::concat(where, ": storage_offset: negative offset ", m.storage_offset));
  }
  return m;
}

// FQN -> (record path, pickled) from data/<dir>/model_<dir>_config.json.
ExportImporter::Payloads ExportImporter::payloads(const std::string& config, const std::string& dir) {
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

// Sizes and strides are the archive's metadata, never trusted: their products stay far from int64's end
// (a crafted one overflowed the extent below), what one tensor holds is capped as --input is, and the
// weights' total is capped (ImportOptions::max_weight_bytes), counted before anything is allocated.
double ExportImporter::check_weight_size(const std::string& name, const Meta& m) const {
  double elements = 1.0;
  for (int64_t s : m.sizes) {
    if (s < 0) fail("tensor '" + name + "' has a symbolic size; parameters and buffers must be static");
    elements *= static_cast<double>(s);
  }
  double reach = static_cast<double>(m.storage_offset);
  for (size_t i = 0; i < m.strides.size() && i < m.sizes.size(); ++i)
    reach += static_cast<double>(std::max<int64_t>(0, m.sizes[i] - 1)) *
             static_cast<double>(std::max<int64_t>(0, m.strides[i]));  // (a negative one is refused below)
  if (elements > static_cast<double>(kMaxTensorElements) || !(reach >= 0 && reach < 1e15))
    fail(detail::concat("tensor '", name, "': its metadata's sizes and strides describe ", elements, " elements over ",
                        reach, " (at most 2^31 elements)"));
  return elements * static_cast<double>(c10::elementSize(m.dtype));
}

void ExportImporter::count_weight_bytes(const std::string& name, double bytes) {
  weight_bytes_ += bytes;
  if (weight_bytes_ > static_cast<double>(max_weight_bytes_))
    fail(detail::concat("tensor '", name, "' brings the parameters, buffers and constants to ", weight_bytes_,
                        " bytes, over the limit of ", max_weight_bytes_, " bytes for all of them"));
}

// The raw bytes of a stored tensor, checked against its metadata: the record holds the tensor's whole
// storage (of which it may view a part), a whole number of elements, at most 2^31 of them.
at::Tensor ExportImporter::read_stored(const std::string& name, const Meta& m, const std::string& record_name) {
  const int64_t item = static_cast<int64_t>(c10::elementSize(m.dtype));
  int64_t extent = m.storage_offset + 1;
  bool empty = false;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (m.sizes[i] == 0) empty = true;
    if (m.strides[i] < 0) fail("tensor '" + name + "' has a negative stride");
    extent += (m.sizes[i] - 1) * m.strides[i];
  }
  const size_t bytes = archive_->getRecordSize(record_name);
  const std::string record_of = "record '" + record_name + "' of tensor '" + name + "'";
  if (!empty && bytes < static_cast<uint64_t>(extent * item))
    fail(detail::concat(record_of, " has ", bytes, " bytes; its metadata needs ", extent * item));
  if (bytes % item != 0)
    fail(detail::concat(record_of, " has ", bytes, " bytes, not a whole number of ", c10::toString(m.dtype),
                        " elements (", item, " bytes each)"));
  if (bytes / item > static_cast<uint64_t>(kMaxTensorElements))
    fail(detail::concat(record_of, " has ", bytes / item, " elements (at most 2^31)"));
  count_weight_bytes(name, static_cast<double>(bytes));
  if (empty) return at::empty(m.sizes, at::TensorOptions().dtype(m.dtype));
  at::Tensor storage = at::empty({static_cast<int64_t>(bytes) / item}, at::TensorOptions().dtype(m.dtype));
  try {
    if (bytes > 0) archive_->getRecord(record_name, storage.data_ptr(), storage.nbytes());
    return storage.as_strided(m.sizes, m.strides, m.storage_offset).clone();
  } catch (const c10::Error& e) {
    fail(record_of + " cannot be read: " + first_line(e.what_without_backtrace()));
  }
}

// A parameter, buffer or constant: its bytes from the archive when they are stored raw, else made up.
at::Tensor ExportImporter::load_tensor(const std::string& name, const Meta& m, const std::string& record_name,
                                       bool pickled, bool trainable) {
  const double bytes = check_weight_size(name, m);
  if (!record_name.empty() && !pickled && archive_->hasRecord(record_name) && m.strides.size() == m.sizes.size())
    return read_stored(name, m, record_name);  // (counts its record's bytes)
  // Not stored raw: float values like a fresh layer's, integers zero (a safe index).
  count_weight_bytes(name, bytes);
  synthesized_.insert(name);
  if (at::isFloatingType(m.dtype)) {
    const double bound = trainable ? 0.1 : 1.0;
    return (at::rand(m.sizes, rec_.generator(), at::TensorOptions().dtype(at::kFloat)) * (2 * bound) - bound)
        .to(m.dtype);
  }
  return at::zeros(m.sizes, at::TensorOptions().dtype(m.dtype));
}

}  // namespace placer::detail
