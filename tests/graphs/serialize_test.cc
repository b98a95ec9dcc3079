#include "placer/graphs/serialize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "placer/graphs/error.h"
#include "tiny_graphs.h"

// Tracks the largest single allocation made by this thread while armed, so a
// test can prove that a file claiming 2^60 elements is rejected before the
// loader allocates for it. Replacing operator new is allowed; the default
// operator delete frees with free().
namespace {
thread_local bool g_track_allocations = false;
thread_local size_t g_largest_allocation = 0;
}  // namespace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t size) {
  if (g_track_allocations && size > g_largest_allocation) g_largest_allocation = size;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace placer {
namespace {

using testing::every_arg_kind;
using testing::f32;
using testing::make_op;
using testing::tiny_forward;
using testing::tiny_training;

using testing::error_of;

std::string temp_path(const std::string& name) {
  return (::testing::TempDir() + "placer_serialize_" + std::to_string(::getpid()) + "_" + name);
}

TEST(SerializeGraph, JsonRoundTripIsExact) {
  for (const Graph& g : {tiny_forward(), tiny_training(), every_arg_kind()}) {
    const std::string json = graph_to_json(g);
    const Graph back = graph_from_json(json);
    EXPECT_EQ(back, g) << json;
    EXPECT_EQ(graph_to_json(back), json);
  }
}

// Names are echoed in errors, files and service replies: a file whose strings are not UTF-8 is refused where it is
// read.
TEST(SerializeGraph, StringsThatAreNotUtf8AreRefused) {
  std::string json = graph_to_json(tiny_training());
  json.replace(json.find("\"relu_grad\""), 11, "\"relu\xff\xfe\"");
  const std::string e = error_of<InputError>([&] { graph_from_json(json); });
  EXPECT_NE(e.find("JSON parse error at byte "), std::string::npos) << e;
  EXPECT_NE(e.find("Invalid encoding in string"), std::string::npos) << e;
}

TEST(SerializeGraph, JsonUsesNamesNotIds) {
  const std::string json = graph_to_json(tiny_training());
  EXPECT_NE(json.find("\"format\": \"placer.graph\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"version\": 1"), std::string::npos);
  EXPECT_NE(json.find("\"op\": \"relu_grad\""), std::string::npos);  // an input, by name
  EXPECT_NE(json.find("\"forward\": \"fc\""), std::string::npos);
  EXPECT_NE(json.find("\"phase\": \"backward\""), std::string::npos);
  EXPECT_NE(json.find("\"dtype\": \"float\""), std::string::npos);
}

TEST(SerializeGraph, BinaryRoundTripIsExact) {
  for (const Graph& g : {tiny_forward(), tiny_training(), every_arg_kind()}) {
    const std::string bytes = graph_to_binary(g);
    EXPECT_EQ(graph_from_binary(bytes), g);
    EXPECT_EQ(graph_to_binary(graph_from_binary(bytes)), bytes);
  }
}

TEST(SerializeGraph, SaveAndLoadByExtension) {
  const Graph g = tiny_training();
  const std::string json_path = temp_path("g.json"), bin_path = temp_path("g.bin");
  save_graph(g, json_path);
  save_graph(g, bin_path);
  EXPECT_EQ(read_file(json_path).substr(0, 1), "{");
  EXPECT_EQ(read_file(bin_path).substr(0, 7), "PLGRAPH");
  EXPECT_EQ(load_graph(json_path), g);
  EXPECT_EQ(load_graph(bin_path), g);
  // A JSON file with a binary extension is rejected, naming the path.
  const std::string wrong = temp_path("g.graph");
  write_file_atomic(wrong, read_file(json_path));
  const std::string msg = error_of<GraphError>([&] { load_graph(wrong); });
  EXPECT_NE(msg.find(wrong), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a placer binary graph"), std::string::npos) << msg;
  std::remove(json_path.c_str());
  std::remove(bin_path.c_str());
  std::remove(wrong.c_str());
}

TEST(SerializeFiles, MissingFileNamesThePath) {
  const std::string msg = error_of<InputError>([] { read_file("/nonexistent/dir/g.json"); });
  EXPECT_NE(msg.find("/nonexistent/dir/g.json"), std::string::npos) << msg;
  const std::string wmsg = error_of<InputError>([] { write_file_atomic("/nonexistent/dir/out.json", "x"); });
  EXPECT_NE(wmsg.find("/nonexistent/dir/out.json"), std::string::npos) << wmsg;
}

// ---- JSON inputs from outside ------------------------------------------------

std::string graph_json(const std::string& ops) {
  return R"({"format":"placer.graph","version":1,"name":"t","ops":[)" + ops + "]}";
}

TEST(SerializeGraph, OpsInAnyOrderAreSortedTopologically) {
  // relu listed before its input, and `fc` before `x`.
  const std::string text = graph_json(R"(
    {"name":"relu","type":"aten::relu","inputs":[{"op":"fc","output":0}],"args":[{"kind":"tensor","value":0}],
     "outputs":[{"shape":[4,2],"dtype":"float"}],"flops":8},
    {"name":"fc","type":"aten::mm","inputs":[{"op":"x"},{"op":"w"}],"outputs":[{"shape":[4,2]}],"flops":48},
    {"name":"w","type":"placer::param","outputs":[{"shape":[3,2]}],"param_bytes":24},
    {"name":"x","type":"placer::input","outputs":[{"shape":[4,3]}]})");
  const Graph g = graph_from_json(text);
  ASSERT_EQ(g.size(), 4);
  // Kahn's order with the smallest file index first: w (file 2), x (3), fc (1), relu (0).
  EXPECT_EQ(g.op(OpId(0)).name, "w");
  EXPECT_EQ(g.op(OpId(1)).name, "x");
  EXPECT_EQ(g.op(OpId(2)).name, "fc");
  EXPECT_EQ(g.op(OpId(3)).name, "relu");
  EXPECT_EQ(g.op(OpId(2)).inputs, (std::vector<TensorRef>{{OpId(1), 0}, {OpId(0), 0}}));
  EXPECT_EQ(g.op(OpId(3)).flops, 8.0);
  EXPECT_EQ(g.op(OpId(0)).param_bytes, 24);
}

TEST(SerializeGraph, CycleIsNamed) {
  const std::string text = graph_json(R"(
    {"name":"in","type":"placer::input","outputs":[{"shape":[2]}]},
    {"name":"a","type":"aten::add.Tensor","inputs":[{"op":"in"},{"op":"c"}],"outputs":[{"shape":[2]}]},
    {"name":"b","type":"aten::relu","inputs":[{"op":"a"}],"outputs":[{"shape":[2]}]},
    {"name":"c","type":"aten::relu","inputs":[{"op":"b"}],"outputs":[{"shape":[2]}]},
    {"name":"d","type":"aten::relu","inputs":[{"op":"c"}],"outputs":[{"shape":[2]}]})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("cycle of 3 op(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'a' -> 'b' -> 'c' -> 'a'"), std::string::npos) << msg;
}

TEST(SerializeGraph, SelfLoopIsACycle) {
  const std::string text =
      graph_json(R"({"name":"a","type":"aten::relu","inputs":[{"op":"a"}],"outputs":[{"shape":[2]}]})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("cycle of 1 op(s): 'a' -> 'a'"), std::string::npos) << msg;
}

TEST(SerializeGraph, DuplicateNamesAreNamed) {
  const std::string text = graph_json(R"(
    {"name":"x","type":"placer::input","outputs":[{"shape":[2]}]},
    {"name":"y","type":"placer::input","outputs":[{"shape":[2]}]},
    {"name":"x","type":"placer::input","outputs":[{"shape":[2]}]})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("ops[2] 'x': duplicate op name (also ops[0])"), std::string::npos) << msg;
}

TEST(SerializeGraph, EdgeToMissingOpIsNamed) {
  const std::string text = graph_json(R"(
    {"name":"x","type":"placer::input","outputs":[{"shape":[2]}]},
    {"name":"r","type":"aten::relu","inputs":[{"op":"x"},{"op":"ghost"}],"outputs":[{"shape":[2]}]})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("ops[1] 'r': inputs[1].op: refers to missing op 'ghost'"), std::string::npos) << msg;
}

TEST(SerializeGraph, OutputIndexOutOfRangeIsNamed) {
  const std::string text = graph_json(R"(
    {"name":"x","type":"placer::input","outputs":[{"shape":[2]}]},
    {"name":"r","type":"aten::relu","inputs":[{"op":"x","output":1}],"outputs":[{"shape":[2]}]})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("ops[1] 'r': inputs[0].output: is 1 but 'x' has 1 output(s)"), std::string::npos) << msg;
}

TEST(SerializeGraph, ForwardToMissingOpIsNamed) {
  const std::string text = graph_json(R"(
    {"name":"x","type":"placer::input","outputs":[{"shape":[2]}],"phase":"backward","forward":"nope"})");
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("ops[0] 'x': forward: refers to missing op 'nope'"), std::string::npos) << msg;
}

TEST(SerializeGraph, MissingAndMistypedFieldsAreNamed) {
  struct Case {
    std::string ops;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"({"name":"x","type":"placer::input"})", "ops[0] 'x': outputs: missing required field"},
      {R"({"type":"placer::input","outputs":[]})", "ops[0]: name: missing required field"},
      {R"({"name":"","type":"placer::input","outputs":[]})", "ops[0]: name: empty"},
      {R"({"name":"x","outputs":[]})", "ops[0] 'x': type: missing required field"},
      {R"({"name":"x","type":"t","outputs":[],"flops":"many"})", "ops[0] 'x': flops: expected a number, got \"many\""},
      {R"({"name":"x","type":"t","outputs":[],"param_bytes":1.5})", "ops[0] 'x': param_bytes: expected an integer"},
      {R"({"name":"x","type":"t","outputs":{}})", "ops[0] 'x': outputs: expected an array, got an object"},
      {R"({"name":"x","type":"t","outputs":[{"shape":[2,"3"]}]})",
       "ops[0] 'x': outputs[0].shape[1]: expected an integer"},
      {R"({"name":"x","type":"t","outputs":[{"dtype":"float"}]})",
       "ops[0] 'x': outputs[0].shape: missing required field"},
      {R"({"name":"x","type":"t","outputs":[{"shape":[2],"dtype":"float7"}]})",
       "ops[0] 'x': outputs[0].dtype: unknown dtype 'float7'"},
      {R"({"name":"x","type":"t","outputs":[],"phase":"sideways"})", "ops[0] 'x': phase: unknown phase 'sideways'"},
      {R"({"name":"x","type":"t","outputs":[],"args":[{"kind":"complex","value":1}]})",
       "ops[0] 'x' args[0]: kind: unknown argument kind 'complex'"},
      {R"({"name":"x","type":"t","outputs":[],"args":[{"kind":"int"}]})",
       "ops[0] 'x' args[0]: value: missing required field"},
      {R"({"name":"x","type":"t","outputs":[],"args":[{"kind":"ints","value":[1,2.5]}]})",
       "ops[0] 'x' args[0]: value[1]: expected an integer"},
      {R"({"name":"x","type":"t","outputs":[],"args":[{"kind":"dtype","value":"quad"}]})",
       "ops[0] 'x' args[0]: value: unknown dtype 'quad'"},
      {R"(42)", "ops[0]: expected an object, got 42"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of<GraphError>([&] { graph_from_json(graph_json(c.ops)); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "got: " << msg << "\nexpected: " << c.expected;
  }
}

TEST(SerializeGraph, NegativeAndAbsurdSizesAreNamed) {
  std::string msg = error_of<GraphError>(
      [&] { graph_from_json(graph_json(R"({"name":"x","type":"placer::input","outputs":[{"shape":[4,-3]}]})")); });
  EXPECT_NE(msg.find("op 'x': outputs[0].shape[1]: negative size -3"), std::string::npos) << msg;
  msg = error_of<GraphError>([&] {
    graph_from_json(
        graph_json(R"({"name":"x","type":"placer::input","outputs":[{"shape":[1048576,1048576,1048576]}]})"));
  });
  EXPECT_NE(msg.find("op 'x': outputs[0].shape: absurd size [1048576,1048576,1048576]"), std::string::npos) << msg;
  msg = error_of<GraphError>(
      [&] { graph_from_json(graph_json(R"({"name":"x","type":"t","outputs":[],"param_bytes":-8})")); });
  EXPECT_NE(msg.find("op 'x': param_bytes: negative size -8"), std::string::npos) << msg;
  msg =
      error_of<GraphError>([&] { graph_from_json(graph_json(R"({"name":"x","type":"t","outputs":[],"flops":-1})")); });
  EXPECT_NE(msg.find("op 'x': flops: must be finite and >= 0"), std::string::npos) << msg;
  msg = error_of<GraphError>([&] {
    graph_from_json(graph_json(R"({"name":"x","type":"t","outputs":[{"shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]})"));
  });
  EXPECT_NE(msg.find("op 'x': outputs[0].shape: rank 17 is over the limit 16"), std::string::npos) << msg;
}

TEST(SerializeGraph, NotAGraphFile) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "not a placer graph file: JSON parse error at byte 0"},
      {"hello", "not a placer graph file: JSON parse error"},
      {"[1,2,3]", "not a placer graph file: the top level is not a JSON object"},
      {"{}", "not a placer graph file: format: missing required field"},
      {R"({"format":"placer.cluster","version":1})",
       "not a placer graph file: format: expected \"placer.graph\", got \"placer.cluster\""},
      {R"({"format":"placer.graph","version":99,"ops":[]})", "unsupported graph format version 99"},
      {R"({"format":"placer.graph","version":1})", "ops: missing required field"},
      {R"({"format":"placer.graph","version":1,"ops":[)", "JSON parse error"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of<GraphError>([&] { graph_from_json(c.text); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "got: " << msg << "\nexpected: " << c.expected;
  }
}

TEST(SerializeGraph, DeeplyNestedJsonIsAnErrorNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string msg = error_of<GraphError>([&] { graph_from_json(deep); });
  EXPECT_NE(msg.find("not a placer graph file"), std::string::npos) << msg;
  const std::string inside = graph_json(R"({"name":"x","type":"t","outputs":)" + deep + "}");
  EXPECT_NE(error_of<GraphError>([&] { graph_from_json(inside); }).find("ops[0] 'x'"), std::string::npos);
}

TEST(SerializeGraph, EmptyGraphRoundTrips) {
  Graph g;
  g.name = "empty";
  EXPECT_EQ(graph_from_json(graph_to_json(g)), g);
  EXPECT_EQ(graph_from_binary(graph_to_binary(g)), g);
}

// ---- binary inputs ------------------------------------------------------------

TEST(SerializeBinary, EveryTruncationIsAnError) {
  const std::string bytes = graph_to_binary(tiny_training());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string cut = bytes.substr(0, n);
    try {
      graph_from_binary(cut);
      ADD_FAILURE() << "a binary cut to " << n << " of " << bytes.size() << " bytes loaded";
    } catch (const GraphError& e) {
      EXPECT_NE(std::string(e.what()).find("binary graph"), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(error_of<GraphError>([&] { graph_from_binary(bytes + "x"); }).find("1 unexpected trailing bytes"),
            std::string::npos);
}

TEST(SerializeBinary, CorruptedBytesNeverCrash) {
  // Every single-byte corruption either loads a valid graph or is a GraphError.
  const std::string bytes = graph_to_binary(tiny_training());
  int rejected = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char x : {0xffu, 0x80u, 0x01u}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ x);
      try {
        graph_from_binary(bad);
      } catch (const GraphError&) {
        ++rejected;
      }
    }
  EXPECT_GT(rejected, static_cast<int>(bytes.size()));  // most corruptions are caught
}

// Binary layout (see serialize.cc): 8 magic bytes, u32 version, u64 name
// length, name, u64 attr count, ..., u64 op count, ...
std::string binary_prefix() {
  std::string s("PLGRAPH\0", 8);
  const uint32_t version = 1;
  s.append(reinterpret_cast<const char*>(&version), 4);
  return s;
}

std::string u64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

TEST(SerializeBinary, HugeSizeFieldsAreRejectedWithoutAllocating) {
  const uint64_t huge = uint64_t{1} << 60;
  struct Case {
    std::string bytes;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {binary_prefix() + u64(huge) + "tail", "field 'name' claims 1152921504606846976 elements"},
      {binary_prefix() + u64(0) + u64(huge), "field 'attrs' claims"},
      {binary_prefix() + u64(0) + u64(0) + u64(huge), "field 'ops' claims"},
      // One op whose name is "a", type "t", then 2^60 inputs.
      {binary_prefix() + u64(0) + u64(0) + u64(1) + u64(1) + "a" + u64(1) + "t" + u64(huge) + std::string(80, '\0'),
       "ops[0] 'a': field 'inputs' claims"},
      // ... 0 inputs, 0 args, 1 output with dtype 0 and a shape of 2^60 dims.
      {binary_prefix() + u64(0) + u64(0) + u64(1) + u64(1) + "a" + u64(1) + "t" + u64(0) + u64(0) + u64(1) +
           std::string(1, '\0') + u64(huge) + std::string(80, '\0'),
       "ops[0] 'a': field 'outputs.shape' claims"},
  };
  for (const Case& c : cases) {
    g_largest_allocation = 0;
    g_track_allocations = true;
    std::string msg;
    try {
      graph_from_binary(c.bytes);
    } catch (const GraphError& e) {
      msg = e.what();
    }
    g_track_allocations = false;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "got: " << msg << "\nexpected: " << c.expected;
    EXPECT_LT(g_largest_allocation, size_t{1} << 16) << "largest allocation while loading: " << g_largest_allocation;
  }
}

// An op's argument count is checked before the arguments are read: one byte each in the file, 112 in memory
// (a 30 MB file took 3 GB and ended in std::bad_alloc, naming nothing).
TEST(SerializeBinary, AnArgumentCountOverTheLimitIsNamed) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(4)).args.assign(5000, Arg::none());
  const std::string e = error_of<GraphError>([&] { graph_from_binary(graph_to_binary(g)); });
  EXPECT_NE(e.find("field 'args' claims 5000 arguments, over 1024"), std::string::npos) << e;
}

TEST(SerializeBinary, BadEnumsAreRejected) {
  Graph g = tiny_forward();
  std::string bytes = graph_to_binary(g);
  // The phase byte of the last op sits before its group/layer strings, forward id and view_of:
  // ... u8 phase, u64 0 (group), u64 len + "" (layer), i32 forward, u64 0 (view_of, not recorded),
  // i32 microbatch = 1 + 8 + 8 + 4 + 8 + 4 bytes from the end.
  const size_t phase_at = bytes.size() - (1 + 8 + 8 + 4 + 8 + 4);
  ASSERT_EQ(bytes[phase_at], 0);
  bytes[phase_at] = 7;
  EXPECT_NE(error_of<GraphError>([&] { graph_from_binary(bytes); }).find("ops[5] 'loss': bad phase 7"),
            std::string::npos);
}

TEST(SerializeBinary, ViewOfOutOfRangeIsNamed) {
  // A binary graph's view_of was trusted: an entry past the op's inputs loaded, and the
  // executor's plan read it as "not a view" without a word. Validation now names it.
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{7}, std::vector<int32_t>{-2},
                                          std::vector<int32_t>{-1, -1}}) {
    Graph g = tiny_forward();
    Op& op = g.mutable_op(OpId(g.size() - 1));
    ASSERT_EQ(op.outputs.size(), 1u);
    op.view_of = bad;
    const std::string err = error_of<GraphError>([&] { graph_from_binary(graph_to_binary(g)); });
    EXPECT_NE(err.find("'loss'"), std::string::npos) << err;
    EXPECT_NE(err.find("view_of"), std::string::npos) << err;
  }
  Graph ok = tiny_forward();
  ok.mutable_op(OpId(ok.size() - 1)).view_of = {0};
  EXPECT_EQ(graph_from_binary(graph_to_binary(ok)), ok);
}

// ---- cluster, placement, profile, step result ------------------------------------

// Every object of a graph, cluster, placement or profile file takes only its own keys, each once: a typo
// ("flop") was read as no flops, a device's unknown key was dropped, and of a key given twice the first won.
TEST(SerializeFiles, UnknownAndRepeatedKeysAreNamed) {
  std::string json = graph_to_json(tiny_training());
  std::string typo = json;
  typo.replace(typo.find("\"flops\""), 7, "\"flop\"");
  std::string e = error_of<GraphError>([&] { graph_from_json(typo); });
  EXPECT_NE(e.find(": flop: unknown field (known here: name, type, inputs"), std::string::npos) << e;
  std::string twice = json;
  twice.replace(twice.find("\"flops\""), 7, "\"flops\": 1, \"flops\"");
  e = error_of<GraphError>([&] { graph_from_json(twice); });
  EXPECT_NE(e.find(": flops: given twice"), std::string::npos) << e;
  std::string top = json;
  top.replace(top.find("\"ops\""), 5, "\"bogus\": 1, \"ops\"");
  e = error_of<GraphError>([&] { graph_from_json(top); });
  EXPECT_NE(e.find("bogus: unknown field (known here: format, version, name, attrs, ops)"), std::string::npos) << e;
  std::string attrs = json;
  attrs.replace(attrs.find("\"attrs\": {"), 10, "\"attrs\": {\"a\": \"1\", \"a\": \"2\"");
  if (attrs.find("\"a\": \"2\"}") == std::string::npos) attrs.replace(attrs.find("\"a\": \"2\""), 10, "\"a\": \"2\",");
  e = error_of<GraphError>([&] { graph_from_json(attrs); });
  EXPECT_NE(e.find("attrs.a: given twice"), std::string::npos) << e;

  e = error_of<InputError>([] {
    cluster_from_json(R"({"format":"placer.cluster","version":1,"devices":[{"name":"cpu:0","memory_bytes":1,"bogus":1}]})");
  });
  EXPECT_NE(e.find("devices[0] 'cpu:0': bogus: unknown field"), std::string::npos) << e;
  e = error_of<InputError>([] {
    cluster_from_json(R"({"format":"placer.cluster","version":1,"devices":[{"name":"cpu:0","memory_bytes":1},
        {"name":"cpu:1","memory_bytes":1}],"links":[{"from":"cpu:0","to":"cpu:1","bandwidth_Bps":1e9},
        {"from":"cpu:0","to":"cpu:1","bandwidth_Bps":1e3}]})");
  });
  EXPECT_NE(e.find("links[1]: the link from 'cpu:0' to 'cpu:1' is given twice"), std::string::npos) << e;
  e = error_of<PlacementError>([] {
    placement_from_json(R"({"format":"placer.placement","version":1,"placement":{},"placment":{"x":"cpu:0"}})");
  });
  EXPECT_NE(e.find("placment: unknown field"), std::string::npos) << e;
  e = error_of<InputError>([] {
    profile_from_json(R"({"format":"placer.profile","version":1,"ops":[{"op":"x","device":"cpu:0","seconds":1,
        "second":2}]})");
  });
  EXPECT_NE(e.find("ops[0]: second: unknown field"), std::string::npos) << e;
}

TEST(SerializeCluster, RoundTripAndErrors) {
  Cluster c = parse_device_list("cpu:2");
  c.links.push_back(Link{"cpu:0", "cpu:1", 1e-5, 3e9});
  const std::string json = cluster_to_json(c);
  EXPECT_EQ(cluster_from_json(json), c) << json;

  const std::string bad_link = R"({"format":"placer.cluster","version":1,"devices":[
      {"name":"cpu:0","memory_bytes":1000}],"links":[{"from":"cpu:0","to":"cuda:3"}]})";
  std::string msg = error_of<InputError>([&] { cluster_from_json(bad_link); });
  EXPECT_NE(msg.find("links[0]: to: unknown device 'cuda:3'"), std::string::npos) << msg;
  const std::string no_memory = R"({"format":"placer.cluster","version":1,"devices":[{"name":"cuda:0"}]})";
  msg = error_of<InputError>([&] { cluster_from_json(no_memory); });
  EXPECT_NE(msg.find("devices[0] 'cuda:0': memory_bytes: missing required field"), std::string::npos) << msg;
  // Kind defaults from the name.
  const Cluster small =
      cluster_from_json(R"({"format":"placer.cluster","version":1,"devices":[{"name":"cuda:0","memory_bytes":1024}]})");
  EXPECT_EQ(small.devices.at(0).kind, DeviceKind::Cuda);
  EXPECT_EQ(small.devices.at(0).memory_bytes, 1024);
  msg = error_of<InputError>([&] { cluster_from_json(graph_to_json(tiny_forward())); });
  EXPECT_NE(msg.find("not a placer cluster file"), std::string::npos) << msg;
}

TEST(SerializePlacement, RoundTripAndErrors) {
  NamedPlacement p;
  p.graph = "tiny";
  p.device = {{"x", "cpu:0"}, {"fc", "cpu:1"}, {"we\"ird name", "cpu:1"}};
  const std::string json = placement_to_json(p);
  EXPECT_NE(json.find("\"format\": \"placer.placement\""), std::string::npos) << json;
  const NamedPlacement back = placement_from_json(json);
  EXPECT_EQ(back.graph, p.graph);
  EXPECT_EQ(back.device, p.device);
  std::string msg = error_of<PlacementError>(
      [] { placement_from_json(R"({"format":"placer.placement","version":1,"placement":{"x":3}})"); });
  EXPECT_NE(msg.find("placement: op 'x': expected a device name (a string), got 3"), std::string::npos) << msg;
  msg = error_of<PlacementError>([] {
    placement_from_json(R"({"format":"placer.placement","version":1,"placement":{"x":"cpu:0","x":"cpu:1"}})");
  });
  EXPECT_NE(msg.find("placement: op 'x': listed twice"), std::string::npos) << msg;
  const std::string path = temp_path("p.json");
  save_placement(p, path);
  EXPECT_EQ(load_placement(path).device, p.device);
  std::remove(path.c_str());
}

TEST(SerializeProfile, RoundTrip) {
  Profile p;
  p.graph = "tiny";
  p.devices = "cpu:2";
  p.host = "test";
  p.per_op_overhead_s = 3.5e-6;
  p.ops.push_back(OpTiming{"fc", "aten::addmm(2;4x3;3x2)", "cpu:0", "cpu", 1.25e-5});
  p.ops.push_back(OpTiming{"relu", "", "cpu:0", "cpu", 1e-6});
  p.ops.back().contended_seconds = 1.5e-6;
  LinkFit l;
  l.from = "cpu:0";
  l.to = "cpu:1";
  l.alpha_s = 2e-6;
  l.beta_Bps = 4e9;
  l.samples = {{1024, 2.3e-6}, {1 << 20, 2.6e-4}};
  p.links.push_back(l);
  const Profile back = profile_from_json(profile_to_json(p));
  EXPECT_EQ(back.version, 1);
  EXPECT_EQ(back.graph, "tiny");
  EXPECT_EQ(back.devices, "cpu:2");
  EXPECT_EQ(back.per_op_overhead_s, 3.5e-6);
  EXPECT_LT(back.gpu_op_overhead_s, 0.0);  // not measured: left out, read back as such
  EXPECT_EQ(profile_to_json(p).find("gpu_op_overhead_s"), std::string::npos);
  p.gpu_op_overhead_s = 1.25e-5;
  EXPECT_EQ(profile_from_json(profile_to_json(p)).gpu_op_overhead_s, 1.25e-5);
  const std::string gmsg = error_of<InputError>(
      [] { profile_from_json(R"({"format":"placer.profile","version":1,"gpu_op_overhead_s":-3,"ops":[]})"); });
  EXPECT_NE(gmsg.find("gpu_op_overhead_s: -3 is out of range (0 to 10000 s)"), std::string::npos) << gmsg;
  EXPECT_EQ(profile_to_json(p).find("gpu_op_scale"), std::string::npos);  // 1: left out
  p.gpu_op_scale = 0.625;
  EXPECT_EQ(profile_from_json(profile_to_json(p)).gpu_op_scale, 0.625);
  for (const char* bad : {"0", "1.5", "-0.2"}) {
    const std::string smsg = error_of<InputError>([&] {
      profile_from_json(std::string(R"({"format":"placer.profile","version":1,"gpu_op_scale":)") + bad +
                        R"(,"ops":[]})");
    });
    EXPECT_NE(smsg.find("gpu_op_scale: must be a number in (0, 1]"), std::string::npos) << smsg;
  }
  EXPECT_EQ(profile_to_json(p).find("gpu_step_s"), std::string::npos);  // not measured: left out
  p.gpu_step_s = 0.0125;
  EXPECT_EQ(profile_from_json(profile_to_json(p)).gpu_step_s, 0.0125);
  const std::string tmsg = error_of<InputError>(
      [] { profile_from_json(R"({"format":"placer.profile","version":1,"gpu_step_s":0,"ops":[]})"); });
  EXPECT_NE(tmsg.find("gpu_step_s: 0 is out of range (1e-09 to 10000 s)"), std::string::npos) << tmsg;
  ASSERT_EQ(back.ops.size(), 2u);
  EXPECT_EQ(back.ops[0].signature, "aten::addmm(2;4x3;3x2)");
  EXPECT_EQ(back.ops[0].seconds, 1.25e-5);
  EXPECT_EQ(back.ops[0].contended_seconds, 0.0);  // not measured
  EXPECT_EQ(back.ops[1].contended_seconds, 1.5e-6);
  ASSERT_EQ(back.links.size(), 1u);
  EXPECT_EQ(back.links[0].samples, l.samples);
  EXPECT_EQ(back.links[0].beta_Bps, 4e9);
  const std::string msg = error_of<InputError>([] {
    profile_from_json(R"({"format":"placer.profile","version":1,"ops":[{"op":"a","device":"cpu:0","seconds":-1}]})");
  });
  EXPECT_NE(msg.find("ops[0]: seconds: -1 is out of range (0 to 10000 s)"), std::string::npos) << msg;
  const std::string cmsg = error_of<InputError>([] {
    profile_from_json(
        R"({"format":"placer.profile","version":1,"ops":[{"op":"a","device":"cpu:0","seconds":1,"contended_seconds":-2}]})");
  });
  EXPECT_NE(cmsg.find("ops[0]: contended_seconds: -2 is out of range (0 to 10000 s)"), std::string::npos) << cmsg;
}

TEST(SerializeProfile, MixedStepRoundTripsAndIsChecked) {
  Profile p;
  p.graph = "g";
  EXPECT_EQ(profile_to_json(p).find("mixed_step"), std::string::npos);  // not measured: left out
  EXPECT_LT(profile_from_json(profile_to_json(p)).mixed.step_s, 0.0);
  p.mixed.devices = {"cpu:0", "cpu:1"};
  p.mixed.step_s = 0.0625;
  const Profile back = profile_from_json(profile_to_json(p));
  EXPECT_EQ(back.mixed.devices, p.mixed.devices);
  EXPECT_EQ(back.mixed.step_s, 0.0625);
  auto error = [](const std::string& mixed) {
    return error_of<InputError>(
        [&] { profile_from_json(R"({"format":"placer.profile","version":1,"ops":[],"mixed_step":)" + mixed + "}"); });
  };
  std::string m = error(R"({"devices":["cpu:0","cpu:1"],"step_s":0})");
  EXPECT_NE(m.find("mixed_step: step_s: 0 is out of range (1e-09 to 10000 s)"), std::string::npos) << m;
  m = error(R"({"devices":["cpu:0"],"step_s":0.1})");
  EXPECT_NE(m.find("mixed_step: devices: needs at least two devices"), std::string::npos) << m;
  m = error(R"({"devices":["cpu:0","cpu:0"],"step_s":0.1})");
  EXPECT_NE(m.find("mixed_step: devices: names 'cpu:0' twice"), std::string::npos) << m;
  m = error(R"({"devices":["cpu:0",3],"step_s":0.1})");
  EXPECT_NE(m.find("mixed_step devices[1]: device"), std::string::npos) << m;
  m = error(R"({"step_s":0.1})");
  EXPECT_NE(m.find("mixed_step: devices: missing required field"), std::string::npos) << m;
  // The cross-core probe while it ran: left out when not probed, kept when it was, checked.
  EXPECT_EQ(profile_to_json(p).find("core_rtt_s"), std::string::npos);
  EXPECT_LT(back.mixed.core_rtt_s, 0.0);
  p.mixed.core_rtt_s = 8.75e-8;
  EXPECT_EQ(profile_from_json(profile_to_json(p)).mixed.core_rtt_s, 8.75e-8);
  for (const char* bad : {"0", "-1e-7", "0.5"}) {  // the probe gives up at 50 ms: 0.1 s is out of range
    m = error(std::string(R"({"devices":["cpu:0","cpu:1"],"step_s":0.1,"core_rtt_s":)") + bad + "}");
    EXPECT_NE(m.find("mixed_step: core_rtt_s: must be a number of seconds in (0, 0.1)"), std::string::npos) << m;
  }
}

// Each CPU device's step alone: left out when not measured, kept when it was, checked.
TEST(SerializeProfile, CpuStepsRoundTripAndAreChecked) {
  Profile p;
  p.graph = "g";
  EXPECT_EQ(profile_to_json(p).find("cpu_steps"), std::string::npos);
  EXPECT_TRUE(profile_from_json(profile_to_json(p)).cpu_steps.empty());
  p.cpu_steps = {{"cpu:0", 0.0345}, {"cpu:1", 0.0331}};
  const Profile back = profile_from_json(profile_to_json(p));
  ASSERT_EQ(back.cpu_steps.size(), 2u);
  EXPECT_EQ(back.cpu_steps[1].device, "cpu:1");
  EXPECT_EQ(back.cpu_steps[1].step_s, 0.0331);
  auto error = [](const std::string& steps) {
    return error_of<InputError>(
        [&] { profile_from_json(R"({"format":"placer.profile","version":1,"ops":[],"cpu_steps":)" + steps + "}"); });
  };
  std::string m = error(R"([{"device":"cpu:0","step_s":0}])");
  EXPECT_NE(m.find("cpu_steps[0]: step_s: 0 is out of range (1e-09 to 10000 s)"), std::string::npos) << m;
  m = error(R"([{"device":"cpu:0","step_s":0.1},{"device":"cpu:0","step_s":0.1}])");
  EXPECT_NE(m.find("cpu_steps[1]: device: names 'cpu:0' twice"), std::string::npos) << m;
  m = error(R"([{"step_s":0.1}])");
  EXPECT_NE(m.find("cpu_steps[0]: device: missing required field"), std::string::npos) << m;
  m = error(R"({"cpu:0":0.1})");
  EXPECT_NE(m.find("cpu_steps"), std::string::npos) << m;
  // 1e200 s made the simulation spin, 1e-200 s a device scale of 0: out of range, and one host's devices within 100x.
  m = error(R"([{"device":"cpu:0","step_s":1e200}])");
  EXPECT_NE(m.find("cpu_steps[0]: step_s: 1e+200 is out of range (1e-09 to 10000 s)"), std::string::npos) << m;
  m = error(R"([{"device":"cpu:0","step_s":0.05},{"device":"cpu:1","step_s":50}])");
  EXPECT_NE(m.find("cpu_steps[1]: step_s: 50 s is over 100 times apart from cpu:0's 0.05 s"), std::string::npos) << m;
  // Apart from an earlier entry that is neither the last nor next to it (checked against the fastest and
  // slowest so far, not every pair: 80,000 entries took minutes).
  m = error(R"([{"device":"cpu:0","step_s":0.5},{"device":"cpu:1","step_s":0.01},{"device":"cpu:2","step_s":0.6},
      {"device":"cpu:3","step_s":1.5}])");
  EXPECT_NE(m.find("cpu_steps[3]: step_s: 1.5 s is over 100 times apart from cpu:1's 0.01 s"), std::string::npos) << m;
}

// Every time in a profile is finite and at most 1e4 s, a link's bandwidth in [1, 1e21] bytes/s, its samples
// not negative, and no link goes from a device to itself: absurd values made placers and the simulator fail far
// from the cause.
TEST(SerializeProfile, TimesAndLinksOutOfRangeNameTheField) {
  auto error = [](const std::string& body) {
    return error_of<InputError>([&] { profile_from_json(R"({"format":"placer.profile","version":1,)" + body + "}"); });
  };
  const std::string op = R"("ops":[{"op":"a","device":"cpu:0","seconds":0.001}])";
  auto link = [&](const std::string& fields) {
    return error(op + R"(,"links":[{"from":"cpu:0","to":"cpu:1",)" + fields + "}]");
  };
  std::string m = error(R"("ops":[{"op":"a","device":"cpu:0","seconds":1e300}])");
  EXPECT_NE(m.find("ops[0]: seconds: 1e+300 is out of range (0 to 10000 s)"), std::string::npos) << m;
  m = error(R"("per_op_overhead_s":1e30,)" + op);
  EXPECT_NE(m.find("per_op_overhead_s: 1e+30 is out of range"), std::string::npos) << m;
  m = link(R"("alpha_s":1e300,"beta_Bps":1e9)");
  EXPECT_NE(m.find("links[0]: alpha_s: 1e+300 is out of range (0 to 10000 s)"), std::string::npos) << m;
  m = link(R"("alpha_s":1e-6,"beta_Bps":1e-300)");
  EXPECT_NE(m.find("links[0]: beta_Bps: 1e-300 is out of range (1 to 1e+21 bytes/s)"), std::string::npos) << m;
  m = link(R"("alpha_s":1e-6,"beta_Bps":1e9,"samples":[{"bytes":-1,"seconds":0.1}])");
  EXPECT_NE(m.find("links[0] samples[0]: bytes: must be >= 0"), std::string::npos) << m;
  m = link(R"("alpha_s":1e-6,"beta_Bps":1e9,"samples":[{"bytes":1024,"seconds":-1}])");
  EXPECT_NE(m.find("links[0] samples[0]: seconds: -1 is out of range"), std::string::npos) << m;
  m = error(op + R"(,"links":[{"from":"cpu:0","to":"cpu:0","alpha_s":1e-6,"beta_Bps":1e9}])");
  EXPECT_NE(m.find("links[0]: to: a link from 'cpu:0' to itself"), std::string::npos) << m;
  EXPECT_NO_THROW(profile_from_json(R"({"format":"placer.profile","version":1,)" + op + "}"));
  // An op's time with every CPU device busy is its own time, slowed (0.7x to 4x on the 2-core VM): a thousandfold
  // apart is no such time (1e4 s against 1e-5 s simulated a step of 145816 s).
  auto contended = [&](const std::string& seconds, const std::string& contended_s) {
    return error(
        R"("ops":[{"op":"a","device":"cpu:0","seconds":0.001},{"op":"fc0/linear","device":"cpu:0","seconds":)" +
        seconds + R"(,"contended_seconds":)" + contended_s + "}]");
  };
  m = contended("1e-5", "1e4");
  EXPECT_NE(m.find("ops[1]: contended_seconds: 10000 s is 1e+09 times op 'fc0/linear''s seconds (1e-05 s)"),
            std::string::npos)
      << m;
  m = contended("1", "1e-4");
  EXPECT_NE(m.find("ops[1]: contended_seconds: 0.0001 s is 1/10000 of op 'fc0/linear''s seconds (1 s)"),
            std::string::npos)
      << m;
  m = contended("0", "1");
  EXPECT_NE(m.find("ops[1]: contended_seconds: 1 s for op 'fc0/linear', whose seconds is 0"), std::string::npos) << m;
  for (const char* ok : {"0.002", "0.5", "0.000002", "0"}) {
    EXPECT_NO_THROW(profile_from_json(
        std::string(R"({"format":"placer.profile","version":1,"ops":[{"op":"a","device":"cpu:0","seconds":0.001,)") +
        R"("contended_seconds":)" + ok + "}]}"))
        << ok;
  }
}

// The probe's readings (0: a round it could not read) and their summary: median, lowest, highest.
TEST(SerializeStepResult, CoreRttReadingsSkipUnreadRoundsAndSumUp) {
  StepResult a, b;
  a.core_rtt_s = {9e-8, 0.0, 4e-7};
  b.core_rtt_s = {8e-8};
  EXPECT_EQ(a.core_rtt_readings(), (std::vector<double>{9e-8, 4e-7}));
  const CoreRttRange r = core_rtt_range(core_rtt_readings({a, b}));
  EXPECT_TRUE(r.read());
  EXPECT_DOUBLE_EQ(r.median_s, 9e-8);
  EXPECT_DOUBLE_EQ(r.low_s, 8e-8);
  EXPECT_DOUBLE_EQ(r.high_s, 4e-7);
  EXPECT_FALSE(core_rtt_range(StepResult{}.core_rtt_readings()).read());
}

TEST(SerializeStepResult, RoundTrip) {
  StepResult r;
  r.status = StepStatus::Oom;
  r.message = "cuda:1 out of memory";
  r.step_s = 0.125;
  r.iqr_s = 0.001;
  r.samples_s = {0.12, 0.125, 0.13};
  r.devices = {DeviceStats{"cuda:0", 0.1, 1 << 30}, DeviceStats{"cuda:1", 0.05, 3}};
  r.transfer_bytes = 123456789012;
  r.oom_device = "cuda:1";
  r.oom_needed_bytes = 5;
  r.oom_capacity_bytes = 4;
  r.core_rtt_s = {9e-8, 3.7e-7};
  r.prior_samples = 1;
  const StepResult b = step_result_from_json(step_result_to_json(r));
  EXPECT_EQ(b.core_rtt_s, r.core_rtt_s);
  EXPECT_EQ(b.prior_samples, 1);
  EXPECT_EQ(b.status, StepStatus::Oom);
  EXPECT_EQ(b.message, r.message);
  EXPECT_EQ(b.step_s, 0.125);
  EXPECT_EQ(b.samples_s, r.samples_s);
  ASSERT_EQ(b.devices.size(), 2u);
  EXPECT_EQ(b.devices[0].peak_bytes, 1 << 30);
  EXPECT_EQ(b.devices[1].device, "cuda:1");
  EXPECT_EQ(b.transfer_bytes, 123456789012);
  EXPECT_EQ(b.oom_needed_bytes, 5);
  EXPECT_EQ(b.oom_capacity_bytes, 4);
  const std::string msg = error_of<InputError>(
      [] { step_result_from_json(R"({"format":"placer.step_result","version":1,"status":"meh"})"); });
  EXPECT_NE(msg.find("unknown status 'meh'"), std::string::npos) << msg;
  // One probe reading per step this measurement took: never more readings than steps.
  const std::string pmsg = error_of<InputError>([] {
    step_result_from_json(
        R"({"format":"placer.step_result","version":1,"status":"ok","step_s":0.1,"samples_s":[0.1],"core_rtt_s":[1e-7,2e-7]})");
  });
  EXPECT_NE(pmsg.find("core_rtt_s: has 2 entries, more than samples_s's 1"), std::string::npos) << pmsg;
  // No more samples given beforehand than there are samples.
  const std::string qmsg = error_of<InputError>([] {
    step_result_from_json(
        R"({"format":"placer.step_result","version":1,"status":"ok","step_s":0.1,"samples_s":[0.1],"prior_samples":2})");
  });
  EXPECT_NE(qmsg.find("prior_samples: 2 is not between 0 and samples_s's 1"), std::string::npos) << qmsg;
  // An ok result is a step (a worker's without one scored as the best reward there is).
  for (const char* step : {"", R"("step_s":0,)", R"("step_s":-1,)"}) {
    const std::string json = std::string(R"({"format":"placer.step_result","version":1,)") + step + R"("status":"ok"})";
    const std::string smsg = error_of<InputError>([&] { step_result_from_json(json); });
    EXPECT_NE(smsg.find("step_s: an ok result needs a finite step above 0"), std::string::npos) << json << smsg;
  }
}

}  // namespace
}  // namespace placer
