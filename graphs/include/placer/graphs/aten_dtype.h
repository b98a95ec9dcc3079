// DType <-> at::ScalarType, for the .cc files that see LibTorch (runtime/,
// frontends/torch/). placer_graphs itself never includes it.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>

#include "placer/graphs/ir.h"

namespace placer {

inline std::optional<DType> to_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::Float32;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kDouble: return DType::Float64;
    case at::kLong: return DType::Int64;
    case at::kInt: return DType::Int32;
    case at::kShort: return DType::Int16;
    case at::kChar: return DType::Int8;
    case at::kByte: return DType::UInt8;
    case at::kBool: return DType::Bool;
    default: return std::nullopt;
  }
}

inline at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return at::kFloat;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float64: return at::kDouble;
    case DType::Int64: return at::kLong;
    case DType::Int32: return at::kInt;
    case DType::Int16: return at::kShort;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

}  // namespace placer
