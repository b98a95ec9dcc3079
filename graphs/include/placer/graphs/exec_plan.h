// The execution rules of a training step, shared by the runtime's executor
// and the simulator, derived once here: which tensors an op reads, which
// outputs are views, what a backward op keeps alive, and, for one placement,
// which tensor copies exist, which transfers make them, and how many uses each
// copy has before it is freed.
//
// Memory rules: param and input outputs are resident for the whole step. Any
// other output is new memory when its op starts and is freed after its last
// use: a consumer op on its device, an outgoing transfer, a view of it, or
// the backward op of its producer or of an op that differentiates it
// (autograd keeps a forward op's outputs and differentiated inputs until its
// backward ran). A transferred copy is new memory on arrival and is freed
// after its last use on the destination. Views (Op::view_of) and placer::sgd
// outputs take no new memory and keep their base alive.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer {

// ATen ops whose schema returns an alias of an input (Tensor(a) / Tensor(a)[]):
// aten::view, t, chunk, ... The rule for graphs that record no alias facts.
bool is_view_op(std::string_view type);

// Op::view_of when recorded (entries outside [0, inputs) read as -1), else
// derived from the type: every output of a view op or of placer::sgd aliases
// input 0. Sized to op.outputs; all -1 for an op without inputs.
std::vector<int32_t> output_aliases(const Op& op);

// The placement-independent part, built once per graph in O(ops + edges).
// Tensors are numbered op by op, output by output. An op's inputs are its
// unique input tensors ("input slots", in first-use order). Holds a pointer to
// the graph, which must outlive it.
struct ExecRules {
  explicit ExecRules(const Graph& graph);

  const Graph* graph = nullptr;
  int32_t ops = 0;
  int32_t tensors = 0;
  std::vector<int32_t> out_begin;     // [ops + 1]: op o's outputs are tensors out_begin[o]..out_begin[o+1)
  std::vector<int32_t> tensor_op;     // [tensors]: producer op
  std::vector<int64_t> tensor_bytes;  // [tensors]: bytes of the tensor (and of a transferred copy)
  std::vector<int64_t> alloc_bytes;   // [tensors]: new memory at its producer (0 for views)
  std::vector<int32_t> view_base;     // [tensors]: input slot it aliases, -1 if none
  std::vector<int32_t> in_begin;      // [ops + 1]: into in_tensor
  std::vector<int32_t> in_tensor;     // unique input tensors of each op (input slots)
  std::vector<int32_t> pos_begin;     // [ops + 1]: op o's input k has input slot pos_slot[pos_begin[o] + k]
  std::vector<int32_t> pos_slot;      // [input positions]: the slot each input position reads
  std::vector<int32_t> cons_begin;    // [tensors + 1]: into cons_op / cons_slot
  std::vector<int32_t> cons_op;       // consumer ops of a tensor, ascending
  std::vector<int32_t> cons_slot;     // the consumer's input slot
  std::vector<int32_t> extra_begin;   // [ops + 1]: into extra_hold
  // Backward ops: the forward outputs (tensor id) and forward input slots
  // (~slot) it keeps alive until it has run.
  std::vector<int32_t> extra_hold;
  std::vector<uint8_t> resident;  // [ops]: param/input op, outputs live for the whole step

  // The input slot of op's input `position` (a lookup in pos_slot).
  int32_t slot_of(int32_t op, int32_t position) const;
};

// The placement-dependent part: one transfer per (tensor, remote device with
// consumers), and the uses of every copy. Flat arrays, so a caller that plans
// many placements can reuse one StepPlan and allocate nothing per call.
struct StepPlan {
  std::vector<int32_t> device;       // [ops]: the op's device
  std::vector<int32_t> xfer_begin;   // [tensors + 1]: transfers of tensor t are xfer_begin[t]..xfer_begin[t+1)
  std::vector<int32_t> xfer_dst;     // [transfers]: destination device
  std::vector<int32_t> xfer_tensor;  // [transfers]: the tensor it copies
  std::vector<int32_t> xfer_uses;    // [transfers]: uses of the copy on the destination before it is freed
  std::vector<int32_t> slot_xfer;    // [input slots]: the transfer feeding it, -1 = read where it was made
  std::vector<int32_t> tensor_uses;  // [tensors]: uses of the producer's copy (resident tensors: counted, never freed)

  int32_t transfers() const { return static_cast<int32_t>(xfer_dst.size()); }
};

// Fills `plan` for a placement given as a device index per op (each in
// [0, devices); the caller checks). `plan`'s buffers are reused.
void plan_step(const ExecRules& rules, const int32_t* device_of, int32_t devices, StepPlan& plan);

}  // namespace placer
