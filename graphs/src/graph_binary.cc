// Graph files in binary (cereal's binary archives), and graph files by
// extension. Reading checks every size field against the bytes that remain
// before anything is allocated (cereal's own vector loader trusts the size
// and would resize to whatever a corrupted file claims).
#include <cereal/archives/binary.hpp>
#include <cstring>
#include <sstream>
#include <streambuf>

#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"
#include "serialize_common.h"

namespace placer {

using namespace detail;

namespace {

// ---------------------------------------------------------------------------
// Binary reading with bounds checks before every allocation.

class MemoryBuffer : public std::streambuf {
 public:
  MemoryBuffer(const char* data, size_t size) {
    char* p = const_cast<char*>(data);  // read-only use: get area only
    setg(p, p, p + size);
  }
  size_t remaining() const { return static_cast<size_t>(egptr() - gptr()); }
  size_t position() const { return static_cast<size_t>(gptr() - eback()); }
};

constexpr char kBinaryMagic[8] = {'P', 'L', 'G', 'R', 'A', 'P', 'H', '\0'};

class BinaryReader {
 public:
  explicit BinaryReader(const std::string& bytes)
      : buffer_(bytes.data(), bytes.size()), stream_(&buffer_), ar_(stream_) {}

  std::string where = "header";  // the op being read, for errors

  [[noreturn]] void fail(const std::string& message) const {
    throw GraphError(detail::concat("binary graph: ", where, ": ", message));
  }

  void need(size_t bytes, const char* field) const {
    if (buffer_.remaining() < bytes)
      fail(detail::concat("field '", field, "' truncated at byte ", buffer_.position(), " (needs ", bytes, " bytes, ",
                          buffer_.remaining(), " left)"));
  }

  template <class T>
  T pod(const char* field) {
    static_assert(std::is_arithmetic_v<T>);
    need(sizeof(T), field);
    T value{};
    ar_(value);
    return value;
  }

  // A count of elements that take at least min_element_bytes each: it cannot
  // exceed what the rest of the input could hold.
  size_t count(const char* field, size_t min_element_bytes) {
    const uint64_t n = pod<uint64_t>(field);
    if (min_element_bytes == 0) min_element_bytes = 1;
    if (n > buffer_.remaining() / min_element_bytes)
      fail(detail::concat("field '", field, "' claims ", n, " elements but only ", buffer_.remaining(),
                          " bytes are left"));
    return static_cast<size_t>(n);
  }

  std::string string(const char* field) {
    const size_t n = count(field, 1);
    std::string s(n, '\0');
    if (n) ar_(cereal::binary_data(&s[0], n));
    return s;
  }

  template <class T>
  std::vector<T> pods(const char* field) {
    const size_t n = count(field, sizeof(T));
    std::vector<T> v(n);
    if (n) ar_(cereal::binary_data(v.data(), n * sizeof(T)));
    return v;
  }

  void magic() {
    need(sizeof(kBinaryMagic), "magic");
    char m[sizeof(kBinaryMagic)];
    ar_(cereal::binary_data(m, sizeof(m)));
    if (std::memcmp(m, kBinaryMagic, sizeof(m)) != 0)
      throw GraphError("not a placer binary graph file (bad magic bytes; JSON graph files must end in .json)");
  }

  size_t remaining() const { return buffer_.remaining(); }

 private:
  MemoryBuffer buffer_;
  std::istream stream_;
  cereal::BinaryInputArchive ar_;
};

void write_string(cereal::BinaryOutputArchive& ar, const std::string& s) {
  ar(static_cast<uint64_t>(s.size()));
  if (!s.empty()) ar(cereal::binary_data(s.data(), s.size()));
}

template <class T>
void write_pods(cereal::BinaryOutputArchive& ar, const std::vector<T>& v) {
  ar(static_cast<uint64_t>(v.size()));
  if (!v.empty()) ar(cereal::binary_data(v.data(), v.size() * sizeof(T)));
}

// Smallest encodings, used to bound counts: an op is at least two empty
// strings' lengths plus its fixed fields; see graph_to_binary.
constexpr size_t kMinArgBytes = 1;
constexpr size_t kMinTensorSpecBytes = 1 + 8;
constexpr size_t kMinOpBytes = 8 * 2 + 8 * 3 + 8 + 8 + 1 + 8 * 2 + 4;

}  // namespace

// Version 2 adds each op's view_of (version 1 files: not recorded); 3 each op's microbatch.
constexpr uint32_t kBinaryGraphVersion = 3;

// Layout (native byte order; trusted files): magic, u32 version, name, attrs,
// ops. Strings and vectors are a u64 count then the elements.
std::string graph_to_binary(const Graph& graph) {
  std::ostringstream out;
  {
    cereal::BinaryOutputArchive ar(out);
    ar(cereal::binary_data(kBinaryMagic, sizeof(kBinaryMagic)));
    ar(static_cast<uint32_t>(kBinaryGraphVersion));
    write_string(ar, graph.name);
    const auto attrs = sorted_attrs(graph);
    ar(static_cast<uint64_t>(attrs.size()));
    for (const auto& [k, v] : attrs) {
      write_string(ar, k);
      write_string(ar, v);
    }
    ar(static_cast<uint64_t>(graph.ops().size()));
    for (const Op& op : graph.ops()) {
      write_string(ar, op.name);
      write_string(ar, op.type);
      ar(static_cast<uint64_t>(op.inputs.size()));
      for (const TensorRef& t : op.inputs) ar(t.op.value, t.output);
      ar(static_cast<uint64_t>(op.args.size()));
      for (const Arg& a : op.args) {
        ar(static_cast<uint8_t>(a.kind));
        switch (a.kind) {
          case Arg::Kind::None: break;
          case Arg::Kind::Tensor:
          case Arg::Kind::Int:
          case Arg::Kind::ScalarType: ar(a.i); break;
          case Arg::Kind::Double: ar(a.d); break;
          case Arg::Kind::Bool: ar(static_cast<uint8_t>(a.b)); break;
          case Arg::Kind::TensorList:
          case Arg::Kind::Ints:
          case Arg::Kind::Bools: write_pods(ar, a.ints); break;
          case Arg::Kind::Doubles: write_pods(ar, a.doubles); break;
          case Arg::Kind::String:
          case Arg::Kind::Device: write_string(ar, a.s); break;
        }
      }
      ar(static_cast<uint64_t>(op.outputs.size()));
      for (const TensorSpec& t : op.outputs) {
        ar(static_cast<uint8_t>(t.dtype));
        write_pods(ar, t.shape);
      }
      ar(op.param_bytes, op.flops, static_cast<uint8_t>(op.phase));
      write_string(ar, op.group);
      write_string(ar, op.layer);
      ar(op.forward.value);
      write_pods(ar, op.view_of);
      ar(op.microbatch);
    }
  }
  return out.str();
}

namespace {

Arg read_arg(BinaryReader& in, size_t k) {
  const uint8_t kind = in.pod<uint8_t>("args.kind");
  if (kind > static_cast<uint8_t>(Arg::Kind::Device)) in.fail(detail::concat("args[", k, "]: bad kind ", +kind));
  Arg a;
  a.kind = static_cast<Arg::Kind>(kind);
  switch (a.kind) {
    case Arg::Kind::None: break;
    case Arg::Kind::Tensor:
    case Arg::Kind::Int:
    case Arg::Kind::ScalarType: a.i = in.pod<int64_t>("args.value"); break;
    case Arg::Kind::Double: a.d = in.pod<double>("args.value"); break;
    case Arg::Kind::Bool: a.b = in.pod<uint8_t>("args.value") != 0; break;
    case Arg::Kind::TensorList:
    case Arg::Kind::Ints:
    case Arg::Kind::Bools: a.ints = in.pods<int64_t>("args.value"); break;
    case Arg::Kind::Doubles: a.doubles = in.pods<double>("args.value"); break;
    case Arg::Kind::String:
    case Arg::Kind::Device: a.s = in.string("args.value"); break;
  }
  return a;
}

// The op's inputs, args and outputs.
void read_operands(BinaryReader& in, Op& op) {
  const size_t inputs = in.count("inputs", 8);
  for (size_t k = 0; k < inputs; ++k) {
    TensorRef t;
    t.op = OpId(in.pod<int32_t>("inputs.op"));
    t.output = in.pod<int32_t>("inputs.output");
    op.inputs.push_back(t);
  }
  const size_t args = in.count("args", kMinArgBytes);
  if (args > kMaxArgsPerOp) in.fail(detail::concat("field 'args' claims ", args, " arguments, over ", kMaxArgsPerOp));
  for (size_t k = 0; k < args; ++k) op.args.push_back(read_arg(in, k));
  const size_t outputs = in.count("outputs", kMinTensorSpecBytes);
  for (size_t k = 0; k < outputs; ++k) {
    const uint8_t dtype = in.pod<uint8_t>("outputs.dtype");
    if (dtype > static_cast<uint8_t>(DType::Bool)) in.fail(detail::concat("outputs[", k, "]: bad dtype ", +dtype));
    TensorSpec spec;
    spec.dtype = static_cast<DType>(dtype);
    spec.shape = in.pods<int64_t>("outputs.shape");
    op.outputs.push_back(std::move(spec));
  }
}

Op read_op(BinaryReader& in, size_t i, uint32_t version) {
  in.where = detail::concat("ops[", i, "]");
  Op op;
  op.name = in.string("name");
  in.where += " '" + op.name + "'";
  op.type = in.string("type");
  read_operands(in, op);
  op.param_bytes = in.pod<int64_t>("param_bytes");
  op.flops = in.pod<double>("flops");
  const uint8_t phase = in.pod<uint8_t>("phase");
  if (phase > static_cast<uint8_t>(Phase::Update)) in.fail(detail::concat("bad phase ", +phase));
  op.phase = static_cast<Phase>(phase);
  op.group = in.string("group");
  op.layer = in.string("layer");
  op.forward = OpId(in.pod<int32_t>("forward"));
  if (op.forward.value < -1) in.fail("field 'forward' is negative");
  if (version >= 2) op.view_of = in.pods<int32_t>("view_of");
  if (version >= 3) op.microbatch = in.pod<int32_t>("microbatch");
  if (op.microbatch < -1) in.fail("field 'microbatch' is negative");
  return op;
}

}  // namespace

Graph graph_from_binary(const std::string& bytes) {
  try {
    BinaryReader in(bytes);
    in.magic();
    const uint32_t version = in.pod<uint32_t>("version");
    if (version < 1 || version > kBinaryGraphVersion)
      in.fail(detail::concat("unsupported binary graph version ", version));
    Graph graph;
    graph.name = in.string("name");
    const size_t attrs = in.count("attrs", 16);
    in.where = "attrs";
    for (size_t k = 0; k < attrs; ++k) {
      std::string key = in.string("attrs.key");
      // Of a key given twice the last was kept, silently.
      if (!graph.attrs.emplace(key, in.string("attrs.value")).second)
        in.fail(detail::concat("attrs[", k, "] '", key, "': given twice"));
    }
    const size_t n = in.count("ops", kMinOpBytes);
    if (n > static_cast<size_t>(kMaxOps)) in.fail(detail::concat("field 'ops' claims ", n, " ops, over the limit"));
    for (size_t i = 0; i < n; ++i) graph.add_op(read_op(in, i, version));
    if (in.remaining() != 0) {
      in.where = "end";
      in.fail(detail::concat(in.remaining(), " unexpected trailing bytes"));
    }
    validate_graph(graph);
    return graph;
  } catch (const cereal::Exception& e) {
    throw GraphError(std::string("binary graph: ") + e.what());
  }
}

void save_graph(const Graph& graph, const std::string& path) {
  write_file_atomic(path, ends_with(path, ".json") ? graph_to_json(graph) : graph_to_binary(graph));
}

Graph load_graph(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<GraphError>(
      path, [&] { return ends_with(path, ".json") ? graph_from_json(contents) : graph_from_binary(contents); });
}

}  // namespace placer
