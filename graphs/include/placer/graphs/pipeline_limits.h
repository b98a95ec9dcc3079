// The largest unrolled mini-batch make_pipeline_graph builds: a header of its own, so that the service can
// refuse a request past it as too large (naming `microbatches`) without every includer of pipeline.h
// rebuilding when it moves.
#pragma once

#include <cstdint>

namespace placer {

// An unrolled mini-batch holds about 2 KB per op (measured: 1,166,336 ops of the default transformer at 1024
// micro-batches peaked at 2.3 GB; 2,044,208 of an nmt at 2 micro-batches, with its 980,232-op training graph, at
// 3.1 GB): 4 million ops is about 8 GB, a third of a 24 GB machine. kMaxOps (10 million, what a file may hold)
// let 6.2 million through, which ran out of memory at 10.8 GB.
inline constexpr int64_t kMaxUnrolledOps = 4'000'000;

}  // namespace placer
