// Validators with messages a user can read: CLI11 2.1's PositiveNumber and
// NonNegativeNumber print their range's upper end, a 309-digit number. Both
// refuse nan and inf (CLI::Range lets nan through).
#include <CLI/CLI.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "commands.h"
#include "placer/graphs/error.h"

namespace placer::cli {

namespace {

CLI::Validator lower_limit(bool inclusive) {
  const std::string what = inclusive ? "a finite number >= 0" : "a finite number > 0";
  return CLI::Validator(
      [inclusive, what](std::string& input) -> std::string {
        double v = 0.0;
        if (!CLI::detail::lexical_cast(input, v)) return "'" + input + "' is not a number";
        if (std::isfinite(v) && (inclusive ? v >= 0.0 : v > 0.0)) return {};
        return "must be " + what + ", got " + input;
      },
      inclusive ? "NONNEGATIVE" : "POSITIVE");
}

// The folder a path is in ("." for a bare name); trailing slashes are not names.
std::string folder_of(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "" when `dir` is a folder this process may write in, else why not.
std::string folder_problem(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "folder '" + dir + "' does not exist";
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a folder";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "folder '" + dir + "' is not writable";
  return "";
}

}  // namespace

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "an empty path";
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "cannot write '" + path + "': a directory";
        const std::string problem = folder_problem(folder_of(path));
        return problem.empty() ? "" : "cannot write '" + path + "': " + problem;
      },
      "FILE");
}

CLI::Validator output_file_or_stdout() {
  const CLI::Validator file = output_file();
  return CLI::Validator(
      [file](std::string& path) -> std::string { return path.empty() || path == "-" ? "" : file(path); }, "FILE");
}

CLI::Validator output_folder() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "an empty path";
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
          const std::string problem = folder_problem(path);
          return problem.empty() ? "" : "cannot write into '" + path + "': " + problem;
        }
        // Made by the command, with any folders above it that are missing: the nearest that exists must take them.
        std::string up = folder_of(path);
        while (up != "." && up != "/" && ::stat(up.c_str(), &st) != 0) up = folder_of(up);
        const std::string problem = folder_problem(up);
        return problem.empty() ? "" : "cannot make '" + path + "': " + problem;
      },
      "DIR");
}

CLI::Validator file_name_part() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        if (name.empty()) return "an empty name";
        if (name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
          return "'" + name + "' is a file name's part, not a path (no '/')";
        if (name == "." || name == "..") return "'" + name + "' is not a name";
        return "";
      },
      "NAME");
}

CLI::Validator finite_range(double lo, double hi) {
  const std::string what =
      "a finite number in [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, what](std::string& input) -> std::string {
        double v = 0.0;
        if (!CLI::detail::lexical_cast(input, v)) return "'" + input + "' is not a number";
        if (std::isfinite(v) && v >= lo && v <= hi) return {};
        return "must be " + what + ", got " + input;
      },
      "FLOAT in [" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

CLI::Validator positive_number() { return lower_limit(false); }
CLI::Validator nonnegative_number() { return lower_limit(true); }

CLI::Validator nonnegative_integer() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const size_t first = input.find_first_not_of(" \t");
        if (first != std::string::npos && input[first] == '-') return "must be a whole number >= 0, got " + input;
        // CLI11 read a number past 2^64-1 as 2^64-1 (the same seed); what is no number is its own error.
        uint64_t v = 0;
        const char* end = input.data() + input.size();
        if (first != std::string::npos &&
            std::from_chars(input.data() + first, end, v).ec == std::errc::result_out_of_range)
          return "must be at most " + std::to_string(UINT64_MAX) + ", got " + input;
        return {};
      },
      "UINT");
}

void refuse_given(const CLI::App& cmd, const std::vector<std::string>& names, const std::string& why) {
  for (const std::string& name : names)
    if (cmd.count(name) > 0) throw InputError(name + ": " + why);
}

void refuse_given(const CLI::App& cmd, std::initializer_list<const char*> names, const std::string& why) {
  refuse_given(cmd, std::vector<std::string>(names.begin(), names.end()), why);
}

}  // namespace placer::cli
