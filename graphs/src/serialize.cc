// Serialization of the shared value types.
//
// Writing goes through cereal archives (JSONOutputArchive with make_nvp for the
// exchange format, BinaryOutputArchive for the fast format). Reading JSON walks
// the RapidJSON document that cereal itself is built on, because outside input
// needs what cereal's input archive cannot give: optional fields, ops in any
// order, and errors that name the op and the field. Reading binary goes through
// cereal's BinaryInputArchive, but every size field is checked against the bytes
// that remain before anything is allocated (cereal's own vector loader trusts
// the size and would resize to whatever a corrupted file claims).
#include "placer/graphs/serialize.h"

#include <unistd.h>

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/validate.h"

namespace placer {

namespace {

using cereal::make_nvp;

template <class Write>
std::string write_json(Write&& body) {
  std::ostringstream out;
  {
    // 324 = RapidJSON's default: no rounding of decimals (doubles round-trip exactly).
    cereal::JSONOutputArchive ar(
        out, cereal::JSONOutputArchive::Options(324, cereal::JSONOutputArchive::Options::IndentChar::space, 1));
    body(ar);
  }
  out << '\n';
  return out.str();
}

// ---------------------------------------------------------------------------
// Graph JSON: cereal save() of thin views over the IR.

struct JsonTensorRef {
  std::string op;
  int32_t output = 0;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("op", op), make_nvp("output", output));
  }
};

struct JsonArg {
  const Arg* arg = nullptr;
  template <class A>
  void save(A& ar) const {
    const Arg& a = *arg;
    ar(make_nvp("kind", std::string(arg_kind_name(a.kind))));
    switch (a.kind) {
      case Arg::Kind::None: break;
      case Arg::Kind::Tensor:
      case Arg::Kind::Int: ar(make_nvp("value", a.i)); break;
      case Arg::Kind::Double: ar(make_nvp("value", a.d)); break;
      case Arg::Kind::Bool: ar(make_nvp("value", a.b)); break;
      case Arg::Kind::TensorList:
      case Arg::Kind::Ints: ar(make_nvp("value", a.ints)); break;
      case Arg::Kind::Bools: {
        std::vector<bool> bools;
        for (int64_t v : a.ints) bools.push_back(v != 0);
        ar(make_nvp("value", bools));
        break;
      }
      case Arg::Kind::Doubles: ar(make_nvp("value", a.doubles)); break;
      case Arg::Kind::String:
      case Arg::Kind::Device: ar(make_nvp("value", a.s)); break;
      case Arg::Kind::ScalarType:
        if (a.i >= 0 && a.i <= static_cast<int64_t>(DType::Bool))
          ar(make_nvp("value", std::string(dtype_name(static_cast<DType>(a.i)))));
        else
          ar(make_nvp("value", a.i));  // not a dtype: written as is, rejected when read
        break;
    }
  }
};

struct JsonTensorSpec {
  const TensorSpec* spec = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("shape", spec->shape), make_nvp("dtype", std::string(dtype_name(spec->dtype))));
  }
};

struct JsonOp {
  const Graph* graph = nullptr;
  const Op* op = nullptr;
  template <class A>
  void save(A& ar) const {
    const Op& o = *op;
    std::vector<JsonTensorRef> inputs;
    for (const TensorRef& t : o.inputs) inputs.push_back({graph->op(t.op).name, t.output});
    std::vector<JsonArg> args;
    for (const Arg& a : o.args) args.push_back({&a});
    std::vector<JsonTensorSpec> outputs;
    for (const TensorSpec& t : o.outputs) outputs.push_back({&t});
    std::string forward;
    if (o.forward.valid() && o.forward.value < graph->size()) forward = graph->op(o.forward).name;
    ar(make_nvp("name", o.name), make_nvp("type", o.type), make_nvp("inputs", inputs), make_nvp("args", args),
       make_nvp("outputs", outputs), make_nvp("param_bytes", o.param_bytes), make_nvp("flops", o.flops),
       make_nvp("phase", std::string(phase_name(o.phase))), make_nvp("group", o.group), make_nvp("layer", o.layer),
       make_nvp("forward", forward));
  }
};

// A JSON object with keys chosen at run time, in sorted order.
struct JsonStringMap {
  std::vector<std::pair<std::string, std::string>> entries;
  template <class A>
  void save(A& ar) const {
    for (const auto& [k, v] : entries) ar(make_nvp(k, v));
  }
};

// What the loader knows about one op before the graph is built.
struct OpRecord {
  Op op;                                                // everything but inputs and forward
  std::vector<std::pair<std::string, int32_t>> inputs;  // by op name
  std::string forward;                                  // by op name
  std::string where;                                    // "ops[3] 'conv1'"
};

Arg parse_arg(const JsonReader<GraphError>& r, const rj::Value& v, const std::string& where) {
  r.object(v, where, "");
  const std::string kind_name = r.string(r.require(v, "kind", where), where, "kind");
  const auto kind = parse_arg_kind(kind_name);
  if (!kind)
    r.fail(where, "kind",
           unknown_name("argument kind", kind_name,
                        {"none", "tensor", "tensors", "int", "double", "bool", "ints", "doubles", "bools", "string",
                         "dtype", "device"}));
  Arg a;
  a.kind = *kind;
  if (a.kind == Arg::Kind::None) return a;
  const rj::Value& value = r.require(v, "value", where);
  switch (a.kind) {
    case Arg::Kind::None: break;
    case Arg::Kind::Tensor:
    case Arg::Kind::Int: a.i = r.integer(value, where, "value"); break;
    case Arg::Kind::Double: a.d = r.number(value, where, "value"); break;
    case Arg::Kind::Bool: a.b = r.boolean(value, where, "value"); break;
    case Arg::Kind::TensorList:
    case Arg::Kind::Ints: a.ints = r.integers(value, where, "value"); break;
    case Arg::Kind::Doubles: a.doubles = r.numbers(value, where, "value"); break;
    case Arg::Kind::Bools:
      r.array(value, where, "value");
      for (rj::SizeType k = 0; k < value.Size(); ++k) {
        const std::string f = detail::concat("value[", k, "]");
        a.ints.push_back(r.boolean(value[k], where, f.c_str()) ? 1 : 0);
      }
      break;
    case Arg::Kind::String:
    case Arg::Kind::Device: a.s = r.string(value, where, "value"); break;
    case Arg::Kind::ScalarType: {
      const std::string name = r.string(value, where, "value");
      auto dtype = parse_dtype(name);
      if (!dtype) r.fail(where, "value", "unknown dtype '" + name + "'");
      a.i = static_cast<int64_t>(*dtype);
      break;
    }
  }
  return a;
}

OpRecord parse_op(const JsonReader<GraphError>& r, const rj::Value& v, size_t index) {
  OpRecord rec;
  rec.where = detail::concat("ops[", index, "]");
  r.object(v, rec.where, "");
  rec.op.name = r.string(r.require(v, "name", rec.where), rec.where, "name");
  if (rec.op.name.empty()) r.fail(rec.where, "name", "empty");
  rec.where += " '" + rec.op.name + "'";
  const std::string& where = rec.where;
  rec.op.type = r.string(r.require(v, "type", where), where, "type");
  if (rec.op.type.empty()) r.fail(where, "type", "empty");

  if (const rj::Value* inputs = r.member(v, "inputs")) {
    r.array(*inputs, where, "inputs");
    for (rj::SizeType k = 0; k < inputs->Size(); ++k) {
      const std::string f = detail::concat("inputs[", k, "]");
      const rj::Value& in = (*inputs)[k];
      r.object(in, where, f.c_str());
      const std::string fop = f + ".op", fout = f + ".output";
      std::string name = r.string(r.require(in, "op", where + " " + f), where, fop.c_str());
      int32_t output = 0;
      if (const rj::Value* o = r.member(in, "output")) output = r.int32(*o, where, fout.c_str());
      if (output < 0) r.fail(where, fout + ": negative");
      rec.inputs.emplace_back(std::move(name), output);
    }
  }
  if (const rj::Value* args = r.member(v, "args")) {
    r.array(*args, where, "args");
    for (rj::SizeType k = 0; k < args->Size(); ++k)
      rec.op.args.push_back(parse_arg(r, (*args)[k], detail::concat(where, " args[", k, "]")));
  }
  const rj::Value& outputs = r.array(r.require(v, "outputs", where), where, "outputs");
  for (rj::SizeType k = 0; k < outputs.Size(); ++k) {
    const std::string f = detail::concat("outputs[", k, "]");
    const rj::Value& out = outputs[k];
    r.object(out, where, f.c_str());
    TensorSpec spec;
    const std::string fshape = f + ".shape", fdtype = f + ".dtype";
    const rj::Value* shape = r.member(out, "shape");
    if (!shape) r.fail(where, fshape + ": missing required field");
    spec.shape = r.integers(*shape, where, fshape.c_str());
    const std::string dtype = r.opt_string(out, "dtype", where, "float");
    auto parsed = parse_dtype(dtype);
    if (!parsed) r.fail(where, fdtype + ": unknown dtype '" + dtype + "'");
    spec.dtype = *parsed;
    rec.op.outputs.push_back(std::move(spec));
  }
  rec.op.param_bytes = r.opt_integer(v, "param_bytes", where, 0);
  rec.op.flops = r.opt_number(v, "flops", where, 0.0);
  const std::string phase = r.opt_string(v, "phase", where, "forward");
  auto parsed_phase = parse_phase(phase);
  if (!parsed_phase) r.fail(where, "phase", unknown_name("phase", phase, {"forward", "backward", "update"}));
  rec.op.phase = *parsed_phase;
  rec.op.group = r.opt_string(v, "group", where);
  rec.op.layer = r.opt_string(v, "layer", where);
  rec.forward = r.opt_string(v, "forward", where);
  return rec;
}

// Orders the records so that every op comes after its inputs and its forward
// op (Graph requires both), keeping file order where the file allows it.
std::vector<size_t> order_records(const JsonReader<GraphError>& r, const std::vector<OpRecord>& recs) {
  const size_t n = recs.size();
  std::unordered_map<std::string, size_t> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = index.emplace(recs[i].op.name, i);
    if (!inserted) r.fail(recs[i].where, detail::concat("duplicate op name (also ops[", it->second, "])"));
  }
  // deps[i]: the records i must come after.
  std::vector<std::vector<size_t>> deps(n);
  for (size_t i = 0; i < n; ++i) {
    const OpRecord& rec = recs[i];
    for (size_t k = 0; k < rec.inputs.size(); ++k) {
      const auto& [name, output] = rec.inputs[k];
      auto it = index.find(name);
      if (it == index.end()) r.fail(rec.where, detail::concat("inputs[", k, "].op: refers to missing op '", name, "'"));
      const OpRecord& producer = recs[it->second];
      if (output >= static_cast<int32_t>(producer.op.outputs.size()))
        r.fail(rec.where, detail::concat("inputs[", k, "].output: is ", output, " but '", name, "' has ",
                                         producer.op.outputs.size(), " output(s)"));
      deps[i].push_back(it->second);
    }
    if (!rec.forward.empty()) {
      auto it = index.find(rec.forward);
      if (it == index.end()) r.fail(rec.where, "forward", "refers to missing op '" + rec.forward + "'");
      deps[i].push_back(it->second);
    }
  }
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
    pending[i] = deps[i].size();
    for (size_t d : deps[i]) users[d].push_back(i);
  }
  // Kahn's algorithm, smallest file index first: a file in topological order
  // loads in file order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() == n) return order;

  // A cycle: every op left has a dependency that is also left. Walk back
  // along such dependencies until an op repeats.
  std::vector<bool> left(n, false);
  for (size_t i = 0; i < n; ++i) left[i] = pending[i] > 0;
  size_t start = 0;
  while (!left[start]) ++start;
  std::vector<int64_t> seen_at(n, -1);
  std::vector<size_t> walk;
  size_t cur = start;
  while (seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int64_t>(walk.size());
    walk.push_back(cur);
    size_t next = cur;
    for (size_t d : deps[cur])
      if (left[d]) {
        next = d;
        break;
      }
    cur = next;
  }
  // walk[seen_at[cur]..] is the cycle, against the edge direction.
  std::vector<size_t> cycle(walk.begin() + seen_at[cur], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start at the op listed first in the file, so the message is stable.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string path;
  for (size_t i : cycle) path += "'" + recs[i].op.name + "' -> ";
  path += "'" + recs[cycle.front()].op.name + "'";
  r.fail("", detail::concat("ops: cycle of ", cycle.size(), " op(s): ", path));
}

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

std::vector<std::pair<std::string, std::string>> sorted_attrs(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> attrs(graph.attrs.begin(), graph.attrs.end());
  std::sort(attrs.begin(), attrs.end());
  return attrs;
}

template <class Error, class F>
auto with_path(const std::string& path, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const GraphError& e) {
    throw GraphError(path + ": " + e.what());
  } catch (const PlacementError& e) {
    throw PlacementError(path + ": " + e.what());
  } catch (const InputError& e) {
    throw Error(path + ": " + e.what());
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// Graph

std::string graph_to_json(const Graph& graph) {
  std::vector<JsonOp> ops;
  ops.reserve(graph.ops().size());
  for (const Op& op : graph.ops()) ops.push_back({&graph, &op});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.graph")), make_nvp("version", kGraphFormatVersion),
       make_nvp("name", graph.name), make_nvp("attrs", JsonStringMap{sorted_attrs(graph)}), make_nvp("ops", ops));
  });
}

Graph graph_from_json(const std::string& text) {
  JsonReader<GraphError> r{"graph"};
  const rj::Document doc = r.parse(text, "placer.graph");
  Graph graph;
  graph.name = r.opt_string(doc, "name", "");
  if (const rj::Value* attrs = r.member(doc, "attrs")) {
    r.object(*attrs, "", "attrs");
    for (auto it = attrs->MemberBegin(); it != attrs->MemberEnd(); ++it) {
      std::string key(it->name.GetString(), it->name.GetStringLength());
      const std::string field = "attrs." + key;
      graph.attrs[key] = r.string(it->value, "", field.c_str());
    }
  }
  const rj::Value& ops = r.array(r.require(doc, "ops", ""), "", "ops");
  if (ops.Size() > static_cast<rj::SizeType>(kMaxOps))
    r.fail("", detail::concat("ops: has ", ops.Size(), " ops, more than the limit ", kMaxOps));
  std::vector<OpRecord> recs;  // not reserved: `[{},{},...]` must not buy room for a million ops
  for (rj::SizeType i = 0; i < ops.Size(); ++i) recs.push_back(parse_op(r, ops[i], i));

  const std::vector<size_t> order = order_records(r, recs);
  std::unordered_map<std::string, OpId> ids;
  ids.reserve(recs.size());
  for (size_t i : order) {
    OpRecord& rec = recs[i];
    Op op = std::move(rec.op);
    for (const auto& [name, output] : rec.inputs) op.inputs.push_back(TensorRef{ids.at(name), output});
    if (!rec.forward.empty()) op.forward = ids.at(rec.forward);
    const std::string name = op.name;
    ids.emplace(name, graph.add_op(std::move(op)));
  }
  validate_graph(graph);
  return graph;
}

// Layout (native byte order; trusted files): magic, u32 version, name, attrs,
// ops. Strings and vectors are a u64 count then the elements.
std::string graph_to_binary(const Graph& graph) {
  std::ostringstream out;
  {
    cereal::BinaryOutputArchive ar(out);
    ar(cereal::binary_data(kBinaryMagic, sizeof(kBinaryMagic)));
    ar(static_cast<uint32_t>(kGraphFormatVersion));
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
    }
  }
  return out.str();
}

Graph graph_from_binary(const std::string& bytes) {
  try {
    BinaryReader in(bytes);
    in.magic();
    const uint32_t version = in.pod<uint32_t>("version");
    if (version < 1 || version > static_cast<uint32_t>(kGraphFormatVersion))
      in.fail(detail::concat("unsupported binary graph version ", version));
    Graph graph;
    graph.name = in.string("name");
    const size_t attrs = in.count("attrs", 16);
    for (size_t k = 0; k < attrs; ++k) {
      std::string key = in.string("attrs.key");
      graph.attrs[key] = in.string("attrs.value");
    }
    const size_t n = in.count("ops", kMinOpBytes);
    if (n > static_cast<size_t>(kMaxOps)) in.fail(detail::concat("field 'ops' claims ", n, " ops, over the limit"));
    for (size_t i = 0; i < n; ++i) {
      in.where = detail::concat("ops[", i, "]");
      Op op;
      op.name = in.string("name");
      in.where += " '" + op.name + "'";
      op.type = in.string("type");
      const size_t inputs = in.count("inputs", 8);
      for (size_t k = 0; k < inputs; ++k) {
        TensorRef t;
        t.op = OpId(in.pod<int32_t>("inputs.op"));
        t.output = in.pod<int32_t>("inputs.output");
        op.inputs.push_back(t);
      }
      const size_t args = in.count("args", kMinArgBytes);
      for (size_t k = 0; k < args; ++k) {
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
        op.args.push_back(std::move(a));
      }
      const size_t outputs = in.count("outputs", kMinTensorSpecBytes);
      for (size_t k = 0; k < outputs; ++k) {
        const uint8_t dtype = in.pod<uint8_t>("outputs.dtype");
        if (dtype > static_cast<uint8_t>(DType::Bool)) in.fail(detail::concat("outputs[", k, "]: bad dtype ", +dtype));
        TensorSpec spec;
        spec.dtype = static_cast<DType>(dtype);
        spec.shape = in.pods<int64_t>("outputs.shape");
        op.outputs.push_back(std::move(spec));
      }
      op.param_bytes = in.pod<int64_t>("param_bytes");
      op.flops = in.pod<double>("flops");
      const uint8_t phase = in.pod<uint8_t>("phase");
      if (phase > static_cast<uint8_t>(Phase::Update)) in.fail(detail::concat("bad phase ", +phase));
      op.phase = static_cast<Phase>(phase);
      op.group = in.string("group");
      op.layer = in.string("layer");
      op.forward = OpId(in.pod<int32_t>("forward"));
      if (op.forward.value < -1) in.fail("field 'forward' is negative");
      graph.add_op(std::move(op));
    }
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

// ---------------------------------------------------------------------------
// Cluster

namespace {
struct JsonDevice {
  const Device* d = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("name", d->name), make_nvp("kind", std::string(device_kind_name(d->kind))),
       make_nvp("physical", d->physical), make_nvp("memory_bytes", d->memory_bytes),
       make_nvp("peak_flops", d->peak_flops), make_nvp("mem_bandwidth", d->mem_bandwidth),
       make_nvp("op_overhead_s", d->op_overhead_s), make_nvp("threads", d->threads));
  }
};
struct JsonLink {
  const Link* l = nullptr;
  bool endpoints = true;
  template <class A>
  void save(A& ar) const {
    if (endpoints) ar(make_nvp("from", l->from), make_nvp("to", l->to));
    ar(make_nvp("latency_s", l->latency_s), make_nvp("bandwidth_Bps", l->bandwidth_Bps));
  }
};

Link parse_link(const JsonReader<PlacementError>& r, const rj::Value& v, const std::string& where, bool endpoints) {
  r.object(v, where, "");
  Link l;
  if (endpoints) {
    l.from = r.string(r.require(v, "from", where), where, "from");
    l.to = r.string(r.require(v, "to", where), where, "to");
  }
  l.latency_s = r.opt_number(v, "latency_s", where, l.latency_s);
  l.bandwidth_Bps = r.opt_number(v, "bandwidth_Bps", where, l.bandwidth_Bps);
  return l;
}
}  // namespace

std::string cluster_to_json(const Cluster& cluster) {
  std::vector<JsonDevice> devices;
  for (const Device& d : cluster.devices) devices.push_back({&d});
  std::vector<JsonLink> links;
  for (const Link& l : cluster.links) links.push_back({&l});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.cluster")), make_nvp("version", kGraphFormatVersion),
       make_nvp("name", cluster.name), make_nvp("source", cluster.source), make_nvp("devices", devices),
       make_nvp("links", links), make_nvp("default_link", JsonLink{&cluster.default_link, false}));
  });
}

Cluster cluster_from_json(const std::string& text) {
  JsonReader<PlacementError> r{"cluster"};
  const rj::Document doc = r.parse(text, "placer.cluster");
  Cluster c;
  c.name = r.opt_string(doc, "name", "");
  c.source = r.opt_string(doc, "source", "");
  const rj::Value& devices = r.array(r.require(doc, "devices", ""), "", "devices");
  if (devices.Size() > 4096) r.fail("", "devices", "more than 4096 devices");
  for (rj::SizeType i = 0; i < devices.Size(); ++i) {
    std::string where = detail::concat("devices[", i, "]");
    const rj::Value& v = r.object(devices[i], where, "");
    Device d;
    d.name = r.string(r.require(v, "name", where), where, "name");
    where += " '" + d.name + "'";
    const std::string kind = r.opt_string(v, "kind", where, d.name.rfind("cuda", 0) == 0 ? "cuda" : "cpu");
    if (kind == "cpu")
      d.kind = DeviceKind::Cpu;
    else if (kind == "cuda")
      d.kind = DeviceKind::Cuda;
    else
      r.fail(where, "kind", unknown_name("device kind", kind, {"cpu", "cuda"}));
    d.physical = r.opt_string(v, "physical", where);
    d.memory_bytes = r.integer(r.require(v, "memory_bytes", where), where, "memory_bytes");
    d.peak_flops = r.opt_number(v, "peak_flops", where, d.peak_flops);
    d.mem_bandwidth = r.opt_number(v, "mem_bandwidth", where, d.mem_bandwidth);
    d.op_overhead_s = r.opt_number(v, "op_overhead_s", where, d.op_overhead_s);
    const int64_t threads = r.opt_integer(v, "threads", where, 0);
    if (threads < 0 || threads > 1 << 20)
      r.fail(where, "threads", detail::concat("must be in [0, ", 1 << 20, "], got ", threads));
    d.threads = static_cast<int32_t>(threads);
    c.devices.push_back(std::move(d));
  }
  if (const rj::Value* links = r.member(doc, "links")) {
    r.array(*links, "", "links");
    if (links->Size() > 4096u * 4096u) r.fail("", "links", "too many links");
    for (rj::SizeType i = 0; i < links->Size(); ++i)
      c.links.push_back(parse_link(r, (*links)[i], detail::concat("links[", i, "]"), true));
  }
  if (const rj::Value* dl = r.member(doc, "default_link")) c.default_link = parse_link(r, *dl, "default_link", false);
  validate_cluster(c);
  return c;
}

void save_cluster(const Cluster& cluster, const std::string& path) {
  write_file_atomic(path, cluster_to_json(cluster));
}

Cluster load_cluster(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<PlacementError>(path, [&] { return cluster_from_json(contents); });
}

// ---------------------------------------------------------------------------
// Placement

std::string placement_to_json(const NamedPlacement& placement) {
  JsonStringMap map;
  map.entries.assign(placement.device.begin(), placement.device.end());
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.placement")), make_nvp("version", kGraphFormatVersion),
       make_nvp("graph", placement.graph), make_nvp("placement", map));
  });
}

NamedPlacement placement_from_json(const std::string& text) {
  JsonReader<PlacementError> r{"placement"};
  const rj::Document doc = r.parse(text, "placer.placement");
  NamedPlacement p;
  p.graph = r.opt_string(doc, "graph", "");
  const rj::Value& map = r.object(r.require(doc, "placement", ""), "", "placement");
  for (auto it = map.MemberBegin(); it != map.MemberEnd(); ++it) {
    std::string op(it->name.GetString(), it->name.GetStringLength());
    const std::string where = "placement: op '" + op + "'";
    if (!it->value.IsString())
      r.fail(where, "expected a device name (a string), got " + JsonReader<PlacementError>::describe(it->value));
    std::string device(it->value.GetString(), it->value.GetStringLength());
    if (!p.device.emplace(op, device).second) r.fail(where, "listed twice");
  }
  return p;
}

void save_placement(const NamedPlacement& placement, const std::string& path) {
  write_file_atomic(path, placement_to_json(placement));
}

NamedPlacement load_placement(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<PlacementError>(path, [&] { return placement_from_json(contents); });
}

// ---------------------------------------------------------------------------
// Profile

namespace {
struct JsonOpTiming {
  const OpTiming* t = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("op", t->op), make_nvp("signature", t->signature), make_nvp("device", t->device),
       make_nvp("device_kind", t->device_kind), make_nvp("seconds", t->seconds));
    if (t->contended_seconds > 0) ar(make_nvp("contended_seconds", t->contended_seconds));
  }
};
struct JsonSample {
  int64_t bytes = 0;
  double seconds = 0.0;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("bytes", bytes), make_nvp("seconds", seconds));
  }
};
struct JsonLinkFit {
  const LinkFit* l = nullptr;
  template <class A>
  void save(A& ar) const {
    std::vector<JsonSample> samples;
    for (const auto& [b, s] : l->samples) samples.push_back({b, s});
    ar(make_nvp("from", l->from), make_nvp("to", l->to), make_nvp("alpha_s", l->alpha_s),
       make_nvp("beta_Bps", l->beta_Bps), make_nvp("samples", samples));
  }
};
}  // namespace

std::string profile_to_json(const Profile& profile) {
  std::vector<JsonOpTiming> ops;
  for (const OpTiming& t : profile.ops) ops.push_back({&t});
  std::vector<JsonLinkFit> links;
  for (const LinkFit& l : profile.links) links.push_back({&l});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.profile")), make_nvp("version", profile.version),
       make_nvp("graph", profile.graph), make_nvp("devices", profile.devices), make_nvp("host", profile.host),
       make_nvp("per_op_overhead_s", profile.per_op_overhead_s), make_nvp("ops", ops), make_nvp("links", links));
  });
}

Profile profile_from_json(const std::string& text) {
  JsonReader<InputError> r{"profile"};
  const rj::Document doc = r.parse(text, "placer.profile");
  Profile p;
  p.version = static_cast<int>(r.integer(doc["version"], "", "version"));
  p.graph = r.opt_string(doc, "graph", "");
  p.devices = r.opt_string(doc, "devices", "");
  p.host = r.opt_string(doc, "host", "");
  p.per_op_overhead_s = r.opt_number(doc, "per_op_overhead_s", "", 0.0);
  if (!(p.per_op_overhead_s >= 0) || !std::isfinite(p.per_op_overhead_s))
    r.fail("", "per_op_overhead_s", "must be a finite number >= 0");
  const rj::Value& ops = r.array(r.require(doc, "ops", ""), "", "ops");
  for (rj::SizeType i = 0; i < ops.Size(); ++i) {
    const std::string where = detail::concat("ops[", i, "]");
    const rj::Value& v = r.object(ops[i], where, "");
    OpTiming t;
    t.op = r.opt_string(v, "op", where);
    t.signature = r.opt_string(v, "signature", where);
    t.device = r.string(r.require(v, "device", where), where, "device");
    t.device_kind = r.opt_string(v, "device_kind", where);
    t.seconds = r.number(r.require(v, "seconds", where), where, "seconds");
    if (t.op.empty() && t.signature.empty()) r.fail(where, "needs field 'op' or 'signature'");
    if (!(t.seconds >= 0) || !std::isfinite(t.seconds)) r.fail(where, "seconds", "must be a finite number >= 0");
    t.contended_seconds = r.opt_number(v, "contended_seconds", where, 0.0);
    if (!(t.contended_seconds >= 0) || !std::isfinite(t.contended_seconds))
      r.fail(where, "contended_seconds", "must be a finite number >= 0");
    p.ops.push_back(std::move(t));
  }
  if (const rj::Value* links = r.member(doc, "links")) {
    r.array(*links, "", "links");
    for (rj::SizeType i = 0; i < links->Size(); ++i) {
      const std::string where = detail::concat("links[", i, "]");
      const rj::Value& v = r.object((*links)[i], where, "");
      LinkFit l;
      l.from = r.string(r.require(v, "from", where), where, "from");
      l.to = r.string(r.require(v, "to", where), where, "to");
      l.alpha_s = r.number(r.require(v, "alpha_s", where), where, "alpha_s");
      l.beta_Bps = r.number(r.require(v, "beta_Bps", where), where, "beta_Bps");
      if (!(l.alpha_s >= 0) || !std::isfinite(l.alpha_s)) r.fail(where, "alpha_s", "must be >= 0");
      if (!(l.beta_Bps > 0) || !std::isfinite(l.beta_Bps)) r.fail(where, "beta_Bps", "must be positive");
      if (const rj::Value* samples = r.member(v, "samples")) {
        r.array(*samples, where, "samples");
        for (rj::SizeType k = 0; k < samples->Size(); ++k) {
          const std::string sw = detail::concat(where, " samples[", k, "]");
          const rj::Value& s = r.object((*samples)[k], sw, "");
          l.samples.emplace_back(r.integer(r.require(s, "bytes", sw), sw, "bytes"),
                                 r.number(r.require(s, "seconds", sw), sw, "seconds"));
        }
      }
      p.links.push_back(std::move(l));
    }
  }
  return p;
}

void save_profile(const Profile& profile, const std::string& path) {
  write_file_atomic(path, profile_to_json(profile));
}

Profile load_profile(const std::string& path) {
  const std::string contents = read_file(path);
  return with_path<InputError>(path, [&] { return profile_from_json(contents); });
}

// ---------------------------------------------------------------------------
// StepResult

namespace {
struct JsonDeviceStats {
  const DeviceStats* d = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("device", d->device), make_nvp("busy_s", d->busy_s), make_nvp("peak_bytes", d->peak_bytes));
  }
};
}  // namespace

std::string step_result_to_json(const StepResult& result) {
  std::vector<JsonDeviceStats> devices;
  for (const DeviceStats& d : result.devices) devices.push_back({&d});
  return write_json([&](cereal::JSONOutputArchive& ar) {
    ar(make_nvp("format", std::string("placer.step_result")), make_nvp("version", kGraphFormatVersion),
       make_nvp("status", std::string(step_status_name(result.status))), make_nvp("message", result.message),
       make_nvp("step_s", result.step_s), make_nvp("iqr_s", result.iqr_s), make_nvp("samples_s", result.samples_s),
       make_nvp("devices", devices), make_nvp("transfer_bytes", result.transfer_bytes),
       make_nvp("oom_device", result.oom_device), make_nvp("oom_needed_bytes", result.oom_needed_bytes),
       make_nvp("oom_capacity_bytes", result.oom_capacity_bytes));
  });
}

StepResult step_result_from_json(const std::string& text) {
  JsonReader<InputError> r{"step result"};
  const rj::Document doc = r.parse(text, "placer.step_result");
  StepResult s;
  const std::string status = r.string(r.require(doc, "status", ""), "", "status");
  bool known = false;
  for (StepStatus st : {StepStatus::Ok, StepStatus::Oom, StepStatus::Timeout, StepStatus::Error})
    if (status == step_status_name(st)) {
      s.status = st;
      known = true;
    }
  if (!known) r.fail("", "status", unknown_name("status", status, {"ok", "oom", "timeout", "error"}));
  s.message = r.opt_string(doc, "message", "");
  s.step_s = r.opt_number(doc, "step_s", "", 0.0);
  s.iqr_s = r.opt_number(doc, "iqr_s", "", 0.0);
  if (const rj::Value* v = r.member(doc, "samples_s")) s.samples_s = r.numbers(*v, "", "samples_s");
  if (const rj::Value* devices = r.member(doc, "devices")) {
    r.array(*devices, "", "devices");
    for (rj::SizeType i = 0; i < devices->Size(); ++i) {
      const std::string where = detail::concat("devices[", i, "]");
      const rj::Value& v = r.object((*devices)[i], where, "");
      DeviceStats d;
      d.device = r.string(r.require(v, "device", where), where, "device");
      d.busy_s = r.opt_number(v, "busy_s", where, 0.0);
      d.peak_bytes = r.opt_integer(v, "peak_bytes", where, 0);
      s.devices.push_back(std::move(d));
    }
  }
  s.transfer_bytes = r.opt_integer(doc, "transfer_bytes", "", 0);
  s.oom_device = r.opt_string(doc, "oom_device", "");
  s.oom_needed_bytes = r.opt_integer(doc, "oom_needed_bytes", "", 0);
  s.oom_capacity_bytes = r.opt_integer(doc, "oom_capacity_bytes", "", 0);
  return s;
}

// ---------------------------------------------------------------------------
// Files

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw InputError("cannot read '" + path + "': read error");
  return out.str();
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError("cannot write '" + path + "': write error");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError("cannot write '" + path + "': " + reason);
  }
}

}  // namespace placer
