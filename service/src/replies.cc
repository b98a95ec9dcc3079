// The envelope of every reply, and the request id salvaged from a request
// that did not parse (so that its error reply can still name it).
#include <rapidjson/document.h>
#include <cereal/archives/json.hpp>

#include <string>

#include "placer/graphs/json_writer.h"
#include "placer/service/protocol.h"

namespace placer::service {

std::string salvage_request_id(std::string_view text) {
  try {
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseStopWhenDoneFlag |
              rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
    if (doc.HasParseError() || !doc.IsObject()) return "";
    auto it = doc.FindMember("id");
    if (it == doc.MemberEnd()) return "";
    if (it->value.IsString() && it->value.GetStringLength() <= 256)
      return std::string(it->value.GetString(), it->value.GetStringLength());
    if (it->value.IsInt64()) return std::to_string(it->value.GetInt64());
  } catch (...) {}
  return "";
}

std::string ok_reply(const std::string& id, RequestType type, const std::string& result_json) {
  return "{\"version\":" + std::to_string(kProtocolVersion) + ",\"id\":" + json_quote(id) +
         ",\"type\":" + json_quote(request_type_name(type)) + ",\"status\":\"ok\",\"result\":" + result_json + "}";
}

std::string error_reply(const std::string& id, const std::string& type, const std::string& code,
                        const std::string& field, const std::string& message) {
  std::string status = code == codes::kBusy ? "busy" : "error";
  return "{\"version\":" + std::to_string(kProtocolVersion) + ",\"id\":" + json_quote(id) +
         ",\"type\":" + json_quote(type) + ",\"status\":" + json_quote(status) +
         ",\"error\":{\"code\":" + json_quote(code) + ",\"field\":" + json_quote(field) +
         ",\"message\":" + json_quote(message) + "}}";
}

}  // namespace placer::service
