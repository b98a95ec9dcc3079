// Private to frontends/: where the modules of an imported torch.export graph
// run in its forward ATen ops, shared by pipeline_split.cc and
// contiguous_split.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "placer/graphs/ir.h"

namespace placer::detail {

struct ModuleRange {
  std::string name;   // "layers.3"
  int64_t first = 0;  // its first and last forward op, as positions in ModuleIndex::ops
  int64_t last = 0;
};

struct ModuleIndex {
  std::vector<OpId> ops;             // the forward ATen ops, in recorded order
  std::vector<ModuleRange> modules;  // the called modules that ran some of them, in call order
  // position -> the outermost module whose single call begins there: where
  // SplitPoint.BEGINNING can start a stage.
  std::map<int64_t, std::string> cut_at;
};

// Throws InputError when the graph has no module paths (not from torch.export).
ModuleIndex index_modules(const Graph& graph);

// The outermost modules wholly inside positions [begin, end), in call order.
std::vector<std::string> modules_within(const ModuleIndex& index, int64_t begin, int64_t end);

}  // namespace placer::detail
