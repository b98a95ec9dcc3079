// A request's text before its fields are read: its size and depth, the inline graph cut out, the parse,
// and each key once in every object.
#include "request_text.h"

// As protocol.cc: rapidjson configured the same way in every file.
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <cereal/archives/json.hpp>

#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "placer/graphs/fields.h"
#include "placer/graphs/json_reader.h"
#include "raw_json.h"

namespace placer::service {

void check_size(std::string_view text, const ProtocolLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_request_bytes)
    throw RequestError(codes::kTooLarge, "",
                       "request of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                           std::to_string(limits.max_request_bytes));
  if (json_depth(text) > limits.max_json_depth)
    throw RequestError(codes::kTooLarge, "",
                       "JSON nested deeper than " + std::to_string(limits.max_json_depth) + " levels");
}

Stripped strip_inline_graph(std::string_view text) {
  Stripped s;
  std::string_view raw;
  if (!RawScanner(text).find({"graph", "inline"}, &raw) || raw.size() <= 2 || raw.front() != '{' || raw.back() != '}')
    return s;
  s.inline_graph = raw;
  s.at = static_cast<size_t>(raw.data() - text.data());
  s.text.reserve(text.size() - raw.size() + 2);
  s.text.append(text.substr(0, s.at)).append("{}").append(text.substr(s.at + raw.size()));
  return s;
}

std::shared_ptr<rapidjson::Document> parse_document(std::string_view text, const Stripped& stripped) {
  const std::string_view to_parse = stripped.inline_graph.empty() ? text : std::string_view(stripped.text);
  auto doc = std::make_shared<rapidjson::Document>();
  // Iterative parsing: deep nesting cannot overflow the stack. Strings must be
  // UTF-8 (an id of raw 0xff bytes was echoed into a reply no JSON reader
  // takes), and nothing but white space may follow the request.
  doc->Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(to_parse.data(), to_parse.size());
  if (doc->HasParseError())
    throw RequestError(codes::kBadJson, "",
                       std::string("malformed JSON at byte ") +
                           std::to_string(stripped.client_offset(doc->GetErrorOffset())) + ": " +
                           rapidjson::GetParseError_En(doc->GetParseError()));
  if (!doc->IsObject())
    throw RequestError(codes::kBadJson, "", "expected a JSON object, got " + JsonNode(doc.get()).describe());
  return doc;
}

// Iterative, as the parse is: max_json_depth may be raised past what the stack holds.
void refuse_repeated_keys(const rapidjson::Value& root) {
  std::vector<std::pair<const rapidjson::Value*, std::string>> todo{{&root, ""}};
  const auto nested = [](const rapidjson::Value& v) { return v.IsObject() || v.IsArray(); };
  while (!todo.empty()) {
    const auto [v, path] = std::move(todo.back());
    todo.pop_back();
    if (v->IsArray())
      for (rapidjson::SizeType i = 0; i < v->Size(); ++i)
        if (nested((*v)[i])) todo.emplace_back(&(*v)[i], index_path(path, i));
    if (!v->IsObject()) continue;
    std::unordered_set<std::string_view> seen;
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
      const std::string_view key(it->name.GetString(), it->name.GetStringLength());
      if (!seen.insert(key).second)
        throw RequestError(codes::kBadRequest, field_path(path, std::string(key)), "given twice");
      if (nested(it->value)) todo.emplace_back(&it->value, field_path(path, std::string(key)));
    }
  }
}

}  // namespace placer::service
