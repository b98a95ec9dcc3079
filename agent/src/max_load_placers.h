// The max-load placers (agent/max_load.h), one file each; private to agent/src.
#pragma once

#include "placer/agent/max_load.h"

namespace placer {

MaxLoadResult max_load_dp(const Workload& w, const MaxLoadOptions& options);            // max_load_dp.cc
MaxLoadResult max_load_ilp(const Workload& w, const MaxLoadOptions& options);           // max_load_ilp.cc
MaxLoadResult max_load_local_search(const Workload& w, const MaxLoadOptions& options);  // max_load_search.cc

}  // namespace placer
