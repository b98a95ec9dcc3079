// Graph files as JSON: cereal save() of thin views over the IR for writing;
// JsonReader (json_reader.h) for reading, because outside input needs what
// cereal's input archive cannot give: optional fields, ops in any order, and
// errors that name the op and the field.
#include <algorithm>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"
#include "serialize_common.h"

namespace placer {

using namespace detail;

namespace {

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
    if (!o.view_of.empty()) ar(make_nvp("view_of", o.view_of));
    if (o.microbatch >= 0)
      ar(make_nvp("microbatch",
                  o.microbatch));  // absent: not a pipelined copy  // absent: not recorded (derived from the type)
  }
};

// A JSON object with keys chosen at run time, in sorted order.
// What the loader knows about one op before the graph is built.
struct OpRecord {
  Op op;                                                // everything but inputs and forward
  std::vector<std::pair<std::string, int32_t>> inputs;  // by op name
  std::string forward;                                  // by op name
  std::string where;                                    // "ops[3] 'conv1'"
};

Arg parse_arg(const JsonReader<GraphError>& r, const rj::Value& v, const std::string& where) {
  r.object(v, where, "");
  r.known(v, {"kind", "value"}, where);
  const std::string kind_name = r.string(r.require(v, "kind", where), where, "kind");
  const auto kind = parse_arg_kind(kind_name);
  if (!kind)
    r.fail(where, "kind",
           unknown_name("argument kind", kind_name,
                        {"none", "tensor", "tensors", "int", "double", "bool", "ints", "doubles", "bools", "string",
                         "dtype", "device"}));
  Arg a;
  a.kind = *kind;
  if (a.kind == Arg::Kind::None) {
    // An absent optional: a value given with it was dropped, silently.
    if (v.HasMember("value")) r.fail(where, "value", "an argument of kind 'none' has no value (leave it out)");
    return a;
  }
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
  r.known(v,
          {"name", "type", "inputs", "args", "outputs", "param_bytes", "flops", "phase", "group", "layer", "forward",
           "view_of", "microbatch"},
          where);
  rec.op.type = r.string(r.require(v, "type", where), where, "type");
  if (rec.op.type.empty()) r.fail(where, "type", "empty");

  if (const rj::Value* inputs = r.member(v, "inputs")) {
    r.array(*inputs, where, "inputs");
    for (rj::SizeType k = 0; k < inputs->Size(); ++k) {
      const std::string f = detail::concat("inputs[", k, "]");
      const rj::Value& in = (*inputs)[k];
      r.object(in, where, f.c_str());
      r.known(in, {"op", "output"}, where + " " + f);
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
    if (args->Size() > kMaxArgsPerOp)
      r.fail(where, "args", detail::concat(args->Size(), " arguments, over ", kMaxArgsPerOp));
    for (rj::SizeType k = 0; k < args->Size(); ++k)
      rec.op.args.push_back(parse_arg(r, (*args)[k], detail::concat(where, " args[", k, "]")));
  }
  const rj::Value& outputs = r.array(r.require(v, "outputs", where), where, "outputs");
  for (rj::SizeType k = 0; k < outputs.Size(); ++k) {
    const std::string f = detail::concat("outputs[", k, "]");
    const rj::Value& out = outputs[k];
    r.object(out, where, f.c_str());
    r.known(out, {"shape", "dtype"}, where + " " + f);
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
  if (const rj::Value* views = r.member(v, "view_of")) {
    for (int64_t in : r.integers(*views, where, "view_of")) {
      if (in < -1 || in >= static_cast<int64_t>(rec.inputs.size()))
        r.fail(where, detail::concat("view_of: ", in, " is not -1 or an input index"));
      rec.op.view_of.push_back(static_cast<int32_t>(in));
    }
    if (rec.op.view_of.size() != rec.op.outputs.size()) r.fail(where, "view_of: must have one entry per output");
  }
  const int64_t microbatch = r.opt_integer(v, "microbatch", where, -1);
  if (microbatch < -1 || microbatch > std::numeric_limits<int32_t>::max())
    r.fail(where, detail::concat("microbatch: ", microbatch, " is not -1 or a micro-batch index"));
  rec.op.microbatch = static_cast<int32_t>(microbatch);
  return rec;
}

// deps[i]: the records i must come after (its inputs' producers and its forward op), unsorted.
std::vector<std::vector<size_t>> record_deps(const JsonReader<GraphError>& r, const std::vector<OpRecord>& recs) {
  const size_t n = recs.size();
  std::unordered_map<std::string, size_t> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = index.emplace(recs[i].op.name, i);
    if (!inserted) r.fail(recs[i].where, detail::concat("duplicate op name (also ops[", it->second, "])"));
  }
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
  return deps;
}

// Kahn's algorithm over deduplicated deps, smallest file index first: a file in topological
// order loads in file order. pending[i] > 0 afterwards for the records left on a cycle.
std::vector<size_t> kahn_order(std::vector<std::vector<size_t>>& deps, std::vector<size_t>& pending) {
  const size_t n = deps.size();
  std::vector<std::vector<size_t>> users(n);
  pending.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
    pending[i] = deps[i].size();
    for (size_t d : deps[i]) users[d].push_back(i);
  }
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
  return order;
}

// A cycle: every op left has a dependency that is also left. Walk back
// along such dependencies until an op repeats, and fail naming the cycle.
[[noreturn]] void fail_on_cycle(const JsonReader<GraphError>& r, const std::vector<OpRecord>& recs,
                                const std::vector<std::vector<size_t>>& deps, const std::vector<size_t>& pending) {
  const size_t n = recs.size();
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

// Orders the records so that every op comes after its inputs and its forward
// op (Graph requires both), keeping file order where the file allows it.
std::vector<size_t> order_records(const JsonReader<GraphError>& r, const std::vector<OpRecord>& recs) {
  std::vector<std::vector<size_t>> deps = record_deps(r, recs);
  std::vector<size_t> pending;
  std::vector<size_t> order = kahn_order(deps, pending);
  if (order.size() == recs.size()) return order;
  fail_on_cycle(r, recs, deps, pending);
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
  r.known(doc, {"format", "version", "name", "attrs", "ops"}, "");
  Graph graph;
  graph.name = r.opt_string(doc, "name", "");
  if (const rj::Value* attrs = r.member(doc, "attrs")) {
    r.object(*attrs, "", "attrs");
    r.unique_keys(*attrs, "", "attrs");
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

}  // namespace placer
