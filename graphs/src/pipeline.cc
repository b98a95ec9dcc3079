// make_pipeline_graph and the 1F1B admission rule (pipeline.h says what they mean).
#include "placer/graphs/pipeline.h"

#include <algorithm>
#include <string>
#include <utility>

#include "placer/graphs/error.h"
#include "placer/graphs/pipeline_limits.h"
#include "placer/graphs/validate.h"

namespace placer {

const char* objective_name(Objective objective) { return objective == Objective::Pipeline ? "pipeline" : "step"; }

std::optional<Objective> parse_objective(std::string_view name) {
  if (name == "step") return Objective::Step;
  if (name == "pipeline") return Objective::Pipeline;
  return std::nullopt;
}

const char* schedule_name(PipelineSchedule schedule) { return schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b"; }

std::optional<PipelineSchedule> parse_schedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::GPipe;
  if (name == "1f1b") return PipelineSchedule::OneFOneB;
  return std::nullopt;
}

namespace {

constexpr int kMaxMicrobatches = 1024;

bool is_shared(const Op& op) { return op.type == op_types::kParam || op.type == op_types::kSgd; }

// The ops of the unrolled graph (what Unroller::run builds): params and sgd ops once, every other op once per
// micro-batch, and per sgd op of g gradients a running sum of (M - 1) g - 1 adds.
int64_t unrolled_size(const Graph& training, int microbatches) {
  const int64_t M = microbatches;
  int64_t ops = 0;
  for (const Op& op : training.ops()) {
    ops += is_shared(op) ? 1 : M;
    if (op.type == op_types::kSgd && !op.inputs.empty())
      ops += std::max<int64_t>(0, (M - 1) * static_cast<int64_t>(op.inputs.size() - 1) - 1);
  }
  return ops;
}

// Builds the unrolled graph op by op; new_id[k][base] is the copy of base in
// micro-batch k (the one op for shared ops).
class Unroller {
 public:
  Unroller(const Graph& training, const PipelineSpec& spec) : base_(training), spec_(spec) {
    const int32_t n = static_cast<int32_t>(training.size());
    new_id_.assign(spec.microbatches, std::vector<OpId>(n));
    acc_.assign(n, TensorRef{OpId(), 0});
    out_.spec = spec;
    out_.graph.name = training.name;
    out_.graph.attrs = training.attrs;
    out_.graph.attrs[kAttrMicrobatches] = std::to_string(spec.microbatches);
    out_.graph.attrs[kAttrSchedule] = schedule_name(spec.schedule);
  }

  PipelineGraph run() {
    const int32_t n = static_cast<int32_t>(base_.size());
    const int64_t expected = unrolled_size(base_, spec_.microbatches);
    for (int32_t b = 0; b < n; ++b)
      if (base_.op(OpId(b)).type == op_types::kParam) add_shared(b);
    const int M = spec_.microbatches;
    for (int k = 0; k < M; ++k) copy_phase(k, Phase::Forward);  // both schedules (pipeline.h)
    for (int k = 0; k < M; ++k) copy_phase(k, Phase::Backward);
    for (int32_t b = 0; b < n; ++b)
      if (base_.op(OpId(b)).type == op_types::kSgd) add_update(b);
    PLACER_CHECK(out_.graph.size() == expected, "unrolled ", out_.graph.size(), " ops, counted ", expected);
    return std::move(out_);
  }

 private:
  OpId add(Op op, int32_t base) {
    const OpId id = out_.graph.add_op(std::move(op));
    out_.base_op.push_back(OpId(base));
    return id;
  }

  void add_shared(int32_t b) {
    const OpId id = add(base_.op(OpId(b)), b);
    for (auto& ids : new_id_) ids[b] = id;
  }

  // Every non-shared op of `phase` (inputs and forward ops are Forward).
  void copy_phase(int k, Phase phase) {
    const int32_t n = static_cast<int32_t>(base_.size());
    for (int32_t b = 0; b < n; ++b) {
      const Op& src = base_.op(OpId(b));
      if (is_shared(src) || src.phase != phase) continue;
      Op op = src;
      op.name = src.name + "@mb" + std::to_string(k);
      op.microbatch = k;
      for (TensorRef& in : op.inputs) in.op = new_id_[k][in.op.value];
      if (op.forward.valid()) op.forward = new_id_[k][op.forward.value];
      new_id_[k][b] = add(std::move(op), b);
    }
    if (phase == Phase::Backward && k + 1 < spec_.microbatches)
      for (int32_t b = 0; b < n; ++b)
        if (base_.op(OpId(b)).type == op_types::kSgd) accumulate(k, b);
  }

  // Folds micro-batch k's gradients of sgd op b's param into its running sum
  // (one buffer per param, as a pipeline runtime keeps; the micro-batch's
  // gradients are freed as it ends).
  void accumulate(int k, int32_t b) {
    const Op& sgd = base_.op(OpId(b));
    const Op& param = base_.op(sgd.inputs.at(0).op);
    for (size_t j = 1; j < sgd.inputs.size(); ++j) {
      const TensorRef grad{new_id_[k][sgd.inputs[j].op.value], sgd.inputs[j].output};
      if (!acc_[b].op.valid()) {
        acc_[b] = grad;
        continue;
      }
      Op op;
      op.name = sgd.name + "@mb" + std::to_string(k) + "/acc" + std::to_string(j);
      op.type = "aten::add.Tensor";
      op.inputs = {acc_[b], grad};
      op.args = {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)};
      op.outputs = {param.outputs.at(sgd.inputs[0].output)};
      op.view_of = {-1};
      op.flops = static_cast<double>(op.outputs[0].numel());
      op.phase = Phase::Backward;
      op.forward = new_id_[k][sgd.inputs[0].op.value];
      op.group = sgd.group;
      op.layer = sgd.layer;
      op.microbatch = k;
      acc_[b] = TensorRef{add(std::move(op), b), 0};
    }
  }

  // One sgd op: the param, the sum of the earlier micro-batches' gradients,
  // then the last micro-batch's; lr / M.
  void add_update(int32_t b) {
    const Op& src = base_.op(OpId(b));
    Op op = src;
    op.inputs = {TensorRef{new_id_[0][src.inputs.at(0).op.value], src.inputs[0].output}};
    if (acc_[b].op.valid()) op.inputs.push_back(acc_[b]);
    const int last = spec_.microbatches - 1;
    for (size_t j = 1; j < src.inputs.size(); ++j)
      op.inputs.push_back(TensorRef{new_id_[last][src.inputs[j].op.value], src.inputs[j].output});
    if (op.forward.valid()) op.forward = new_id_[0][op.forward.value];
    if (!op.args.empty() && op.args[0].kind == Arg::Kind::Double) op.args[0].d /= spec_.microbatches;
    const OpId id = add(std::move(op), b);
    for (auto& ids : new_id_) ids[b] = id;
  }

  const Graph& base_;
  const PipelineSpec spec_;
  std::vector<std::vector<OpId>> new_id_;
  std::vector<TensorRef> acc_;  // per sgd op: its param's gradients summed so far
  PipelineGraph out_;
};

// The unroller copies phase after phase (every forward op, then every backward op, then the updates): an op
// reading a later phase's op would be copied before its input (it read op #-1). Params are shared.
void check_phase_order(const Graph& training) {
  auto a = [](Phase phase) { return detail::concat(phase == Phase::Update ? "an " : "a ", phase_name(phase)); };
  for (const Op& op : training.ops())
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const Op& producer = training.op(op.inputs[k].op);
      if (producer.type == op_types::kParam || producer.phase <= op.phase) continue;
      throw GraphError(detail::concat("op '", op.name, "': inputs[", k, "]: ", a(op.phase), " op reads '",
                                      producer.name, "', ", a(producer.phase),
                                      " op (a pipelined mini-batch runs every forward op before any backward op, "
                                      "and every backward op before any update)"));
    }
}

// The unroller accumulates gradients for sgd only: any other update would be left out of the graph.
void check_updates(const Graph& training) {
  for (const Op& op : training.ops())
    if (op.phase == Phase::Update && op.type != op_types::kSgd)
      throw GraphError(detail::concat("op '", op.name, "': type '", op.type, "': a pipelined update must be ",
                                      op_types::kSgd, " (the pipeline supports sgd updates only)"));
}

// The unrolled graph must fit in memory (and load again: kMaxUnrolledOps is below kMaxOps).
static_assert(kMaxUnrolledOps <= kMaxOps);
void check_size(const Graph& training, int microbatches) {
  const int64_t ops = unrolled_size(training, microbatches);
  if (ops > kMaxUnrolledOps)
    throw GraphError(detail::concat("microbatches: ", microbatches, " micro-batches of graph '", training.name, "' (",
                                    training.size(), " ops) make ", ops, " ops, over the limit ", kMaxUnrolledOps,
                                    " (about 2 KB of memory per op: 8 GB; use fewer micro-batches)"));
}

}  // namespace

Placement PipelineGraph::expand(const Placement& base) const {
  Placement p;
  p.device_of.reserve(base_op.size());
  for (const OpId b : base_op) p.device_of.push_back(base.device_of.at(b.value));
  return p;
}

PipelineGraph make_pipeline_graph(const Graph& training, const PipelineSpec& spec) {
  if (!training.is_training())
    throw GraphError("graph '" + training.name + "' is not a training graph: pipelining needs backward and update ops");
  if (spec.microbatches < 1 || spec.microbatches > kMaxMicrobatches)
    throw GraphError("microbatches: " + std::to_string(spec.microbatches) + " is not in [1, " +
                     std::to_string(kMaxMicrobatches) + "]");
  if (pipeline_spec_of(training)) throw GraphError("graph '" + training.name + "' is already a pipelined mini-batch");
  check_updates(training);
  check_phase_order(training);
  check_size(training, spec.microbatches);
  return Unroller(training, spec).run();
}

std::optional<PipelineSpec> pipeline_spec_of(const Graph& graph) {
  const auto m = graph.attrs.find(kAttrMicrobatches);
  const auto s = graph.attrs.find(kAttrSchedule);
  if (m == graph.attrs.end() || s == graph.attrs.end()) return std::nullopt;
  PipelineSpec spec;
  // A whole number in range: a graph file's attrs allocate per micro-batch in every simulation.
  const std::string& text = m->second;
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(text[0] >= '0' && text[0] <= '9'))  // " 4", "+4": no
    throw GraphError(std::string("graph attrs: ") + kAttrMicrobatches + " '" + text + "' is not a whole number");
  if (value < 1 || value > kMaxMicrobatches)
    throw GraphError(std::string("graph attrs: ") + kAttrMicrobatches + " " + text + " is not in [1, " +
                     std::to_string(kMaxMicrobatches) + "]");
  spec.microbatches = static_cast<int>(value);
  const auto schedule = parse_schedule(s->second);
  if (!schedule)
    throw GraphError(std::string("graph attrs: ") + kAttrSchedule + " '" + s->second + "' is not gpipe or 1f1b");
  spec.schedule = *schedule;
  return spec;
}

bool is_stage_op(const Op& op) {
  return op.phase == Phase::Forward && op.type != op_types::kParam && op.type != op_types::kInput;
}

// ------------------------------------------------------------ MicrobatchGate

MicrobatchGate::MicrobatchGate(const Graph& graph, const std::vector<DeviceId>& device_of, int32_t devices) {
  const auto spec = pipeline_spec_of(graph);
  if (!spec || spec->schedule != PipelineSchedule::OneFOneB) return;
  const int32_t n = static_cast<int32_t>(graph.size());
  const int32_t M = spec->microbatches;
  microbatches_ = M;
  device_.resize(n);
  microbatch_.resize(n);
  ops_of_mb_.assign(static_cast<size_t>(devices) * M, 0);
  // A device's bound: the stages a micro-batch crosses from its first forward there until its loss, its
  // height (see pipeline.h). The rank of a device's first stage op among the devices counted two devices
  // holding stages A B A B as two stages: the second admitted one micro-batch where four stages lay
  // between its forward and backward there (1F1B ran 1.43x slower than GPipe). Inputs are not gated: one on
  // a later stage's device took that stage's one slot, and stage 0 ran F0 B0 F1 where 1F1B runs F0 F1 B0.
  std::vector<char> stage(n, 0);
  for (int32_t o = 0; o < n; ++o) {
    device_[o] = device_of.at(o).value;
    const Op& op = graph.op(OpId(o));
    microbatch_[o] = op.type == op_types::kInput ? -1 : op.microbatch;
    if (op.microbatch >= M)
      throw GraphError(detail::concat("op '", op.name, "': microbatch ", op.microbatch, " is not below the graph's ",
                                      kAttrMicrobatches, " ", M));
    if (microbatch_[o] < 0) continue;
    ++ops_of_mb_[static_cast<size_t>(device_[o]) * M + microbatch_[o]];
    stage[o] = microbatch_[o] == 0 && is_stage_op(op);
  }
  // height[o]: device changes on the longest path of micro-batch 0's stage ops from o to a sink (the loss).
  std::vector<int32_t> height(n, 0);
  std::vector<int32_t> top(devices, -1);  // per device: its stage ops' greatest height (-1: none, no stage)
  for (int32_t o = n - 1; o >= 0; --o) {
    if (!stage[o]) continue;
    const int32_t d = device_[o];
    top[d] = std::max(top[d], height[o]);
    for (const TensorRef& in : graph.op(OpId(o)).inputs) {
      const int32_t i = in.op.value;
      if (stage[i]) height[i] = std::max(height[i], height[o] + (device_[i] != d ? 1 : 0));
    }
  }
  cap_.assign(devices, M);
  for (int32_t d = 0; d < devices; ++d)
    if (top[d] >= 0) cap_[d] = std::min(M, top[d] + 1);
  reset();
}

void MicrobatchGate::reset() {
  if (!active()) return;
  next_.assign(cap_.size(), 0);
  in_flight_.assign(cap_.size(), 0);
  left_ = ops_of_mb_;
  for (int32_t d = 0; d < static_cast<int32_t>(cap_.size()); ++d) skip_empty(d);
}

// A device admits only the micro-batches it has ops of: one without any (a
// device that holds only a param's accumulations has none of micro-batch 0)
// is passed over, or the device would wait for it forever.
void MicrobatchGate::skip_empty(int32_t d) {
  while (next_[d] < microbatches_ && ops_of_mb_[static_cast<size_t>(d) * microbatches_ + next_[d]] == 0) ++next_[d];
}

bool MicrobatchGate::admits(int32_t op) const {
  if (!active()) return true;
  const int32_t mb = microbatch_[op];
  if (mb < 0) return true;
  const int32_t d = device_[op];
  if (mb < next_[d]) return true;
  return mb == next_[d] && in_flight_[d] < cap_[d];
}

void MicrobatchGate::started(int32_t op) {
  if (!active() || microbatch_[op] < 0) return;
  const int32_t d = device_[op];
  if (microbatch_[op] == next_[d]) {
    ++next_[d];
    ++in_flight_[d];
    skip_empty(d);
  }
}

void MicrobatchGate::finished(int32_t op) {
  if (!active() || microbatch_[op] < 0) return;
  const int32_t d = device_[op];
  if (--left_[static_cast<size_t>(d) * microbatches_ + microbatch_[op]] == 0) --in_flight_[d];
}

}  // namespace placer
