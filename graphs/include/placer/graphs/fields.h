// One reader for the fields of outside input: graph and profile files,
// service requests (JSON, RapidJSON) and the trainer's and the service's
// configs (YAML, yaml-cpp). Every error has one shape, the path of the field
// and the problem:
//   "train.lr: expected a number, got 'fast'"
//   "ops[0] 'x': outputs[0].shape[1]: expected an integer, got "2""
//   "limits.max_ops: must be >= 1, got 0"
// and a map read field by field can reject the keys nobody asked for.
// unknown_name() words the error for a name that is not one of a list.
//
// The reader is a template over a small node adapter (JsonNode in
// json_reader.h, YamlNode in yaml_reader.h) with these members:
//   bool present(), is_null(), is_map(), is_list();
//   std::optional<std::string> string();  std::optional<int64_t> integer();
//   std::optional<double> number();       std::optional<bool> boolean();
//   std::string describe();               // the value as the message shows it
//   size_t size(); Node at(size_t); Node member(const std::string&);
//   std::vector<std::string> keys();
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "placer/graphs/error.h"

namespace placer {

// "a, b, c": the names a field accepts, for error messages.
template <class Names>
std::string join_names(const Names& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// "unknown policy 'lstm' (known: seq2seq, hierarchical, gnn)"
template <class Names>
std::string unknown_name(std::string_view what, const std::string& name, const Names& known) {
  return detail::concat("unknown ", what, " '", name, "' (known: ", join_names(known), ")");
}
inline std::string unknown_name(std::string_view what, const std::string& name,
                                std::initializer_list<std::string_view> known) {
  return unknown_name<std::initializer_list<std::string_view>>(what, name, known);
}

// Readers whose errors carry a code (service requests) tell these apart.
enum class FieldProblem { Invalid, TooLarge };

// Reports a problem with the field at `path`; must throw.
using FieldFail = std::function<void(const std::string& path, const std::string& problem, FieldProblem kind)>;

// "<origin>: <path>: <problem>" as an Error (InputError, GraphError, ...).
template <class Error>
FieldFail throw_field_error(std::string origin = "") {
  return [origin = std::move(origin)](const std::string& path, const std::string& problem, FieldProblem) {
    throw Error(origin, path, problem);
  };
}

// "a.b" ("b" at the top), "a[3]".
inline std::string field_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}
inline std::string index_path(const std::string& parent, size_t index) {
  return detail::concat(parent, "[", index, "]");
}

namespace detail {
inline std::string range_number(double v) { return concat(v); }
inline std::string range_number(int64_t v) { return std::to_string(v); }
}  // namespace detail

template <class Node>
class FieldReader {
 public:
  // `node` is a map, or absent or null (then every field reads as absent).
  FieldReader(Node node, std::string path, FieldFail fail)
      : node_(std::move(node)), path_(std::move(path)), fail_(std::move(fail)) {
    if (node_.present() && !node_.is_null() && !node_.is_map())
      this->fail(path_.empty() ? "(top level)" : path_, "expected a map, got " + node_.describe());
  }

  [[noreturn]] void fail(const std::string& path, const std::string& problem,
                         FieldProblem kind = FieldProblem::Invalid) const {
    fail_(path, problem, kind);
    throw InputError("", path, problem);  // a FieldFail that returned
  }
  const std::string& path() const { return path_; }
  std::string path(const std::string& key) const { return field_path(path_, key); }
  const Node& node() const { return node_; }
  const FieldFail& on_fail() const { return fail_; }

  // The field (absent if it is not there); it counts as known to finish().
  Node get(const std::string& key) {
    used_.insert(key);
    if (!node_.present() || node_.is_null()) return Node();
    return node_.member(key);
  }
  Node need(const std::string& key) {
    Node n = get(key);
    if (!n.present()) fail(path(key), "missing required field");
    return n;
  }
  // A nested map, read with the same error style.
  FieldReader section(const std::string& key) { return FieldReader(get(key), path(key), fail_); }

  // Present fields are checked and stored in *out; absent ones leave it as it is.
  bool read(const std::string& key, std::string* out) {
    Node n = get(key);
    if (!n.present()) return false;
    *out = string(n, path(key));
    return true;
  }
  bool read(const std::string& key, bool* out) {
    Node n = get(key);
    if (!n.present()) return false;
    *out = boolean(n, path(key));
    return true;
  }
  template <class Int, class = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  bool read(const std::string& key, Int* out, int64_t lo, int64_t hi) {
    Node n = get(key);
    if (!n.present()) return false;
    *out = static_cast<Int>(integer(n, path(key), lo, hi));
    return true;
  }
  bool read(const std::string& key, double* out, double lo, double hi) {
    Node n = get(key);
    if (!n.present()) return false;
    *out = number(n, path(key), lo, hi);
    return true;
  }
  // A list of strings (null: empty).
  bool read(const std::string& key, std::vector<std::string>* out) {
    Node n = get(key);
    if (!n.present()) return false;
    *out = strings(n, path(key));
    return true;
  }

  // Rejects the keys that were never asked for, and a key given twice (of which get() sees the first),
  // worded as JsonReader::known words them.
  void finish() const {
    if (!node_.present() || !node_.is_map()) return;
    std::set<std::string> seen;
    for (const std::string& key : node_.keys()) {
      if (!used_.count(key)) fail(path(key), "unknown field (known here: " + join_names(used_) + ")");
      if (!seen.insert(key).second) fail(path(key), "given twice");
    }
  }

  // Checks of one value at `path`.
  std::string string(const Node& n, const std::string& path) const {
    std::optional<std::string> s = n.string();
    if (!s) fail(path, "expected a string, got " + n.describe());
    return *s;
  }
  bool boolean(const Node& n, const std::string& path) const {
    std::optional<bool> b = n.boolean();
    if (!b) fail(path, "expected true or false, got " + n.describe());
    return *b;
  }
  int64_t integer(const Node& n, const std::string& path, int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const {
    std::optional<int64_t> i = n.integer();
    if (!i) fail(path, "expected an integer, got " + n.describe());
    check_range(*i, path, lo, hi);
    return *i;
  }
  double number(const Node& n, const std::string& path, double lo = -std::numeric_limits<double>::infinity(),
                double hi = std::numeric_limits<double>::infinity()) const {
    std::optional<double> d = n.number();
    if (!d || !std::isfinite(*d)) fail(path, "expected a number, got " + n.describe());
    check_range(*d, path, lo, hi);
    return *d;
  }
  std::vector<std::string> strings(const Node& n, const std::string& path) const {
    std::vector<std::string> out;
    if (n.is_null()) return out;
    if (!n.is_list()) fail(path, "expected a list of strings, got " + n.describe());
    for (size_t i = 0; i < n.size(); ++i) out.push_back(string(n.at(i), index_path(path, i)));
    return out;
  }

  // "must be in [lo, hi], got v" (or ">= lo", "<= hi" when one side is open);
  // above hi is FieldProblem::TooLarge.
  template <class T>
  void check_range(T v, const std::string& path, T lo, T hi) const {
    if (v >= lo && v <= hi) return;
    constexpr bool real = std::is_floating_point_v<T>;
    const bool open_lo = lo == std::numeric_limits<T>::lowest() || (real && lo == -std::numeric_limits<T>::infinity());
    const bool open_hi = hi == std::numeric_limits<T>::max() || (real && hi == std::numeric_limits<T>::infinity());
    std::string bound;
    if (open_lo)
      bound = "<= " + detail::range_number(hi);
    else if (open_hi)
      bound = ">= " + detail::range_number(lo);
    else
      bound = "in [" + detail::range_number(lo) + ", " + detail::range_number(hi) + "]";
    fail(path, "must be " + bound + ", got " + detail::range_number(v),
         v > hi ? FieldProblem::TooLarge : FieldProblem::Invalid);
  }

 private:
  Node node_;
  std::string path_;
  FieldFail fail_;
  std::set<std::string> used_;
};

}  // namespace placer
