#include "placer/service/config.h"

#include <climits>
#include <filesystem>
#include <set>

#include "placer/graphs/serialize.h"
#include "placer/graphs/yaml_reader.h"

namespace placer::service {
namespace {

// Deadlines are added to a steady_clock time point in milliseconds: INT64_MAX overflowed it. 1e9 ms is
// 11.6 days, beyond any request's wait.
constexpr int64_t kMaxDeadlineMs = 1'000'000'000;

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

// A check the field reader cannot make: the field `key` of `fields` fails with `problem` unless `ok`.
void check(const YamlFields& fields, bool ok, const std::string& key, const std::string& problem) {
  if (!ok) fields.fail(fields.path(key), problem);
}

YamlNode parse_root(const std::string& yaml_text) {
  YamlNode root;
  try {
    root = parse_yaml(yaml_text);
  } catch (const YamlSyntaxError& e) {
    throw InputError(std::string("service config: malformed YAML: ") + e.what());
  }
  if (!root.is_map()) throw InputError("service config: expected a mapping at the top level");
  return root;
}

// The top level's own fields (the server's socket, workers, metrics, state).
void read_server(YamlFields& top, const std::string& base_dir, ServiceConfig& c) {
  top.read("endpoint", &c.endpoint);
  top.read("workers", &c.workers, 1, 256);
  top.read("queue_capacity", &c.queue_capacity, 1, INT_MAX);
  top.read("default_deadline_ms", &c.default_deadline_ms, 1, kMaxDeadlineMs);
  top.read("metrics_port", &c.metrics_port, INT_MIN, INT_MAX);
  check(top, c.metrics_port >= -1 && c.metrics_port <= 65535, "metrics_port", "must be -1 (off), 0 (any) or a port");
  top.read("metrics_address", &c.metrics_address);
  top.read("state_dir", &c.state_dir);
  c.state_dir = resolve(base_dir, c.state_dir);
}

void read_limits(YamlFields limits, ServiceConfig& c) {
  limits.read("max_message_bytes", &c.limits.max_request_bytes, 1024, INT64_MAX);
  // Each limit at least 1 (max_refine_samples at least 0): a negative one refused every request, or none.
  limits.read("max_json_depth", &c.limits.max_json_depth, 1, INT_MAX);
  limits.read("max_refine_samples", &c.limits.max_refine_samples, 0, INT64_MAX);
  limits.read("max_budget_samples", &c.limits.max_budget_samples, 1, INT64_MAX);
  limits.read("max_budget_seconds", &c.limits.max_budget_seconds, 1e-3, 1e9);
  limits.read("max_deadline_ms", &c.limits.max_deadline_ms, 1, kMaxDeadlineMs);
  limits.read("max_builder_structure", &c.limits.max_builder_structure, 1, INT64_MAX);
  limits.read("max_ops", &c.max_ops, 1, INT64_MAX);
  limits.read("max_devices", &c.max_devices, 1, INT_MAX);
  limits.finish();
}

void read_place(YamlFields place, ServiceConfig& c) {
  place.read("baselines", &c.place_baselines);
  place.read("cache_entries", &c.cache_entries, 1, 1 << 20);  // 0 kept one all the same
  place.finish();
  check(place, !c.place_baselines.empty(), "baselines", "give at least one placer");
}

void read_jobs(YamlFields jobs, ServiceConfig& c) {
  jobs.read("runners", &c.job_runners, 1, 256);  // a thread each: INT_MAX of them was taken
  // A queue of 0 (or less) or a negative max_jobs answered every optimize `busy`; keep_results_s -1e300 expired
  // every result.
  jobs.read("queue", &c.job_queue, 1, 1 << 20);
  jobs.read("max_jobs", &c.max_jobs, 1, 1 << 24);
  jobs.read("keep_results_s", &c.job_keep_s, 0, 1e9);
  jobs.read("methods", &c.optimize_methods);
  jobs.read("measure", &c.measure_jobs);
  jobs.read("metric_series", &c.job_metric_series, 1, INT_MAX);
  jobs.finish();
}

void read_rollouts(YamlFields rollouts, ServiceConfig& c) {
  rollouts.read("bind", &c.rollouts_bind);
  const bool wait_given = rollouts.read("worker_wait_s", &c.rollouts_wait_s, -1e300, 1e300);
  check(rollouts, c.rollouts_wait_s > 0, "worker_wait_s", "must be > 0");
  check(rollouts, !wait_given || !c.rollouts_bind.empty(), "worker_wait_s",
        "only with rollouts.bind (without it there are no rollout workers to wait for)");
  rollouts.finish();
}

// `policies` (a list of {name, checkpoint, description}, names distinct) and
// `default_policy`, which must name one of them.
void read_policies(YamlFields& top, const std::string& base_dir, ServiceConfig& c) {
  const YamlNode policies = top.get("policies");
  if (policies.present() && !policies.is_null()) {
    if (!policies.is_list()) top.fail("policies", "expected a list of {name, checkpoint}, got " + policies.describe());
    std::set<std::string> names;
    for (size_t i = 0; i < policies.size(); ++i) {
      YamlFields p(policies.at(i), index_path("policies", i), top.on_fail());
      PolicyEntry e;
      p.read("name", &e.name);
      p.read("checkpoint", &e.checkpoint);
      p.read("description", &e.description);
      p.finish();
      e.checkpoint = resolve(base_dir, e.checkpoint);
      if (e.name.empty()) p.fail(p.path("name"), "missing");
      if (e.checkpoint.empty()) p.fail(p.path("checkpoint"), "missing");
      if (!names.insert(e.name).second) p.fail(p.path("name"), "duplicate '" + e.name + "'");
      c.policies.push_back(e);
    }
  }
  top.read("default_policy", &c.default_policy);
  if (!c.default_policy.empty()) {
    bool found = false;
    for (const auto& p : c.policies) found |= p.name == c.default_policy;
    check(top, found, "default_policy", "'" + c.default_policy + "' is not in policies");
  }
}

// `curve`: the server's key pair (the secret inline or from a file) and the
// clients it admits; every key checked when CurveZMQ is on.
void read_curve(YamlFields curve, const std::string& base_dir, ServiceConfig& c) {
  curve.read("enabled", &c.curve.enabled);
  curve.read("server_public_key", &c.curve.server_public_key);
  curve.read("server_secret_key", &c.curve.server_secret_key);
  std::string secret_file;
  curve.read("server_secret_key_file", &secret_file);
  curve.read("allowed_client_keys", &c.curve.allowed_client_keys);
  curve.finish();
  if (!secret_file.empty()) {
    std::string text = read_file(resolve(base_dir, secret_file));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
    c.curve.server_secret_key = text;
  }
  if (c.curve.enabled) {
    check_z85(c.curve.server_public_key, curve.path("server_public_key"));
    check_z85(c.curve.server_secret_key, curve.path("server_secret_key"));
    for (size_t i = 0; i < c.curve.allowed_client_keys.size(); ++i)
      check_z85(c.curve.allowed_client_keys[i], index_path(curve.path("allowed_client_keys"), i));
    check(curve, !c.curve.allowed_client_keys.empty(), "allowed_client_keys", "empty: no client could connect");
  }
}

}  // namespace

ServiceConfig parse_service_config(const std::string& yaml_text, const std::string& base_dir) {
  // Errors: "limits.max_ops: expected an integer, got 'x'" (load_service_config adds the file).
  YamlFields top(parse_root(yaml_text), "", throw_field_error<InputError>());
  ServiceConfig c;
  read_server(top, base_dir, c);
  read_limits(top.section("limits"), c);
  // A request may ask for no more than the maximum; one that asks for nothing gets no more either.
  check(top, c.default_deadline_ms <= c.limits.max_deadline_ms, "default_deadline_ms",
        std::to_string(c.default_deadline_ms) + " is over limits.max_deadline_ms (" +
            std::to_string(c.limits.max_deadline_ms) + ")");
  read_place(top.section("place"), c);
  read_jobs(top.section("jobs"), c);
  read_rollouts(top.section("rollouts"), c);
  read_policies(top, base_dir, c);
  read_curve(top.section("curve"), base_dir, c);
  top.finish();
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
