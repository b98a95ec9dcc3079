// Private to the TorchScript importer (import*.cc): the importer class, the
// value slots it executes the graph with, and node descriptions for errors.
// See import.cc for how it works.
#pragma once

#include <torch/script.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "placer/frontends/torch_import.h"
#include "recorder.h"

namespace placer::detail {

// The module instance path a node ran in ("layer1.0.conv1").
std::string module_path(const torch::jit::Node* node);
// A node for errors: its kind and overload, module and source location.
std::string describe(const torch::jit::Node* node);
bool type_has_tensor(const c10::TypePtr& type);

// What a TorchScript value stands for while the graph is executed.
struct Slot {
  enum class Kind { Const, Tensor, TensorList, Tuple, Module } kind = Kind::Const;
  c10::IValue value;            // the real value (Tuple: rebuilt on demand)
  std::vector<TensorRef> refs;  // Tensor: one; TensorList: one per element
  std::vector<Slot> elems;      // Tuple
  torch::jit::Module module;
  std::string path;  // Module: attribute path from the root
  bool tracked() const {
    if (kind == Kind::Tensor || kind == Kind::TensorList) return true;
    for (const auto& e : elems) {
      if (e.tracked()) return true;
    }
    return false;
  }
};

class Importer {
 public:
  Importer(std::string file, const ImportOptions& options)
      : file_(file), max_weight_bytes_(options.max_weight_bytes), rec_(std::move(file), options) {}

  Graph run(const std::vector<SampleInput>& samples);

 private:
  [[noreturn]] void fail(const std::string& message) const { rec_.fail(message); }

  torch::jit::Module load();
  void check_archive_size();                                                     // import.cc
  void check_fold_size(torch::jit::Node* node, const torch::jit::Stack& stack);  // import.cc
  void check_inputs(const torch::jit::Module& module, const std::vector<SampleInput>& samples);
  int64_t integer_input_high(const torch::jit::Value* input);
  std::optional<c10::IValue> static_value(const torch::jit::Value* value);

  Slot& slot(const torch::jit::Value* v);
  c10::IValue ivalue(const Slot& s);
  TensorRef tensor_ref(const Slot& s, const torch::jit::Value* v);

  // visit and its steps (import_nodes.cc): one rule per structural node
  // kind; other nodes are folded or executed as ATen calls.
  void visit(torch::jit::Node* node);
  void visit_constant(torch::jit::Node* node);
  void visit_get_attr(torch::jit::Node* node);  // import.cc
  bool tracked_inputs(torch::jit::Node* node, bool* tensor_input);
  void visit_list_construct(torch::jit::Node* node);
  void visit_list_unpack(torch::jit::Node* node);
  void visit_tuple_construct(torch::jit::Node* node);
  void visit_tuple_unpack(torch::jit::Node* node);
  void visit_tuple_index(torch::jit::Node* node);
  void fold(torch::jit::Node* node);  // import.cc
  void execute_aten(torch::jit::Node* node);
  std::vector<CallArg> aten_arguments(torch::jit::Node* node, const c10::FunctionSchema& schema);
  void bind_aten_returns(torch::jit::Node* node, const RecordedCall& call);

  std::string file_;
  int64_t max_weight_bytes_;  // ImportOptions::max_weight_bytes: the archive's records, uncompressed, in all
  Recorder rec_;
  torch::jit::Module root_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_map<const torch::jit::Value*, Slot> slots_;
  std::unordered_set<const c10::TensorImpl*> parameters_;  // the trainable ones (requires_grad)
  bool any_parameters_ = false;                            // frozen ones included (none: a torch.jit.freeze archive)
  std::vector<TensorRef> graph_outputs_;
};

}  // namespace placer::detail
