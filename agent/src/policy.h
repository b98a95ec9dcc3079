// The learned placement policies (private to agent/): LibTorch modules that
// turn a PolicyInput (features.h) into sampled placements and log-probabilities.
//
//   seq2seq       ColocRL: bi-LSTM encoder over units in topological order,
//                 LSTM decoder with content-based attention, previous device fed back.
//   hierarchical  feed-forward Grouper (unit -> group) + seq2seq Placer over groups.
//   gnn           message passing with separate parent / child / peer aggregators
//                 (Placeto, GDP) feeding the same attention decoder.
//
// Every decoder step also sees per-device dynamic features of the partial
// placement (load, memory, where its inputs live), and devices are described
// by features plus an index embedding, so one policy serves several clusters.
#pragma once

#include <ATen/Parallel.h>
#include <torch/nn.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "features.h"
#include "placer/agent/train.h"
#include "placer/env/environment.h"

namespace placer {

struct PolicyOptions {
  PolicyType kind = PolicyType::Seq2Seq;
  int hidden = 64;
  int type_embedding = 16;
  int grouper_groups = 0;  // hierarchical: 0 = min(256, 20 x devices)
  int gnn_layers = 3;
  // Decoder: lstm (ColocRL: a recurrent state carried across units) or
  // pointwise (each unit scored from its own encoding, the previous unit's
  // device and attention over all units, with no state that counts positions).
  DecoderKind decoder = DecoderKind::Lstm;
};

// Entries of a partly forced decode (PolicyImpl::sample's `forced`).
constexpr int32_t kFree = -1;
constexpr int32_t kFreeAvoiding(int32_t device) { return -2 - device; }

struct SampleOptions {
  double temperature = 1.0;
  double noise = 0.0;   // std of Gaussian logit noise
  int greedy_rows = 0;  // the first greedy_rows samples take the argmax everywhere
};

// What a batch of sampled placements needs to be scored again (REINFORCE, PPO).
struct Rollout {
  int32_t batch = 0;
  std::vector<std::vector<int32_t>> unit_device;  // [sample][unit]
  torch::Tensor actions;                          // B x S device per decoder step (long)
  torch::Tensor dynamic;                          // B x S x D x kDynamicFeatures
  torch::Tensor groups;                           // hierarchical: B x U group per unit (long)
  torch::Tensor old_logp;                         // B x decisions, log-prob when sampled (no grad)
  double temperature = 1.0;
  std::vector<UnitCosts> group_costs;  // hierarchical: per sample
};

struct LogProbs {
  torch::Tensor logp;     // B x decisions
  torch::Tensor entropy;  // B x decisions
};

class PolicyImpl : public torch::nn::Module {
 public:
  // forced: decode these unit devices (teacher forcing, for behaviour cloning):
  // one device per unit for every row, or one per row and unit (batch x n, row
  // major). An entry kFree is sampled as without forcing, given the forced ones
  // before it; kFreeAvoiding(d) too, but never on device d (a move away from d).
  virtual Rollout sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options, std::mt19937_64& rng,
                         const std::vector<int32_t>* forced = nullptr) = 0;
  virtual LogProbs evaluate(const PolicyInput& problem, const Rollout& rollout) = 0;
  virtual std::string kind() const = 0;
  // What the trainer does differently per policy:
  // whether behaviour cloning can teach it the warm-start placement,
  virtual bool clones_placements() const { return true; }
  // the most units the problem may be coarsened to (0 = never coarsen),
  virtual int32_t unit_limit(int32_t max_groups) const { return max_groups; }
  // whether it trains on the config's family of graphs instead of its one graph.
  virtual bool trains_on_family() const { return false; }
};

// The attention decoder shared by every policy.
class DecoderImpl : public torch::nn::Module {
 public:
  // decoder: PolicyOptions::decoder.
  DecoderImpl(int hidden, DecoderKind decoder);
  // enc: B x S x H (B may be 1 and is expanded). Samples devices step by step.
  void decode(const torch::Tensor& enc, const torch::Tensor& dev_features, const std::vector<const UnitCosts*>& costs,
              int32_t batch, const SampleOptions& options, std::mt19937_64& rng, const std::vector<int32_t>* forced,
              std::vector<std::vector<int32_t>>* actions, torch::Tensor* dynamic, torch::Tensor* logp);
  // Teacher-forced log-probs and entropies (B x S) of the given actions.
  LogProbs score(const torch::Tensor& enc, const torch::Tensor& dev_features, const torch::Tensor& actions,
                 const torch::Tensor& dynamic, double temperature);

 private:
  torch::Tensor device_embeddings(const torch::Tensor& dev_features);  // D x H
  int hidden_;
  bool recurrent_;
  torch::nn::Linear step_{nullptr};  // pointwise: (unit encoding, previous device) -> query
  torch::nn::Linear dev_proj_{nullptr};
  torch::nn::Embedding dev_index_{nullptr};
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::Linear att_{nullptr}, comb_{nullptr}, dyn_proj_{nullptr}, score_{nullptr};
  torch::Tensor start_;
};
TORCH_MODULE(Decoder);

// Unit embedding: numeric features + hashed op-type embedding.
class UnitEmbeddingImpl : public torch::nn::Module {
 public:
  UnitEmbeddingImpl(int hidden, int type_embedding);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& type);  // N x H
 private:
  torch::nn::Embedding type_{nullptr};
  torch::nn::Linear proj_{nullptr};
};
TORCH_MODULE(UnitEmbedding);

// A policy that encodes the units and decodes one device per unit with the
// shared decoder: sampling and scoring are the same whatever the encoder.
class UnitEncoderPolicyImpl : public PolicyImpl {
 public:
  Rollout sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options, std::mt19937_64& rng,
                 const std::vector<int32_t>* forced) override;
  LogProbs evaluate(const PolicyInput& problem, const Rollout& rollout) override;

 protected:
  virtual torch::Tensor encode(const PolicyInput& problem) = 0;  // 1 x N x H
  Decoder decoder_{nullptr};                                     // registered by the subclass, after its encoder
};

class Seq2SeqPolicyImpl : public UnitEncoderPolicyImpl {
 public:
  explicit Seq2SeqPolicyImpl(const PolicyOptions& options);
  std::string kind() const override { return "seq2seq"; }

 private:
  torch::Tensor encode(const PolicyInput& problem) override;
  UnitEmbedding embed_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
};
TORCH_MODULE(Seq2SeqPolicy);

class GnnPolicyImpl : public UnitEncoderPolicyImpl {
 public:
  explicit GnnPolicyImpl(const PolicyOptions& options);
  std::string kind() const override { return "gnn"; }
  bool trains_on_family() const override { return true; }

 private:
  torch::Tensor encode(const PolicyInput& problem) override;
  int layers_;
  UnitEmbedding embed_{nullptr};
  torch::nn::ModuleList self_{nullptr}, parent_{nullptr}, child_{nullptr}, peer_{nullptr};
  torch::nn::ModuleList norm_{nullptr};
};
TORCH_MODULE(GnnPolicy);

class HierarchicalPolicyImpl : public PolicyImpl {
 public:
  explicit HierarchicalPolicyImpl(const PolicyOptions& options);
  Rollout sample(const PolicyInput& problem, int32_t batch, const SampleOptions& options, std::mt19937_64& rng,
                 const std::vector<int32_t>* forced) override;
  LogProbs evaluate(const PolicyInput& problem, const Rollout& rollout) override;
  std::string kind() const override { return "hierarchical"; }
  // Its grouper learns which units go together, and has no target to clone;
  // it sees every co-location group.
  bool clones_placements() const override { return false; }
  int32_t unit_limit(int32_t) const override { return 0; }
  int32_t groups_for(const PolicyInput& problem) const;
  int32_t groups_for(int32_t devices) const;  // G for a cluster of that many devices

 private:
  // B x G x H group encodings for the given B x U grouping.
  torch::Tensor encode_groups(const PolicyInput& problem, const torch::Tensor& unit_emb, const torch::Tensor& groups,
                              int32_t G);
  int fixed_groups_;
  UnitEmbedding embed_{nullptr};
  torch::nn::Linear grouper_hidden_{nullptr}, grouper_out_{nullptr};
  torch::nn::Linear group_proj_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
  Decoder decoder_{nullptr};
};
TORCH_MODULE(HierarchicalPolicy);

// Its initial weights drawn from LibTorch's global generator seeded with `seed`,
// under one process-wide lock: jobs that build policies at once (the service's
// job runners) each get their own seed's weights, never an interleaving.
// Throws InputError for an unknown kind.
std::shared_ptr<PolicyImpl> make_policy(const PolicyOptions& options, uint64_t seed);

// The policy stored in a `placer train` checkpoint file, in eval mode; its
// config goes to *config. Throws InputError naming the file and field.
// *trained_devices (when given): the most devices it trained on (0: unknown).
std::shared_ptr<PolicyImpl> load_policy(const std::string& path, TrainConfig* config,
                                        int32_t* trained_devices = nullptr);

// How the policy of `have` differs from the policy of `want` (type and sizes: whether one's weights
// fit the other's network), "" where they agree: "hidden 128 (WANT_NAME: 64), ...".
std::string policy_differences(const TrainConfig& want, const TrainConfig& have, const std::string& want_name);

// Throws PolicyOutOfRange when `cluster` has more devices than the policy trained on (`trained`;
// 0 = unknown: nothing is checked): its device index embeddings (and the hierarchical policy's
// groups, 20 per device) beyond that are untrained. `what` names the policy ("the gnn policy in DIR").
void check_trained_devices(const Cluster& cluster, int32_t trained, const PolicyImpl& policy, const std::string& what);

// The options of a policy's units for a graph, as the config asks, for
// training, a loaded policy and held-out graphs alike: the policy's unit limit
// (0 for the hierarchical policy, which groups ops itself), state units and
// the run's seed; `keep_apart` splits the units that placement separates.
inline PolicyInputOptions unit_options(const PolicyImpl& policy, const TrainConfig& config,
                                       const Placement* keep_apart = nullptr) {
  PolicyInputOptions po;
  po.max_units = policy.unit_limit(config.policy.max_groups);
  po.coarsen.state_apart = config.policy.state_units;
  po.coarsen.layers_first = config.policy.layer_units;
  po.keep_apart = keep_apart;
  po.seed = config.run.seed;
  return po;
}

// Places a graph with a trained policy and no training: the greedy decode
// (greedy_rows = 1; 0 in an anytime decode's later rounds) plus samples - greedy_rows
// placements sampled at `temperature`; the env's simulator keeps the fastest (a
// failed or OOM placement only if all fail). Writes the kept placement's simulated
// result to *simulated when given.
Placement decode_best(PolicyImpl& policy, const PolicyInput& problem, const Environment& env, int samples,
                      double temperature, uint64_t seed, StepResult* simulated = nullptr, int greedy_rows = 1);

// A placement's unit devices as a hash key (sets of placements already tried).
struct UnitsHash {
  size_t operator()(const std::vector<int32_t>& u) const;
};

// `count` placements near `anchor` (unit devices), each proposed by the policy:
// a row moves 1, 2, 4 or 8 units of the anchor (drawn at random, at most all),
// each to the device the policy draws for it among the others, given the rest
// of the placement (a partly forced decode). A row `keep` refuses (one already
// evaluated, say) is drawn again, 4 times at most; fewer rows may come back.
std::vector<std::vector<int32_t>> sample_around(PolicyImpl& policy, const PolicyInput& problem,
                                                const std::vector<int32_t>& anchor, int32_t count,
                                                const SampleOptions& options, std::mt19937_64& rng,
                                                const std::function<bool(const std::vector<int32_t>&)>& keep);

// What decode_levels did: the unit levels it decoded, the placements it
// simulated, the rounds of `samples` it drew in all (levels included) and its wall time.
struct DecodeStats {
  int levels = 0;
  int64_t placements = 0;
  int rounds = 0;
  int near_rounds = 0;  // of those, rounds near the best so far (`around`)
  double seconds = 0.0;
  int best_member = 0;  // the ensemble member that proposed the placement returned
  std::vector<int> member_near_rounds;  // the near rounds each member drew
};

// decode_best over the problem's units, then again over 1/2, 1/4, ... as many
// (`levels` decodes in all, each of `samples`; at least one unit per device;
// `options` made the problem): the same weights decode the coarser units (the
// features are per unit), and a coarse decode keeps a block together that the
// fine one splits. The fastest of all (policy.place_levels).
// With `seconds` > 0 the decode is anytime: after those levels, while another
// round (timed as that level's slowest) fits in `seconds`, more rounds of
// `samples` (no greedy row, another seed each) are drawn at the levels in turn,
// 32 rounds at each level at most.
// `around` of those rounds (0 to 1) draw near the best so far instead
// (sample_around, the best cut to the level's units: a search the policy proposes).
// They only add candidates: never slower than the fixed decode of the same seed,
// which runs whole (on a slow machine it may overrun `seconds`) unless `seconds` is
// spent before it ends: then its coarser levels (and an ensemble's other members'
// rounds) are left out (on 20,000 ops building them took 2.3 s of 1 s).
struct DecodeOptions {
  int samples = 1;
  int levels = 1;
  double temperature = 1.0;
  uint64_t seed = 0;
  double seconds = 0.0;  // > 0: anytime, within this many seconds
  double around = 0.0;   // the share of the anytime rounds drawn near the best so far
  // > 0: anytime until this many placements are simulated in all (the fixed rounds included, and always
  // whole; the last round cut to fit), whatever the time when `seconds` is 0: a budget that does not
  // depend on the machine's speed, so the same seed gives the same placement anywhere.
  int64_t placements = 0;
};
Placement decode_levels(PolicyImpl& policy, const PolicyInput& problem, const PolicyInputOptions& options,
                        const Environment& env, const DecodeOptions& decode, StepResult* simulated = nullptr,
                        DecodeStats* stats = nullptr);
// The same for an ensemble of policies of one network shape (`members`, at least one): every member's
// fixed rounds, then the anytime rounds taken by the members in turn, each near the best any member
// found. One member decodes as decode_levels of that policy does.
Placement decode_levels(const std::vector<PolicyImpl*>& members, const PolicyInput& problem,
                        const PolicyInputOptions& options, const Environment& env, const DecodeOptions& decode,
                        StepResult* simulated = nullptr, DecodeStats* stats = nullptr);

// LibTorch's intra-op threads for one call (one: a policy's tensors are small and
// the cores shared; with two OpenMP threads on the 2-core VM and the other core
// busy, one zero-shot placement took 22-24 s instead of 0.9 s: the spinning
// thread waits for the descheduled one).
class TorchThreads {
 public:
  explicit TorchThreads(int n) : old_(at::get_num_threads()) { at::set_num_threads(n); }
  ~TorchThreads() { at::set_num_threads(old_); }
  TorchThreads(const TorchThreads&) = delete;
  TorchThreads& operator=(const TorchThreads&) = delete;

 private:
  int old_;
};

// PolicyInput features as tensors.
torch::Tensor unit_features(const PolicyInput& problem);    // N x kUnitFeatures
torch::Tensor unit_types(const PolicyInput& problem);       // N (long)
torch::Tensor device_features(const PolicyInput& problem);  // D x kDeviceFeatures

}  // namespace placer
