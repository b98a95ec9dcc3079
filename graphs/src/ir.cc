#include "placer/graphs/ir.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "placer/graphs/error.h"

namespace placer {

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  int64_t size;
  bool floating;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::Float32, "float", 4, true},
    {DType::Float16, "half", 2, true},
    {DType::BFloat16, "bfloat16", 2, true},
    {DType::Float64, "double", 8, true},
    {DType::Int64, "long", 8, false},
    {DType::Int32, "int", 4, false},
    {DType::Int16, "short", 2, false},
    {DType::Int8, "int8", 1, false},
    {DType::UInt8, "uint8", 1, false},
    {DType::Bool, "bool", 1, false},
}};

const DTypeInfo& info(DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d;
  PLACER_CHECK(false, "unknown dtype ", static_cast<int>(dtype));
}
}  // namespace

const char* dtype_name(DType dtype) { return info(dtype).name; }
int64_t dtype_size(DType dtype) { return info(dtype).size; }
bool is_floating(DType dtype) { return info(dtype).floating; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.dtype;
  static const std::pair<const char*, DType> aliases[] = {
      {"float32", DType::Float32}, {"f32", DType::Float32},   {"float16", DType::Float16},
      {"f16", DType::Float16},     {"bf16", DType::BFloat16}, {"float64", DType::Float64},
      {"int64", DType::Int64},     {"int32", DType::Int32},   {"int16", DType::Int16}};
  for (const auto& [alias, dtype] : aliases)
    if (name == alias) return dtype;
  return std::nullopt;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorSpec::bytes() const { return numel() * dtype_size(dtype); }

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None: return true;
    case Kind::Tensor:
    case Kind::Int:
    case Kind::ScalarType: return i == o.i;
    case Kind::Double: return d == o.d;
    case Kind::Bool: return b == o.b;
    case Kind::TensorList:
    case Kind::Ints:
    case Kind::Bools: return ints == o.ints;
    case Kind::Doubles: return doubles == o.doubles;
    case Kind::String:
    case Kind::Device: return s == o.s;
  }
  return false;
}

namespace {
constexpr std::array<std::pair<Arg::Kind, const char*>, 12> kArgKinds = {{
    {Arg::Kind::None, "none"},
    {Arg::Kind::Tensor, "tensor"},
    {Arg::Kind::TensorList, "tensors"},
    {Arg::Kind::Int, "int"},
    {Arg::Kind::Double, "double"},
    {Arg::Kind::Bool, "bool"},
    {Arg::Kind::Ints, "ints"},
    {Arg::Kind::Doubles, "doubles"},
    {Arg::Kind::Bools, "bools"},
    {Arg::Kind::String, "string"},
    {Arg::Kind::ScalarType, "dtype"},
    {Arg::Kind::Device, "device"},
}};
}  // namespace

const char* arg_kind_name(Arg::Kind kind) {
  for (const auto& [k, n] : kArgKinds)
    if (k == kind) return n;
  PLACER_CHECK(false, "unknown arg kind ", static_cast<int>(kind));
}

std::optional<Arg::Kind> parse_arg_kind(std::string_view name) {
  for (const auto& [k, n] : kArgKinds)
    if (name == n) return k;
  return std::nullopt;
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Update: return "update";
  }
  PLACER_CHECK(false, "unknown phase ", static_cast<int>(phase));
}

std::optional<Phase> parse_phase(std::string_view name) {
  if (name == "forward") return Phase::Forward;
  if (name == "backward") return Phase::Backward;
  if (name == "update") return Phase::Update;
  return std::nullopt;
}

int64_t Op::output_bytes() const {
  int64_t total = 0;
  for (const auto& t : outputs) total += t.bytes();
  return total;
}

OpId Graph::add_op(Op op) {
  if (op.name.empty()) throw GraphError(detail::concat("op #", ops_.size(), ": empty name"));
  if (index_.count(op.name)) throw GraphError(detail::concat("op '", op.name, "': duplicate op name"));
  const int32_t id = static_cast<int32_t>(ops_.size());
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    const TensorRef& in = op.inputs[k];
    if (!in.op.valid() || in.op.value >= id)
      throw GraphError(detail::concat("op '", op.name, "': inputs[", k, "] refers to op #", in.op.value,
                                      " which is not an earlier op"));
    const Op& producer = ops_[in.op.value];
    if (in.output < 0 || in.output >= static_cast<int32_t>(producer.outputs.size()))
      throw GraphError(detail::concat("op '", op.name, "': inputs[", k, "] reads output ", in.output, " of '",
                                      producer.name, "' which has ", producer.outputs.size(), " outputs"));
  }
  if (op.forward.valid() && op.forward.value >= id)
    throw GraphError(
        detail::concat("op '", op.name, "': forward refers to op #", op.forward.value, " which is not an earlier op"));
  index_.emplace(op.name, id);
  consumers_.emplace_back();
  for (const TensorRef& in : op.inputs) {
    auto& list = consumers_[in.op.value];
    if (list.empty() || list.back().value != id) list.push_back(OpId(id));
  }
  ops_.push_back(std::move(op));
  return OpId(id);
}

std::optional<OpId> Graph::find(std::string_view op_name) const {
  auto it = index_.find(std::string(op_name));
  if (it == index_.end()) return std::nullopt;
  return OpId(it->second);
}

bool Graph::is_training() const {
  return std::any_of(ops_.begin(), ops_.end(), [](const Op& op) { return op.phase != Phase::Forward; });
}

namespace {
bool same_op(const Op& a, const Op& b) {
  return a.name == b.name && a.type == b.type && a.inputs == b.inputs && a.args == b.args && a.outputs == b.outputs &&
         a.param_bytes == b.param_bytes && a.flops == b.flops && a.phase == b.phase && a.group == b.group &&
         a.layer == b.layer && a.forward == b.forward && a.view_of == b.view_of && a.microbatch == b.microbatch;
}
}  // namespace

bool Graph::operator==(const Graph& other) const {
  if (name != other.name || attrs != other.attrs || ops_.size() != other.ops_.size()) return false;
  for (size_t i = 0; i < ops_.size(); ++i)
    if (!same_op(ops_[i], other.ops_[i])) return false;
  return true;
}

}  // namespace placer
