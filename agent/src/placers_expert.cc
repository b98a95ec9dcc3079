// What a human would do, per model family, from the builders' Op::layer tags:
//  - RNNs (lstmK / enc_lstmK / dec_lstmK): one LSTM layer per device (encoder
//    and decoder layer K together, as GNMT), attention and softmax on the
//    devices left over (the last one when none is left), embedding with layer 0;
//  - Inception (mixed_*/branch*): the branches of each module spread over the
//    devices, stem, concats and head on device 0;
//  - blocks (Transformer layerK / dec_layerK, ResNet stageS_blockK, MLP fcK)
//    and untagged imported graphs: contiguous runs of blocks (or of co-location
//    groups in topological order), balanced by work.
// Ops with other tags follow their producers (or, for sources, consumers).
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "placers_common.h"

namespace placer {
namespace {

// Splits weights into at most n contiguous parts minimizing the largest.
std::vector<int32_t> balanced_contiguous(const std::vector<double>& w, int32_t n) {
  const int32_t B = static_cast<int32_t>(w.size());
  std::vector<int32_t> part(B, 0);
  if (B == 0 || n <= 1) return part;
  if (B <= n) {  // one block per device
    for (int32_t i = 0; i < B; ++i) part[i] = i;
    return part;
  }
  std::vector<double> prefix(B + 1, 0.0);
  for (int32_t i = 0; i < B; ++i) prefix[i + 1] = prefix[i] + w[i];
  if (B > 400) {  // greedy by prefix sums
    for (int32_t i = 0; i < B; ++i) {
      const double mid = prefix[i] + w[i] / 2;
      part[i] = std::min(n - 1, static_cast<int32_t>(mid / std::max(prefix[B], 1e-30) * n));
    }
    return part;
  }
  const double inf = 1e300;
  // best[s][j]: parts 0..s cover the first j items.
  std::vector<std::vector<double>> best(n, std::vector<double>(B + 1, inf));
  std::vector<std::vector<int32_t>> cut(n, std::vector<int32_t>(B + 1, 0));
  for (int32_t j = 0; j <= B; ++j) best[0][j] = prefix[j];
  for (int32_t s = 1; s < n; ++s)
    for (int32_t j = 0; j <= B; ++j)
      for (int32_t i = 0; i <= j; ++i) {
        const double v = std::max(best[s - 1][i], prefix[j] - prefix[i]);
        if (v < best[s][j]) best[s][j] = v, cut[s][j] = i;
      }
  int32_t j = B;
  for (int32_t s = n - 1; s >= 0; --s) {
    const int32_t i = s == 0 ? 0 : cut[s][j];
    for (int32_t t = i; t < j; ++t) part[t] = s;
    j = i;
  }
  return part;
}

// The groups of a problem with their tags: a group's tag is the layer of its
// first forward op that has one (else of its first op that has one); by[g]:
// that op (-1: untagged).
struct Tagged {
  const UnitProblem& p;
  std::vector<std::string> tag;
  std::vector<int32_t> by;
};

Tagged tag_groups(const UnitProblem& p, const Graph& graph) {
  Tagged t{p, std::vector<std::string>(p.groups()), std::vector<int32_t>(p.groups(), -1)};
  for (int32_t g = 0; g < p.groups(); ++g) {
    for (int32_t u : p.members[g]) {
      const Op& op = graph.op(OpId(u));
      if (op.layer.empty()) continue;
      if (t.tag[g].empty() || op.phase == Phase::Forward) {
        t.tag[g] = op.layer;
        t.by[g] = u;
        if (op.phase == Phase::Forward) break;
      }
    }
  }
  return t;
}

// The tags are matched by hand (a prefix, then a scan): std::regex_match
// recursed once per character, and a long tag overflowed the stack.

// An LSTM layer tag, (enc_|dec_)?lstm<decimal digits>: its digits, else empty.
std::string_view lstm_digits(std::string_view tag) {
  if (tag.substr(0, 4) == "enc_" || tag.substr(0, 4) == "dec_") tag.remove_prefix(4);
  if (tag.substr(0, 4) != "lstm") return {};
  tag.remove_prefix(4);
  const bool digits = std::all_of(tag.begin(), tag.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits ? tag : std::string_view();
}

bool is_lstm_tag(const std::string& tag) { return !lstm_digits(tag).empty(); }

// An Inception branch tag, mixed_<module: no '/'>/<branch: no line break>,
// both non-empty: {"mixed_<module>", branch}.
struct BranchTag {
  std::string module, branch;
};
std::optional<BranchTag> branch_tag(const std::string& tag) {
  const size_t slash = tag.find('/');
  if (tag.compare(0, 6, "mixed_") != 0 || slash == std::string::npos || slash <= 6 || slash + 1 == tag.size() ||
      tag.find_first_of("\n\r", slash) != std::string::npos)
    return std::nullopt;
  return BranchTag{tag.substr(0, slash), tag.substr(slash + 1)};
}

bool is_branch_tag(const std::string& tag) { return branch_tag(tag).has_value(); }

bool is_edge_tag(const std::string& tag) {
  for (const char* edge : {"embedding", "stem", "head", "loss", "input"})
    if (tag == edge) return true;
  return false;
}

// What a family's rule decided: the devices of the groups it places (the
// others stay -1) and what it did.
struct FamilyPlan {
  std::string family;
  std::vector<int32_t> group_device;
};

// A family known by its tags: it applies when some group's tag is one.
struct TaggedFamily {
  bool (*tags)(const std::string& tag);
  FamilyPlan (*plan)(const Tagged& t);
};

// A plan of the family that decides no group yet.
FamilyPlan undecided(const Tagged& t, std::string family) {
  return FamilyPlan{std::move(family), std::vector<int32_t>(t.p.groups(), -1)};
}

// Each group's LSTM layer index (-1: not an LSTM tag). InputError naming the
// tagging op's layer field for an index not below the number of ops.
std::vector<int64_t> lstm_layers(const Tagged& t) {
  std::vector<int64_t> layer(t.p.groups(), -1);
  for (int32_t g = 0; g < t.p.groups(); ++g) {
    const std::string_view digits = lstm_digits(t.tag[g]);
    if (digits.empty()) continue;
    int64_t l = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), l);
    if (ec != std::errc() || end != digits.data() + digits.size() || l >= t.p.n)
      throw InputError("op '" + t.p.unit_names[t.by[g]] + "': layer: '" + t.tag[g].substr(0, 64) +
                       (t.tag[g].size() > 64 ? "...'" : "'") + ": LSTM layer index must be below the graph's " +
                       std::to_string(t.p.n) + " ops");
    layer[g] = l;
  }
  return layer;
}

// RNNs: LSTM layer l (encoder and decoder together) on device l (spread when
// layers outnumber devices), attention and softmax on the devices left over
// (the last one when none is left), the embedding with layer 0.
FamilyPlan rnn_plan(const Tagged& t) {
  FamilyPlan plan = undecided(t, "rnn: one LSTM layer per device, attention and softmax on the others");
  const int32_t G = t.p.groups(), n = t.p.k;
  const std::vector<int64_t> layer = lstm_layers(t);
  const int64_t L = *std::max_element(layer.begin(), layer.end()) + 1;  // below the ops: int32
  std::vector<std::string> specials;
  for (const char* s : {"attention", "softmax"})
    if (std::find(t.tag.begin(), t.tag.end(), s) != t.tag.end()) specials.push_back(s);
  auto layer_device = [&](int64_t l) { return static_cast<int32_t>(n > L ? l : l * n / L); };
  std::map<std::string, int32_t> special_device;
  for (size_t i = 0; i < specials.size(); ++i)
    special_device[specials[i]] = static_cast<int32_t>(n > L ? L + static_cast<int64_t>(i) % (n - L) : n - 1);
  for (int32_t g = 0; g < G; ++g) {
    if (layer[g] >= 0)
      plan.group_device[g] = layer_device(layer[g]);
    else if (special_device.count(t.tag[g]))
      plan.group_device[g] = special_device[t.tag[g]];
    else if (t.tag[g] == "embedding")
      plan.group_device[g] = layer_device(0);
  }
  return plan;
}

// Inception: the branches of each module dealt over the devices in order;
// stem, module concats, head and loss on device 0.
FamilyPlan inception_plan(const Tagged& t) {
  FamilyPlan plan = undecided(t, "inception: branches of each module spread over the devices");
  const int32_t G = t.p.groups(), n = t.p.k;
  std::map<std::string, std::vector<std::string>> branches;  // module -> branch names in order
  for (const auto& tag : t.tag)
    if (std::optional<BranchTag> b = branch_tag(tag)) {
      auto& v = branches[b->module];
      if (std::find(v.begin(), v.end(), b->branch) == v.end()) v.push_back(b->branch);
    }
  for (int32_t g = 0; g < G; ++g) {
    if (std::optional<BranchTag> b = branch_tag(t.tag[g])) {
      const auto& v = branches[b->module];
      plan.group_device[g] = static_cast<int32_t>(std::find(v.begin(), v.end(), b->branch) - v.begin()) % n;
    } else if (!t.tag[g].empty()) {
      plan.group_device[g] = 0;  // stem, module concats, head, loss
    }
  }
  return plan;
}

// Blocks (Transformer layerK / dec_layerK, ResNet stageS_blockK, MLP fcK):
// the tagged blocks in order of first appearance, in contiguous runs
// balanced by work; edge tags (embedding, stem, head, loss, input) follow
// their neighbours.
std::optional<FamilyPlan> blocks_plan(const Tagged& t) {
  const UnitProblem& p = t.p;
  std::vector<std::string> blocks;
  std::map<std::string, int32_t> block_of;
  for (int32_t g : groups_by_first_op(p))
    if (!t.tag[g].empty() && !is_edge_tag(t.tag[g]) && !block_of.count(t.tag[g])) {
      block_of[t.tag[g]] = static_cast<int32_t>(blocks.size());
      blocks.push_back(t.tag[g]);
    }
  if (blocks.empty()) return std::nullopt;
  FamilyPlan plan =
      undecided(t, "blocks: " + std::to_string(blocks.size()) + " tagged blocks in contiguous runs balanced by work");
  std::vector<double> w(blocks.size(), 0.0);
  for (int32_t g = 0; g < p.groups(); ++g)
    if (block_of.count(t.tag[g]))
      for (int32_t u : p.members[g]) w[block_of[t.tag[g]]] += p.mean_cost(u);
  const std::vector<int32_t> part = balanced_contiguous(w, p.k);
  for (int32_t g = 0; g < p.groups(); ++g)
    if (block_of.count(t.tag[g])) plan.group_device[g] = part[block_of[t.tag[g]]];
  return plan;
}

// Untagged (imported) graphs: the co-location groups in topological order,
// in contiguous runs balanced by work.
FamilyPlan generic_plan(const Tagged& t) {
  const UnitProblem& p = t.p;
  FamilyPlan plan = undecided(t, "generic: co-location groups in topological order, contiguous runs balanced by work");
  const std::vector<int32_t> order = groups_by_first_op(p);
  std::vector<double> w(p.groups(), 0.0);
  for (size_t i = 0; i < order.size(); ++i)
    for (int32_t u : p.members[order[i]]) w[i] += p.mean_cost(u);
  const std::vector<int32_t> part = balanced_contiguous(w, p.k);
  for (size_t i = 0; i < order.size(); ++i) plan.group_device[order[i]] = part[i];
  return plan;
}

// The first family whose tags the graph has decides: rnn (lstmK layers),
// inception (mixed_*/branch), blocks; a graph of no family gets the generic plan.
FamilyPlan plan_by_family(const Tagged& t) {
  const TaggedFamily families[] = {{is_lstm_tag, rnn_plan}, {is_branch_tag, inception_plan}};
  for (const TaggedFamily& family : families)
    if (std::any_of(t.tag.begin(), t.tag.end(), family.tags)) return family.plan(t);
  if (std::optional<FamilyPlan> plan = blocks_plan(t)) return std::move(*plan);
  return generic_plan(t);
}

// Unit u's group, if undecided, takes the device of the first of these
// neighbours whose group has one.
void adopt_device(const UnitProblem& p, int32_t u, const std::vector<Edge>& neighbours, std::vector<int32_t>& gd) {
  const int32_t g = p.group_of[u];
  if (gd[g] >= 0) return;
  for (const Edge& e : neighbours)
    if (gd[p.group_of[e.op]] >= 0) {
      gd[g] = gd[p.group_of[e.op]];
      return;
    }
}

// Groups no rule placed follow a producer's group (in unit order), then, for
// sources, a consumer's group (in reverse unit order); the rest go to device 0.
void follow_neighbours(const UnitProblem& p, std::vector<int32_t>& gd) {
  for (int32_t u = 0; u < p.n; ++u) adopt_device(p, u, p.preds[u], gd);
  for (int32_t u = p.n - 1; u >= 0; --u) adopt_device(p, u, p.succs[u], gd);
  for (int32_t& d : gd)
    if (d < 0) d = 0;
}

class ExpertPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "expert"; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    FamilyPlan plan = plan_by_family(tag_groups(p, *ctx.graph));
    follow_neighbours(p, plan.group_device);
    std::string note = "expert: " + plan.family;
    if (!fits_memory(p, plan.group_device)) {
      if (!repair_memory(p, plan.group_device))
        throw NoFeasiblePlacement("expert: the " + plan.family + " plan does not fit device memory");
      note += "; moved groups to fit memory";
    }
    return finish(ctx, expand_groups(p, plan.group_device), name(), started, note);
  }
};

}  // namespace

std::unique_ptr<Placer> make_expert() { return std::make_unique<ExpertPlacer>(); }

}  // namespace placer
