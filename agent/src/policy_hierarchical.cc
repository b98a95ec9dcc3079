// The hierarchical policy (Mirhoseini, Goldie et al. 2018): a feed-forward
// Grouper samples a group for every unit (co-location group), a seq2seq
// Placer places the groups; one REINFORCE signal trains both. The Placer's
// sequence has at most a few hundred steps whatever the graph's size, which
// is what lets it handle graphs of 50,000+ operators.
#include <algorithm>
#include <cmath>

#include "placer/graphs/error.h"
#include "policy.h"

namespace placer {

namespace nn = torch::nn;

HierarchicalPolicyImpl::HierarchicalPolicyImpl(const PolicyOptions& options) : fixed_groups_(options.grouper_groups) {
  if (fixed_groups_ < 0 || fixed_groups_ > 4096)
    throw InputError("policy.grouper_groups: must be in [0, 4096], got " + std::to_string(fixed_groups_));
  const int H = options.hidden;
  embed_ = register_module("embed", UnitEmbedding(H, options.type_embedding));
  grouper_hidden_ = register_module("grouper_hidden", nn::Linear(H, H));
  // The grouper's output layer is sized for the largest group count; a
  // problem with fewer uses the first G logits.
  grouper_out_ = register_module("grouper_out", nn::Linear(H, fixed_groups_ > 0 ? fixed_groups_ : 256));
  group_proj_ = register_module("group_proj", nn::Linear(H + 1, H));
  encoder_ = register_module("encoder", nn::LSTM(nn::LSTMOptions(H, H / 2).bidirectional(true)));
  decoder_ = register_module("decoder", Decoder(H, options.decoder));
}

int32_t HierarchicalPolicyImpl::groups_for(const PolicyInput& problem) const { return groups_for(problem.d); }

int32_t HierarchicalPolicyImpl::groups_for(int32_t devices) const {
  if (fixed_groups_ > 0) return fixed_groups_;
  return std::min(256, 20 * devices);
}

torch::Tensor HierarchicalPolicyImpl::encode_groups(const PolicyInput& problem, const torch::Tensor& unit_emb,
                                                    const torch::Tensor& groups, int32_t G) {
  const int64_t B = groups.size(0), H = unit_emb.size(1);
  std::vector<torch::Tensor> rows;
  rows.reserve(B);
  for (int64_t b = 0; b < B; ++b) {
    const torch::Tensor idx = groups[b];
    const torch::Tensor sums = torch::zeros({G, H}).index_add(0, idx, unit_emb);
    const torch::Tensor count = torch::zeros({G, 1}).index_add(0, idx, torch::ones({idx.size(0), 1}));
    const torch::Tensor mean = sums / count.clamp_min(1.0);
    rows.push_back(torch::relu(group_proj_(torch::cat({mean, torch::log1p(count) / 5.0}, 1))));
  }
  const torch::Tensor g = torch::stack(rows, 1);             // G x B x H
  return std::get<0>(encoder_->forward(g)).transpose(0, 1);  // B x G x H
}

Rollout HierarchicalPolicyImpl::sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options,
                                       std::mt19937_64& rng, const std::vector<int32_t>* forced) {
  if (forced)
    throw InputError("the hierarchical policy cannot be warm-started by behaviour cloning (set warm_start: [])");
  torch::NoGradGuard no_grad;
  const int32_t G = groups_for(problem), U = problem.n;
  Rollout r;
  r.batch = batch;
  r.temperature = options.temperature;
  const torch::Tensor e = embed_(unit_features(problem), unit_types(problem));
  const torch::Tensor glogits = grouper_out_(torch::relu(grouper_hidden_(e))).narrow(1, 0, G) / options.temperature;
  const torch::Tensor glp = torch::log_softmax(glogits, 1).contiguous();  // U x G
  const torch::Tensor gprob = glp.exp().contiguous();
  const float* lp = glp.data_ptr<float>();
  const float* pr = gprob.data_ptr<float>();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  torch::Tensor groups = torch::zeros({batch, U}, torch::kInt64);
  int64_t* gp = groups.data_ptr<int64_t>();
  torch::Tensor old_glp = torch::zeros({batch, U});
  float* ol = old_glp.data_ptr<float>();
  std::vector<std::vector<int32_t>> group_of(batch, std::vector<int32_t>(U));
  for (int32_t b = 0; b < batch; ++b) {
    for (int32_t u = 0; u < U; ++u) {
      const float* p = pr + static_cast<int64_t>(u) * G;
      int32_t k = 0;
      if (b < options.greedy_rows) {
        for (int32_t j = 1; j < G; ++j)
          if (p[j] > p[k]) k = j;
      } else {
        double x = uniform(rng), acc = 0;
        k = G - 1;
        for (int32_t j = 0; j < G; ++j) {
          acc += p[j];
          if (x < acc) {
            k = j;
            break;
          }
        }
      }
      group_of[b][u] = k;
      gp[static_cast<int64_t>(b) * U + u] = k;
      ol[static_cast<int64_t>(b) * U + u] = lp[static_cast<int64_t>(u) * G + k];
    }
  }
  r.groups = groups;
  r.group_costs.reserve(batch);
  for (int32_t b = 0; b < batch; ++b) r.group_costs.push_back(group_costs(problem, group_of[b], G));
  std::vector<const UnitCosts*> costs;
  for (const auto& c : r.group_costs) costs.push_back(&c);
  const torch::Tensor enc = encode_groups(problem, e, groups, G);
  std::vector<std::vector<int32_t>> group_device;
  torch::Tensor placer_logp;
  decoder_->decode(enc, device_features(problem), costs, batch, options, rng, nullptr, &group_device, &r.dynamic,
                   &placer_logp);
  std::vector<int64_t> flat;
  r.unit_device.assign(batch, std::vector<int32_t>(U));
  for (int32_t b = 0; b < batch; ++b) {
    flat.insert(flat.end(), group_device[b].begin(), group_device[b].end());
    for (int32_t u = 0; u < U; ++u) r.unit_device[b][u] = group_device[b][group_of[b][u]];
  }
  r.actions = torch::tensor(flat, torch::kInt64).view({batch, G});
  r.old_logp = torch::cat({old_glp, placer_logp}, 1);
  return r;
}

LogProbs HierarchicalPolicyImpl::evaluate(const PolicyInput& problem, const Rollout& rollout) {
  const int32_t G = groups_for(problem);
  const int64_t B = rollout.groups.size(0);
  const torch::Tensor e = embed_(unit_features(problem), unit_types(problem));
  const torch::Tensor glogits = grouper_out_(torch::relu(grouper_hidden_(e))).narrow(1, 0, G) / rollout.temperature;
  const torch::Tensor glp = torch::log_softmax(glogits, 1);        // U x G
  const torch::Tensor g_ent = -(glp.exp() * glp).sum(1);           // U
  const torch::Tensor g_logp = glp.t().gather(0, rollout.groups);  // B x U (row u of glp, column groups)
  const torch::Tensor enc = encode_groups(problem, e, rollout.groups, G);
  LogProbs placer =
      decoder_->score(enc, device_features(problem), rollout.actions, rollout.dynamic, rollout.temperature);
  LogProbs out;
  out.logp = torch::cat({g_logp, placer.logp}, 1);
  out.entropy = torch::cat({g_ent.unsqueeze(0).expand({B, g_ent.size(0)}), placer.entropy}, 1);
  return out;
}

}  // namespace placer
