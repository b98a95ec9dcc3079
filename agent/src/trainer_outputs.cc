// Run outputs: the best placement, the reward plot, the baselines compared
// with, held-out graphs and summary.json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

#include "placer/agent/compare.h"
#include "placer/agent/placer.h"
#include "placer/env/pipeline_objective.h"
#include "placer/env/presets.h"
#include "placer/env/remote.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/stats.h"
#include "placer/graphs/timing.h"
#include "policy.h"
#include "trainer.h"
#include "trainer_impl.h"

namespace placer {

std::string num(double v) {
  if (!std::isfinite(v)) return v > 0 ? "1e308" : "-1e308";
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string placement_json(const Placement& p) {
  std::string o = "[";
  for (size_t i = 0; i < p.device_of.size(); ++i) o += (i ? "," : "") + std::to_string(p.device_of[i].value);
  return o + "]";
}

// A placement file of the run, or none: one an earlier run left in the folder is removed (it was listed as
// this run's). A resumed run writes its earlier sessions' again (its checkpoint keeps what they were of).
static void placement_file(const std::string& path, const std::optional<NamedPlacement>& placement) {
  if (placement) {
    save_placement(*placement, path);
    return;
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

const char* BaselineResult::verdict_vs_policy(double policy_s) const {
  if (p_vs_policy < 0) return "";
  if (!significant(p_vs_policy)) return "no difference";
  if (step_s == policy_s) return "differ, equal medians";  // the samples' spreads differ, not their middles
  return step_s > policy_s ? "policy faster" : "row faster";
}

void Trainer::write_outputs(TrainResult* res) {
  const Task& t0 = *tasks_[0];
  res->output_dir = dir_;
  res->updates = update_;
  res->samples = samples_;
  res->distinct_samples = 0;
  for (const auto& t : tasks_) res->distinct_samples += t->sampled_earlier + static_cast<int64_t>(t->sampled.size()) + t->sampled.dropped();
  res->stage_units.clear();
  for (int s = 0; s < std::max(1, c_.optimizer.unit_stages); ++s)
    res->stage_units.push_back(s == stage_ ? t0.problem.n : stage_input(*tasks_[0], s).n);
  if (res->best_found_by == "policy" || res->best_found_by == "none") {
    res->best_measured = t0.best_measured || res->table != "simulated";
    // (A policy whose final measurement failed is no result: nothing to write.)
    if (!t0.best.device_of.empty() && res->policy_failed.empty())
      res->best_placement = to_named(t0.env->graph(), t0.env->cluster(), t0.best);
  } else {  // a baseline's placement, measured when its row was
    res->best_measured = res->table != "simulated" || c_.reward.mode == RewardMode::Measured;
  }
  // The sample of the run that found the result: none (0) where a baseline's placement is the result.
  res->best_found_at_sample = res->best_found_by == "policy" ? t0.best_at : 0;
  res->policy_best_found_at_sample = t0.best_at;
  const EvalStats stats = run_stats(t0);
  res->measurements = stats.measurements;
  res->measured_steps = stats.measured_steps;
  res->calibrations = stats.calibrations;
  res->step_scale = stats.step_scale;
  res->link_factor = stats.link_factor;
  res->lower_bound_s = t0.env->lower_bound();
  res->warm_start_method = t0.warm_method;
  res->warm_start_step_s = t0.warm_step_s;
  auto named = [&](bool has, const Placement& p) {
    return has ? std::optional(to_named(t0.env->graph(), t0.env->cluster(), p)) : std::nullopt;
  };
  placement_file(dir_ + "/best_placement.json",
                 res->best_placement.device.empty() ? std::nullopt : std::optional(res->best_placement));
  placement_file(dir_ + "/policy_best_placement.json", named(!t0.best.device_of.empty(), t0.best));
  placement_file(dir_ + "/warm_start_placement.json", named(t0.has_warm, t0.warm));
  write_file_atomic(dir_ + "/reward.svg",
                    reward_svg(rows_, c_.name + ": " + t0.env->graph().name + " on " + t0.env->cluster().name,
                               res->lower_bound_s, t0.warm_step_s, "warm start (" + t0.warm_method + ")"));
}

// A placement the run did not sample, evaluated in its environment as a row of the final table.
BaselineResult Trainer::evaluated_row(const std::string& method, const Placement& placement, const std::string& note) {
  BaselineResult b{method, 0.0, false, 0.0, note};
  try {
    const Evaluation e = tasks_[0]->env->evaluate(placement);
    b.ok = e.result.ok();
    b.step_s = e.step_s;
    b.ci_low_s = e.result.ci_low_s;
    b.ci_high_s = e.result.ci_high_s;
    b.placement = placement;
    if (!b.ok) b.note = e.result.message;
  } catch (const std::exception& e) {  // a seen placement that does not fit this graph and cluster
    b.note = e.what();
  }
  return b;
}

// What the result is chosen from besides the policy's best: the warm start's
// baselines (a resumed run has them from its checkpoint; one made before they
// were kept has only the placement it cloned), the config's compare methods the
// warm start did not run (with `compare`) and the controls' seen placements.
void Trainer::compare_baselines(TrainResult* res, bool compare) {
  const Task& t0 = *tasks_[0];
  res->baselines = t0.warm_results;
  auto listed = [&](const std::string& m) {
    return std::any_of(res->baselines.begin(), res->baselines.end(),
                       [&](const BaselineResult& b) { return b.method == m; });
  };
  if (t0.has_warm && !listed(t0.warm_method))
    res->baselines.push_back(evaluated_row(t0.warm_method, t0.warm, "the warm start, from the checkpoint"));
  PlaceContext ctx = PlaceContext::on(*t0.env, c_.run.seed);
  const int64_t warm_budget = ctx.sample_budget;
  // Searches (local_search) get the samples the policy spent: compared at equal budget. (From the config, a
  // run ended by its time limit with updates at 1e8, as a service job's, gave local_search 1.6e9
  // evaluations, which no cancel stopped.)
  const OptimizerConfig& o = c_.optimizer;
  ctx.sample_budget = std::max<int64_t>(1, t0.samples);  // graph 0's: a family's are spread over its graphs
  std::vector<std::string> more;  // the compare methods the warm start did not run at the policy's budget
  for (const std::string& m : c_.compare) {
    if (!compare || std::find(more.begin(), more.end(), m) != more.end()) continue;
    if (listed(m)) {
      if (ctx.sample_budget == warm_budget || !make_placer(m)->stochastic()) continue;
      // A search the warm start ran with its own budget (2000) is not the equal-budget row: its row stays
      // under another name (the result is still chosen among it), and the search runs again.
      for (BaselineResult& b : res->baselines)
        if (b.method == m) {
          b.method = "warm_start:" + m;
          b.note += (b.note.empty() ? "" : "; ") + std::string("the warm start's run, ") +
                    std::to_string(warm_budget) + " evaluations";
        }
    }
    more.push_back(m);
  }
  ctx.cancel = ctl_.cancel;
  CompareOptions options;
  options.scoring = CompareScoring::Evaluate;
  options.catch_all = true;
  for (const Compared& c : compare_placers(more, ctx, options)) res->baselines.push_back(baseline_result(c));
  for (const SeenPlacement& s : ctl_.seen)
    res->seen.push_back(evaluated_row(s.found_by, s.placement, "found outside the run"));
  if (compare && o.refine_evaluations > 0) refine(res);
}

// train.refine_evaluations: local_search's annealing from the fastest
// placement evaluated so far, its evaluations on top of the run's samples.
void Trainer::refine(TrainResult* res) {
  const Task& t0 = *tasks_[0];
  const Placement* start = t0.best.device_of.empty() ? nullptr : &t0.best;
  double start_s = t0.best.device_of.empty() ? std::numeric_limits<double>::infinity() : t0.best_step_s;
  std::string from = "the policy's best";
  // The seen rows too (a fine-tuning run's zero-shot answer, the service's fast path).
  for (const std::vector<BaselineResult>* list : {&res->baselines, &res->seen})
    for (const BaselineResult& b : *list)
      if (b.ok && !b.placement.device_of.empty() && b.step_s < start_s) {
        start = &b.placement;
        start_s = b.step_s;
        from = b.method;
      }
  if (!start) return;
  PlaceContext ctx = PlaceContext::on(*t0.env, c_.run.seed);
  ctx.sample_budget = c_.optimizer.refine_evaluations;
  ctx.start = start;
  ctx.time_limit_s = 1e9;  // the budget ends it, or a cancel
  ctx.cancel = ctl_.cancel;
  try {
    const PlaceResult r = make_placer("local_search")->place(ctx);
    const std::string note = "local_search from " + from + ", " + std::to_string(r.evaluations) + " evaluations";
    // Nothing faster than its start: no row (the start keeps its credit).
    if (r.placement.device_of == start->device_of) {
      std::fprintf(stderr, "refine: %s found nothing faster\n", note.c_str());
      return;
    }
    res->baselines.push_back(evaluated_row("refine", r.placement, note));
  } catch (const std::exception& e) {
    res->baselines.push_back(BaselineResult{"refine", 0.0, false, 0.0, e.what()});
  }
}

// A fresh side-by-side measurement with the final table's limits (reward.final_max_steps, final_target): the
// table, its retakes and the finalists alike.
static std::vector<StepResult> final_side_by_side(Environment& env, const std::vector<Placement>& rows,
                                                  const RewardConfig& reward) {
  return env.measure_side_by_side(rows, /*fresh=*/true, reward.final_max_steps, reward.final_target);
}

// Every row in one fresh, interleaved run: the policy's best first, then each placed baseline and seen placement.
void Trainer::measure_rows(TrainResult* res) {
  Task& t0 = *tasks_[0];
  std::vector<Placement> rows = {t0.best};
  std::vector<BaselineResult*> of_row = {nullptr};
  for (std::vector<BaselineResult>* list : {&res->baselines, &res->seen})
    for (BaselineResult& b : *list)
      if (b.ok && !b.placement.device_of.empty()) {
        rows.push_back(b.placement);
        of_row.push_back(&b);
      }
  std::fprintf(stderr, "final table: measuring %zu placements side by side, interleaved...\n", rows.size());
  res->table_quiet_core_rtt_s = t0.env->quietest_core_rtt_s();  // training's measurements and the finalists'
  std::vector<StepResult> rs = final_side_by_side(*t0.env, rows, c_.reward);
  retake_in_a_spell(rows, rs, res);
  for (size_t i = 0; i < rs.size(); ++i) {
    const double step = rs[i].ok() ? rs[i].step_s : failure_penalty_seconds(rs[i], t0.env->options().reward);
    if (!of_row[i]) {
      res->policy_best_step_s = step;  // the penalty when it failed (policy_failed says so)
      res->policy_ci_low_s = rs[i].ci_low_s;
      res->policy_ci_high_s = rs[i].ci_high_s;
      res->best_step_s = step;
      if (!rs[i].ok()) {  // a penalty, not a step: any row that ran beats it, and with none there is no result
        res->policy_failed = step_status_name(rs[i].status);
        res->best_step_s = std::numeric_limits<double>::infinity();
        res->best_found_by = "none";
      }
      continue;
    }
    of_row[i]->ok = rs[i].ok();
    of_row[i]->step_s = step;
    of_row[i]->ci_low_s = rs[i].ci_low_s;
    of_row[i]->ci_high_s = rs[i].ci_high_s;
    // Is the difference from the policy's best more than the noise? (Identical
    // placements are measured once and share their samples: p = 1.)
    if (rs[0].ok() && rs[i].ok() && !rs[0].samples_s.empty() && !rs[i].samples_s.empty())
      of_row[i]->p_vs_policy = mann_whitney(rs[i].samples_s, rs[0].samples_s).p_value;
    of_row[i]->paired_vs_policy = paired_by_round(rs[0], rs[i]);
  }
  res->table = "measured side by side";
  res->table_core_rtt = core_rtt_range(core_rtt_readings(rs));
}

// A table whose probe read a slow spell (over reward.spell_ratio times the
// run's quietest earlier reading) is measured again, up to reward.final_retakes
// times; the take that read lower is the table. Rows are interleaved, so a
// spell falls on all of them, but on copy-heavy ones more (copy_probe_cpu2.md).
void Trainer::retake_in_a_spell(const std::vector<Placement>& rows, std::vector<StepResult>& rs, TrainResult* res) {
  Task& t0 = *tasks_[0];
  const double quiet = res->table_quiet_core_rtt_s;
  for (int k = 0; k < c_.reward.final_retakes; ++k) {
    const double reading = core_rtt_range(core_rtt_readings(rs)).median_s;
    if (quiet <= 0 || !(reading > c_.reward.spell_ratio * quiet)) return;
    std::fprintf(stderr,
                 "final table: the cross-core probe read %.0f ns while it ran, over %g times the quietest reading "
                 "of this run (%.0f ns): a slow spell of copies between the cores; measuring it again in 2 s "
                 "(retake %d of at most %d)...\n",
                 reading * 1e9, c_.reward.spell_ratio, quiet * 1e9, k + 1, c_.reward.final_retakes);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::vector<StepResult> again = final_side_by_side(*t0.env, rows, c_.reward);
    TrainResult::TableRetake t{reading, core_rtt_range(core_rtt_readings(again)).median_s, false};
    t.kept = t.retake_core_rtt_s > 0 && t.retake_core_rtt_s < reading;
    std::fprintf(stderr, "final table: the retake read %.0f ns: %s\n", t.retake_core_rtt_s * 1e9,
                 t.kept ? "kept" : "not kept, the first take stays");
    res->table_retakes.push_back(t);
    if (t.kept) rs = std::move(again);
  }
}

void Trainer::pick_finalist(TrainResult* res) {
  Task& t0 = *tasks_[0];
  std::vector<Placement> cands = {t0.best};
  std::vector<int64_t> found_at = {t0.best_at};
  for (const Task::Elite& e : t0.elites) {
    if (cands.size() >= static_cast<size_t>(c_.reward.finalists)) break;
    if (e.at <= 0) continue;  // a warm start's baseline: not the policy's find
    Placement p = t0.problem.expand(e.units);
    if (std::find(cands.begin(), cands.end(), p) != cands.end()) continue;
    cands.push_back(std::move(p));
    found_at.push_back(e.at);
  }
  if (cands.size() < 2) return;
  std::fprintf(stderr, "finalists: measuring the policy's %zu fastest placements side by side, interleaved...\n",
               cands.size());
  const std::vector<StepResult> rs = final_side_by_side(*t0.env, cands, c_.reward);
  // Each one's rounds paired with training's best's: the rounds both took ran back to back, so the machine's
  // drift cancels in their ratio (paired_rounds_cpu2.md), and one that stopped early is compared over its own rounds.
  std::vector<double> ratio(rs.size(), 0.0);
  bool paired = rs[0].ok();
  for (size_t i = 0; i < rs.size() && paired; ++i) {
    if (!rs[i].ok()) continue;
    if (i == 0) {
      ratio[i] = 1.0;
    } else if (const std::optional<PairedTest> pt = paired_by_round(rs[0], rs[i])) {
      ratio[i] = pt->ratio;
    } else {
      paired = false;
    }
  }
  const auto faster = [&](size_t i, size_t pick) {
    if (!rs[i].ok()) return false;
    if (!rs[pick].ok()) return true;
    return paired ? ratio[i] < ratio[pick] : rs[i].step_s < rs[pick].step_s;
  };
  size_t pick = 0;
  for (size_t i = 0; i < rs.size(); ++i)
    if (faster(i, pick)) pick = i;
  for (size_t i = 0; i < rs.size(); ++i)
    res->finalists.push_back({rs[i].step_s, rs[i].ci_low_s, rs[i].ci_high_s, found_at[i], rs[i].ok(),
                              i == pick && rs[i].ok(), paired ? ratio[i] : 0.0});
  if (!rs[pick].ok()) return;
  char how[96] = "by the medians: too few rounds to pair";
  if (paired) std::snprintf(how, sizeof how, "paired by round: x%.4f of training's best's", ratio[pick]);
  std::fprintf(stderr, "finalists: kept the one found at sample %lld (%.6f s; training's best: %.6f s; %s)\n",
               static_cast<long long>(found_at[pick]), rs[pick].step_s, rs[0].step_s, how);
  if (pick == 0) return;
  t0.best = cands[pick];
  t0.best_at = found_at[pick];
  t0.best_step_s = rs[pick].step_s;  // (measured: the final table measures it, write_outputs says so)
}

void Trainer::final_table(TrainResult* res, bool measure) {
  Task& t0 = *tasks_[0];
  if (measure && c_.reward.mode != RewardMode::Simulated && !t0.best.device_of.empty() && c_.reward.finalists > 1)
    pick_finalist(res);
  res->policy_best_step_s = res->best_step_s =
      t0.best.device_of.empty() ? std::numeric_limits<double>::infinity() : t0.best_step_s;
  if (t0.best.device_of.empty()) res->best_found_by = "none";
  if (measure && c_.reward.mode != RewardMode::Simulated && !t0.best.device_of.empty()) measure_rows(res);
  // Never worse than what it saw: the fastest row is the result. The policy is
  // credited only when strictly faster than every other row (a tie: it did
  // not beat that row); between other rows, the first listed keeps a tie.
  for (const std::vector<BaselineResult>* list : {&res->baselines, &res->seen})
    for (const BaselineResult& b : *list) {
      const bool policy_holds = res->best_found_by == "policy" || res->best_found_by == "none";
      if (!b.ok || b.placement.device_of.empty()) continue;
      if (b.step_s < res->best_step_s || (policy_holds && b.step_s == res->best_step_s)) {
        res->best_step_s = b.step_s;
        res->best_found_by = b.method;
        res->best_placement = to_named(t0.env->graph(), t0.env->cluster(), b.placement);
      }
    }
  if (t0.best.device_of.empty()) res->policy_best_step_s = 0.0;  // the policy evaluated nothing
  if (res->best_found_by == "none") res->best_step_s = 0.0;
}

void Trainer::place_held_out(const EnvOptions& eo, TrainResult* result) {
  TrainResult& res = *result;
  for (size_t i = 0; i < c_.held_out.size(); ++i) {
    const GraphSource& s = c_.held_out[i];
    Environment env(held_out_[i].first, held_out_[i].second, eo);
    const auto t1 = Clock::now();
    const PolicyInputOptions po = unit_options(*policy_, c_);
    PolicyInput p = make_policy_input(env.graph(), env.cluster(), *env.costs(), po);
    const bool was_training = policy_->is_training();
    policy_->eval();
    Placement placement = decode_levels(
        *policy_, p, po, env, {c_.policy.place_samples, c_.policy.place_levels, c_.optimizer.temperature, c_.run.seed});
    policy_->train(was_training);
    const double secs = seconds_since(t1);
    try {
      res.held_out[s.describe()] = {env.evaluate(placement).step_s, secs};
    } catch (const EvaluationCancelled&) {  // a remote batch given up at a cancel or shutdown: the run stops here
      std::fprintf(stderr, "held_out: a cancel stopped the run at %s (it and any after it are left out)\n",
                   s.describe().c_str());
      res.ended_by = ended_by_ = "stopped";
      return;
    }
  }
}

// Under the pipeline objective: its spec and the figures of the best
// placement (env/pipeline_objective.h), as summary.json fields; else nothing.
std::string Trainer::pipeline_summary(const TrainResult& res) const {
  const EnvOptions& o = tasks_[0]->env->options();
  if (o.objective != Objective::Pipeline) return "";
  std::string out = ",\n  \"objective\": " + json_quote(objective_name(o.objective));
  if (res.best_placement.device.empty()) return out;
  const Environment& env = *tasks_[0]->env;
  const StepResult best = env.simulate(from_named(env.graph(), env.cluster(), res.best_placement));
  return out + ",\n  \"pipeline\": " + pipeline_figures_json(pipeline_figures(best, o.pipeline));
}

// reward.final_retakes as summary.json fields: the reading a table is held
// against, and each retake of a final table measured in a spell.
static std::string table_retakes_json(const TrainResult& res, double ratio) {
  std::string o = ",\n  \"spell_ratio\": " + num(ratio) +
                  ",\n  \"table_quiet_core_rtt_s\": " + num(res.table_quiet_core_rtt_s) + ",\n  \"table_retakes\": [";
  const std::vector<TrainResult::TableRetake>& ts = res.table_retakes;
  for (size_t i = 0; i < ts.size(); ++i)
    o += std::string(i ? ", " : "") + "{\"core_rtt_s\": " + num(ts[i].core_rtt_s) +
         ", \"retake_core_rtt_s\": " + num(ts[i].retake_core_rtt_s) + ", \"kept\": " + (ts[i].kept ? "true" : "false") +
         "}";
  return o + "]";
}

// reward.finalists' measurement as a summary.json field: the policy's best as training left it first.
static std::string finalists_json(const std::vector<TrainResult::Finalist>& fs) {
  std::string o = ",\n  \"finalists\": [";
  for (size_t i = 0; i < fs.size(); ++i)
    o += std::string(i ? ", " : "") + "{\"found_at_sample\": " + std::to_string(fs[i].found_at_sample) +
         ", \"ok\": " + (fs[i].ok ? "true" : "false") + ", \"step_s\": " + num(fs[i].step_s) + ", \"ci_s\": [" +
         num(fs[i].ci_low_s) + ", " + num(fs[i].ci_high_s) + "], \"picked\": " + (fs[i].picked ? "true" : "false") +
         (fs[i].paired_ratio > 0 ? ", \"paired_ratio\": " + num(fs[i].paired_ratio) : "") + "}";
  return o + "]";
}

// A measured row's rank test against the policy's best (nothing where it was not tested).
static std::string rank_test_json(const BaselineResult& b) {
  std::string o = b.p_vs_policy < 0 ? "" : ", \"p_vs_policy\": " + num(b.p_vs_policy);
  if (const std::optional<PairedTest>& p = b.paired_vs_policy) {  // row / policy, its interval, the signed-rank p
    JsonWriter w;
    w.begin().paired("paired_vs_policy", *p).end();
    const std::string text = w.text();  // {"paired_vs_policy":{...}}: its inside, after the fields above
    o += ", " + text.substr(1, text.size() - 2);
  }
  return o;
}

void Trainer::write_summary(const TrainResult& res) {
  std::string stage_units = "[";
  for (size_t s = 0; s < res.stage_units.size(); ++s)
    stage_units += (s ? ", " : "") + std::to_string(res.stage_units[s]);
  stage_units += "]";
  std::ostringstream o;
  o << "{\n  \"name\": " << json_quote(c_.name) << ",\n  \"graph\": " << json_quote(tasks_[0]->env->graph().name)
    << ",\n  \"ops\": " << tasks_[0]->env->graph().size() << ",\n  \"units\": " << tasks_[0]->problem.n
    << ",\n  \"stage_units\": " << stage_units << ",\n  \"cluster\": " << json_quote(tasks_[0]->env->cluster().name)
    << ",\n  \"policy\": " << json_quote(policy_type_name(c_.policy.type))
    << ",\n  \"reward_mode\": " << json_quote(reward_mode_name(c_.reward.mode)) << ",\n  \"updates\": " << res.updates
    << ",\n  \"updates_configured\": " << c_.optimizer.updates << ",\n  \"ended_by\": " << json_quote(res.ended_by)
    << ",\n  \"samples\": " << res.samples << ",\n  \"distinct_samples\": " << res.distinct_samples
    << ",\n  \"train_seconds\": " << num(rl_seconds_) << ",\n  \"remote_evaluations\": " << res.remote_evaluations
    << ",\n  \"best_step_s\": " << num(res.best_step_s)
    << ",\n  \"best_measured\": " << (res.best_measured ? "true" : "false")
    << ",\n  \"best_found_by\": " << json_quote(res.best_found_by)
    << ",\n  \"policy_best_step_s\": " << num(res.policy_step_s()) << ",\n  \"policy_ci_s\": ["
    << num(res.policy_ci_low_s) << ", " << num(res.policy_ci_high_s) << "]"
    << (res.policy_failed.empty() ? "" : ",\n  \"policy_failed\": " + json_quote(res.policy_failed))
    << finalists_json(res.finalists) << ",\n  \"table\": " << json_quote(res.table) << ",\n  \"table_core_rtt_s\": ["
    << num(res.table_core_rtt.median_s) << ", " << num(res.table_core_rtt.low_s) << ", "
    << num(res.table_core_rtt.high_s) << "]" << table_retakes_json(res, c_.reward.spell_ratio)
    << ",\n  \"measurements\": " << res.measurements << ",\n  \"measured_steps\": " << res.measured_steps
    << ",\n  \"calibration\": {\"refits\": " << res.calibrations << ", \"step_scale\": " << num(res.step_scale)
    << ", \"cpu_gpu_link_factor\": " << num(res.link_factor) << "}"
    << ",\n  \"best_found_at_sample\": " << res.best_found_at_sample
    << ",\n  \"policy_best_found_at_sample\": " << res.policy_best_found_at_sample
    << ",\n  \"lower_bound_s\": " << num(res.lower_bound_s) << pipeline_summary(res)
    << ",\n  \"warm_start\": {\"method\": " << json_quote(res.warm_start_method)
    << ", \"step_s\": " << num(res.warm_start_step_s) << ", \"bc_steps\": " << bc_steps_used_
    << ", \"bc_reproduced\": " << (bc_reproduced_ ? "true" : "false") << "},\n  \"baselines\": [";
  for (size_t i = 0; i < res.baselines.size(); ++i) {
    const auto& b = res.baselines[i];
    o << (i ? ",\n    " : "\n    ") << "{\"method\": " << json_quote(b.method)
      << ", \"ok\": " << (b.ok ? "true" : "false") << ", \"step_s\": " << num(b.step_s) << ", \"ci_s\": ["
      << num(b.ci_low_s) << ", " << num(b.ci_high_s) << "]" << rank_test_json(b) << ", \"seconds\": " << num(b.seconds)
      << ", \"note\": " << json_quote(b.note) << "}";
  }
  o << "],\n  \"seen\": [";
  for (size_t i = 0; i < res.seen.size(); ++i) {
    const auto& b = res.seen[i];
    o << (i ? ",\n    " : "\n    ") << "{\"found_by\": " << json_quote(b.method)
      << ", \"ok\": " << (b.ok ? "true" : "false") << ", \"step_s\": " << num(b.step_s) << ", \"ci_s\": ["
      << num(b.ci_low_s) << ", " << num(b.ci_high_s) << "]" << rank_test_json(b) << ", \"note\": " << json_quote(b.note)
      << "}";
  }
  o << "],\n  \"held_out\": [";
  bool first = true;
  for (const auto& [g, v] : res.held_out) {
    o << (first ? "\n    " : ",\n    ") << "{\"graph\": " << json_quote(g) << ", \"step_s\": " << num(v.first)
      << ", \"place_seconds\": " << num(v.second) << "}";
    first = false;
  }
  o << "]\n}\n";
  write_file_atomic(dir_ + "/summary.json", o.str());
}

}  // namespace placer
