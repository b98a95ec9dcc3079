// Entry points of the learned placer used by the CLI and the service.
// (Owned by the learned-placer work; the policies themselves live in agent/src.)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "placer/agent/placer.h"

namespace placer {

// Greedy-decodes a placement for context.graph on context.cluster with the
// policy checkpointed in run_dir (a `placer train` result folder). Throws
// InputError naming the file or field of a malformed checkpoint.
PlaceResult place_with_checkpoint(const std::string& run_dir, const PlaceContext& context);

// A checkpointed policy loaded once and used for many placements (the
// service keeps these per policy name and checkpoint change time). place()
// is const and may be called from several threads at once.
class LoadedPolicy {
 public:
  // Throws InputError naming the file or field of a malformed checkpoint.
  static std::shared_ptr<const LoadedPolicy> load(const std::string& run_dir);
  ~LoadedPolicy();
  PlaceResult place(const PlaceContext& context) const;
  std::string policy_type() const;  // seq2seq | hierarchical | gnn

 private:
  LoadedPolicy();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
