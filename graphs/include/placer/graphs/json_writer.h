// The one JSON writer: replies, job records, configs and reports written as
// JSON go through it or through its two helpers (RapidJSON underneath, the
// engine cereal is built on). Strings are escaped as JSON requires; numbers
// are written as the shortest text that reads back to the same double, and
// a non-finite number as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "placer/graphs/placement.h"
#include "placer/graphs/stats.h"

namespace placer {

// "\"text\"" with quotes, backslashes and control characters escaped.
std::string json_quote(std::string_view s);
// Finite -> shortest round-trip text ("0.1", "1e-07"); non-finite -> "null".
std::string json_number(double v);

// Numbers as text for reports, logs and hand-laid-out JSON: `precision`
// significant digits ("%.*g"), or a printf format for one double ("%.3f").
std::string format_number(double v, int precision = 6);
std::string format_number(const char* printf_format, double v);

// Compact JSON built in order: JsonWriter().begin().field("a", 1).end().text().
class JsonWriter {
 public:
  JsonWriter();
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& begin();  // {
  JsonWriter& end();    // }
  JsonWriter& begin_array(std::string_view key);
  JsonWriter& begin_array();  // an array inside an array
  JsonWriter& end_array();
  JsonWriter& begin_object(std::string_view key);
  JsonWriter& key(std::string_view k);
  JsonWriter& str(std::string_view v);
  JsonWriter& num(double v);  // non-finite -> null
  JsonWriter& integer(int64_t v);
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  // Text that is already JSON (a stored document), written as a value.
  JsonWriter& raw(std::string_view json);

  JsonWriter& field(std::string_view k, std::string_view v) { return key(k).str(v); }
  JsonWriter& field(std::string_view k, const std::string& v) { return key(k).str(v); }
  JsonWriter& field(std::string_view k, const char* v) { return key(k).str(v); }
  JsonWriter& field(std::string_view k, double v) { return key(k).num(v); }
  JsonWriter& field(std::string_view k, int64_t v) { return key(k).integer(v); }
  JsonWriter& field(std::string_view k, int v) { return key(k).integer(v); }
  JsonWriter& field(std::string_view k, bool v) { return key(k).boolean(v); }
  // {"graph": name, "device": {op: device}}
  JsonWriter& placement(std::string_view k, const NamedPlacement& p);
  // {"rounds", "ratio", "ratio_low", "ratio_high", "p_value", "significant"}: b against a paired by
  // round, one layout wherever it is written (measure --compare, the trainer's summary, job replies).
  JsonWriter& paired(std::string_view k, const PairedTest& t);

  std::string text() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace placer
