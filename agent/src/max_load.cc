// The max-load placers by name (agent/max_load.h), and `single`.
#include "placer/agent/max_load.h"

#include <chrono>

#include "max_load_placers.h"
#include "placer/env/max_load.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"

namespace placer {

namespace {

// Every node on the first accelerator (the paper's -oneFpga), or on the first CPU without one.
MaxLoadResult single(const Workload& w) {
  const auto start = std::chrono::steady_clock::now();
  MaxLoadResult r;
  r.method = "single";
  r.placement.assign(w.nodes.size(), 0);
  const MaxLoadReport report = max_load(w, r.placement);
  r.max_load = report.max_load;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.note = w.cluster.accelerators > 0 ? "every node on one accelerator" : "every node on one CPU";
  if (!report.feasible) r.note += " (over its memory: the paper's one-device figure ignores memory too)";
  return r;
}

}  // namespace

const std::vector<std::string>& max_load_methods() {
  static const std::vector<std::string> methods = {"dp", "local_search", "ilp", "single"};
  return methods;
}

MaxLoadResult place_max_load(const Workload& w, const std::string& method, const MaxLoadOptions& options) {
  if (method == "dp") return max_load_dp(w, options);
  if (method == "ilp") return max_load_ilp(w, options);
  if (method == "local_search") return max_load_local_search(w, options);
  if (method == "single") return single(w);
  throw InputError(unknown_name("max_load method", method, max_load_methods()));
}

}  // namespace placer
