// The devices the runtime builds from a cluster: CPU devices' intra-op threads follow the cores this
// process may run on; a device list's CUDA devices take their GPU's memory.
#include <gtest/gtest.h>

#include "runtime_helpers.h"

namespace placer {
namespace {

using rt_test::with_one_core;

// `taskset -c 0 placer measure --devices cpu:1` gave the device 2 intra-op threads on its one core
// (parse_device_list set threads from every online CPU, and make_devices took that over the mask).
TEST(RuntimeDevices, CpuDeviceThreadsFollowTheAffinityMask) {
  with_one_core([] {
    const Cluster one = parse_device_list("cpu:1");
    EXPECT_EQ(one.devices[0].threads, 1);
    EXPECT_EQ(device_threads(one), std::vector<int>{1});
    // Two devices on one core: not pinned, one thread each.
    EXPECT_EQ(device_threads(parse_device_list("cpu:2")), (std::vector<int>{1, 1}));
    // A cluster file's count is capped at the device's share of the usable cores.
    Cluster file = parse_device_list("cpu:1");
    file.devices[0].threads = 8;
    EXPECT_EQ(device_threads(file), std::vector<int>{1});
    // A runtime made under the mask runs (its executor threads take the devices' counts).
    Runtime rt(one);
    const Graph g = rt_test::hand_mlp();
    EXPECT_TRUE(rt.run_once(g, single_device(g, DeviceId(0))).status == StepStatus::Ok);
  });
  // The whole mask again: cpu:1 gets every usable core, cpu:2 half of them each; a count the cluster
  // gives below its share is kept; a CUDA device's thread is one.
  const int cores = rt_test::allowed_core_count();
  EXPECT_EQ(parse_device_list("cpu:1").devices[0].threads, cores);
  EXPECT_EQ(device_threads(parse_device_list("cpu:1")), std::vector<int>{cores});
  if (cores >= 2) {
    EXPECT_EQ(device_threads(parse_device_list("cpu:2")), (std::vector<int>{cores / 2, cores / 2}));
    Cluster file = parse_device_list("cpu:1");
    file.devices[0].threads = 1;
    EXPECT_EQ(device_threads(file), std::vector<int>{1});
  }
  EXPECT_EQ(device_threads(parse_device_list("cpu:1+cuda:0")), (std::vector<int>{cores, 1}));
}

constexpr int64_t kGiB = int64_t{1} << 30;

// A device list's CUDA device was held to 80 GiB whatever the GPU: an H200's 141 GiB went unused, and a
// 24 GiB GPU was promised 80. The limit is the GPU's memory (build_info's totalGlobalMem), split N ways for
// vcuda:N; 80 GiB stays only where no GPU could be queried (the simulator, CI).
TEST(RuntimeDevices, ADeviceListsGpuMemoryIsTheGpusOwn) {
  const std::vector<int64_t> h200 = {141 * kGiB};
  const Cluster one = parse_device_list("cuda:0");
  EXPECT_EQ(gpu_memory_limit(one, 0, h200), 141 * kGiB);
  EXPECT_EQ(gpu_memory_limit(one, 0, {}), 80 * kGiB);  // no GPU queried: the list's placeholder
  const Cluster virt = parse_device_list("vcuda:4");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gpu_memory_limit(virt, i, h200), 141 * kGiB / 4) << i;
  EXPECT_EQ(gpu_memory_limit(virt, 3, {}), 20 * kGiB);
  // Two GPUs, each its own; a list whose GPU is not among those read keeps the placeholder.
  const Cluster two = parse_device_list("cuda:0,cuda:1");
  EXPECT_EQ(gpu_memory_limit(two, 0, {16 * kGiB, 24 * kGiB}), 16 * kGiB);
  EXPECT_EQ(gpu_memory_limit(two, 1, {16 * kGiB, 24 * kGiB}), 24 * kGiB);
  EXPECT_EQ(gpu_memory_limit(two, 1, {16 * kGiB}), 80 * kGiB);
  // CPU devices of a joined list keep RAM/N; its GPU takes its own.
  const Cluster joined = parse_device_list("cpu:2+cuda:0");
  EXPECT_EQ(gpu_memory_limit(joined, 0, h200), joined.devices[0].memory_bytes);
  EXPECT_EQ(gpu_memory_limit(joined, 2, h200), 141 * kGiB);
  // A limit set on the list's cluster (a test's), and a cluster file's, are kept.
  Cluster set = one;
  set.devices[0].memory_bytes = int64_t{1} << 50;
  EXPECT_EQ(gpu_memory_limit(set, 0, h200), int64_t{1} << 50);
  Cluster file = one;
  file.source = "my_cluster.json";
  EXPECT_EQ(gpu_memory_limit(file, 0, h200), 80 * kGiB);
}

}  // namespace
}  // namespace placer
