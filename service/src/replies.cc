// The envelope of every reply, and the request id salvaged from a request
// that did not parse (so that its error reply can still name it).
#include <rapidjson/document.h>
#include <cereal/archives/json.hpp>

#include <string>

#include "placer/graphs/json_writer.h"
#include "placer/service/protocol.h"

namespace placer::service {

std::string RequestId::json() const { return integer ? text : json_quote(text); }

std::optional<RequestId> request_id_of(const JsonNode& node) {
  const rapidjson::Value* v = node.value();
  if (!v) return std::nullopt;
  if (v->IsString()) return RequestId{std::string(v->GetString(), v->GetStringLength()), false};
  if (v->IsInt64()) return RequestId{std::to_string(v->GetInt64()), true};
  if (v->IsUint64()) return RequestId{std::to_string(v->GetUint64()), true};  // past 2^63-1
  return std::nullopt;
}

RequestId salvage_request_id(std::string_view text) {
  try {
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseStopWhenDoneFlag |
              rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
    if (doc.HasParseError() || !doc.IsObject()) return {};
    auto it = doc.FindMember("id");
    if (it == doc.MemberEnd()) return {};
    const std::optional<RequestId> id = request_id_of(JsonNode(&it->value));
    if (id && id->text.size() <= 256) return *id;
  } catch (...) {}
  return {};
}

std::string ok_reply(const RequestId& id, RequestType type, const std::string& result_json) {
  return "{\"version\":" + std::to_string(kProtocolVersion) + ",\"id\":" + id.json() +
         ",\"type\":" + json_quote(request_type_name(type)) + ",\"status\":\"ok\",\"result\":" + result_json + "}";
}

std::string error_reply(const RequestId& id, const std::string& type, const std::string& code,
                        const std::string& field, const std::string& message) {
  std::string status = code == codes::kBusy ? "busy" : "error";
  return "{\"version\":" + std::to_string(kProtocolVersion) + ",\"id\":" + id.json() +
         ",\"type\":" + json_quote(type) + ",\"status\":" + json_quote(status) +
         ",\"error\":{\"code\":" + json_quote(code) + ",\"field\":" + json_quote(field) +
         ",\"message\":" + json_quote(message) + "}}";
}

}  // namespace placer::service
