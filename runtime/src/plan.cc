// The executor's plan: the execution rules of graphs/exec_plan.h (slots,
// uses, views, backward holds, transfers: the same ones the simulator
// follows), plus what only real execution needs: kernels, autograd state and
// the checks that an op can run.
#include <algorithm>

#include "internal.h"
#include "placer/graphs/error.h"
#include "placer/graphs/exec_plan.h"

namespace placer {

namespace {

[[noreturn]] void bad_op(const Op& op, const std::string& what) {
  throw GraphError("op '" + op.name + "' (" + op.type + "): " + what);
}

OpKind kind_of(const Op& op) {
  if (op.type == op_types::kInput) return OpKind::Input;
  if (op.type == op_types::kParam) return OpKind::Param;
  if (op.type == op_types::kBackward) return OpKind::Backward;
  if (op.type == op_types::kSgd) return OpKind::Sgd;
  return OpKind::Aten;
}

constexpr int32_t kPersistentRefs = 1 << 30;

// Backward op i: checks it against its forward op and sets up the autograd
// state they share.
void plan_backward(const Graph& graph, int32_t i, KernelPlan& plan) {
  const Op& op = graph.op(OpId(i));
  OpPlan& p = plan.ops[i];
  if (!op.forward.valid() || op.forward.value >= i) bad_op(op, "forward must name an earlier op");
  const Op& fwd = graph.op(op.forward);
  OpPlan& fp = plan.ops[op.forward.value];
  if (fp.kind != OpKind::Aten) bad_op(op, "its forward op '" + fwd.name + "' is not an ATen op");
  if (fp.backward >= 0) bad_op(op, "forward op '" + fwd.name + "' already has a backward op");
  if (op.inputs.empty() || op.inputs[0].op != op.forward) bad_op(op, "inputs[0] must be its forward op's output 0");
  const std::vector<int64_t> empty;
  const auto& grad_of = op.args.size() > 0 ? op.args[0].ints : empty;
  const auto& grad_for = op.args.size() > 1 ? op.args[1].ints : empty;
  if (grad_of.size() + 1 != op.inputs.size())
    bad_op(op, "args[0] has " + std::to_string(grad_of.size()) + " entries for " +
                   std::to_string(op.inputs.size() - 1) + " gradient inputs");
  for (int64_t k : grad_of)
    if (k < 0 || k >= static_cast<int64_t>(fwd.outputs.size()))
      bad_op(op, "args[0] names forward output " + std::to_string(k));
  if (grad_for.size() != op.outputs.size())
    bad_op(op, "args[1] has " + std::to_string(grad_for.size()) + " entries for " + std::to_string(op.outputs.size()) +
                   " outputs");
  std::vector<int32_t> leaves;
  for (int64_t in : grad_for) {
    if (in < 0 || in >= static_cast<int64_t>(fwd.inputs.size()))
      bad_op(op, "args[1] names forward input " + std::to_string(in));
    leaves.push_back(static_cast<int32_t>(in));
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  fp.backward = i;
  fp.leaf_inputs = leaves;
  fp.state = plan.states++;
  p.state = fp.state;
  bool sink = true;
  for (OpId c : graph.consumers(op.forward)) sink = sink && plan.ops[c.value].kind == OpKind::Backward;
  p.is_loss = sink && op.inputs.size() == 1 && !fwd.outputs.empty() && fwd.outputs[0].numel() == 1 &&
              is_floating(fwd.outputs[0].dtype);
}

// Slots, uses, views, holds and transfers, from the shared rules: slot t is
// tensor t where its op made it; slot tensors + x is the copy transfer x makes.
void lay_out_slots(const Graph& graph, int32_t devices, KernelPlan& plan) {
  const int32_t n = static_cast<int32_t>(graph.size());
  const ExecRules rules(graph);
  std::vector<int32_t> device_of(n);
  for (int32_t i = 0; i < n; ++i) device_of[i] = plan.ops[i].device;
  StepPlan step;
  plan_step(rules, device_of.data(), devices, step);
  const int32_t T = rules.tensors;
  // The slot an op's input slot reads: the local tensor or its transferred copy.
  auto slot_of_input = [&](int32_t s) { return step.slot_xfer[s] < 0 ? rules.in_tensor[s] : T + step.slot_xfer[s]; };

  plan.slots.resize(T + step.transfers());
  for (int32_t t = 0; t < T; ++t) {
    const int32_t op = rules.tensor_op[t];
    SlotPlan& s = plan.slots[t];
    s.op = op;
    s.output = t - rules.out_begin[op];
    s.device = device_of[op];
    s.bytes = rules.alloc_bytes[t];
    s.persistent = rules.resident[op] != 0;
    s.refs = s.persistent ? kPersistentRefs : step.tensor_uses[t];
    if (rules.view_base[t] >= 0) s.view_of = slot_of_input(rules.view_base[t]);
    for (int32_t x = step.xfer_begin[t]; x < step.xfer_begin[t + 1]; ++x) s.transfers.push_back(x);
    plan.ops[op].out_slots.push_back(t);
  }
  plan.transfers.resize(step.transfers());
  for (int32_t x = 0; x < step.transfers(); ++x) {
    const int32_t t = step.xfer_tensor[x];
    SlotPlan& s = plan.slots[T + x];
    s.op = rules.tensor_op[t];
    s.output = t - rules.out_begin[s.op];
    s.device = step.xfer_dst[x];
    s.bytes = rules.tensor_bytes[t];
    s.refs = step.xfer_uses[x];
    TransferPlan& tr = plan.transfers[x];
    tr.src = t;
    tr.dst = T + x;
    tr.channel = device_of[s.op] * devices + s.device;
  }
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(OpId(i));
    OpPlan& p = plan.ops[i];
    plan.deps[i] = rules.in_begin[i + 1] - rules.in_begin[i];
    for (int32_t s = rules.in_begin[i]; s < rules.in_begin[i + 1]; ++s) {
      plan.slots[slot_of_input(s)].waiters.push_back(i);
      p.release_slots.push_back(slot_of_input(s));
    }
    p.in_slots.resize(op.inputs.size());
    for (size_t pos = 0; pos < op.inputs.size(); ++pos)
      p.in_slots[pos] = slot_of_input(rules.slot_of(i, static_cast<int32_t>(pos)));
    for (int32_t e = rules.extra_begin[i]; e < rules.extra_begin[i + 1]; ++e) {
      const int32_t h = rules.extra_hold[e];
      p.holds.push_back(h >= 0 ? h : slot_of_input(~h));
    }
  }
}

}  // namespace

KernelPlan make_plan(const Graph& graph, const Placement& placement, int32_t devices, bool retain_sinks) {
  KernelPlan plan;
  plan.graph = &graph;
  plan.devices = devices;
  const int32_t n = static_cast<int32_t>(graph.size());
  plan.ops.resize(n);
  plan.calls.resize(n);
  plan.deps.assign(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(OpId(i));
    OpPlan& p = plan.ops[i];
    p.kind = kind_of(op);
    p.device = placement.device_of[i].value;
    if (p.kind == OpKind::Aten) {
      plan.calls[i] = std::make_unique<OpCall>(bind_op(op));
      p.call = plan.calls[i].get();
    }
    if ((p.kind == OpKind::Input || p.kind == OpKind::Param) && op.outputs.size() != 1)
      bad_op(op, "must have exactly one output");
  }
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(OpId(i));
    const OpKind kind = plan.ops[i].kind;
    if (kind == OpKind::Sgd && (op.inputs.empty() || plan.ops[op.inputs[0].op.value].kind != OpKind::Param))
      bad_op(op, "inputs[0] must be the output of a placer::param op");
    if (kind == OpKind::Backward) plan_backward(graph, i, plan);
  }
  lay_out_slots(graph, devices, plan);
  // Graph outputs (forward sinks) kept for StepValues.
  if (retain_sinks) {
    for (int32_t i = 0; i < n; ++i) {
      OpPlan& p = plan.ops[i];
      if (p.kind != OpKind::Aten) continue;
      bool sink = true;
      for (OpId c : graph.consumers(OpId(i)))
        sink = sink && (plan.ops[c.value].kind == OpKind::Backward || plan.ops[c.value].kind == OpKind::Sgd);
      if (!sink) continue;
      p.retain = true;
      for (int32_t slot : p.out_slots) plan.slots[slot].refs++;
    }
  }
  for (OpPlan& p : plan.ops)
    for (int32_t slot : p.out_slots)
      if (!plan.slots[slot].persistent && plan.slots[slot].view_of < 0) p.new_bytes += plan.slots[slot].bytes;
  return plan;
}

}  // namespace placer
