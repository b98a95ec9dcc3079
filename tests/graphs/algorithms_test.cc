#include "placer/graphs/algorithms.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/validate.h"
#include "tiny_graphs.h"

namespace placer {
namespace {

using testing::f32;
using testing::make_op;
using testing::tiny_forward;
using testing::tiny_training;

std::vector<OpId> ids(std::initializer_list<int32_t> values) {
  std::vector<OpId> out;
  for (int32_t v : values) out.emplace_back(v);
  return out;
}

// a -> b -> d, a -> c -> d, e alone.  ids a=0 b=1 c=2 d=3 e=4
Graph diamond() {
  Graph g;
  g.name = "diamond";
  OpId a = g.add_op(make_op("a", op_types::kInput, {}, {f32({10})}));  // 40 bytes
  OpId b = g.add_op(make_op("b", "aten::relu", {{a, 0}}, {f32({10})}, 10));
  OpId c = g.add_op(make_op("c", "aten::tanh", {{a, 0}}, {f32({20})}, 20));  // 80 bytes
  g.add_op(make_op("d", "custom::join", {{b, 0}, {c, 0}}, {f32({5})}, 5));
  g.add_op(make_op("e", op_types::kInput, {}, {f32({1})}));
  return g;
}

TEST(Algorithms, TopologicalOrderIsIdOrder) { EXPECT_EQ(topological_order(diamond()), ids({0, 1, 2, 3, 4})); }

TEST(Algorithms, AncestorsAndDescendants) {
  const Graph g = diamond();
  EXPECT_EQ(ancestors(g, OpId(3)), ids({0, 1, 2}));
  EXPECT_EQ(ancestors(g, OpId(1)), ids({0}));
  EXPECT_EQ(ancestors(g, OpId(0)), ids({}));
  EXPECT_EQ(descendants(g, OpId(0)), ids({1, 2, 3}));
  EXPECT_EQ(descendants(g, OpId(2)), ids({3}));
  EXPECT_EQ(descendants(g, OpId(4)), ids({}));
  const Graph t = tiny_training();
  // w (1) feeds fc (3) -> relu -> loss -> and every backward op, and w_sgd.
  EXPECT_EQ(descendants(t, OpId(1)), ids({3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(ancestors(t, OpId(9)), ids({0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Algorithms, CriticalPath) {
  const Graph g = diamond();
  const std::vector<double> cost = {1, 5, 2, 1, 3};
  const CriticalPath p = critical_path(g, [&](OpId op) { return cost[op.value]; });
  EXPECT_DOUBLE_EQ(p.length, 7.0);  // a(1) + b(5) + d(1)
  EXPECT_EQ(p.ops, ids({0, 1, 3}));
  // e alone longest.
  const std::vector<double> cost2 = {1, 5, 2, 1, 30};
  const CriticalPath q = critical_path(g, [&](OpId op) { return cost2[op.value]; });
  EXPECT_DOUBLE_EQ(q.length, 30.0);
  EXPECT_EQ(q.ops, ids({4}));
  EXPECT_EQ(critical_path(Graph{}, [](OpId) { return 1.0; }).ops.size(), 0u);
  // Unit costs on the training graph: b -> fc -> relu -> loss -> 3 grads -> w_sgd = 8 ops
  // (ties go to the first input, fc's inputs are b, x, w; and to the first sink).
  const CriticalPath t = critical_path(tiny_training(), [](OpId) { return 1.0; });
  EXPECT_DOUBLE_EQ(t.length, 8.0);
  EXPECT_EQ(t.ops, ids({2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(Algorithms, Totals) {
  EXPECT_DOUBLE_EQ(total_flops(tiny_forward()), 64.0);
  EXPECT_DOUBLE_EQ(total_flops(tiny_training()), 192.0);
  EXPECT_EQ(total_param_bytes(tiny_training()), 32);
  // x 48 + w 24 + b 8 + fc 32 + relu 32 + loss 4 = 148
  EXPECT_EQ(total_output_bytes(tiny_forward()), 148);
  // + loss_grad 32 + relu_grad 32 + fc_grad (8 + 24) = 244
  EXPECT_EQ(total_output_bytes(tiny_training()), 244);
  EXPECT_EQ(total_output_bytes(diamond()), 40 + 40 + 80 + 20 + 4);
}

TEST(Algorithms, ColocationGroups) {
  const Grouping g = colocation_groups(tiny_training());
  // {x} {w,w_sgd} {b,b_sgd} {fc,fc_grad} {relu,relu_grad} {loss,loss_grad}, numbered by first op.
  ASSERT_EQ(g.size(), 6);
  EXPECT_EQ(g.members[0], ids({0}));
  EXPECT_EQ(g.members[1], ids({1, 9}));
  EXPECT_EQ(g.members[2], ids({2, 10}));
  EXPECT_EQ(g.members[3], ids({3, 8}));
  EXPECT_EQ(g.members[4], ids({4, 7}));
  EXPECT_EQ(g.members[5], ids({5, 6}));
  EXPECT_EQ(g.group_of, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 5, 4, 3, 1, 2}));

  // Op::group merges across the forward/backward pairs: x with loss.
  Graph t = tiny_training();
  t.mutable_op(OpId(0)).group = "edge";
  t.mutable_op(OpId(5)).group = "edge";
  const Grouping h = colocation_groups(t);
  ASSERT_EQ(h.size(), 5);
  EXPECT_EQ(h.members[0], ids({0, 5, 6}));
}

TEST(Algorithms, RoundRobinGroupsDealsGroupsInTurnAndKeepsThemTogether) {
  // Groups by first op: {x} {w,w_sgd} {b,b_sgd} {fc,fc_grad} {relu,relu_grad} {loss,loss_grad}.
  const Placement p = round_robin_groups(tiny_training(), {DeviceId(1), DeviceId(0)});
  std::vector<int32_t> dev;
  for (DeviceId d : p.device_of) dev.push_back(d.value);
  EXPECT_EQ(dev, (std::vector<int32_t>{1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_THROW(round_robin_groups(tiny_training(), {}), InputError);
}

TEST(Algorithms, MixedStepDevicesAreTheCpusOrACpuAndAGpu) {
  auto cluster = [](const std::vector<DeviceKind>& kinds) {
    Cluster c;
    for (DeviceKind k : kinds) {
      Device d;
      d.kind = k;
      c.devices.push_back(d);
    }
    return c;
  };
  EXPECT_EQ(mixed_step_devices(cluster({DeviceKind::Cpu, DeviceKind::Cpu})),
            (std::vector<DeviceId>{DeviceId(0), DeviceId(1)}));
  EXPECT_TRUE(mixed_step_devices(cluster({DeviceKind::Cpu})).empty());
  // With a GPU: every CPU device, then the first GPU (their copies are what the step fits, beside every CPU
  // device's work).
  EXPECT_EQ(mixed_step_devices(cluster({DeviceKind::Cpu, DeviceKind::Cpu, DeviceKind::Cuda})),
            (std::vector<DeviceId>{DeviceId(0), DeviceId(1), DeviceId(2)}));
  EXPECT_EQ(mixed_step_devices(cluster({DeviceKind::Cpu, DeviceKind::Cuda, DeviceKind::Cpu, DeviceKind::Cuda})),
            (std::vector<DeviceId>{DeviceId(0), DeviceId(2), DeviceId(1)}));
  EXPECT_EQ(mixed_step_devices(cluster({DeviceKind::Cuda, DeviceKind::Cpu})),
            (std::vector<DeviceId>{DeviceId(1), DeviceId(0)}));
  EXPECT_TRUE(mixed_step_devices(cluster({DeviceKind::Cuda, DeviceKind::Cuda})).empty());
}

// Checks the contract of coarsen(): at most k groups, every op in exactly one,
// co-located ops together, groups numbered in a topological order of the
// forward edges (so the quotient is acyclic).
void expect_valid_coarsening(const Graph& g, const Grouping& c, int32_t k) {
  ASSERT_LE(c.size(), k);
  ASSERT_EQ(static_cast<int64_t>(c.group_of.size()), g.size());
  size_t covered = 0;
  for (int32_t q = 0; q < c.size(); ++q) {
    EXPECT_FALSE(c.members[q].empty());
    for (OpId op : c.members[q]) EXPECT_EQ(c.group_of[op.value], q);
    covered += c.members[q].size();
  }
  EXPECT_EQ(covered, static_cast<size_t>(g.size()));
  const Grouping co = colocation_groups(g);
  for (const auto& members : co.members)
    for (OpId op : members) EXPECT_EQ(c.group_of[op.value], c.group_of[members[0].value]);
  for (int32_t v = 0; v < g.size(); ++v)
    for (const TensorRef& in : g.op(OpId(v)).inputs)
      if (g.op(in.op).phase == Phase::Forward && g.op(OpId(v)).phase == Phase::Forward) {
        EXPECT_LE(c.group_of[in.op.value], c.group_of[v]) << g.op(in.op).name << " -> " << g.op(OpId(v)).name;
      }
}

Graph chain(int n) {
  Graph g;
  OpId prev = g.add_op(make_op("op0", op_types::kInput, {}, {f32({8})}));
  for (int i = 1; i < n; ++i)
    prev = g.add_op(make_op("op" + std::to_string(i), "aten::relu", {{prev, 0}}, {f32({8})}, 1));
  return g;
}

// A layered random DAG, deterministic.
Graph random_dag(int n, unsigned seed) {
  std::mt19937 rng(seed);
  Graph g;
  g.add_op(make_op("op0", op_types::kInput, {}, {f32({4})}));
  for (int i = 1; i < n; ++i) {
    std::set<int32_t> preds;
    const int fan_in = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < fan_in; ++k) preds.insert(static_cast<int32_t>(rng() % i));
    std::vector<TensorRef> inputs;
    for (int32_t p : preds) inputs.push_back({OpId(p), 0});
    g.add_op(make_op("op" + std::to_string(i), "custom::op", inputs, {f32({1 + static_cast<int64_t>(rng() % 64)})},
                     1.0 + rng() % 10));
  }
  return g;
}

TEST(Algorithms, CoarsenChainIntoContiguousGroups) {
  const Graph g = chain(10);
  const Grouping c = coarsen(g, 3, [](OpId) { return 1.0; });
  expect_valid_coarsening(g, c, 3);
  EXPECT_EQ(c.size(), 3);
  // A chain can only be cut into intervals.
  for (int32_t v = 1; v < g.size(); ++v) EXPECT_GE(c.group_of[v], c.group_of[v - 1]);
  const Grouping one = coarsen(g, 1, [](OpId) { return 1.0; });
  EXPECT_EQ(one.size(), 1);
  const Grouping all = coarsen(g, 100, [](OpId) { return 1.0; });
  EXPECT_EQ(all.size(), 10);
}

TEST(Algorithms, CoarsenRandomDagsStaysAcyclic) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Graph g = random_dag(300, seed);
    for (int32_t k : {1, 2, 7, 40, 150, 299, 300}) {
      const Grouping c = coarsen(g, k, [&](OpId op) { return g.op(op).flops; });
      expect_valid_coarsening(g, c, k);
      EXPECT_EQ(c.size(), k) << "seed " << seed;  // from 300 singleton groups, exactly k
      // The quotient graph builds (it would throw on a backward edge).
      const Graph q = quotient_graph(g, c);
      EXPECT_EQ(q.size(), c.size());
    }
  }
}

TEST(Algorithms, CoarsenKeepsTrainingPairsTogether) {
  const Graph g = tiny_training();
  for (int32_t k : {1, 2, 3, 6, 11}) {
    const Grouping c = coarsen(g, k, [&](OpId op) { return g.op(op).flops; });
    expect_valid_coarsening(g, c, k);
    EXPECT_EQ(c.size(), std::min(k, 6));
  }
}

// Whether a group holds only parameters and their updates (at least one update).
bool state_group(const Graph& g, const std::vector<OpId>& members) {
  bool update = false;
  for (OpId op : members) {
    if (g.op(op).type != op_types::kParam && g.op(op).type != op_types::kSgd) return false;
    update |= g.op(op).type == op_types::kSgd;
  }
  return update;
}

TEST(Algorithms, CoarsenWithStateApartNeverMergesAParameterIntoItsLayer) {
  // A transformer's training step: its heaviest edges are each weight into the
  // layer that reads it, so plain coarsening merges parameters first.
  BuilderOptions o;
  o.values = {{"layers", 2}, {"dec_layers", 1}, {"d_model", 64}, {"seq", 8}, {"batch", 4}, {"vocab", 500}};
  const Graph g = build_graph("transformer", o);
  const Grouping start = colocation_groups(g);
  int32_t states = 0;
  for (const auto& m : start.members) states += state_group(g, m);
  ASSERT_GT(states, 10);
  auto mixed = [&](const Grouping& c) {
    int32_t n = 0;
    for (const auto& m : c.members) {
      bool state = false, other = false;
      for (OpId op : m) (g.op(op).type == op_types::kParam || g.op(op).type == op_types::kSgd ? state : other) = true;
      n += state && other;
    }
    return n;
  };
  auto cost = [&](OpId op) { return g.op(op).flops; };
  const int32_t k = (start.size() + states) / 2;  // room for every state group and some layers
  const Grouping plain = coarsen(g, k, cost);
  CoarsenOptions state_apart;
  state_apart.state_apart = true;
  const Grouping apart = coarsen(g, k, cost, state_apart);
  expect_valid_coarsening(g, apart, k);
  EXPECT_EQ(apart.size(), k);
  EXPECT_GT(mixed(plain), 0);  // the test would catch the old coarsening
  EXPECT_EQ(mixed(apart), 0);
  // Fewer groups than state groups: state groups merge with each other first,
  // and the count is still met, down to one group.
  for (int32_t small : {states / 2, 3, 1}) {
    const Grouping c = coarsen(g, small, cost, state_apart);
    expect_valid_coarsening(g, c, small);
    EXPECT_EQ(c.size(), small);
    EXPECT_EQ(quotient_graph(g, c).size(), small);
  }
}

// The model blocks (Op::layer of the forward ops) a group spans.
std::set<std::string> blocks_of(const Graph& g, const std::vector<OpId>& members) {
  std::set<std::string> blocks;
  for (OpId op : members)
    if (g.op(op).phase == Phase::Forward && !g.op(op).layer.empty()) blocks.insert(g.op(op).layer);
  return blocks;
}

TEST(Algorithms, CoarsenWithLayersFirstKeepsEachGroupInsideOneBlock) {
  // An LSTM encoder-decoder: the state passed to the next layer weighs as much
  // as the state passed to the next step, so plain coarsening merges across
  // layers, and a layer-wise placement (each layer on its own device, what
  // local_search finds for nmt) is no longer expressible on the groups.
  BuilderOptions o;
  o.values = {{"layers", 2}, {"hidden", 64}, {"steps", 6}, {"batch", 4}, {"vocab", 300}};
  const Graph g = build_graph("nmt", o);
  std::set<std::string> blocks;
  for (const Op& op : g.ops())
    if (op.phase == Phase::Forward && !op.layer.empty()) blocks.insert(op.layer);
  ASSERT_GE(blocks.size(), 5u);
  auto cost = [&](OpId op) { return g.op(op).flops; };
  auto spanning = [&](const Grouping& c) {
    int32_t n = 0;
    for (const auto& m : c.members) n += blocks_of(g, m).size() > 1;
    return n;
  };
  const int32_t k = static_cast<int32_t>(blocks.size()) * 4;
  CoarsenOptions layers_first;
  layers_first.layers_first = true;
  const Grouping plain = coarsen(g, k, cost);
  const Grouping layered = coarsen(g, k, cost, layers_first);
  expect_valid_coarsening(g, layered, k);
  EXPECT_EQ(layered.size(), k);
  EXPECT_GT(spanning(plain), 0);  // the test would catch the plain coarsening
  EXPECT_EQ(spanning(layered), 0);
  // Fewer groups than blocks: groups then merge across blocks, and the count is met.
  for (int32_t small : {static_cast<int32_t>(blocks.size()) - 2, 1}) {
    const Grouping c = coarsen(g, small, cost, layers_first);
    expect_valid_coarsening(g, c, small);
    EXPECT_EQ(c.size(), small);
  }
  // With state_apart as well (the pretrained policy's units), where there is
  // room for every parameter as a group of its own and for the decoder's
  // steps, which input feeding keeps from merging within a block without a
  // cycle: still inside one block each. (With less room the block pass stops
  // short, capped at twice the average share, and the rest merges across.)
  layers_first.state_apart = true;
  const int32_t k_state = static_cast<int32_t>(blocks.size()) * 12;
  const Grouping both = coarsen(g, k_state, cost, layers_first);
  expect_valid_coarsening(g, both, k_state);
  EXPECT_EQ(both.size(), k_state);
  EXPECT_EQ(spanning(both), 0);
}

TEST(Algorithms, CoarsenCollapsesGroupCycles) {
  // a -> b -> c with a and c in one group: b must join them.
  Graph g = chain(4);
  g.mutable_op(OpId(1)).group = "g";
  g.mutable_op(OpId(3)).group = "g";
  const Grouping c = coarsen(g, 4, [](OpId) { return 1.0; });
  ASSERT_EQ(c.size(), 2);
  EXPECT_EQ(c.members[0], ids({0}));
  EXPECT_EQ(c.members[1], ids({1, 2, 3}));
  EXPECT_THROW(coarsen(g, 0, [](OpId) { return 1.0; }), InputError);
}

TEST(Algorithms, QuotientGraphSumsAndEdges) {
  const Graph g = diamond();
  Grouping grouping;
  grouping.group_of = {0, 0, 1, 2, 2};  // {a,b} {c} {d,e}
  grouping.members = {ids({0, 1}), ids({2}), ids({3, 4})};
  const Graph q = quotient_graph(g, grouping);
  ASSERT_EQ(q.size(), 3);
  EXPECT_EQ(q.op(OpId(0)).name, "group0");
  EXPECT_DOUBLE_EQ(q.op(OpId(0)).flops, 10);
  EXPECT_DOUBLE_EQ(q.op(OpId(1)).flops, 20);
  EXPECT_DOUBLE_EQ(q.op(OpId(2)).flops, 5);
  EXPECT_DOUBLE_EQ(total_flops(q), total_flops(g));
  EXPECT_EQ(total_output_bytes(q), total_output_bytes(g));
  // group0 exports a (to c) and b (to d): two outputs, then nothing internal left.
  ASSERT_EQ(q.op(OpId(0)).outputs.size(), 2u);
  EXPECT_EQ(q.op(OpId(1)).inputs, (std::vector<TensorRef>{{OpId(0), 0}}));
  EXPECT_EQ(q.op(OpId(2)).inputs, (std::vector<TensorRef>{{OpId(0), 1}, {OpId(1), 0}}));
  // group2 has no consumers: all its bytes are one internal uint8 output.
  ASSERT_EQ(q.op(OpId(2)).outputs.size(), 1u);
  EXPECT_EQ(q.op(OpId(2)).outputs[0], (TensorSpec{{24}, DType::UInt8}));
  EXPECT_NO_THROW(validate_graph(q));

  // A training graph: gradients that point back are not edges; bytes still sum.
  const Graph t = tiny_training();
  const Graph tq = quotient_graph(t, colocation_groups(t));
  EXPECT_EQ(tq.size(), 6);
  EXPECT_EQ(total_output_bytes(tq), total_output_bytes(t));
  EXPECT_EQ(total_param_bytes(tq), 32);
  EXPECT_DOUBLE_EQ(total_flops(tq), 192.0);
  EXPECT_NO_THROW(validate_graph(tq));
}

// Components come out as Tarjan completes them (a sink component first), each
// with the node the search reached first; duplicate edges change nothing.
TEST(Algorithms, StronglyConnectedComponentsInCompletionOrder) {
  const std::vector<std::vector<int32_t>> successors = {{1, 1}, {2}, {0, 3}, {4}, {3}, {}};
  const StronglyConnected scc = strongly_connected_components(successors);
  EXPECT_EQ(scc.size(), 3);
  EXPECT_EQ(scc.component_of, (std::vector<int32_t>{1, 1, 1, 0, 0, 2}));
  EXPECT_EQ(scc.root, (std::vector<int32_t>{3, 0, 5}));
  const StronglyConnected dag = strongly_connected_components({{1}, {2}, {}});
  EXPECT_EQ(dag.component_of, (std::vector<int32_t>{2, 1, 0}));
  EXPECT_EQ(dag.root, (std::vector<int32_t>{2, 1, 0}));
}

}  // namespace
}  // namespace placer
