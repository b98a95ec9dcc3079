#include "placer/graphs/exec_plan.h"

#include <algorithm>

#include "placer/graphs/error.h"

namespace placer {

bool is_view_op(std::string_view type) {
  static const char* const kViews[] = {
      "aten::view",      "aten::view_as",    "aten::reshape",      "aten::reshape_as",       "aten::t",
      "aten::transpose", "aten::permute",    "aten::expand",       "aten::expand_as",        "aten::select",
      "aten::slice",     "aten::chunk",      "aten::split",        "aten::split_with_sizes", "aten::tensor_split",
      "aten::unbind",    "aten::unsqueeze",  "aten::squeeze",      "aten::flatten",          "aten::unflatten",
      "aten::narrow",    "aten::as_strided", "aten::alias",        "aten::detach",           "aten::contiguous",
      "aten::diagonal",  "aten::movedim",    "aten::swapaxes",     "aten::unfold",           "aten::numpy_T",
      "aten::mT",        "aten::matrix_H",   "aten::view_as_real", "aten::view_as_complex"};
  const std::string_view base = type.substr(0, type.find('.'));
  for (const char* v : kViews)
    if (base == v) return true;
  return false;
}

std::vector<int32_t> output_aliases(const Op& op) {
  const int32_t inputs = static_cast<int32_t>(op.inputs.size());
  std::vector<int32_t> aliases(op.outputs.size(), -1);
  if (inputs == 0) return aliases;
  if (!op.view_of.empty()) {
    for (size_t k = 0; k < aliases.size() && k < op.view_of.size(); ++k)
      if (op.view_of[k] >= 0 && op.view_of[k] < inputs) aliases[k] = op.view_of[k];
    return aliases;
  }
  if (op.type == op_types::kSgd || is_view_op(op.type)) std::fill(aliases.begin(), aliases.end(), 0);
  return aliases;
}

namespace {

// Tensors: each op's outputs numbered in op order, their producer and bytes; params and inputs resident.
void number_tensors(const Graph& g, ExecRules& r) {
  r.out_begin.resize(r.ops + 1);
  int32_t t = 0;
  for (int32_t o = 0; o < r.ops; ++o) {
    r.out_begin[o] = t;
    t += static_cast<int32_t>(g.op(OpId(o)).outputs.size());
  }
  r.out_begin[r.ops] = t;
  r.tensors = t;
  r.tensor_op.resize(r.tensors);
  r.tensor_bytes.resize(r.tensors);
  r.resident.assign(r.ops, 0);
  for (int32_t o = 0; o < r.ops; ++o) {
    const Op& op = g.op(OpId(o));
    r.resident[o] = op.type == op_types::kParam || op.type == op_types::kInput;
    for (int32_t k = 0; k < static_cast<int32_t>(op.outputs.size()); ++k) {
      r.tensor_op[r.out_begin[o] + k] = o;
      r.tensor_bytes[r.out_begin[o] + k] = op.outputs[k].bytes();
    }
  }
}

// Unique inputs per op, the slot of each input position, and the consumer
// lists (ascending op id since ops are visited in id order).
void link_consumers(const Graph& g, ExecRules& r) {
  r.in_begin.resize(r.ops + 1);
  r.pos_begin.resize(r.ops + 1);
  std::vector<int32_t> cons_count(r.tensors + 1, 0);
  std::vector<int32_t> last_seen(r.tensors, -1);
  std::vector<int32_t> seen_slot(r.tensors, -1);  // the slot of a tensor in the op that last_seen it
  for (int32_t o = 0; o < r.ops; ++o) {
    r.in_begin[o] = static_cast<int32_t>(r.in_tensor.size());
    r.pos_begin[o] = static_cast<int32_t>(r.pos_slot.size());
    for (const TensorRef& in : g.op(OpId(o)).inputs) {
      const int32_t tid = r.out_begin[in.op.value] + in.output;
      if (last_seen[tid] != o) {
        last_seen[tid] = o;
        seen_slot[tid] = static_cast<int32_t>(r.in_tensor.size());
        r.in_tensor.push_back(tid);
        ++cons_count[tid];
      }
      r.pos_slot.push_back(seen_slot[tid]);
    }
  }
  r.in_begin[r.ops] = static_cast<int32_t>(r.in_tensor.size());
  r.pos_begin[r.ops] = static_cast<int32_t>(r.pos_slot.size());
  r.alloc_bytes = r.tensor_bytes;
  r.cons_begin.assign(r.tensors + 1, 0);
  for (int32_t i = 0; i < r.tensors; ++i) r.cons_begin[i + 1] = r.cons_begin[i] + cons_count[i];
  r.cons_op.resize(r.in_tensor.size());
  r.cons_slot.resize(r.in_tensor.size());
  std::vector<int32_t> fill(r.cons_begin.begin(), r.cons_begin.end() - 1);
  for (int32_t o = 0; o < r.ops; ++o)
    for (int32_t s = r.in_begin[o]; s < r.in_begin[o + 1]; ++s) {
      const int32_t pos = fill[r.in_tensor[s]]++;
      r.cons_op[pos] = o;
      r.cons_slot[pos] = s;
    }
}

// Views: an output aliasing an input takes no memory and keeps the input alive.
void mark_views(const Graph& g, ExecRules& r) {
  r.view_base.assign(r.tensors, -1);
  for (int32_t o = 0; o < r.ops; ++o) {
    const std::vector<int32_t> aliases = output_aliases(g.op(OpId(o)));
    for (int32_t k = 0; k < static_cast<int32_t>(aliases.size()); ++k) {
      if (aliases[k] < 0) continue;
      r.view_base[r.out_begin[o] + k] = r.slot_of(o, aliases[k]);
      r.alloc_bytes[r.out_begin[o] + k] = 0;
    }
  }
}

// A backward op holds its forward op's outputs and differentiated inputs
// (args[1]: the forward input index of each gradient it returns).
void hold_backward_operands(const Graph& g, ExecRules& r) {
  r.extra_begin.resize(r.ops + 1);
  for (int32_t o = 0; o < r.ops; ++o) {
    r.extra_begin[o] = static_cast<int32_t>(r.extra_hold.size());
    const Op& op = g.op(OpId(o));
    if (op.type != op_types::kBackward || !op.forward.valid() || op.forward.value >= o) continue;
    const int32_t f = op.forward.value;
    const Op& fwd = g.op(op.forward);
    std::vector<int32_t> slots;
    if (op.args.size() > 1)
      for (int64_t pos : op.args[1].ints)
        if (pos >= 0 && pos < static_cast<int64_t>(fwd.inputs.size()))
          slots.push_back(r.slot_of(f, static_cast<int32_t>(pos)));
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (int32_t slot : slots) r.extra_hold.push_back(~slot);
    for (int32_t tid = r.out_begin[f]; tid < r.out_begin[f + 1]; ++tid) r.extra_hold.push_back(tid);
  }
  r.extra_begin[r.ops] = static_cast<int32_t>(r.extra_hold.size());
}

}  // namespace

ExecRules::ExecRules(const Graph& g) : graph(&g) {
  PLACER_CHECK(g.size() < (int64_t{1} << 30), "graph too large to plan: ", g.size());
  ops = static_cast<int32_t>(g.size());
  number_tensors(g, *this);
  link_consumers(g, *this);
  mark_views(g, *this);
  hold_backward_operands(g, *this);
}

int32_t ExecRules::slot_of(int32_t op, int32_t position) const {
  PLACER_CHECK(position >= 0 && position < pos_begin[op + 1] - pos_begin[op], "input ", position, " of op ", op,
               " has no slot");
  return pos_slot[pos_begin[op] + position];
}

void plan_step(const ExecRules& rules, const int32_t* device_of, int32_t devices, StepPlan& plan) {
  const int32_t T = rules.tensors;
  plan.device.assign(device_of, device_of + rules.ops);
  plan.tensor_uses.assign(T, 0);
  plan.xfer_begin.resize(T + 1);
  plan.xfer_dst.clear();
  plan.xfer_tensor.clear();
  plan.xfer_uses.clear();
  plan.slot_xfer.resize(rules.in_tensor.size());
  // Per device: the tensor whose transfer to it was made last, and that transfer.
  thread_local std::vector<int32_t> dev_tag, dev_xfer;
  dev_tag.assign(devices, -1);
  dev_xfer.assign(devices, -1);
  const int32_t* dev = plan.device.data();
  for (int32_t t = 0; t < T; ++t) {
    plan.xfer_begin[t] = plan.transfers();
    const int32_t dp = dev[rules.tensor_op[t]];
    int32_t uses = 0;
    for (int32_t c = rules.cons_begin[t]; c < rules.cons_begin[t + 1]; ++c) {
      const int32_t dc = dev[rules.cons_op[c]];
      if (dc == dp) {
        ++uses;
        plan.slot_xfer[rules.cons_slot[c]] = -1;
        continue;
      }
      if (dev_tag[dc] != t) {
        dev_tag[dc] = t;
        dev_xfer[dc] = plan.transfers();
        plan.xfer_dst.push_back(dc);
        plan.xfer_tensor.push_back(t);
        plan.xfer_uses.push_back(0);
        ++uses;  // the outgoing transfer reads the source copy
      }
      ++plan.xfer_uses[dev_xfer[dc]];
      plan.slot_xfer[rules.cons_slot[c]] = dev_xfer[dc];
    }
    plan.tensor_uses[t] = uses;
  }
  plan.xfer_begin[T] = plan.transfers();
  // Holds beyond consumers: views on their base, backward ops on forward state.
  auto hold_slot = [&](int32_t slot) {
    const int32_t x = plan.slot_xfer[slot];
    if (x < 0)
      ++plan.tensor_uses[rules.in_tensor[slot]];
    else
      ++plan.xfer_uses[x];
  };
  for (int32_t t = 0; t < T; ++t)
    if (rules.view_base[t] >= 0) hold_slot(rules.view_base[t]);
  for (const int32_t h : rules.extra_hold) {
    if (h >= 0)
      ++plan.tensor_uses[h];
    else
      hold_slot(~h);
  }
}

}  // namespace placer
