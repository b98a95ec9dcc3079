// Text for XML documents (the SVG plots of fidelity reports and training runs).
#pragma once

#include <string>

namespace placer {

// A document's text content: &, < and > as entities (names of runs, graphs and
// clusters are the user's).
std::string xml_escape(const std::string& s);

}  // namespace placer
