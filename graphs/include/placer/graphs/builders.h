// Builders for the benchmark models of the field. Each builds a full training
// step (forward, backward, parameter update) of real ATen ops with real
// shapes, executable by the runtime, unless forward_only.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer {

struct BuilderOptions {
  std::map<std::string, int64_t> values;  // e.g. {"layers", 2}, {"batch", 64}
  bool forward_only = false;
  int64_t get(const std::string& key, int64_t fallback) const;
};

// Names: "rnnlm", "nmt", "inception_v3", "transformer", "resnet", "mlp".
std::vector<std::string> builder_names();
// The options a builder accepts with their defaults (for --help and docs).
std::map<std::string, int64_t> builder_defaults(const std::string& name);
// Throws InputError naming an unknown builder or option, or a bad value.
Graph build_graph(const std::string& name, const BuilderOptions& options);

// Adds backward and update ops to a forward graph: one placer::backward op per
// forward op with a differentiable input on the path from a param to the loss,
// one placer::sgd op per param. The loss is the last forward sink with a
// scalar float output. Shared by the builders and the TorchScript importer.
// Throws GraphError naming an op whose type `is_differentiable` rejects.
Graph make_training_graph(const Graph& forward, double learning_rate = 0.01,
                          const std::function<bool(const Op&)>& is_differentiable = nullptr);

}  // namespace placer
