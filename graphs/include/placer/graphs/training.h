// From a forward graph to a full training step: an IR transform shared by the
// front ends (the builders and the PyTorch importers).
#pragma once

#include <functional>
#include <optional>

#include "placer/graphs/ir.h"

namespace placer {

// Adds backward and update ops to a forward graph: one placer::backward op per
// forward op with a differentiable input on the path from a param to the loss,
// one placer::sgd op per param. The loss is `loss` where given (a scalar float
// output), else the last forward sink with a scalar float output. Forward ops the loss does not depend on are left out
// (their results are read by nothing in the step, and a read of a param there
// had no order against the param's update); the graph's attr
// "training.dropped_ops" counts them. Shared by the builders and the PyTorch importers.
// Throws GraphError naming an op whose type `is_differentiable` rejects.
Graph make_training_graph(const Graph& forward, double learning_rate = 0.01,
                          const std::function<bool(const Op&)>& is_differentiable = nullptr,
                          std::optional<OpId> loss = std::nullopt);

}  // namespace placer
