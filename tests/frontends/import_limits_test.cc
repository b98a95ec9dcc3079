// What a model file may make the importers hold, past the cap of one tensor (a code review, 2026-12):
// torch.export kept every node's output to the end (eight aten.ones([2^29]) held 16 GiB); TorchScript loaded
// a zip record of any uncompressed size (a 6 MB file deflated 6 GiB of zeros), folded ops on constants with no
// output cap (buffer.repeat(3e9)), and put a C++ backtrace into a folding error. The models are made here: a
// fixture's program edited in memory, TorchScript modules defined and saved from C++.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <torch/script.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "../error_of.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

using testing::error_of;

std::string export_fixture(const std::string& name) { return std::string(PLACER_EXPORT_FIXTURES_DIR) + "/" + name; }

// `name`'s archive with the nodes `nodes` (JSON objects) put first in its program.
std::string with_nodes_first(const std::string& name, const std::vector<std::string>& nodes) {
  caffe2::serialize::PyTorchStreamReader reader(export_fixture(name));
  std::vector<std::pair<std::string, std::string>> records;
  for (const std::string& r : reader.getAllRecords()) {
    if (r == ".data/version" || r == ".data/serialization_id") continue;  // the writer writes its own
    auto [data, size] = reader.getRecord(r);
    records.emplace_back(r, std::string(static_cast<const char*>(data.get()), size));
  }
  for (auto& [r, bytes] : records) {
    if (r != "models/model.json") continue;
    rapidjson::Document doc;
    doc.Parse(bytes.data(), bytes.size());
    rapidjson::Value& list = doc["graph_module"]["graph"]["nodes"];
    rapidjson::Value edited(rapidjson::kArrayType);
    for (const std::string& json : nodes) {
      rapidjson::Document node(&doc.GetAllocator());
      node.Parse(json.c_str());
      EXPECT_FALSE(node.HasParseError()) << json;
      edited.PushBack(rapidjson::Value(node, doc.GetAllocator()), doc.GetAllocator());
    }
    for (rapidjson::Value& n : list.GetArray()) edited.PushBack(n, doc.GetAllocator());
    list = edited;
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    doc.Accept(writer);
    bytes.assign(buffer.GetString(), buffer.GetSize());
  }
  std::string out;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
      out.append(static_cast<const char*>(data), n);
      return n;
    });
    for (const auto& [r, bytes] : records) writer.writeRecord(r, bytes.data(), bytes.size());
    writer.writeEndOfFile();
  }
  return out;
}

// A node `name` = aten.ones([n]) (float: 4n bytes).
std::string ones_node(const std::string& name, int64_t n) {
  return "{\"name\":\"" + name +
         "\",\"target\":\"torch.ops.aten.ones.default\",\"inputs\":[{\"name\":\"size\",\"arg\":" + "{\"as_ints\":[" +
         std::to_string(n) + "]}}],\"outputs\":[{\"as_tensor\":{\"name\":\"" + name + "\"}}],\"metadata\":{}}";
}

// A node `name` = aten.cat(`parts`).
std::string cat_node(const std::string& name, const std::vector<std::string>& parts) {
  std::string list;
  for (const std::string& p : parts) list += (list.empty() ? "" : ",") + std::string("{\"name\":\"") + p + "\"}";
  return "{\"name\":\"" + name + "\",\"target\":\"torch.ops.aten.cat.default\",\"inputs\":[{\"name\":\"tensors\"," +
         "\"arg\":{\"as_tensors\":[" + list + "]}}],\"outputs\":[{\"as_tensor\":{\"name\":\"" + name +
         "\"}}],\"metadata\":{}}";
}

// Finding 5: every node's output was held to the end, and nothing capped their sum. Outputs no later node reads
// are let go (eight of 4 MB import under a 10 MB budget); outputs a later node reads are counted, and the node
// that would go past the budget is refused before its kernel allocates.
TEST(ImportLimits, ExportNodeOutputsHeldAreCapped) {
  const int64_t n = 1 << 20;  // 4 MiB of floats
  std::vector<std::string> unread, read_later;
  for (int i = 0; i < 8; ++i) unread.push_back(ones_node("big" + std::to_string(i), n));
  for (int i = 0; i < 4; ++i) read_later.push_back(ones_node("big" + std::to_string(i), n));
  read_later.push_back(cat_node("all", {"big0", "big1", "big2", "big3"}));

  ImportOptions small;
  small.max_live_bytes = 10 << 20;
  EXPECT_NO_THROW(import_exported_program_bytes(with_nodes_first("tiny_cnn.pt2", unread), "unread.pt2", {}, small));
  const std::string held = with_nodes_first("tiny_cnn.pt2", read_later);
  const std::string message = error_of<InputError>([&] { import_exported_program_bytes(held, "held.pt2", {}, small); });
  EXPECT_NE(message.find("held.pt2: node 'big2' (torch.ops.aten.ones.default): its outputs of 4194304 bytes would "
                         "bring the node outputs held for later nodes to 12582912 bytes, over the limit of 10485760 "
                         "bytes"),
            std::string::npos)
      << message;
  EXPECT_NO_THROW(import_exported_program_bytes(held, "held.pt2", {}));  // the default budget: 8 GiB
}

// A TorchScript module (a parameter w of 4 ones, a buffer) saved to a file of its own, removed with the object.
class SavedModule {
 public:
  SavedModule(const std::string& name, const at::Tensor& buffer, const std::string& forward)
      : path_((std::filesystem::temp_directory_path() /
               ("placer_limits_" + std::to_string(::getpid()) + "_" + name + ".pt"))
                  .string()) {
    torch::jit::Module m("__torch__.M");
    m.register_parameter("w", at::ones({4}).requires_grad_(true), /*is_buffer=*/false);
    m.register_buffer("buf", buffer);
    m.define(forward);
    m.save(path_);
  }
  ~SavedModule() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ts_error(const std::string& path, const ImportOptions& options = {}) {
  return error_of<InputError>([&] { import_torchscript(path, {parse_sample_input("x:2x4")}, options); });
}

// Finding 8: torch::jit::load read a record of whatever size the zip's directory said (ts_zipbomb.pt: 6 GiB
// deflated into 6 MB); the records' uncompressed sizes are now capped in all, before anything is read.
TEST(ImportLimits, TorchScriptRecordsAreCapped) {
  const SavedModule model("records", at::zeros({250000}),
                          "def forward(self, x):\n  return (x * self.w).sum() + self.buf.sum()\n");
  ImportOptions small;
  small.max_weight_bytes = 100000;
  const std::string message = ts_error(model.path(), small);
  EXPECT_NE(message.find(".pt: record 'data/"), std::string::npos) << message;  // (data/0 is w's)
  EXPECT_NE(message.find("' holds 1000000 bytes uncompressed, bringing the archive's records to "), std::string::npos)
      << message;
  EXPECT_NE(message.find(" bytes, over the limit of 100000 bytes for all of them"), std::string::npos) << message;
  EXPECT_NO_THROW(import_torchscript(model.path(), {parse_sample_input("x:2x4")}));
}

// `bytes` with the central directory's entry for the record ending in `suffix` saying it holds 0xFFFFFFF0 bytes.
std::string claim_huge(std::string bytes, const std::string& suffix) {
  const size_t name = bytes.rfind(suffix);  // the central directory comes last
  EXPECT_NE(name, std::string::npos) << suffix;
  const size_t entry = bytes.rfind("PK\x01\x02", name);
  EXPECT_NE(entry, std::string::npos) << suffix;
  for (size_t i = 0; i < 4; ++i) bytes[entry + 24 + i] = static_cast<char>(i == 0 ? 0xF0 : 0xFF);
  return bytes;
}

// Finding 8: the archive reader allocates a record's size as its zip directory gives it, and reads the `version`
// record as it opens an archive, so a record's size is checked from the directory before any reader is made: a
// deflated record expands 1000 times, and 32 times the file's size is the most a record set may claim.
TEST(ImportLimits, ZipDirectorySizesAreCheckedBeforeReading) {
  const SavedModule model("version", at::zeros({1}), "def forward(self, x):\n  return (x * self.w).sum()\n");
  std::ifstream in(model.path(), std::ios::binary);
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string path = model.path() + ".huge.pt";
  std::ofstream(path, std::ios::binary) << claim_huge(saved, "/version");
  const std::string ts = ts_error(path);
  std::filesystem::remove(path);
  EXPECT_NE(ts.find("record 'version' holds 4294967280 bytes uncompressed"), std::string::npos) << ts;
  EXPECT_NE(ts.find(" bytes (32 times its size, and 64 MiB)"), std::string::npos) << ts;

  const std::string pt2 = claim_huge(with_nodes_first("tiny_cnn.pt2", {}), "/data/weights/weight_0");
  const std::string exported = error_of<InputError>([&] { import_exported_program_bytes(pt2, "huge.pt2", {}); });
  EXPECT_NE(exported.find("huge.pt2: record 'data/weights/weight_0' holds 4294967280 bytes uncompressed"),
            std::string::npos)
      << exported;
}

// Finding 8: an op on constants only (a buffer's repeat) is folded, and folding ran it with no output cap: 3e9
// floats were 12 GB. The cap of one tensor applies before the kernel runs, as for a recorded call.
TEST(ImportLimits, TorchScriptFoldedOpsAreCapped) {
  const SavedModule model(
      "fold", at::ones({1}),
      "def forward(self, x):\n  big = self.buf.repeat([3000000000])\n  return (x * self.w).sum() + big[0]\n");
  const std::string message = ts_error(model.path());
  EXPECT_NE(message.find("aten::repeat"), std::string::npos) << message;
  EXPECT_NE(message.find(": an output would hold 3e+09 elements, over the limit of 2^31 for one tensor"),
            std::string::npos)
      << message;
}

// Finding 8: a folded op that fails gave its error with the 30-frame C++ backtrace of c10::Error::what().
TEST(ImportLimits, TorchScriptFoldingErrorsHaveNoBacktrace) {
  const SavedModule model("view", at::ones({1}),
                          "def forward(self, x):\n  v = self.buf.view([7])\n  return (x * self.w).sum() + v.sum()\n");
  const std::string message = ts_error(model.path());
  EXPECT_NE(message.find("evaluating aten::view"), std::string::npos) << message;
  EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace placer
