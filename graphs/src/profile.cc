// The op signature profiles are keyed by (placer/graphs/profile.h), and the
// ranges their and clusters' measured constants must lie in (validate.h).
#include "placer/graphs/profile.h"

#include <cmath>
#include <sstream>

#include "placer/graphs/json_writer.h"
#include "placer/graphs/validate.h"

namespace placer {

std::string range_problem(double v, double lo, double hi, const char* unit) {
  if (std::isfinite(v) && v >= lo && v <= hi) return "";
  return format_number(v, 6) + " is out of range (" + format_number(lo, 6) + " to " + format_number(hi, 6) + " " +
         unit + ")";
}

namespace {

constexpr size_t kSkipNone = static_cast<size_t>(-1);

std::string signature_of(const Graph& graph, OpId id, size_t skip) {
  const Op& op = graph.op(id);
  auto shape = [](std::ostringstream& out, const TensorSpec& spec) {
    out << dtype_name(spec.dtype) << '[';
    for (size_t d = 0; d < spec.shape.size(); ++d) out << (d ? "," : "") << spec.shape[d];
    out << ']';
  };
  std::ostringstream out;
  out << op.type << '(';
  bool first = true;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (i == skip) continue;
    if (!first) out << ',';
    first = false;
    const Op& producer = graph.op(op.inputs[i].op);
    const int32_t k = op.inputs[i].output;
    if (k < 0 || k >= static_cast<int32_t>(producer.outputs.size()))
      out << '?';
    else
      shape(out, producer.outputs[k]);
  }
  if (op.inputs.empty() && !op.outputs.empty()) shape(out, op.outputs[0]);
  out << ')';
  return out.str();
}

}  // namespace

std::string op_signature(const Graph& graph, OpId id) { return signature_of(graph, id, kSkipNone); }

std::string op_signature(const Graph& graph, OpId id, size_t skip) { return signature_of(graph, id, skip); }

}  // namespace placer
