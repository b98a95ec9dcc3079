// Cluster presets load, validate and say where their numbers come from.
#include "placer/env/presets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../scratch_dir.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

TEST(Presets, EveryPresetLoadsAndValidates) {
  const std::vector<std::string> names = cluster_preset_names();
  for (const char* expected : {"k80x2", "k80x4", "k80x8", "p100x4", "p100x8", "h100x8", "cpu+k80x2"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Cluster c = cluster_preset(name);
    EXPECT_NO_THROW(validate_cluster(c));
    EXPECT_EQ(c.name, name);
    EXPECT_GT(c.source.size(), 100u) << "the source must document the numbers";
    for (const Device& d : c.devices) {
      EXPECT_GT(d.memory_bytes, 0);
      EXPECT_GT(d.peak_flops, 0);
      EXPECT_GT(d.mem_bandwidth, 0);
    }
  }
}

TEST(Presets, PublishedNumbers) {
  const Cluster k80 = cluster_preset("k80x4");
  ASSERT_EQ(k80.size(), 4);
  EXPECT_EQ(k80.devices[3].name, "cuda:3");
  EXPECT_EQ(k80.devices[0].kind, DeviceKind::Cuda);
  EXPECT_DOUBLE_EQ(k80.devices[0].peak_flops, 4.37e12);
  // Placeto's simulator: 25 us + 7,600 bytes/us.
  EXPECT_DOUBLE_EQ(k80.transfer_seconds(DeviceId(0), DeviceId(1), 7600), 26e-6);
  EXPECT_EQ(cluster_preset("k80x2").size(), 2);
  EXPECT_EQ(cluster_preset("k80x8").size(), 8);
  EXPECT_EQ(cluster_preset("p100x8").size(), 8);
  const Cluster h100 = cluster_preset("h100x8");
  EXPECT_EQ(h100.size(), 8);
  EXPECT_GT(h100.link(DeviceId(0), DeviceId(7)).bandwidth_Bps, 100e9);
  const Cluster mixed = cluster_preset("cpu+k80x2");
  ASSERT_EQ(mixed.size(), 3);
  EXPECT_EQ(mixed.devices[0].kind, DeviceKind::Cpu);
  EXPECT_EQ(mixed.devices[1].name, "cuda:0");
  EXPECT_LT(mixed.devices[0].peak_flops, mixed.devices[1].peak_flops);
}

TEST(Presets, ResolveNamesFilesAndDeviceLists) {
  EXPECT_EQ(resolve_cluster("p100x4").size(), 4);
  const Cluster cpus = resolve_cluster("cpu:2");
  ASSERT_EQ(cpus.size(), 2);
  EXPECT_EQ(cpus.devices[1].name, "cpu:1");
  Cluster custom = cluster_preset("k80x2");
  custom.name = "";
  custom.devices[1].memory_bytes = 123456;
  // The name comes from the file's: a folder of this process's own keeps it.
  const ScratchDir dir("presets");
  const std::string path = dir / "my_box.json";
  save_cluster(custom, path);
  const Cluster loaded = resolve_cluster(path);
  EXPECT_EQ(loaded.name, "my_box");
  EXPECT_EQ(loaded.devices[1].memory_bytes, 123456);
}

TEST(Presets, ErrorsNameTheProblem) {
  try {
    cluster_preset("k80x3");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("k80x3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("h100x8"), std::string::npos);
  }
  EXPECT_THROW(cluster_preset("../../etc/passwd"), InputError);
  EXPECT_THROW(resolve_cluster(""), InputError);
  EXPECT_THROW(resolve_cluster("/nonexistent/box.json"), InputError);
  EXPECT_THROW(resolve_cluster("tpu:4"), InputError);
  const std::string path = ::testing::TempDir() + "/broken_cluster_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(path);
    out << R"({"format":"placer.cluster","version":1,"devices":[{"name":"cuda:0","memory_bytes":-5}]})";
  }
  EXPECT_THROW(resolve_cluster(path), InputError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace placer
