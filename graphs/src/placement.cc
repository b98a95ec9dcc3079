#include "placer/graphs/placement.h"

#include <unordered_map>

#include "placer/graphs/error.h"

namespace placer {

NamedPlacement to_named(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  validate_placement(graph, cluster, placement);
  NamedPlacement named;
  named.graph = graph.name;
  for (int32_t i = 0; i < graph.size(); ++i)
    named.device.emplace(graph.op(OpId(i)).name, cluster.device(placement.device_of[i]).name);
  return named;
}

Placement from_named(const Graph& graph, const Cluster& cluster, const NamedPlacement& named) {
  Placement placement;
  placement.device_of.assign(graph.size(), DeviceId());
  for (const auto& [op_name, device_name] : named.device) {
    auto op = graph.find(op_name);
    if (!op) throw PlacementError("placement: op '" + op_name + "' is not in graph '" + graph.name + "'");
    auto dev = cluster.find(device_name);
    if (!dev)
      throw PlacementError("placement: op '" + op_name + "' is placed on device '" + device_name + "' which cluster '" +
                           cluster.name + "' does not have");
    placement.device_of[op->value] = *dev;
  }
  validate_placement(graph, cluster, placement);
  return placement;
}

void validate_placement(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  if (static_cast<int64_t>(placement.device_of.size()) != graph.size())
    throw PlacementError("placement: has " + std::to_string(placement.device_of.size()) + " entries, graph '" +
                         graph.name + "' has " + std::to_string(graph.size()) + " ops");
  std::unordered_map<std::string, int32_t> group_device;
  for (int32_t i = 0; i < graph.size(); ++i) {
    const Op& op = graph.op(OpId(i));
    const DeviceId d = placement.device_of[i];
    if (!d.valid()) throw PlacementError("placement: op '" + op.name + "' has no device");
    if (d.value >= cluster.size())
      throw PlacementError("placement: op '" + op.name + "' is placed on device #" + std::to_string(d.value) +
                           " but cluster '" + cluster.name + "' has " + std::to_string(cluster.size()) + " devices");
    if (!op.group.empty()) {
      auto [it, inserted] = group_device.emplace(op.group, d.value);
      if (!inserted && it->second != d.value)
        throw PlacementError("placement: co-location group '" + op.group + "' is split: op '" + op.name + "' is on " +
                             cluster.device(d).name + ", another member on " + cluster.devices[it->second].name);
    }
    if (op.forward.valid() && placement.device_of[op.forward.value] != d)
      throw PlacementError("placement: op '" + op.name + "' must share a device with '" + graph.op(op.forward).name +
                           "' (" + cluster.device(placement.device_of[op.forward.value]).name + "), but is on " +
                           cluster.device(d).name);
  }
}

Placement single_device(const Graph& graph, DeviceId device) {
  Placement p;
  p.device_of.assign(graph.size(), device);
  return p;
}

uint64_t placement_hash(const Placement& placement) {
  // FNV-1a over the device indices: stable across runs and machines.
  uint64_t h = 1469598103934665603ull;
  for (DeviceId d : placement.device_of) {
    uint32_t v = static_cast<uint32_t>(d.value);
    for (int k = 0; k < 4; ++k) {
      h ^= (v >> (8 * k)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace placer
