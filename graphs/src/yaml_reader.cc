// YamlNode over yaml-cpp: the one place that sees yaml-cpp's node type.
#include "placer/graphs/yaml_reader.h"

#include <yaml-cpp/yaml.h>

namespace placer {

namespace detail {

struct YamlValue {
  YAML::Node node;  // always defined

  // An undefined node (a missing key) is an absent YamlNode.
  static YamlNode wrap(const YAML::Node& node) {
    if (!node.IsDefined()) return YamlNode();
    return YamlNode(std::make_shared<const YamlValue>(YamlValue{node}));
  }
};

}  // namespace detail

namespace {

template <class T>
std::optional<T> decode(const std::shared_ptr<const detail::YamlValue>& value) {
  T v;
  if (!value || !value->node.IsScalar() || !YAML::convert<T>::decode(value->node, v)) return std::nullopt;
  return v;
}

}  // namespace

bool YamlNode::is_null() const { return value_ && value_->node.IsNull(); }
bool YamlNode::is_map() const { return value_ && value_->node.IsMap(); }
bool YamlNode::is_list() const { return value_ && value_->node.IsSequence(); }

std::optional<std::string> YamlNode::string() const {
  if (!value_ || !value_->node.IsScalar()) return std::nullopt;
  return value_->node.Scalar();
}
std::optional<int64_t> YamlNode::integer() const { return decode<int64_t>(value_); }
std::optional<double> YamlNode::number() const { return decode<double>(value_); }
std::optional<bool> YamlNode::boolean() const { return decode<bool>(value_); }

std::string YamlNode::describe() const {
  if (!value_) return "nothing";
  switch (value_->node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "null";
    default: return "'" + value_->node.Scalar() + "'";
  }
}

size_t YamlNode::size() const { return is_list() ? value_->node.size() : 0; }

YamlNode YamlNode::at(size_t i) const {
  if (!value_) return YamlNode();
  const YAML::Node& list = value_->node;
  return detail::YamlValue::wrap(list[i]);
}

YamlNode YamlNode::member(const std::string& key) const {
  if (!is_map()) return YamlNode();
  const YAML::Node& map = value_->node;  // const access: a missing key reads as undefined
  return detail::YamlValue::wrap(map[key]);
}

std::vector<std::string> YamlNode::keys() const {
  std::vector<std::string> out;
  if (!is_map()) return out;
  for (const auto& kv : value_->node) out.push_back(kv.first.Scalar());
  return out;
}

YamlNode parse_yaml(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw YamlSyntaxError(e.what(), e.mark.line + 1, e.msg);
  }
  return detail::YamlValue::wrap(root);
}

}  // namespace placer
