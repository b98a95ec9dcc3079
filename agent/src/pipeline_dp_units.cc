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

// Per op: its position in the linear order of anchors (params and inputs at
// their first forward consumer, backward and update ops at their forward op).
std::vector<int32_t> positions(const Graph& g, std::vector<int32_t>* anchors) {
  const int32_t n = static_cast<int32_t>(g.size());
  std::vector<int32_t> pos(n, -1);
  for (int32_t v = 0; v < n; ++v)
    if (is_stage_op(g.op(OpId(v)))) {
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

// The outputs of a backward op that are gradients of params (an RNN's
// per-step weight gradients: they live until the micro-batch's are summed).
int64_t param_gradient_bytes(const Graph& g, const Op& backward) {
  if (backward.args.size() < 2 || !backward.forward.valid()) return 0;
  const Op& forward = g.op(backward.forward);
  const std::vector<int64_t>& input_of_output = backward.args[1].ints;
  int64_t bytes = 0;
  for (size_t j = 0; j < input_of_output.size() && j < backward.outputs.size(); ++j) {
    const int64_t k = input_of_output[j];
    if (k >= 0 && k < static_cast<int64_t>(forward.inputs.size()) &&
        g.op(forward.inputs[k].op).type == op_types::kParam)
      bytes += backward.outputs[j].bytes();
  }
  return bytes;
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

// Per cut i (between units i - 1 and i): the bytes and tensors crossing it.
struct CutSums {
  explicit CutSums(int32_t units) : bytes(units + 2, 0), count(units + 2, 0) {}
  void add(int32_t first_cut, int32_t last_cut, int64_t b) {  // cuts first..last
    if (last_cut < first_cut) return;
    bytes[first_cut] += b, bytes[last_cut + 1] -= b;
    count[first_cut] += 1, count[last_cut + 1] -= 1;
  }
  void finish(std::vector<int64_t>* out_bytes, std::vector<int32_t>* out_count) const {
    const size_t n = bytes.size() - 1;
    out_bytes->assign(n, 0);
    out_count->assign(n, 0);
    for (size_t i = 1; i < n; ++i) {
      (*out_bytes)[i] = (*out_bytes)[i - 1] + bytes[i];
      (*out_count)[i] = (*out_count)[i - 1] + count[i];
    }
  }
  std::vector<int64_t> bytes;
  std::vector<int32_t> count;
};

// Forward: a tensor made in unit a and last read in unit m > a crosses cuts
// a + 1 .. m. Backward: its gradient crosses them back (not a param's), and
// so does each backward op's gradient of a param made in an earlier unit
// (an RNN's per-step weight gradients, one per step).
void crossing_tensors(const Graph& g, PipelineUnits* u) {
  std::map<std::pair<int32_t, int32_t>, int32_t> last_reader;  // (op, output) -> unit
  CutSums forward(u->count), backward(u->count);
  for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
    const Op& op = g.op(OpId(v));
    if (op.phase == Phase::Forward) {
      for (const TensorRef& t : op.inputs) {
        int32_t& m = last_reader.emplace(std::make_pair(t.op.value, t.output), -1).first->second;
        m = std::max(m, u->unit_of_op[v]);
      }
    } else if (op.phase == Phase::Backward && op.args.size() >= 2 && op.forward.valid()) {
      const Op& fwd = g.op(op.forward);
      const std::vector<int64_t>& input_of_output = op.args[1].ints;
      for (size_t j = 0; j < input_of_output.size() && j < op.outputs.size(); ++j) {
        const int64_t k = input_of_output[j];
        if (k < 0 || k >= static_cast<int64_t>(fwd.inputs.size())) continue;
        const OpId source = fwd.inputs[k].op;
        if (g.op(source).type == op_types::kParam)
          backward.add(u->unit_of_op[source.value] + 1, u->unit_of_op[v], op.outputs[j].bytes());
      }
    }
  }
  for (const auto& [tensor, m] : last_reader) {
    const int32_t a = u->unit_of_op[tensor.first];
    const Op& maker = g.op(OpId(tensor.first));
    const int64_t b = maker.outputs[tensor.second].bytes();
    forward.add(a + 1, m, b);
    if (maker.type != op_types::kParam) backward.add(a + 1, m, b);
  }
  forward.finish(&u->cross_bytes, &u->cross_count);
  backward.finish(&u->back_bytes, &u->back_count);
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
    if (op.phase == Phase::Backward) u.grad_bytes[c] += param_gradient_bytes(g, op);
  }
  crossing_tensors(g, &u);
  return u;
}

std::vector<int32_t> pipeline_op_devices(const PipelineUnits& units, const std::vector<PipelineDpStage>& stages) {
  std::vector<int32_t> device_of_unit(units.count, -1);
  for (const PipelineDpStage& s : stages)
    for (int32_t i = s.begin; i < s.end; ++i) device_of_unit[i] = s.device;
  std::vector<int32_t> out(units.unit_of_op.size());
  for (size_t v = 0; v < out.size(); ++v) {
    out[v] = device_of_unit[units.unit_of_op[v]];
    PLACER_CHECK(out[v] >= 0, "pipeline dp: unit ", units.unit_of_op[v], " has no stage");
  }
  return out;
}

}  // namespace placer
