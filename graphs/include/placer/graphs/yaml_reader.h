// Reading YAML that comes from outside (the trainer's and the service's
// configs): a node adapter for FieldReader (fields.h), so a YAML field is
// checked and its errors worded like a JSON field's (json_reader.h).
// yaml-cpp stays inside graphs/src: a YamlNode holds an opaque value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"

namespace placer {

// Text that is not YAML. what() is the parser's whole message
// ("yaml-cpp: error at line 2, column 5: ..."), line() (from 1) and
// problem() its parts, for callers that word it their own way.
class YamlSyntaxError : public InputError {
 public:
  YamlSyntaxError(const std::string& what, int line, std::string problem)
      : InputError(what), line_(line), problem_(std::move(problem)) {}
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  int line_;
  std::string problem_;
};

namespace detail {
struct YamlValue;  // a yaml-cpp node (graphs/src/yaml_reader.cc)
}  // namespace detail

// A YAML node for FieldReader; default-constructed = absent.
class YamlNode {
 public:
  YamlNode() = default;

  bool present() const { return value_ != nullptr; }
  bool is_null() const;
  bool is_map() const;
  bool is_list() const;
  // Any scalar reads as a string (YAML has no separate string type).
  std::optional<std::string> string() const;
  std::optional<int64_t> integer() const;
  std::optional<double> number() const;
  std::optional<bool> boolean() const;
  // "'text'", "a map", "a list", "null".
  std::string describe() const;
  size_t size() const;
  YamlNode at(size_t i) const;
  YamlNode member(const std::string& key) const;
  std::vector<std::string> keys() const;

 private:
  friend struct detail::YamlValue;
  explicit YamlNode(std::shared_ptr<const detail::YamlValue> value) : value_(std::move(value)) {}
  std::shared_ptr<const detail::YamlValue> value_;  // null: absent
};

// The root of a YAML (or JSON: YAML reads both) text; null for an empty one.
// Throws YamlSyntaxError.
YamlNode parse_yaml(const std::string& text);

using YamlFields = FieldReader<YamlNode>;

}  // namespace placer
