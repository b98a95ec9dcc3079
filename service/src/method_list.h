// A list of placer names, a request's (methods, learned.warm_start.methods, learned.compare) or the server
// config's (place.baselines, jobs.methods): each name known and listed once (internal to service/).
#pragma once

#include <string>
#include <vector>

namespace placer::service {

// Which names a list takes: kBuildable, what make_placer builds (the registry's placers and those by name
// only, such as guided_search; "unknown placement method"); kRegistered, the registry's placer_names()
// (a train config's lists; "unknown method").
enum class MethodNames { kBuildable, kRegistered };

// Throws RequestError(bad_request) at `field[i]` for the first name that is unknown or listed before i (a
// placer listed twice ran twice). So a checked list is at most the registry's length.
void check_method_list(const std::vector<std::string>& methods, const std::string& field, MethodNames names);

}  // namespace placer::service
