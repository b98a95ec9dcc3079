// Serialization of the shared value types with cereal.
//  JSON: the versioned exchange format (docs/formats.md). Loading validates.
//  Binary: fast, for trusted files; still never allocates more than the file holds.
// All loaders throw InputError/GraphError/PlacementError naming the field.
// Graph JSON: graph_json.cc; binary: graph_binary.cc; the others: records_json.cc.
#pragma once

#include <string>

#include "placer/graphs/cluster.h"
#include "placer/graphs/files.h"  // read_file, write_file_atomic
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"
#include "placer/graphs/profile.h"

namespace placer {

inline constexpr int kGraphFormatVersion = 1;

std::string graph_to_json(const Graph& graph);
Graph graph_from_json(const std::string& text);  // validates
std::string graph_to_binary(const Graph& graph);
Graph graph_from_binary(const std::string& bytes);

// By extension: ".json" -> JSON, anything else (".bin", ".graph") -> binary.
void save_graph(const Graph& graph, const std::string& path);
Graph load_graph(const std::string& path);

std::string cluster_to_json(const Cluster& cluster);
Cluster cluster_from_json(const std::string& text);  // validates
void save_cluster(const Cluster& cluster, const std::string& path);
Cluster load_cluster(const std::string& path);

std::string placement_to_json(const NamedPlacement& placement);
NamedPlacement placement_from_json(const std::string& text);
void save_placement(const NamedPlacement& placement, const std::string& path);
NamedPlacement load_placement(const std::string& path);

std::string profile_to_json(const Profile& profile);
Profile profile_from_json(const std::string& text);
void save_profile(const Profile& profile, const std::string& path);
Profile load_profile(const std::string& path);

std::string step_result_to_json(const StepResult& result);
StepResult step_result_from_json(const std::string& text);

}  // namespace placer
