// Pipeline dp (pipeline_dp.h): the analytical cost of a contiguous split and
// the exact DP over splits and device orders, with Pareto sets of (sum, max, tail).
#include "pipeline_dp.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "placer/env/environment.h"
#include "placer/graphs/json_writer.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int32_t popcount(uint64_t m) { return static_cast<int32_t>(__builtin_popcountll(m)); }

// The stages covering units [i, U): their sum without the cut at i (the
// round trip of the first of them), the bottleneck so far, the tail (how long
// after the first of them ends its last backward the last updates end: each
// stage's updates start when its own last backward ends, the later stages'
// earlier), how it was reached.
struct Label {
  double sum = 0.0, max = 0.0, tail = -std::numeric_limits<double>::infinity();
  const std::vector<Label>* from = nullptr;
  int32_t from_index = -1;
  int32_t end = 0;  // the first stage's end
  int32_t device = -1;
};

// The devices used (ordered search: their count), the first covered stage's device.
using StateKey = std::pair<uint64_t, int32_t>;
using States = std::map<StateKey, std::vector<Label>>;

void keep_pareto(std::vector<Label>* front) {
  std::sort(front->begin(), front->end(), [](const Label& a, const Label& b) {
    return a.sum != b.sum ? a.sum < b.sum : a.max != b.max ? a.max < b.max : a.tail < b.tail;
  });
  std::vector<Label> kept;  // sorted by sum: a label is dominated by a kept one no later in max and tail
  for (const Label& l : *front)
    if (std::none_of(kept.begin(), kept.end(), [&](const Label& k) { return k.max <= l.max && k.tail <= l.tail; }))
      kept.push_back(l);
  *front = std::move(kept);
}

// One DP over splits into `stages` stages (0: any number, for GPipe, whose
// cost does not depend on it), from the last unit backwards.
class SplitSearch {
 public:
  // ordered: stages take devices in index order (the key holds the count of devices used, not
  // the set). stop: checked before each state after the first, null for never.
  SplitSearch(const PipelineCost& cost, int32_t stages, bool ordered, const PlaceContext* stop)
      : cost_(cost), U_(cost.units().count), D_(cost.units().devices), S_(stages), ordered_(ordered), stop_(stop),
        at_(U_ + 1), next_alike_(D_, D_) {
    at_[U_][{0, -1}].push_back(Label{});
    for (int32_t d = 0; d < D_; ++d)
      for (int32_t e = d + 1; e < D_ && next_alike_[d] == D_; ++e)
        if (cost_.device_class()[e] == cost_.device_class()[d]) next_alike_[d] = e;
  }

  // The best complete split, first stage first (empty if none fits or it stopped before one).
  std::vector<PipelineDpStage> run() {
    for (int32_t i = U_; i > 0 && !stopped_; --i)
      for (auto& [key, front] : at_[i]) {
        if (i < U_ && stop_ && stop_requested(*stop_)) {
          stopped_ = true;
          break;
        }
        keep_pareto(&front);
        labels_ += static_cast<int64_t>(front.size());
        expand(i, key, front);
      }
    std::vector<PipelineDpStage> out;
    for (const Label* l = best_label_; l && l->from; l = &(*l->from)[l->from_index])
      out.push_back({out.empty() ? 0 : out.back().end, l->end, l->device});
    return out;
  }

  double best() const { return best_; }
  int64_t labels() const { return labels_; }
  bool stopped() const { return stopped_; }

 private:
  // Whether stage placement may put d before the stages of `key`, and the key after it.
  bool allowed(const StateKey& key, int32_t d) const {
    return ordered_ ? nearest_below(d, key.second < 0 ? D_ : key.second) : first_unused(key.first, d);
  }
  // Ordered: whether d is the last device of its class below `bound` (alike devices interchangeable, as above).
  bool nearest_below(int32_t d, int32_t bound) const { return d < bound && next_alike_[d] >= bound; }
  StateKey after(const StateKey& key, int32_t d) const {
    return {ordered_ ? key.first + 1 : key.first | (uint64_t{1} << d), d};
  }

  // Whether d is the first unused device of its class (identical devices in index order).
  bool first_unused(uint64_t used, int32_t d) const {
    if ((used >> d) & 1) return false;
    for (int32_t e = 0; e < d; ++e)
      if (cost_.device_class()[e] == cost_.device_class()[d] && !((used >> e) & 1)) return false;
    return true;
  }

  // Adds a stage [h, i) before the stages covering [i, U).
  void expand(int32_t i, const StateKey& key, const std::vector<Label>& front) {
    const int32_t next = key.second;
    const int32_t placed = ordered_ ? static_cast<int32_t>(key.first) : popcount(key.first);
    if (placed >= D_ || (S_ > 0 && (placed >= S_ || i < S_ - placed))) return;
    const int32_t s = S_ > 0 ? S_ - 1 - placed : -1;
    const int32_t M = cost_.spec().microbatches;
    for (int32_t d = 0; d < D_; ++d) {
      if (!allowed(key, d)) continue;
      const int32_t h_max = s == 0 ? 0 : i - 1;
      const int32_t h_min = s > 0 ? s : 0;  // stages 0..s-1 need a unit each
      for (int32_t h = h_max; h >= h_min; --h) {
        const PipelineCost::Terms t = cost_.stage(h, i, d, next, s, S_);
        // Not a break: memory need not grow as h goes down. A param read past the stage's first cut
        // is held in flight (up to S - s micro-batches), and held once when the stage takes in its maker.
        if (!cost_.fits(t, d)) continue;
        std::vector<Label>* into = nullptr;
        for (size_t k = 0; k < front.size(); ++k) {
          const PipelineCost::Partial p = cost_.prepend({front[k].sum, front[k].max, front[k].tail}, t, s, S_);
          const double bound = p.sum + (M - 1) * p.max;  // sums and maxima only grow
          if (bound >= best_) continue;
          Label l{p.sum, p.max, p.tail, &front, static_cast<int32_t>(k), i, d};
          if (h == 0) {  // complete: the last updates end `tail` after the first stage's last backward
            const double total = bound + p.tail;
            if (total < best_) best_ = total, best_complete_ = l, best_label_ = &best_complete_;
            continue;
          }
          if (!into) into = &at_[h][after(key, d)];
          into->push_back(l);
        }
      }
    }
  }

  const PipelineCost& cost_;
  const int32_t U_, D_, S_;
  const bool ordered_;
  const PlaceContext* stop_;
  bool stopped_ = false;
  std::vector<States> at_;
  std::vector<int32_t> next_alike_;  // the next device of d's class above it (D_: none)
  double best_ = kInf;
  Label best_complete_;
  const Label* best_label_ = nullptr;
  int64_t labels_ = 0;
};

std::string describe(const PipelineUnits& u, const Cluster& cluster, const std::vector<PipelineDpStage>& stages) {
  std::string out;
  for (const PipelineDpStage& s : stages) {
    out += out.empty() ? "" : "; ";
    out += cluster.devices[s.device].name + " " + u.first[s.begin] + ".." + u.last[s.end - 1];
  }
  return out;
}

// What limited the search, if anything.
std::string search_note(const PipelineDpResult& r) {
  std::string out;
  if (r.ordered)
    out += "; devices in index order (the search over every order of them is over " +
           format_number("%.3g", kMaxPipelineDpExpansions) + " stage expansions)";
  if (r.stopped) out += "; stopped (cancelled or past its deadline): the best split so far";
  if (r.relaxed > 1.0)
    out += "; no split fit the model's memory budget, its optimum at " + format_number("%.3g", r.relaxed) +
           "x the budget is one the simulator fits";
  return out;
}

}  // namespace

PipelineCost::PipelineCost(const PipelineUnits& units, const CostModel& costs, std::vector<int64_t> capacity,
                           PipelineSpec spec)
    : units_(units), costs_(costs), capacity_(std::move(capacity)), spec_(spec) {
  const int32_t U = units.count, D = units.devices;
  PLACER_CHECK(static_cast<int32_t>(capacity_.size()) == D, "pipeline dp: capacity per device");
  auto prefix = [&](const std::vector<double>& v) {
    std::vector<std::vector<double>> out(D, std::vector<double>(U + 1, 0.0));
    for (int32_t d = 0; d < D; ++d)
      for (int32_t i = 0; i < U; ++i) out[d][i + 1] = out[d][i] + v[static_cast<size_t>(i) * D + d];
    return out;
  };
  pre_fwd_ = prefix(units.fwd);
  pre_bwd_ = prefix(units.bwd);
  pre_upd_ = prefix(units.upd);
  pre_param_.assign(U + 1, 0);
  pre_act_.assign(U + 1, 0);
  pre_grad_.assign(U + 1, 0);
  for (int32_t i = 0; i < U; ++i) {
    pre_param_[i + 1] = pre_param_[i] + units.param_bytes[i];
    pre_act_[i + 1] = pre_act_[i] + units.act_bytes[i];
    pre_grad_[i + 1] = pre_grad_[i] + units.grad_bytes[i];
  }
  class_.resize(D);
  for (int32_t d = 0; d < D; ++d) {
    class_[d] = d;
    for (int32_t e = 0; e < d && class_[d] == d; ++e) {
      bool same = capacity_[e] == capacity_[d];
      for (int32_t i = 0; i < U && same; ++i) {
        const size_t a = static_cast<size_t>(i) * D + e, b = static_cast<size_t>(i) * D + d;
        same = units.fwd[a] == units.fwd[b] && units.bwd[a] == units.bwd[b] && units.upd[a] == units.upd[b];
      }
      if (same) class_[d] = class_[e];
    }
  }
}

PipelineCost::Terms PipelineCost::stage(int32_t i, int32_t j, int32_t d, int32_t next, int32_t s, int32_t S) const {
  Terms t;
  t.backward = pre_bwd_[d][j] - pre_bwd_[d][i];
  t.work = pre_fwd_[d][j] - pre_fwd_[d][i] + t.backward;
  t.update = pre_upd_[d][j] - pre_upd_[d][i];
  // Each micro-batch after the first adds its param gradients into the running sum (graphs/pipeline.h's
  // accumulation: per param an add, the traffic of its update, read two and write one), on the stage's
  // device: M - 1 of them, so in the bottleneck's share, not in the first micro-batch's round trip (left
  // out, the model read 37.8 ms where the simulator took 77.5 on an mlp with a 491 MB classifier at M = 8).
  if (spec_.microbatches > 1) t.accumulate = t.update;
  const int64_t out_bytes = units_.cross_bytes[j];
  const int32_t out_count = units_.cross_count[j];
  if (next >= 0 && out_count > 0) {
    const DeviceId a(d), b(next);
    t.comm_fwd = costs_.transfer_seconds(a, b, out_bytes) + (out_count - 1) * costs_.transfer_seconds(a, b, 0);
  }
  const int32_t back_count = units_.back_count[j];
  if (next >= 0 && back_count > 0) {
    const DeviceId a(d), b(next);
    t.comm_bwd =
        costs_.transfer_seconds(b, a, units_.back_bytes[j]) + (back_count - 1) * costs_.transfer_seconds(b, a, 0);
  }
  const int32_t M = spec_.microbatches;
  const int32_t in_flight = spec_.schedule == PipelineSchedule::GPipe || S <= 0 ? M : std::max(1, std::min(M, S - s));
  // Params, their gradient sum, and from 3 micro-batches on the sum's next value while an accumulation
  // runs (it is no in-place add: 1F1B at M = 4 peaked 12% over the budget this model kept). A micro-batch's
  // param gradients (an RNN's per-step ones) wait only for their own sum: its accumulations come before
  // the next micro-batch's backward in op order, under GPipe too (M of them kept it from splits that fit).
  const int32_t param_copies = M >= 3 ? 3 : 2;
  t.memory = param_copies * (pre_param_[j] - pre_param_[i]) + (pre_grad_[j] - pre_grad_[i]) +
             in_flight * (pre_act_[j] - pre_act_[i] + units_.cross_bytes[i]);
  return t;
}

double PipelineCost::cycle_share(double round_trip, int32_t s, int32_t S) const {
  if (spec_.schedule != PipelineSchedule::OneFOneB || S <= 0 || spec_.microbatches <= S - s) return 0.0;
  return round_trip / (S - s);
}

PipelineSplitCost PipelineCost::evaluate(const std::vector<PipelineDpStage>& stages) const {
  PipelineSplitCost out;
  const int32_t S = static_cast<int32_t>(stages.size());
  PLACER_CHECK(S > 0 && stages.front().begin == 0 && stages.back().end == units_.count, "pipeline dp: a split");
  out.fits = true;
  Partial after;  // the stages after s, without the cut before them
  for (int32_t s = S - 1; s >= 0; --s) {
    const PipelineDpStage& st = stages[s];
    PLACER_CHECK(st.begin < st.end && (s == 0 || stages[s - 1].end == st.begin), "pipeline dp: stage ", s);
    const Terms t = stage(st.begin, st.end, st.device, s + 1 < S ? stages[s + 1].device : -1, s, S);
    after = prepend(after, t, s, S);
    out.bottleneck_s = after.max;
    if (!fits(t, st.device) && out.fits) {
      out.fits = false;
      out.overflow = "stage " + std::to_string(s) + " needs " + format_bytes(t.memory) + ", has " +
                     format_bytes(capacity_[st.device]);
    }
    if (s == 0) out.sum_s = after.sum + after.tail;
  }
  out.total_s = out.sum_s + (spec_.microbatches - 1) * out.bottleneck_s;
  return out;
}

namespace {

// Stage expansions of the exact search: its states (unit boundaries x sets of devices used, alike
// devices counted, not told apart, x the next stage's device) x the stages each adds (devices x units).
double exact_expansions(const PipelineCost& cost) {
  std::map<int32_t, int32_t> per_class;
  for (int32_t c : cost.device_class()) ++per_class[c];
  double sets = 1.0;
  for (const auto& [c, n] : per_class) sets *= n + 1;
  const double D = cost.units().devices, U = cost.units().count;
  return sets * D * D * (U + 1) * U / 2;
}

// One search per stage count (GPipe: one for any); the best split into out->stages, until a stop.
void search_splits(const PipelineCost& cost, const PlaceContext* stop, PipelineDpResult* out) {
  const int32_t U = cost.units().count, D = cost.units().devices;
  // GPipe's cost does not depend on the number of stages: one DP. 1F1B's
  // does (min(M, S - s) in flight): one DP per S.
  std::vector<int32_t> stage_counts;
  if (cost.spec().schedule == PipelineSchedule::GPipe)
    stage_counts.push_back(0);
  else
    for (int32_t S = 1; S <= std::min(U, D); ++S) stage_counts.push_back(S);
  double best = kInf;
  for (int32_t S : stage_counts) {
    SplitSearch search(cost, S, out->ordered, stop);
    std::vector<PipelineDpStage> stages = search.run();
    out->labels += search.labels();
    out->stopped = search.stopped();
    if (!stages.empty() && search.best() < best) best = search.best(), out->stages = std::move(stages);
    if (out->stopped) return;
  }
}

// The DP took identical devices last stage first; gives them in stage order.
void alike_devices_in_stage_order(const PipelineCost& cost, std::vector<PipelineDpStage>* stages) {
  const std::vector<int32_t>& cls = cost.device_class();
  std::map<int32_t, std::vector<int32_t>> by_class;
  for (const PipelineDpStage& st : *stages) by_class[cls[st.device]].push_back(st.device);
  for (auto& [c, devices] : by_class) std::sort(devices.rbegin(), devices.rend());
  for (PipelineDpStage& st : *stages) {
    std::vector<int32_t>& devices = by_class[cls[st.device]];
    st.device = devices.back();
    devices.pop_back();
  }
}

}  // namespace

PipelineDpResult solve_pipeline_dp(const PipelineCost& cost, const PlaceContext* stop) {
  const int32_t D = cost.units().devices;
  if (D > kMaxPipelineDpDevices)
    throw NoFeasiblePlacement("dp (pipeline): the cluster has " + std::to_string(D) + " devices; its search tells " +
                              "at most " + std::to_string(kMaxPipelineDpDevices) + " apart");
  PLACER_CHECK(D >= 1, "pipeline dp: devices ", D);
  PipelineDpResult out;
  // (Devices all alike: the exact search already takes them in index order, restricting nothing.)
  const std::vector<int32_t>& cls = cost.device_class();
  const bool one_class = std::all_of(cls.begin(), cls.end(), [&](int32_t c) { return c == cls.front(); });
  out.ordered = !one_class && exact_expansions(cost) > kMaxPipelineDpExpansions;
  search_splits(cost, stop, &out);
  if (out.stages.empty() && out.stopped)
    throw NoFeasiblePlacement("dp (pipeline): stopped (cancelled or past its deadline) before any split was complete");
  if (out.stages.empty())
    throw NoFeasiblePlacement("dp (pipeline): no split into contiguous stages fits device memory under " +
                              std::string(schedule_name(cost.spec().schedule)) + " with " +
                              std::to_string(cost.spec().microbatches) +
                              " micro-batches (params, a gradient buffer and the activations in flight)");
  alike_devices_in_stage_order(cost, &out.stages);
  out.cost = cost.evaluate(out.stages);
  return out;
}

namespace {

// The model counts warm-up activations and accumulation peaks that never coexist, so it can find no
// split where one fits: then it relaxes its budget step by step, and the simulator judges each optimum.
PipelineDpResult solve_or_simulate(const PlaceContext& ctx, const PipelineUnits& units, const CostModel& costs,
                                   const std::vector<int64_t>& capacity, const PipelineSpec& spec) {
  try {
    return solve_pipeline_dp(PipelineCost(units, costs, capacity, spec), &ctx);
  } catch (const NoFeasiblePlacement&) {
    // (A stop or a cluster past the search's devices: no budget changes that.)
    if (stop_requested(ctx) || units.devices > kMaxPipelineDpDevices) throw;
    for (double scale : {1.1, 1.25, 1.5, 2.0}) {
      std::vector<int64_t> relaxed(capacity.size());
      for (size_t d = 0; d < capacity.size(); ++d)
        relaxed[d] = static_cast<int64_t>(scale * static_cast<double>(capacity[d]));
      PipelineDpResult r;
      try {
        r = solve_pipeline_dp(PipelineCost(units, costs, relaxed, spec), &ctx);
      } catch (const NoFeasiblePlacement&) {
        continue;
      }
      if (!simulator_fits(ctx, pipeline_op_devices(units, r.stages), "dp")) continue;
      r.relaxed = scale;
      return r;
    }
    throw;
  }
}

}  // namespace

PlaceResult place_pipeline_dp(const PlaceContext& ctx, Clock::time_point started) {
  const Graph& g = *ctx.graph;
  const Cluster& cluster = *ctx.cluster;
  const std::shared_ptr<const CostModel> held = ctx.env->costs();
  const CostModel& env_costs = *held;
  const CostModel roofline = env_costs.ops() == g.size() ? CostModel() : CostModel::roofline(g, cluster);
  const CostModel& costs = env_costs.ops() == g.size() ? env_costs : roofline;
  const PipelineSpec spec = ctx.env->options().pipeline;
  const int64_t max_units = option_int(ctx, "max_units", 128, 1);
  if (max_units < 1 || max_units > 4096)
    throw InputError("dp option 'max_units': expected 1 to 4096, got " + std::to_string(max_units));
  const PipelineUnits units = make_pipeline_units(g, costs, static_cast<int32_t>(max_units));
  std::vector<int64_t> capacity(cluster.size());
  for (int32_t d = 0; d < cluster.size(); ++d)
    capacity[d] = static_cast<int64_t>(kMemoryFraction * static_cast<double>(cluster.devices[d].memory_bytes));
  const PipelineDpResult r = solve_or_simulate(ctx, units, costs, capacity, spec);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "dp (pipeline, %s, %d micro-batches): model mini-batch %.6g s (one micro-batch through and back "
                "%.6g s, bottleneck %.6g s) over %d units, %zu stages: ",
                schedule_name(spec.schedule), spec.microbatches, r.cost.total_s, r.cost.sum_s, r.cost.bottleneck_s,
                units.count, r.stages.size());
  PlaceResult out = finish(ctx, pipeline_op_devices(units, r.stages), "dp", started,
                           std::string(buf) + describe(units, cluster, r.stages) + search_note(r));
  out.stats["pipeline_model_s"] = r.cost.total_s;
  out.stats["pipeline_sum_s"] = r.cost.sum_s;
  out.stats["pipeline_bottleneck_s"] = r.cost.bottleneck_s;
  out.stats["stages"] = static_cast<double>(r.stages.size());
  out.stats["units"] = static_cast<double>(units.count);
  out.stats["dp_labels"] = static_cast<double>(r.labels);
  return out;
}

}  // namespace placer
