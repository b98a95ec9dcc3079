#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/serialize.h"
#include "tiny_graphs.h"

namespace placer {
namespace {

using testing::tiny_forward;
using testing::tiny_training;

using testing::error_of;

#define EXPECT_ERROR_CONTAINS(E, body, text)                                                      \
  do {                                                                                            \
    const std::string _msg = error_of<E>([&] { body; });                                          \
    EXPECT_NE(_msg.find(text), std::string::npos) << "got: " << _msg << "\nexpected: " << (text); \
  } while (0)

TEST(Cluster, ParseDeviceList) {
  const Cluster two = parse_device_list("cpu:2");
  ASSERT_EQ(two.size(), 2);
  EXPECT_EQ(two.devices[0].name, "cpu:0");
  EXPECT_EQ(two.devices[1].name, "cpu:1");
  EXPECT_EQ(two.devices[1].kind, DeviceKind::Cpu);
  EXPECT_GT(two.devices[0].memory_bytes, 0);
  EXPECT_EQ(two.find("cpu:1"), DeviceId(1));
  EXPECT_FALSE(two.find("cuda:0").has_value());

  const Cluster mixed = parse_device_list("cpu,cuda:0,cuda:1");
  ASSERT_EQ(mixed.size(), 3);
  EXPECT_EQ(mixed.devices[0].name, "cpu:0");
  EXPECT_EQ(mixed.devices[2].name, "cuda:1");
  EXPECT_EQ(mixed.devices[2].kind, DeviceKind::Cuda);

  // "+" joins a whole cpu:N split with GPUs (the GPU run book's cpu:8+cuda:0).
  const Cluster joined = parse_device_list("cpu:3+cuda:0");
  ASSERT_EQ(joined.size(), 4);
  EXPECT_EQ(joined.devices[2].name, "cpu:2");
  EXPECT_EQ(joined.devices[2].kind, DeviceKind::Cpu);
  EXPECT_EQ(joined.devices[3].name, "cuda:0");
  EXPECT_EQ(joined.devices[0].threads, parse_device_list("cpu:3").devices[0].threads);
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("cpu:0+cuda:0"), "cpu:N needs 1 <= N");

  EXPECT_ERROR_CONTAINS(InputError, parse_device_list(""), "empty device list");
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("tpu:0"), "bad device 'tpu:0'");
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("cpu:0,cpu:0"), "duplicate device name");
  // A leading zero named a second device the runtime maps to the same one.
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("cuda:0,cuda:00"), "bad device 'cuda:00'");
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("cpu:1,cpu:01"), "bad device 'cpu:01'");
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("cpu:02"), "bad device 'cpu:02'");
  EXPECT_EQ(parse_device_list("cpu:0,cuda:0,cuda:10").size(), 3);
  // Each virtual device takes two of the 32 streams torch keeps per GPU: vcuda:17 shared streams.
  EXPECT_EQ(parse_device_list("vcuda:16").size(), 16);
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list("vcuda:17"), "vcuda:N needs 1 <= N <= 16");
}

// A list past 4096 devices is refused as its terms are read: "cpu:256+cpu:256+..." from a request was
// expanded to millions of devices (1.4 GB, 54 s) before the count was checked.
TEST(Cluster, ALongDeviceListIsRefusedAsItIsRead) {
  std::string spec = "cpu:256";
  for (int i = 1; i < 16; ++i) spec += "+cpu:256";
  EXPECT_EQ(parse_device_list(spec).size(), 4096);
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list(spec + ",cuda:0"), "devices: more than 4096");
  for (int i = 16; i < 40000; ++i) spec += "+cpu:256";  // 10 million devices
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list(spec), "': devices: more than 4096");
  std::string cpus = "cpu";
  for (int i = 1; i < 100000; ++i) cpus += ",cpu";
  EXPECT_ERROR_CONTAINS(InputError, parse_device_list(cpus), "': devices: more than 4096");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5);
}

TEST(Cluster, LinksAndTransferTime) {
  Cluster c = parse_device_list("cpu:3");
  c.default_link = Link{"", "", 1e-5, 1e9};
  c.links.push_back(Link{"cpu:0", "cpu:2", 2e-5, 4e9});
  validate_cluster(c);
  EXPECT_DOUBLE_EQ(c.transfer_seconds(DeviceId(0), DeviceId(2), 4'000'000), 2e-5 + 1e-3);
  EXPECT_DOUBLE_EQ(c.transfer_seconds(DeviceId(2), DeviceId(0), 4'000'000), 1e-5 + 4e-3);  // default
  EXPECT_DOUBLE_EQ(c.transfer_seconds(DeviceId(1), DeviceId(1), 4'000'000), 0.0);
  c.links.push_back(Link{"cpu:0", "cpu:9", 1e-5, 1e9});
  EXPECT_ERROR_CONTAINS(InputError, validate_cluster(c), "links[1]: to: unknown device 'cpu:9'");
  c.links.pop_back();
  c.devices[1].memory_bytes = 0;
  EXPECT_ERROR_CONTAINS(InputError, validate_cluster(c), "devices[1] 'cpu:1': memory_bytes: must be positive");
  // 9e18 bytes on two devices overflowed the sums of capacities: at most 2^60 bytes (1 EiB) a device.
  c.devices[1].memory_bytes = int64_t{1} << 60;
  EXPECT_NO_THROW(validate_cluster(c));
  c.devices[1].memory_bytes = 9'000'000'000'000'000'000;
  EXPECT_ERROR_CONTAINS(InputError, validate_cluster(c),
                        "devices[1] 'cpu:1': memory_bytes: 9000000000000000000 is over 1152921504606846976 (1 EiB)");
  c.devices[1].memory_bytes = int64_t{1} << 30;
  c.devices[2].name = "cpu:02";  // a cluster file's device
  EXPECT_ERROR_CONTAINS(InputError, validate_cluster(c), "devices[2] 'cpu:02': name: expected 'cpu:K'");
}

// Finite but absurd constants (a denormal peak_flops, an overhead of 1e100 s)
// made every op's cost infinite or broke CLP: a remote request with such a
// cluster aborted `placer serve`. They are errors that name the field.
TEST(Cluster, ConstantsOutOfRangeNameTheField) {
  const Cluster ok = parse_device_list("cpu:2");
  auto expect = [&](auto change, const std::string& message) {
    Cluster c = ok;
    change(c);
    EXPECT_ERROR_CONTAINS(InputError, validate_cluster(c), message);
  };
  expect([](Cluster& c) { c.devices[0].peak_flops = 1e-320; }, "devices[0] 'cpu:0': peak_flops: ");
  expect([](Cluster& c) { c.devices[0].peak_flops = 1e-3; },
         "devices[0] 'cpu:0': peak_flops: 0.001 is out of range (1 to 1e+21 FLOP/s)");
  expect([](Cluster& c) { c.devices[1].mem_bandwidth = std::nan(""); },
         "devices[1] 'cpu:1': mem_bandwidth: nan is out of range");
  expect([](Cluster& c) { c.devices[0].op_overhead_s = 1e100; }, "op_overhead_s: 1e+100 is out of range (0 to 1000 s)");
  expect([](Cluster& c) { c.devices[0].op_overhead_s = -1; }, "op_overhead_s: -1 is out of range");
  expect([](Cluster& c) { c.default_link.latency_s = 1e308; }, "default_link: latency_s: 1e+308 is out of range");
  expect([](Cluster& c) { c.default_link.bandwidth_Bps = 1e-300; },
         "default_link: bandwidth_Bps: 1e-300 is out of range");
  expect(
      [](Cluster& c) {
        c.links.push_back(Link{"cpu:0", "cpu:1", 1e-5, INFINITY});
      },
      "links[0]: bandwidth_Bps: inf is out of range");
  Cluster edge = ok;  // the bounds themselves are valid
  edge.devices[0].peak_flops = 1;
  edge.devices[0].op_overhead_s = 1e3;
  edge.default_link.bandwidth_Bps = 1e21;
  EXPECT_NO_THROW(validate_cluster(edge));
}

TEST(Placement, NamedRoundTrip) {
  const Graph g = tiny_training();
  const Cluster c = parse_device_list("cpu:2");
  // x and the dense block on cpu:1 with their backward ops; the rest on cpu:0.
  Placement p = single_device(g, DeviceId(0));
  for (int32_t op : {0, 3, 4, 7, 8}) p.device_of[op] = DeviceId(1);
  validate_placement(g, c, p);
  const NamedPlacement named = to_named(g, c, p);
  EXPECT_EQ(named.graph, "tiny");
  EXPECT_EQ(named.device.at("fc_grad"), "cpu:1");
  EXPECT_EQ(named.device.at("loss"), "cpu:0");
  EXPECT_EQ(named.device.size(), 11u);
  EXPECT_EQ(from_named(g, c, named), p);
  EXPECT_EQ(from_named(g, c, placement_from_json(placement_to_json(named))), p);
  EXPECT_NE(placement_hash(p), placement_hash(single_device(g, DeviceId(0))));
  EXPECT_EQ(placement_hash(p), placement_hash(from_named(g, c, named)));
}

TEST(Placement, MissingOpIsNamed) {
  const Graph g = tiny_forward();
  const Cluster c = parse_device_list("cpu:2");
  NamedPlacement named = to_named(g, c, single_device(g, DeviceId(0)));
  named.device.erase("relu");
  EXPECT_ERROR_CONTAINS(PlacementError, from_named(g, c, named), "op 'relu' has no device");
}

TEST(Placement, UnknownDeviceIsNamed) {
  const Graph g = tiny_forward();
  const Cluster c = parse_device_list("cpu:2");
  NamedPlacement named = to_named(g, c, single_device(g, DeviceId(0)));
  named.device["fc"] = "cuda:7";
  EXPECT_ERROR_CONTAINS(PlacementError, from_named(g, c, named), "op 'fc' is placed on device 'cuda:7'");
  Placement p = single_device(g, DeviceId(0));
  p.device_of[3] = DeviceId(5);
  EXPECT_ERROR_CONTAINS(PlacementError, validate_placement(g, c, p), "op 'fc' is placed on device #5");
}

TEST(Placement, OpNotInGraphIsNamed) {
  const Graph g = tiny_forward();
  const Cluster c = parse_device_list("cpu:2");
  NamedPlacement named = to_named(g, c, single_device(g, DeviceId(0)));
  named.device["ghost"] = "cpu:0";
  EXPECT_ERROR_CONTAINS(PlacementError, from_named(g, c, named), "op 'ghost' is not in graph 'tiny'");
}

TEST(Placement, SplitGroupIsNamed) {
  Graph g = tiny_forward();
  g.mutable_op(OpId(3)).group = "dense";
  g.mutable_op(OpId(4)).group = "dense";
  const Cluster c = parse_device_list("cpu:2");
  Placement p = single_device(g, DeviceId(0));
  p.device_of[4] = DeviceId(1);
  EXPECT_ERROR_CONTAINS(PlacementError, validate_placement(g, c, p), "co-location group 'dense' is split");
  p.device_of[3] = DeviceId(1);
  EXPECT_NO_THROW(validate_placement(g, c, p));
}

TEST(Placement, BackwardFollowsItsForwardOp) {
  const Graph g = tiny_training();
  const Cluster c = parse_device_list("cpu:2");
  Placement p = single_device(g, DeviceId(0));
  p.device_of[8] = DeviceId(1);  // fc_grad away from fc
  EXPECT_ERROR_CONTAINS(PlacementError, validate_placement(g, c, p), "op 'fc_grad' must share a device with 'fc'");
  p = single_device(g, DeviceId(0));
  p.device_of[9] = DeviceId(1);  // w_sgd away from w
  EXPECT_ERROR_CONTAINS(PlacementError, validate_placement(g, c, p), "op 'w_sgd' must share a device with 'w'");
}

TEST(Placement, WrongSize) {
  const Graph g = tiny_forward();
  const Cluster c = parse_device_list("cpu:2");
  Placement p = single_device(g, DeviceId(0));
  p.device_of.pop_back();
  EXPECT_ERROR_CONTAINS(PlacementError, validate_placement(g, c, p), "has 5 entries, graph 'tiny' has 6 ops");
}

}  // namespace
}  // namespace placer
