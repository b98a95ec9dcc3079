// Entry points of the learned placer used by the CLI and the service.
// (Owned by the learned-placer work; the policies themselves live in agent/src.)
#pragma once

#include <string>
#include <vector>

#include "placer/agent/placer.h"

namespace placer {

// Greedy-decodes a placement for context.graph on context.cluster with the
// policy checkpointed in run_dir (a `placer train` result folder). Throws
// InputError naming the file or field of a malformed checkpoint.
PlaceResult place_with_checkpoint(const std::string& run_dir, const PlaceContext& context);

}  // namespace placer
