// Validation of graphs with errors that name the op and field.
#pragma once

#include <string>

#include "placer/graphs/ir.h"

namespace placer {

// Sizes beyond these are "absurd" and rejected.
inline constexpr int64_t kMaxOps = 10'000'000;
inline constexpr int64_t kMaxRank = 16;
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;  // 1 TiB
// A graph's param bytes, and its output bytes, summed over its ops (each op's are capped, their sums
// overflowed int64 past 8,200 ops).
inline constexpr int64_t kMaxGraphBytes = int64_t{1} << 52;  // 4 PiB
// A layer tag (the expert placer matches them with std::regex: 100,000 characters overflowed its stack).
inline constexpr size_t kMaxLayerBytes = 1024;
// An ATen call has a few dozen arguments at most; a file's count is checked before they are read
// (a 30 MB binary graph of one-byte args took 3 GB, then bad_alloc).
inline constexpr size_t kMaxArgsPerOp = 1024;

// A device's or link's rate (FLOP/s, bytes/s) and a fixed cost in seconds
// (cluster files) or a measured time (profiles) must lie in finite ranges that
// hold any real device: outside them, costs made from them overflow or vanish,
// and placers and solvers fail far from the cause.
inline constexpr double kMinRate = 1.0;
inline constexpr double kMaxRate = 1e21;
// "" when v is finite and in [lo, hi]; else "V is out of range (LO to HI UNIT)".
std::string range_problem(double v, double lo, double hi, const char* unit);

// Throws GraphError naming the op and field: bad or negative sizes, dims,
// FLOPs or param bytes, graph-wide param or output bytes past kMaxGraphBytes,
// layer tags over kMaxLayerBytes; args referring to missing inputs; backward/update ops
// whose `forward` is missing; param ops whose param_bytes != output bytes;
// shape mismatches the IR can check (elementwise same-shape ATen ops,
// mm/addmm/bmm inner dims, cat dims, backward outputs vs forward inputs).
void validate_graph(const Graph& graph);

}  // namespace placer
