// Graphs and placements for the pipeline tests (tests/env/pipeline_*_test.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "placer/frontends/builders.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"

namespace placer::testing_pipeline {

// The mlp builder's training step.
inline Graph mlp_of(int layers, int batch, int width) {
  BuilderOptions o;
  o.values = {{"layers", layers}, {"batch", batch}, {"width", width}};
  return build_graph("mlp", o);
}

// Contiguous stages: the forward ops split into `stages` runs of equal count
// in op order, backward and update ops with their forward (or param) op.
inline Placement stages_of(const Graph& g, int stages) {
  std::vector<int32_t> forward;
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase == Phase::Forward) forward.push_back(i);
  Placement p;
  p.device_of.assign(g.size(), DeviceId(0));
  for (size_t k = 0; k < forward.size(); ++k)
    p.device_of[forward[k]] = DeviceId(static_cast<int32_t>(k * stages / forward.size()));
  for (int32_t i = 0; i < g.size(); ++i)
    if (g.op(OpId(i)).phase != Phase::Forward) p.device_of[i] = p.device_of[g.op(OpId(i)).forward.value];
  return p;
}

}  // namespace placer::testing_pipeline
