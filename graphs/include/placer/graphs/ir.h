// The graph IR: operators, tensors, shapes, FLOPs and bytes.
//
// A Graph is a DAG of Ops in insertion order. Each Op produces zero or more
// output tensors (TensorSpec) and consumes outputs of other ops (TensorRef).
// Op types are ATen schema names with overload ("aten::conv2d",
// "aten::add.Tensor") so the runtime can call the real kernel through the
// dispatcher, plus a few placer-specific types listed in OpTypes below.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "placer/graphs/ids.h"

namespace placer {

enum class DType : uint8_t { Float32, Float16, BFloat16, Float64, Int64, Int32, Int16, Int8, UInt8, Bool };

const char* dtype_name(DType dtype);                      // "float", "half", "long", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts "float", "float32", "half", ...
int64_t dtype_size(DType dtype);                          // bytes per element
bool is_floating(DType dtype);

struct TensorSpec {
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;

  int64_t numel() const;
  int64_t bytes() const;
  bool operator==(const TensorSpec& other) const { return shape == other.shape && dtype == other.dtype; }
  bool operator!=(const TensorSpec& other) const { return !(*this == other); }
};

// One output of one operator.
struct TensorRef {
  OpId op;
  int32_t output = 0;
  bool operator==(const TensorRef& o) const { return op == o.op && output == o.output; }
  bool operator!=(const TensorRef& o) const { return !(*this == o); }
};

// One argument of an ATen call, in schema order. Tensor arguments refer to the
// op's inputs by index; everything else is a constant kept so the runtime can
// make the exact call.
struct Arg {
  enum class Kind : uint8_t {
    None,        // None / absent optional
    Tensor,      // i = index into Op::inputs
    TensorList,  // ints = indices into Op::inputs
    Int,         // i
    Double,      // d
    Bool,        // b
    Ints,        // ints
    Doubles,     // doubles
    Bools,       // ints (0/1)
    String,      // s
    ScalarType,  // i = static_cast<int>(DType)
    Device,      // s; the runtime substitutes the op's placed device
  };
  Kind kind = Kind::None;
  int64_t i = 0;
  double d = 0.0;
  bool b = false;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::string s;

  static Arg none() { return Arg{}; }
  static Arg tensor(int64_t input_index) {
    Arg a;
    a.kind = Kind::Tensor;
    a.i = input_index;
    return a;
  }
  static Arg tensor_list(std::vector<int64_t> input_indices) {
    Arg a;
    a.kind = Kind::TensorList;
    a.ints = std::move(input_indices);
    return a;
  }
  static Arg integer(int64_t v) {
    Arg a;
    a.kind = Kind::Int;
    a.i = v;
    return a;
  }
  static Arg real(double v) {
    Arg a;
    a.kind = Kind::Double;
    a.d = v;
    return a;
  }
  static Arg boolean(bool v) {
    Arg a;
    a.kind = Kind::Bool;
    a.b = v;
    return a;
  }
  static Arg int_list(std::vector<int64_t> v) {
    Arg a;
    a.kind = Kind::Ints;
    a.ints = std::move(v);
    return a;
  }
  static Arg real_list(std::vector<double> v) {
    Arg a;
    a.kind = Kind::Doubles;
    a.doubles = std::move(v);
    return a;
  }
  static Arg bool_list(std::vector<int64_t> v) {
    Arg a;
    a.kind = Kind::Bools;
    a.ints = std::move(v);
    return a;
  }
  static Arg string(std::string v) {
    Arg a;
    a.kind = Kind::String;
    a.s = std::move(v);
    return a;
  }
  static Arg scalar_type(DType t) {
    Arg a;
    a.kind = Kind::ScalarType;
    a.i = static_cast<int64_t>(t);
    return a;
  }
  static Arg device(std::string v) {
    Arg a;
    a.kind = Kind::Device;
    a.s = std::move(v);
    return a;
  }

  bool operator==(const Arg& o) const;
  bool operator!=(const Arg& o) const { return !(*this == o); }
};

const char* arg_kind_name(Arg::Kind kind);
std::optional<Arg::Kind> parse_arg_kind(std::string_view name);

enum class Phase : uint8_t { Forward, Backward, Update };
const char* phase_name(Phase phase);
std::optional<Phase> parse_phase(std::string_view name);

// Op types that are not ATen calls. The runtime implements each.
namespace op_types {
// A graph input (a data batch). Args: optional [Int high]: integer inputs are
// drawn uniformly from [0, high). Float inputs are standard normal.
inline constexpr const char* kInput = "placer::input";
// A trainable parameter (a variable). param_bytes == its output's bytes.
inline constexpr const char* kParam = "placer::param";
// The gradient of Op::forward w.r.t. its differentiable inputs (float inputs
// that depend on a param), computed by ATen's own derivative of that single
// operator (autograd over the one op, using what its forward saved).
//   inputs[0]      = TensorRef{forward, 0}: orders it after its forward op
//                    (always co-located, so never a transfer).
//   inputs[1..]    = gradients flowing back from consumers' backward ops.
//   args[0] Ints:  for each of inputs[1..], the forward output index it is the
//                  gradient of (several for one output are summed).
//   args[1] Ints:  for each output of this op, the forward input index it is
//                  the gradient for; outputs[j] has that input's TensorSpec.
// Forward outputs that receive no gradient input are seeded with ones if the
// forward op is the loss (a sink with a scalar float output), zeros otherwise.
// flops = 2 x the forward op's flops.
inline constexpr const char* kBackward = "placer::backward";
// SGD update of a parameter in place, co-located with its param op.
// inputs[0] = the param op's output; inputs[1..] = gradients of the param from
// its consumers' backward ops, summed. args[0] Double: learning rate.
// Ops returning several tensors (tuples, Tensor[] such as aten::chunk) map
// them to outputs 0..n-1 in order.
inline constexpr const char* kSgd = "placer::sgd";
}  // namespace op_types

struct Op {
  std::string name;                 // unique in the graph
  std::string type;                 // "aten::conv2d", "aten::add.Tensor", or an op_types:: name
  std::vector<TensorRef> inputs;    // tensors consumed
  std::vector<Arg> args;            // full call arguments, schema order (ATen ops)
  std::vector<TensorSpec> outputs;  // tensors produced
  int64_t param_bytes = 0;          // bytes of trainable parameters this op owns
  double flops = 0.0;               // floating point operations of one execution
  Phase phase = Phase::Forward;
  std::string group;  // co-location group; ops sharing a non-empty group share a device
  std::string layer;  // model block tag ("lstm0", "attention", "mixed_5b/branch1"), used by the expert placer
  OpId forward;       // Backward/Update ops: the forward (or param) op they belong to
  // Alias facts: per output, the Op::inputs index whose storage it shares (a
  // view: no new memory, and it keeps that input alive), or -1. Recorded by
  // the importer (ATen's alias annotations) and the builders; empty means
  // not recorded (older files): output_aliases() (exec_plan.h) then derives
  // them from the op type.
  std::vector<int32_t> view_of;
  // The micro-batch a pipelined mini-batch's copy of an op belongs to
  // (graphs/pipeline.h); -1 for ops of a plain step and shared ops.
  int32_t microbatch = -1;

  int64_t output_bytes() const;
};

// A graph of operators. Ops are stored in insertion order; OpId is the index.
// Invariant: every input refers to an op added earlier, so id order is a
// topological order and an in-memory Graph cannot hold a cycle (files can:
// the loader reports them). add_op() keeps the name index and consumer lists.
class Graph {
 public:
  std::string name;                                    // "nmt", "inception_v3", or the imported file stem
  std::unordered_map<std::string, std::string> attrs;  // builder options etc., informative

  // Throws GraphError if the name is empty or taken, or an input refers to an
  // op not yet added or to an output index that op does not have.
  OpId add_op(Op op);
  const Op& op(OpId id) const { return ops_[id.value]; }
  // For edits that keep the inputs as they are (flops, group, layer, ...).
  Op& mutable_op(OpId id) { return ops_[id.value]; }
  const std::vector<Op>& ops() const { return ops_; }
  int64_t size() const { return static_cast<int64_t>(ops_.size()); }
  std::optional<OpId> find(std::string_view op_name) const;
  bool is_training() const;  // has Backward or Update ops

  // consumers(op) = the ops that read any output of op, ascending, unique.
  const std::vector<OpId>& consumers(OpId id) const { return consumers_[id.value]; }

  bool operator==(const Graph& other) const;
  bool operator!=(const Graph& other) const { return !(*this == other); }

 private:
  std::vector<Op> ops_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::vector<OpId>> consumers_;
};

}  // namespace placer
