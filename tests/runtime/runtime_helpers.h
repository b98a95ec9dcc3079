// Shared by the runtime tests (tests/runtime) and the GPU tests (tests/gpu):
// hand-built graphs, placements and value comparisons.
#pragma once

#include <sched.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "placer/graphs/algorithms.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"
#include "placer/runtime/runtime.h"

// Skips the calling test where no CUDA GPU is visible (CI; the GPU tests run on a lent machine).
#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    if (!placer::cuda_available()) GTEST_SKIP() << "no CUDA GPU visible here"; \
  } while (0)

namespace placer::rt_test {

inline Op make(const std::string& name, const std::string& type, std::vector<TensorRef> inputs, std::vector<Arg> args,
               std::vector<TensorSpec> outputs) {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.args = std::move(args);
  op.outputs = std::move(outputs);
  return op;
}

inline TensorSpec f32(std::vector<int64_t> shape) { return TensorSpec{std::move(shape), DType::Float32}; }

inline Op param(const std::string& name, std::vector<int64_t> shape) {
  Op op = make(name, op_types::kParam, {}, {}, {f32(std::move(shape))});
  op.param_bytes = op.outputs[0].bytes();
  return op;
}

// loss = sum(w * w) over a [2,3] parameter.
inline Graph square_loss_graph() {
  Graph g;
  g.name = "square";
  OpId w = g.add_op(param("w", {2, 3}));
  OpId sq = g.add_op(make("sq", "aten::mul.Tensor", {{w, 0}, {w, 0}}, {Arg::tensor(0), Arg::tensor(1)}, {f32({2, 3})}));
  g.add_op(make("loss", "aten::sum", {{sq, 0}}, {Arg::tensor(0), Arg::none()}, {f32({})}));
  return g;
}

// A two-layer MLP by hand: linear -> relu -> linear -> cross entropy.
inline Graph hand_mlp() {
  Graph g;
  g.name = "hand_mlp";
  OpId x = g.add_op(make("x", op_types::kInput, {}, {}, {f32({8, 6})}));
  OpId w1 = g.add_op(param("w1", {5, 6}));
  OpId b1 = g.add_op(param("b1", {5}));
  OpId l1 = g.add_op(make("l1", "aten::linear", {{x, 0}, {w1, 0}, {b1, 0}},
                          {Arg::tensor(0), Arg::tensor(1), Arg::tensor(2)}, {f32({8, 5})}));
  OpId r1 = g.add_op(make("r1", "aten::relu", {{l1, 0}}, {Arg::tensor(0)}, {f32({8, 5})}));
  OpId w2 = g.add_op(param("w2", {3, 5}));
  OpId l2 = g.add_op(
      make("l2", "aten::linear", {{r1, 0}, {w2, 0}}, {Arg::tensor(0), Arg::tensor(1), Arg::none()}, {f32({8, 3})}));
  Op labels = make("labels", op_types::kInput, {}, {Arg::integer(3)}, {TensorSpec{{8}, DType::Int64}});
  OpId y = g.add_op(labels);
  g.add_op(make("loss", "aten::cross_entropy_loss", {{l2, 0}, {y, 0}},
                {Arg::tensor(0), Arg::tensor(1), Arg::none(), Arg::integer(1), Arg::integer(-100), Arg::real(0.0)},
                {f32({})}));
  return g;
}

inline Cluster cpus(int n) { return parse_device_list("cpu:" + std::to_string(n)); }
// The cores this process may run on (cpu:N pins each device to its own share of them).
inline int allowed_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

// A placement honouring co-location: each group on a seeded random device.
inline Placement random_placement(const Graph& g, int devices, uint32_t seed) {
  Grouping groups = colocation_groups(g);
  std::mt19937 rng(seed);
  Placement p;
  p.device_of.assign(g.size(), DeviceId(0));
  for (const auto& members : groups.members) {
    DeviceId d(static_cast<int32_t>(rng() % devices));
    for (OpId op : members) p.device_of[op.value] = d;
  }
  return p;
}

// placer::round_robin_groups over the first `devices` devices.
inline Placement round_robin_groups(const Graph& g, int devices) {
  std::vector<DeviceId> ids;
  for (int32_t d = 0; d < devices; ++d) ids.push_back(DeviceId(d));
  return placer::round_robin_groups(g, ids);
}

inline void expect_same_values(const StepValues& a, const StepValues& b, double tol, const std::string& what) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << what;
  for (const auto& [name, va] : a.tensors) {
    auto it = b.tensors.find(name);
    ASSERT_NE(it, b.tensors.end()) << what << ": " << name;
    const auto& vb = it->second;
    ASSERT_EQ(va.size(), vb.size()) << what << ": " << name;
    for (size_t i = 0; i < va.size(); ++i)
      ASSERT_NEAR(va[i], vb[i], tol * (1.0 + std::fabs(va[i]))) << what << ": " << name << "[" << i << "]";
  }
}

struct BuilderCase {
  std::string name;
  std::map<std::string, int64_t> options;
};

inline std::vector<BuilderCase> tiny_builders() {
  return {
      {"mlp", {{"batch", 4}, {"input", 12}, {"width", 10}, {"classes", 5}, {"layers", 3}}},
      {"rnnlm", {{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"batch", 2}, {"vocab", 11}}},
      {"nmt", {{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"batch", 2}, {"vocab", 11}}},
      {"transformer",
       {{"layers", 1},
        {"dec_layers", 1},
        {"d_model", 8},
        {"heads", 2},
        {"ffn", 16},
        {"seq", 4},
        {"batch", 2},
        {"vocab", 13}}},
      {"resnet", {{"batch", 1}, {"image", 32}, {"classes", 4}, {"width_div", 64}, {"depth", 50}}},
      {"inception_v3", {{"batch", 1}, {"image", 75}, {"classes", 4}, {"width_div", 64}}},
  };
}

// A fixed number of measured steps after `warmup` unmeasured ones.
inline MeasureOptions fixed_steps(int warmup, int steps) {
  MeasureOptions o;
  o.warmup_steps = warmup;
  o.measured_steps = o.max_steps = steps;
  return o;
}

// Runs `body` with this thread's affinity mask narrowed to its first allowed core, then restores it
// (usable_cores, device_threads and parse_device_list read the calling thread's mask).
inline void with_one_core(const std::function<void()>& body) {
  cpu_set_t old_set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(old_set), &old_set), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &old_set)) first = c;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // this thread only
  try {
    body();
  } catch (...) {
    sched_setaffinity(0, sizeof(old_set), &old_set);
    throw;
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(old_set), &old_set), 0);
}

}  // namespace placer::rt_test
