// Runtime::profile keeps to the device's memory and to a time limit, and a failed step is an error, never a
// silent figure.
#include <gtest/gtest.h>

#include <string>

#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "runtime_helpers.h"

namespace placer {
namespace {

using rt_test::cpus;
using rt_test::f32;
using rt_test::hand_mlp;
using rt_test::make;

std::string profile_error(Runtime& rt, const Graph& g, const ProfileOptions& o) {
  try {
    rt.profile(g, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

ProfileOptions quick() {
  ProfileOptions o;
  o.repetitions = 1;
  o.transfer_sizes = {1 << 10};
  return o;
}

// The contention step runs one copy of the graph per CPU device at once: with the memory check off, a graph
// that did not fit one cpu:N device (RAM/N) made N copies and the process was OOM-killed. Its copies are checked,
// and where they do not fit the step is left out (contended_seconds 0: the simulator takes the times alone).
// One copy on one device may use the host's memory, not only the device's share: a graph over RAM/N still runs
// split over the N devices, and its profile must not be refused (a review found it was, for an hour).
TEST(RuntimeProfile, AGraphOverADevicesShareIsProfiledWithoutContention) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Cluster c = cpus(2);
  for (Device& d : c.devices) d.memory_bytes = 64;  // w1 alone is 120 bytes
  Runtime small(c);
  Profile p;
  ASSERT_NO_THROW(p = small.profile(train, quick()));
  ASSERT_FALSE(p.ops.empty());
  for (const OpTiming& t : p.ops) EXPECT_EQ(t.contended_seconds, 0.0) << t.op;

  Runtime ample(cpus(2));
  const Profile q = ample.profile(train, quick());
  bool contended = false;
  for (const OpTiming& t : q.ops) contended = contended || t.contended_seconds > 0;
  EXPECT_TRUE(contended);
}

// Without a timed op on a CPU device the executor's overhead comes from a chain of adds; a chain that failed
// (here: it does not fit) gave an overhead from failed steps, silently.
TEST(RuntimeProfile, AFailedOverheadStepIsAnError) {
  Graph g;
  g.name = "input_only";
  g.add_op(make("x", op_types::kInput, {}, {}, {f32({1})}));
  Cluster c = cpus(1);
  c.devices[0].memory_bytes = 100;  // x fits; the chain's 64-byte input and first add do not
  Runtime rt(c);
  const std::string e = profile_error(rt, g, quick());
  EXPECT_NE(e.find("overhead"), std::string::npos) << e;
  EXPECT_NE(e.find("out of memory"), std::string::npos) << e;
}

// The profile's steps ran with a limit of 1e9 s, and fidelity's --timeout did not reach them: a step that
// hung held the profile for ever. They take ProfileOptions::timeout_s, as a measured step MeasureOptions'.
TEST(RuntimeProfile, StepsHaveATimeLimit) {
  const Graph train = make_training_graph(hand_mlp(), 0.05);
  Runtime rt(cpus(1));
  ProfileOptions o = quick();
  EXPECT_EQ(o.timeout_s, MeasureOptions{}.timeout_s);
  o.timeout_s = 1e-9;
  const std::string e = profile_error(rt, train, o);
  EXPECT_NE(e.find("time limit"), std::string::npos) << e;
  o.timeout_s = 0;
  EXPECT_NE(profile_error(rt, train, o).find("timeout_s must be > 0"), std::string::npos);
  o.timeout_s = 60;
  EXPECT_NO_THROW(rt.profile(train, o));
}

}  // namespace
}  // namespace placer
