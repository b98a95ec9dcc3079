// make_training_graph: forward graph -> full training step (see ir.h for the
// exact meaning of placer::backward and placer::sgd).
//
// A tensor "requires grad" when it is a param's output, or a float output of
// an op with a requires-grad input. Walking the forward ops in reverse
// topological order, an op gets a backward op when it has a requires-grad
// input and receives a gradient: it is the loss, or one of its requires-grad
// outputs is an input of a consumer that got a backward op. Its backward op
// emits one gradient per requires-grad input. Every param that receives a
// gradient gets an sgd op after all backward ops.
#include <string>
#include <utility>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/training.h"

namespace placer {

namespace {

bool is_scalar_float(const TensorSpec& spec) { return is_floating(spec.dtype) && spec.numel() == 1; }

OpId find_loss(const Graph& g) {
  for (int32_t k = static_cast<int32_t>(g.size()) - 1; k >= 0; --k) {
    const Op& op = g.op(OpId(k));
    if (!g.consumers(OpId(k)).empty()) continue;
    if (op.outputs.size() == 1 && is_scalar_float(op.outputs[0]) && op.type != op_types::kInput &&
        op.type != op_types::kParam) {
      return OpId(k);
    }
  }
  throw GraphError("graph '" + g.name +
                   "': no loss (a forward sink with one scalar float output); cannot make a training graph");
}

// A gradient flowing into a forward op's output, produced by a backward op.
struct GradIn {
  TensorRef grad;          // output of a backward op
  int32_t forward_output;  // which output of the receiving forward op it is for
};

// requires_grad[op][output]: a param's float outputs, and the float outputs of an op with a requires-grad input.
std::vector<std::vector<char>> requires_grad_table(const Graph& forward) {
  const int32_t n = static_cast<int32_t>(forward.size());
  std::vector<std::vector<char>> requires_grad(n);
  for (int32_t k = 0; k < n; ++k) {
    const Op& op = forward.op(OpId(k));
    requires_grad[k].assign(op.outputs.size(), 0);
    if (op.type == op_types::kParam) {
      for (size_t j = 0; j < op.outputs.size(); ++j) requires_grad[k][j] = is_floating(op.outputs[j].dtype);
      continue;
    }
    if (op.type == op_types::kInput) continue;
    bool any = false;
    for (const TensorRef& in : op.inputs) any = any || requires_grad[in.op.value][in.output];
    if (!any) continue;
    for (size_t j = 0; j < op.outputs.size(); ++j) requires_grad[k][j] = is_floating(op.outputs[j].dtype);
  }
  return requires_grad;
}

// The backward op of forward op `id`: its inputs are the forward op's first output and the
// gradients arriving at it; it emits one gradient per forward input in `grad_for`.
Op backward_op(const Graph& forward, OpId id, const std::vector<GradIn>& grads_in,
               const std::vector<int64_t>& grad_for) {
  const Op& op = forward.op(id);
  Op back;
  back.name = op.name + "/grad";
  back.type = op_types::kBackward;
  back.inputs.push_back(TensorRef{id, 0});
  std::vector<int64_t> grad_outputs;
  for (const GradIn& gi : grads_in) {
    back.inputs.push_back(gi.grad);
    grad_outputs.push_back(gi.forward_output);
  }
  for (int64_t i : grad_for) back.outputs.push_back(forward.op(op.inputs[i].op).outputs[op.inputs[i].output]);
  back.args = {Arg::int_list(std::move(grad_outputs)), Arg::int_list(grad_for)};
  back.flops = 2.0 * op.flops;
  back.phase = Phase::Backward;
  back.group = op.group;
  back.layer = op.layer;
  back.forward = id;
  back.view_of.assign(back.outputs.size(), -1);  // fresh gradients
  return back;
}

// Adds the backward ops to `g` in reverse topological order of `forward`; returns the gradients
// arriving at each forward op.
std::vector<std::vector<GradIn>> add_backward_ops(const Graph& forward, OpId loss,
                                                  const std::function<bool(const Op&)>& is_differentiable, Graph& g) {
  const int32_t n = static_cast<int32_t>(forward.size());
  const std::vector<std::vector<char>> requires_grad = requires_grad_table(forward);
  std::vector<std::vector<GradIn>> grads_in(n);  // gradients arriving at each forward op
  for (int32_t k = n - 1; k >= 0; --k) {
    const OpId id(k);
    const Op& op = forward.op(id);
    if (op.type == op_types::kInput || op.type == op_types::kParam) continue;
    if (id != loss && grads_in[k].empty()) continue;
    std::vector<int64_t> grad_for;  // forward input indices that get a gradient
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (requires_grad[op.inputs[i].op.value][op.inputs[i].output]) grad_for.push_back(static_cast<int64_t>(i));
    }
    if (grad_for.empty()) continue;
    if (is_differentiable && !is_differentiable(op)) {
      throw GraphError("op '" + op.name + "' (" + op.type +
                       ") is on the path to the loss but cannot be differentiated");
    }
    OpId bid = g.add_op(backward_op(forward, id, grads_in[k], grad_for));
    for (size_t j = 0; j < grad_for.size(); ++j) {
      const TensorRef& src = op.inputs[grad_for[j]];
      grads_in[src.op.value].push_back(GradIn{TensorRef{bid, static_cast<int32_t>(j)}, src.output});
    }
  }
  return grads_in;
}

// The sgd op of param `k`: sums its gradients, then p -= lr * g.
Op update_op(const Op& op, OpId k, const std::vector<GradIn>& grads, double learning_rate) {
  Op update;
  update.name = op.name + "/update";
  update.type = op_types::kSgd;
  update.inputs.push_back(TensorRef{k, 0});
  for (const GradIn& gi : grads) update.inputs.push_back(gi.grad);
  update.args = {Arg::real(learning_rate)};
  const double numel = op.outputs.empty() ? 0.0 : static_cast<double>(op.outputs[0].numel());
  update.flops = numel * (static_cast<double>(grads.size()) - 1.0) + 2.0 * numel;
  update.phase = Phase::Update;
  update.group = op.group;
  update.layer = op.layer;
  update.forward = k;
  update.view_of.assign(update.outputs.size(), 0);  // the param itself, updated in place
  return update;
}

// The forward ops the loss depends on, with every input and param op (state, kept even where unread);
// the others are left out of the step. Keeping them let a param's update run before such an op read
// the param: nothing orders an op that leads to no backward op against the update (a model returning
// `(fc(x), fc(y))` and training on the first).
Graph without_dead_ops(const Graph& forward, OpId* loss) {
  const int32_t n = static_cast<int32_t>(forward.size());
  std::vector<char> needed(n, 0);
  needed[loss->value] = 1;
  for (int32_t k = n - 1; k >= 0; --k) {
    const Op& op = forward.op(OpId(k));
    if (op.type == op_types::kInput || op.type == op_types::kParam) needed[k] = 1;
    if (!needed[k]) continue;
    for (const TensorRef& in : op.inputs) needed[in.op.value] = 1;
  }
  int32_t dropped = 0;
  for (char keep : needed) dropped += keep ? 0 : 1;
  if (dropped == 0) return forward;
  Graph kept;
  kept.name = forward.name;
  kept.attrs = forward.attrs;
  kept.attrs["training.dropped_ops"] = std::to_string(dropped);
  std::vector<OpId> id(n);
  for (int32_t k = 0; k < n; ++k) {
    if (!needed[k]) continue;
    Op op = forward.op(OpId(k));
    for (TensorRef& in : op.inputs) in.op = id[in.op.value];
    id[k] = kept.add_op(std::move(op));
  }
  *loss = id[loss->value];
  return kept;
}

}  // namespace

Graph make_training_graph(const Graph& forward, double learning_rate,
                          const std::function<bool(const Op&)>& is_differentiable, std::optional<OpId> given_loss) {
  if (forward.is_training()) {
    throw GraphError("graph '" + forward.name + "' already has backward or update ops");
  }
  if (given_loss && (given_loss->value < 0 || given_loss->value >= static_cast<int32_t>(forward.size()) ||
                     forward.op(*given_loss).outputs.size() != 1 ||
                     !is_scalar_float(forward.op(*given_loss).outputs[0])))
    throw GraphError("graph '" + forward.name + "': the loss given is not an op with one scalar float output");
  OpId loss = given_loss ? *given_loss : find_loss(forward);
  const Graph step_forward = without_dead_ops(forward, &loss);
  const int32_t n = static_cast<int32_t>(step_forward.size());

  Graph g = step_forward;
  const std::vector<std::vector<GradIn>> grads_in = add_backward_ops(step_forward, loss, is_differentiable, g);
  if (g.size() == step_forward.size()) {
    throw GraphError("graph '" + forward.name + "': the loss '" + step_forward.op(loss).name +
                     "' does not depend on any param; nothing to train");
  }
  for (int32_t k = 0; k < n; ++k) {
    const Op& op = step_forward.op(OpId(k));
    if (op.type != op_types::kParam || grads_in[k].empty()) continue;
    g.add_op(update_op(op, OpId(k), grads_in[k], learning_rate));
  }
  return g;
}

}  // namespace placer
