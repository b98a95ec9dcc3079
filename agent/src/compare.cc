// Running several placers on one problem and ranking them.
#include "placer/agent/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "placer/graphs/error.h"
#include "placer/graphs/timing.h"

namespace placer {

std::vector<Compared> compare_placers(const std::vector<std::string>& methods, const PlaceContext& context,
                                      const CompareOptions& options) {
  std::vector<Compared> entries;
  entries.reserve(methods.size());
  for (const std::string& method : methods) {
    if (context.cancel && context.cancel->load()) break;  // the rest are not started
    Compared c;
    c.method = method;
    if (options.on_start) options.on_start(method);
    auto placer = make_placer(method);  // InputError listing the names if unknown
    try {
      const auto started = Clock::now();
      c.result = placer->place(context);
      c.seconds = seconds_since(started);
      const auto scored = Clock::now();
      if (options.scoring == CompareScoring::Evaluate)
        c.evaluation = context.env->evaluate(c.result.placement);
      else
        c.evaluation.result = context.env->simulate(c.result.placement);
      c.score_seconds = seconds_since(scored);
      c.placed = true;
    } catch (const NoFeasiblePlacement& e) {
      c = Compared{method, false, e.what()};
    } catch (const std::exception& e) {
      if (!options.catch_all) throw;
      c = Compared{method, false, e.what()};
    }
    if (options.on_done) options.on_done(c);
    entries.push_back(std::move(c));
  }
  return entries;
}

int fastest(const std::vector<Compared>& entries) {
  int best = -1;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].ok() && (best < 0 || entries[i].step().step_s < entries[best].step().step_s))
      best = static_cast<int>(i);
  return best;
}

std::vector<int> ranking(const std::vector<Compared>& entries) {
  std::vector<int> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Compared &x = entries[a], &y = entries[b];
    if (x.ok() != y.ok()) return x.ok();
    return x.ok() && x.step().step_s < y.step().step_s;
  });
  return order;
}

std::vector<std::string> parse_method_list(const std::string& list) {
  if (list == "all") return placer_names();
  std::vector<std::string> methods;
  std::stringstream ss(list);
  std::string m;
  while (std::getline(ss, m, ','))
    if (!m.empty()) {
      make_placer(m);  // InputError listing the names if unknown
      if (std::find(methods.begin(), methods.end(), m) != methods.end())
        throw InputError("--method: '" + m + "' given twice");
      methods.push_back(m);
    }
  if (methods.empty()) throw InputError("--method: no method given");
  return methods;
}

OwnEstimate own_estimate(const PlaceResult& r) {
  auto get = [&](const char* key) {
    auto it = r.stats.find(key);
    return it == r.stats.end() ? NAN : it->second;
  };
  OwnEstimate e;
  std::string ilp_scope;
  if (!std::isnan(get("incumbent_s")))
    ilp_scope = std::string(get("optimal") > 0 ? "optimal" : "incumbent") + " for " +
                std::to_string(static_cast<int64_t>(get("units"))) +
                (get("coarsened") > 0 ? " coarsened units" : " ops");
  if (!std::isnan(get("model_makespan_s"))) {
    e.seconds = get("model_makespan_s");
    e.kind = "planned step";
    if (!std::isnan(get("dp_objective_s")))
      e.kind += std::string(" of dp's ") + (get("dp_objective_throughput") > 0 ? "throughput" : "latency") +
                "-objective split" + (get("prefix_fallback") > 0 ? ", prefix fallback" : "");
    if (!ilp_scope.empty()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; ilp model %.3f ms, ", 1e3 * get("incumbent_s"));
      e.kind += buf + ilp_scope;
      if (get("kept_warm_start") > 0) e.kind += ", warm start kept";
    }
  }
  return e;
}

}  // namespace placer
