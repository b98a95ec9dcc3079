// Looking at a request's raw JSON text without parsing it: its nesting
// depth (checked before parsing) and the bytes of one value (an inline graph,
// kept as the client sent it). Internal to service/ (protocol.cc).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

namespace placer::service {

// Depth of nested arrays/objects in the raw text (brackets outside strings),
// checked before parsing: one pass over the bytes, no recursion.
inline int json_depth(std::string_view t) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

// The raw text of a valid JSON document's value at `path` (first match of
// each key), found by skipping values without building anything: cheaper
// than writing the parsed value out again, and it keeps the client's bytes.
// Returns false if the path is not there (the caller then falls back).
class RawScanner {
 public:
  explicit RawScanner(std::string_view text) : t_(text) {}
  bool find(const std::vector<std::string_view>& path, std::string_view* out) {
    i_ = 0;
    for (std::string_view key : path) {
      ws();
      if (i_ >= t_.size() || t_[i_] != '{') return false;
      ++i_;
      bool found = false;
      for (;;) {
        ws();
        if (i_ < t_.size() && t_[i_] == '}') return false;
        size_t k0 = i_;
        if (!skip_string()) return false;
        std::string_view k = t_.substr(k0 + 1, i_ - k0 - 2);
        ws();
        if (i_ >= t_.size() || t_[i_] != ':') return false;
        ++i_;
        ws();
        if (k == key) {
          found = true;
          break;
        }
        if (!skip_value()) return false;
        ws();
        if (i_ < t_.size() && t_[i_] == ',') ++i_;
      }
      if (!found) return false;
    }
    size_t v0 = i_;
    if (!skip_value()) return false;
    *out = t_.substr(v0, i_ - v0);
    return true;
  }

 private:
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool skip_string() {
    if (i_ >= t_.size() || t_[i_] != '"') return false;
    for (++i_; i_ < t_.size(); ++i_) {
      if (t_[i_] == '\\')
        ++i_;
      else if (t_[i_] == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  // Iterative: nesting depth does not touch the stack.
  bool skip_value() {
    int depth = 0;
    do {
      ws();
      if (i_ >= t_.size()) return false;
      char c = t_[i_];
      if (c == '"') {
        if (!skip_string()) return false;
      } else if (c == '{' || c == '[') {
        ++depth;
        ++i_;
      } else if (c == '}' || c == ']') {
        if (--depth < 0) return false;
        ++i_;
      } else if (c == ',' || c == ':') {
        ++i_;
      } else {
        // A literal or number: up to the next structural character. Any other
        // byte (NUL included) moves on, so the scan always advances.
        size_t start = i_;
        while (i_ < t_.size() && !is_structural(t_[i_])) ++i_;
        if (i_ == start) ++i_;
      }
    } while (depth > 0);
    return true;
  }
  static bool is_structural(char c) {
    return c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == ' ' || c == '\n' || c == '\r' ||
           c == '\t' || c == '"';
  }
  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace placer::service
