// A request's graph and cluster, prepared once and shared by the requests
// and jobs that name them (internal to service/).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "placer/env/evaluator.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/measurement.h"
#include "placer/graphs/placement.h"
#include "placer/service/config.h"
#include "placer/service/protocol.h"

namespace placer::service {

// A (graph, cluster) pair prepared once: parsed, validated, its lower bound and
// the place fast path's baselines evaluated. Immutable, shared between requests.
struct PreparedRequest {
  Graph graph;
  Cluster cluster;
  // The same graph and cluster with the simulator's context and cost model,
  // shared by every Environment a request or job builds over this request.
  std::shared_ptr<const PreparedProblem> prepared;
  double lower_bound_s = 0.0;
  struct Baseline {
    std::string method;
    Placement placement;
    StepResult result;
    double place_seconds = 0.0;
    std::string error;  // the placer failed (no feasible placement, ...)
  };
  std::vector<Baseline> baselines;
  int best = -1;  // index of the fastest ok baseline, -1 if none
  // Placements a named policy decoded for this problem, by policy, checkpoint
  // time and seed: a policy's answer is deterministic, so it is decoded once.
  struct PolicyAnswer {
    Placement placement;
    StepResult result;
    std::string note;
  };
  mutable std::mutex memo_mutex;
  mutable std::map<std::string, PolicyAnswer> policy_memo;
};

// Builds a Graph / Cluster from a request's spec. Throws RequestError
// (bad_graph / bad_cluster / too_large) naming the field.
Graph build_request_graph(const GraphSpec& spec, const ServiceConfig& config);
Cluster build_request_cluster(const ClusterSpec& spec, const ServiceConfig& config);

}  // namespace placer::service
