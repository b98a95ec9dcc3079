// The max-load DP on one workload file, in a process without LibTorch, for
// timing against the paper's code (bench/run_neurips20.sh):
//   max_load_dp WORKLOAD.json
// prints {"workload", "max_load", "dp_seconds", "ideals", "note"}.
#include <cstdio>

#include "bench_help.h"
#include "placer/agent/max_load.h"
#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/workload.h"

constexpr char kUsage[] =
    "usage: max_load_dp WORKLOAD.json\n"
    "The max-load DP on one NeurIPS 2020 workload; prints {workload, max_load, dp_seconds, ideals, note}.\n";

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  if (argc != 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    const placer::Workload w = placer::load_workload(argv[1]);
    const placer::MaxLoadResult r = placer::place_max_load(w, "dp", {});
    placer::JsonWriter out;
    out.begin()
        .field("workload", w.name)
        .field("max_load", r.max_load)
        .field("dp_seconds", r.seconds)
        .field("ideals", r.ideals)
        .field("note", r.note)
        .end();
    std::printf("%s\n", out.text().c_str());
  } catch (const placer::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
