// The executor's plan is the shared execution rules (graphs/exec_plan.h), the
// ones the simulator runs on: same copies, uses, views and transfers.
#include <gtest/gtest.h>
#include <sched.h>

#include <random>

#include "../../runtime/src/internal.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/exec_plan.h"
#include "placer/graphs/training.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

void expect_same_plan(const Graph& g, const Placement& placement, int32_t devices) {
  const KernelPlan plan = make_plan(g, placement, devices, false);
  const ExecRules rules(g);
  std::vector<int32_t> device_of;
  for (const DeviceId d : placement.device_of) device_of.push_back(d.value);
  StepPlan step;
  plan_step(rules, device_of.data(), devices, step);

  const int32_t T = rules.tensors;
  ASSERT_EQ(static_cast<int32_t>(plan.slots.size()), T + step.transfers());
  ASSERT_EQ(static_cast<int32_t>(plan.transfers.size()), step.transfers());
  for (int32_t t = 0; t < T; ++t) {
    const SlotPlan& s = plan.slots[t];
    EXPECT_EQ(s.op, rules.tensor_op[t]);
    EXPECT_EQ(s.device, device_of[s.op]);
    EXPECT_EQ(s.bytes, rules.alloc_bytes[t]);
    EXPECT_EQ(s.persistent, rules.resident[s.op] != 0);
    if (!s.persistent) {
      EXPECT_EQ(s.refs, step.tensor_uses[t]) << g.op(OpId(s.op)).name;
    }
    EXPECT_EQ(s.view_of >= 0, rules.view_base[t] >= 0);
  }
  for (int32_t x = 0; x < step.transfers(); ++x) {
    const TransferPlan& tr = plan.transfers[x];
    EXPECT_EQ(tr.src, step.xfer_tensor[x]);
    EXPECT_EQ(plan.slots[tr.dst].device, step.xfer_dst[x]);
    EXPECT_EQ(plan.slots[tr.dst].refs, step.xfer_uses[x]);
  }
  for (int32_t o = 0; o < rules.ops; ++o) {
    EXPECT_EQ(plan.deps[o], rules.in_begin[o + 1] - rules.in_begin[o]);
    // Released once per use the plan counts: each unique input slot once.
    EXPECT_EQ(static_cast<int32_t>(plan.ops[o].release_slots.size()), rules.in_begin[o + 1] - rules.in_begin[o]);
  }
}

TEST(RuntimePlan, IsTheSimulatorsPlan) {
  BuilderOptions options;
  options.values = {{"batch", 4}};
  const Graph mlp = build_graph("mlp", options);
  const Graph square = make_training_graph(rt_test::square_loss_graph(), 0.1);
  std::mt19937 rng(3);
  for (const Graph* g : {&mlp, &square}) {
    for (int trial = 0; trial < 5; ++trial) {
      Placement p;
      // Co-location groups are not needed for planning: any device per op.
      for (int64_t i = 0; i < g->size(); ++i) p.device_of.push_back(DeviceId(static_cast<int32_t>(rng() % 3)));
      SCOPED_TRACE(g->name + " trial " + std::to_string(trial));
      expect_same_plan(*g, p, 3);
    }
  }
}

// A CPU device's intra-op threads come from the cores this process may run on (its affinity mask), not
// the machine's: cpu:2 under `taskset -c 0,1` on an 8-core machine gave each device 4 threads on one core.
TEST(RuntimeDevices, ThreadsFollowTheAffinityMask) {
  cpu_set_t old_set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(old_set), &old_set), 0);
  int cores = 0;
  rt_test::with_one_core([&] { cores = usable_cores(); });
  EXPECT_EQ(cores, 1);
  EXPECT_EQ(usable_cores(), CPU_COUNT(&old_set));
}

}  // namespace
}  // namespace placer
