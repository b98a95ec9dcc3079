#include "placer/env/profile_rounds.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/stats.h"

namespace placer {

namespace {

// Each CPU device's fastest step (matched by name), so that apply_cpu_steps sets the fastest op times beside
// the fastest steps, not beside the first round's.
void min_cpu_steps(Profile& kept, const Profile& p) {
  if (kept.cpu_steps.empty()) {
    kept.cpu_steps = p.cpu_steps;
    return;
  }
  for (DeviceStep& k : kept.cpu_steps)
    for (const DeviceStep& s : p.cpu_steps)
      if (s.device == k.device && s.step_s > 0) k.step_s = k.step_s > 0 ? std::min(k.step_s, s.step_s) : s.step_s;
}

// The GPU step's fit and the mixed step each of the round that measured it fastest: a fit (scale and overhead)
// and a probe reading go with the step they were taken on.
void min_gpu_and_mixed_steps(Profile& kept, const Profile& p) {
  if (p.gpu_step_s > 0 && (kept.gpu_step_s <= 0 || p.gpu_step_s < kept.gpu_step_s)) {
    kept.gpu_step_s = p.gpu_step_s;
    kept.gpu_op_scale = p.gpu_op_scale;
    kept.gpu_op_overhead_s = p.gpu_op_overhead_s;
  }
  if (p.mixed.step_s > 0 && p.mixed.devices == kept.mixed.devices &&
      (kept.mixed.step_s <= 0 || p.mixed.step_s < kept.mixed.step_s)) {
    kept.mixed.step_s = p.mixed.step_s;
    kept.mixed.core_rtt_s = p.mixed.core_rtt_s;
  }
}

}  // namespace

void merge_profile_minimum(Profile& kept, const Profile& p, bool first) {
  if (first) {
    kept = p;
    return;
  }
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < kept.ops.size(); ++i) index[{kept.ops[i].op, kept.ops[i].device}] = i;
  for (const OpTiming& t : p.ops) {
    auto it = index.find({t.op, t.device});
    if (it == index.end()) continue;
    OpTiming& k = kept.ops[it->second];
    k.seconds = std::min(k.seconds, t.seconds);
    if (t.contended_seconds > 0)
      k.contended_seconds =
          k.contended_seconds > 0 ? std::min(k.contended_seconds, t.contended_seconds) : t.contended_seconds;
  }
  for (size_t l = 0; l < p.links.size() && l < kept.links.size(); ++l) {
    kept.links[l].alpha_s = std::min(kept.links[l].alpha_s, p.links[l].alpha_s);
    kept.links[l].beta_Bps = std::max(kept.links[l].beta_Bps, p.links[l].beta_Bps);
  }
  kept.per_op_overhead_s = std::min(kept.per_op_overhead_s, p.per_op_overhead_s);
  min_cpu_steps(kept, p);
  min_gpu_and_mixed_steps(kept, p);
}

namespace {

struct Mean {  // a mean over the values given
  double sum = 0.0;
  int n = 0;
  void add(double v) { sum += v, ++n; }
  double get(double none) const { return n ? sum / n : none; }
};

// Each op's time, and its time beside other work, over the rounds that timed it.
void mean_ops(const std::vector<Profile>& rounds, Profile& mean) {
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < mean.ops.size(); ++i) index[{mean.ops[i].op, mean.ops[i].device}] = i;
  std::vector<Mean> op_s(mean.ops.size()), contended(mean.ops.size());
  for (const Profile& r : rounds)
    for (const OpTiming& t : r.ops) {
      const auto it = index.find({t.op, t.device});
      if (it == index.end()) continue;
      op_s[it->second].add(t.seconds);
      if (t.contended_seconds > 0) contended[it->second].add(t.contended_seconds);
    }
  for (size_t i = 0; i < mean.ops.size(); ++i) {
    mean.ops[i].seconds = op_s[i].get(mean.ops[i].seconds);
    mean.ops[i].contended_seconds = contended[i].get(0.0);
  }
}

// Latency and seconds per byte (1 / beta) of each link.
void mean_links(const std::vector<Profile>& rounds, Profile& mean) {
  std::vector<Mean> alpha(mean.links.size()), per_byte(mean.links.size());
  for (const Profile& r : rounds)
    for (size_t l = 0; l < mean.links.size() && l < r.links.size(); ++l) {
      alpha[l].add(r.links[l].alpha_s);
      if (r.links[l].beta_Bps > 0) per_byte[l].add(1.0 / r.links[l].beta_Bps);
    }
  for (size_t l = 0; l < mean.links.size(); ++l) {
    mean.links[l].alpha_s = alpha[l].get(mean.links[l].alpha_s);
    const double spb = per_byte[l].get(0.0);
    mean.links[l].beta_Bps = spb > 0 ? 1.0 / spb : 0.0;
  }
}

// The executor's overheads, the GPU's step and scale, and the mixed step (of the first round's devices).
void mean_steps_and_overheads(const std::vector<Profile>& rounds, Profile& mean) {
  Mean overhead, gpu_overhead, gpu_scale, gpu_step, mixed, mixed_rtt;
  for (const Profile& r : rounds) {
    overhead.add(r.per_op_overhead_s);
    if (r.gpu_op_overhead_s >= 0) gpu_overhead.add(r.gpu_op_overhead_s);
    if (r.gpu_step_s > 0) gpu_step.add(r.gpu_step_s);
    gpu_scale.add(r.gpu_op_scale);
    if (r.mixed.step_s > 0 && r.mixed.devices == mean.mixed.devices) mixed.add(r.mixed.step_s);
    if (r.mixed.core_rtt_s > 0 && r.mixed.devices == mean.mixed.devices) mixed_rtt.add(r.mixed.core_rtt_s);
  }
  mean.per_op_overhead_s = overhead.get(mean.per_op_overhead_s);
  mean.gpu_op_overhead_s = gpu_overhead.get(-1.0);
  mean.gpu_step_s = gpu_step.get(-1.0);
  mean.gpu_op_scale = gpu_scale.get(1.0);
  mean.mixed.step_s = mixed.get(-1.0);
  mean.mixed.core_rtt_s = mixed_rtt.get(-1.0);
}

// The first CPU device's mean step, and each other device at the median of its per-round ratio to the first.
void mean_cpu_steps(const std::vector<Profile>& rounds, Profile& mean) {
  if (mean.cpu_steps.empty()) return;
  Mean first_step;
  for (const Profile& r : rounds)
    for (const DeviceStep& s : r.cpu_steps)
      if (s.device == mean.cpu_steps[0].device) first_step.add(s.step_s);
  mean.cpu_steps[0].step_s = first_step.get(mean.cpu_steps[0].step_s);
  // The simulator uses the devices' steps as ratios (apply_cpu_steps). A round measures the devices interleaved, so
  // its own ratio cancels the round's drift; the median over the rounds keeps one round in a slow spell from moving
  // it (nmt, fidelity_s35: one round of four read cpu:0 1.48x cpu:1, the others 0.97-1.01; the mean of the steps
  // gave 1.12 and the simulator ranked at 0.730, the median of the ratios 0.899).
  for (size_t k = 1; k < mean.cpu_steps.size(); ++k) {
    std::vector<double> ratios;
    Mean step_k;
    for (const Profile& r : rounds) {
      double first = 0.0, step = 0.0;
      for (const DeviceStep& s : r.cpu_steps) {
        if (s.device == mean.cpu_steps[0].device) first = s.step_s;
        if (s.device == mean.cpu_steps[k].device) step = s.step_s, step_k.add(s.step_s);
      }
      if (first > 0 && step > 0) ratios.push_back(step / first);
    }
    mean.cpu_steps[k].step_s = ratios.empty() ? step_k.get(mean.cpu_steps[k].step_s)
                                              : mean.cpu_steps[0].step_s * quantile(std::move(ratios), 0.5);
  }
}

}  // namespace

Profile mean_profile(const std::vector<Profile>& rounds) {
  if (rounds.empty()) throw InputError("mean_profile: no rounds");
  Profile mean = rounds.front();
  mean_ops(rounds, mean);
  mean_links(rounds, mean);
  mean_steps_and_overheads(rounds, mean);
  mean_cpu_steps(rounds, mean);
  return mean;
}

}  // namespace placer
