// The op signature profiles are keyed by (placer/graphs/profile.h).
#include "placer/graphs/profile.h"

#include <sstream>

namespace placer {

std::string op_signature(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  auto shape = [](std::ostringstream& out, const TensorSpec& spec) {
    out << dtype_name(spec.dtype) << '[';
    for (size_t d = 0; d < spec.shape.size(); ++d) out << (d ? "," : "") << spec.shape[d];
    out << ']';
  };
  std::ostringstream out;
  out << op.type << '(';
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (i) out << ',';
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

}  // namespace placer
