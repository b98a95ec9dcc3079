// place_with_checkpoint: greedy decoding with a trained policy.
#include "placer/agent/learned.h"

#include <torch/nn.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/timing.h"
#include "placer/graphs/yaml_reader.h"
#include "policy.h"
#include "trainer.h"

namespace placer {

Placement decode_best(PolicyImpl& policy, const PolicyInput& problem, const Environment& env, int samples,
                      double temperature, uint64_t seed, StepResult* simulated, int greedy_rows) {
  torch::NoGradGuard no_grad;
  TorchThreads threads(1);
  SampleOptions so;
  so.temperature = temperature;
  so.greedy_rows = greedy_rows;
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

size_t UnitsHash::operator()(const std::vector<int32_t>& u) const {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the devices
  for (int32_t d : u) h = (h ^ static_cast<uint32_t>(d)) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

std::vector<std::vector<int32_t>> sample_around(PolicyImpl& policy, const PolicyInput& problem,
                                                const std::vector<int32_t>& anchor, int32_t count,
                                                const SampleOptions& options, std::mt19937_64& rng,
                                                const std::function<bool(const std::vector<int32_t>&)>& keep) {
  const int32_t n = problem.n;
  if (count <= 0 || n == 0 || problem.d < 2 || static_cast<int32_t>(anchor.size()) != n) return {};
  SampleOptions so = options;
  so.greedy_rows = 0;
  std::vector<std::vector<int32_t>> out;
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int attempt = 0; attempt < 4 && static_cast<int32_t>(out.size()) < count; ++attempt) {
    const int32_t rows = count - static_cast<int32_t>(out.size());
    std::vector<int32_t> forced;
    forced.reserve(static_cast<size_t>(rows) * n);
    for (int32_t b = 0; b < rows; ++b) {
      const int32_t moves = std::min<int32_t>(n, 1 << std::uniform_int_distribution<int>(0, 3)(rng));
      for (int32_t i = 0; i < moves; ++i)  // the first `moves` of a partial shuffle
        std::swap(order[i], order[std::uniform_int_distribution<int32_t>(i, n - 1)(rng)]);
      std::vector<int32_t> row = anchor;
      for (int32_t i = 0; i < moves; ++i) row[order[i]] = kFreeAvoiding(anchor[order[i]]);
      forced.insert(forced.end(), row.begin(), row.end());
    }
    for (std::vector<int32_t>& units : policy.sample(problem, rows, so, rng, &forced).unit_device)
      if (keep(units)) out.push_back(std::move(units));
  }
  return out;
}

namespace {

// A placement and its simulated step; a success beats a failure, then the faster.
struct Candidate {
  Placement placement;
  StepResult sim;
  bool set = false;
  int member = 0;  // the ensemble member that proposed it
  void offer(Placement p, StepResult s, int by) {
    // (Among failures too, the faster: decode_best ranks them by their simulated step.)
    if (set && !(s.ok() ? !sim.ok() || s.step_s < sim.step_s : !sim.ok() && s.step_s < sim.step_s)) return;
    placement = std::move(p);
    sim = std::move(s);
    set = true;
    member = by;
  }
};

}  // namespace

namespace {

// decode_levels' state: the levels' problems, the best so far, each level's slowest round.
class LevelDecoder {
 public:
  LevelDecoder(const std::vector<PolicyImpl*>& members, const PolicyInput& problem,
               const PolicyInputOptions& options, const Environment& env, const DecodeOptions& o)
      : members_(members), problem_(problem), options_(options), env_(env), o_(o) {
    st_.member_near_rounds.assign(members_.size(), 0);
  }

  Placement run(StepResult* simulated, DecodeStats* stats) {
    round(0, o_.seed, 1, 0);
    add_levels();
    st_.levels = static_cast<int>(level_.size());
    tried_.resize(level_.size());
    near_spent_.assign(level_.size(), 0);
    // The other members' fixed rounds (an ensemble): each one's greedy decode and samples at every level, drawn
    // with the seeds member 0's were, so that the ensemble holds every member's own fixed decode.
    for (size_t m = 1; m < members_.size() && !time_up(); ++m)
      for (size_t l = 0; l < level_.size(); ++l) round(l, o_.seed, 1, m);  // (the seeds member 0's took)
    // Anytime: more rounds at the levels in turn, each with a seed of its own, while one
    // fits, kMaxRounds at each level at most (a budget of "no limit" ends too); an ensemble's
    // members take the rounds in turn, each near the best any of them found.
    constexpr uint64_t kMaxRounds = 32;
    for (uint64_t r = 1; (o_.seconds > 0.0 || o_.placements > 0) && r < kMaxRounds * members_.size(); ++r)
      if (!anytime_rounds(r)) break;
    st_.seconds = seconds_since(t0_);
    st_.best_member = best_.member;
    if (simulated) *simulated = std::move(best_.sim);
    if (stats) *stats = st_;
    return std::move(best_.placement);
  }

 private:
  // A time budget spent already: the fixed rounds left (coarser levels, other members) are skipped. Without one
  // they run whole. (On 20,000 ops the coarser levels' problems alone took 2.3 s of a 1 s budget, a hierarchical
  // policy's 85 s.)
  bool time_up() const { return o_.seconds > 0.0 && seconds_since(t0_) >= o_.seconds; }

  // The coarser levels: 1/2, 1/4, ... as many units, each coarser than the last (while the time budget lasts).
  void add_levels() {
    coarse_.reserve(static_cast<size_t>(std::max(0, o_.levels - 1)));  // level_ points into it
    int32_t last = problem_.n;
    for (int l = 1; l < o_.levels && !time_up(); ++l) {
      PolicyInputOptions o = options_;
      o.max_units = std::max<int32_t>(problem_.d, problem_.n >> l);
      if (o.max_units >= last) break;  // no coarser than the last level
      PolicyInput p = make_policy_input(*problem_.graph, *problem_.cluster, *env_.costs(), o);
      if (p.n >= last) break;
      last = p.n;
      coarse_.push_back(std::move(p));
      level_.push_back(&coarse_.back());
      round(level_.size() - 1, o_.seed, 1, 0);
    }
  }

  // Round r at every level whose slowest round still fits; false when none did.
  bool anytime_rounds(uint64_t r) {
    bool drew = false;
    for (size_t l = 0; l < level_.size(); ++l) {
      int count = o_.samples;  // the round's rows: a placement budget cuts the last one to fit
      if (o_.placements > 0) {
        const int64_t left = o_.placements - st_.placements;
        if (left <= 0) return false;
        count = static_cast<int>(std::min<int64_t>(count, left));
      }
      if (o_.seconds > 0.0 && seconds_since(t0_) + 1.5 * round_s_[l] > o_.seconds) continue;
      const uint64_t round_seed = o_.seed + 0x9E3779B97F4A7C15ULL * r + l;
      // `around` of the rounds near the best: round r is one where r x around passes a whole number.
      // (A policy that cannot decode forced rows, the hierarchical one, draws plain rounds only.)
      // The members take the rounds in turn; each member's q-th anytime round is near the best where q x around
      // passes a whole number (by the round's own index, an even number of members left member 1 none).
      const size_t k = members_.size(), m = (r - 1) % k;
      const uint64_t q = (r - 1) / k + 1;
      const bool near = o_.around > 0 && members_[m]->clones_placements() && !near_spent_[l] &&
                        std::floor(q * o_.around) > std::floor((q - 1) * o_.around);
      if (near)
        round_near(l, round_seed, m, count);
      else
        round(l, round_seed, 0, m, count);
      drew = true;
    }
    return drew;
  }

  // A round's bookkeeping: the level's slowest round, the placements it simulated.
  void count_round(size_t l, Clock::time_point started, int64_t placements) {
    if (round_s_.size() <= l) round_s_.resize(l + 1, 0.0);
    round_s_[l] = std::max(round_s_[l], seconds_since(started));
    st_.placements += placements;
    ++st_.rounds;
  }

  // A round of `count` rows (0: place_samples) at level l by member m.
  void round(size_t l, uint64_t round_seed, int greedy_rows, size_t m, int count = 0) {
    const auto t = Clock::now();
    if (count <= 0) count = o_.samples;
    StepResult sim;
    Placement placed =
        decode_best(*members_[m], *level_[l], env_, count, o_.temperature, round_seed, &sim, greedy_rows);
    best_.offer(std::move(placed), std::move(sim), static_cast<int>(m));
    count_round(l, t, std::max(1, count));
  }

  // A round near the best so far (policy.place_around): `samples` rows, each the
  // best cut to the level's units with a few units moved where the policy draws them.
  // A level where one drew nothing new (every row tried before) draws plain rounds after.
  void round_near(size_t l, uint64_t round_seed, size_t m, int count) {
    const auto t = Clock::now();
    const PolicyInput& p = *level_[l];
    std::mt19937_64 rng(round_seed);
    SampleOptions so;
    so.temperature = o_.temperature;
    TorchThreads threads(1);
    const std::vector<std::vector<int32_t>> rows =
        sample_around(*members_[m], p, p.contract(best_.placement), std::max(1, count), so, rng,
                      [&](const std::vector<int32_t>& u) { return tried_[l].insert(u).second; });
    for (const std::vector<int32_t>& units : rows) {
      Placement placed = p.expand(units);
      StepResult sim = env_.simulate(placed);
      best_.offer(std::move(placed), std::move(sim), static_cast<int>(m));
    }
    count_round(l, t, static_cast<int64_t>(rows.size()));  // the new ones it drew: `samples` at most
    ++st_.near_rounds;
    ++st_.member_near_rounds[m];
    near_spent_[l] = rows.empty();
  }

  const std::vector<PolicyImpl*> members_;  // an ensemble's, or the one policy
  const PolicyInput& problem_;
  const PolicyInputOptions& options_;
  const Environment& env_;
  const DecodeOptions o_;
  const Clock::time_point t0_ = Clock::now();
  DecodeStats st_;
  Candidate best_;
  std::vector<PolicyInput> coarse_;                                         // the coarser levels' problems
  std::vector<const PolicyInput*> level_{&problem_};                        // every level's (the first is the caller's)
  std::vector<double> round_s_;                                             // each level's slowest round
  std::vector<std::unordered_set<std::vector<int32_t>, UnitsHash>> tried_;  // rows drawn near the best
  std::vector<char> near_spent_;
};

}  // namespace

Placement decode_levels(const std::vector<PolicyImpl*>& members, const PolicyInput& problem,
                        const PolicyInputOptions& options, const Environment& env, const DecodeOptions& decode,
                        StepResult* simulated, DecodeStats* stats) {
  if (members.empty()) throw std::logic_error("decode_levels: no policy");
  return LevelDecoder(members, problem, options, env, decode).run(simulated, stats);
}

Placement decode_levels(PolicyImpl& policy, const PolicyInput& problem, const PolicyInputOptions& options,
                        const Environment& env, const DecodeOptions& decode, StepResult* simulated,
                        DecodeStats* stats) {
  return decode_levels(std::vector<PolicyImpl*>{&policy}, problem, options, env, decode, simulated, stats);
}

void check_trained_devices(const Cluster& cluster, int32_t trained, const PolicyImpl& policy, const std::string& what) {
  if (trained <= 0 || cluster.size() <= trained) return;
  std::string groups;
  if (const auto* h = dynamic_cast<const HierarchicalPolicyImpl*>(&policy);
      h && h->groups_for(cluster.size()) > h->groups_for(trained))
    groups = " and at most " + std::to_string(h->groups_for(trained)) + " groups (this cluster needs " +
             std::to_string(h->groups_for(cluster.size())) + ")";
  throw PolicyOutOfRange("cluster '" + cluster.name + "' has " + std::to_string(cluster.size()) + " devices; " + what +
                         " was trained on at most " + std::to_string(trained) + " devices" + groups +
                         ": its device embeddings beyond that are untrained (train or fine-tune it on a cluster "
                         "of as many devices)");
}

namespace {

// The run folder whose side files (warm start, best placements) belong to the checkpoint at `path`: the
// folder of a run's own checkpoint (kCheckpointFile), "" for a file of another name (an exported policy,
// which may lie in another run's folder and would pick up that run's placements).
std::string run_folder_of(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::path(path).filename() != kCheckpointFile) return "";
  return fs::absolute(path).parent_path().string();  // (a bare "checkpoint.pt": the working folder)
}

std::optional<NamedPlacement> placement_if_readable(const std::string& file) {
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    return load_placement(file);
  } catch (const InputError&) {
    return std::nullopt;  // unreadable: decode only
  }
}

// Whether the run's summary credits its result (best_placement.json) to the policy (best_found_by).
bool summary_credits_policy(const std::string& dir) {
  try {
    const JsonReader<InputError> reader{"summary"};
    const rj::Document doc = reader.parse_object(read_file(dir + "/summary.json"), "summary.json");
    return JsonNode(&doc).member("best_found_by").string() == std::optional<std::string>("policy");
  } catch (const std::exception&) {
    return false;  // no summary, or unreadable: the run's best is no one's we know
  }
}

// The policy's own best in training (the run's best may be a baseline's or a search's find, and an answer
// built on it was credited to the policy). A run writes policy_best_placement.json where the policy
// evaluated anything; without it, best_placement.json is the policy's only where the summary credits the
// policy (a run made before the file existed), else a baseline's (the policy evaluated nothing: 0
// updates, cancelled before the first, every sample failed).
std::optional<NamedPlacement> policy_best_of(const std::string& dir) {
  if (std::filesystem::exists(dir + "/policy_best_placement.json"))
    return placement_if_readable(dir + "/policy_best_placement.json");
  if (!summary_credits_policy(dir)) return std::nullopt;
  return placement_if_readable(dir + "/best_placement.json");
}

}  // namespace

struct LoadedPolicy::Impl {
  std::string path, dir;  // dir: the run folder whose side files are its ("": none)
  TrainConfig config;
  int32_t trained_devices = 0;  // 0: unknown
  // An ensemble's members (one policy: itself; the first's config and units decode for all) and their files.
  std::vector<std::shared_ptr<PolicyImpl>> members;
  std::vector<PolicyImpl*> decoders;  // members' pointers, for decode_levels
  std::vector<std::string> member_paths;
  // The run's warm-start and best placements, read once with the checkpoint.
  std::optional<NamedPlacement> warm, best;
  mutable std::mutex mutex;  // LibTorch modules: one decode at a time
};

LoadedPolicy::LoadedPolicy() : impl_(std::make_unique<Impl>()) {}
LoadedPolicy::~LoadedPolicy() = default;
std::string LoadedPolicy::policy_type() const { return policy_type_name(impl_->config.policy.type); }
int32_t LoadedPolicy::trained_devices() const { return impl_->trained_devices; }
const std::vector<std::string>& LoadedPolicy::member_files() const { return impl_->member_paths; }

namespace {

// std::filesystem's checks without its exceptions (EACCES, ELOOP, ENAMETOOLONG): false where it cannot tell.
bool is_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}
bool exists_here(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}
bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

bool is_ensemble_folder(const std::string& path) {
  return is_dir(path) && exists_here((std::filesystem::path(path) / kEnsembleFile).string());
}

std::vector<std::string> ensemble_members(const std::string& folder) {
  namespace fs = std::filesystem;
  const std::string manifest = (fs::path(folder) / kEnsembleFile).string();
  const std::string where = manifest + ": field 'members'";
  YamlNode members;
  try {
    members = parse_yaml(read_file(manifest)).member("members");
  } catch (const YamlSyntaxError& e) {
    throw InputError(manifest + ": " + e.what());
  }
  if (!members.present() || !members.is_list())
    throw InputError(where + ": must be a list of policy files (exported policies or checkpoints), got " +
                     (members.present() ? members.describe() : std::string("nothing")));
  if (members.size() < 1 || members.size() > kMaxEnsembleMembers)
    throw InputError(where + ": must list 1 to " + std::to_string(kMaxEnsembleMembers) + " files, got " +
                     std::to_string(members.size()));
  std::vector<std::string> files;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const std::optional<std::string> name = members.at(i).is_list() || members.at(i).is_map()
                                                ? std::nullopt
                                                : members.at(i).string();
    if (!name || name->empty()) throw InputError(at + ": must be a file name, got " + members.at(i).describe());
    const std::string file = fs::path(*name).is_absolute() ? *name : (fs::path(folder) / *name).string();
    if (!is_file(file)) throw InputError(at + ": '" + file + "' is not a file (or cannot be read)");
    std::error_code ec;
    for (size_t j = 0; j < files.size(); ++j)
      if (fs::equivalent(files[j], file, ec))
        throw InputError(at + ": '" + *name + "' is listed twice (also members[" + std::to_string(j) + "])");
    files.push_back(file);
  }
  return files;
}

std::vector<std::string> policy_files(const std::string& path) {
  namespace fs = std::filesystem;
  if (!is_dir(path)) return {path};
  if (!is_ensemble_folder(path)) return {(fs::path(path) / kCheckpointFile).string()};
  std::vector<std::string> files = ensemble_members(path);
  files.insert(files.begin(), (fs::path(path) / kEnsembleFile).string());
  return files;
}

std::shared_ptr<const LoadedPolicy> LoadedPolicy::load(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::shared_ptr<LoadedPolicy> p(new LoadedPolicy());
  Impl& in = *p->impl_;
  if (is_ensemble_folder(run_dir)) {
    // An ensemble: its members decode over the first's units, with the first's settings.
    in.member_paths = ensemble_members(run_dir);
    for (size_t i = 0; i < in.member_paths.size(); ++i) {
      TrainConfig config;
      int32_t trained = 0;
      const std::string at = run_dir + "/" + kEnsembleFile + ": field 'members'[" + std::to_string(i) + "]";
      try {
        in.members.push_back(load_policy(in.member_paths[i], i == 0 ? &in.config : &config, &trained));
      } catch (const InputError& e) {
        throw InputError(at + ": " + e.what());
      }
      if (i == 0) {
        in.trained_devices = trained;
        continue;
      }
      if (const std::string differs = policy_differences(in.config, config, "members[0]"); !differs.empty())
        throw InputError(at + ": " + in.member_paths[i] + " holds another policy than members[0]: " + differs);
      // The fewest devices any member that says trained on.
      if (trained > 0) in.trained_devices = in.trained_devices > 0 ? std::min(in.trained_devices, trained) : trained;
    }
    for (const auto& m : in.members) in.decoders.push_back(m.get());
    in.path = run_dir;
    return p;  // exported policies: no run's side files
  }
  in.path = is_dir(run_dir) ? run_dir + "/" + kCheckpointFile : run_dir;
  in.dir = run_folder_of(in.path);
  in.members = {load_policy(in.path, &in.config, &in.trained_devices)};
  in.decoders = {in.members[0].get()};
  in.member_paths = {in.path};
  if (p->impl_->dir.empty()) return p;  // no run's side files: decode only
  p->impl_->warm = placement_if_readable(p->impl_->dir + "/warm_start_placement.json");
  p->impl_->best = policy_best_of(p->impl_->dir);
  return p;
}

PlaceResult place_with_checkpoint(const std::string& run_dir, const PlaceContext& context) {
  if (!context.graph || !context.cluster || !context.env)
    throw InputError("place_with_checkpoint: graph, cluster and env are required");
  const auto t0 = std::chrono::steady_clock::now();
  PlaceResult result = LoadedPolicy::load(run_dir)->place(context);
  result.place_seconds = seconds_since(t0);
  return result;
}

namespace {

// What a decode did, for the note of LoadedPolicy::place: "best of the greedy decodes and N samples of the gnn
// policy from PATH over U units ... (R rounds of S ... within T ms)"; an ensemble's names the member that
// proposed the answer.
std::string decode_note(const std::string& type, const std::string& path, int members, int32_t units, int samples,
                        const DecodeStats& ds, double decode_seconds, int64_t decode_placements) {
  const std::string of =
      " of " +
      (members > 1 ? "an ensemble of " + std::to_string(members) + " " + type + " policies (member " +
                         std::to_string(ds.best_member) + "'s)"
                   : "the " + type + " policy") +
      " from " + path + " over " + std::to_string(units) + " units" +
      (ds.levels > 1 ? " and the same over 1/2 to 1/" + std::to_string(1 << (ds.levels - 1)) + " as many" : "");
  if (ds.rounds > ds.levels * members)  // anytime rounds after every member's fixed ones
    return "best of the greedy decodes and " + std::to_string(ds.placements - ds.levels * members) + " samples" + of +
           " (" + std::to_string(ds.rounds) + " rounds of " + std::to_string(samples) +
           (ds.near_rounds > 0 ? ", " + std::to_string(ds.near_rounds) + " of them near the best so far" : "") +
           (decode_placements > 0 ? ", " + std::to_string(ds.placements) + " placements of a budget of " +
                                        std::to_string(decode_placements) + ")"
                                  : " within a budget of " + std::to_string(std::llround(decode_seconds * 1000.0)) +
                                        " ms)");
  const std::string each = members > 1 ? "each member's " : "";
  return (samples > 1 ? "best of " + each + "greedy decode and " + std::to_string(samples - 1) + " samples"
                      : each + "greedy decode") +
         of;
}

}  // namespace

PlaceResult LoadedPolicy::place(const PlaceContext& context, double decode_seconds, int64_t decode_placements) const {
  namespace fs = std::filesystem;
  if (!context.graph || !context.cluster || !context.env)
    throw InputError("LoadedPolicy::place: graph, cluster and env are required");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& path = impl_->path;
  const std::string& dir = impl_->dir;
  const TrainConfig& config = impl_->config;
  // Inference mode: the decode's tensors never meet autograd here (a trainer's own samples do, and keep NoGradGuard).
  c10::InferenceMode inference;
  const Graph& graph = *context.graph;
  const Cluster& cluster = *context.cluster;
  const std::string what = "the " + std::string(policy_type_name(config.policy.type)) + " policy in " + path;
  check_trained_devices(cluster, impl_->trained_devices, *impl_->members[0], what);
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
  // (Its units split by the warm start only where the run split them: warm_start.split_units.)
  if (config.warm_start.split_units) warm = same_graph(impl_->warm);
  best = same_graph(impl_->best);

  const PolicyInputOptions po = unit_options(*impl_->members[0], config, warm ? &*warm : nullptr);
  PolicyInput problem = make_policy_input(graph, cluster, *context.env->costs(), po);
  PlaceResult result;
  result.method = std::string("learned:") + policy_type_name(config.policy.type);
  StepResult decoded;
  DecodeStats ds;
  std::unique_lock<std::mutex> decode_lock(impl_->mutex);
  // The budget counts from the call: what loading the problem took is spent.
  const double left = decode_seconds > 0.0 ? std::max(1e-3, decode_seconds - seconds_since(t0)) : 0.0;
  result.placement = decode_levels(impl_->decoders, problem, po, *context.env,
                                   {config.policy.place_samples, config.policy.place_levels,
                                    config.optimizer.temperature, context.seed, left, config.policy.place_around,
                                    std::max<int64_t>(0, decode_placements)},
                                   &decoded, &ds);
  decode_lock.unlock();
  result.evaluations = ds.placements;
  result.stats["decoded_simulated_s"] = decoded.step_s;
  result.stats["decode_rounds"] = ds.rounds;
  result.stats["decode_near_rounds"] = ds.near_rounds;
  const int k = static_cast<int>(impl_->members.size());
  if (k > 1) result.stats["decode_best_member"] = ds.best_member;
  result.note = decode_note(policy_type_name(config.policy.type), path, k, problem.n, config.policy.place_samples, ds,
                            decode_seconds, decode_placements);
  if (best) {
    const StepResult stored = context.env->simulate(*best);
    result.evaluations += 1;
    result.stats["greedy_simulated_s"] = decoded.ok() ? decoded.step_s : -1.0;
    result.stats["best_found_simulated_s"] = stored.ok() ? stored.step_s : -1.0;
    if (stored.ok() && (!decoded.ok() || stored.step_s < decoded.step_s)) {
      result.placement = *best;
      result.note = "the policy's best placement in training run " + dir + " (decoded simulated " +
                    std::to_string(decoded.step_s) + " s, best " + std::to_string(stored.step_s) + " s)";
    }
  }
  if (impl_->trained_devices <= 0)
    result.note += " (warning: the checkpoint does not say how many devices " + what +
                   " trained on; beyond that its device embeddings are untrained)";
  result.place_seconds = seconds_since(t0);
  return result;
}

}  // namespace placer
