// What the JSON and binary readers and writers of graphs/ share (private to graphs/src).
#pragma once

#include <algorithm>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/ir.h"

namespace placer::detail {

using cereal::make_nvp;

// Indented JSON written by a cereal archive, ending in a newline.
template <class Write>
inline std::string write_json(Write&& body) {
  std::ostringstream out;
  {
    // 324 = RapidJSON's default: no rounding of decimals (doubles round-trip exactly).
    cereal::JSONOutputArchive ar(
        out, cereal::JSONOutputArchive::Options(324, cereal::JSONOutputArchive::Options::IndentChar::space, 1));
    body(ar);
  }
  out << '\n';
  return out.str();
}

struct JsonStringMap {
  std::vector<std::pair<std::string, std::string>> entries;
  template <class A>
  void save(A& ar) const {
    for (const auto& [k, v] : entries) ar(make_nvp(k, v));
  }
};

inline std::vector<std::pair<std::string, std::string>> sorted_attrs(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> attrs(graph.attrs.begin(), graph.attrs.end());
  std::sort(attrs.begin(), attrs.end());
  return attrs;
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace placer::detail
