// The parts every policy shares: problem features as tensors, the attention
// decoder, the unit embedding, and sampling and scoring from a unit encoding.
#include <cmath>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "policy.h"

namespace placer {

namespace nn = torch::nn;

torch::Tensor unit_features(const PolicyInput& problem) {
  return torch::from_blob(const_cast<float*>(problem.x.data()), {problem.n, kUnitFeatures}, torch::kFloat32).clone();
}
torch::Tensor unit_types(const PolicyInput& problem) {
  return torch::from_blob(const_cast<int64_t*>(problem.type.data()), {problem.n}, torch::kInt64).clone();
}
torch::Tensor device_features(const PolicyInput& problem) {
  return torch::from_blob(const_cast<float*>(problem.dev.data()), {problem.d, kDeviceFeatures}, torch::kFloat32)
      .clone();
}

// ---------------------------------------------------------------- decoder

DecoderImpl::DecoderImpl(int hidden, DecoderKind decoder) : hidden_(hidden), recurrent_(decoder == DecoderKind::Lstm) {
  dev_proj_ = register_module("dev_proj", nn::Linear(kDeviceFeatures, hidden));
  dev_index_ = register_module("dev_index", nn::Embedding(kMaxDevices, hidden));
  if (recurrent_)
    lstm_ = register_module("lstm", nn::LSTM(nn::LSTMOptions(2 * hidden, hidden)));
  else
    step_ = register_module("step", nn::Linear(2 * hidden, hidden));
  att_ = register_module("att", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
  comb_ = register_module("comb", nn::Linear(2 * hidden, hidden));
  dyn_proj_ = register_module("dyn_proj", nn::Linear(kDynamicFeatures, hidden));
  score_ = register_module("score", nn::Linear(hidden, 1));
  start_ = register_parameter("start", torch::zeros({hidden}));
}

torch::Tensor DecoderImpl::device_embeddings(const torch::Tensor& dev_features) {
  const int64_t D = dev_features.size(0);
  return dev_proj_(dev_features) + dev_index_(torch::arange(D, torch::kInt64));
}

namespace {

int32_t sample_categorical(const float* p, int32_t n, double u) {
  double acc = 0;
  for (int32_t i = 0; i < n; ++i) {
    acc += p[i];
    if (u < acc) return i;
  }
  for (int32_t i = n - 1; i >= 0; --i)
    if (p[i] > 0) return i;
  return n - 1;
}

int32_t argmax(const float* p, int32_t n, int64_t avoid = -1) {
  int32_t best = avoid == 0 ? 1 : 0;
  for (int32_t i = best + 1; i < n; ++i)
    if (i != avoid && p[i] > p[best]) best = i;
  return best;
}

// One unit's device in each row: forced, greedy (the first greedy_rows rows) or drawn
// from the softmax of the logits (with Gaussian noise on them when options.noise > 0);
// a forced move (kFreeAvoiding) draws among the other devices.
class DeviceChooser {
 public:
  DeviceChooser(const SampleOptions& options, std::mt19937_64& rng, int64_t devices)
      : options_(options), rng_(rng), noisy_(devices), probs_(devices) {}

  // `lg`: the row's D logits; `f`: the row's forced entry (a device, kFree or kFreeAvoiding(d)).
  int32_t choose(const float* lg, int32_t b, int32_t f) {
    const int64_t D = static_cast<int64_t>(probs_.size());
    const int64_t avoid = f <= kFreeAvoiding(0) && D > 1 ? kFreeAvoiding(0) - f : -1;  // a move: not this device
    if (f >= 0) return f;
    if (b < options_.greedy_rows) return argmax(lg, static_cast<int32_t>(D), avoid);
    float mx = -1e30f;
    for (int64_t d = 0; d < D; ++d) {
      noisy_[d] = lg[d] + (options_.noise > 0 ? static_cast<float>(options_.noise) * normal_(rng_) : 0.f);
      if (d != avoid) mx = std::max(mx, noisy_[d]);
    }
    float sum = 0;
    for (int64_t d = 0; d < D; ++d) sum += (probs_[d] = d == avoid ? 0.f : std::exp(noisy_[d] - mx));
    for (int64_t d = 0; d < D; ++d) probs_[d] /= sum;
    return sample_categorical(probs_.data(), static_cast<int32_t>(D), uniform_(rng_));
  }

 private:
  const SampleOptions& options_;
  std::mt19937_64& rng_;
  std::normal_distribution<float> normal_{0.f, 1.f};
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::vector<float> noisy_, probs_;
};

}  // namespace

void DecoderImpl::decode(const torch::Tensor& enc, const torch::Tensor& dev_features,
                         const std::vector<const UnitCosts*>& costs, int32_t B, const SampleOptions& options,
                         std::mt19937_64& rng, const std::vector<int32_t>* forced,
                         std::vector<std::vector<int32_t>>* actions, torch::Tensor* dynamic, torch::Tensor* logp_out) {
  torch::NoGradGuard no_grad;
  const int64_t S = enc.size(1), H = hidden_, D = dev_features.size(0);
  const bool per_row = forced && B > 1 && forced->size() == static_cast<size_t>(B * S);
  if (forced && !per_row && forced->size() != static_cast<size_t>(S))
    throw InputError("forced decode: " + std::to_string(forced->size()) + " devices for " + std::to_string(B) +
                     " rows of " + std::to_string(S) + " units");
  const torch::Tensor dev_e = device_embeddings(dev_features);
  // One encoding for every sample (the flat policies): attention is one matrix
  // product over the batch, not B matrix-vector products over B copies.
  const bool shared = enc.size(0) == 1;
  const torch::Tensor enc1 = shared ? enc[0].contiguous() : torch::Tensor();           // S x H
  const torch::Tensor keys1 = shared ? att_(enc1).t().contiguous() : torch::Tensor();  // H x S
  const torch::Tensor encB = shared ? torch::Tensor() : enc.expand({B, S, H}).contiguous();
  const torch::Tensor keys = shared ? torch::Tensor() : att_(encB);
  std::vector<DynamicState> states;
  states.reserve(B);
  for (int32_t b = 0; b < B; ++b) states.emplace_back(costs[costs.size() == 1 ? 0 : b]);
  actions->assign(B, std::vector<int32_t>(S, 0));
  torch::Tensor dyn = torch::zeros({B, S, D, kDynamicFeatures});
  float* dyn_p = dyn.data_ptr<float>();
  torch::Tensor logp = torch::zeros({B, S});
  float* logp_p = logp.data_ptr<float>();
  torch::Tensor prev = start_.unsqueeze(0).expand({B, H});
  c10::optional<std::tuple<torch::Tensor, torch::Tensor>> hx;
  DeviceChooser chooser(options, rng, D);
  const double T = options.temperature;
  for (int64_t t = 0; t < S; ++t) {
    const torch::Tensor in = torch::cat({shared ? enc1[t].expand({B, H}) : encB.select(1, t), prev}, 1);
    torch::Tensor h;  // B x H
    if (recurrent_) {
      auto out = lstm_->forward(in.unsqueeze(0), hx);
      hx = std::get<1>(out);
      h = std::get<0>(out)[0];
    } else {
      h = torch::tanh(step_(in));
    }
    const torch::Tensor a =
        torch::softmax(shared ? torch::mm(h, keys1) : torch::bmm(keys, h.unsqueeze(2)).squeeze(2), 1);    // B x S
    const torch::Tensor ctx = shared ? torch::mm(a, enc1) : torch::bmm(a.unsqueeze(1), encB).squeeze(1);  // B x H
    const torch::Tensor q = torch::tanh(comb_(torch::cat({h, ctx}, 1)));
    for (int32_t b = 0; b < B; ++b)
      states[b].features(static_cast<int32_t>(t), dyn_p + ((static_cast<int64_t>(b) * S + t) * D) * kDynamicFeatures);
    const torch::Tensor dyn_t = dyn.select(1, t);  // B x D x F
    const torch::Tensor key = dev_e.unsqueeze(0) + dyn_proj_(dyn_t);
    const torch::Tensor logits = (score_(torch::tanh(q.unsqueeze(1) + key)).squeeze(2) / T).contiguous();
    const torch::Tensor lp = torch::log_softmax(logits, 1).contiguous();
    const float* lg = logits.data_ptr<float>();
    const float* lpp = lp.data_ptr<float>();
    std::vector<int64_t> chosen(B);
    for (int32_t b = 0; b < B; ++b) {
      const int32_t choice = chooser.choose(lg + b * D, b, forced ? (*forced)[per_row ? b * S + t : t] : kFree);
      (*actions)[b][t] = choice;
      chosen[b] = choice;
      logp_p[b * S + t] = lpp[b * D + choice];  // of the policy's distribution (an avoided device's mass included)
      states[b].place(static_cast<int32_t>(t), choice);
    }
    prev = dev_e.index_select(0, torch::tensor(chosen, torch::kInt64));
  }
  *dynamic = dyn;
  *logp_out = logp;
}

LogProbs DecoderImpl::score(const torch::Tensor& enc, const torch::Tensor& dev_features, const torch::Tensor& actions,
                            const torch::Tensor& dynamic, double temperature) {
  const int64_t B = actions.size(0), S = actions.size(1), H = hidden_, D = dev_features.size(0);
  const torch::Tensor dev_e = device_embeddings(dev_features);
  const torch::Tensor encB = enc.expand({B, S, H});
  torch::Tensor prev = start_.view({1, 1, H}).expand({B, 1, H});
  if (S > 1) {
    const torch::Tensor fed = dev_e.index_select(0, actions.narrow(1, 0, S - 1).reshape({-1})).view({B, S - 1, H});
    prev = torch::cat({prev, fed}, 1);
  }
  const torch::Tensor in = torch::cat({encB, prev}, 2);  // B x S x 2H
  const torch::Tensor hs = recurrent_ ? std::get<0>(lstm_->forward(in.transpose(0, 1))).transpose(0, 1)
                                      : torch::tanh(step_(in));  // B x S x H
  const torch::Tensor keys = att_(encB);
  const torch::Tensor a = torch::softmax(torch::bmm(hs, keys.transpose(1, 2)), 2);  // B x S x S
  const torch::Tensor ctx = torch::bmm(a, encB);
  const torch::Tensor q = torch::tanh(comb_(torch::cat({hs, ctx}, 2)));     // B x S x H
  const torch::Tensor key = dev_e.view({1, 1, D, H}) + dyn_proj_(dynamic);  // B x S x D x H
  const torch::Tensor logits = score_(torch::tanh(q.unsqueeze(2) + key)).squeeze(3) / temperature;
  const torch::Tensor lp = torch::log_softmax(logits, 2);
  LogProbs out;
  out.logp = lp.gather(2, actions.unsqueeze(2)).squeeze(2);
  out.entropy = -(lp.exp() * lp).sum(2);
  return out;
}

// ---------------------------------------------------------------- embedding

UnitEmbeddingImpl::UnitEmbeddingImpl(int hidden, int type_embedding) {
  type_ = register_module("type", nn::Embedding(kTypeBuckets, type_embedding));
  proj_ = register_module("proj", nn::Linear(kUnitFeatures + type_embedding, hidden));
}

torch::Tensor UnitEmbeddingImpl::forward(const torch::Tensor& x, const torch::Tensor& type) {
  return torch::relu(proj_(torch::cat({x, type_(type)}, 1)));
}

Rollout UnitEncoderPolicyImpl::sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options,
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

LogProbs UnitEncoderPolicyImpl::evaluate(const PolicyInput& problem, const Rollout& rollout) {
  return decoder_->score(encode(problem), device_features(problem), rollout.actions, rollout.dynamic,
                         rollout.temperature);
}

}  // namespace placer
