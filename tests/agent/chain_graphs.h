// Small graphs of parallel chains for the learned-placer tests.
#pragma once

#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer::testing {

// Adds op `name` reading `inputs` (none: an input op) with one float output of 256 elements and `flops`.
// Custom op types: only the simulator sees these graphs.
inline OpId add_work_op(Graph& g, const std::string& name, std::vector<TensorRef> inputs, double flops) {
  Op op;
  op.name = name;
  op.type = inputs.empty() ? op_types::kInput : "test::work";
  op.inputs = std::move(inputs);
  op.outputs.push_back(TensorSpec{{256}, DType::Float32});
  op.flops = flops;
  return g.add_op(std::move(op));
}

// input -> two chains of `len` heavy ops -> join. On two equal devices the
// best placement puts one chain on each device.
inline Graph two_chains(int len) {
  Graph g;
  g.name = "two_chains";
  auto add = [&](const std::string& name, std::vector<TensorRef> inputs, double flops) {
    return add_work_op(g, name, std::move(inputs), flops);
  };
  const OpId in = add("input", {}, 1e6);
  OpId a = in, b = in;
  for (int i = 0; i < len; ++i) {
    a = add("a" + std::to_string(i), {{a, 0}}, 1e9);
    b = add("b" + std::to_string(i), {{b, 0}}, 1e9);
  }
  add("join", {{a, 0}, {b, 0}}, 1e6);
  return g;
}

}  // namespace placer::testing
