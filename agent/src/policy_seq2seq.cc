// The ColocRL seq2seq policy: a bi-LSTM encoder over units in topological
// order feeding the shared attention decoder.
#include <cmath>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "policy.h"

namespace placer::learned {

namespace nn = torch::nn;

// ---------------------------------------------------------------- seq2seq

Seq2SeqPolicyImpl::Seq2SeqPolicyImpl(const PolicyOptions& options) {
  const int H = options.hidden;
  PLACER_CHECK(H % 2 == 0, "hidden must be even, got ", H);
  embed_ = register_module("embed", UnitEmbedding(H, options.type_embedding));
  encoder_ = register_module("encoder", nn::LSTM(nn::LSTMOptions(H, H / 2).bidirectional(true)));
  decoder_ = register_module("decoder", Decoder(H, options.decoder));
}

torch::Tensor Seq2SeqPolicyImpl::encode(const PolicyInput& problem) {
  const torch::Tensor e = embed_(unit_features(problem), unit_types(problem));  // N x H
  return std::get<0>(encoder_->forward(e.unsqueeze(1))).transpose(0, 1);        // 1 x N x H
}

Rollout Seq2SeqPolicyImpl::sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options,
                                  std::mt19937_64& rng, const std::vector<int32_t>* forced) {
  torch::NoGradGuard no_grad;
  Rollout r;
  r.batch = batch;
  r.temperature = options.temperature;
  const torch::Tensor enc = encode(problem);
  decoder_->decode(enc, device_features(problem), {&problem.costs}, batch, options, rng, forced, &r.unit_device,
                   &r.dynamic, &r.old_logp);
  std::vector<int64_t> flat;
  for (const auto& row : r.unit_device) flat.insert(flat.end(), row.begin(), row.end());
  r.actions = torch::tensor(flat, torch::kInt64).view({batch, problem.n});
  return r;
}

LogProbs Seq2SeqPolicyImpl::evaluate(const PolicyInput& problem, const Rollout& rollout) {
  return decoder_->score(encode(problem), device_features(problem), rollout.actions, rollout.dynamic,
                         rollout.temperature);
}

}  // namespace placer::learned
