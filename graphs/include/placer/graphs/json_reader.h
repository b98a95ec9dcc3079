// Reading JSON that comes from outside: every error names where it is and
// the field ("ops[3] 'conv1': field 'shape' must be an array, got 7").
// Used by the graph, cluster, placement and profile readers and by the
// torch.export importer. RapidJSON is the one cereal is built on.
#pragma once

#include <cereal/archives/json.hpp>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "placer/graphs/error.h"
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

// ---------------------------------------------------------------------------
// JSON reading helpers. `where` is the context prefix ("ops[3] 'conv1'"); every
// error names it and the field.

template <class Error>
struct JsonReader {
  std::string what;  // "graph", "cluster", ... for "not a placer graph file"

  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw Error(where.empty() ? message : where + ": " + message);
  }

  // Any JSON object; errors start with `label` ("not a placer graph file").
  rj::Document parse_object(const std::string& text, const std::string& label) const {
    rj::Document doc;
    // Iterative: deeply nested input must not overflow the stack.
    doc.Parse<rj::kParseFullPrecisionFlag | rj::kParseNanAndInfFlag | rj::kParseIterativeFlag>(text.data(),
                                                                                               text.size());
    if (doc.HasParseError())
      fail("", detail::concat(label, ": JSON parse error at byte ", doc.GetErrorOffset(), ": ",
                              rj::GetParseError_En(doc.GetParseError())));
    if (!doc.IsObject()) fail("", label + ": the top level is not a JSON object");
    return doc;
  }

  // A placer file: an object with "format" and a supported "version".
  rj::Document parse(const std::string& text, const char* format) const {
    rj::Document doc = parse_object(text, "not a placer " + what + " file");
    const rj::Value* f = member(doc, "format");
    if (!f) fail("", "not a placer " + what + " file: field 'format' missing (expected \"" + format + "\")");
    if (!f->IsString() || std::string(f->GetString(), f->GetStringLength()) != format)
      fail("", "not a placer " + what + " file: field 'format' is " + describe(*f) + ", expected \"" + format + "\"");
    const rj::Value* v = member(doc, "version");
    if (!v) fail("", "field 'version' missing");
    if (!v->IsInt64() || v->GetInt64() < 1) fail("", "field 'version' must be a positive integer, got " + describe(*v));
    if (v->GetInt64() > kGraphFormatVersion)
      fail("", detail::concat("unsupported ", what, " format version ", v->GetInt64(), " (this build reads up to ",
                              kGraphFormatVersion, ")"));
    return doc;
  }

  static std::string describe(const rj::Value& v) {
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

  static const rj::Value* member(const rj::Value& obj, const char* key) {
    auto it = obj.FindMember(key);
    return it == obj.MemberEnd() ? nullptr : &it->value;
  }

  const rj::Value& require(const rj::Value& obj, const char* key, const std::string& where) const {
    const rj::Value* v = member(obj, key);
    if (!v) fail(where, std::string("field '") + key + "' missing");
    return *v;
  }

  const rj::Value& object(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsObject()) fail(where, std::string("field '") + field + "' must be an object, got " + describe(v));
    return v;
  }
  const rj::Value& array(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsArray()) fail(where, std::string("field '") + field + "' must be an array, got " + describe(v));
    return v;
  }
  std::string string(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsString()) fail(where, std::string("field '") + field + "' must be a string, got " + describe(v));
    return std::string(v.GetString(), v.GetStringLength());
  }
  int64_t integer(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsInt64()) fail(where, std::string("field '") + field + "' must be an integer, got " + describe(v));
    return v.GetInt64();
  }
  int32_t int32(const rj::Value& v, const std::string& where, const char* field) const {
    int64_t x = integer(v, where, field);
    if (x < INT32_MIN || x > INT32_MAX) fail(where, std::string("field '") + field + "' is out of range");
    return static_cast<int32_t>(x);
  }
  double number(const rj::Value& v, const std::string& where, const char* field) const {
    if (!v.IsNumber()) fail(where, std::string("field '") + field + "' must be a number, got " + describe(v));
    return v.GetDouble();
  }
  bool boolean(const rj::Value& v, const std::string& where, const char* field) const {
    if (v.IsBool()) return v.GetBool();
    if (v.IsInt64() && (v.GetInt64() == 0 || v.GetInt64() == 1)) return v.GetInt64() == 1;
    fail(where, std::string("field '") + field + "' must be a boolean, got " + describe(v));
  }

  // Optional fields: absent -> fallback.
  std::string opt_string(const rj::Value& obj, const char* key, const std::string& where,
                         const std::string& fallback = "") const {
    const rj::Value* v = member(obj, key);
    return v ? string(*v, where, key) : fallback;
  }
  int64_t opt_integer(const rj::Value& obj, const char* key, const std::string& where, int64_t fallback) const {
    const rj::Value* v = member(obj, key);
    return v ? integer(*v, where, key) : fallback;
  }
  double opt_number(const rj::Value& obj, const char* key, const std::string& where, double fallback) const {
    const rj::Value* v = member(obj, key);
    return v ? number(*v, where, key) : fallback;
  }

  std::vector<int64_t> integers(const rj::Value& v, const std::string& where, const char* field) const {
    array(v, where, field);
    std::vector<int64_t> out;
    out.reserve(v.Size());
    for (rj::SizeType k = 0; k < v.Size(); ++k) {
      const std::string f = detail::concat(field, "[", k, "]");
      out.push_back(integer(v[k], where, f.c_str()));
    }
    return out;
  }
  std::vector<double> numbers(const rj::Value& v, const std::string& where, const char* field) const {
    array(v, where, field);
    std::vector<double> out;
    out.reserve(v.Size());
    for (rj::SizeType k = 0; k < v.Size(); ++k) {
      const std::string f = detail::concat(field, "[", k, "]");
      out.push_back(number(v[k], where, f.c_str()));
    }
    return out;
  }
};

}  // namespace placer
