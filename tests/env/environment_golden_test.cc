// Figures of the Environment in every mode, as one fingerprint recorded from
// the code before the evaluator split (a50ae70): rewards, step times, cache
// and measured flags, and the statistics must stay bit for bit the same.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>

#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "remote_helpers.h"

namespace placer {
namespace {

struct GoldenProblem : RemoteProblem {
  RemoteSettings settings;
  std::unique_ptr<Environment> sim;
};

// Measured tasks: the simulation scaled per device and per placement, so a
// hybrid calibration has something to fit.
class GoldenRemote : public RemoteEvaluator {
 public:
  std::shared_ptr<const RemoteProblem> prepare(const Graph& graph, const Cluster& cluster,
                                               const RemoteSettings& settings) override {
    auto p = std::make_shared<GoldenProblem>();
    p->settings = settings;
    p->sim = std::make_unique<Environment>(graph, cluster);
    return p;
  }
  std::vector<StepResult> evaluate(const RemoteProblem& problem, const std::vector<Placement>& placements) override {
    const auto& p = dynamic_cast<const GoldenProblem&>(problem);
    std::vector<StepResult> out;
    for (const Placement& pl : placements) {
      StepResult r = p.sim->simulate(pl);
      if (p.settings.mode == RewardMode::Measured) {
        r.step_s *= 1.5 + 0.25 * static_cast<double>(placement_hash(pl) % 5);
        for (size_t d = 0; d < r.devices.size(); ++d) r.devices[d].busy_s *= 1.25 + 0.5 * static_cast<double>(d);
      }
      out.push_back(r);
    }
    return out;
  }
};

struct Fingerprint {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void add(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    add(bits);
  }
  void add(const Evaluation& e) {
    add(e.result.step_s);
    add(e.reward);
    add(static_cast<uint64_t>(e.cached) * 2 + static_cast<uint64_t>(e.measured));
    add(static_cast<uint64_t>(e.result.status));
  }
  void add(const Environment::Stats& s) {
    add(static_cast<uint64_t>(s.evaluations));
    add(static_cast<uint64_t>(s.cache_hits));
    add(static_cast<uint64_t>(s.measurements));
    add(static_cast<uint64_t>(s.remote));
    add(static_cast<uint64_t>(s.calibrations));
    add(s.step_scale);
  }
};

uint64_t run_mode(RewardMode mode, bool remote, int top, const Cluster& cluster) {
  const Graph g = testing::small_mlp();
  EnvOptions o;
  o.mode = mode;
  o.hybrid_measure_top = top;
  o.threads = 3;
  if (remote) o.remote = std::make_shared<GoldenRemote>();
  Environment env(g, cluster, o);
  Fingerprint f;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto batch = testing::random_placements(g, cluster.size(), 6, seed);
    batch.push_back(batch[1]);
    for (const Evaluation& e : env.evaluate_batch(batch)) f.add(e);
    for (const Evaluation& e : env.evaluate_batch({batch[seed % 6]})) f.add(e);
    f.add(env.simulate(batch[0]).step_s);
    f.add(env.stats());
  }
  // A batch of one new placement at a time (hybrid: measured only when a new
  // best).
  for (const Placement& p : testing::random_placements(g, cluster.size(), 5, 99)) f.add(env.evaluate(p));
  f.add(env.stats());
  return f.h;
}

TEST(EnvironmentGolden, FiguresStayTheSame) {
  const Cluster k80 = cluster_preset("k80x2");
  Cluster tight = k80;
  for (auto& d : tight.devices) d.memory_bytes = 3000;  // some placements run out of memory
  const uint64_t got[] = {
      run_mode(RewardMode::Simulated, false, 1, k80), run_mode(RewardMode::Simulated, true, 1, k80),
      run_mode(RewardMode::Measured, true, 1, k80),   run_mode(RewardMode::Hybrid, true, 1, k80),
      run_mode(RewardMode::Hybrid, true, 2, k80),     run_mode(RewardMode::Simulated, false, 1, tight),
      run_mode(RewardMode::Hybrid, true, 1, tight),
  };
  // Recorded from a50ae70 (before the evaluator split): simulated, simulated
  // remote, measured remote, hybrid remote (top 1, top 2), then on a cluster
  // where 14 of the 37 placements run out of memory: simulated and hybrid.
  const uint64_t want[] = {0x4949935846bfc4d9ull, 0x023d772b45fc28c8ull, 0xefbc6ba778f52d3cull, 0x4105c87e92192905ull,
                           0xb4ef388c24c91f41ull, 0xf2cb46024de3baa0ull, 0x4f3eb5c69f84d64aull};
  for (size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(got[i], want[i]) << "case " << i;
}

}  // namespace
}  // namespace placer
