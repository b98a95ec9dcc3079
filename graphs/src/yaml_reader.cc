// YamlNode over yaml-cpp: the one place that sees yaml-cpp's node type.
#include "placer/graphs/yaml_reader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

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

namespace {

// A key given twice in one map: yaml-cpp keeps both, and a lookup finds the first, so the second was
// dropped in silence (`policy: {type: bogus, type: gnn}` read as bogus). Iterative: nesting is the file's.
// Each collection once, by where it starts in the text: an alias is the node it names, and nested aliases
// (a "billion laughs" file) would otherwise be walked exponentially often.
void refuse_repeated_keys(const YAML::Node& root) {
  std::vector<YAML::Node> todo{root};
  std::set<int> seen;
  while (!todo.empty()) {
    const YAML::Node node = todo.back();
    todo.pop_back();
    if ((node.IsSequence() || node.IsMap()) && !seen.insert(node.Mark().pos).second) continue;
    if (node.IsSequence()) {
      for (const auto& item : node) todo.push_back(item);
    } else if (node.IsMap()) {
      std::set<std::string> keys;
      for (const auto& kv : node) {
        if (kv.first.IsScalar() && !keys.insert(kv.first.Scalar()).second) {
          const int line = kv.first.Mark().line + 1;
          const std::string problem = "the key '" + kv.first.Scalar() + "' is given twice in one map";
          throw YamlSyntaxError("yaml-cpp: error at line " + std::to_string(line) + ": " + problem, line, problem);
        }
        todo.push_back(kv.second);
      }
    }
  }
}

}  // namespace

YamlNode parse_yaml(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own message for this is "bad file".
    const std::string problem = "nested too deeply (the parser stops at a recursion depth of " +
                                std::to_string(e.depth()) + ")";
    throw YamlSyntaxError("yaml-cpp: error at line " + std::to_string(e.mark.line + 1) + ": " + problem,
                          e.mark.line + 1, problem);
  } catch (const YAML::Exception& e) {
    throw YamlSyntaxError(e.what(), e.mark.line + 1, e.msg);
  }
  refuse_repeated_keys(root);
  return detail::YamlValue::wrap(root);
}

}  // namespace placer
