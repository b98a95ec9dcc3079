// Dry runs of an operator on the meta device: see output_size.h.
#include "output_size.h"

#include <ATen/core/stack.h>

#include <algorithm>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"

namespace placer::detail {

namespace {

// A value of the dry run: a tensor as a meta tensor of its sizes and strides, a device (or a creation op's unsaid
// one: the CPU) as the meta device, a random generator as none.
c10::IValue to_meta(const c10::IValue& v, const c10::Argument& arg) {
  const auto meta = [](const at::Tensor& t) {
    return t.defined() ? at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)) : t;
  };
  if (v.isTensor()) return meta(v.toTensor());
  if (v.isTensorList()) {
    std::vector<at::Tensor> list;
    for (const at::Tensor& t : v.toTensorVector()) list.push_back(meta(t));
    return list;
  }
  if (v.isList() && v.type()->containedType(0)->kind() == c10::TypeKind::OptionalType) {
    c10::List<std::optional<at::Tensor>> list;
    for (const auto& e : v.toListRef())
      list.push_back(e.isTensor() ? std::optional<at::Tensor>(meta(e.toTensor())) : std::nullopt);
    return list;
  }
  c10::TypePtr type = arg.real_type();
  if (type->kind() == c10::TypeKind::OptionalType) type = type->containedType(0);
  if (v.isDevice() || (v.isNone() && type->kind() == c10::TypeKind::DeviceObjType)) return c10::Device(at::kMeta);
  if (v.isGenerator()) return c10::IValue();
  return v;
}

}  // namespace

bool shares_storage(const at::Tensor& out, const std::vector<c10::IValue>& values) {
  if (!out.defined()) return false;
  for (const c10::IValue& v : values) {
    if (v.isTensor() && v.toTensor().defined() && out.is_alias_of(v.toTensor())) return true;
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector())
        if (t.defined() && out.is_alias_of(t)) return true;
  }
  return false;
}

std::optional<OutputSize> dry_run_outputs(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values) {
  torch::jit::Stack stack;
  const auto& arguments = handle.schema().arguments();
  if (values.size() != arguments.size()) return std::nullopt;
  for (size_t i = 0; i < values.size(); ++i) stack.push_back(to_meta(values[i], arguments[i]));
  const std::vector<c10::IValue> inputs = stack;
  try {
    at::NoGradGuard no_grad;
    handle.callBoxed(stack);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  OutputSize size;
  for (const c10::IValue& v : stack) {
    std::vector<at::Tensor> outs;
    if (v.isTensor()) outs.push_back(v.toTensor());
    if (v.isTensorList()) outs = v.toTensorVector();
    for (const at::Tensor& t : outs) {
      if (!t.defined() || shares_storage(t, inputs)) continue;
      size.largest_elements = std::max(size.largest_elements, static_cast<double>(t.numel()));
      size.new_bytes += static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
    }
  }
  return size;
}

std::optional<std::string> over_tensor_cap(const c10::OperatorHandle& handle, const std::vector<c10::IValue>& values,
                                           const std::string& where) {
  const auto size = dry_run_outputs(handle, values);
  if (!size || size->largest_elements <= static_cast<double>(kMaxTensorElements)) return std::nullopt;
  return concat(where, ": an output would hold ", size->largest_elements,
                " elements, over the limit of 2^31 for one tensor");
}

}  // namespace placer::detail
