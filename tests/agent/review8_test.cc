// Review 8: expert's layer tags (indices past the ops, very long tags), list placers that
// kept a candidate the simulator refused, device memory sums past 2^63, and m_sct's note
// when the LP gives no favourites.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../agent/src/placers_common.h"
#include "chain_graphs.h"
#include "placer/agent/placer.h"
#include "placer/env/environment.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"

namespace placer {
namespace {

PlaceResult place(const std::string& method, const Graph& graph, const Cluster& cluster) {
  Environment env(graph, cluster);
  PlaceContext ctx = PlaceContext::on(env, 7);
  PlaceResult r = make_placer(method)->place(ctx);
  EXPECT_TRUE(env.simulate(r.placement).ok()) << method;
  return r;
}

Cluster cpus(const std::vector<int64_t>& memory_bytes) {
  std::string json = R"({"format": "placer.cluster", "version": 1, "devices": [)";
  for (size_t d = 0; d < memory_bytes.size(); ++d)
    json += (d ? ", " : "") + std::string(R"({"name": "cpu:)") + std::to_string(d) + R"(", "memory_bytes": )" +
            std::to_string(memory_bytes[d]) + "}";
  return cluster_from_json(json + "]}");
}

// The mlp builder's graph with every op's layer tag replaced by `tag`.
Graph tagged_mlp(const std::string& tag) {
  Graph g = build_graph("mlp", {});
  for (int32_t i = 0; i < g.size(); ++i) g.mutable_op(OpId(i)).layer = tag;
  return g;
}

std::string expert_error(const std::string& tag) {
  try {
    place("expert", tagged_mlp(tag), resolve_cluster("cpu:2"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(placed)";
}

// An LSTM layer index past the graph's ops is refused, naming the op's layer field: it indexed
// a vector of that size (segfault at 2147483647) or overflowed stoi (a bare "stoi" error).
TEST(Review8, ExpertRefusesAnLstmLayerIndexPastTheOps) {
  const Graph g = build_graph("mlp", {});
  for (const std::string tag : {"lstm2147483647", "lstm3000000000", "dec_lstm99999999999999999999999"}) {
    const std::string e = expert_error(tag);
    EXPECT_NE(e.find("op '" + g.op(OpId(0)).name + "': layer: '" + tag + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("LSTM layer index"), std::string::npos) << e;
  }
  EXPECT_NE(place("expert", tagged_mlp("lstm1"), resolve_cluster("cpu:2")).note.find("rnn:"), std::string::npos);
}

// Tags of 300,000 bytes: matched without recursing per character (regex_match overflowed the stack).
TEST(Review8, ExpertMatchesVeryLongTags) {
  const std::string tail(300000, 'b');
  EXPECT_NE(place("expert", tagged_mlp("mixed_a/" + tail), resolve_cluster("cpu:2")).note.find("inception:"),
            std::string::npos);
  EXPECT_NE(place("expert", tagged_mlp(tail), resolve_cluster("cpu:2")).note.find("blocks:"), std::string::npos);
  EXPECT_NE(expert_error("lstm" + std::string(300000, '1')).find("LSTM layer index"), std::string::npos);
}

// The families accept the tags they did: (enc_|dec_)lstm<digits>, mixed_<not '/'>/<any but a line break>.
TEST(Review8, ExpertKeepsItsTagFamilies) {
  const Cluster c = resolve_cluster("cpu:2");
  for (const std::string tag : {"lstm0", "enc_lstm1", "dec_lstm01"})
    EXPECT_NE(place("expert", tagged_mlp(tag), c).note.find("rnn:"), std::string::npos) << tag;
  for (const std::string tag : {"mixed_a/b", "mixed_5b/branch3x3/x", "mixed_a b/c d"})
    EXPECT_NE(place("expert", tagged_mlp(tag), c).note.find("inception:"), std::string::npos) << tag;
  for (const std::string tag : {"lstm", "lstm1a", "xlstm1", "enc_lstm", "foo_lstm1", "lstm-1", "mixed_/b", "mixed_a/",
                                "mixed_a", "mixed_a/b\nc", "mixed_a/b\r", "Mixed_a/b"})
    EXPECT_NE(place("expert", tagged_mlp(tag), c).note.find("blocks:"), std::string::npos) << tag;
  for (const std::string tag : {"loss", "embedding", "input"})
    EXPECT_NE(place("expert", tagged_mlp(tag), c).note.find("generic:"), std::string::npos) << tag;
}

// One device holds the whole nmt step; the 200,000-byte one cannot take a share and its received
// tensors. m_etf and m_sct kept the fastest replayed candidate whatever its memory; heft, m_topo
// and random planned without the received tensors: each said "no feasible placement".
TEST(Review8, ListPlacersPlaceWhatOneDeviceHolds) {
  BuilderOptions nmt;
  nmt.values = {{"layers", 2}, {"batch", 16}, {"hidden", 256}, {"steps", 10}, {"vocab", 2000}};
  const Graph graph = build_graph("nmt", nmt);
  const Cluster cluster = cpus({1000000000, 200000});
  for (const std::string method : {"m_etf", "m_sct", "heft", "m_topo", "random"}) {
    try {
      const PlaceResult r = place(method, graph, cluster);
      EXPECT_FALSE(r.note.empty()) << method;
    } catch (const NoFeasiblePlacement& e) {
      ADD_FAILURE() << method << ": " << e.what();
    }
  }
}

// Ten devices of 2^60 bytes (the most a device may have): their sum passed 2^63 (two of 9e18 bytes:
// "the devices allow -2246744073709551616 B together").
TEST(Review8, DeviceMemoryBeyondTwoToTheSixtyThreeInAll) {
  const Graph graph = build_graph("mlp", {});
  const Cluster cluster = cpus(std::vector<int64_t>(10, int64_t{1} << 60));
  for (const std::string method : {"m_etf", "heft", "expert", "random", "round_robin"}) {
    try {
      place(method, graph, cluster);
    } catch (const NoFeasiblePlacement& e) {
      ADD_FAILURE() << method << ": " << e.what();
    }
  }
}

// The memory book's sums saturate: two groups of 5e18 bytes do not fit a device of 8e18.
TEST(Review8, MemoryBookSumsDoNotWrap) {
  UnitProblem p;
  p.n = 2;
  p.k = 1;
  p.preds.resize(2);
  p.succs.resize(2);
  p.group_of = {0, 1};
  p.members = {{0}, {1}};
  p.group_mem = {5000000000000000000, 5000000000000000000};
  p.capacity = {8000000000000000000};
  MemoryBook book(p);
  ASSERT_TRUE(book.fits(0, 0));
  book.add(0, 0);
  EXPECT_FALSE(book.fits(1, 0));
  EXPECT_FALSE(fits_memory(p, {0, 0}));
  std::vector<int32_t> gd = {0, 0};
  EXPECT_FALSE(repair_memory(p, gd));
  EXPECT_EQ(add_bytes(int64_t{5000000000000000000}, int64_t{5000000000000000000}),
            std::numeric_limits<int64_t>::max());
}

// An LP that CLP does not prove optimal (here: the deadline has passed) gave no favourites, and m_sct
// became m_etf while its note claimed the LP's: it falls back to the greedy favourites and says so.
TEST(Review8, SctFallsBackToGreedyFavouritesWithoutAnLp) {
  const Graph graph = testing::two_chains(40);
  const Cluster cluster = resolve_cluster("cpu:2");
  Environment env(graph, cluster);
  PlaceContext ctx;
  ctx.graph = &graph;
  ctx.cluster = &cluster;
  ctx.env = &env;
  ctx.stop_at = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  PlaceResult r = make_placer("m_sct")->place(ctx);
  EXPECT_NE(r.note.find("not proven optimal: favourite children by most bytes"), std::string::npos) << r.note;
  EXPECT_GT(r.stats["favourite_edges"], 0) << r.note;
  ctx.stop_at.reset();
  r = make_placer("m_sct")->place(ctx);
  EXPECT_NE(r.note.find("from the LP relaxation (CLP)"), std::string::npos) << r.note;
  EXPECT_GT(r.stats["lp_makespan_s"], 0) << r.note;
}

}  // namespace
}  // namespace placer

