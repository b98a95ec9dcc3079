// A yaml-cpp node for FieldReader (graphs/fields.h): the trainer's and the
// service's YAML configs are read with the same checks and error style as
// the JSON files and requests. Include it only from .cc files that link yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placer/graphs/fields.h"

namespace placer {

class YamlNode {
 public:
  YamlNode() = default;
  explicit YamlNode(YAML::Node node) : node_(std::move(node)), present_(node_.IsDefined()) {}
  const YAML::Node& yaml() const { return node_; }

  bool present() const { return present_; }
  bool is_null() const { return present_ && node_.IsNull(); }
  bool is_map() const { return present_ && node_.IsMap(); }
  bool is_list() const { return present_ && node_.IsSequence(); }
  // Any scalar reads as a string (YAML has no separate string type).
  std::optional<std::string> string() const {
    if (!present_ || !node_.IsScalar()) return std::nullopt;
    return node_.Scalar();
  }
  std::optional<int64_t> integer() const { return decode<int64_t>(); }
  std::optional<double> number() const { return decode<double>(); }
  std::optional<bool> boolean() const { return decode<bool>(); }
  // "'text'", "a map", "a list", "null".
  std::string describe() const {
    if (!present_) return "nothing";
    switch (node_.Type()) {
      case YAML::NodeType::Map: return "a map";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Null: return "null";
      default: return "'" + node_.Scalar() + "'";
    }
  }
  size_t size() const { return is_list() ? node_.size() : 0; }
  YamlNode at(size_t i) const { return YamlNode(node_[i]); }
  YamlNode member(const std::string& key) const {
    if (!is_map()) return YamlNode();
    const YAML::Node& map = node_;  // const access: a missing key reads as undefined
    return YamlNode(map[key]);
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    if (!is_map()) return out;
    for (const auto& kv : node_) out.push_back(kv.first.Scalar());
    return out;
  }

 private:
  template <class T>
  std::optional<T> decode() const {
    T v;
    if (!present_ || !node_.IsScalar() || !YAML::convert<T>::decode(node_, v)) return std::nullopt;
    return v;
  }
  YAML::Node node_;
  bool present_ = false;
};

using YamlFields = FieldReader<YamlNode>;

}  // namespace placer
