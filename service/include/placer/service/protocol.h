// The wire protocol of the placement service: versioned JSON requests parsed
// into typed structs, and the replies. docs/protocol.md has an example of
// every message. This file depends only on graphs/ so the fuzzer can link it
// alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/pipeline.h"
#include "placer/runtime/runtime.h"

namespace placer::service {

inline constexpr int kProtocolVersion = 1;

enum class RequestType : uint8_t { Health, Policies, Baselines, Place, Evaluate, Optimize, Status, Result, Cancel };
inline constexpr int kRequestTypes = 9;
const char* request_type_name(RequestType type);  // "place", ...

// Machine-readable error codes of error replies.
namespace codes {
inline constexpr const char* kBadJson = "bad_json";
inline constexpr const char* kBadVersion = "bad_version";
inline constexpr const char* kBadRequest = "bad_request";  // missing field, wrong type, bad value
inline constexpr const char* kUnknownType = "unknown_type";
inline constexpr const char* kTooLarge = "too_large";  // message or declared size over a limit
inline constexpr const char* kBadGraph = "bad_graph";
inline constexpr const char* kBadCluster = "bad_cluster";
inline constexpr const char* kBadPlacement = "bad_placement";
inline constexpr const char* kNotFound = "not_found";  // job or policy
inline constexpr const char* kNoFeasible = "no_feasible_placement";
inline constexpr const char* kBusy = "busy";
inline constexpr const char* kDeadline = "deadline_exceeded";
inline constexpr const char* kShuttingDown = "shutting_down";
inline constexpr const char* kInternal = "internal";
}  // namespace codes

// An error reply: the code, the request field at fault (JSON-pointer-like
// "graph.options.layers"; empty when not about one field) and a message.
// An InputError with a code: field() and problem() are the reply's field and message.
class RequestError : public InputError {
 public:
  RequestError(std::string code, std::string field, std::string message)
      : InputError("", std::move(field), std::move(message)), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// Caps applied while parsing, before anything is allocated or built.
struct ProtocolLimits {
  int64_t max_request_bytes = 16 << 20;
  int max_json_depth = 64;
  int64_t max_builder_option = 1 << 20;  // any builder option value
  int64_t max_builder_structure = 4096;  // product of layers / blocks / steps-like options
  int64_t max_refine_samples = 5000;
  int64_t max_budget_samples = 1'000'000;
  double max_budget_seconds = 3600.0;
  int64_t max_deadline_ms = 600'000;
  int64_t max_microbatches = 1024;  // make_pipeline_graph's own cap
  int max_methods = 32;
  int max_string = 256;  // names, ids
};

// A graph: either built by name or given inline in the graph JSON format.
struct GraphSpec {
  std::string builder;  // non-empty: build_graph(builder, options)
  std::map<std::string, int64_t> options;
  bool forward_only = false;
  std::string inline_json;          // non-empty: graph_from_json(inline_json), the client's bytes (not parsed here)
  std::string pt2;                  // non-empty: a torch.export archive (the decoded bytes)
  std::vector<std::string> inputs;  // pt2: optional NAME:SHAPE:DTYPE input shapes
  // Stable text naming the graph's content (for caches).
  std::string cache_key() const;
};

// A cluster: a preset name, a device list ("cpu:2"), or inline cluster JSON.
// Never a path: a request cannot make the server open a file.
struct ClusterSpec {
  std::string preset;
  std::string devices;
  std::string inline_json;
  std::string cache_key() const;
};

struct Budget {
  int64_t samples = 0;   // 0 = unlimited (then seconds must be set)
  double seconds = 0.0;  // 0 = unlimited (then samples must be set)
};

// A request's "id", echoed in its reply as it came: a string, or an integer (-2^63 to 2^64-1) as its digits.
struct RequestId {
  std::string text;      // "" = none
  bool integer = false;  // echoed as a JSON number ("id":7 came back "7")
  bool empty() const { return text.empty(); }
  std::string json() const;  // as it goes in a reply: "\"a1\"", 7
};

struct Request {
  int version = kProtocolVersion;
  RequestId id;  // echoed in the reply
  RequestType type = RequestType::Health;
  int64_t deadline_ms = 0;                       // 0 = the server's default
  GraphSpec graph;                               // baselines, place, evaluate, optimize
  ClusterSpec cluster;                           // baselines, place, evaluate, optimize
  std::string policy;                            // place: a loaded policy's name ("" = default)
  int64_t refine_samples = 0;                    // place: local search budget after decoding
  bool include_placement = true;                 // place, baselines, result
  std::vector<std::string> methods;              // baselines / optimize: placer names
  std::map<std::string, std::string> placement;  // evaluate: op name -> device name
  // evaluate: measure the placement on the server's own devices with the
  // measurement protocol (runtime.h) instead of simulating it; nullopt = simulate.
  std::optional<MeasureOptions> measure;
  Budget budget;            // optimize
  std::string reward_mode;  // optimize: simulated | measured | hybrid (learned jobs); "" = the config's
  // optimize: a learned job. `learned` is the request's train-config object
  // in the schema of `placer train` configs (policy, reward, train,
  // warm_start, run, compare; graph, cluster and paths come from the server),
  // a node of the parsed request that `document` keeps alive; or
  // `learned_policy` names only the policy type. Neither: a search job with `methods`.
  JsonNode learned;
  std::string learned_policy;
  std::shared_ptr<const void> document;
  bool is_learned() const { return learned.present() || !learned_policy.empty(); }
  std::string save_as;  // optimize (learned): keep the result as a named policy
  uint64_t seed = 0;
  std::string job_id;  // status, result, cancel
  // baselines, place, evaluate, optimize: what a placement is judged by
  // (graphs/pipeline.h); `pipeline` only counts with Objective::Pipeline. A
  // learned job's config may repeat them (learned.reward.objective,
  // .microbatches, .schedule): it fills in what the request leaves out and
  // must agree with what it gives.
  Objective objective = Objective::Step;
  PipelineSpec pipeline;
  // Stable text naming the objective (for caches): "step", or
  // "pipeline:<microbatches>:<schedule>".
  std::string objective_key() const;
};

// Parses one request. Throws RequestError naming the field and problem.
Request parse_request(std::string_view text, const ProtocolLimits& limits = {});
// The same; *type is set as soon as the request's version and type are read, so that an error in the
// rest of it can still say which request it was (left unset when the type is missing or unknown).
Request parse_request(std::string_view text, const ProtocolLimits& limits, std::optional<RequestType>* type);

// Best-effort recovery of "id" from a request that failed to parse, so the
// error reply can still be matched by the client. Never throws.
RequestId salvage_request_id(std::string_view text);
// A request's "id" value as its id: a string, or an integer; nullopt for any other value (2^64, 1.5, ...).
std::optional<RequestId> request_id_of(const JsonNode& value);

// Reply builders. `result_json` is a JSON object's text.
std::string ok_reply(const RequestId& id, RequestType type, const std::string& result_json);
std::string error_reply(const RequestId& id, const std::string& type, const std::string& code,
                        const std::string& field, const std::string& message);

// Minimal JSON text helpers used by the reply builders.
using placer::json_number;  // graphs/json_writer.h
using placer::json_quote;

}  // namespace placer::service
