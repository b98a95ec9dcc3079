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

class MincutPlacer : public UnitPlacer {
 public:
  std::string name() const override { return "mincut"; }
  PlaceResult place_units(const PlaceContext& ctx, const UnitProblem& p, Clock::time_point started) override {
    const int32_t G = p.groups();
    std::vector<int32_t> gd(G, 0);
    int64_t cut_bytes = 0;
    if (p.k > 1 && G <= p.k) {
      for (int32_t g = 0; g < G; ++g) gd[g] = g;
    } else if (p.k > 1) {
      // Undirected group graph.
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
      std::vector<idx_t> xadj(G + 1, 0), adjncy, adjwgt, vwgt(G);
      for (int32_t g = 0; g < G; ++g) {
        for (const auto& [b, bytes] : adj[g]) {
          adjncy.push_back(b);
          adjwgt.push_back(static_cast<idx_t>(std::max(1.0, std::round(static_cast<double>(bytes) / edge_scale))));
        }
        xadj[g + 1] = static_cast<idx_t>(adjncy.size());
        vwgt[g] = static_cast<idx_t>(std::max(1.0, std::round(total_work > 0 ? work[g] / total_work * 1e7 : 1.0)));
      }
      // Faster devices take a larger share of the work.
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
      idx_t nv = G, ncon = 1, nparts = p.k, objval = 0;
      real_t ubvec = static_cast<real_t>(1.0 + option_double(ctx, "imbalance", 0.05));
      idx_t options[METIS_NOPTIONS];
      METIS_SetDefaultOptions(options);
      options[METIS_OPTION_SEED] = static_cast<idx_t>(ctx.seed & 0x7fffffff);
      options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
      std::vector<idx_t> part(G, 0);
      const int status = METIS_PartGraphKway(&nv, &ncon, xadj.data(), adjncy.empty() ? nullptr : adjncy.data(),
                                             vwgt.data(), nullptr, adjwgt.empty() ? nullptr : adjwgt.data(), &nparts,
                                             tpwgts.data(), &ubvec, options, &objval, part.data());
      if (status != METIS_OK) throw NoFeasiblePlacement("mincut: METIS failed with status " + std::to_string(status));
      for (int32_t g = 0; g < G; ++g) gd[g] = static_cast<int32_t>(part[g]);
    }
    std::string note = "mincut: METIS k-way on " + std::to_string(G) + " co-location groups";
    if (!fits_memory(p, gd)) {
      if (!repair_memory(p, gd)) throw NoFeasiblePlacement("mincut: the partition does not fit device memory");
      note += "; moved groups to fit memory";
    }
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
