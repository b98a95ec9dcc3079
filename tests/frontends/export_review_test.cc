// torch.export import of archives a file could hold but the exporter never writes: a fixture's archive
// read, its program or a record edited in memory, and imported from the bytes (as a service request is).
// Each is refused with an InputError naming the field and the problem; none crashes or allocates what a
// size field asks for. Also the in-place writes a code review found made functional wrong (2026-12).
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../error_of.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"

namespace placer {
namespace {

using testing::error_of;

std::string fixture(const std::string& name) { return std::string(PLACER_EXPORT_FIXTURES_DIR) + "/" + name; }

// An archive's records by name (the archive's top folder left out), in their order.
using Records = std::vector<std::pair<std::string, std::string>>;

Records read_records(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  Records records;
  for (const std::string& name : reader.getAllRecords()) {
    if (name == ".data/version" || name == ".data/serialization_id") continue;  // the writer writes its own
    auto [data, size] = reader.getRecord(name);
    records.emplace_back(name, std::string(static_cast<const char*>(data.get()), size));
  }
  return records;
}

std::string& record(Records& records, const std::string& name) {
  for (auto& [n, bytes] : records)
    if (n == name) return bytes;
  throw std::runtime_error("no record " + name);
}

std::string write_archive(const Records& records) {
  std::string out;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
      out.append(static_cast<const char*>(data), n);
      return n;
    });
    for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
    writer.writeEndOfFile();
  }
  return out;
}

using Edit = std::function<void(rapidjson::Document&)>;

// `name`'s archive with its program edited by `edit` (and its records by `records`).
std::string edited(const std::string& name, const Edit& edit, const std::function<void(Records&)>& records = {}) {
  Records r = read_records(fixture(name));
  std::string& program = record(r, "models/model.json");
  rapidjson::Document doc;
  doc.Parse(program.data(), program.size());
  if (edit) edit(doc);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  program.assign(buffer.GetString(), buffer.GetSize());
  if (records) records(r);
  return write_archive(r);
}

// The message of the InputError importing `bytes` throws, "" if it imports.
std::string import_error(const std::string& bytes, const ImportOptions& options = {}) {
  try {
    import_exported_program_bytes(bytes, "request.pt2", {}, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

rapidjson::Value& graph(rapidjson::Document& doc) { return doc["graph_module"]["graph"]; }
rapidjson::Value& signature(rapidjson::Document& doc) { return doc["graph_module"]["signature"]; }

// An edit that puts the node `json` first in the program.
Edit with_node(const std::string& json) {
  return [json](rapidjson::Document& doc) {
    rapidjson::Document node(&doc.GetAllocator());
    node.Parse(json.c_str());
    ASSERT_FALSE(node.HasParseError()) << json;
    rapidjson::Value& nodes = graph(doc)["nodes"];
    rapidjson::Value copy(node, doc.GetAllocator());
    nodes.PushBack(copy, doc.GetAllocator());
    for (rapidjson::SizeType i = nodes.Size() - 1; i > 0; --i) nodes[i].Swap(nodes[i - 1]);
  };
}

// A symbolic node `name` of target `target` with integer arguments (as_int) or a tensor (a string).
std::string sym_node(const std::string& name, const std::string& target, const std::vector<std::string>& args) {
  std::string inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool tensor = !args[i].empty() && (std::isalpha(static_cast<unsigned char>(args[i][0])) != 0);
    inputs += std::string(i ? "," : "") + "{\"name\":\"a" + std::to_string(i) + "\",\"arg\":" +
              (tensor ? "{\"as_tensor\":{\"name\":\"" + args[i] + "\"}}" : "{\"as_int\":" + args[i] + "}") + "}";
  }
  return "{\"name\":\"" + name + "\",\"target\":\"" + target + "\",\"inputs\":[" + inputs +
         "],\"outputs\":[{\"as_sym_int\":{\"as_name\":\"" + name + "\"}}],\"metadata\":{}}";
}

const std::string kMin = std::to_string(std::numeric_limits<int64_t>::min());
const std::string kMax = std::to_string(std::numeric_limits<int64_t>::max());

// `bytes` with the local header of `name`'s record broken: the zip's directory still lists it, reading it fails.
std::string break_record(std::string bytes, const std::string& name) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  const size_t header = bytes.rfind("PK\x03\x04", reader.getRecordOffset(name));
  if (header == std::string::npos) throw std::runtime_error("no local header for " + name);
  bytes[header + 2] = 'X';
  return bytes;
}

// Finding 1: INT64_MIN // -1 trapped (SIGFPE killed the server), + - * and negation overflowed (undefined),
// and sym_size / sym_stride passed a dimension from the file to Tensor::size() (c10::IndexError).
TEST(ExportReview, SymbolicIntegersAreChecked) {
  const auto error = [](const std::string& node) { return import_error(edited("tiny_cnn.pt2", with_node(node))); };
  EXPECT_NE(error(sym_node("fd", "_operator.floordiv", {kMin, "-1"}))
                .find("request.pt2: node 'fd' (_operator.floordiv): " + kMin + " // -1 overflows int64"),
            std::string::npos);
  EXPECT_EQ(error(sym_node("md", "_operator.mod", {kMin, "-1"})), "") << "INT64_MIN % -1 is 0";
  EXPECT_EQ(error(sym_node("fd", "_operator.floordiv", {"-7", "2"})), "");
  EXPECT_NE(
      error(sym_node("fd", "_operator.floordiv", {"7", "0"})).find("node 'fd' (_operator.floordiv): division by zero"),
      std::string::npos);
  EXPECT_NE(
      error(sym_node("s", "_operator.add", {kMax, "1"})).find("node 's' (_operator.add): " + kMax + " + 1 overflows"),
      std::string::npos);
  EXPECT_NE(error(sym_node("s", "_operator.sub", {kMin, "1"})).find(kMin + " - 1 overflows int64"), std::string::npos);
  EXPECT_NE(error(sym_node("s", "_operator.mul", {kMax, "2"})).find(kMax + " * 2 overflows int64"), std::string::npos);
  EXPECT_NE(error(sym_node("s", "_operator.neg", {kMin})).find("node 's' (_operator.neg): 0 - " + kMin + " overflows"),
            std::string::npos);
  EXPECT_NE(
      error(sym_node("sz", "torch.ops.aten.sym_size.int", {"x", "7"}))
          .find("node 'sz' (torch.ops.aten.sym_size.int): dimension 7 is out of range for a tensor of 4 dimensions"),
      std::string::npos);
  EXPECT_NE(error(sym_node("st", "torch.ops.aten.sym_stride.int", {"x", "-5"})).find("dimension -5 is out of range"),
            std::string::npos);
  EXPECT_EQ(error(sym_node("sz", "torch.ops.aten.sym_size.int", {"x", "-1"})), "");
}

rapidjson::Value& x_sizes(rapidjson::Document& doc) { return graph(doc)["tensor_values"]["x"]["sizes"]; }

// Finding 2: sizes from the file were trusted: an input's recorded example, a negative static size (it read
// as "symbolic"), the weights' total, and the sizes a node's arguments give its output (aten.ones, repeat).
TEST(ExportReview, SizesAreCapped) {
  const std::string input = import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) {
    for (rapidjson::Value& s : x_sizes(doc).GetArray()) s["as_int"].SetInt64(100000);
  }));
  EXPECT_NE(input.find("input 'x': its recorded example 100000x100000x100000x100000 has more than 2^31 elements"),
            std::string::npos)
      << input;
  const std::string negative =
      import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) { x_sizes(doc)[0]["as_int"].SetInt64(-3); }));
  EXPECT_NE(negative.find("tensor 'x': sizes[0]: negative size -3"), std::string::npos) << negative;

  ImportOptions small;
  small.max_weight_bytes = 1000;
  const std::string weights = error_of<InputError>([&] { import_exported_program(fixture("tiny_cnn.pt2"), {}, small); });
  EXPECT_NE(weights.find("bytes, over the limit of 1000 bytes"), std::string::npos) << weights;
  EXPECT_NO_THROW(import_exported_program(fixture("tiny_cnn.pt2"), {}));

  const std::string ones = import_error(edited(
      "tiny_cnn.pt2", with_node("{\"name\":\"big\",\"target\":\"torch.ops.aten.ones.default\",\"inputs\":[{\"name\":"
                                "\"size\",\"arg\":{\"as_ints\":[1048576,1048576]}}],\"outputs\":[{\"as_tensor\":{"
                                "\"name\":\"big\"}}],\"metadata\":{}}")));
  EXPECT_NE(ones.find("node 'big' (torch.ops.aten.ones.default): an output would hold 1.09951e+12 elements, over the "
                      "limit of 2^31 for one tensor"),
            std::string::npos)
      << ones;
  const std::string repeat = import_error(edited(
      "tiny_cnn.pt2",
      with_node("{\"name\":\"rep\",\"target\":\"torch.ops.aten.repeat.default\",\"inputs\":[{\"name\":\"self\",\"arg\":"
                "{\"as_tensor\":{\"name\":\"x\"}}},{\"name\":\"repeats\",\"arg\":{\"as_ints\":[10000,10000,1,1]}}],"
                "\"outputs\":[{\"as_tensor\":{\"name\":\"rep\"}}],\"metadata\":{}}")));
  EXPECT_NE(repeat.find("node 'rep' (torch.ops.aten.repeat.default): an output would hold"), std::string::npos)
      << repeat;
}

// Finding 6: a weight record of a size that is no whole number of elements (c10::Error from getRecord, naming
// no tensor), a negative storage offset (c10::Error from as_strided), a record bigger than its metadata says
// (counted), a record that does not read back (a broken zip entry).
TEST(ExportReview, WeightRecordsAreChecked) {
  const std::string odd =
      import_error(edited("frozen.pt2", {}, [](Records& r) { record(r, "data/weights/weight_0").push_back('\0'); }));
  EXPECT_NE(odd.find("record 'data/weights/weight_0' of tensor 'backbone.weight' has 257 bytes, not a whole number "
                     "of Float elements (4 bytes each)"),
            std::string::npos)
      << odd;
  const std::string offset = import_error(edited("frozen.pt2", [](rapidjson::Document& doc) {
    graph(doc)["tensor_values"]["p_backbone_weight"]["storage_offset"]["as_int"].SetInt64(-1);
  }));
  EXPECT_NE(offset.find("tensor 'p_backbone_weight': storage_offset: negative offset -1"), std::string::npos) << offset;
  ImportOptions small;
  small.max_weight_bytes = 2000;
  const std::string big = import_error(
      edited("frozen.pt2", {}, [](Records& r) { record(r, "data/weights/weight_0").append(4000, '\0'); }), small);
  EXPECT_NE(big.find("tensor 'backbone.weight' brings the parameters, buffers and constants to 4256 bytes"),
            std::string::npos)
      << big;

  const std::string unread = import_error(break_record(edited("frozen.pt2", {}), "data/weights/weight_0"));
  EXPECT_NE(unread.find("request.pt2: record 'data/weights/weight_0' of tensor 'backbone.weight' cannot be read: "),
            std::string::npos)
      << unread;
}

// A c10::Error no step caught still names the file as an InputError (the service answers only those).
TEST(ExportReview, ReaderErrorsAreInputErrors) {
  const std::string message = import_error(break_record(edited("frozen.pt2", {}), "models/model.json"));
  EXPECT_NE(message.find("request.pt2: "), std::string::npos) << message;
  EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << "no backtrace: " << message;
}

// Finding 5: a value of another JSON type than an object where the importer reads a field: cereal's RapidJSON
// assertion threw "rapidjson internal assertion failure: IsObject()", naming nothing.
TEST(ExportReview, NonObjectsNameTheirField) {
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](rapidjson::Document& doc) { signature(doc)["output_specs"][0]["user_output"].SetInt(5); },
       "graph_module.signature.output_specs[0].user_output: expected an object with field 'arg', got 5"},
      {[](rapidjson::Document& doc) { signature(doc)["input_specs"][0]["parameter"].SetInt(5); },
       "graph_module.signature.input_specs[0].parameter: expected an object, got 5"},
      {[](rapidjson::Document& doc) { signature(doc)["input_specs"][0].SetInt(5); },
       "graph_module.signature.input_specs[0]: expected an object, got 5"},
      {[](rapidjson::Document& doc) {
         rapidjson::Value& size = x_sizes(doc)[0];
         size.RemoveMember("as_int");
         size.AddMember("as_expr", 5, doc.GetAllocator());
       },
       "tensor 'x': sizes[0].as_expr: expected an object, got 5"},
      {[](rapidjson::Document& doc) { graph(doc)["nodes"][0]["outputs"][0]["as_tensor"].SetInt(5); },
       "node 'conv2d' (torch.ops.aten.conv2d.default): outputs[0].as_tensor: expected an object, got 5"},
  };
  for (const auto& [edit, expected] : cases) {
    const std::string message = import_error(edited("tiny_cnn.pt2", edit));
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  // The reader's own helpers: a field of a non-object names the field (and its path, given one).
  const JsonReader<InputError> json{"test"};
  rapidjson::Document five;
  five.Parse("5");
  EXPECT_NE(error_of<InputError>([&] { json.member(five, "arg"); }).find("field 'arg': expected an object holding it, got 5"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([&] { json.require(five, "arg", "a.b[0]"); }).find("a.b[0]: expected an object with field 'arg'"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([&] { json.known(five, {"arg"}, "a.b"); }).find("a.b: expected an object, got 5"),
            std::string::npos);
}

// Finding 3: chunk's outputs (Tensor(a)[], written as as_tensors) joined no alias group: relu_ on one was lost.
TEST(ExportReview, InPlaceWriteIntoAChunkIsRefused) {
  const std::string message = error_of<InputError>([] { import_exported_program(fixture("chunk_write.pt2"), {}); });
  EXPECT_NE(message.find("reads 'mul', which shares its storage with a tensor that node 'relu_'"), std::string::npos)
      << message;
}

// Finding 7: half.add_(float) made functional is Float; the write keeps Half ("is Float when run" before).
TEST(ExportReview, InPlaceOpKeepsItsDtype) {
  const Graph g = import_exported_program(fixture("inplace_dtype.pt2"), {});
  const auto cast = g.find("add_cast");
  ASSERT_TRUE(cast.has_value());
  EXPECT_EQ(g.op(*cast).type, "aten::_to_copy");
  EXPECT_EQ(g.op(*cast).outputs.at(0).dtype, DType::Float16);
  EXPECT_EQ(g.op(*g.find("add")).outputs.at(0).dtype, DType::Float32);
}

// Finding 8: the unknown-dtype error listed "char, byte" (refused) and not int8, uint8.
TEST(ExportReview, UnknownDtypeListsTheAcceptedNames) {
  const std::string message = error_of<InputError>([] { parse_sample_input("x:2:char"); });
  const std::string head = "unknown dtype 'char' (";
  const auto begin = message.find(head);
  ASSERT_NE(begin, std::string::npos) << message;
  const std::string list = message.substr(begin + head.size(), message.find(')', begin) - begin - head.size());
  EXPECT_EQ(list, dtype_names());
  std::vector<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) names.push_back(name.substr(name[0] == ' ' ? 1 : 0));
  EXPECT_EQ(names.size(), 10u);
  for (const std::string& name : names) EXPECT_TRUE(parse_dtype(name).has_value()) << name;
  EXPECT_NE(list.find("int8"), std::string::npos);
  EXPECT_NE(list.find("uint8"), std::string::npos);
}

// ---------------------------------------------------------------- a second review (2026-12)

// An aten node `name` of `target` with the named arguments `args` (JSON of each Argument), returning one tensor.
std::string aten_node(const std::string& name, const std::string& target,
                      const std::vector<std::pair<std::string, std::string>>& args) {
  std::string inputs;
  for (const auto& [arg, json] : args)
    inputs += std::string(inputs.empty() ? "" : ",") + "{\"name\":\"" + arg + "\",\"arg\":" + json + "}";
  return "{\"name\":\"" + name + "\",\"target\":\"torch.ops.aten." + target + "\",\"inputs\":[" + inputs +
         "],\"outputs\":[{\"as_tensor\":{\"name\":\"" + name + "\"}}],\"metadata\":{}}";
}

// Finding 1: a symbolic float or bool naming a tensor became a tensor argument with no op behind it (an
// abort in Recorder::record_arguments, or std::out_of_range for a list holding one).
TEST(ExportReview, SymbolicFloatsAndBoolsAreNumbers) {
  for (const std::string kind : {"as_sym_float", "as_sym_bool"}) {
    const std::string message = import_error(
        edited("tiny_cnn.pt2",
               with_node(aten_node("r", "relu.default", {{"self", "{\"" + kind + "\":{\"as_name\":\"x\"}}"}}))));
    const std::string what = kind == "as_sym_float" ? "a symbolic float" : "a symbolic bool";
    EXPECT_NE(message.find("node 'r' (torch.ops.aten.relu.default) argument 'self': 'x' is a tensor, not " + what),
              std::string::npos)
        << message;
  }
  const std::string list = import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) {
    rapidjson::Document spec(&doc.GetAllocator());
    spec.Parse(R"({"constant_input":{"name":"c","value":{"as_sym_float":{"as_name":"x"}}}})");
    rapidjson::Value copy(spec, doc.GetAllocator());
    signature(doc)["input_specs"].PushBack(copy, doc.GetAllocator());
    with_node(aten_node("r", "cat.default", {{"tensors", R"({"as_tensors":[{"name":"c"}]})"}}))(doc);
  }));
  EXPECT_NE(list.find("'x' is a tensor, not a symbolic float"), std::string::npos) << list;
  // A symbolic size read as a float still is one: x * sym_size(x, 0).
  const std::string sized = import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) {
    with_node(
        aten_node("m", "mul.Tensor",
                  {{"self", R"({"as_tensor":{"name":"x"}})"}, {"other", R"({"as_sym_float":{"as_name":"sz"}})"}}))(doc);
    with_node(sym_node("sz", "torch.ops.aten.sym_size.int", {"x", "0"}))(doc);
  }));
  EXPECT_EQ(sized, "");
}

// Finding 2: the values a node uses were collected recursively through its inputs, before any check: a node
// whose inputs nest 10^6 arrays deep overflowed the stack (SIGSEGV).
TEST(ExportReview, DeeplyNestedInputsAreRefused) {
  const size_t depth = 1000000;
  const std::string bytes = edited(
      "tiny_cnn.pt2",
      [](rapidjson::Document& doc) {
        with_node(
            R"({"name":"deep","target":"torch.ops.aten.relu.default","inputs":"@DEEP@","outputs":[],"metadata":{}})")(
            doc);
      },
      [depth](Records& r) {
        std::string& program = record(r, "models/model.json");
        program.replace(program.find("\"@DEEP@\""), 8, std::string(depth, '[') + std::string(depth, ']'));
      });
  const std::string message = import_error(bytes);
  EXPECT_NE(message.find("node 'deep' (torch.ops.aten.relu.default)"), std::string::npos) << message.substr(0, 300);
}

// Finding 3: aten._reshape_alias (as ATen's other view ops, unchecked) made a view far outside its base's
// storage; the next op read wild memory (SIGSEGV).
TEST(ExportReview, ViewsOutsideTheirStorageAreRefused) {
  const std::string message = import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) {
    with_node(aten_node("cl", "clone.default", {{"self", R"({"as_tensor":{"name":"al"}})"}}))(doc);
    with_node(aten_node("al", "_reshape_alias.default",
                        {{"self", R"({"as_tensor":{"name":"x"}})"},
                         {"size", R"({"as_ints":[1024,1024]})"},
                         {"stride", R"({"as_ints":[1073741824,1]})"}}))(doc);
  }));
  EXPECT_NE(message.find("node 'al' (torch.ops.aten._reshape_alias.default): output 0 (Float 1024x1024, strides "
                         "1073741824x1, offset 0) reaches byte 4393751547904 of a storage of 1536 bytes"),
            std::string::npos)
      << message;
  // Within its storage, the same view imports.
  EXPECT_EQ(import_error(
                edited("tiny_cnn.pt2",
                       [](rapidjson::Document& doc) {
                         with_node(aten_node("cl", "clone.default", {{"self", R"({"as_tensor":{"name":"al"}})"}}))(doc);
                         with_node(aten_node("al", "_reshape_alias.default",
                                             {{"self", R"({"as_tensor":{"name":"x"}})"},
                                              {"size", R"({"as_ints":[6,64]})"},
                                              {"stride", R"({"as_ints":[64,1]})"}}))(doc);
                       })),
            "");
}

// Finding 4: the 2^31-element cap came from a dry run on the meta device, and an op without a meta kernel in
// LibTorch (tril_indices, max_unpool2d, and relu, conv, batch_norm) skipped it: row = col = 70000 allocated
// 39 GB. Its allocations are capped while it runs instead.
TEST(ExportReview, OpsWithoutAMetaKernelAreCapped) {
  const std::string tril = import_error(
      edited("tiny_cnn.pt2", with_node(aten_node("big", "tril_indices.default",
                                                 {{"row", R"({"as_int":70000})"}, {"col", R"({"as_int":70000})"}}))));
  EXPECT_NE(tril.find("node 'big' (torch.ops.aten.tril_indices.default): running it allocates 39200560000 bytes at "
                      "once, over the limit of 8589934592 (2^31 elements of 4 bytes) for one tensor"),
            std::string::npos)
      << tril;
  const std::string unpool = import_error(edited("tiny_cnn.pt2", [](rapidjson::Document& doc) {
    with_node(aten_node("big", "max_unpool2d.default",
                        {{"self", R"({"as_tensor":{"name":"src"}})"},
                         {"indices", R"({"as_tensor":{"name":"idx"}})"},
                         {"output_size", R"({"as_ints":[65536,65537]})"}}))(doc);
    with_node(aten_node("src", "ones.default", {{"size", R"({"as_ints":[1,1,1,1]})"}}))(doc);
    with_node(aten_node("idx", "zeros.default",
                        {{"size", R"({"as_ints":[1,1,1,1]})"}, {"dtype", R"({"as_scalar_type":5})"}}))(doc);
  }));
  EXPECT_NE(unpool.find("node 'big' (torch.ops.aten.max_unpool2d.default): running it allocates"), std::string::npos)
      << unpool;
  // Small, they import.
  EXPECT_EQ(import_error(
                edited("tiny_cnn.pt2", with_node(aten_node("t", "tril_indices.default",
                                                           {{"row", R"({"as_int":7})"}, {"col", R"({"as_int":7})"}})))),
            "");
}

// Finding 6: the live subgraph kept every output and the loss, and make_training_graph trained on its last
// scalar sink: a model returning (loss, y.mean()) computed after the loss trained on y.mean() and dropped the loss.
TEST(ExportReview, TrainsOnTheLossNotALaterScalarOutput) {
  const std::string bytes = edited("tiny_regression.pt2", [](rapidjson::Document& doc) {
    rapidjson::Document node(&doc.GetAllocator());
    node.Parse(aten_node("stat", "mean.dim",
                         {{"self", R"({"as_tensor":{"name":"linear"}})"},
                          {"dim", R"({"as_ints":[0,1]})"},
                          {"keepdim", R"({"as_bool":true})"}})
                   .c_str());
    rapidjson::Value copy(node, doc.GetAllocator());
    graph(doc)["nodes"].PushBack(copy, doc.GetAllocator());
    rapidjson::Document spec(&doc.GetAllocator());
    spec.Parse(R"({"user_output":{"arg":{"as_tensor":{"name":"stat"}}}})");
    rapidjson::Value spec_copy(spec, doc.GetAllocator());
    signature(doc)["output_specs"].PushBack(spec_copy, doc.GetAllocator());
  });
  const Graph g = import_exported_program_bytes(bytes, "request.pt2", {});
  const auto loss = g.find("mse_loss");
  ASSERT_TRUE(loss.has_value());
  bool differentiated = false;
  for (const Op& op : g.ops()) differentiated |= op.forward == *loss;
  EXPECT_TRUE(differentiated) << "trained on another output than the loss";
  const auto means = [](const Graph& graph) {
    return std::count_if(graph.ops().begin(), graph.ops().end(),
                         [](const Op& op) { return op.type == "aten::mean.dim"; });
  };
  EXPECT_EQ(means(g), 0) << "the training step computes only what the loss needs";
  // Left out by make_training_graph, which counts it (the inputs and params stay, read or not).
  ASSERT_TRUE(g.attrs.count("training.dropped_ops"));
  EXPECT_EQ(g.attrs.at("training.dropped_ops"), "1");
  ImportOptions forward;
  forward.forward_only = true;
  const Graph inference = import_exported_program_bytes(bytes, "request.pt2", {}, forward);
  EXPECT_EQ(means(inference), 1);
  EXPECT_TRUE(inference.find("mse_loss").has_value());
}

}  // namespace
}  // namespace placer
