// A cluster: the devices a placement may use and the links between them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placer/graphs/ids.h"

namespace placer {

enum class DeviceKind : uint8_t { Cpu, Cuda };
const char* device_kind_name(DeviceKind kind);  // "cpu", "cuda"

struct Device {
  std::string name;  // "cpu:0", "cuda:1": unique in the cluster
  DeviceKind kind = DeviceKind::Cpu;
  std::string physical;      // the real device the runtime uses ("cuda:0"); empty = name.
                             // Several virtual devices may share one physical GPU.
  int64_t memory_bytes = 0;  // capacity available to placed tensors
  // Roofline constants for presets without a measured profile.
  double peak_flops = 1e11;     // FLOP/s
  double mem_bandwidth = 1e10;  // bytes/s
  double op_overhead_s = 5e-6;  // fixed cost per operator (launch, dispatch)
  int32_t threads = 0;          // CPU devices: intra-op threads (0 = share of the machine)

  bool operator==(const Device& o) const;
};

// A directed link; transfer time = latency_s + bytes / bandwidth_Bps.
struct Link {
  std::string from;
  std::string to;
  double latency_s = 25e-6;
  double bandwidth_Bps = 7.6e9;
  bool operator==(const Link& o) const;
};

struct Cluster {
  std::string name;    // preset name or file stem
  std::string source;  // where the numbers come from (documentation)
  std::vector<Device> devices;
  std::vector<Link> links;  // pairs not listed use the default link
  Link default_link;        // from/to empty

  int32_t size() const { return static_cast<int32_t>(devices.size()); }
  const Device& device(DeviceId id) const { return devices[id.value]; }
  std::optional<DeviceId> find(std::string_view device_name) const;
  // The link used from a to b (a != b): the listed one, else the default.
  const Link& link(DeviceId from, DeviceId to) const;
  double transfer_seconds(DeviceId from, DeviceId to, int64_t bytes) const;
  bool operator==(const Cluster& o) const;
};

// "cpu:2" -> two CPU devices cpu:0, cpu:1 on this machine; "cpu,cuda:0";
// "cuda:0,cuda:1". Memory and speed take defaults (this machine's RAM split,
// roofline constants) until a profile calibrates them. Throws InputError.
Cluster parse_device_list(std::string_view spec);

// Devices on one GPU at most ("vcuda:N"): each runs on two of the 32 CUDA
// streams torch keeps per GPU; past 16 two of them shared a stream.
inline constexpr int kMaxDevicesPerGpu = 16;

// Throws PlacementError/InputError naming the problem: no devices, duplicate
// names, bad name syntax, non-positive memory or speed, links naming unknown devices.
void validate_cluster(const Cluster& cluster);

}  // namespace placer
