// Parsing of "--input NAME:8x3x224x224:float" specs. No LibTorch needed here.
#include <cctype>
#include <limits>
#include <string>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"

namespace placer {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == sep) {
      parts.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  parts.push_back(current);
  return parts;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

std::string dtype_names() {
  std::string names;
  for (int d = 0; d <= static_cast<int>(DType::Bool); ++d)
    names += (names.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(d)));
  return names;
}

SampleInput parse_sample_input(const std::string& spec) {
  const auto where = [&](const std::string& what) {
    return InputError("input '" + spec + "': " + what + " (expected NAME:DIMxDIMx...:DTYPE, e.g. x:8x3x224x224:float)");
  };
  const std::vector<std::string> parts = split(spec, ':');
  if (parts.size() < 2 || parts.size() > 3) throw where("needs two or three ':'-separated parts");
  SampleInput input;
  input.name = parts[0];
  if (!is_identifier(input.name)) throw where("name '" + input.name + "' is not an identifier");

  const std::string& shape = parts[1];
  if (shape.empty()) throw where("shape is empty (use 'scalar' for a 0-dim tensor)");
  if (shape != "scalar") {
    int64_t numel = 1;
    for (const std::string& dim : split(shape, 'x')) {
      if (dim.empty() || dim.size() > 12) throw where("dimension '" + dim + "' is not a positive integer");
      for (char c : dim) {
        if (!std::isdigit(static_cast<unsigned char>(c)))
          throw where("dimension '" + dim + "' is not a positive integer");
      }
      const int64_t value = std::stoll(dim);
      if (value <= 0) throw where("dimension '" + dim + "' must be positive");
      if (value > kMaxTensorElements / numel) throw where("shape has more than 2^31 elements");
      numel *= value;
      input.shape.push_back(value);
    }
  }
  if (parts.size() == 3) {
    const auto dtype = parse_dtype(parts[2]);
    if (!dtype) throw where("unknown dtype '" + parts[2] + "' (" + dtype_names() + ")");
    input.dtype = *dtype;
  }
  return input;
}

}  // namespace placer
