// Rounds of profiles combined: the mean (what fidelity calibrates on) over
// the rounds that measured each value, and the minimum beside it.
#include "placer/env/profile_rounds.h"

#include <gtest/gtest.h>

#include "placer/graphs/error.h"

namespace placer {
namespace {

Profile round_of(double op_s, double contended_s, double beta, double gpu_overhead, double gpu_scale, double mixed_s) {
  Profile p;
  p.graph = "g";
  p.ops = {{"a", "sig", "cpu:0", "cpu", op_s, contended_s}};
  p.links = {{"cpu:0", "cuda:0", 1e-5, beta, {}}};
  p.per_op_overhead_s = op_s * 1e-3;
  p.gpu_op_overhead_s = gpu_overhead;
  p.gpu_op_scale = gpu_scale;
  p.mixed = {{"cpu:0", "cuda:0"}, mixed_s};
  return p;
}

TEST(ProfileRounds, TheMeanCountsOnlyTheRoundsThatMeasured) {
  // Round 1 did not measure the contended time (0), the link's bandwidth (0), the GPU overhead (< 0) or the
  // mixed step (< 0): those means are round 2's alone, not pulled towards "not measured".
  const std::vector<Profile> rounds = {round_of(1.0, 0.0, 0.0, -1.0, 0.5, -1.0),
                                       round_of(3.0, 4.0, 2e9, 2e-6, 1.0, 0.25)};
  const Profile mean = mean_profile(rounds);
  EXPECT_DOUBLE_EQ(mean.ops[0].seconds, 2.0);
  EXPECT_DOUBLE_EQ(mean.ops[0].contended_seconds, 4.0);
  EXPECT_DOUBLE_EQ(mean.links[0].beta_Bps, 2e9);
  EXPECT_DOUBLE_EQ(mean.links[0].alpha_s, 1e-5);
  EXPECT_DOUBLE_EQ(mean.per_op_overhead_s, 2e-3);
  EXPECT_DOUBLE_EQ(mean.gpu_op_overhead_s, 2e-6);
  EXPECT_DOUBLE_EQ(mean.gpu_op_scale, 0.75);
  EXPECT_DOUBLE_EQ(mean.gpu_step_s, -1.0);  // no round measured it
  EXPECT_DOUBLE_EQ(mean.mixed.step_s, 0.25);
  // Time per byte is averaged, not bandwidth: 1 and 4 GB/s average to 1.6 GB/s.
  const Profile two = mean_profile({round_of(1.0, 0.0, 1e9, -1, 1, -1), round_of(1.0, 0.0, 4e9, -1, 1, -1)});
  EXPECT_NEAR(two.links[0].beta_Bps, 1.6e9, 1.0);
  EXPECT_THROW(mean_profile({}), InputError);
  // Each CPU device's step alone, matched by device name over the rounds that measured it: the first device's
  // mean, the other's its ratio to the first, the median over those rounds (here two: 0.75 and 5/6).
  Profile a = round_of(1.0, 0.0, 1e9, -1, 1, -1), b = a, c = a;
  a.cpu_steps = {{"cpu:0", 0.04}, {"cpu:1", 0.03}};
  b.cpu_steps = {{"cpu:1", 0.05}, {"cpu:0", 0.06}};
  const Profile steps = mean_profile({a, b, c});
  ASSERT_EQ(steps.cpu_steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps.cpu_steps[0].step_s, 0.05);
  EXPECT_DOUBLE_EQ(steps.cpu_steps[1].step_s, 0.05 * (0.75 + 0.05 / 0.06) / 2);
}

TEST(ProfileRounds, OneRoundInASpellDoesNotMoveTheDeviceSteps) {
  // Four rounds; in the fourth cpu:0 ran 1.5x slower than cpu:1 (a slow spell), in the others the two agree to 2%.
  // The mean of the steps would put cpu:0 11% slower than cpu:1; the median of the rounds' ratios keeps them within
  // the quiet rounds' 2%.
  std::vector<Profile> rounds(4, round_of(1.0, 0.0, 1e9, -1, 1, -1));
  const double cpu0[] = {0.040, 0.041, 0.040, 0.066}, cpu1[] = {0.040, 0.040, 0.041, 0.044};
  for (size_t k = 0; k < rounds.size(); ++k) rounds[k].cpu_steps = {{"cpu:0", cpu0[k]}, {"cpu:1", cpu1[k]}};
  const Profile mean = mean_profile(rounds);
  ASSERT_EQ(mean.cpu_steps.size(), 2u);
  const double ratio = mean.cpu_steps[0].step_s / mean.cpu_steps[1].step_s;
  EXPECT_NEAR(ratio, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(mean.cpu_steps[0].step_s, (0.040 + 0.041 + 0.040 + 0.066) / 4);  // the first device: its mean
}

TEST(ProfileRounds, TheMinimumKeepsEachFastestRound) {
  Profile kept;
  merge_profile_minimum(kept, round_of(3.0, 0.0, 1e9, -1.0, 1.0, 0.5), true);
  merge_profile_minimum(kept, round_of(1.0, 4.0, 2e9, -1.0, 1.0, 0.25), false);
  EXPECT_DOUBLE_EQ(kept.ops[0].seconds, 1.0);
  EXPECT_DOUBLE_EQ(kept.ops[0].contended_seconds, 4.0);
  EXPECT_DOUBLE_EQ(kept.links[0].beta_Bps, 2e9);
  EXPECT_DOUBLE_EQ(kept.per_op_overhead_s, 1e-3);
  EXPECT_DOUBLE_EQ(kept.mixed.step_s, 0.25);
}

}  // namespace
}  // namespace placer
