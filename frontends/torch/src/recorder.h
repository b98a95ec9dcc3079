// What both importers (TorchScript and torch.export) share: they execute a
// model node by node on CPU with real tensors and record every ATen call as
// one Op. The recorder turns a call into an Op (arguments, output specs from
// the tensors the kernel really produced, FLOPs, the autograd check) and the
// recorded forward graph into a training step.
//
// Internal to frontends/torch: this header sees LibTorch.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/aten_dtype.h"
#include "placer/graphs/error.h"
#include "placer/graphs/ir.h"

namespace placer::detail {

std::string first_line(std::string text);

// The importers' boundary: a c10::Error that escaped them (a check of a kernel or of the archive reader
// that no step turned into an InputError) is still about the file: it becomes an InputError naming it,
// as the service answers those and nothing else.
template <class Run>
Graph import_guarded(const std::string& file, Run&& run) {
  try {
    return run();
  } catch (const InputError&) {
    throw;
  } catch (const c10::Error& e) {
    throw InputError(file + ": " + e.what_without_backtrace());
  }
}

// FLOPs of one call from its real inputs and outputs (base: "aten::conv2d"): a
// table of rules keyed by schema name (flop_rules.cc).
double estimate_flops(const std::string& base, const std::vector<c10::IValue>& in, const std::vector<at::Tensor>& out);

// What to do about a fused inference fast path without a derivative, or "".
std::string fused_op_hint(const std::string& type);

// One schema argument of a call: its real value and, for tensors, where the
// graph has it. Tensor: one ref; tensor list: one per element (nullopt for a
// None element of a Tensor?[] list); constants: no refs.
struct CallArg {
  c10::IValue value;
  std::vector<std::optional<TensorRef>> refs;
};

struct RecordedCall {
  OpId op;
  std::vector<c10::IValue> returns;          // as the kernel returned them
  std::vector<std::vector<TensorRef>> refs;  // per return: tensor 1, list n, else 0
};

class Recorder {
 public:
  Recorder(std::string file, const ImportOptions& options);

  [[noreturn]] void fail(const std::string& message) const;
  const std::string& file() const { return file_; }
  Graph& graph() { return out_; }
  at::Generator& generator() { return generator_; }

  std::string unique_name(const std::string& base);
  // A trainable parameter (a float tensor gets a gradient). Cached by tensor identity.
  TensorRef param(const at::Tensor& t, const std::string& name, const std::string& layer);
  // A non-trainable tensor (a buffer or literal) as a placer::input; integer
  // ones keep their value range (high = max + 1): they are often indices.
  TensorRef constant(const at::Tensor& t, const std::string& name, const std::string& layer = "");
  // A forward argument; integers are drawn from [0, high).
  TensorRef input(const std::string& name, const at::Tensor& value, int64_t high);
  std::optional<TensorRef> known(const at::Tensor& t) const;

  // Runs `handle` on the values of `args` (schema order) and records the Op.
  // `where` describes the node in errors. Throws InputError on a failing
  // kernel or an unsupported value.
  RecordedCall call(const c10::OperatorHandle& handle, const std::vector<CallArg>& args, const std::string& where,
                    const std::string& name, const std::string& layer);

  // The recorded forward graph, without ops that no output depends on, and
  // (unless forward_only) with a loss, backward and update ops. `loss`: an
  // output the program itself marks as the loss.
  Graph finish(const std::vector<TensorRef>& outputs, std::optional<TensorRef> loss = std::nullopt);

 private:
  enum class GradStatus { Differentiable, NoGradient, NotImplemented };
  GradStatus grad_status(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& inputs,
                         const std::vector<char>& needs_grad, std::string* reason);
  TensorRef add_loss(const std::vector<TensorRef>& outputs);
  // The steps of call(): arguments into `op` (and which tensors need a
  // gradient), the kernel run (returns flattened; `counts` tensors per
  // return), output specs, the cached autograd check.
  void record_arguments(const c10::FunctionSchema& schema, const std::vector<CallArg>& args, const std::string& where,
                        Op& op, std::vector<char>& needs_grad);
  std::vector<at::Tensor> run_kernel(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values,
                                     const std::string& where, RecordedCall& result, std::vector<size_t>& counts) const;
  void record_outputs(const std::vector<at::Tensor>& produced, const std::string& where, Op& op) const;
  void check_gradient(const c10::OperatorHandle& handle, const Op& op, const std::vector<c10::IValue>& values,
                      const std::vector<char>& needs_grad);

  std::string file_;
  ImportOptions options_;
  Graph out_;
  std::unordered_map<const c10::TensorImpl*, TensorRef> tensors_;  // params and constants, by identity
  // ... each held, so that its address is not a later tensor's: a Python number made a tensor for one
  // call is freed after it, and the next one's, at the same address, bound to the first constant.
  std::vector<at::Tensor> held_;
  std::unordered_map<std::string, int> name_counts_;
  // Autograd check results, cached by op type and which arguments need a
  // gradient; op_grad_key_ maps each op name to its entry.
  std::map<std::string, GradStatus> grad_status_;
  std::map<std::string, std::string> grad_reason_;
  std::unordered_map<std::string, std::string> op_grad_key_;
  std::set<std::pair<int32_t, int32_t>> requires_grad_;  // (op, output) carrying a param's gradient
  at::Generator generator_;
};

}  // namespace placer::detail
