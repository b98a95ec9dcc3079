#include "placer/graphs/json_writer.h"

// cereal first: it configures RapidJSON (assertions throw) the same way in every file.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cereal/archives/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace placer {

std::string json_quote(std::string_view s) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest text that reads back to the same double.
  for (int precision = 6; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

std::string format_number(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

struct JsonWriter::Impl {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buffer};
};

JsonWriter::JsonWriter() : impl_(new Impl) {}
JsonWriter::~JsonWriter() { delete impl_; }

JsonWriter& JsonWriter::begin() {
  impl_->writer.StartObject();
  return *this;
}
JsonWriter& JsonWriter::end() {
  impl_->writer.EndObject();
  return *this;
}
JsonWriter& JsonWriter::begin_array(std::string_view key) {
  this->key(key);
  return begin_array();
}
JsonWriter& JsonWriter::begin_array() {
  impl_->writer.StartArray();
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  impl_->writer.EndArray();
  return *this;
}
JsonWriter& JsonWriter::begin_object(std::string_view key) {
  this->key(key);
  impl_->writer.StartObject();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  impl_->writer.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
  return *this;
}
JsonWriter& JsonWriter::str(std::string_view v) {
  impl_->writer.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
  return *this;
}
JsonWriter& JsonWriter::num(double v) {
  if (std::isfinite(v))
    impl_->writer.Double(v);
  else
    impl_->writer.Null();
  return *this;
}
JsonWriter& JsonWriter::integer(int64_t v) {
  impl_->writer.Int64(v);
  return *this;
}
JsonWriter& JsonWriter::boolean(bool v) {
  impl_->writer.Bool(v);
  return *this;
}
JsonWriter& JsonWriter::null() {
  impl_->writer.Null();
  return *this;
}
JsonWriter& JsonWriter::raw(std::string_view json) {
  impl_->writer.RawValue(json.data(), json.size(), rapidjson::kObjectType);
  return *this;
}
JsonWriter& JsonWriter::placement(std::string_view k, const NamedPlacement& p) {
  begin_object(k).field("graph", p.graph).begin_object("device");
  for (const auto& [op, device] : p.device) field(op, device);
  return end().end();
}

JsonWriter& JsonWriter::paired(std::string_view k, const PairedTest& t) {
  begin_object(k).field("rounds", t.pairs).field("ratio", t.ratio).field("ratio_low", t.ratio_low);
  return field("ratio_high", t.ratio_high).field("p_value", t.p_value).field("significant", t.significant()).end();
}

std::string JsonWriter::text() const { return std::string(impl_->buffer.GetString(), impl_->buffer.GetSize()); }

}  // namespace placer
