// An Environment with a RemoteEvaluator (a fake here; service/workers has the
// real one): what goes remote in each mode, and that cache, rewards and
// results stay exactly what the local environment gives.
#include "placer/env/remote.h"

#include <gtest/gtest.h>

#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/graphs/error.h"
#include "remote_helpers.h"

namespace placer {
namespace {

struct FakeProblem : RemoteProblem {
  RemoteSettings settings;
  std::unique_ptr<Environment> sim;  // simulates with the same graph, cluster and profile
};

// Simulated tasks: a local simulation, as a worker would do. Measured tasks:
// a made-up measurement, twice the simulated time.
class FakeRemote : public RemoteEvaluator {
 public:
  std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                               const RemoteSettings& settings) override {
    ++prepared;
    auto p = std::make_shared<FakeProblem>();
    p->settings = settings;
    EnvOptions o;
    if (settings.profile) o.profile = *settings.profile;
    p->sim = std::make_unique<Environment>(graph, cluster, o);
    return p;
  }
  std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) override {
    if (fail) throw InputError("workers: none");
    const auto& p = dynamic_cast<const FakeProblem&>(problem);
    std::vector<StepResult> out;
    for (const Placement& pl : placements) {
      StepResult r = p.sim->simulate(pl);
      if (p.settings.mode == RewardMode::Measured) {
        r.step_s *= 2;
        ++measured;
      } else {
        ++simulated;
      }
      out.push_back(r);
    }
    return out;
  }
  int prepared = 0, simulated = 0, measured = 0;
  bool fail = false;
};

std::vector<Placement> random_placements(const Graph& g, int count, uint64_t seed) {
  auto out = testing::random_placements(g, 2, count, seed);
  out.push_back(out.front());  // a repeat inside the batch
  return out;
}

TEST(RemoteEnvironment, SimulatedGoesRemoteWithTheSameResultsAndCache) {
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto remote = std::make_shared<FakeRemote>();
  EnvOptions ro;
  ro.remote = remote;
  Environment local(g, c), far(g, c, ro);
  const auto batch = random_placements(g, 12, 7);
  const auto a = local.evaluate_batch(batch);
  const auto b = far.evaluate_batch(batch);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].result.step_s, b[i].result.step_s) << i;
    EXPECT_EQ(a[i].reward, b[i].reward) << i;
    EXPECT_EQ(a[i].cached, b[i].cached) << i;
    EXPECT_FALSE(b[i].measured);
  }
  EXPECT_EQ(far.stats().remote, remote->simulated);
  EXPECT_EQ(far.stats().cache_hits, local.stats().cache_hits);
  EXPECT_EQ(far.stats().remote + far.stats().cache_hits, static_cast<int64_t>(batch.size()));
  // Cached now: nothing more goes remote, and the problem was prepared once.
  const int before = remote->simulated;
  for (const auto& e : far.evaluate_batch(batch)) EXPECT_TRUE(e.cached);
  EXPECT_EQ(remote->simulated, before);
  EXPECT_EQ(remote->prepared, 1);
}

TEST(RemoteEnvironment, MeasuredGoesRemote) {
  const Graph g = testing::small_mlp();
  auto remote = std::make_shared<FakeRemote>();
  EnvOptions o;
  o.mode = RewardMode::Measured;
  o.remote = remote;
  Environment env(g, cluster_preset("k80x2"), o);
  const auto batch = random_placements(g, 4, 3);
  const auto evals = env.evaluate_batch(batch);
  for (const auto& e : evals) EXPECT_TRUE(e.measured || e.cached);
  EXPECT_EQ(remote->simulated, 0);
  EXPECT_EQ(env.stats().measurements, remote->measured);
  EXPECT_EQ(env.stats().remote, remote->measured);
  EXPECT_EQ(evals[0].result.step_s, 2 * env.simulate(batch[0]).step_s);
}

TEST(RemoteEnvironment, HybridSimulatesHereAndMeasuresRemotely) {
  const Graph g = testing::small_mlp();
  auto remote = std::make_shared<FakeRemote>();
  EnvOptions o;
  o.mode = RewardMode::Hybrid;
  o.hybrid_measure_top = 2;
  o.remote = remote;
  Environment env(g, cluster_preset("k80x2"), o);
  const auto evals = env.evaluate_batch(random_placements(g, 8, 5));
  int measured = 0;
  for (const auto& e : evals) measured += e.measured && !e.cached;
  EXPECT_GE(measured, 2);
  EXPECT_EQ(remote->simulated, 0);  // simulation stays with the calibration
  EXPECT_EQ(remote->measured, measured);
  EXPECT_EQ(env.stats().measurements, measured);
  EXPECT_EQ(env.stats().calibrations, measured);
  EXPECT_NEAR(env.stats().step_scale, 2.0, 1e-9);  // the fake measures twice the simulation
}

TEST(RemoteEnvironment, AFailingRemoteThrowsAndCachesNothing) {
  const Graph g = testing::small_mlp();
  auto remote = std::make_shared<FakeRemote>();
  remote->fail = true;
  EnvOptions o;
  o.remote = remote;
  Environment env(g, cluster_preset("k80x2"), o);
  const auto batch = random_placements(g, 3, 1);
  EXPECT_THROW(env.evaluate_batch(batch), InputError);
  remote->fail = false;
  const auto again = env.evaluate_batch(batch);
  EXPECT_FALSE(again[0].cached);  // the failed call left nothing in the cache
  EXPECT_TRUE(env.evaluate_batch(batch)[0].cached);
}

// A worker simulates the unrolled mini-batch it is sent with the profile as of a plain graph, losing the
// copies' CPU anchors and copy-cost fits (more than 10% off a local run): refused, not wrong.
TEST(RemoteEnvironment, ASimulatedPipelineWithAProfileStaysHere) {
  const Graph g = testing::small_mlp();
  const Cluster two = parse_device_list("cpu:2");
  Profile p;
  p.graph = g.name;
  for (const Op& op : g.ops())
    p.ops.push_back(OpTiming{op.name, "", "cpu:0", "cpu",
                             op.type == op_types::kParam || op.type == op_types::kInput ? 0.0 : 1e-4});
  EnvOptions o;
  o.remote = std::make_shared<FakeRemote>();
  o.objective = Objective::Pipeline;
  o.pipeline = {2, PipelineSchedule::GPipe};
  o.profile = p;
  try {
    Environment env(g, two, o);
    env.evaluate_batch(random_placements(g, 2, 1));
    ADD_FAILURE() << "evaluated remotely";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a simulated pipeline objective with a profile"), std::string::npos)
        << e.what();
  }
  o.profile.reset();  // roofline costs: the same there as here
  Environment roofline(g, two, o);
  EXPECT_EQ(roofline.evaluate_batch(random_placements(g, 2, 1)).size(), 3u);
}

}  // namespace
}  // namespace placer
