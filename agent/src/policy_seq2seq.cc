// The ColocRL seq2seq policy: a bi-LSTM encoder over units in topological
// order feeding the shared attention decoder.
#include <cmath>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "policy.h"

namespace placer {

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

}  // namespace placer
