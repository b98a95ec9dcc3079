// The contiguous pipeline split closest to a placement: the fewest forward
// ATen ops moved, by dynamic programming over (cut, set of devices used).
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "module_index.h"
#include "placer/frontends/pipeline_split.h"

namespace placer {
namespace {

// Above this many devices the set of devices used would not fit the table:
// stages then keep the devices' order of first use.
constexpr int kMaxExactDevices = 8;
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

struct Problem {
  std::vector<int64_t> cuts;                // 0, where a stage may begin, n
  std::vector<DeviceId> devices;            // used by forward ops, in order of first use
  std::vector<std::vector<int64_t>> count;  // count[k][j]: ops before cuts[j] placed on devices[k]
};

Problem make_problem(const detail::ModuleIndex& index, const Placement& placement) {
  Problem p;
  const int64_t n = static_cast<int64_t>(index.ops.size());
  p.cuts.push_back(0);
  for (const auto& [pos, module] : index.cut_at) {
    if (pos > 0 && pos < n) p.cuts.push_back(pos);
  }
  p.cuts.push_back(n);
  std::map<int32_t, size_t> slot;
  for (const OpId op : index.ops) {
    if (slot.emplace(placement[op].value, p.devices.size()).second) p.devices.push_back(placement[op]);
  }
  p.count.assign(p.devices.size(), std::vector<int64_t>(p.cuts.size(), 0));
  std::vector<int64_t> running(p.devices.size(), 0);
  for (size_t j = 0, i = 0; j < p.cuts.size(); ++j) {
    for (; static_cast<int64_t>(i) < p.cuts[j]; ++i) ++running[slot.at(placement[index.ops[i]].value)];
    for (size_t k = 0; k < p.devices.size(); ++k) p.count[k][j] = running[k];
  }
  return p;
}

struct Segment {
  int64_t begin = 0;
  int64_t end = 0;
  DeviceId device;
};

// best[mask][j]: the most ops kept in place when stages on the devices of
// MASK cover the ops before cuts[j] and the last stage ends there.
std::vector<Segment> solve(const Problem& p) {
  const int k_count = static_cast<int>(p.devices.size());
  const bool exact = k_count <= kMaxExactDevices;
  const size_t masks = size_t{1} << (exact ? k_count : 0), m = p.cuts.size();
  auto allowed = [&](size_t mask, int k) {
    return exact ? !(mask >> k & 1) : k == static_cast<int>(mask);  // inexact: mask counts the stages so far
  };
  const size_t rows = exact ? masks : static_cast<size_t>(k_count) + 1;
  std::vector<int64_t> best(rows * m, kNone);
  std::vector<int64_t> from(rows * m, -1);  // (previous row) * m + previous cut
  std::vector<int> device(rows * m, -1);
  best[0] = 0;
  for (size_t row = 0; row < rows; ++row) {
    for (int k = 0; k < k_count; ++k) {
      if (!allowed(row, k)) continue;
      const size_t next = exact ? (row | size_t{1} << k) : row + 1;
      int64_t carried = kNone, carried_at = -1;
      for (size_t j = 1; j < m; ++j) {
        if (best[row * m + j - 1] != kNone && best[row * m + j - 1] - p.count[k][j - 1] > carried) {
          carried = best[row * m + j - 1] - p.count[k][j - 1];
          carried_at = static_cast<int64_t>(row * m + j - 1);
        }
        if (carried == kNone || carried + p.count[k][j] <= best[next * m + j]) continue;
        best[next * m + j] = carried + p.count[k][j];
        from[next * m + j] = carried_at;
        device[next * m + j] = k;
      }
    }
  }
  size_t end_row = 0;
  auto stages = [&](size_t row) { return exact ? __builtin_popcountll(row) : static_cast<int>(row); };
  for (size_t row = 1; row < rows; ++row) {
    const int64_t a = best[row * m + m - 1], b = best[end_row * m + m - 1];
    if (a != kNone && (a > b || (a == b && stages(row) > stages(end_row)))) end_row = row;
  }
  std::vector<Segment> segments;
  for (int64_t at = static_cast<int64_t>(end_row * m + m - 1); from[at] >= 0; at = from[at]) {
    segments.push_back({p.cuts[from[at] % m], p.cuts[at % m], p.devices[device[at]]});
  }
  std::reverse(segments.begin(), segments.end());
  return segments;
}

// The whole graph's placement from its forward ops': inputs and parameters go
// with their first forward consumer, backward ops with their forward op,
// updates with their parameter, and a co-location group with its first op.
void place_the_rest(const Graph& graph, Placement& placement) {
  auto forward_call = [&](OpId id) {
    const Op& op = graph.op(id);
    return op.phase == Phase::Forward && op.type != op_types::kInput && op.type != op_types::kParam;
  };
  for (int32_t i = 0; i < static_cast<int32_t>(graph.size()); ++i) {
    const Op& op = graph.op(OpId(i));
    if (op.type != op_types::kInput && op.type != op_types::kParam) continue;
    for (const OpId c : graph.consumers(OpId(i))) {
      if (!forward_call(c)) continue;
      placement.device_of[i] = placement[c];
      break;
    }
  }
  std::map<std::string, DeviceId> group_device;
  for (int32_t i = 0; i < static_cast<int32_t>(graph.size()); ++i) {
    const Op& op = graph.op(OpId(i));
    if (op.phase != Phase::Forward && op.forward.valid()) placement.device_of[i] = placement[op.forward];
    if (op.group.empty()) continue;
    const auto [it, fresh] = group_device.emplace(op.group, placement.device_of[i]);
    placement.device_of[i] = it->second;
  }
}

}  // namespace

ContiguousAlternative best_contiguous_split(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  const detail::ModuleIndex index = detail::index_modules(graph);
  ContiguousAlternative out;
  out.placement = placement;
  for (const Segment& s : solve(make_problem(index, placement))) {
    for (int64_t i = s.begin; i < s.end; ++i) out.placement.device_of[index.ops[i].value] = s.device;
  }
  place_the_rest(graph, out.placement);
  for (const OpId op : index.ops) out.moved_ops += out.placement[op] != placement[op];
  out.split = pipeline_split(graph, cluster, out.placement);
  return out;
}

}  // namespace placer
