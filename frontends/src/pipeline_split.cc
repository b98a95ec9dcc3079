// Pipeline stages of an imported torch.export graph, named by the modules
// where they begin (torch.distributed.pipelining's split_spec).
#include "placer/frontends/pipeline_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "module_index.h"
#include "placer/graphs/error.h"

namespace placer {
namespace detail {
namespace {

bool is_forward_call(const Op& op) {
  return op.phase == Phase::Forward && op.type != op_types::kInput && op.type != op_types::kParam;
}

// "layer1.0.conv1/conv2d" -> "layer1.0.conv1"; ops of the root's own forward have none.
std::string module_path(const Op& op) {
  const auto slash = op.name.rfind('/');
  return slash == std::string::npos ? std::string() : op.name.substr(0, slash);
}

// A graph attribute that lists names separated by spaces; none when it is absent.
std::vector<std::string> attr_words(const Graph& graph, const char* key) {
  std::vector<std::string> words;
  if (const auto it = graph.attrs.find(key); it != graph.attrs.end()) {
    std::istringstream in(it->second);
    for (std::string w; in >> w;) words.push_back(w);
  }
  return words;
}

// The modules the program calls, as the importer recorded them; graphs
// imported before it did: the modules ops ran in directly (a container
// without ops of its own is then split at its first child instead).
std::vector<std::string> called_modules(const Graph& graph, const std::vector<std::string>& paths) {
  if (graph.attrs.count("modules")) return attr_words(graph, "modules");
  std::vector<std::string> called;
  std::set<std::string> seen;
  for (const std::string& p : paths) {
    if (!p.empty() && seen.insert(p).second) called.push_back(p);
  }
  return called;
}

struct Span {
  int64_t first = -1;
  int64_t last = -1;
  int64_t count = 0;
};

// Every module path and its ancestors ("a.b.c" -> "a", "a.b", "a.b.c") over positions.
std::map<std::string, Span> spans_of(const std::vector<std::string>& paths) {
  std::map<std::string, Span> spans;
  for (int64_t i = 0; i < static_cast<int64_t>(paths.size()); ++i) {
    const std::string& p = paths[i];
    if (p.empty()) continue;
    for (size_t end = p.find('.');; end = p.find('.', end + 1)) {
      Span& s = spans[p.substr(0, end)];
      if (s.first < 0) s.first = i;
      s.last = i;
      ++s.count;
      if (end == std::string::npos) break;
    }
  }
  return spans;
}

}  // namespace

ModuleIndex index_modules(const Graph& graph) {
  const auto source = graph.attrs.find("source");
  if (source == graph.attrs.end() || source->second != "torch.export") {
    throw InputError(concat("graph '", graph.name,
                            "' has no module paths: pipeline split points need a graph imported from a torch.export "
                            ".pt2 (`placer graph import model.pt2`)"));
  }
  ModuleIndex index;
  std::vector<std::string> paths;
  for (int32_t i = 0; i < static_cast<int32_t>(graph.size()); ++i) {
    const Op& op = graph.op(OpId(i));
    if (!is_forward_call(op)) continue;
    index.ops.push_back(OpId(i));
    paths.push_back(module_path(op));
  }
  const std::map<std::string, Span> spans = spans_of(paths);
  const std::vector<std::string> repeated_list = attr_words(graph, "repeated_modules");
  const std::set<std::string> repeated(repeated_list.begin(), repeated_list.end());
  for (const std::string& m : called_modules(graph, paths)) {
    const auto it = spans.find(m);
    if (it == spans.end()) continue;  // ran no ATen op of the forward
    const Span& s = it->second;
    index.modules.push_back({m, s.first, s.last});
    // Called more than once (the importer says so, or other work runs between): a split there would cut twice.
    if (repeated.count(m) || s.count != s.last - s.first + 1) continue;
    auto [cut, fresh] = index.cut_at.emplace(s.first, m);
    if (!fresh && std::count(m.begin(), m.end(), '.') < std::count(cut->second.begin(), cut->second.end(), '.'))
      cut->second = m;
  }
  if (index.modules.empty()) {
    throw InputError(concat("graph '", graph.name,
                            "' has no module paths: its forward ops ran in no module of the exported program"));
  }
  return index;
}

std::vector<std::string> modules_within(const ModuleIndex& index, int64_t begin, int64_t end) {
  std::vector<std::string> out;
  for (const ModuleRange& m : index.modules) {
    if (m.first < begin || m.last >= end) continue;
    const bool under_listed = std::any_of(out.begin(), out.end(), [&](const std::string& o) {
      return m.name.size() > o.size() && m.name.compare(0, o.size(), o) == 0 && m.name[o.size()] == '.';
    });
    if (!under_listed) out.push_back(m.name);
  }
  return out;
}

}  // namespace detail

namespace {

// Each device's stages after its first: a device holding two stages is not one pipeline rank.
void note_repeated_devices(const Cluster& cluster, PipelineSplit& split) {
  std::map<int32_t, size_t> first_stage;
  for (size_t s = 0; s < split.stages.size(); ++s) {
    const auto [it, fresh] = first_stage.emplace(split.stages[s].device.value, s);
    if (fresh) continue;
    const PipelineStage& st = split.stages[s];
    split.breaks.push_back(detail::concat("device ", cluster.device(st.device).name, " holds stage ", it->second,
                                          " and again stage ", s, " (",
                                          st.modules.empty() ? std::string("root ops") : st.modules.front(), ")"));
  }
}

}  // namespace

PipelineSplit pipeline_split(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  const detail::ModuleIndex index = detail::index_modules(graph);
  PipelineSplit split;
  const int64_t n = static_cast<int64_t>(index.ops.size());
  for (int64_t begin = 0, end = 0; begin < n; begin = end) {
    const DeviceId d = placement[index.ops[begin]];
    for (end = begin + 1; end < n && placement[index.ops[end]] == d;) ++end;
    PipelineStage st;
    st.device = d;
    st.ops.assign(index.ops.begin() + begin, index.ops.begin() + end);
    st.modules = detail::modules_within(index, begin, end);
    if (const auto cut = index.cut_at.find(begin); begin > 0 && cut != index.cut_at.end()) {
      st.begins_at = cut->second;
    } else if (begin > 0) {
      const Op& op = graph.op(index.ops[begin]);
      split.breaks.push_back(detail::concat("op '", op.name, "' begins a stage on ", cluster.device(d).name,
                                            " but no module's call begins there"));
    }
    split.stages.push_back(std::move(st));
  }
  note_repeated_devices(cluster, split);
  split.contiguous = split.breaks.empty();
  return split;
}

void require_module_paths(const Graph& graph) { detail::index_modules(graph); }

void write_split_json(JsonWriter& out, const Cluster& cluster, const PipelineSplit& split) {
  out.field("contiguous", split.contiguous);
  if (split.contiguous) {
    out.begin_object("split_spec");
    for (const PipelineStage& st : split.stages) {
      if (!st.begins_at.empty()) out.field(st.begins_at, "BEGINNING");
    }
    out.end();
  }
  out.begin_array("stages");
  for (const PipelineStage& st : split.stages) {
    out.begin().field("device", cluster.device(st.device).name);
    if (st.begins_at.empty())
      out.key("begins_at").null();
    else
      out.field("begins_at", st.begins_at);
    out.begin_array("modules");
    for (const std::string& m : st.modules) out.str(m);
    out.end_array().field("ops", static_cast<int64_t>(st.ops.size())).end();
  }
  out.end_array();
  if (!split.contiguous) {
    out.begin_array("breaks");
    for (const std::string& b : split.breaks) out.str(b);
    out.end_array();
  }
}

}  // namespace placer
