// placer serve | query | keygen: the placement service and its command-line client.
#include <CLI/CLI.hpp>
// cereal first: it configures rapidjson the same way in every file.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cereal/archives/json.hpp>

#include <sys/stat.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/agent/train.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/stats.h"
#include "placer/service/client.h"
#include "placer/service/config.h"
#include "placer/service/metrics.h"
#include "placer/service/protocol.h"
#include "placer/service/server.h"
#include "placer/service/service.h"

namespace placer::cli {
namespace {

using namespace placer::service;

struct ServeArgs {
  std::string config;
  std::string endpoint;
  int metrics_port = -2;  // -2 = as configured
  int workers = 0;
  std::string state_dir;
};

void run_serve(const ServeArgs& a) {
  ServiceConfig config = load_service_config(a.config);
  if (!a.endpoint.empty()) config.endpoint = a.endpoint;
  if (a.metrics_port != -2) config.metrics_port = a.metrics_port;
  if (a.workers > 0) config.workers = a.workers;
  if (!a.state_dir.empty()) config.state_dir = a.state_dir;

  // Signals go to the waiting main thread only; every thread started below inherits the mask.
  block_shutdown_signals();
  std::unique_ptr<MetricsExposer> exposer;
  std::unique_ptr<ServiceMetrics> metrics;
  if (config.metrics_port >= 0) {
    exposer = std::make_unique<MetricsExposer>(config.metrics_address, config.metrics_port);
    metrics = std::make_unique<ServiceMetrics>(*exposer->registry());
  }
  PlacementService service(config, metrics.get());
  Server server(
      config, [&service](const Request& r, Clock::time_point deadline) { return service.handle(r, deadline); },
      metrics.get());
  service.queue_depth = [&server] { return server.queue_depth(); };
  server.start();
  std::printf("placer serve: listening on %s (%d workers, queue %d, %zu policies%s)\n", server.endpoint().c_str(),
              config.workers, config.queue_capacity, config.policies.size(),
              config.curve.enabled ? ", CurveZMQ on" : "");
  if (exposer)
    std::printf("placer serve: metrics on http://%s:%d/metrics\n", config.metrics_address.c_str(), exposer->port());
  if (!service.rollouts_endpoint().empty())
    std::printf("placer serve: rollout workers connect to %s (placer worker --connect)\n",
                service.rollouts_endpoint().c_str());
  std::fflush(stdout);
  int sig = wait_for_shutdown_signal();
  std::printf("placer serve: %s received, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  service.begin_shutdown();  // a request waiting for the devices ends now, not at its deadline
  server.stop();
  service.shutdown();
  auto s = server.stats();
  std::printf("placer serve: stopped after %lld requests (%lld busy, %lld clients gone)\n",
              static_cast<long long>(s.received), static_cast<long long>(s.busy),
              static_cast<long long>(s.client_gone));
}

// "" when `key` is a CurveZMQ key (40 characters of the Z85 alphabet), else what is wrong (the key itself
// never in it: it may be a secret).
std::string z85_key_problem(const std::string& key) {
  static const std::string alphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (key.size() != 40) return std::to_string(key.size()) + " characters, not 40";
  const size_t bad = key.find_first_not_of(alphabet);
  if (bad != std::string::npos) return "character " + std::to_string(bad + 1) + " is not of the Z85 alphabet";
  return "";
}

// A key given as a file holding one, or inline (40 Z85 characters). A file that exists is read first: a
// path of 40 characters was taken for the key itself.
std::string key_arg(const std::string& value, const std::string& flag) {
  if (value.empty()) return value;
  struct stat st {};
  if (::stat(value.c_str(), &st) == 0) {
    std::string text = read_file(value);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
    const std::string problem = z85_key_problem(text);
    if (!problem.empty()) throw InputError(flag + ": '" + value + "' holds no Z85 key (" + problem + ")");
    return text;
  }
  const std::string problem = z85_key_problem(value);
  if (!problem.empty()) throw InputError(flag + ": no such file, and not a Z85 key inline (" + problem + ")");
  return value;
}

struct QueryArgs {
  std::string endpoint;
  int timeout_ms = 60'000;
  std::string server_key, client_public, client_secret;
  // graph
  std::string graph_file, builder;
  std::vector<std::string> options;
  bool forward_only = false;
  // cluster
  std::string cluster, devices, cluster_file;
  // request-specific
  std::string policy;
  int64_t refine = 0;
  bool no_placement = false;
  std::vector<std::string> methods;
  int64_t samples = 0;
  double seconds = 0;
  uint64_t seed = 0;
  std::string placement_file;
  bool measure = false;        // evaluate: measure on the server's devices
  double measure_budget = 30;  // evaluate --measure: seconds of measured steps at most
  std::string job_id;
  int64_t deadline_ms = 0;
  std::string output;
  std::string raw;
  // optimize: learned jobs
  std::string learned, train_config, reward_mode, save_as;
};

// `--train-config FILE`: a `placer train` config, checked here, sent as the
// request's "learned" object without what the server takes from the request
// (name, graph, cluster, family, held_out, run.output_dir). Also returns the
// config's own sample budget for a request that gives none.
std::string learned_object(const std::string& path, int64_t* samples) {
  TrainConfig c = load_train_config(path);
  if (!c.reward.profile.empty())
    throw InputError(path + ": reward.profile: a file here cannot be read by the server; leave it out");
  if (!c.family.empty() || !c.held_out.empty())
    throw InputError(path + ": family/held_out: a service job trains on the request's one graph");
  *samples =
      c.optimizer.max_samples > 0 ? c.optimizer.max_samples : c.optimizer.updates * c.optimizer.samples_per_update;
  rapidjson::Document d;
  std::string text = train_config_to_json(c);
  d.Parse(text.c_str(), text.size());
  for (const char* key : {"name", "graph", "cluster", "family", "held_out"}) d.RemoveMember(key);
  d["run"].RemoveMember("output_dir");
  d["reward"].RemoveMember("profile");
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  d.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string graph_json(const QueryArgs& a) {
  if (a.graph_file.empty() == a.builder.empty())
    throw InputError("give exactly one of --graph FILE and --builder NAME");
  if (!a.graph_file.empty()) {
    if (!a.options.empty()) throw InputError("--option: builder options apply with --builder only (not --graph)");
    if (a.forward_only) throw InputError("--forward-only: builder options apply with --builder only (not --graph)");
    return "{\"inline\":" + graph_to_json(load_graph(a.graph_file)) + "}";
  }
  std::string opts;
  std::set<std::string> keys;
  for (const auto& kv : a.options) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--option: expected KEY=VALUE, got '" + kv + "'");
    // As `graph build --opt` (the service kept the last of a repeated key and counted both in its limit).
    if (!keys.insert(kv.substr(0, eq)).second) throw InputError("--option " + kv.substr(0, eq) + ": given twice");
    // Builder options are integers (the protocol's graph.options): parsed here, never spliced into the request.
    const std::string value = kv.substr(eq + 1);
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      throw InputError("--option " + kv + ": the value must be an integer");
    opts += (opts.empty() ? "" : ",") + json_quote(kv.substr(0, eq)) + ":" + std::to_string(n);
  }
  return "{\"builder\":" + json_quote(a.builder) + ",\"options\":{" + opts + "}" +
         (a.forward_only ? ",\"forward_only\":true" : "") + "}";
}

std::string cluster_json(const QueryArgs& a) {
  int given = !a.cluster.empty() + !a.devices.empty() + !a.cluster_file.empty();
  if (given != 1) throw InputError("give exactly one of --cluster PRESET, --devices LIST and --cluster-file FILE");
  if (!a.cluster.empty()) return "\"cluster\":" + json_quote(a.cluster);
  if (!a.devices.empty()) return "\"devices\":" + json_quote(a.devices);
  return "\"cluster\":" + cluster_to_json(load_cluster(a.cluster_file));
}

std::string methods_json(const QueryArgs& a) {
  if (a.methods.empty()) return "";
  std::string out = ",\"methods\":[";
  for (size_t i = 0; i < a.methods.size(); ++i) out += (i ? "," : "") + json_quote(a.methods[i]);
  return out + "]";
}

// An optimize request's own fields: the learned policy or train config, reward mode, save_as and the budget.
std::string optimize_fields(const QueryArgs& a) {
  std::string r;
  int64_t samples = a.samples;
  if (!a.learned.empty() && !a.train_config.empty())
    throw InputError("optimize: give --learned TYPE or --train-config FILE, not both");
  if (!a.train_config.empty()) {
    int64_t config_samples = 0;
    r += ",\"learned\":" + learned_object(a.train_config, &config_samples);
    if (samples <= 0 && a.seconds <= 0) samples = config_samples;
  } else if (!a.learned.empty()) {
    r += ",\"learned\":" + json_quote(a.learned);
  }
  if (!a.reward_mode.empty()) r += ",\"reward_mode\":" + json_quote(a.reward_mode);
  if (!a.save_as.empty()) r += ",\"save_as\":" + json_quote(a.save_as);
  if (samples <= 0 && a.seconds <= 0) throw InputError("optimize: give --samples N and/or --seconds S");
  return r + ",\"budget\":{\"samples\":" + std::to_string(samples) + ",\"seconds\":" + json_number(a.seconds) + "}";
}

// The fields of a request that places a graph: graph, cluster, methods, and what each type adds.
std::string placing_fields(const std::string& type, const QueryArgs& a) {
  std::string r = ",\"graph\":" + graph_json(a) + "," + cluster_json(a) + methods_json(a);
  if (a.no_placement) r += ",\"include_placement\":false";
  if (type == "place") {
    if (!a.policy.empty()) r += ",\"policy\":" + json_quote(a.policy);
    if (a.refine > 0) r += ",\"refine_samples\":" + std::to_string(a.refine);
  }
  if (type == "optimize") r += optimize_fields(a);
  if (type == "evaluate") {
    if (a.placement_file.empty()) throw InputError("evaluate: --placement FILE is required");
    JsonWriter w;  // the protocol's {"graph", "device": {op: device}}, not the placement file's own layout
    w.begin().placement("placement", load_placement(a.placement_file)).end();
    r += "," + w.text().substr(1, w.text().size() - 2);
    if (a.measure) r += ",\"measure\":{\"budget_s\":" + format_number(a.measure_budget) + "}";
  }
  return r;
}

std::string build_request(const std::string& type, const QueryArgs& a) {
  std::string r = "{\"version\":" + std::to_string(kProtocolVersion) + ",\"id\":\"cli\",\"type\":" + json_quote(type);
  if (a.deadline_ms > 0) r += ",\"deadline_ms\":" + std::to_string(a.deadline_ms);
  if (a.seed) r += ",\"seed\":" + std::to_string(a.seed);
  if (type == "place" || type == "baselines" || type == "optimize" || type == "evaluate") r += placing_fields(type, a);
  if (type == "status" || type == "result" || type == "cancel") r += ",\"job_id\":" + json_quote(a.job_id);
  if (type == "result" && a.no_placement) r += ",\"include_placement\":false";
  return r + "}";
}

// Prints the reply, then writes it to `output`; returns the process exit status (0 ok, 1 error reply,
// 3 busy). Printed first: a `result` reply is the job's last copy (the server forgets a fetched job),
// so a file that cannot be written must not take the reply with it.
int print_reply(const std::string& reply, const std::string& output) {
  std::printf("%s\n", reply.c_str());
  std::fflush(stdout);
  if (!output.empty()) write_file_atomic(output, reply + "\n");
  if (reply.find("\"status\":\"ok\"") != std::string::npos) return 0;
  auto m = reply.find("\"message\":");
  std::fprintf(stderr, "error: the server answered: %s\n", m == std::string::npos ? reply.c_str() : reply.c_str() + m);
  return reply.find("\"status\":\"busy\"") != std::string::npos ? 3 : 1;
}

void add_graph_cluster_flags(CLI::App* c, QueryArgs& a) {
  c->add_option("--graph", a.graph_file, "Graph file (JSON or binary), sent inline");
  c->add_option("--builder", a.builder,
                "Builder name (nmt, rnnlm, inception_v3, transformer, resnet, mlp), built by the server");
  c->add_option("--option", a.options, "Builder option KEY=VALUE (repeatable)");
  c->add_flag("--forward-only", a.forward_only, "Builder: forward pass only");
  c->add_option("--cluster", a.cluster, "Cluster preset name (k80x4, ...)");
  c->add_option("--devices", a.devices, "Device list (\"cpu:2\", \"cuda:0,cuda:1\")");
  c->add_option("--cluster-file", a.cluster_file, "Cluster JSON file, read here and sent inline");
  c->add_flag("--no-placement", a.no_placement, "Leave the op->device map out of the reply");
}

// --method: for the requests that take methods (not place: the server refuses methods there).
void add_method_flag(CLI::App* c, QueryArgs& a) { c->add_option("--method", a.methods, "Placer name (repeatable)"); }

// `serve`: run the placement service.
void add_serve_command(CLI::App& app) {
  auto serve_args = std::make_shared<ServeArgs>();
  CLI::App* serve = app.add_subcommand("serve", "Run the placement service (ZeroMQ; SIGINT/SIGTERM stop it cleanly)");
  serve->add_option("--config", serve_args->config, "Service config (YAML)")->required()->check(CLI::ExistingFile);
  serve->add_option("--endpoint", serve_args->endpoint, "Override the endpoint (tcp://127.0.0.1:5555; port * = any)");
  serve->add_option("--metrics-port", serve_args->metrics_port, "Prometheus /metrics port (0 = any, -1 = off)")
      ->check(CLI::Range(-1, 65535));
  serve->add_option("--workers", serve_args->workers, "Override the worker count")->check(CLI::Range(1, 256));
  serve->add_option("--state-dir", serve_args->state_dir, "Override where job records are kept");
  serve->callback([serve_args] { run_serve(*serve_args); });
}

using SendRequest = std::function<void(const std::string& type)>;

// `query place|optimize|baselines|evaluate`: the requests that carry a graph and a cluster.
void add_placing_queries(CLI::App* query, const std::shared_ptr<QueryArgs>& q, const SendRequest& send) {
  CLI::App* place = query->add_subcommand("place", "Place a graph with a loaded policy (else the best baseline)");
  add_graph_cluster_flags(place, *q);
  place->add_option("--policy", q->policy, "Policy name (see `query policies`)");
  place->add_option("--refine", q->refine, "Local-search samples after decoding")->check(nonnegative_number());
  place->callback([send] { send("place"); });

  CLI::App* optimize = query->add_subcommand("optimize", "Start an optimize job; prints its job id");
  add_graph_cluster_flags(optimize, *q);
  add_method_flag(optimize, *q);
  optimize->add_option("--samples", q->samples, "Budget: placements evaluated")->check(nonnegative_number());
  optimize->add_option("--seconds", q->seconds, "Budget: wall seconds")->check(nonnegative_number());
  optimize->add_option("--learned", q->learned,
                       "A learned job: train a policy of this type (seq2seq, hierarchical, gnn)");
  optimize
      ->add_option("--train-config", q->train_config,
                   "A learned job with this `placer train` config (its graph, cluster and output_dir are ignored; "
                   "its sample budget is used unless --samples/--seconds)")
      ->check(CLI::ExistingFile);
  optimize->add_option("--reward-mode", q->reward_mode,
                       "Learned job: simulated, measured or hybrid (server's devices)");
  optimize->add_option("--save-as", q->save_as,
                       "Learned job: keep the result as a policy of this name for `place --policy`");
  optimize->callback([send] { send("optimize"); });

  CLI::App* baselines = query->add_subcommand("baselines", "Run algorithmic placers on a graph");
  add_graph_cluster_flags(baselines, *q);
  add_method_flag(baselines, *q);
  baselines->callback([send] { send("baselines"); });

  CLI::App* evaluate =
      query->add_subcommand("evaluate", "Simulate a given placement, or measure it on the server's devices");
  add_graph_cluster_flags(evaluate, *q);
  add_method_flag(evaluate, *q);  // refused below, by name
  evaluate->add_option("--placement", q->placement_file, "Placement JSON file");
  evaluate->add_flag("--measure", q->measure,
                     "Measure it on the server's own devices (median step, " + interval_confidence_label() +
                         " interval; the cluster must run there, e.g. --devices cpu:2)");
  evaluate->add_option("--measure-budget", q->measure_budget, "With --measure: seconds of measured steps at most")
      ->check(nonnegative_number())
      ->check(finite_range(0.0, 3600.0));
  evaluate->callback([send, q, evaluate] {
    if (!q->measure) refuse_given(*evaluate, {"--measure-budget"}, "applies with --measure only");
    refuse_given(*evaluate, {"--method", "--no-placement"},
                 "query evaluate reads neither --method nor --no-placement (it evaluates --placement)");
    send("evaluate");
  });
}

// `query status|result|cancel` (of a job), `policies`, `health` and `raw`.
void add_job_queries(CLI::App* query, const std::shared_ptr<QueryArgs>& q, const SendRequest& send) {
  for (const char* t : {"status", "result", "cancel"}) {
    CLI::App* c = query->add_subcommand(t, std::string("Job ") + t);
    c->add_option("job_id", q->job_id, "Job id from optimize")->required();
    if (std::string(t) == "result") c->add_flag("--no-placement", q->no_placement, "Leave the placement out");
    std::string type = t;
    c->callback([send, type] { send(type); });
  }
  query->add_subcommand("policies", "List the loaded policies")->callback([send] { send("policies"); });
  query->add_subcommand("health", "Server health")->callback([send] { send("health"); });
  CLI::App* raw = query->add_subcommand("raw", "Send a JSON request as given");
  raw->add_option("json", q->raw, "The request text")->required();
  raw->callback([send] { send("raw"); });
}

// `query`: one request to a placement service, its reply printed.
void add_query_command(CLI::App& app) {
  auto q = std::make_shared<QueryArgs>();
  CLI::App* query = app.add_subcommand("query", "Send one request to a placement service and print the JSON reply");
  query->add_option("--endpoint", q->endpoint, "Service endpoint, tcp://HOST:PORT")->required();
  query->add_option("--timeout-ms", q->timeout_ms, "Give up after this long without a reply")->check(positive_number());
  query->add_option("--deadline-ms", q->deadline_ms, "The request's deadline on the server (0: the server's default)")
      ->check(nonnegative_number());
  query->add_option("--seed", q->seed, "Seed for stochastic placers")->check(nonnegative_integer());
  query->add_option("--server-key", q->server_key, "CurveZMQ: the server's public key (Z85 or a file)");
  query->add_option("--client-public-key", q->client_public, "CurveZMQ: this client's public key (Z85 or a file)");
  query->add_option("--client-secret-key", q->client_secret, "CurveZMQ: this client's secret key (Z85 or a file)");
  query->add_option("--output,-o", q->output, "Also write the reply to this file")->check(output_file());
  query->require_subcommand(1);
  query->fallthrough();  // --endpoint, -o, keys may also follow the request name

  SendRequest send = [q](const std::string& type) {
    ClientOptions o;
    o.endpoint = q->endpoint;
    o.timeout_ms = q->timeout_ms;
    o.server_public_key = key_arg(q->server_key, "--server-key");
    o.client_public_key = key_arg(q->client_public, "--client-public-key");
    o.client_secret_key = key_arg(q->client_secret, "--client-secret-key");
    std::string request = type == "raw" ? q->raw : build_request(type, *q);
    Client client(o);
    int rc = print_reply(client.request(request), q->output);
    if (rc != 0) std::exit(rc);
  };
  add_placing_queries(query, q, send);
  add_job_queries(query, q, send);
}

// `keygen`: a CurveZMQ key pair.
void add_keygen_command(CLI::App& app) {
  auto key_out = std::make_shared<std::string>();
  CLI::App* keygen = app.add_subcommand("keygen", "Make a CurveZMQ key pair (PREFIX.public, PREFIX.secret)");
  keygen->add_option("--out", *key_out, "File prefix; without it the keys are printed");
  keygen->callback([key_out] {
    auto [pub, sec] = curve_keypair();
    if (key_out->empty()) {
      std::printf("public: %s\nsecret: %s\n", pub.c_str(), sec.c_str());
      return;
    }
    write_file_atomic(*key_out + ".public", pub + "\n");
    write_file_atomic(*key_out + ".secret", sec + "\n", 0600);  // never readable by others, not even briefly
    std::printf("%s.public\n%s.secret\n", key_out->c_str(), key_out->c_str());
  });
}

}  // namespace

void add_service_commands(CLI::App& app) {
  add_serve_command(app);
  add_query_command(app);
  add_keygen_command(app);
}

}  // namespace placer::cli
