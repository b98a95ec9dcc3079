// How well the hybrid calibration predicts a measured placement it has not seen:
// leave one out over placements measured for real. For each placement, a
// Calibration is refit with every other one's measured step, and its
// prediction is compared with the measurement; beside it, the profile-calibrated
// simulator as it is, and the same with only a step scale (the median of
// measured / simulated over the others), i.e. the calibration without its
// CPU<->GPU link factor. Offline: no devices are used.
//
// Usage: calibration_loo_bench --graph G.json --profile P.json --cluster SPEC ROWS
//   ROWS: lines "placement.json measured_seconds"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "placer/env/evaluator.h"
#include "placer/env/fidelity.h"
#include "placer/env/simulator.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/stats.h"

using namespace placer;

namespace {

struct Row {
  std::string file;
  Placement placement;
  double measured = 0.0;
};

void report(const char* name, const std::vector<double>& predicted, const std::vector<Row>& rows) {
  std::vector<double> measured;
  double ape = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    measured.push_back(rows[i].measured);
    ape += std::abs(predicted[i] / rows[i].measured - 1) / static_cast<double>(rows.size());
  }
  const double rho = spearman(predicted, measured);  // NaN where either side is all tied: undefined
  char rho_text[32] = "undefined (all tied)";
  if (!std::isnan(rho)) std::snprintf(rho_text, sizeof rho_text, "%.3f", rho);
  std::printf("| %s | %.1f%% | %s |\n", name, 100 * ape, rho_text);
}

}  // namespace

int main(int argc, char** argv) {
  std::string graph_file, profile_file, cluster_spec, rows_file;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--graph") && has_value)
      graph_file = argv[++i];
    else if (!std::strcmp(argv[i], "--profile") && has_value)
      profile_file = argv[++i];
    else if (!std::strcmp(argv[i], "--cluster") && has_value)
      cluster_spec = argv[++i];
    else
      rows_file = argv[i];
  }
  if (graph_file.empty() || profile_file.empty() || cluster_spec.empty() || rows_file.empty()) {
    std::fprintf(stderr, "usage: calibration_loo_bench --graph G --profile P --cluster SPEC ROWS\n");
    return 2;
  }
  try {
    const Graph graph = load_graph(graph_file);
    const Cluster cluster = parse_device_list(cluster_spec);
    auto problem = PreparedProblem::make(graph, cluster, load_profile(profile_file));
    std::vector<Row> rows;
    std::ifstream in(rows_file);
    if (!in) throw InputError(rows_file + ": cannot be read");
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::istringstream ls(line);
      Row r;
      if (!(ls >> r.file >> r.measured) || !(r.measured > 0) || !std::isfinite(r.measured))
        throw InputError(rows_file + ":" + std::to_string(line_no) +
                         ": expected 'placement.json measured_seconds' with seconds > 0");
      r.placement = from_named(graph, cluster, load_placement(r.file));
      rows.push_back(std::move(r));
    }
    if (rows.size() < 4) throw InputError("calibration_loo_bench: needs at least 4 rows");
    std::vector<double> base, scaled, calibrated, factors;
    for (size_t i = 0; i < rows.size(); ++i) {
      Calibration cal(problem);
      std::vector<double> ratios;
      for (size_t j = 0; j < rows.size(); ++j) {
        if (j == i) continue;
        StepResult m;
        m.step_s = rows[j].measured;
        cal.refit(rows[j].placement, m);
        ratios.push_back(rows[j].measured /
                         simulate(problem->context(), rows[j].placement, cluster, problem->base_costs()).step_s);
      }
      const double b = simulate(problem->context(), rows[i].placement, cluster, problem->base_costs()).step_s;
      base.push_back(b);
      scaled.push_back(b * quantile(ratios, 0.5));
      calibrated.push_back(cal.simulate(rows[i].placement).step_s);
      factors.push_back(cal.link_factor());
    }
    std::printf("| placement | measured s | profile s | step scale only s | calibrated s | link factor |\n");
    std::printf("|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("| %s | %.4f | %.4f | %.4f | %.4f | %.2f |\n", rows[i].file.c_str(), rows[i].measured, base[i],
                  scaled[i], calibrated[i], factors[i]);
    std::printf("\n| predictor (left out, fitted on the others) | MAPE | Spearman |\n|---|---:|---:|\n");
    report("profile as it is", base, rows);
    report("profile + step scale", scaled, rows);
    report("hybrid calibration (step scale + CPU<->GPU link factor)", calibrated, rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calibration_loo_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
