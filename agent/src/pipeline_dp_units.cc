// The units of pipeline dp (pipeline_dp.h): the linear order of a training
// graph's forward ops, cut where co-location allows, chunked past max_units,
// with each unit's per-device work, memory and the tensors crossing a cut.
#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "pipeline_dp.h"
#include "placer/graphs/algorithms.h"

namespace placer {
namespace {

bool is_anchor(const Op& op) {
  return op.phase == Phase::Forward && op.type != op_types::kParam && op.type != op_types::kInput;
}

// Per op: its position in the linear order of anchors (params and inputs at
// their first forward consumer, backward and update ops at their forward op).
std::vector<int32_t> positions(const Graph& g, std::vector<int32_t>* anchors) {
  const int32_t n = static_cast<int32_t>(g.size());
  std::vector<int32_t> pos(n, -1);
  for (int32_t v = 0; v < n; ++v)
    if (is_anchor(g.op(OpId(v)))) {
      pos[v] = static_cast<int32_t>(anchors->size());
      anchors->push_back(v);
    }
  for (int32_t v = 0; v < n; ++v) {
    const Op& op = g.op(OpId(v));
    if (op.phase != Phase::Forward || pos[v] >= 0) continue;
    pos[v] = 0;
    for (OpId c : g.consumers(OpId(v)))
      if (pos[c.value] >= 0 && g.op(c).phase == Phase::Forward) {
        pos[v] = pos[c.value];
        break;
      }
  }
  for (int32_t v = 0; v < n; ++v)
    if (pos[v] < 0) {
      const OpId f = g.op(OpId(v)).forward;
      pos[v] = f.valid() && f.value < n && pos[f.value] >= 0 ? pos[f.value] : 0;
    }
  return pos;
}

// Per position: the atomic unit it falls in (co-location groups spanning
// positions join every position between).
std::vector<int32_t> atomic_units(const Graph& g, const std::vector<int32_t>& pos, int32_t positions) {
  std::vector<char> joined(positions, 0);  // joined[p]: no cut between p and p + 1
  const Grouping groups = colocation_groups(g);
  for (const auto& members : groups.members) {
    int32_t lo = positions, hi = -1;
    for (OpId m : members) lo = std::min(lo, pos[m.value]), hi = std::max(hi, pos[m.value]);
    for (int32_t p = lo; p < hi; ++p) joined[p] = 1;
  }
  std::vector<int32_t> unit(positions, 0);
  for (int32_t p = 1; p < positions; ++p) unit[p] = unit[p - 1] + (joined[p - 1] ? 0 : 1);
  return unit;
}

// Merges neighbouring atomic units into at most max_units chunks of about
// equal weight; returns the chunk of each atomic unit.
std::vector<int32_t> chunk(const std::vector<double>& weight, int32_t max_units) {
  const int32_t n = static_cast<int32_t>(weight.size());
  std::vector<int32_t> out(n);
  std::iota(out.begin(), out.end(), 0);
  if (n <= max_units) return out;
  double target = std::accumulate(weight.begin(), weight.end(), 0.0) / max_units;
  for (;;) {
    int32_t c = 0;
    double acc = 0.0;
    for (int32_t a = 0; a < n; ++a) {
      if (a > 0 && acc > 0.0 && acc + weight[a] > target) ++c, acc = 0.0;
      acc += weight[a];
      out[a] = c;
    }
    if (c < max_units) return out;
    target *= 1.1;
  }
}

// cross_bytes / cross_count: a tensor produced in unit a and last read in unit m > a crosses
// the cuts a + 1 .. m.
void crossing_tensors(const Graph& g, PipelineUnits* u) {
  std::map<std::pair<int32_t, int32_t>, int32_t> last_reader;  // (op, output) -> unit
  for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
    const Op& op = g.op(OpId(v));
    if (op.phase != Phase::Forward) continue;
    for (const TensorRef& t : op.inputs) {
      int32_t& m = last_reader.emplace(std::make_pair(t.op.value, t.output), -1).first->second;
      m = std::max(m, u->unit_of_op[v]);
    }
  }
  const int32_t U = u->count;
  std::vector<int64_t> bytes(U + 2, 0);
  std::vector<int32_t> count(U + 2, 0);
  for (const auto& [tensor, m] : last_reader) {
    const int32_t a = u->unit_of_op[tensor.first];
    if (m <= a) continue;
    const int64_t b = g.op(OpId(tensor.first)).outputs[tensor.second].bytes();
    bytes[a + 1] += b, bytes[m + 1] -= b;
    count[a + 1] += 1, count[m + 1] -= 1;
  }
  u->cross_bytes.assign(U + 1, 0);
  u->cross_count.assign(U + 1, 0);
  for (int32_t i = 1; i <= U; ++i) {
    u->cross_bytes[i] = u->cross_bytes[i - 1] + bytes[i];
    u->cross_count[i] = u->cross_count[i - 1] + count[i];
  }
}

}  // namespace

PipelineUnits make_pipeline_units(const Graph& g, const CostModel& costs, int32_t max_units) {
  std::vector<int32_t> anchors;
  const std::vector<int32_t> pos = positions(g, &anchors);
  if (anchors.empty()) throw NoFeasiblePlacement("dp (pipeline): the graph has no forward op to split into stages");
  const int32_t P = static_cast<int32_t>(anchors.size());
  const std::vector<int32_t> atomic = atomic_units(g, pos, P);
  const int32_t A = atomic.back() + 1;
  const int32_t D = costs.devices();
  std::vector<double> weight(A, 0.0);
  for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
    if (g.op(OpId(v)).phase == Phase::Update) continue;
    for (int32_t d = 0; d < D; ++d) weight[atomic[pos[v]]] += costs.op_seconds(OpId(v), DeviceId(d)) / D;
  }
  const std::vector<int32_t> chunk_of = chunk(weight, std::max(1, max_units));

  PipelineUnits u;
  u.devices = D;
  u.count = chunk_of.back() + 1;
  u.unit_of_op.resize(g.size());
  u.first.resize(u.count);
  u.last.resize(u.count);
  u.fwd.assign(static_cast<size_t>(u.count) * D, 0.0);
  u.bwd = u.fwd;
  u.upd = u.fwd;
  u.param_bytes.assign(u.count, 0);
  u.act_bytes.assign(u.count, 0);
  u.grad_bytes.assign(u.count, 0);
  for (int32_t p = 0; p < P; ++p) {
    const int32_t c = chunk_of[atomic[p]];
    if (u.first[c].empty()) u.first[c] = g.op(OpId(anchors[p])).name;
    u.last[c] = g.op(OpId(anchors[p])).name;
  }
  for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
    const Op& op = g.op(OpId(v));
    const int32_t c = chunk_of[atomic[pos[v]]];
    u.unit_of_op[v] = c;
    std::vector<double>& into = op.phase == Phase::Forward ? u.fwd : op.phase == Phase::Backward ? u.bwd : u.upd;
    for (int32_t d = 0; d < D; ++d) into[static_cast<size_t>(c) * D + d] += costs.op_seconds(OpId(v), DeviceId(d));
    u.param_bytes[c] += op.param_bytes;
    if (op.phase == Phase::Forward && op.type != op_types::kParam) u.act_bytes[c] += op.output_bytes();
    if (op.phase == Phase::Backward) u.grad_bytes[c] += op.output_bytes();
  }
  crossing_tensors(g, &u);
  return u;
}

std::vector<int32_t> pipeline_op_devices(const PipelineUnits& units, const std::vector<PipelineStage>& stages) {
  std::vector<int32_t> device_of_unit(units.count, -1);
  for (const PipelineStage& s : stages)
    for (int32_t i = s.begin; i < s.end; ++i) device_of_unit[i] = s.device;
  std::vector<int32_t> out(units.unit_of_op.size());
  for (size_t v = 0; v < out.size(); ++v) {
    out[v] = device_of_unit[units.unit_of_op[v]];
    PLACER_CHECK(out[v] >= 0, "pipeline dp: unit ", units.unit_of_op[v], " has no stage");
  }
  return out;
}

}  // namespace placer
