// A small JSON writer for replies and job records (rapidjson underneath).
#pragma once

// cereal first: it configures rapidjson the same way in every file.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cereal/archives/json.hpp>

#include <cmath>
#include <string>
#include <string_view>

#include "placer/graphs/placement.h"

namespace placer::service {

class JsonOut {
 public:
  JsonOut() : writer_(buffer_) {}
  JsonOut& begin() {
    writer_.StartObject();
    return *this;
  }
  JsonOut& end() {
    writer_.EndObject();
    return *this;
  }
  JsonOut& begin_array(std::string_view key) {
    this->key(key);
    writer_.StartArray();
    return *this;
  }
  JsonOut& end_array() {
    writer_.EndArray();
    return *this;
  }
  JsonOut& begin_object(std::string_view key) {
    this->key(key);
    writer_.StartObject();
    return *this;
  }
  JsonOut& key(std::string_view k) {
    writer_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
    return *this;
  }
  JsonOut& str(std::string_view v) {
    writer_.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
    return *this;
  }
  JsonOut& num(double v) {
    if (std::isfinite(v))
      writer_.Double(v);
    else
      writer_.Null();
    return *this;
  }
  JsonOut& integer(int64_t v) {
    writer_.Int64(v);
    return *this;
  }
  JsonOut& boolean(bool v) {
    writer_.Bool(v);
    return *this;
  }
  JsonOut& null() {
    writer_.Null();
    return *this;
  }
  JsonOut& field(std::string_view k, std::string_view v) { return key(k).str(v); }
  JsonOut& field(std::string_view k, const char* v) { return key(k).str(v); }
  JsonOut& field(std::string_view k, double v) { return key(k).num(v); }
  JsonOut& field(std::string_view k, int64_t v) { return key(k).integer(v); }
  JsonOut& field(std::string_view k, int v) { return key(k).integer(v); }
  JsonOut& field(std::string_view k, bool v) { return key(k).boolean(v); }
  // {"graph": name, "device": {op: device}}
  JsonOut& placement(std::string_view k, const NamedPlacement& p) {
    begin_object(k).field("graph", p.graph).begin_object("device");
    for (const auto& [op, device] : p.device) field(op, device);
    return end().end();
  }
  std::string text() const { return std::string(buffer_.GetString(), buffer_.GetSize()); }

 private:
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

}  // namespace placer::service
