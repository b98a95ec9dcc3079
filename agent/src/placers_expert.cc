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
#include <cctype>
#include <map>
#include <regex>

#include "placers_common.h"

namespace placer::placers {
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

class ExpertPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "expert"; }

  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const Graph& graph = *ctx.graph;
    const int32_t G = p.groups(), n = p.k;
    // Tag of a group: the layer of its first forward op that has one.
    std::vector<std::string> tag(G);
    for (int32_t g = 0; g < G; ++g) {
      for (int32_t u : p.members[g]) {
        const Op& op = graph.op(OpId(u));
        if (op.layer.empty()) continue;
        if (tag[g].empty() || op.phase == Phase::Forward) {
          tag[g] = op.layer;
          if (op.phase == Phase::Forward) break;
        }
      }
    }
    std::vector<int32_t> gd(G, -1);
    static const std::regex rnn(R"(^(?:(enc|dec)_)?lstm(\d+)$)");
    static const std::regex branch(R"(^(mixed_[^/]+)/(.+)$)");
    bool is_rnn = false, is_inception = false;
    for (const auto& t : tag) {
      if (std::regex_match(t, rnn)) is_rnn = true;
      if (std::regex_match(t, branch)) is_inception = true;
    }
    std::string family;
    std::smatch m;
    if (is_rnn) {
      family = "rnn: one LSTM layer per device, attention and softmax on the others";
      int32_t L = 0;
      for (const auto& t : tag)
        if (std::regex_match(t, m, rnn)) L = std::max(L, std::stoi(m[2].str()) + 1);
      std::vector<std::string> specials;
      for (const char* s : {"attention", "softmax"})
        if (std::find(tag.begin(), tag.end(), s) != tag.end()) specials.push_back(s);
      auto layer_device = [&](int32_t l) { return n > L ? l : static_cast<int32_t>(static_cast<int64_t>(l) * n / L); };
      std::map<std::string, int32_t> special_device;
      for (size_t i = 0; i < specials.size(); ++i)
        special_device[specials[i]] = n > L ? L + static_cast<int32_t>(i) % (n - L) : n - 1;
      for (int32_t g = 0; g < G; ++g) {
        if (std::regex_match(tag[g], m, rnn))
          gd[g] = layer_device(std::stoi(m[2].str()));
        else if (special_device.count(tag[g]))
          gd[g] = special_device[tag[g]];
        else if (tag[g] == "embedding")
          gd[g] = layer_device(0);
      }
    } else if (is_inception) {
      family = "inception: branches of each module spread over the devices";
      std::map<std::string, std::vector<std::string>> branches;  // module -> branch names in order
      for (const auto& t : tag)
        if (std::regex_match(t, m, branch)) {
          auto& v = branches[m[1].str()];
          if (std::find(v.begin(), v.end(), m[2].str()) == v.end()) v.push_back(m[2].str());
        }
      for (int32_t g = 0; g < G; ++g) {
        if (std::regex_match(tag[g], m, branch)) {
          const auto& v = branches[m[1].str()];
          gd[g] = static_cast<int32_t>(std::find(v.begin(), v.end(), m[2].str()) - v.begin()) % n;
        } else if (!tag[g].empty()) {
          gd[g] = 0;  // stem, module concats, head, loss
        }
      }
    } else {
      // Blocks in order of first appearance; edge tags follow their neighbours.
      static const std::regex edge_tag(R"(^(embedding|stem|head|loss|input)$)");
      std::vector<std::string> blocks;
      std::map<std::string, int32_t> block_of;
      std::vector<int32_t> order(G);
      for (int32_t g = 0; g < G; ++g) order[g] = g;
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.members[a][0] < p.members[b][0]; });
      for (int32_t g : order)
        if (!tag[g].empty() && !std::regex_match(tag[g], edge_tag) && !block_of.count(tag[g])) {
          block_of[tag[g]] = static_cast<int32_t>(blocks.size());
          blocks.push_back(tag[g]);
        }
      if (!blocks.empty()) {
        family = "blocks: " + std::to_string(blocks.size()) + " tagged blocks in contiguous runs balanced by work";
        std::vector<double> w(blocks.size(), 0.0);
        for (int32_t g = 0; g < G; ++g)
          if (block_of.count(tag[g]))
            for (int32_t u : p.members[g]) w[block_of[tag[g]]] += p.mean_cost(u);
        const std::vector<int32_t> part = balanced_contiguous(w, n);
        for (int32_t g = 0; g < G; ++g)
          if (block_of.count(tag[g])) gd[g] = part[block_of[tag[g]]];
      } else {
        family = "generic: co-location groups in topological order, contiguous runs balanced by work";
        std::vector<double> w(G, 0.0);
        for (size_t i = 0; i < order.size(); ++i)
          for (int32_t u : p.members[order[i]]) w[i] += p.mean_cost(u);
        const std::vector<int32_t> part = balanced_contiguous(w, n);
        for (size_t i = 0; i < order.size(); ++i) gd[order[i]] = part[i];
      }
    }
    // The rest follows producers, then (for sources) consumers.
    for (int32_t u = 0; u < p.n; ++u) {
      const int32_t g = p.group_of[u];
      if (gd[g] >= 0) continue;
      for (const Edge& e : p.preds[u])
        if (gd[p.group_of[e.op]] >= 0) {
          gd[g] = gd[p.group_of[e.op]];
          break;
        }
    }
    for (int32_t u = p.n - 1; u >= 0; --u) {
      const int32_t g = p.group_of[u];
      if (gd[g] >= 0) continue;
      for (const Edge& e : p.succs[u])
        if (gd[p.group_of[e.op]] >= 0) {
          gd[g] = gd[p.group_of[e.op]];
          break;
        }
    }
    for (int32_t& d : gd)
      if (d < 0) d = 0;
    std::string note = "expert: " + family;
    if (!fits_memory(p, gd)) {
      if (!repair_memory(p, gd))
        throw NoFeasiblePlacement("expert: the " + family + " plan does not fit device memory");
      note += "; moved groups to fit memory";
    }
    return finish(ctx, expand_groups(p, gd), name(), started, note);
  }
};

}  // namespace

std::unique_ptr<Placer> make_expert() { return std::make_unique<ExpertPlacer>(); }

}  // namespace placer::placers
