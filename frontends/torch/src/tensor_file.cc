// Reading a dict of tensors written by torch.save: the eager values that
// imported programs are compared with (tests, bench/import_bench).
#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "recorder.h"

namespace placer {

std::map<std::string, std::vector<float>> load_tensor_dict(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(data);
  } catch (const std::exception& e) {
    throw InputError(path + ": not a torch.save file: " + detail::first_line(e.what()));
  }
  if (!value.isGenericDict()) throw InputError(path + ": expected a dict of tensors (torch.save({name: tensor}))");
  std::map<std::string, std::vector<float>> out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw InputError(path + ": expected a dict of tensors (torch.save({name: tensor}))");
    }
    const at::Tensor t = entry.value().toTensor().detach().to(at::kFloat).contiguous().reshape({-1});
    out[entry.key().toStringRef()] = std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return out;
}

}  // namespace placer
