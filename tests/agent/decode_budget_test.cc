// The policy's anytime decode under a budget of placements (DecodeOptions::placements, `placer place --policy P
// --no-refine --budget N`): it stops at exactly that many simulated placements whatever the time, so a seed
// gives the same placement on any machine.
#include <gtest/gtest.h>

#include <memory>

#include "../../agent/src/policy.h"
#include "chain_graphs.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"

namespace placer {
namespace {

using testing::two_chains;

struct Decoded {
  Placement placement;
  DecodeStats stats;
};

Decoded decode(PolicyImpl& policy, const Environment& env, const PolicyInput& problem, const PolicyInputOptions& po,
               int64_t placements, double seconds) {
  DecodeOptions o{8, 2, 1.0, 7, seconds, 0.5};
  o.placements = placements;
  Decoded d;
  d.placement = decode_levels(policy, problem, po, env, o, nullptr, &d.stats);
  return d;
}

TEST(DecodeBudget, StopsAtExactlyItsPlacementsAndRepeatsItself) {
  const Graph g = two_chains(12);
  const Cluster cluster = resolve_cluster("k80x4");
  Environment env(g, cluster);
  PolicyOptions o;
  o.kind = PolicyType::Gnn;
  o.hidden = 16;
  const std::shared_ptr<PolicyImpl> policy = make_policy(o, 1);
  PolicyInputOptions po;
  const PolicyInput problem = make_policy_input(g, cluster, *env.costs(), po);
  const Decoded a = decode(*policy, env, problem, po, 101, 0.0);  // no time limit: the budget alone ends it
  ASSERT_EQ(a.stats.levels, 2);
  EXPECT_EQ(a.stats.placements, 101);  // 2 fixed rounds of 8, then rounds of 8 and a last one of 5
  EXPECT_GT(a.stats.near_rounds, 0);
  const Decoded b = decode(*policy, env, problem, po, 101, 0.0);
  EXPECT_EQ(a.placement.device_of, b.placement.device_of);
  EXPECT_EQ(b.stats.placements, 101);
  // With a time limit as well, a generous one: the budget still ends it, and the same placement comes back.
  const Decoded c = decode(*policy, env, problem, po, 101, 60.0);
  EXPECT_EQ(c.stats.placements, 101);
  EXPECT_EQ(a.placement.device_of, c.placement.device_of);
  // A budget under the fixed rounds: they run whole (never slower than the fixed decode), and no more.
  const Decoded d = decode(*policy, env, problem, po, 3, 0.0);
  EXPECT_EQ(d.stats.placements, 16);
  EXPECT_EQ(d.stats.rounds, 2);
}

}  // namespace
}  // namespace placer
