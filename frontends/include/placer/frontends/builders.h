// Builders for the benchmark models of the field. Each builds a full training
// step (forward, backward, parameter update) of real ATen ops with real
// shapes, executable by the runtime, unless forward_only.
#pragma once

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

}  // namespace placer
