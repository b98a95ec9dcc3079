// A request's text before its fields are read (protocol.cc's first steps; request_text.cc). Internal to
// service/.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>

#include "placer/service/protocol.h"

namespace placer::service {

// Refuses (too_large) a request over limits.max_request_bytes or nested deeper than limits.max_json_depth.
void check_size(std::string_view text, const ProtocolLimits& limits);

// The request's text with graph.inline's object cut out ({} in its place):
// an inline graph is kept as the client's bytes and parsed once, by the graph
// loader (which validates it), and only when the server has not prepared that
// exact graph before; the rest of the request is parsed as usual.
struct Stripped {
  std::string_view inline_graph;  // empty: nothing cut out (text is the request)
  std::string text;
  size_t at = 0;  // where the graph was

  // A byte offset in `text` as one in the client's request.
  size_t client_offset(size_t offset) const {
    return inline_graph.empty() || offset <= at ? offset : offset + inline_graph.size() - 2;
  }
};
Stripped strip_inline_graph(std::string_view text);

// The request (`stripped`'s text where a graph was cut out) as a JSON object; bad_json saying the byte.
std::shared_ptr<rapidjson::Document> parse_document(std::string_view text, const Stripped& stripped);

// Every object of the request (an inline graph aside: its loader checks it) with each key once: of a key
// given twice, some readers kept the first value and others the last. bad_request naming the key's path.
void refuse_repeated_keys(const rapidjson::Value& root);

}  // namespace placer::service
