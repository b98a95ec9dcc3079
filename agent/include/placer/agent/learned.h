// Entry points of the learned placer used by the CLI and the service.
// (Owned by the learned-placer work; the policies themselves live in agent/src.)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "placer/agent/placer.h"
#include "placer/graphs/error.h"

namespace placer {

// Greedy-decodes a placement for context.graph on context.cluster with the
// policy checkpointed in run_dir (a `placer train` result folder). Throws
// InputError naming the file or field of a malformed checkpoint.
PlaceResult place_with_checkpoint(const std::string& run_dir, const PlaceContext& context);

// A policy asked to place on a cluster of more devices than it trained on (its
// device embeddings beyond that are untrained: it would place by noise).
class PolicyOutOfRange : public InputError {
 public:
  using InputError::InputError;
};

// A checkpointed policy loaded once and used for many placements (the
// service keeps these per policy name and checkpoint change time). place()
// is const and may be called from several threads at once.
class LoadedPolicy {
 public:
  // Throws InputError naming the file or field of a malformed checkpoint. A folder with an
  // ensemble.yaml (`members: [FILE, ...]`, paths relative to the folder) is an ensemble of
  // policies of one network shape (seeds of one recipe): they share the decode's rounds, each
  // proposing near the best any of them found, over the first's units and with its settings.
  // A run's own checkpoint
  // (its folder, or a path whose file is named checkpoint.pt) also reads the run's warm start and the
  // policy's own best in training beside it; a file of another name (an exported policy) is the policy alone.
  static std::shared_ptr<const LoadedPolicy> load(const std::string& run_dir);
  ~LoadedPolicy();
  // decode_seconds 0: the fixed decode (the greedy decode and place_samples - 1
  // samples at each of place_levels unit levels). > 0: an anytime decode that keeps
  // drawing rounds of place_samples within that many seconds from the call (32
  // at each level at most)
  // (evaluations: the placements simulated; it decodes the fixed rounds first, so it
  // is never slower than the fixed decode of the same seed, unless decode_seconds is spent
  // before the fixed rounds end: then the coarser levels are left out).
  // decode_placements > 0: anytime until that many placements are simulated (the fixed rounds
  // always whole), within decode_seconds if that is > 0 too, else whatever the time: the same
  // seed then gives the same placement on any machine.
  PlaceResult place(const PlaceContext& context, double decode_seconds = 0.0, int64_t decode_placements = 0) const;
  std::string policy_type() const;  // seq2seq | hierarchical | gnn
  // The most devices it trained on (0: unknown, a checkpoint that does not say); place()
  // refuses a larger cluster (PolicyOutOfRange).
  int32_t trained_devices() const;
  // The policy files it decodes with: one, or an ensemble's members in order.
  const std::vector<std::string>& member_files() const;

 private:
  LoadedPolicy();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An ensemble folder's manifest, and the most members it may list.
inline constexpr const char* kEnsembleFile = "ensemble.yaml";
inline constexpr size_t kMaxEnsembleMembers = 16;
// Whether `path` is an ensemble folder (a folder with a kEnsembleFile).
bool is_ensemble_folder(const std::string& path);
// The member files an ensemble folder's manifest lists (resolved against the folder); throws
// InputError naming the field: not a list, empty or over kMaxEnsembleMembers, a missing file, one twice.
std::vector<std::string> ensemble_members(const std::string& folder);

// The files LoadedPolicy::load(path) reads, without reading them: an ensemble folder's manifest and
// members, a folder's checkpoint.pt, or the file itself (a cache keys a loaded policy by their change
// times). Throws InputError as ensemble_members does.
std::vector<std::string> policy_files(const std::string& path);

// The pretrained gnn (policies/pretrained/, git-ignored, made by
// `make pretrained`): $PLACER_PRETRAINED when set, else the source tree's folder.
std::string pretrained_policy_dir();
// A policy named on the command line: "pretrained" is pretrained_policy_dir(),
// anything else a `placer train` result folder (or its checkpoint file).
std::string resolve_policy_dir(const std::string& name);
// LoadedPolicy::load of resolve_policy_dir(name); a missing or unreadable
// checkpoint is an InputError naming `name` and the path.
std::shared_ptr<const LoadedPolicy> load_named_policy(const std::string& name);

// A policy's zero-shot answer within a wall-time budget: the policy alone (its
// greedy decode and samples, the simulator keeps the fastest; without a fast path
// or refinement it samples until the budget is nearly spent, before a refinement
// for half of it, beside the fast path alone its fixed rounds); with a
// `fast_path`, those cheap heuristics too (the service's `place` answers the
// same way); then, with `refine`, local_search's annealing from the faster of
// the two for what is left of the budget. Each is reported apart and
// `found_by` names who found the answer, so that neither a heuristic's nor a
// search's find is credited to the policy.
struct PolicyAnswer {
  PlaceResult policy;          // the policy alone (place_seconds: its decode)
  double policy_step_s = 0.0;  // simulated (failed placements: their simulated time, policy_ok false)
  bool policy_ok = false;
  std::string fast_path_method;   // the fastest fast-path heuristic ("" = none ran or none placed)
  double fast_path_step_s = 0.0;  // its simulated step
  double fast_path_seconds = 0.0;
  bool refined = false;   // local_search ran from the faster of the policy's and the fast path's placement
                          // (and from the slower one, where both placed it, the time split)
  bool improved = false;  // ... and found a faster one than both: `placement` is it
  std::vector<std::string> refine_starts;  // where it started: "policy" or a heuristic's name, the faster first
                                           // ("its own start" where neither placement fits)
  std::string refine_note;                 // why it did not run, or not from every start ("" = it did)
  double refine_seconds = 0.0;             // in all its runs
  int64_t refine_evaluations = 0;
  Placement placement;        // the answer: the fastest of the policy's, the fast path's and the refinement's
  double step_s = 0.0;        // the answer's simulated step
  std::string found_by;       // "policy", a heuristic's name, either + "+local_search", or "local_search"
  double load_seconds = 0.0;  // loading the checkpoint (load_named_policy)
  double seconds = 0.0;       // wall time in all: load, policy, fast path and refinement
};
// The heuristics `placer place --policy` runs beside the policy by default:
// the service's fast path less dp and mincut (offload_updates, which runs dp
// among its four bases, took 3-15 ms on the held-out set).
const std::vector<std::string>& policy_fast_path();
// `placements` > 0 (the policy alone only: no refinement, no fast path): the policy samples that many
// placements whatever the time (LoadedPolicy::place's decode_placements), and budget_s does not apply.
PolicyAnswer place_with_policy(const LoadedPolicy& policy, const PlaceContext& context, double budget_s, bool refine,
                               const std::vector<std::string>& fast_path = {}, int64_t placements = 0);
// The same with the policy loaded by name first, the load counted in the budget.
PolicyAnswer place_with_policy(const std::string& name, const PlaceContext& context, double budget_s, bool refine,
                               const std::vector<std::string>& fast_path = {}, int64_t placements = 0);

}  // namespace placer
