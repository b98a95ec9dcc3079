// What a call would allocate, known before it runs: a dry run of the operator on the meta device, where
// tensors have sizes, strides and a dtype and no memory. Shared by the importers' checks that run before a
// kernel allocates what a model file asks for: TorchScript's folding of ops on constants (the 2^31-element cap
// of one tensor) and torch.export's budget for the values its nodes keep alive (ImportOptions::max_live_bytes).
//
// Internal to frontends/torch: this header sees LibTorch.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <vector>

namespace placer::detail {

struct OutputSize {
  double largest_elements = 0;  // of one output with memory of its own
  double new_bytes = 0;         // of all outputs with memory of their own (a view of an argument has none)
};

// The outputs `handle` would produce from `values` (schema order); none when the op cannot run on the meta
// device (no meta kernel, or sizes that depend on the data).
std::optional<OutputSize> dry_run_outputs(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values);

// Whether `out` shares storage with a tensor among a call's arguments `values`. The schema's alias annotation
// says an output *may* alias an input (reshape, contiguous: Tensor(a)); whether it does depends on the strides
// (a reshape across a transpose, or contiguous of a permuted tensor, copies), and on the kernel that ran.
bool shares_storage(const at::Tensor& out, const std::vector<c10::IValue>& values);

// "<where>: an output would hold N elements, over the limit of 2^31 for one tensor" when the dry run says so
// (the Recorder's message for the same cap), else none.
std::optional<std::string> over_tensor_cap(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values,
                                           const std::string& where);

}  // namespace placer::detail
