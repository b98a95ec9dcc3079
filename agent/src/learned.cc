// place_with_checkpoint: greedy decoding with a trained policy.
#include "placer/agent/learned.h"

#include <torch/nn.h>

#include <chrono>
#include <filesystem>
#include <mutex>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "policy.h"
#include "trainer.h"

namespace placer {

Placement decode_best(PolicyImpl& policy, const PolicyInput& problem, const Environment& env, int samples,
                      double temperature, uint64_t seed, StepResult* simulated) {
  torch::NoGradGuard no_grad;
  TorchThreads threads(1);
  SampleOptions so;
  so.temperature = temperature;
  so.greedy_rows = 1;
  std::mt19937_64 rng(seed);
  const Rollout r = policy.sample(problem, std::max(1, samples), so, rng);
  Placement best;
  StepResult best_sim;
  for (int32_t k = 0; k < r.batch; ++k) {
    Placement p = problem.expand(r.unit_device[k]);
    StepResult sim = env.simulate(p);
    // Failures rank behind every success, then by step time (OOM: simulated peak time).
    const bool better =
        k == 0 || (sim.ok() && !best_sim.ok()) || (sim.ok() == best_sim.ok() && sim.step_s < best_sim.step_s);
    if (better) {
      best = std::move(p);
      best_sim = std::move(sim);
    }
  }
  if (simulated) *simulated = std::move(best_sim);
  return best;
}

Placement decode_levels(PolicyImpl& policy, const PolicyInput& problem, const PolicyInputOptions& options,
                        const Environment& env, int samples, int levels, double temperature, uint64_t seed,
                        StepResult* simulated, int* decoded_levels) {
  StepResult best_sim;
  int decoded = 1;
  Placement best = decode_best(policy, problem, env, samples, temperature, seed, &best_sim);
  int32_t last = problem.n;
  for (int l = 1; l < levels; ++l) {
    PolicyInputOptions coarse = options;
    coarse.max_units = std::max<int32_t>(problem.d, problem.n >> l);
    if (coarse.max_units >= last) break;  // no coarser than the last level
    const PolicyInput p = make_policy_input(*problem.graph, *problem.cluster, env.costs(), coarse);
    if (p.n >= last) break;
    last = p.n;
    ++decoded;
    StepResult sim;
    Placement placed = decode_best(policy, p, env, samples, temperature, seed, &sim);
    if (sim.ok() && (!best_sim.ok() || sim.step_s < best_sim.step_s)) {
      best = std::move(placed);
      best_sim = std::move(sim);
    }
  }
  if (simulated) *simulated = std::move(best_sim);
  if (decoded_levels) *decoded_levels = decoded;
  return best;
}

struct LoadedPolicy::Impl {
  std::string path, dir;
  TrainConfig config;
  std::shared_ptr<PolicyImpl> policy;
  // The run's warm-start and best placements, read once with the checkpoint.
  std::optional<NamedPlacement> warm, best;
  mutable std::mutex mutex;  // LibTorch modules: one decode at a time
};

LoadedPolicy::LoadedPolicy() : impl_(std::make_unique<Impl>()) {}
LoadedPolicy::~LoadedPolicy() = default;
std::string LoadedPolicy::policy_type() const { return policy_type_name(impl_->config.policy.type); }

std::shared_ptr<const LoadedPolicy> LoadedPolicy::load(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::shared_ptr<LoadedPolicy> p(new LoadedPolicy());
  p->impl_->path = fs::is_directory(run_dir) ? run_dir + "/" + kCheckpointFile : run_dir;
  p->impl_->dir = fs::is_directory(run_dir) ? run_dir : fs::path(run_dir).parent_path().string();
  p->impl_->policy = load_policy(p->impl_->path, &p->impl_->config);
  auto read = [&](const std::string& file) -> std::optional<NamedPlacement> {
    if (!fs::exists(file)) return std::nullopt;
    try {
      return load_placement(file);
    } catch (const InputError&) {
      return std::nullopt;  // unreadable: decode only
    }
  };
  p->impl_->warm = read(p->impl_->dir + "/warm_start_placement.json");
  p->impl_->best = read(p->impl_->dir + "/best_placement.json");
  return p;
}

PlaceResult place_with_checkpoint(const std::string& run_dir, const PlaceContext& context) {
  if (!context.graph || !context.cluster || !context.env)
    throw InputError("place_with_checkpoint: graph, cluster and env are required");
  const auto t0 = std::chrono::steady_clock::now();
  PlaceResult result = LoadedPolicy::load(run_dir)->place(context);
  result.place_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

PlaceResult LoadedPolicy::place(const PlaceContext& context) const {
  namespace fs = std::filesystem;
  if (!context.graph || !context.cluster || !context.env)
    throw InputError("LoadedPolicy::place: graph, cluster and env are required");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& path = impl_->path;
  const std::string& dir = impl_->dir;
  const TrainConfig& config = impl_->config;
  torch::NoGradGuard no_grad;
  const Graph& graph = *context.graph;
  const Cluster& cluster = *context.cluster;
  // On the graph the run trained on, decode over the same units (the warm
  // start's split) and also consider the best placement the run found.
  std::optional<Placement> warm, best;
  auto same_graph = [&](const std::optional<NamedPlacement>& named) -> std::optional<Placement> {
    if (!named || static_cast<int64_t>(named->device.size()) != graph.size()) return std::nullopt;
    try {
      return from_named(graph, cluster, *named);
    } catch (const InputError&) {
      return std::nullopt;  // another graph or cluster: decode only
    }
  };
  warm = same_graph(impl_->warm);
  best = same_graph(impl_->best);

  PolicyInputOptions po;
  po.max_units = impl_->policy->unit_limit(config.policy.max_groups);
  po.keep_apart = warm ? &*warm : nullptr;
  po.seed = config.run.seed;
  PolicyInput problem = make_policy_input(graph, cluster, context.env->costs(), po);
  PlaceResult result;
  result.method = std::string("learned:") + policy_type_name(config.policy.type);
  StepResult decoded;
  std::unique_lock<std::mutex> decode_lock(impl_->mutex);
  int levels = 1;
  result.placement =
      decode_levels(*impl_->policy, problem, po, *context.env, config.policy.place_samples, config.policy.place_levels,
                    config.optimizer.temperature, context.seed, &decoded, &levels);
  decode_lock.unlock();
  result.evaluations = static_cast<int64_t>(config.policy.place_samples) * levels;
  result.stats["decoded_simulated_s"] = decoded.step_s;
  result.note = (config.policy.place_samples > 1
                     ? "best of the greedy decode and " + std::to_string(config.policy.place_samples - 1) +
                           " samples of the " + policy_type_name(config.policy.type) + " policy from " + path +
                           " over " + std::to_string(problem.n) + " units"
                     : "greedy decode of " + std::string(policy_type_name(config.policy.type)) + " policy from " +
                           path + " over " + std::to_string(problem.n) + " units") +
                (levels > 1 ? " and the same over 1/2 to 1/" + std::to_string(1 << (levels - 1)) + " as many" : "");
  if (best) {
    const StepResult stored = context.env->simulate(*best);
    result.evaluations += 1;
    result.stats["greedy_simulated_s"] = decoded.ok() ? decoded.step_s : -1.0;
    result.stats["best_found_simulated_s"] = stored.ok() ? stored.step_s : -1.0;
    if (stored.ok() && (!decoded.ok() || stored.step_s < decoded.step_s)) {
      result.placement = *best;
      result.note = "best placement found by training run " + dir + " (decoded simulated " +
                    std::to_string(decoded.step_s) + " s, best " + std::to_string(stored.step_s) + " s)";
    }
  }
  result.place_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace placer
