// Workload files of the NeurIPS 2020 max-load problem and the paper's split
// files, read with FieldReader (errors "nodes[3].cpuLatency: must be >= 0,
// got -1") and written with JsonWriter.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "placer/frontends/workload_json.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/files.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/workload.h"

namespace placer {

namespace {

using Reader = FieldReader<JsonNode>;

// Caps on what a file may ask for (STYLE.md: never allocate what a size field asks without a cap).
constexpr double kMaxBytes = 1e18;    // sizes: an exabyte is absurd already
constexpr double kMaxLatency = 1e15;  // latencies and edge costs, in the file's time unit
constexpr size_t kMaxNodes = 1'000'000;
constexpr size_t kMaxEdges = 10'000'000;
constexpr int64_t kMaxId = int64_t{1} << 53;
// The paper's code rejects two out-edge costs of one node that differ by more than this.
constexpr double kCostTolerance = 1e-6;

// A list field with at most `cap` entries.
JsonNode need_list(Reader& r, const std::string& key, size_t cap) {
  JsonNode n = r.need(key);
  if (!n.is_list()) r.fail(r.path(key), "expected a list, got " + n.describe());
  if (n.size() > cap)
    r.fail(r.path(key), detail::concat("too many entries (", n.size(), ", at most ", cap, ")"), FieldProblem::TooLarge);
  return n;
}

// true/false or 1/0, as the paper's files write flags (1.0 too: a Python writer's float).
bool need_flag(Reader& r, const std::string& key) {
  JsonNode n = r.need(key);
  if (std::optional<bool> b = n.boolean()) return *b;
  if (std::optional<double> x = n.number(); x && (*x == 0.0 || *x == 1.0)) return *x == 1.0;
  r.fail(r.path(key), "expected true, false, 0 or 1, got " + n.describe());
}

std::string node_label(const Workload& w, int32_t i) {
  const WorkloadNode& n = w.nodes[static_cast<size_t>(i)];
  return n.name.empty() ? detail::concat("node ", n.id) : detail::concat("node ", n.id, " '", n.name, "'");
}

WorkloadNode read_node(const JsonNode& item, const std::string& path) {
  Reader r(item, path, throw_field_error<InputError>());
  if (!item.is_map()) r.fail(path, "expected an object, got " + item.describe());
  WorkloadNode n;
  n.id = r.integer(r.need("id"), r.path("id"), -kMaxId, kMaxId);
  r.read("name", &n.name);
  n.accelerator_ok = need_flag(r, "supportedOnFpga");
  n.cpu_latency = r.number(r.need("cpuLatency"), r.path("cpuLatency"), 0.0, kMaxLatency);
  n.accelerator_latency = r.number(r.need("fpgaLatency"), r.path("fpgaLatency"), 0.0, kMaxLatency);
  n.backward = need_flag(r, "isBackwardNode");
  r.read("size", &n.size, 0.0, kMaxBytes);
  int64_t color_class = 0;
  if (r.read("colorClass", &color_class, -kMaxId, kMaxId)) n.color_class = color_class;
  int64_t layer = 0;
  r.read("layerId", &layer, -kMaxId, kMaxId);  // the paper's optional layer contraction; unused here
  r.finish();
  return n;
}

void read_edges(const JsonNode& list, const std::unordered_map<int64_t, int32_t>& index, Workload* w) {
  std::vector<int64_t> first_out(w->nodes.size(), -1);  // per node: its first out-edge, for the cost check
  for (size_t e = 0; e < list.size(); ++e) {
    const std::string path = index_path("edges", e);
    Reader r(list.at(e), path, throw_field_error<InputError>());
    if (!list.at(e).is_map()) r.fail(path, "expected an object, got " + list.at(e).describe());
    auto endpoint = [&](const char* key) {
      const int64_t id = r.integer(r.need(key), r.path(key), -kMaxId, kMaxId);
      auto it = index.find(id);
      if (it == index.end()) r.fail(r.path(key), detail::concat("no node has id ", id));
      return it->second;
    };
    WorkloadEdge edge;
    edge.from = endpoint("sourceId");
    edge.to = endpoint("destId");
    const double cost = r.number(r.need("cost"), r.path("cost"), 0.0, kMaxLatency);
    double bytes = 0.0;
    r.read("size", &bytes, 0.0, kMaxBytes);  // informative in the paper's files
    r.finish();
    if (edge.from == edge.to) r.fail(path, "a self-loop on " + node_label(*w, edge.from));
    const WorkloadNode& src = w->nodes[static_cast<size_t>(edge.from)];
    const WorkloadNode& dst = w->nodes[static_cast<size_t>(edge.to)];
    if (src.backward && !dst.backward)
      r.fail(path, "goes from backward " + node_label(*w, edge.from) + " to forward " + node_label(*w, edge.to) +
                       " (backward work never feeds forward work)");
    int64_t& first = first_out[static_cast<size_t>(edge.from)];
    double& out = w->out_cost[static_cast<size_t>(edge.from)];
    if (first >= 0 && std::fabs(out - cost) > kCostTolerance)
      r.fail(r.path("cost"),
             detail::concat(cost, " differs from ", out, ", the cost of edges[", first, "] leaving the same ",
                            node_label(*w, edge.from), " (a node's out-edges carry one output: one cost)"));
    if (first < 0) {
      first = static_cast<int64_t>(e);
      out = cost;
    }
    w->edges.push_back(edge);
  }
}

// Kahn's algorithm; on a cycle, names a node on it.
void check_acyclic(const Workload& w) {
  const size_t n = w.nodes.size();
  std::vector<int32_t> indegree(n, 0);
  std::vector<std::vector<int32_t>> succ(n), pred(n);
  for (const WorkloadEdge& e : w.edges) {
    ++indegree[static_cast<size_t>(e.to)];
    succ[static_cast<size_t>(e.from)].push_back(e.to);
    pred[static_cast<size_t>(e.to)].push_back(e.from);
  }
  std::vector<int32_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(static_cast<int32_t>(i));
  size_t done = 0;
  while (!ready.empty()) {
    const int32_t v = ready.back();
    ready.pop_back();
    ++done;
    for (int32_t s : succ[static_cast<size_t>(v)])
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
  }
  if (done == n) return;
  // Walk back from a node left over: every one has a predecessor left over, so the walk repeats a node.
  int32_t v = 0;
  while (indegree[static_cast<size_t>(v)] == 0) ++v;
  std::vector<char> seen(n, 0);
  while (!seen[static_cast<size_t>(v)]) {
    seen[static_cast<size_t>(v)] = 1;
    for (int32_t p : pred[static_cast<size_t>(v)])
      if (indegree[static_cast<size_t>(p)] > 0) {
        v = p;
        break;
      }
  }
  throw InputError("edges: a cycle through " + node_label(w, v));
}

}  // namespace

bool is_workload_json(const std::string& text) {
  rj::Document doc;
  doc.Parse<rj::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return false;
  return doc.HasMember("maxSizePerFPGA") && doc.HasMember("nodes") && doc.HasMember("edges");
}

Workload parse_workload(const std::string& text, const std::string& name) {
  const JsonReader<InputError> json{"workload"};
  const rj::Document doc = json.parse_object(text, "not a workload file");
  Reader top(JsonNode(&doc), "", throw_field_error<InputError>());
  Workload w;
  w.name = name;
  w.cluster.accelerator_bytes = top.number(top.need("maxSizePerFPGA"), "maxSizePerFPGA", 0.0, kMaxBytes);
  w.cluster.accelerators =
      static_cast<int32_t>(top.integer(top.need("maxFPGAs"), "maxFPGAs", 0, Workload::kMaxDevices));
  w.cluster.cpus = static_cast<int32_t>(top.integer(top.need("maxCPUs"), "maxCPUs", 0, Workload::kMaxDevices));
  if (w.cluster.devices() < 1 || w.cluster.devices() > Workload::kMaxDevices)
    top.fail("maxCPUs", detail::concat("maxFPGAs + maxCPUs must be in [1, ", Workload::kMaxDevices, "], got ",
                                       w.cluster.devices()));
  const JsonNode nodes = need_list(top, "nodes", kMaxNodes);
  const JsonNode edges = need_list(top, "edges", kMaxEdges);
  top.finish();
  if (nodes.size() == 0) top.fail("nodes", "empty: a workload has at least one node");

  std::unordered_map<int64_t, int32_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = index_path("nodes", i);
    w.nodes.push_back(read_node(nodes.at(i), path));
    auto [it, inserted] = index.emplace(w.nodes.back().id, static_cast<int32_t>(i));
    if (!inserted)
      throw InputError(detail::concat(path, ".id: ", w.nodes.back().id, " is taken by nodes[", it->second, "]"));
  }
  w.out_cost.assign(w.nodes.size(), 0.0);
  read_edges(edges, index, &w);
  check_acyclic(w);
  return w;
}

Workload load_workload(const std::string& path) {
  const std::string text = read_file(path);
  std::string stem = path.substr(path.find_last_of('/') + 1);
  const std::string suffix = ".json";
  if (stem.size() >= suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0)
    stem.resize(stem.size() - suffix.size());
  return with_path<InputError>(path, [&] { return parse_workload(text, stem); });
}

std::string workload_json(const Workload& w) {
  JsonWriter out;
  out.begin()
      .field("maxSizePerFPGA", w.cluster.accelerator_bytes)
      .field("maxFPGAs", w.cluster.accelerators)
      .field("maxCPUs", w.cluster.cpus);
  out.begin_array("nodes");
  for (const WorkloadNode& n : w.nodes) {
    out.begin().field("id", n.id);
    if (!n.name.empty()) out.field("name", n.name);
    out.field("supportedOnFpga", n.accelerator_ok ? 1 : 0)
        .field("cpuLatency", n.cpu_latency)
        .field("fpgaLatency", n.accelerator_latency)
        .field("isBackwardNode", n.backward ? 1 : 0)
        .field("size", n.size);
    if (n.color_class) out.field("colorClass", *n.color_class);
    out.end();
  }
  out.end_array().begin_array("edges");
  for (const WorkloadEdge& e : w.edges)
    out.begin()
        .field("sourceId", w.nodes[static_cast<size_t>(e.from)].id)
        .field("destId", w.nodes[static_cast<size_t>(e.to)].id)
        .field("cost", w.out_cost[static_cast<size_t>(e.from)])
        .end();
  return out.end_array().end().text();
}

namespace {

// The list a device's nodes are in: "fpgas[1]", "cpus[0]".
std::string device_list(const Workload& w, int32_t d) {
  return d < w.cluster.accelerators ? index_path("fpgas", static_cast<size_t>(d))
                                    : index_path("cpus", static_cast<size_t>(d - w.cluster.accelerators));
}

// Fills `device` from the lists of `key`: list m is device first_device + m, one of `count` ("fpgas" and
// maxFPGAs, "cpus" and maxCPUs). A list past `count` that names no node uses no device and is accepted.
void read_split_machines(Reader& top, const std::string& key, const std::string& count_field, int32_t first_device,
                         int32_t count, const Workload& w, const std::unordered_map<int64_t, int32_t>& index,
                         WorkloadPlacement* device) {
  JsonNode list = top.get(key);
  if (!list.present() || list.is_null()) return;
  if (!list.is_list()) top.fail(key, "expected a list, got " + list.describe());
  for (size_t m = 0; m < list.size(); ++m) {
    const std::string path = index_path(key, m);
    Reader r(list.at(m), path, top.on_fail());
    double load = 0.0;
    r.read("load", &load, -kMaxLatency, kMaxLatency);  // the file's own figure (-1 in the paper's expert files)
    JsonNode ids = r.need("nodes");
    if (!ids.is_list()) r.fail(r.path("nodes"), "expected a list, got " + ids.describe());
    r.finish();
    if (ids.size() > 0 && static_cast<int64_t>(m) >= count)
      top.fail(key, detail::concat(list.size(), " lists, more than the workload's ", count_field, " (", count, "); ",
                                   path, " names nodes"));
    const int32_t d = first_device + static_cast<int32_t>(m);
    std::unordered_map<int64_t, size_t> here;  // id -> its first place in this list
    for (size_t k = 0; k < ids.size(); ++k) {
      const std::string at = index_path(r.path("nodes"), k);
      const int64_t id = r.integer(ids.at(k), at, -kMaxId, kMaxId);
      auto it = index.find(id);
      if (it == index.end()) r.fail(at, detail::concat("no node has id ", id));
      auto [first, inserted] = here.emplace(id, k);
      if (!inserted)
        r.fail(at, detail::concat("node ", id, " is listed twice in ", path, " (nodes[", first->second, "] too)"));
      int32_t& on = (*device)[static_cast<size_t>(it->second)];
      if (on >= 0) r.fail(at, detail::concat("node ", id, " is on two devices (", device_list(w, on), " too)"));
      on = d;
    }
  }
}

}  // namespace

WorkloadPlacement parse_workload_split(const std::string& text, const Workload& w) {
  const JsonReader<PlacementError> json{"split"};
  const rj::Document doc = json.parse_object(text, "not a split file");
  Reader top(JsonNode(&doc), "", throw_field_error<PlacementError>());
  // The file's own figure (-1 in the paper's expert files): read and not trusted; the caller recomputes it.
  double max_load = 0.0;
  top.read("maxLoad", &max_load, -kMaxLatency, kMaxLatency);
  std::unordered_map<int64_t, int32_t> index;
  for (size_t i = 0; i < w.nodes.size(); ++i) index.emplace(w.nodes[i].id, static_cast<int32_t>(i));
  WorkloadPlacement device(w.nodes.size(), -1);
  read_split_machines(top, "fpgas", "maxFPGAs", 0, w.cluster.accelerators, w, index, &device);
  read_split_machines(top, "cpus", "maxCPUs", w.cluster.accelerators, w.cluster.cpus, w, index, &device);
  top.finish();

  // Nodes left out follow their colocation class.
  const std::vector<int32_t> cls = w.colocation_classes();
  std::unordered_map<int32_t, int32_t> class_device;
  for (size_t i = 0; i < device.size(); ++i) {
    if (device[i] < 0) continue;
    auto [it, inserted] = class_device.emplace(cls[i], device[i]);
    if (!inserted && it->second != device[i])
      throw PlacementError(node_label(w, static_cast<int32_t>(i)) + ": its colocation class is on two devices");
  }
  for (size_t i = 0; i < device.size(); ++i) {
    if (device[i] >= 0) continue;
    auto it = class_device.find(cls[i]);
    if (it == class_device.end())
      throw PlacementError(node_label(w, static_cast<int32_t>(i)) +
                           ": not in the split, and no node of its colocation class is");
    device[i] = it->second;
  }
  return device;
}

WorkloadPlacement load_workload_split(const std::string& path, const Workload& w) {
  const std::string text = read_file(path);
  return with_path<PlacementError>(path, [&] { return parse_workload_split(text, w); });
}

std::string workload_split_json(const Workload& w, const WorkloadPlacement& p, const std::vector<double>& loads,
                                double max_load) {
  JsonWriter out;
  out.begin().field("maxLoad", max_load);
  auto machines = [&](const char* key, int32_t first, int32_t count) {
    out.begin_array(key);
    for (int32_t d = first; d < first + count; ++d) {
      out.begin().field("load", static_cast<size_t>(d) < loads.size() ? loads[static_cast<size_t>(d)] : 0.0);
      out.begin_array("nodes");
      for (size_t i = 0; i < p.size(); ++i)
        if (p[i] == d) out.integer(w.nodes[i].id);
      out.end_array().end();
    }
    out.end_array();
  };
  machines("fpgas", 0, w.cluster.accelerators);
  machines("cpus", w.cluster.accelerators, w.cluster.cpus);
  return out.end().text();
}

}  // namespace placer
