// The three tiers of errors (see STYLE.md):
//  1. broken invariants: PLACER_CHECK prints file:line and aborts;
//  2. outside input: throw InputError (or a subclass) naming the field and the problem;
//  3. execution failures: a status in a StepResult, never an exception.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace placer {

// Bad outside input: a file, a config, a request. what() names the field;
// an error about one field (FieldReader's) also carries its path and the
// problem apart, so no caller reads the message to find them.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message), problem_(message) {}
  explicit InputError(const char* message) : InputError(std::string(message)) {}
  // what(): "<origin>: <field>: <problem>" (an empty origin or field is left out).
  InputError(const std::string& origin, std::string field, std::string problem)
      : std::runtime_error(join(origin, field, problem)), field_(std::move(field)), problem_(std::move(problem)) {}
  const std::string& field() const { return field_; }      // "" when not about one field
  const std::string& problem() const { return problem_; }  // what() without origin and field

 private:
  static std::string join(const std::string& origin, const std::string& field, const std::string& problem) {
    std::string out = origin.empty() ? "" : origin + ": ";
    return out + (field.empty() ? problem : field + ": " + problem);
  }
  std::string field_;
  std::string problem_;
};

// A graph that is malformed (duplicate names, missing edges, cycles, bad sizes).
class GraphError : public InputError {
 public:
  using InputError::InputError;
};

// A placement or cluster that does not fit the graph (missing op, unknown device).
class PlacementError : public InputError {
 public:
  using InputError::InputError;
};

[[noreturn]] void check_failed(const char* file, int line, const char* condition, const std::string& message);

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace placer

// PLACER_CHECK(cond, parts...): an internal invariant. Never use for outside input.
#define PLACER_CHECK(cond, ...)                                                                                  \
  do {                                                                                                           \
    if (!(cond)) ::placer::check_failed(__FILE__, __LINE__, #cond, ::placer::detail::concat("", ##__VA_ARGS__)); \
  } while (0)
