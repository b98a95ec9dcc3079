// Shared by the pipeline runtime tests (tests/runtime) and their GPU twin
// (tests/gpu): contiguous stage placements, one set of values fed to a plain
// training step at batch B and to a pipelined mini-batch of M micro-batches of
// B / M (each micro-batch copy "x@mbK" of an input gets its slice of the
// batch), and the parameters after the two updates compared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "placer/frontends/builders.h"
#include "placer/graphs/algorithms.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/pipeline.h"
#include "placer/graphs/placement.h"
#include "placer/runtime/runtime.h"

namespace placer::rt_test {

// Contiguous stages: the forward ops split into `stages` runs of equal count in
// op order (stage s on device first + s), backward and update ops with their
// forward (or param) op, each co-location group on the device of its first op.
inline Placement stages_of(const Graph& g, int stages, int first = 0) {
  std::vector<int32_t> forward;
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase == Phase::Forward) forward.push_back(i);
  Placement p;
  p.device_of.assign(g.size(), DeviceId(first));
  for (size_t k = 0; k < forward.size(); ++k)
    p.device_of[forward[k]] = DeviceId(first + static_cast<int32_t>(k * stages / forward.size()));
  const Grouping groups = colocation_groups(g);
  for (const auto& members : groups.members)
    for (OpId op : members) p.device_of[op.value] = p.device_of[members.front().value];
  return p;
}

// The same stages with devices 0 and 1 swapped (the first stage on cpu:1).
inline Placement swap_devices(Placement p) {
  for (DeviceId& d : p.device_of) d = DeviceId(1 - d.value);
  return p;
}

// The dimension of a full-batch input that the micro-batch input splits M
// ways: the one dimension where the shapes differ; -1 when they are equal.
inline int batch_dim(const TensorSpec& full, const TensorSpec& part, int M) {
  EXPECT_EQ(full.shape.size(), part.shape.size());
  int dim = -1;
  for (size_t d = 0; d < full.shape.size() && d < part.shape.size(); ++d) {
    if (full.shape[d] == part.shape[d]) continue;
    EXPECT_EQ(dim, -1) << "two dimensions differ";
    EXPECT_EQ(full.shape[d], part.shape[d] * M) << "dimension " << d << " is not split " << M << " ways";
    dim = static_cast<int>(d);
  }
  return dim;
}

// Slice k of M along `dim` of a row-major tensor of `shape`.
inline std::vector<float> batch_slice(const std::vector<float>& v, const std::vector<int64_t>& shape, int dim, int k,
                                      int M) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t part = shape[dim] / M;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(outer * part * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const auto from = v.begin() + (o * shape[dim] + k * part) * inner;
    out.insert(out.end(), from, from + part * inner);
  }
  return out;
}

// Seeded values for an input or param: floats normal (params uniform in
// +-1/sqrt(fan_in)), integers in [0, the input's bound), bools 0/1.
inline std::vector<float> seeded_values(const Op& op, std::mt19937_64& rng) {
  const TensorSpec& spec = op.outputs.at(0);
  std::vector<float> v(static_cast<size_t>(spec.numel()));
  if (is_floating(spec.dtype) && op.type == op_types::kParam) {
    const int64_t fan_in = spec.shape.size() >= 2 ? spec.numel() / spec.shape[0] : std::max<int64_t>(1, v.size());
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : v) x = u(rng) / std::sqrt(static_cast<float>(fan_in));
  } else if (is_floating(spec.dtype)) {
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (float& x : v) x = n(rng);
  } else {
    int64_t high = spec.dtype == DType::Bool ? 2 : 1;
    if (spec.dtype != DType::Bool && !op.args.empty() && op.args[0].kind == Arg::Kind::Int)
      high = std::max<int64_t>(1, op.args[0].i);
    std::uniform_int_distribution<int64_t> u(0, high - 1);
    for (float& x : v) x = static_cast<float>(u(rng));
  }
  return v;
}

struct PipelineFeeds {
  StepValues plain;                 // for the training graph at batch B
  StepValues piped;                 // for the unrolled mini-batch of M micro-batches of B / M
  std::vector<std::string> params;  // every param op's name
  int split_inputs = 0;             // inputs sliced along a batch dimension
};

// Every input and param of `plain` gets a value (from `given` when it holds
// one of the right size, else seeded); the unrolled graph gets the same params
// and, per micro-batch copy of an input, its slice of the batch (all of it
// when the input has no batch dimension).
inline PipelineFeeds pipeline_feeds(const Graph& plain, const Graph& micro, const PipelineGraph& piped, uint64_t seed,
                                    const std::map<std::string, std::vector<float>>& given = {}) {
  const int M = piped.spec.microbatches;
  PipelineFeeds f;
  std::mt19937_64 rng(seed);
  for (const Op& op : plain.ops()) {
    if (op.type != op_types::kInput && op.type != op_types::kParam) continue;
    const auto it = given.find(op.name);
    const std::vector<float> v = it != given.end() && static_cast<int64_t>(it->second.size()) == op.outputs[0].numel()
                                     ? it->second
                                     : seeded_values(op, rng);
    f.plain.tensors[op.name] = v;
    if (op.type == op_types::kParam) {
      f.params.push_back(op.name);
      f.piped.tensors[op.name] = v;
      continue;
    }
    const auto small = micro.find(op.name);
    EXPECT_TRUE(small.has_value()) << "input " << op.name << " is not in the micro-batch graph";
    if (!small) continue;
    const int dim = batch_dim(op.outputs[0], micro.op(*small).outputs.at(0), M);
    f.split_inputs += dim >= 0;
    for (int k = 0; k < M; ++k)
      f.piped.tensors[op.name + "@mb" + std::to_string(k)] =
          dim < 0 ? v : batch_slice(v, op.outputs[0].shape, dim, k, M);
  }
  return f;
}

// Sets every sgd op's learning rate (a larger one makes the updates, and so
// any error in them, stand out above the tolerance).
inline void set_learning_rate(Graph& g, double lr) {
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).type == op_types::kSgd) g.mutable_op(OpId(i)).args.at(0) = Arg::real(lr);
}

// Tiny builder models whose loss is a mean over the batch (options but the batch).
inline const std::map<std::string, std::map<std::string, int64_t>>& pipeline_builders() {
  static const std::map<std::string, std::map<std::string, int64_t>> options = {
      {"mlp", {{"input", 12}, {"width", 10}, {"classes", 5}, {"layers", 3}}},
      {"rnnlm", {{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"vocab", 11}}},
      {"nmt", {{"layers", 2}, {"hidden", 8}, {"steps", 3}, {"vocab", 11}}},
      {"transformer",
       {{"layers", 1}, {"dec_layers", 1}, {"d_model", 8}, {"heads", 2}, {"ffn", 16}, {"seq", 4}, {"vocab", 13}}},
  };
  return options;
}

// One of them at `batch`, with lr 0.5: the updates stand far above the
// tolerance, so a wrong scale shows.
inline Graph pipeline_builder(const std::string& name, int64_t batch) {
  BuilderOptions o;
  o.values = pipeline_builders().at(name);
  o.values["batch"] = batch;
  Graph g = build_graph(name, o);
  set_learning_rate(g, 0.5);
  return g;
}

struct ParamDiff {
  double worst = 0;  // max |plain - piped| / max(1, |plain|) over every param element
  std::string worst_param;
  double largest_update = 0;  // max |plain after - before|: what a wrong update would be off by
  int params = 0;
};

inline ParamDiff compare_params(const PipelineFeeds& f, const StepValues& plain, const StepValues& piped) {
  ParamDiff d;
  for (const std::string& name : f.params) {
    const auto a = plain.tensors.find(name), b = piped.tensors.find(name);
    EXPECT_TRUE(a != plain.tensors.end() && b != piped.tensors.end()) << "no value after the step for " << name;
    if (a == plain.tensors.end() || b == piped.tensors.end()) continue;
    EXPECT_EQ(a->second.size(), b->second.size()) << name;
    const std::vector<float>& before = f.plain.tensors.at(name);
    for (size_t i = 0; i < a->second.size() && i < b->second.size(); ++i) {
      const double x = a->second[i], y = b->second[i];
      const double err = std::fabs(x - y) / std::max(1.0, std::fabs(x));
      if (!(err <= d.worst)) {
        d.worst = std::isnan(err) ? INFINITY : err;
        d.worst_param = name;
      }
      d.largest_update = std::max(d.largest_update, std::fabs(x - before[i]));
    }
    ++d.params;
  }
  return d;
}

// The mean of the micro-batches' scalar losses against the plain step's loss:
// max relative difference over every scalar float output "x" with copies "x@mbK".
inline double loss_diff(const StepValues& plain, const StepValues& piped, int M, int* compared) {
  double worst = 0;
  *compared = 0;
  for (const auto& [name, v] : plain.tensors) {
    if (v.size() != 1 || !piped.tensors.count(name + "@mb0")) continue;
    double mean = 0;
    for (int k = 0; k < M; ++k) mean += piped.tensors.at(name + "@mb" + std::to_string(k)).at(0);
    mean /= M;
    worst = std::max(worst, std::fabs(mean - v[0]) / std::max(1.0, std::fabs(static_cast<double>(v[0]))));
    ++*compared;
  }
  return worst;
}

}  // namespace placer::rt_test
