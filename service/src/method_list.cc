#include "method_list.h"

#include <algorithm>

#include "placer/agent/placer.h"
#include "placer/graphs/fields.h"
#include "placer/service/protocol.h"

namespace placer::service {
namespace {

void check_known(const std::string& name, const std::string& at, MethodNames names) {
  if (names == MethodNames::kBuildable) {
    try {
      make_placer(name);
    } catch (const InputError& e) {
      throw RequestError(codes::kBadRequest, at, e.what());
    }
    return;
  }
  const std::vector<std::string> known = placer_names();
  if (std::find(known.begin(), known.end(), name) == known.end())
    throw RequestError(codes::kBadRequest, at, unknown_name("method", name, known));
}

void refuse_listed_twice(const std::vector<std::string>& methods, size_t i, const std::string& at) {
  const size_t first = static_cast<size_t>(std::find(methods.begin(), methods.end(), methods[i]) - methods.begin());
  if (first < i)
    throw RequestError(
        codes::kBadRequest, at,
        "'" + methods[i] + "' is listed twice (also at [" + std::to_string(first) + "]); each placer runs once");
}

}  // namespace

void check_method_list(const std::vector<std::string>& methods, const std::string& field, MethodNames names) {
  for (size_t i = 0; i < methods.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    check_known(methods[i], at, names);
    refuse_listed_twice(methods, i, at);
  }
}

}  // namespace placer::service
