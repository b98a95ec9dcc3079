// Cluster presets (configs/clusters/*.json) and resolution of a user's
// --cluster / --devices argument.
#pragma once

#include <string>
#include <vector>

#include "placer/graphs/cluster.h"

namespace placer {

std::vector<std::string> cluster_preset_names();  // k80x2, k80x4, k80x8, p100x4, p100x8, h100x8, cpu+k80x2
Cluster cluster_preset(const std::string& name);  // throws InputError listing the known names
// A preset name, a cluster JSON file, or a device list ("cpu:2", "cpu,cuda:0").
Cluster resolve_cluster(const std::string& spec);

}  // namespace placer
