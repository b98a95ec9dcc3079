// Private to the torch.export importer (export_*.cc): the importer class and
// the helpers its parts share. See export_import.cc for how it works.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "recorder.h"

namespace placer::detail {

inline constexpr size_t kMaxProgramBytes = size_t{1} << 30;  // the program JSON
inline constexpr int kSchemaMajor = 8;                       // torch 2.11 writes 8.17

// The ScalarType enum of the export schema, which is not c10's numbering.
inline std::optional<at::ScalarType> schema_dtype(int64_t v) {
  switch (v) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    default: return std::nullopt;
  }
}

inline std::optional<c10::MemoryFormat> schema_memory_format(int64_t v) {
  switch (v) {
    case 1: return c10::MemoryFormat::Contiguous;
    case 2: return c10::MemoryFormat::ChannelsLast;
    case 3: return c10::MemoryFormat::ChannelsLast3d;
    case 4: return c10::MemoryFormat::Preserve;
    default: return std::nullopt;
  }
}

// "Symbol('s77', positive=True, integer=True)" or "s77" -> "s77"; "" for an expression.
inline std::string symbol_name(const std::string& expr) {
  const std::string prefix = "Symbol('";
  if (expr.rfind(prefix, 0) == 0) {
    const auto end = expr.find('\'', prefix.size());
    if (end != std::string::npos) return expr.substr(prefix.size(), end - prefix.size());
  }
  const bool identifier = !expr.empty() && std::all_of(expr.begin(), expr.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return identifier ? expr : std::string();
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

// A tensor's metadata as the archive records it.
struct Meta {
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> sizes;        // the example's (hint) for a symbolic size
  std::vector<std::string> symbols;  // per dim: "" when static, else the symbol or expression
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  bool requires_grad = true;  // false: a frozen parameter (imported as a constant: no gradient, no update)
  bool dynamic() const {
    return std::any_of(symbols.begin(), symbols.end(), [](const std::string& s) { return !s.empty(); });
  }
};

// A named value of the program while it is executed.
struct Val {
  c10::IValue value;                           // tensor, tensor list, int, float, bool, none
  std::vector<std::optional<TensorRef>> refs;  // where the graph has the tensor(s)
};

class ExportImporter {
 public:
  // Stored tensors by qualified name: (record name, whether it is pickled).
  using Payloads = std::map<std::string, std::pair<std::string, bool>>;

  // `bytes`: the archive itself (then `file` only names it in errors), or null to read `file`.
  ExportImporter(const std::string& file, const std::string* bytes, const ImportOptions& options)
      : file_(file),
        bytes_(bytes),
        max_weight_bytes_(options.max_weight_bytes),
        max_live_bytes_(options.max_live_bytes),
        rec_(file, options),
        json_{"torch.export program"} {}

  Graph run(const std::vector<SampleInput>& samples);

 private:
  [[noreturn]] void fail(const std::string& message) const { rec_.fail(message); }

  void open();
  void scan_nodes(const rj::Value& nodes);
  std::vector<TensorRef> program_outputs(std::optional<TensorRef>* loss) const;
  std::string record(const std::string& name, size_t cap);
  Meta meta(const rj::Value& v, const std::string& where) const;
  Payloads payloads(const std::string& config, const std::string& dir);
  at::Tensor load_tensor(const std::string& name, const Meta& m, const std::string& record_name, bool pickled,
                         bool trainable);
  double check_weight_size(const std::string& name, const Meta& m) const;
  void count_weight_bytes(const std::string& name, double bytes);
  at::Tensor read_stored(const std::string& name, const Meta& m, const std::string& record_name);
  // bind_inputs and its steps (export_inputs.cc).
  void bind_inputs(const std::vector<SampleInput>& samples);
  std::vector<std::string> user_input_names(const rj::Value& specs, const std::string& where) const;
  std::map<std::string, SampleInput> samples_by_name(const std::vector<SampleInput>& samples,
                                                     const std::vector<std::string>& user_inputs) const;
  Meta placeholder_meta(const std::string& name) const;
  void bind_stored_tensor(const std::string& kind, const rj::Value& body, const std::string& at, const Payloads& table);
  void bind_user_input(const rj::Value& body, const std::string& at, const std::map<std::string, SampleInput>& given,
                       const rj::Value* ranges, std::string* input_specs);
  void apply_sample(const std::string& name, const SampleInput& s, const rj::Value* ranges, Meta* m);
  void check_symbol_range(const std::string& name, size_t d, const std::string& symbol, int64_t size,
                          const rj::Value* ranges) const;
  void check_recorded_example(const std::string& name, const Meta& m) const;
  int64_t integer_input_high(const std::string& name) const;
  const Val& val(const std::string& name, const std::string& where) const;
  Val argument(const rj::Value& arg, const c10::Argument* schema_arg, const std::string& where);
  // argument()'s rules, one per argument kind (export_arguments.cc).
  struct ArgIn;
  const Val& tensor_of(const ArgIn& a, const rj::Value& t) const;
  int64_t sym_int_of(const ArgIn& a, const rj::Value& s) const;
  c10::IValue sym_number_of(const ArgIn& a, const rj::Value& s, const char* what) const;
  Val arg_none(const ArgIn& a);
  Val arg_tensor(const ArgIn& a);
  Val arg_tensors(const ArgIn& a);
  Val arg_optional_tensors(const ArgIn& a);
  Val arg_optional_tensor(const ArgIn& a);
  Val arg_int(const ArgIn& a);
  Val arg_sym_int(const ArgIn& a);
  Val arg_ints(const ArgIn& a);
  Val arg_sym_ints(const ArgIn& a);
  Val arg_float(const ArgIn& a);
  Val arg_floats(const ArgIn& a);
  Val arg_bool(const ArgIn& a);
  Val arg_bools(const ArgIn& a);
  Val arg_string(const ArgIn& a);
  Val arg_scalar_type(const ArgIn& a);
  Val arg_memory_format(const ArgIn& a);
  Val arg_layout(const ArgIn& a);
  Val arg_device(const ArgIn& a);
  Val arg_sym_float(const ArgIn& a);
  Val arg_sym_bool(const ArgIn& a);
  double real(const rj::Value& v, const std::string& where, const char* field) const;
  void collect_used(const rj::Value& v);
  void visit(const rj::Value& node, size_t index);
  std::string visit_node(const rj::Value& node, size_t index);  // -> the node as errors name it
  void visit_aten(const rj::Value& node, const std::string& target, const std::string& where);
  // visit_aten's steps (export_nodes.cc): the operator to call, its arguments, its outputs.
  struct AtenCall {
    std::optional<c10::OperatorHandle> handle;
    std::string op, overload;          // "aten::add", "Tensor"
    std::string mutated_arg;           // of an in-place op: "self", or "?" when it cannot be made functional
    std::string mutated_name;          // the program's value that argument names
    std::vector<std::string> numbers;  // arguments given a Python number where the schema wants a tensor
  };
  AtenCall resolve_aten(const std::string& target, const std::string& where) const;
  void make_functional(AtenCall& call, const std::string& where) const;
  std::vector<CallArg> bind_call(AtenCall& call, const std::map<std::string, const rj::Value*>& named,
                                 const std::string& where);
  void bind_numbers(AtenCall& call, const std::map<std::string, const rj::Value*>& named, const std::string& where,
                    std::vector<CallArg>& args);
  void bind_outputs(const rj::Value& node, const RecordedCall& call, const std::string& mutated_name,
                    const std::string& where);
  void cast_back(const AtenCall& aten, const std::vector<CallArg>& args, const std::string& op_name,
                 const std::string& layer, const std::string& where, RecordedCall& call);
  void visit_symbolic(const rj::Value& node, const std::string& target, const std::string& where);
  struct ModuleCall {
    std::string path;    // "layers.0.fc"
    bool again = false;  // a later call of the module (its key ends in "@N")
  };
  std::vector<ModuleCall> module_calls(const rj::Value& node) const;
  std::vector<std::string> module_stack(const rj::Value& node) const;
  std::string module_of(const rj::Value& node) const;
  void check_output(const std::string& name, const at::Tensor& t, const std::string& where) const;

  std::string file_;
  const std::string* bytes_;
  int64_t max_weight_bytes_;  // ImportOptions::max_weight_bytes
  int64_t max_live_bytes_;    // ImportOptions::max_live_bytes
  double weight_bytes_ = 0;   // of the parameters, buffers and constants so far (stored records or metadata)
  Recorder rec_;
  JsonReader<InputError> json_;
  std::unique_ptr<std::istringstream> stream_;  // outlives archive_, which reads it
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive_;
  rj::Document doc_;
  const rj::Value* graph_ = nullptr;
  const rj::Value* tensor_values_ = nullptr;
  std::unordered_map<std::string, Val> values_;
  std::set<std::string> parent_modules_;            // modules that hold another module some node ran in
  std::vector<std::string> called_modules_;         // every module some node ran in, in first-call order
  std::set<std::string> repeated_modules_;          // modules called more than once (a split there would cut twice)
  std::map<std::string, std::string> inputs_said_;  // user input -> where its shape came from
  std::set<std::string> synthesized_;               // weights not stored in the archive
  bool overridden_ = false;                         // some --input changed a symbolic size
  std::set<std::string> used_;                      // values some node or output uses
  // Values that share storage (a view and its base): each name's group, by its first member. An in-place
  // write, made functional, changes only the name it writes; the other names of its group become stale,
  // and reading one is an error (the write would be lost silently, and the ops feeding it dropped).
  std::unordered_map<std::string, std::string> alias_group_;
  std::unordered_map<std::string, std::vector<std::string>> alias_members_;
  std::unordered_map<std::string, std::string> stale_;  // name -> the write that changed its storage
  void track_aliases(const rj::Value& node, const AtenCall& aten, const std::map<std::string, const rj::Value*>& named,
                     const std::string& where);
  void join_aliases(const std::vector<std::string>& names);
  // The values nodes made, each let go after its last reader, and the bytes of those held (export_lifetimes.cc).
  void plan_lifetimes();
  void check_live_budget(const AtenCall& aten, const std::vector<CallArg>& args, const std::string& where) const;
  void release_values(const rj::Value& node, size_t index, const std::string& where);
  // Lifetimes (plan_lifetimes, at the first node): the last node that reads each value, the values never let go
  // (placeholders and the program's outputs), the storages of the placeholders (not counted: the weights have
  // their own cap), the values nodes made that are held now, and the bytes of their storages.
  bool planned_ = false;
  std::unordered_map<std::string, size_t> last_read_;
  std::set<std::string> kept_;
  std::unordered_map<const c10::StorageImpl*, c10::Storage> placeholder_storage_;
  std::set<std::string> made_;
  double live_bytes_ = 0;
};

}  // namespace placer::detail
