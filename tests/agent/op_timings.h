// Hand-made profiles for the agent tests.
#pragma once

#include <string>

#include "placer/graphs/profile.h"
#include "placer/graphs/cluster.h"

namespace placer::testing {

// Times op `name` at `ms` milliseconds on every device of `cluster` (CPU timings).
inline void time_on_every_device(Profile& profile, const Cluster& cluster, const std::string& name, double ms) {
  for (const Device& d : cluster.devices) {
    OpTiming timing;
    timing.op = name;
    timing.device = d.name;
    timing.device_kind = "cpu";
    timing.seconds = ms * 1e-3;
    profile.ops.push_back(timing);
  }
}

}  // namespace placer::testing
