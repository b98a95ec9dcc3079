// --split-spec (place, simulate): a placement's pipeline stages as the split
// points torch.distributed.pipelining takes (frontends/pipeline_split.h).
#include <CLI/CLI.hpp>

#include <string>

#include "commands.h"
#include "placer/frontends/pipeline_split.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/serialize.h"

namespace placer::cli {

void add_split_spec_option(CLI::App* cmd, std::string* path) {
  cmd->add_option("--split-spec", *path,
                  "Also write the placement's pipeline stages as torch.distributed.pipelining split points (JSON; "
                  "graphs imported from a torch.export .pt2)")
      ->check(output_file());
}

void check_split_spec_graph(const std::string& path, const Graph& graph) {
  if (path.empty()) return;
  try {
    require_module_paths(graph);
  } catch (const InputError& e) {
    throw InputError(std::string("--split-spec: ") + e.what());
  }
}

// When the stages are not contiguous in module order, also the contiguous
// split that moves the fewest forward ops, with its step by STEP_S.
void write_split_spec(const std::string& path, const Graph& graph, const Cluster& cluster, const Placement& placement,
                      const std::function<double(const Placement&)>& step_s) {
  const PipelineSplit split = pipeline_split(graph, cluster, placement);
  JsonWriter out;
  out.begin().field("graph", graph.name).field("cluster", cluster.name);
  write_split_json(out, cluster, split);
  out.field("simulated_step_s", step_s(placement));
  if (!split.contiguous) {
    const ContiguousAlternative alt = best_contiguous_split(graph, cluster, placement);
    out.field("note", detail::concat("the placement is not contiguous in module order (see breaks), so no split_spec "
                                     "runs it as placed; contiguous_alternative moves ",
                                     alt.moved_ops, " forward op(s) to make one"));
    out.begin_object("contiguous_alternative").field("moved_ops", alt.moved_ops);
    write_split_json(out, cluster, alt.split);
    out.field("simulated_step_s", step_s(alt.placement));
    out.placement("placement", to_named(graph, cluster, alt.placement)).end();
  }
  write_file_atomic(path, out.end().text() + "\n");
}

}  // namespace placer::cli
