// A profile's op times for one graph's ops (op_times.h).
#include "op_times.h"

#include <cmath>
#include <optional>

#include "placer/graphs/error.h"
#include "placer/graphs/pipeline.h"

namespace placer::detail {

const std::vector<double>* find_samples(const Samples& samples, const std::string& key, const std::string& inner) {
  auto outer = samples.find(key);
  if (outer == samples.end()) return nullptr;
  auto e = outer->second.find(inner);
  return e == outer->second.end() ? nullptr : &e->second;
}

// The device kind an op was timed on ("cpu", "cuda"): its device_kind, else its device name's prefix.
std::string timing_kind(const OpTiming& t) {
  return t.device_kind.empty() ? t.device.substr(0, t.device.find(':')) : t.device_kind;
}

ProfileSamples index_samples(const Profile& profile) {
  ProfileSamples s;
  for (const OpTiming& t : profile.ops) {
    if (!(t.seconds >= 0.0) || !std::isfinite(t.seconds))
      throw InputError("profile: op '" + t.op + "' has a bad time (seconds must be finite and >= 0)");
    const std::string kind = timing_kind(t);
    const bool contended = t.contended_seconds > 0 && std::isfinite(t.contended_seconds);
    if (!t.op.empty()) {
      s.by_name_device[t.op][t.device].push_back(t.seconds);
      s.by_name_kind[t.op][kind].push_back(t.seconds);
      if (contended) s.cont_by_name_kind[t.op][kind].push_back(t.contended_seconds);
    }
    if (!t.signature.empty()) {
      s.by_sig_kind[t.signature][kind].push_back(t.seconds);
      if (contended) s.cont_by_sig_kind[t.signature][kind].push_back(t.contended_seconds);
    }
  }
  return s;
}

// The name an op's times go by in a profile: a micro-batch copy "x@mbK" of a
// pipelined mini-batch (graphs/pipeline.h) is timed as its op "x" (the
// profile of the training graph it was unrolled from); an accumulation op
// "...@mbK/accJ" keeps its own name (not in the profile: signature, else roofline).
std::string profile_name(const Op& op) {
  if (op.microbatch < 0) return op.name;
  const std::string suffix = "@mb" + std::to_string(op.microbatch);
  if (op.name.size() > suffix.size() && op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return op.name.substr(0, op.name.size() - suffix.size());
  return op.name;
}

bool sgd_accumulates(const Graph& graph) {
  const std::optional<PipelineSpec> spec = pipeline_spec_of(graph);
  return spec && spec->microbatches >= 2;
}

std::string profile_signature(const Graph& graph, OpId id, bool accumulates) {
  const Op& op = graph.op(id);
  if (!accumulates || op.type != op_types::kSgd || op.inputs.size() < 3) return op_signature(graph, id);
  return op_signature(graph, id, 1);
}

// "" when a profile that names this graph (or no graph) is of it: every op
// it timed under one of this graph's op names has that op's signature, where
// it recorded one. Else the first op that differs: a graph rebuilt at another
// size keeps its name and its op names, and matching its ops by name would
// give them the other size's times.
std::string describe_graph_mismatch(const Graph& graph, const Profile& profile) {
  if (!profile.graph.empty() && profile.graph != graph.name) return "";
  std::unordered_map<std::string, const OpTiming*> timed;
  for (const OpTiming& t : profile.ops)
    if (!t.signature.empty()) timed.emplace(t.op, &t);
  if (timed.empty()) return "";
  const bool accumulates = sgd_accumulates(graph);
  for (int32_t o = 0; o < graph.size(); ++o) {
    auto it = timed.find(profile_name(graph.op(OpId(o))));
    if (it == timed.end()) continue;
    const std::string here = profile_signature(graph, OpId(o), accumulates);
    if (here != it->second->signature)
      return "its op '" + it->first + "' was " + it->second->signature + ", here " + here;
  }
  return "";
}

}  // namespace placer::detail
