// The executor's op times: a CPU op's from the host clock, a GPU op's from its
// CUDA events once the step is synchronized; and the step's timeline.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "executor_step.h"
#include "internal.h"

namespace placer {

void Executor::record_cpu_op(Step& s, int32_t id, int32_t device, Clock::time_point t0, Clock::time_point t1) {
  const DeviceCtx& dev = devices_[device];
  if (dev.kind == DeviceKind::Cuda) return;
  const double took = std::chrono::duration<double>(t1 - t0).count();
  s.busy[device] += took;
  if (!s.session->step_op_seconds.empty()) s.session->step_op_seconds[id] = took;
  if (s.timeline) {
    const Op& op = s.plan->graph->op(OpId(id));
    TimelineEvent ev;
    ev.name = op.name;
    ev.lane = dev.name;
    ev.start_s = std::chrono::duration<double>(t0 - s.start).count();
    ev.duration_s = took;
    ev.category = phase_name(op.phase);
    workers_[device]->events.push_back(std::move(ev));
  }
}

void Executor::gpu_times(Step& s) {
  const KernelPlan& plan = *s.plan;
  Session& session = *s.session;
  for (int32_t id = 0; id < static_cast<int32_t>(plan.ops.size()); ++id) {
    const int32_t device = plan.ops[id].device;
    const DeviceCtx& dev = devices_[device];
    double begin = 0, end = 0;
    if (!op_span(dev, id, begin, end)) continue;
    s.busy[device] += end - begin;
    if (!session.step_op_seconds.empty()) session.step_op_seconds[id] = end - begin;
    if (s.timeline) {
      const Op& op = plan.graph->op(OpId(id));
      TimelineEvent ev;
      ev.name = op.name;
      ev.lane = dev.lane;
      // The step's mark on this GPU is taken with the host clock's start.
      ev.start_s = begin;
      ev.duration_s = end - begin;
      ev.category = phase_name(op.phase);
      workers_[device]->events.push_back(std::move(ev));
    }
  }
}

void Executor::collect_timeline(std::vector<TimelineEvent>& timeline) {
  for (auto& w : workers_)
    for (auto& ev : w->events) timeline.push_back(std::move(ev));
  std::sort(timeline.begin(), timeline.end(),
            [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_s < b.start_s; });
}

}  // namespace placer
