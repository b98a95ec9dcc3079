// The gnn policy (Placeto / GDP style): message passing over the unit graph
// with separate aggregators for parents, children and parallel peers, then
// the shared attention decoder. All weights are shared across units, so a
// policy trained on a family of graphs places unseen ones as they are.
#include "placer/graphs/error.h"
#include "policy.h"

namespace placer {

namespace nn = torch::nn;

GnnPolicyImpl::GnnPolicyImpl(const PolicyOptions& options) : layers_(options.gnn_layers) {
  if (layers_ < 1 || layers_ > 16)
    throw InputError("policy.gnn_layers: must be in [1, 16], got " + std::to_string(layers_));
  const int H = options.hidden;
  embed_ = register_module("embed", UnitEmbedding(H, options.type_embedding));
  self_ = register_module("self", nn::ModuleList());
  parent_ = register_module("parent", nn::ModuleList());
  child_ = register_module("child", nn::ModuleList());
  peer_ = register_module("peer", nn::ModuleList());
  norm_ = register_module("norm", nn::ModuleList());
  for (int l = 0; l < layers_; ++l) {
    self_->push_back(nn::Linear(H, H));
    parent_->push_back(nn::Linear(nn::LinearOptions(H, H).bias(false)));
    child_->push_back(nn::Linear(nn::LinearOptions(H, H).bias(false)));
    peer_->push_back(nn::Linear(nn::LinearOptions(H, H).bias(false)));
    norm_->push_back(nn::LayerNorm(nn::LayerNormOptions({H})));
  }
  decoder_ = register_module("decoder", Decoder(H, options.decoder));
}

namespace {

// Mean of h[src] over the edges into each dst (zeros where none).
torch::Tensor mean_over(const torch::Tensor& h, const torch::Tensor& src, const torch::Tensor& dst,
                        const torch::Tensor& inv_count) {
  if (src.numel() == 0) return torch::zeros_like(h);
  return torch::zeros_like(h).index_add(0, dst, h.index_select(0, src)) * inv_count;
}

torch::Tensor inverse_counts(const torch::Tensor& dst, int64_t n) {
  torch::Tensor c = torch::zeros({n, 1});
  if (dst.numel() > 0) c.index_add_(0, dst, torch::ones({dst.size(0), 1}));
  return 1.0 / c.clamp_min(1.0);
}

}  // namespace

torch::Tensor GnnPolicyImpl::encode(const PolicyInput& problem) {
  const int64_t n = problem.n;
  std::vector<int64_t> ps(problem.parent_src.begin(), problem.parent_src.end());
  std::vector<int64_t> pd(problem.parent_dst.begin(), problem.parent_dst.end());
  std::vector<int64_t> qs, qd;
  for (int32_t u = 0; u < problem.n; ++u)
    for (int32_t v : problem.peers[u]) {
      qs.push_back(v);
      qd.push_back(u);
    }
  const torch::Tensor psrc = torch::tensor(ps, torch::kInt64), pdst = torch::tensor(pd, torch::kInt64);
  const torch::Tensor qsrc = torch::tensor(qs, torch::kInt64), qdst = torch::tensor(qd, torch::kInt64);
  const torch::Tensor inv_parents = inverse_counts(pdst, n), inv_children = inverse_counts(psrc, n);
  const torch::Tensor inv_peers = inverse_counts(qdst, n);
  torch::Tensor h = embed_(unit_features(problem), unit_types(problem));
  for (int l = 0; l < layers_; ++l) {
    const torch::Tensor from_parents = mean_over(h, psrc, pdst, inv_parents);
    const torch::Tensor from_children = mean_over(h, pdst, psrc, inv_children);
    const torch::Tensor from_peers = mean_over(h, qsrc, qdst, inv_peers);
    const torch::Tensor m =
        self_[l]->as<nn::Linear>()->forward(h) + parent_[l]->as<nn::Linear>()->forward(from_parents) +
        child_[l]->as<nn::Linear>()->forward(from_children) + peer_[l]->as<nn::Linear>()->forward(from_peers);
    h = norm_[l]->as<nn::LayerNorm>()->forward(h + torch::relu(m));
  }
  return h.unsqueeze(0);
}

}  // namespace placer
