// The JSON format of the NeurIPS 2020 max-load workloads (graphs/workload.h)
// and the paper's split files, as their public code writes them
// (msr-fiddle/dnn-partitioning: throughput-inputs/, human-experts/).
#pragma once

#include <string>
#include <vector>

#include "placer/graphs/workload.h"

namespace placer {

// Content sniffing: a JSON object with top-level maxSizePerFPGA, nodes and edges.
bool is_workload_json(const std::string& text);
// Reads and checks a workload (InputError naming the field: "nodes[3].cpuLatency:
// must be >= 0, got -1"); two costs on one node's out-edges, edges to unknown
// ids, self-loops, backward-to-forward edges and cycles are errors too.
Workload parse_workload(const std::string& text, const std::string& name);
Workload load_workload(const std::string& path);  // errors prefixed with the path
std::string workload_json(const Workload& w);     // the same format, readable again

// The paper's split files (human-experts/, and what its DP writes):
// {"fpgas": [{"nodes": [id, ...]}, ...], "cpus": [{"nodes": [...]}, ...]}.
// fpgas[m] is accelerator m, cpus[m] is CPU m (device maxFPGAs + m), as
// workload_split_json writes them, so a split reads back to its placement;
// the paper's evaluator writes its CPU group as one list, which is the first
// CPU. Fewer lists than devices are fine; a list past maxFPGAs / maxCPUs that
// names a node is an error naming the field and both counts, as is a node
// listed twice. "maxLoad" and "load" are the file's own figures (-1 in the
// expert files): read, never trusted; the caller recomputes them. A node the
// file leaves out takes the device of its colocation class (the paper's code
// does the same for training graphs); none or two such devices is an error.
WorkloadPlacement parse_workload_split(const std::string& text, const Workload& w);
WorkloadPlacement load_workload_split(const std::string& path, const Workload& w);
// {"maxLoad": .., "fpgas": [{"load": .., "nodes": [..]}], "cpus": [...]}: loads per device as given.
std::string workload_split_json(const Workload& w, const WorkloadPlacement& p, const std::vector<double>& loads,
                                double max_load);

}  // namespace placer
