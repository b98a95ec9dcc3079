// Balanced k-way min-cut partitioning of the co-location groups with METIS:
// vertex weight = work (cost model), edge weight = bytes between groups;
// device shares proportional to device speed. As ColocRL's comparison.
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "placers_common.h"

namespace placer {
namespace {

// The groups as METIS's undirected graph: edge weights are bytes (scaled to
// at most 1e6 per unit weight), vertex weights work (summing to about 1e7).
struct MetisGraph {
  std::vector<idx_t> xadj, adjncy, adjwgt, vwgt;
};

MetisGraph metis_graph(const UnitProblem& p) {
  const int32_t G = p.groups();
  std::vector<std::map<int32_t, int64_t>> adj(G);
  for (int32_t v = 0; v < p.n; ++v)
    for (const Edge& e : p.preds[v]) {
      const int32_t a = p.group_of[e.op], b = p.group_of[v];
      if (a == b) continue;
      adj[a][b] += e.bytes;
      adj[b][a] += e.bytes;
    }
  int64_t max_bytes = 1;
  for (const auto& m : adj)
    for (const auto& [b, bytes] : m) max_bytes = std::max(max_bytes, bytes);
  const double edge_scale = std::max(1.0, static_cast<double>(max_bytes) / 1e6);
  std::vector<double> work(G, 0.0);
  double total_work = 0.0;
  for (int32_t g = 0; g < G; ++g) {
    for (int32_t u : p.members[g]) work[g] += p.mean_cost(u);
    total_work += work[g];
  }
  MetisGraph out;
  out.xadj.assign(G + 1, 0);
  out.vwgt.resize(G);
  for (int32_t g = 0; g < G; ++g) {
    for (const auto& [b, bytes] : adj[g]) {
      out.adjncy.push_back(b);
      out.adjwgt.push_back(static_cast<idx_t>(std::max(1.0, std::round(static_cast<double>(bytes) / edge_scale))));
    }
    out.xadj[g + 1] = static_cast<idx_t>(out.adjncy.size());
    out.vwgt[g] = static_cast<idx_t>(std::max(1.0, std::round(total_work > 0 ? work[g] / total_work * 1e7 : 1.0)));
  }
  return out;
}

// Each device's share of the work: faster devices take a larger one.
std::vector<real_t> device_shares(const UnitProblem& p) {
  std::vector<real_t> tpwgts(p.k);
  double speed_sum = 0.0;
  std::vector<double> speed(p.k);
  for (int32_t d = 0; d < p.k; ++d) {
    double t = 0.0;
    for (int32_t u = 0; u < p.n; ++u) t += p.c(u, d);
    speed[d] = t > 0 ? 1.0 / t : 1.0;
    speed_sum += speed[d];
  }
  for (int32_t d = 0; d < p.k; ++d) tpwgts[d] = static_cast<real_t>(speed[d] / speed_sum);
  return tpwgts;
}

// A device per group from METIS's k-way partition (seeded).
std::vector<int32_t> metis_partition(const PlaceContext& ctx, const UnitProblem& p) {
  const int32_t G = p.groups();
  MetisGraph graph = metis_graph(p);
  std::vector<real_t> tpwgts = device_shares(p);
  idx_t nv = G, ncon = 1, nparts = p.k, objval = 0;
  real_t ubvec = static_cast<real_t>(1.0 + option_double(ctx, "imbalance", 0.05, 0.0, 10.0));
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(ctx.seed & 0x7fffffff);
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  std::vector<idx_t> part(G, 0);
  const int status =
      METIS_PartGraphKway(&nv, &ncon, graph.xadj.data(), graph.adjncy.empty() ? nullptr : graph.adjncy.data(),
                          graph.vwgt.data(), nullptr, graph.adjwgt.empty() ? nullptr : graph.adjwgt.data(), &nparts,
                          tpwgts.data(), &ubvec, options, &objval, part.data());
  if (status != METIS_OK) throw NoFeasiblePlacement("mincut: METIS failed with status " + std::to_string(status));
  std::vector<int32_t> gd(G, 0);
  for (int32_t g = 0; g < G; ++g) gd[g] = static_cast<int32_t>(part[g]);
  return gd;
}

class MincutPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "mincut"; }
  std::vector<std::string> option_keys() const override { return {"imbalance"}; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const int32_t G = p.groups();
    const std::string groups = std::to_string(G) + " co-location group" + (G == 1 ? "" : "s");
    std::vector<int32_t> gd(G, 0);
    std::string note;
    if (p.k == 1) {
      note = "mincut: one device, nothing to partition (" + groups + ")";
    } else if (G <= p.k) {
      for (int32_t g = 0; g < G; ++g) gd[g] = g;
      note = "mincut: each of " + groups + " on its own device (no more groups than devices: nothing to partition)";
    } else {
      gd = metis_partition(ctx, p);
      note = "mincut: METIS k-way on " + groups;
    }
    if (!fits_memory(p, gd)) {
      if (!repair_memory(p, gd)) throw NoFeasiblePlacement("mincut: the partition does not fit device memory");
      note += "; moved groups to fit memory";
    }
    int64_t cut_bytes = 0;
    for (int32_t v = 0; v < p.n; ++v)
      for (const Edge& e : p.preds[v])
        if (gd[p.group_of[e.op]] != gd[p.group_of[v]]) cut_bytes += e.bytes;
    PlaceResult out = finish(ctx, expand_groups(p, gd), name(), started, note + ", cut " + format_bytes(cut_bytes));
    out.stats["cut_bytes"] = static_cast<double>(cut_bytes);
    return out;
  }
};

}  // namespace

std::unique_ptr<Placer> make_mincut() { return std::make_unique<MincutPlacer>(); }

}  // namespace placer
