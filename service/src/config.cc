#include "placer/service/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "placer/graphs/serialize.h"

namespace placer::service {
namespace {

template <typename T>
T get(const YAML::Node& node, const char* key, const std::string& path, T fallback) {
  YAML::Node v = node[key];
  if (!v) return fallback;
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(path + key + ": bad value '" + YAML::Dump(v) + "'");
  }
}

std::vector<std::string> get_list(const YAML::Node& node, const char* key, const std::string& path,
                                  std::vector<std::string> fallback) {
  YAML::Node v = node[key];
  if (!v) return fallback;
  if (!v.IsSequence()) throw InputError(path + key + ": expected a list");
  std::vector<std::string> out;
  for (const auto& item : v) out.push_back(item.as<std::string>());
  return out;
}

std::string resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty()) return p;
  std::filesystem::path path(p);
  if (path.is_absolute() || base_dir.empty()) return path.lexically_normal().string();
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

void check_z85(const std::string& key, const std::string& field) {
  if (key.size() != 40)
    throw InputError(field + ": a CurveZMQ key is 40 Z85 characters, got " + std::to_string(key.size()));
}

}  // namespace

ServiceConfig parse_service_config(const std::string& yaml_text, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(std::string("service config: malformed YAML: ") + e.what());
  }
  if (!root.IsMap()) throw InputError("service config: expected a mapping at the top level");
  static const std::set<std::string> kKeys = {"endpoint",       "workers",
                                              "queue_capacity", "default_deadline_ms",
                                              "metrics_port",   "metrics_address",
                                              "state_dir",      "limits",
                                              "place",          "jobs",
                                              "policies",       "default_policy",
                                              "curve",          "rollouts"};
  for (const auto& kv : root)
    if (!kKeys.count(kv.first.as<std::string>()))
      throw InputError("service config: unknown key '" + kv.first.as<std::string>() + "'");

  ServiceConfig c;
  c.endpoint = get(root, "endpoint", "", c.endpoint);
  c.workers = get(root, "workers", "", c.workers);
  if (c.workers < 1 || c.workers > 256) throw InputError("workers: must be in 1..256");
  c.queue_capacity = get(root, "queue_capacity", "", c.queue_capacity);
  if (c.queue_capacity < 1) throw InputError("queue_capacity: must be >= 1");
  c.default_deadline_ms = get(root, "default_deadline_ms", "", c.default_deadline_ms);
  if (c.default_deadline_ms < 1) throw InputError("default_deadline_ms: must be >= 1");
  c.metrics_port = get(root, "metrics_port", "", c.metrics_port);
  if (c.metrics_port < -1 || c.metrics_port > 65535)
    throw InputError("metrics_port: must be -1 (off), 0 (any) or a port");
  c.metrics_address = get(root, "metrics_address", "", c.metrics_address);
  c.state_dir = resolve(base_dir, get<std::string>(root, "state_dir", "", ""));

  if (YAML::Node l = root["limits"]) {
    c.limits.max_request_bytes = get(l, "max_message_bytes", "limits.", c.limits.max_request_bytes);
    if (c.limits.max_request_bytes < 1024) throw InputError("limits.max_message_bytes: must be >= 1024");
    c.limits.max_json_depth = get(l, "max_json_depth", "limits.", c.limits.max_json_depth);
    c.limits.max_refine_samples = get(l, "max_refine_samples", "limits.", c.limits.max_refine_samples);
    c.limits.max_budget_samples = get(l, "max_budget_samples", "limits.", c.limits.max_budget_samples);
    c.limits.max_budget_seconds = get(l, "max_budget_seconds", "limits.", c.limits.max_budget_seconds);
    c.limits.max_deadline_ms = get(l, "max_deadline_ms", "limits.", c.limits.max_deadline_ms);
    c.limits.max_builder_structure = get(l, "max_builder_structure", "limits.", c.limits.max_builder_structure);
    c.max_ops = get(l, "max_ops", "limits.", c.max_ops);
    c.max_devices = get(l, "max_devices", "limits.", c.max_devices);
  }
  if (YAML::Node p = root["place"]) {
    c.place_baselines = get_list(p, "baselines", "place.", c.place_baselines);
    c.cache_entries = get(p, "cache_entries", "place.", c.cache_entries);
  }
  if (c.place_baselines.empty()) throw InputError("place.baselines: give at least one placer");
  if (YAML::Node j = root["jobs"]) {
    c.job_runners = get(j, "runners", "jobs.", c.job_runners);
    c.job_queue = get(j, "queue", "jobs.", c.job_queue);
    c.max_jobs = get(j, "max_jobs", "jobs.", c.max_jobs);
    c.job_keep_s = get(j, "keep_results_s", "jobs.", c.job_keep_s);
    c.optimize_methods = get_list(j, "methods", "jobs.", c.optimize_methods);
    c.measure_jobs = get(j, "measure", "jobs.", c.measure_jobs);
    c.job_metric_series = get(j, "metric_series", "jobs.", c.job_metric_series);
  }
  if (c.job_metric_series < 1) throw InputError("jobs.metric_series: must be >= 1");
  if (YAML::Node r = root["rollouts"]) {
    c.rollouts_bind = get<std::string>(r, "bind", "rollouts.", "");
    c.rollouts_wait_s = get(r, "worker_wait_s", "rollouts.", c.rollouts_wait_s);
    if (c.rollouts_wait_s <= 0) throw InputError("rollouts.worker_wait_s: must be > 0");
  }
  if (c.job_runners < 1) throw InputError("jobs.runners: must be >= 1");
  if (YAML::Node ps = root["policies"]) {
    if (!ps.IsSequence()) throw InputError("policies: expected a list of {name, checkpoint}");
    std::set<std::string> names;
    for (size_t i = 0; i < ps.size(); ++i) {
      std::string at = "policies[" + std::to_string(i) + "].";
      PolicyEntry e;
      e.name = get<std::string>(ps[i], "name", at, "");
      e.checkpoint = resolve(base_dir, get<std::string>(ps[i], "checkpoint", at, ""));
      e.description = get<std::string>(ps[i], "description", at, "");
      if (e.name.empty()) throw InputError(at + "name: missing");
      if (e.checkpoint.empty()) throw InputError(at + "checkpoint: missing");
      if (!names.insert(e.name).second) throw InputError(at + "name: duplicate '" + e.name + "'");
      c.policies.push_back(e);
    }
  }
  c.default_policy = get<std::string>(root, "default_policy", "", "");
  if (!c.default_policy.empty()) {
    bool found = false;
    for (const auto& p : c.policies) found |= p.name == c.default_policy;
    if (!found) throw InputError("default_policy: '" + c.default_policy + "' is not in policies");
  }
  if (YAML::Node cv = root["curve"]) {
    c.curve.enabled = get(cv, "enabled", "curve.", false);
    c.curve.server_public_key = get<std::string>(cv, "server_public_key", "curve.", "");
    c.curve.server_secret_key = get<std::string>(cv, "server_secret_key", "curve.", "");
    std::string secret_file = get<std::string>(cv, "server_secret_key_file", "curve.", "");
    if (!secret_file.empty()) {
      std::string text = read_file(resolve(base_dir, secret_file));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
      c.curve.server_secret_key = text;
    }
    c.curve.allowed_client_keys = get_list(cv, "allowed_client_keys", "curve.", {});
    if (c.curve.enabled) {
      check_z85(c.curve.server_public_key, "curve.server_public_key");
      check_z85(c.curve.server_secret_key, "curve.server_secret_key");
      for (size_t i = 0; i < c.curve.allowed_client_keys.size(); ++i)
        check_z85(c.curve.allowed_client_keys[i], "curve.allowed_client_keys[" + std::to_string(i) + "]");
      if (c.curve.allowed_client_keys.empty())
        throw InputError("curve.allowed_client_keys: empty: no client could connect");
    }
  }
  return c;
}

ServiceConfig load_service_config(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  try {
    return parse_service_config(read_file(path), dir);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace placer::service
