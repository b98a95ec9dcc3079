// The methods of the Workload value type (graphs/workload.h); its JSON format
// is read and written by frontends/workload_json.h.
#include <algorithm>
#include <map>

#include "placer/graphs/workload.h"

namespace placer {

std::optional<int32_t> Workload::index_of(int64_t id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id) return static_cast<int32_t>(i);
  return std::nullopt;
}

std::vector<int32_t> Workload::colocation_classes(int32_t* classes) const {
  std::map<int64_t, int32_t> dense;
  std::vector<int32_t> out(nodes.size());
  int32_t next = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].color_class) {
      out[i] = next++;
      continue;
    }
    auto [it, inserted] = dense.emplace(*nodes[i].color_class, next);
    if (inserted) ++next;
    out[i] = it->second;
  }
  if (classes) *classes = next;
  return out;
}

bool Workload::is_training() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const WorkloadNode& n) { return n.backward; });
}

}  // namespace placer
