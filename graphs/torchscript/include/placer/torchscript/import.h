// Import of TorchScript models into the graph IR, through LibTorch.
// No LibTorch types here: app/ and tests include this header.
#pragma once

#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer {

struct SampleInput {
  std::string name;             // the forward method's argument name
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
};

// "x:8x3x224x224:float" -> SampleInput. Throws InputError naming the part.
SampleInput parse_sample_input(const std::string& spec);

struct ImportOptions {
  bool forward_only = false;    // keep the inference graph (no backward/update)
  double learning_rate = 0.01;
};

// Loads MODEL.pt, freezes and inlines it, runs the sample inputs through it op
// by op to record every tensor's real shape, and returns the IR (a training
// step unless forward_only). Throws InputError naming the file, input, node or
// operator: not a TorchScript file, missing/extra inputs, control flow
// (prim::If / prim::Loop), an op the runtime cannot call, an op ATen cannot
// differentiate.
Graph import_torchscript(const std::string& path, const std::vector<SampleInput>& inputs,
                         const ImportOptions& options = {});

}  // namespace placer
