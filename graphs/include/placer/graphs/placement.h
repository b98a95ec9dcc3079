// A placement: one device per operator.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ids.h"
#include "placer/graphs/ir.h"

namespace placer {

// In memory: device_of[op.value] for every op of one graph on one cluster.
struct Placement {
  std::vector<DeviceId> device_of;
  DeviceId operator[](OpId op) const { return device_of[op.value]; }
  bool operator==(const Placement& o) const { return device_of == o.device_of; }
  bool operator!=(const Placement& o) const { return !(*this == o); }
};

// On disk and on the wire: by operator name and device name, so a placement
// file stays valid when read back against the same graph.
struct NamedPlacement {
  std::string graph;                          // graph name, informative
  std::map<std::string, std::string> device;  // op name -> device name
};

NamedPlacement to_named(const Graph& graph, const Cluster& cluster, const Placement& placement);

// Throws PlacementError naming the op or device: an op of the graph missing
// from the placement, an op the graph lacks, a device the cluster lacks, or a
// co-location group split over devices.
Placement from_named(const Graph& graph, const Cluster& cluster, const NamedPlacement& named);

// Same checks for an in-memory placement.
void validate_placement(const Graph& graph, const Cluster& cluster, const Placement& placement);

// Every op on one device.
Placement single_device(const Graph& graph, DeviceId device);

// Stable 64-bit content hash (for caches).
uint64_t placement_hash(const Placement& placement);

}  // namespace placer
