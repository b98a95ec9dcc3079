#include "placer/service/service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include "jobs.h"
#include "json_out.h"
#include "method_list.h"
#include "objective.h"
#include "placer/agent/compare.h"
#include "placer/agent/learned.h"
#include "placer/agent/placer.h"
#include "placer/agent/search.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/timing.h"
#include "placer/graphs/validate.h"
#include "placer/service/metrics.h"
#include "placer/service/workers.h"
#include "prepared.h"

namespace placer::service {
namespace {

double seconds_left(Clock::time_point deadline) {
  return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

PlaceContext place_context(const Graph& graph, const Cluster& cluster, Environment& env, uint64_t seed,
                           double time_limit_s) {
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.seed = seed;
  ctx.time_limit_s = time_limit_s;
  // A search stops there with its best so far: local_search ran its 2000 evaluations whatever the limit.
  ctx.stop_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit_s));
  return ctx;
}

// Runs the methods side by side (agent/compare.h); a baseline's time counts
// placing and simulating.
std::vector<PreparedRequest::Baseline> run_baselines(const std::vector<std::string>& methods, const Graph& graph,
                                                     const Cluster& cluster, Environment& env, uint64_t seed,
                                                     double time_limit_s, int* best = nullptr) {
  std::vector<Compared> compared =
      compare_placers(methods, place_context(graph, cluster, env, seed, std::max(0.05, time_limit_s)));
  if (best) *best = fastest(compared);
  std::vector<PreparedRequest::Baseline> out;
  for (Compared& c : compared) {
    PreparedRequest::Baseline b;
    b.method = c.method;
    b.placement = std::move(c.result.placement);
    b.result = std::move(c.evaluation.result);
    b.place_seconds = c.seconds + c.score_seconds;
    b.error = c.error;
    out.push_back(std::move(b));
  }
  return out;
}

// The server config's lists of placers, checked once at start (a placer listed twice in place.baselines failed
// every baselines request that named none): errors name the config field, as the config loader's do.
void check_configured_methods(const ServiceConfig& config) {
  try {
    check_method_list(config.place_baselines, "place.baselines", MethodNames::kBuildable);
    check_method_list(config.optimize_methods, "jobs.methods", MethodNames::kBuildable);
  } catch (const RequestError& e) {
    throw InputError("", e.field(), e.problem());
  }
}

}  // namespace

// A client's torch.export archive, imported from the request's bytes.
static Graph import_pt2(const GraphSpec& spec) {
  std::string field = "graph.pt2";
  try {
    std::vector<SampleInput> inputs;
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      field = "graph.inputs[" + std::to_string(i) + "]";
      inputs.push_back(parse_sample_input(spec.inputs[i]));
    }
    field = "graph.pt2";
    ImportOptions options;
    options.forward_only = spec.forward_only;
    Graph g = import_exported_program_bytes(spec.pt2, "graph.pt2", inputs, options);
    g.name = "pt2";
    return g;
  } catch (const InputError& e) {
    throw RequestError(codes::kBadGraph, field, e.what());
  }
}

Graph build_request_graph(const GraphSpec& spec, const ServiceConfig& config) {
  Graph graph;
  if (!spec.builder.empty()) {
    auto names = builder_names();
    if (std::find(names.begin(), names.end(), spec.builder) == names.end()) {
      throw RequestError(codes::kBadGraph, "graph.builder", unknown_name("builder", spec.builder, names));
    }
    BuilderOptions options;
    options.values = spec.options;
    options.forward_only = spec.forward_only;
    try {
      graph = build_graph(spec.builder, options);
    } catch (const InputError& e) {
      throw RequestError(codes::kBadGraph, "graph.options", e.what());
    }
  } else if (!spec.pt2.empty()) {
    graph = import_pt2(spec);
  } else {
    try {
      graph = graph_from_json(spec.inline_json);
    } catch (const InputError& e) {
      throw RequestError(codes::kBadGraph, "graph.inline", e.what());
    }
  }
  if (graph.size() == 0) throw RequestError(codes::kBadGraph, "graph", "the graph has no operators");
  if (graph.size() > config.max_ops)
    throw RequestError(codes::kTooLarge, "graph",
                       "the graph has " + std::to_string(graph.size()) + " operators; this server places at most " +
                           std::to_string(config.max_ops));
  return graph;
}

Cluster build_request_cluster(const ClusterSpec& spec, const ServiceConfig& config) {
  Cluster cluster;
  std::string field = spec.devices.empty() ? "cluster" : "devices";
  try {
    if (!spec.preset.empty()) {
      // A name only: resolve_cluster would also open files.
      auto names = cluster_preset_names();
      if (std::find(names.begin(), names.end(), spec.preset) == names.end()) {
        throw RequestError(codes::kBadCluster, "cluster", unknown_name("cluster preset", spec.preset, names));
      }
      cluster = cluster_preset(spec.preset);
    } else if (!spec.devices.empty()) {
      cluster = parse_device_list(spec.devices);
    } else {
      cluster = cluster_from_json(spec.inline_json);
    }
    validate_cluster(cluster);
  } catch (const RequestError&) {
    throw;
  } catch (const InputError& e) {
    throw RequestError(codes::kBadCluster, field, e.what());
  }
  if (cluster.size() > config.max_devices)
    throw RequestError(codes::kTooLarge, field,
                       "the cluster has " + std::to_string(cluster.size()) + " devices; at most " +
                           std::to_string(config.max_devices));
  return cluster;
}

PlacementService::PlacementService(ServiceConfig config, ServiceMetrics* metrics)
    : config_(std::move(config)), metrics_(metrics), started_(Clock::now()) {
  check_configured_methods(config_);  // config errors at start, not per request
  if (config_.default_policy.empty() && !config_.policies.empty())
    config_.default_policy = config_.policies.front().name;
  policies_ = config_.policies;
  if (!config_.state_dir.empty()) {
    saved_dir_ = (std::filesystem::path(config_.state_dir) / "policies").string();
  } else {
    static std::atomic<uint64_t> services{0};
    saved_dir_ = (std::filesystem::temp_directory_path() /
                  ("placer-policies-" + std::to_string(::getpid()) + "-" + std::to_string(services++) + "-" +
                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())))
                     .string();
    saved_dir_temporary_ = true;
  }
  if (!saved_dir_temporary_) load_saved_policies();
  if (metrics_) metrics_->set_policies(static_cast<int64_t>(policies_.size()));
  jobs_ = std::make_unique<JobManager>(config_, metrics_);
  jobs_->save_policy = [this](const std::string& name, const std::string& dir, const std::string& description) {
    save_policy(name, dir, description);
  };
  jobs_->check_policy_name = [this](const std::string& name) {
    for (const auto& p : config_.policies)
      if (p.name == name)
        throw RequestError(codes::kBadRequest, "save_as",
                           "'" + name + "' is a policy of the server's config; choose another name");
  };
  if (!config_.rollouts_bind.empty()) {
    WorkerPoolOptions wo;
    wo.bind = config_.rollouts_bind;
    wo.worker_wait_s = config_.rollouts_wait_s;
    wo.log = [](const std::string& line) { std::fprintf(stderr, "placer serve: rollouts: %s\n", line.c_str()); };
    rollouts_ = std::make_shared<WorkerPool>(wo);
    jobs_->remote = rollouts_;
  }
  jobs_->start();
}

std::string PlacementService::rollouts_endpoint() const { return rollouts_ ? rollouts_->endpoint() : ""; }

PlacementService::~PlacementService() {
  shutdown();
  if (saved_dir_temporary_) {
    std::error_code ec;
    placer::remove_tree(saved_dir_);
  }
}

std::vector<PolicyEntry> PlacementService::policy_list() {
  std::lock_guard<std::mutex> lock(policies_mutex_);
  return policies_;
}

std::optional<PlacementService::PolicyHandle> PlacementService::find_policy(const std::string& name) {
  namespace fs = std::filesystem;
  PolicyHandle h;
  {
    std::lock_guard<std::mutex> lock(policies_mutex_);
    auto it = std::find_if(policies_.begin(), policies_.end(), [&](const PolicyEntry& p) { return p.name == name; });
    if (it == policies_.end()) return std::nullopt;
    h.entry = *it;
  }
  // Its version: the change times of the files it loads from (an ensemble's manifest and members).
  std::vector<std::string> files;
  try {
    files = policy_files(h.entry.checkpoint);
  } catch (const InputError& e) {
    throw RequestError(codes::kNotFound, "policy", "policy '" + name + "': " + e.what());
  }
  for (const std::string& file : files) {
    std::error_code ec;
    auto mtime = fs::last_write_time(file, ec);
    if (ec)
      throw RequestError(codes::kNotFound, "policy",
                         "policy '" + name + "' has no checkpoint on the server (ask `policies`)");
    h.version += std::to_string(mtime.time_since_epoch().count()) + ";";
  }
  {
    std::lock_guard<std::mutex> lock(policies_mutex_);
    auto it = loaded_.find(name);
    if (it != loaded_.end() && it->second.first == h.version) {
      h.policy = it->second.second;
      return h;
    }
  }
  // Loaded outside the lock (a large checkpoint must not stall other names).
  h.policy = LoadedPolicy::load(h.entry.checkpoint);
  std::lock_guard<std::mutex> lock(policies_mutex_);
  loaded_[name] = {h.version, h.policy};
  return h;
}

void PlacementService::begin_shutdown() {
  if (jobs_) jobs_->begin_shutdown();
}

void PlacementService::shutdown() {
  if (jobs_) jobs_->shutdown();
}

int64_t PlacementService::running_jobs() const { return jobs_->running(); }

std::shared_ptr<const PreparedRequest> PlacementService::prepare(const Request& request) {
  // The objective too: a pipeline's answers are not a step's.
  std::string key = request.graph.cache_key() + "\n" + request.cluster.cache_key() + "\n" + request.objective_key();
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->first == key) {
        cache_.splice(cache_.begin(), cache_, it);
        if (metrics_) metrics_->cache_lookup(true);
        return cache_.front().second;
      }
    }
  }
  if (metrics_) metrics_->cache_lookup(false);
  auto p = std::make_shared<PreparedRequest>();
  p->graph = build_request_graph(request.graph, config_);
  check_pipeline_size(request, p->graph, config_);
  p->cluster = build_request_cluster(request.cluster, config_);
  p->prepared = PreparedProblem::make(p->graph, p->cluster);
  Environment env(p->prepared, simulated_env(request));
  p->lower_bound_s = env.lower_bound();
  p->baselines = run_baselines(config_.place_baselines, p->graph, p->cluster, env, 0, 10.0, &p->best);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_.emplace_front(key, p);
  while (static_cast<int>(cache_.size()) > std::max(1, config_.cache_entries)) cache_.pop_back();
  return p;
}

std::string PlacementService::handle(const Request& r, Clock::time_point deadline) {
  switch (r.type) {
    case RequestType::Health: return handle_health();
    case RequestType::Policies: return handle_policies();
    case RequestType::Baselines: return handle_baselines(r, deadline);
    case RequestType::Place: return handle_place(r, deadline);
    case RequestType::Evaluate: return handle_evaluate(r, deadline);
    case RequestType::Optimize: {
      check_method_list(r.methods, "methods", MethodNames::kBuildable);
      auto p = prepare(r);
      // The last moment to give up: once submitted the job exists (and is on disk), so its reply must say
      // so; a deadline_exceeded after it orphaned the job, and the client's retry made a second one.
      if (Clock::now() > deadline)
        throw RequestError(codes::kDeadline, "deadline_ms", "the graph was prepared past the deadline; no job made");
      JsonOut o;
      o.begin().field("job_id", jobs_->submit(r, p)).field("state", "queued").end();
      return o.text();
    }
    case RequestType::Status: return jobs_->status_json(r.job_id);
    case RequestType::Result: return jobs_->result_json(r.job_id, r.include_placement);
    case RequestType::Cancel: return jobs_->cancel(r.job_id);
  }
  throw RequestError(codes::kUnknownType, "type", "unhandled request type");
}

// A place request's answer as it is built: the policy's, a baseline's, refined.
struct PlaceAnswer {
  Placement placement;
  StepResult result;
  std::string method;  // "" = none yet
  std::string note;
  std::optional<double> policy_step_s;  // the policy's own simulated step, when a policy placed it
};

namespace {

// No policy answer (or a failed one): the fastest of the fast path's baselines.
void fall_back_to_baseline(const PreparedRequest& p, bool policy_loaded, PlaceAnswer& a) {
  if (p.best < 0) {
    std::string why;
    for (const auto& b : p.baselines)
      why += (why.empty() ? "" : "; ") + b.method + ": " + (b.error.empty() ? b.result.message : b.error);
    throw RequestError(codes::kNoFeasible, "", "no placement fits this cluster: " + why);
  }
  const auto& b = p.baselines[p.best];
  if (!a.method.empty()) a.note += "policy placement failed (" + std::string(step_status_name(a.result.status)) + "); ";
  a.placement = b.placement;
  a.result = b.result;
  a.method = b.method;
  if (!policy_loaded) a.note += "no policy loaded: best of the fast-path baselines";
}

// No policy named: the default policy's answer stands only when the fast
// path's best baseline is not strictly faster (the answer is never slower
// than the fast path's; `method` says who found it).
void prefer_fast_path(const PreparedRequest& p, PlaceAnswer& a) {
  if (p.best < 0 || a.method.empty() || !a.result.ok()) return;
  const auto& b = p.baselines[p.best];
  if (!b.result.ok() || b.result.step_s >= a.result.step_s) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "the fast path's %s (%.6g s) is faster than %s (%.6g s)", b.method.c_str(),
                b.result.step_s, a.method.c_str(), a.result.step_s);
  a.note += buf;
  a.placement = b.placement;
  a.result = b.result;
  a.method = b.method;
}

// One local search run from the answer, within the request's samples and half the time left.
void refine(const Request& r, const PreparedRequest& p, Clock::time_point deadline, PlaceAnswer& a) {
  Environment env(p.prepared, simulated_env(r));
  SearchOptions so;
  so.methods = {"local_search"};
  so.budget.samples = r.refine_samples;
  so.run_samples = r.refine_samples;
  so.run_seconds = std::max(0.01, 0.5 * seconds_left(deadline));
  so.max_rounds = 1;
  so.from_best = true;  // from the answer, and within run_seconds (it re-planned from four heuristics, untimed)
  const SearchCandidate start{a.method, a.placement, a.result};
  SearchResult refined = search(place_context(p.graph, p.cluster, env, r.seed, so.run_seconds), so, &start);
  if (refined.improved) {
    a.placement = std::move(refined.best.placement);
    a.result = refined.best.result;
    a.method += "+local_search";
  }
}

std::string place_reply(const Request& r, const PreparedRequest& p, const PlaceAnswer& a, Clock::time_point start) {
  JsonOut o;
  o.begin().field("graph", p.graph.name).field("ops", p.graph.size()).field("cluster", p.cluster.name);
  o.begin_array("devices");
  for (const auto& d : p.cluster.devices) o.str(d.name);
  o.end_array();
  write_objective(o, r.objective, r.pipeline);
  o.field("method", a.method);
  write_step(o, a.result);
  write_pipeline_figures(o, r, a.result);
  o.field("lower_bound_s", p.lower_bound_s);
  if (p.lower_bound_s > 0 && a.result.ok()) o.field("gap_to_lower_bound", a.result.step_s / p.lower_bound_s - 1.0);
  o.key("best_baseline");
  if (p.best >= 0) {
    const auto& b = p.baselines[p.best];
    o.begin().field("method", b.method).field("step_s", b.result.step_s).end();
    if (a.result.ok()) o.field("speedup_vs_best_baseline", b.result.step_s / a.result.step_s);
  } else {
    o.null();
  }
  o.field("place_seconds", seconds_since(start));
  if (a.policy_step_s) o.field("policy_step_s", *a.policy_step_s);
  if (!a.note.empty()) o.field("note", a.note);
  if (r.include_placement) o.placement("placement", to_named(p.graph, p.cluster, a.placement));
  o.end();
  return o.text();
}

}  // namespace

// The policy the request names (it must load) or the server's default (when
// it cannot load, the fast path answers).
std::optional<PlacementService::PolicyHandle> PlacementService::place_policy(const Request& r,
                                                                             const std::string& policy_name) {
  std::optional<PolicyHandle> policy;
  if (!policy_name.empty()) {
    try {
      policy = find_policy(policy_name);
    } catch (const RequestError&) {
      if (!r.policy.empty()) throw;
    } catch (const InputError& e) {
      if (!r.policy.empty())
        throw RequestError(codes::kBadRequest, "policy", "policy '" + policy_name + "': " + e.what());
    }
  }
  if (!r.policy.empty() && !policy)
    throw RequestError(codes::kNotFound, "policy", "no policy '" + r.policy + "' is loaded (ask `policies`)");
  return policy;
}

// The policy's placement, decoded once per problem, checkpoint and seed
// (memoised in the prepared request). Leaves `a` without a method when the
// policy cannot place this problem.
void PlacementService::decode_with_policy(const PolicyHandle& policy, const Request& r, const PreparedRequest& p,
                                          Clock::time_point deadline, PlaceAnswer& a) {
  const std::string memo_key = policy.entry.name + "\n" + policy.version + "\n" + std::to_string(r.seed);
  {
    std::lock_guard<std::mutex> lock(p.memo_mutex);
    auto it = p.policy_memo.find(memo_key);
    if (it != p.policy_memo.end()) {
      a.placement = it->second.placement;
      a.result = it->second.result;
      a.method = "policy:" + policy.entry.name;
      return;
    }
  }
  try {
    Environment env(p.prepared, simulated_env(r));
    PlaceResult pr = policy.policy->place(place_context(p.graph, p.cluster, env, r.seed, seconds_left(deadline)));
    a.placement = std::move(pr.placement);
    a.result = env.simulate(a.placement);
    a.method = "policy:" + policy.entry.name;
    std::lock_guard<std::mutex> lock(p.memo_mutex);
    if (p.policy_memo.size() >= 64) p.policy_memo.clear();  // bounded: a few policies x seeds
    p.policy_memo[memo_key] = {a.placement, a.result, ""};
  } catch (const RequestError&) {
    throw;
  } catch (const InputError& e) {
    // The policy cannot place this graph/cluster (e.g. trained for another device count).
    if (!r.policy.empty())
      throw RequestError(codes::kBadRequest, "policy", "policy '" + policy.entry.name + "': " + e.what());
    a.note = "default policy '" + policy.entry.name + "' not applicable (" + e.what() + "); used the best baseline";
  } catch (const NoFeasiblePlacement& e) {
    a.note = "policy '" + policy.entry.name + "' found no feasible placement: " + e.what();
  }
}

// A policy's placement (or the best baseline's), optionally refined by a local search.
std::string PlacementService::handle_place(const Request& r, Clock::time_point deadline) {
  const auto start = Clock::now();
  const std::string policy_name = r.policy.empty() ? config_.default_policy : r.policy;
  const std::optional<PolicyHandle> policy = place_policy(r, policy_name);
  const std::shared_ptr<const PreparedRequest> p = prepare(r);
  PlaceAnswer a;
  if (policy) decode_with_policy(*policy, r, *p, deadline, a);
  if (!a.method.empty() && a.result.ok()) a.policy_step_s = a.result.step_s;
  if (r.policy.empty()) prefer_fast_path(*p, a);
  if (a.method.empty() || !a.result.ok()) fall_back_to_baseline(*p, policy.has_value(), a);
  if (r.refine_samples > 0) refine(r, *p, deadline, a);
  return place_reply(r, *p, a, start);
}

std::string PlacementService::handle_baselines(const Request& r, Clock::time_point deadline) {
  // A request's own methods, checked here; the configured ones were checked at start.
  check_method_list(r.methods, "methods", MethodNames::kBuildable);
  const std::vector<std::string>& methods = r.methods.empty() ? config_.place_baselines : r.methods;
  auto p = prepare(r);
  Environment env(p->prepared, simulated_env(r));
  JsonOut o;
  o.begin().field("graph", p->graph.name).field("ops", p->graph.size()).field("cluster", p->cluster.name);
  write_objective(o, r.objective, r.pipeline);
  o.field("lower_bound_s", p->lower_bound_s);
  o.begin_array("results");
  for (size_t i = 0; i < methods.size(); ++i) {
    const std::string& method = methods[i];
    const PreparedRequest::Baseline* cached = nullptr;
    for (const auto& b : p->baselines)
      if (b.method == method && r.seed == 0) cached = &b;
    PreparedRequest::Baseline fresh;
    // Each method left gets its share of the time left (a search stops at it with its best so far): three
    // local_search rows took 4.3 s under a 2 s deadline, and 32 could hold a request thread 16 minutes.
    const double share = 0.8 * seconds_left(deadline) / static_cast<double>(methods.size() - i);
    if (!cached) fresh = std::move(run_baselines({method}, p->graph, p->cluster, env, r.seed, std::min(30.0, share)).front());
    const PreparedRequest::Baseline& b = cached ? *cached : fresh;
    o.begin().field("method", b.method).field("place_seconds", b.place_seconds);
    if (!b.error.empty()) {
      o.field("status", "no_feasible_placement").field("message", b.error);
      o.key("step_s");  // every row has a step_s, null where there is none (protocol.md)
      o.null();
    } else {
      write_step(o, b.result);
      write_pipeline_figures(o, r, b.result);
      if (r.include_placement) o.placement("placement", to_named(p->graph, p->cluster, b.placement));
    }
    o.end();
  }
  o.end_array().end();
  return o.text();
}

std::string PlacementService::handle_policies() {
  JsonOut o;
  o.begin().field("default", config_.default_policy).begin_array("policies");
  for (const auto& p : policy_list()) {
    // A run folder, an ensemble folder or the checkpoint file itself (as find_policy and LoadedPolicy::load
    // take any): every file it loads from is there.
    bool present = true;
    try {
      for (const std::string& file : policy_files(p.checkpoint)) {
        std::error_code ec;
        present = present && std::filesystem::is_regular_file(file, ec);
      }
    } catch (const InputError&) {
      present = false;
    }
    // Names and descriptions only: the server's paths are not the client's business.
    o.begin().field("name", p.name).field("description", p.description).field("available", present).end();
  }
  o.end_array().end();
  return o.text();
}

std::string PlacementService::handle_health() {
  JsonOut o;
  o.begin().field("status", "serving").field("protocol_version", kProtocolVersion);
  o.field("uptime_s", seconds_since(started_)).field("workers", config_.workers);
  o.field("queue_depth", queue_depth ? queue_depth() : int64_t{0});
  o.field("running_jobs", jobs_->running()).field("queued_jobs", jobs_->queued()).field("stored_jobs", jobs_->stored());
  o.field("policies", static_cast<int64_t>(policy_list().size()));
  if (rollouts_) o.field("rollout_workers", static_cast<int64_t>(rollouts_->workers().size()));
  o.end();
  return o.text();
}

}  // namespace placer::service
