// Pipeline dp (pipeline_dp.h): the analytical cost of a contiguous split and
// the exact DP over splits and device orders, with Pareto sets of (sum, max).
#include "pipeline_dp.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "placer/env/environment.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int32_t popcount(uint64_t m) { return static_cast<int32_t>(__builtin_popcountll(m)); }

// A partial split: its sum and bottleneck so far, and how it was reached.
struct Label {
  double sum = 0.0, max = 0.0;
  const std::vector<Label>* from = nullptr;
  int32_t from_index = -1;
  int32_t begin = 0;  // the last stage's first unit
  int32_t device = -1;
};

using StateKey = std::pair<uint64_t, int32_t>;  // devices used, last device
using States = std::map<StateKey, std::vector<Label>>;

void keep_pareto(std::vector<Label>* front) {
  std::sort(front->begin(), front->end(),
            [](const Label& a, const Label& b) { return a.sum != b.sum ? a.sum < b.sum : a.max < b.max; });
  std::vector<Label> kept;
  double best_max = kInf;
  for (const Label& l : *front)
    if (l.max < best_max) kept.push_back(l), best_max = l.max;
  *front = std::move(kept);
}

// One DP over splits into `stages` stages (0: any number, for a schedule
// whose memory does not depend on it).
class SplitSearch {
 public:
  SplitSearch(const PipelineCost& cost, int32_t stages)
      : cost_(cost), U_(cost.units().count), D_(cost.units().devices), S_(stages), at_(U_ + 1) {
    at_[0][{0, -1}].push_back(Label{});
  }

  // The best complete label (null if none fits).
  const Label* run() {
    for (int32_t i = 0; i < U_; ++i)
      for (auto& [key, front] : at_[i]) {
        keep_pareto(&front);
        labels_ += static_cast<int64_t>(front.size());
        expand(i, key, front);
      }
    const Label* best = nullptr;
    for (auto& [key, front] : at_[U_]) {
      if (S_ > 0 && popcount(key.first) != S_) continue;
      for (const Label& l : front)
        if (!best || total(l) < total(*best)) best = &l;
    }
    return best;
  }

  double total(const Label& l) const { return l.sum + (cost_.spec().microbatches - 1) * l.max; }
  int64_t labels() const { return labels_; }

 private:
  // Whether d is the first unused device of its class (identical devices in index order).
  bool first_unused(uint64_t used, int32_t d) const {
    if ((used >> d) & 1) return false;
    for (int32_t e = 0; e < d; ++e)
      if (cost_.device_class()[e] == cost_.device_class()[d] && !((used >> e) & 1)) return false;
    return true;
  }

  void expand(int32_t i, const StateKey& key, const std::vector<Label>& front) {
    const auto [used, last] = key;
    const int32_t s = popcount(used);
    if (s >= D_ || (S_ > 0 && (s >= S_ || U_ - i < S_ - s))) return;
    for (int32_t d = 0; d < D_; ++d) {
      if (!first_unused(used, d)) continue;
      const int32_t j_min = S_ > 0 && s + 1 == S_ ? U_ : i + 1;
      const int32_t j_max = S_ > 0 ? U_ - (S_ - s - 1) : U_;
      for (int32_t j = j_min; j <= j_max; ++j) {
        const PipelineCost::Terms t = cost_.stage(i, j, d, last, s, S_);
        if (!cost_.fits(t, d)) break;  // memory only grows with j
        std::vector<Label>* into = nullptr;
        for (size_t k = 0; k < front.size(); ++k) {
          Label l{front[k].sum + t.add, std::max(front[k].max, t.max), &front, static_cast<int32_t>(k), i, d};
          const double bound = total(l);  // sums and maxima only grow
          if (bound >= best_) continue;
          if (j == U_ && (S_ == 0 || s + 1 == S_)) best_ = bound;
          if (!into) into = &at_[j][{used | (uint64_t{1} << d), d}];
          into->push_back(l);
        }
      }
    }
  }

  const PipelineCost& cost_;
  const int32_t U_, D_, S_;
  std::vector<States> at_;
  double best_ = kInf;
  int64_t labels_ = 0;
};

std::string describe(const PipelineUnits& u, const Cluster& cluster, const std::vector<PipelineStage>& stages) {
  std::string out;
  for (const PipelineStage& s : stages) {
    out += out.empty() ? "" : "; ";
    out += cluster.devices[s.device].name + " " + u.first[s.begin] + ".." + u.last[s.end - 1];
  }
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
  for (int32_t i = 0; i < U; ++i) {
    pre_param_[i + 1] = pre_param_[i] + units.param_bytes[i];
    pre_act_[i + 1] = pre_act_[i] + units.act_bytes[i];
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

PipelineCost::Terms PipelineCost::stage(int32_t i, int32_t j, int32_t d, int32_t prev, int32_t s, int32_t S) const {
  Terms t;
  const double work = pre_fwd_[d][j] - pre_fwd_[d][i] + pre_bwd_[d][j] - pre_bwd_[d][i];
  const int64_t bytes = units_.in_bytes[i][j];
  const int32_t count = units_.in_count[i][j];
  double cf = 0.0, cb = 0.0;
  if (prev >= 0 && count > 0) {
    cf = costs_.transfer_seconds(DeviceId(prev), DeviceId(d), bytes) +
         (count - 1) * costs_.transfer_seconds(DeviceId(prev), DeviceId(d), 0);
    cb = costs_.transfer_seconds(DeviceId(d), DeviceId(prev), bytes) +
         (count - 1) * costs_.transfer_seconds(DeviceId(d), DeviceId(prev), 0);
  }
  t.add = work + cf + cb + (s == 0 ? pre_upd_[d][j] - pre_upd_[d][i] : 0.0);
  t.max = std::max({work, cf, cb});
  const int32_t M = spec_.microbatches;
  const int32_t in_flight = spec_.schedule == PipelineSchedule::GPipe || S <= 0 ? M : std::max(1, std::min(M, S - s));
  t.memory = 2 * (pre_param_[j] - pre_param_[i]) + in_flight * (pre_act_[j] - pre_act_[i] + bytes);
  return t;
}

PipelineSplitCost PipelineCost::evaluate(const std::vector<PipelineStage>& stages) const {
  PipelineSplitCost out;
  const int32_t S = static_cast<int32_t>(stages.size());
  PLACER_CHECK(S > 0 && stages.front().begin == 0 && stages.back().end == units_.count, "pipeline dp: a split");
  out.fits = true;
  for (int32_t s = 0; s < S; ++s) {
    const PipelineStage& st = stages[s];
    PLACER_CHECK(st.begin < st.end && (s == 0 || stages[s - 1].end == st.begin), "pipeline dp: stage ", s);
    const Terms t = stage(st.begin, st.end, st.device, s == 0 ? -1 : stages[s - 1].device, s, S);
    out.sum_s += t.add;
    out.bottleneck_s = std::max(out.bottleneck_s, t.max);
    if (!fits(t, st.device) && out.fits) {
      out.fits = false;
      out.overflow = "stage " + std::to_string(s) + " needs " + format_bytes(t.memory) + ", has " +
                     format_bytes(capacity_[st.device]);
    }
  }
  out.total_s = out.sum_s + (spec_.microbatches - 1) * out.bottleneck_s;
  return out;
}

PipelineDpResult solve_pipeline_dp(const PipelineCost& cost) {
  const int32_t U = cost.units().count, D = cost.units().devices;
  PLACER_CHECK(D >= 1 && D <= 64, "pipeline dp: devices ", D);
  // GPipe's memory does not depend on the number of stages: one DP. 1F1B's
  // does (min(M, S - s) in flight): one DP per S.
  std::vector<int32_t> stage_counts;
  if (cost.spec().schedule == PipelineSchedule::GPipe)
    stage_counts.push_back(0);
  else
    for (int32_t S = 1; S <= std::min(U, D); ++S) stage_counts.push_back(S);
  PipelineDpResult out;
  double best = kInf;
  for (int32_t S : stage_counts) {
    SplitSearch search(cost, S);
    const Label* l = search.run();
    out.labels += search.labels();
    if (!l || search.total(*l) >= best) continue;
    best = search.total(*l);
    out.stages.clear();
    int32_t end = U;
    for (const Label* at = l; at->from; at = &(*at->from)[at->from_index]) {
      out.stages.push_back({at->begin, end, at->device});
      end = at->begin;
    }
    std::reverse(out.stages.begin(), out.stages.end());
  }
  if (out.stages.empty())
    throw NoFeasiblePlacement("dp (pipeline): no split into contiguous stages fits device memory under " +
                              std::string(schedule_name(cost.spec().schedule)) + " with " +
                              std::to_string(cost.spec().microbatches) +
                              " micro-batches (params, a gradient buffer and the activations in flight)");
  out.cost = cost.evaluate(out.stages);
  return out;
}

PlaceResult place_pipeline_dp(const PlaceContext& ctx, Clock::time_point started) {
  const Graph& g = *ctx.graph;
  const Cluster& cluster = *ctx.cluster;
  const CostModel& env_costs = ctx.env->costs();
  const CostModel roofline = env_costs.ops() == g.size() ? CostModel() : CostModel::roofline(g, cluster);
  const CostModel& costs = env_costs.ops() == g.size() ? env_costs : roofline;
  const PipelineSpec spec = ctx.env->options().pipeline;
  const int64_t max_units = option_int(ctx, "max_units", 128);
  if (max_units < 1 || max_units > 4096)
    throw InputError("dp option 'max_units': expected 1 to 4096, got " + std::to_string(max_units));
  const PipelineUnits units = make_pipeline_units(g, costs, static_cast<int32_t>(max_units));
  std::vector<int64_t> capacity(cluster.size());
  for (int32_t d = 0; d < cluster.size(); ++d)
    capacity[d] = static_cast<int64_t>(kMemoryFraction * static_cast<double>(cluster.devices[d].memory_bytes));
  const PipelineCost cost(units, costs, capacity, spec);
  const PipelineDpResult r = solve_pipeline_dp(cost);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "dp (pipeline, %s, %d micro-batches): model mini-batch %.6g s (one micro-batch through and back "
                "%.6g s, bottleneck %.6g s) over %d units, %zu stages: ",
                schedule_name(spec.schedule), spec.microbatches, r.cost.total_s, r.cost.sum_s, r.cost.bottleneck_s,
                units.count, r.stages.size());
  PlaceResult out = finish(ctx, pipeline_op_devices(units, r.stages), "dp", started,
                           std::string(buf) + describe(units, cluster, r.stages));
  out.stats["pipeline_model_s"] = r.cost.total_s;
  out.stats["pipeline_sum_s"] = r.cost.sum_s;
  out.stats["pipeline_bottleneck_s"] = r.cost.bottleneck_s;
  out.stats["stages"] = static_cast<double>(r.stages.size());
  out.stats["units"] = static_cast<double>(units.count);
  out.stats["dp_labels"] = static_cast<double>(r.labels);
  return out;
}

}  // namespace placer
