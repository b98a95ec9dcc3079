// The service configuration (configs/service.yaml).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placer/service/protocol.h"

namespace placer::service {

struct PolicyEntry {
  std::string name;        // what requests call it
  std::string checkpoint;  // a `placer train` run folder (resolved against the config's folder)
  std::string description;
};

struct CurveConfig {
  bool enabled = false;
  std::string server_public_key;                 // Z85, 40 characters
  std::string server_secret_key;                 // Z85, 40 characters
  std::vector<std::string> allowed_client_keys;  // Z85 public keys
};

struct ServiceConfig {
  std::string endpoint = "tcp://127.0.0.1:5555";
  int workers = 2;
  int queue_capacity = 64;  // requests waiting for a worker; beyond: `busy`
  int64_t default_deadline_ms = 30'000;
  int metrics_port = -1;  // -1 = no exposition, 0 = any free port
  std::string metrics_address = "0.0.0.0";
  std::string state_dir;  // job records survive restarts here ("" = memory only)
  ProtocolLimits limits;
  int64_t max_ops = 50'000;  // graphs larger than this are refused
  int max_devices = 256;
  // Place fast path.
  std::vector<std::string> place_baselines = {"single", "round_robin", "expert", "m_topo", "m_etf",
                                              "m_sct",  "heft",        "dp",     "mincut", "offload_updates"};
  int cache_entries = 32;  // prepared (graph, cluster) problems kept
  // Optimize jobs.
  int job_runners = 1;         // jobs running at once
  int job_queue = 16;          // jobs waiting; beyond: `busy`
  int max_jobs = 1000;         // records kept (finished ones expire first)
  double job_keep_s = 3600.0;  // finished results kept this long unless fetched
  std::vector<std::string> optimize_methods = {"m_etf", "heft", "local_search"};
  // Learned jobs may use measured/hybrid rewards on the server's own devices
  // (one such job at a time). Off by default: measuring runs client models.
  bool measure_jobs = false;
  int job_metric_series = 16;  // learned jobs with reward series in /metrics (oldest finished dropped)
  // Rollout workers for learned jobs: a WorkerPool bound here ("" = evaluate in
  // the job runner); `placer worker --connect` processes join it.
  std::string rollouts_bind;
  double rollouts_wait_s = 60.0;  // a batch waits this long for a worker able to do it
  std::vector<PolicyEntry> policies;
  std::string default_policy;  // "" = the first policy, if any
  CurveConfig curve;
};

// Reads and validates a YAML config; relative paths are resolved against the
// config file's folder. Throws InputError naming the key.
ServiceConfig load_service_config(const std::string& path);
ServiceConfig parse_service_config(const std::string& yaml_text, const std::string& base_dir);

}  // namespace placer::service
