// Policies built by kind.
#include <mutex>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "policy.h"

namespace placer {

std::shared_ptr<PolicyImpl> make_policy(const PolicyOptions& options, uint64_t seed) {
  if (options.hidden < 2 || options.hidden % 2 != 0 || options.hidden > 4096)
    throw InputError("policy.hidden: must be an even number in [2, 4096], got " + std::to_string(options.hidden));
  static std::mutex global_generator;
  const std::lock_guard<std::mutex> lock(global_generator);
  torch::manual_seed(seed);
  switch (options.kind) {
    case PolicyType::Seq2Seq: return std::make_shared<Seq2SeqPolicyImpl>(options);
    case PolicyType::Gnn: return std::make_shared<GnnPolicyImpl>(options);
    case PolicyType::Hierarchical: return std::make_shared<HierarchicalPolicyImpl>(options);
  }
  throw InputError("policy.type: unknown policy");
}

}  // namespace placer
