// Pipeline stages of a graph imported from a torch.export .pt2, named as
// torch.distributed.pipelining takes them: pipeline(module, mb_args,
// split_spec={"layers.4": SplitPoint.BEGINNING, ...}).
//
// The forward ATen ops, in the order the importer recorded them (the model's
// execution order), fall into maximal runs on one device: the stages. A stage
// can begin only where some module the program calls begins (its first op),
// since SplitPoint.BEGINNING cuts before a module's call; the split point is
// the outermost such module. Ops outside every module (glue in the root's
// forward) and a module's own ops between its children's calls run in the
// stage where they fall. A placement is contiguous in module order when every
// device change falls where a module begins and each device holds one stage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ids.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/placement.h"

namespace placer {

struct PipelineStage {
  DeviceId device;
  std::string begins_at;             // the module whose call begins it (SplitPoint.BEGINNING); "" for the first
  std::vector<std::string> modules;  // the outermost modules wholly in it, in call order
  std::vector<OpId> ops;             // its forward ATen ops, in recorded order
};

struct PipelineSplit {
  std::vector<PipelineStage> stages;
  bool contiguous = true;
  std::vector<std::string> breaks;  // when not contiguous: what breaks it, one line each
};

// The stages of PLACEMENT (its forward ops; backward ops follow their forward
// and updates their parameter, so they do not decide stages). Throws
// InputError when the graph does not come from torch.export (no module paths).
PipelineSplit pipeline_split(const Graph& graph, const Cluster& cluster, const Placement& placement);

// The same check alone, before any placing: throws InputError when the graph has no module paths.
void require_module_paths(const Graph& graph);

struct ContiguousAlternative {
  PipelineSplit split;    // contiguous by construction
  Placement placement;    // the whole graph: backward, inputs, parameters and updates follow their forward ops
  int64_t moved_ops = 0;  // forward ATen ops on another device than in the given placement
};

// The contiguous split that moves the fewest forward ATen ops: at most as many
// stages as the given placement's forward ops use devices, each on one of
// those devices, each device at most once (ties: more stages, then earlier
// cuts). Exact by dynamic programming over (cut, set of devices used) when
// the forward ops use at most 8 devices; above that the stages keep the
// devices' order of first use.
ContiguousAlternative best_contiguous_split(const Graph& graph, const Cluster& cluster, const Placement& placement);

// The split's fields, into an open JSON object: "contiguous", "split_spec"
// ({"fqn": "BEGINNING", ...}; only when contiguous), "stages" ([{"device",
// "begins_at", "modules", "ops"}]) and, when not contiguous, "breaks". docs/formats.md describes the file `placer place
// --split-spec` writes around it.
void write_split_json(JsonWriter& out, const Cluster& cluster, const PipelineSplit& split);

}  // namespace placer
