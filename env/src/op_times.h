// Private to env/src: a profile's op times looked up for one graph's ops (by
// name on the graph's own profile, else by signature), and the test of whether
// a profile that names this graph is of it. Used by cost_model.cc's calibration.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/profile.h"

namespace placer::detail {

// A profile's op samples: key (op name or signature) -> device name or kind -> seconds.
using Samples = std::unordered_map<std::string, std::unordered_map<std::string, std::vector<double>>>;

// name -> device name -> samples; name or signature -> device kind -> samples;
// the same by kind for contended times (CPU devices of one host).
struct ProfileSamples {
  Samples by_name_device, by_name_kind, by_sig_kind, cont_by_name_kind, cont_by_sig_kind;
};

// The device kind an op was timed on ("cpu", "cuda"): its device_kind, else its device name's prefix.
std::string timing_kind(const OpTiming& t);

// "" when a profile that names this graph (or no graph) is of it: every op
// it timed under one of this graph's op names has that op's signature, where
// it recorded one. Else the first op that differs: a graph rebuilt at another
// size keeps its name and its op names, and matching its ops by name would
// give them the other size's times.
std::string describe_graph_mismatch(const Graph& graph, const Profile& profile);

// Whether the graph is a pipelined mini-batch of >= 2 micro-batches: its sgd
// ops take the running sum of the earlier micro-batches' gradients as input 1
// (graphs/src/pipeline.cc), an input the training graph's sgd op lacks.
bool sgd_accumulates(const Graph& graph);
// An op's signature as a profile of the graph's training graph recorded it:
// op_signature, less an accumulating sgd op's running sum (sgd_accumulates).
std::string profile_signature(const Graph& graph, OpId op, bool accumulates);

ProfileSamples index_samples(const Profile& profile);
const std::vector<double>* find_samples(const Samples& samples, const std::string& key, const std::string& inner);
// The name an op's times go by in a profile (a micro-batch copy "x@mbK" as its op "x").
std::string profile_name(const Op& op);

// The profile's samples of one graph's ops: by op name on this graph's own
// profile (`by_name`), else by signature (any graph).
class OpTimes {
 public:
  OpTimes(const Graph& graph, const Profile& profile, bool by_name)
      : graph_(graph),
        samples_(index_samples(profile)),
        same_graph_(by_name),
        accumulates_(sgd_accumulates(graph)),
        signatures_(graph.size()) {
    if (!same_graph_) return;
    names_.reserve(graph.size());
    for (int32_t o = 0; o < graph.size(); ++o) names_.push_back(profile_name(graph.op(OpId(o))));
  }

  // Alone: measured on this very device, else on a device of its kind.
  const std::vector<double>* alone(int64_t o, const Device& device, const std::string& kind) {
    const std::vector<double>* found =
        same_graph_ ? find_samples(samples_.by_name_device, name(o), device.name) : nullptr;
    return found ? found : lookup(samples_.by_name_kind, samples_.by_sig_kind, o, kind);
  }
  // With every other CPU device of the host busy.
  const std::vector<double>* contended(int64_t o, const std::string& kind) {
    return lookup(samples_.cont_by_name_kind, samples_.cont_by_sig_kind, o, kind);
  }

 private:
  const std::string& name(int64_t o) const { return names_[o]; }
  const std::vector<double>* lookup(const Samples& by_name, const Samples& by_sig, int64_t o, const std::string& kind) {
    const std::vector<double>* found = same_graph_ ? find_samples(by_name, name(o), kind) : nullptr;
    if (!found && !by_sig.empty()) {
      if (signatures_[o].empty())
        signatures_[o] = profile_signature(graph_, OpId(static_cast<int32_t>(o)), accumulates_);
      found = find_samples(by_sig, signatures_[o], kind);
    }
    return found;
  }

  const Graph& graph_;
  ProfileSamples samples_;
  bool same_graph_;
  bool accumulates_;                     // sgd_accumulates(graph_)
  std::vector<std::string> signatures_;  // per op, made when first needed
  std::vector<std::string> names_;       // per op (same graph only): its profile_name
};

}  // namespace placer::detail
