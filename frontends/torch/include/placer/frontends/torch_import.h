// Import of PyTorch models into the graph IR, through LibTorch: TorchScript
// archives (torch.jit.save) and torch.export programs (torch.export.save).
// No LibTorch types here: app/ and tests include this header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer {

struct SampleInput {
  std::string name;  // the forward method's argument name
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
};

// "x:8x3x224x224:float" -> SampleInput. Throws InputError naming the part.
SampleInput parse_sample_input(const std::string& spec);
// The dtype names parse_dtype accepts, as the unknown-dtype error lists them: "float, half, ..., bool".
std::string dtype_names();

// What a model file may make the importers allocate: no size field is trusted.
// One tensor (an --input, a stored or made-up weight, a node's output) holds at most 2^31 elements
// (8 GiB of floats): a typo such as 8x3x2240000x224 is an error, not an attempt at terabytes.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
// A torch.export archive's parameters, buffers and constants, stored or made up, hold at most 16 GiB
// in all (a 7B-parameter model in bfloat16 is 14 GiB); ImportOptions::max_weight_bytes lowers it.
inline constexpr int64_t kMaxWeightBytes = int64_t{16} << 30;
// The outputs a torch.export program's nodes made that a later node or the program's outputs still read are held
// at most 8 GiB in all, besides the weights (each is let go after its last reader); ImportOptions::max_live_bytes
// changes it. A TorchScript archive's records, uncompressed, are capped in all by max_weight_bytes.
inline constexpr int64_t kMaxLiveBytes = int64_t{8} << 30;

struct ImportOptions {
  bool forward_only = false;  // keep the inference graph (no backward/update)
  double learning_rate = 0.01;
  int64_t max_weight_bytes = kMaxWeightBytes;  // torch.export: the weights' total; TorchScript: the archive's
  int64_t max_live_bytes = kMaxLiveBytes;      // torch.export: the node outputs held for later nodes, see above
};

// Loads MODEL.pt, freezes and inlines it, runs the sample inputs through it op
// by op to record every tensor's real shape, and returns the IR (a training
// step unless forward_only). Throws InputError naming the file, input, node or
// operator: not a TorchScript file, missing/extra inputs, control flow
// (prim::If / prim::Loop), an op the runtime cannot call, an op ATen cannot
// differentiate.
Graph import_torchscript(const std::string& path, const std::vector<SampleInput>& inputs,
                         const ImportOptions& options = {});

// Reads MODEL.pt2 written by torch.export.save (torch 2.6+, export schema
// 8.x): the program's JSON, its parameters, buffers and constants. Executes it
// node by node like the TorchScript path and returns the IR (a training step
// unless forward_only). `inputs` may give a user input's shape (needed for a
// symbolic size the archive has no example for; static sizes must match);
// others use the example recorded in the archive. The graph's attrs say which
// ("input_shapes"). Both the default (training IR, with in-place ops) and the
// decomposed core-ATen form (run_decompositions()) import. Throws InputError
// naming the file, record, node and target: not an export archive, another
// schema version, a custom op or higher-order op, a shape that disagrees with
// the program's metadata, an op ATen cannot differentiate.
Graph import_exported_program(const std::string& path, const std::vector<SampleInput>& inputs,
                              const ImportOptions& options = {});

// The tensors of a dict {name: Tensor} written by torch.save, flattened to
// float, by name. For comparing an imported program with eager PyTorch.
std::map<std::string, std::vector<float>> load_tensor_dict(const std::string& path);

// The same from the archive's bytes (a service request); `label` names it in
// errors and gives the graph its name.
Graph import_exported_program_bytes(const std::string& bytes, const std::string& label,
                                    const std::vector<SampleInput>& inputs, const ImportOptions& options = {});

// Whether PATH is a torch.export archive (a zip with models/<name>.json).
bool is_exported_program(const std::string& path);

// import_exported_program for a .pt2 file or export archive, else import_torchscript.
Graph import_model(const std::string& path, const std::vector<SampleInput>& inputs, const ImportOptions& options = {});

}  // namespace placer
