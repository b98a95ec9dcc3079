// Reading JSON that comes from outside: every error names where it is and
// the field ("ops[3] 'conv1': shape: expected an array, got 7").
// Used by the graph, cluster, placement and profile readers and by the
// torch.export importer. RapidJSON is the one cereal is built on.
#pragma once

#include <cereal/archives/json.hpp>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/serialize.h"

// cereal bundles RapidJSON under its own namespace upstream; Debian's cereal
// uses the system RapidJSON. Either way json.hpp has included it by now.
#if defined(CEREAL_RAPIDJSON_NAMESPACE)
#if __has_include(<cereal/external/rapidjson/error/en.h>)
#include <cereal/external/rapidjson/error/en.h>
#endif
namespace placer {
namespace rj = CEREAL_RAPIDJSON_NAMESPACE;
}
#else
#include <rapidjson/error/en.h>
namespace placer {
namespace rj = RAPIDJSON_NAMESPACE;
}
#endif

namespace placer {

// A RapidJSON value for FieldReader (fields.h); null pointer = absent.
class JsonNode {
 public:
  JsonNode() = default;
  explicit JsonNode(const rj::Value* v) : v_(v) {}
  const rj::Value* value() const { return v_; }

  bool present() const { return v_ != nullptr; }
  bool is_null() const { return v_ && v_->IsNull(); }
  bool is_map() const { return v_ && v_->IsObject(); }
  bool is_list() const { return v_ && v_->IsArray(); }
  std::optional<std::string> string() const {
    if (!v_ || !v_->IsString()) return std::nullopt;
    return std::string(v_->GetString(), v_->GetStringLength());
  }
  std::optional<int64_t> integer() const {
    if (!v_ || !v_->IsInt64()) return std::nullopt;
    return v_->GetInt64();
  }
  std::optional<double> number() const {
    if (!v_ || !v_->IsNumber()) return std::nullopt;
    return v_->GetDouble();
  }
  std::optional<bool> boolean() const {
    if (!v_ || !v_->IsBool()) return std::nullopt;
    return v_->GetBool();
  }
  // "\"text\"" (cut at 40 characters), 7, true, null, "an array", "an object".
  std::string describe() const {
    if (!v_) return "nothing";
    const rj::Value& v = *v_;
    if (v.IsString()) {
      std::string s(v.GetString(), v.GetStringLength());
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "\"" + s + "\"";
    }
    if (v.IsBool()) return v.GetBool() ? "true" : "false";
    if (v.IsNull()) return "null";
    if (v.IsInt64()) return std::to_string(v.GetInt64());
    if (v.IsNumber()) return detail::concat(v.GetDouble());
    if (v.IsArray()) return "an array";
    return "an object";
  }
  size_t size() const { return v_ && v_->IsArray() ? v_->Size() : 0; }
  JsonNode at(size_t i) const { return JsonNode(&(*v_)[static_cast<rj::SizeType>(i)]); }
  JsonNode member(const std::string& key) const {
    if (!v_ || !v_->IsObject()) return JsonNode();
    auto it = v_->FindMember(rj::Value(key.data(), static_cast<rj::SizeType>(key.size())));
    return it == v_->MemberEnd() ? JsonNode() : JsonNode(&it->value);
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    if (!v_ || !v_->IsObject()) return out;
    for (auto it = v_->MemberBegin(); it != v_->MemberEnd(); ++it)
      out.emplace_back(it->name.GetString(), it->name.GetStringLength());
    return out;
  }

 private:
  const rj::Value* v_ = nullptr;
};

// ---------------------------------------------------------------------------
// Placer's own JSON files and torch.export programs, read with FieldReader's
// checks and error style. `where` is the context prefix ("ops[3] 'conv1'")
// and `field` the path below it: "ops[3] 'conv1': shape: expected an array, got 7".

template <class Error>
struct JsonReader {
  std::string what;  // "graph", "cluster", ... for "not a placer graph file"

  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw Error(where.empty() ? message : where + ": " + message);
  }
  // field "": the value at `where` itself.
  [[noreturn]] void fail(const std::string& where, const char* field, const std::string& problem) const {
    fail(where, *field ? std::string(field) + ": " + problem : problem);
  }

  // Any JSON object; errors start with `label` ("not a placer graph file").
  rj::Document parse_object(const std::string& text, const std::string& label) const {
    rj::Document doc;
    // Iterative: deeply nested input must not overflow the stack. Strings must be UTF-8: names are echoed in
    // errors, files and service replies.
    doc.Parse<rj::kParseFullPrecisionFlag | rj::kParseNanAndInfFlag | rj::kParseIterativeFlag |
              rj::kParseValidateEncodingFlag>(text.data(), text.size());
    if (doc.HasParseError())
      fail("", detail::concat(label, ": JSON parse error at byte ", doc.GetErrorOffset(), ": ",
                              rj::GetParseError_En(doc.GetParseError())));
    if (!doc.IsObject()) fail("", label + ": the top level is not a JSON object");
    return doc;
  }

  // A placer file: an object with "format" and a supported "version".
  rj::Document parse(const std::string& text, const char* format) const {
    const std::string label = "not a placer " + what + " file";
    rj::Document doc = parse_object(text, label);
    const rj::Value* f = member(doc, "format");
    if (!f) fail(label, "format", std::string("missing required field (expected \"") + format + "\")");
    if (!f->IsString() || std::string(f->GetString(), f->GetStringLength()) != format)
      fail(label, "format", std::string("expected \"") + format + "\", got " + describe(*f));
    const rj::Value* v = member(doc, "version");
    if (!v) fail("", "version", "missing required field");
    if (!v->IsInt64() || v->GetInt64() < 1) fail("", "version", "expected a positive integer, got " + describe(*v));
    if (v->GetInt64() > kGraphFormatVersion)
      fail("", detail::concat("unsupported ", what, " format version ", v->GetInt64(), " (this build reads up to ",
                              kGraphFormatVersion, ")"));
    return doc;
  }

  static std::string describe(const rj::Value& v) { return JsonNode(&v).describe(); }

  // Every key of the object `obj` one of `keys`, and none given twice (a typo such as "flop"
  // was read as no flops; of a key given twice the first was kept).
  void known(const rj::Value& obj, std::initializer_list<const char*> keys, const std::string& where) const {
    object(obj, where, "");
    for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
      const std::string_view key(it->name.GetString(), it->name.GetStringLength());  // every op's keys: no copies
      bool found = false;
      for (const char* k : keys) found = found || key == k;
      if (!found) fail(where, std::string(key).c_str(), "unknown field (known here: " + join_names(keys) + ")");
      for (auto jt = obj.MemberBegin(); jt != it; ++jt)
        if (jt->name == it->name) fail(where, std::string(key).c_str(), "given twice");
    }
  }
  // The keys of a map-like object (names chosen by the file) given once each.
  void unique_keys(const rj::Value& obj, const std::string& where, const char* field) const {
    object(obj, where, field);
    std::unordered_set<std::string_view> seen;
    for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it)
      if (!seen.emplace(it->name.GetString(), it->name.GetStringLength()).second)
        fail(where, detail::concat(*field ? std::string(field) + "." : std::string(),
                                   std::string(it->name.GetString(), it->name.GetStringLength()), ": given twice"));
  }

  // A field of `obj`, null when absent. `obj` that is not an object is an error (RapidJSON's FindMember
  // asserts, and cereal's assertion throws a message that names no field): give `where` to name its path.
  static const rj::Value* member(const rj::Value& obj, const char* key) {
    if (!obj.IsObject())
      throw Error(std::string("field '") + key + "': expected an object holding it, got " + describe(obj));
    auto it = obj.FindMember(key);
    return it == obj.MemberEnd() ? nullptr : &it->value;
  }
  const rj::Value* member(const rj::Value& obj, const char* key, const std::string& where) const {
    if (!obj.IsObject()) fail(where, std::string("expected an object with field '") + key + "', got " + describe(obj));
    return member(obj, key);
  }

  const rj::Value& require(const rj::Value& obj, const char* key, const std::string& where) const {
    const rj::Value* v = member(obj, key, where);
    if (!v) fail(where, key, "missing required field");
    return *v;
  }

  const rj::Value& object(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsObject()) fail(where, field, "expected an object, got " + describe(v));
    return v;
  }
  const rj::Value& array(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsArray()) fail(where, field, "expected an array, got " + describe(v));
    return v;
  }
  // (The checks are built only for a value that fails them: graph files are large.)
  std::string string(const rj::Value& v, const std::string& where, const char* field) const {
    if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
    return checks(where).string(JsonNode(&v), field);
  }
  int64_t integer(const rj::Value& v, const std::string& where, const char* field) const {
    if (v.IsInt64()) return v.GetInt64();
    return checks(where).integer(JsonNode(&v), field);
  }
  int32_t int32(const rj::Value& v, const std::string& where, const char* field) const {
    return static_cast<int32_t>(checks(where).integer(JsonNode(&v), field, INT32_MIN, INT32_MAX));
  }
  // Any number, NaN and infinity included (the files may hold them).
  double number(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsNumber()) fail(where, field, "expected a number, got " + describe(v));
    return v.GetDouble();
  }
  // true/false, or 1/0.
  bool boolean(const rj::Value& v, const std::string& where, const char* field) const {
    if (v.IsInt64() && (v.GetInt64() == 0 || v.GetInt64() == 1)) return v.GetInt64() == 1;
    if (v.IsBool()) return v.GetBool();
    return checks(where).boolean(JsonNode(&v), field);
  }

  // Optional fields: absent -> fallback.
  std::string opt_string(const rj::Value& obj, const char* key, const std::string& where,
                         const std::string& fallback = "") const {
    const rj::Value* v = member(obj, key, where);
    return v ? string(*v, where, key) : fallback;
  }
  int64_t opt_integer(const rj::Value& obj, const char* key, const std::string& where, int64_t fallback) const {
    const rj::Value* v = member(obj, key, where);
    return v ? integer(*v, where, key) : fallback;
  }
  double opt_number(const rj::Value& obj, const char* key, const std::string& where, double fallback) const {
    const rj::Value* v = member(obj, key, where);
    return v ? number(*v, where, key) : fallback;
  }

  std::vector<int64_t> integers(const rj::Value& v, const std::string& where, const char* field) const {
    array(v, where, field);
    std::vector<int64_t> out;
    out.reserve(v.Size());
    for (rj::SizeType k = 0; k < v.Size(); ++k) out.push_back(integer(v[k], where, index_path(field, k).c_str()));
    return out;
  }
  std::vector<double> numbers(const rj::Value& v, const std::string& where, const char* field) const {
    array(v, where, field);
    std::vector<double> out;
    out.reserve(v.Size());
    for (rj::SizeType k = 0; k < v.Size(); ++k) out.push_back(number(v[k], where, index_path(field, k).c_str()));
    return out;
  }

 private:
  // FieldReader's checks, reporting below `where` as Error.
  FieldReader<JsonNode> checks(const std::string& where) const {
    return FieldReader<JsonNode>(JsonNode(), "", throw_field_error<Error>(where));
  }
};

}  // namespace placer
