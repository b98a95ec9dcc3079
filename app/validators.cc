// Validators with messages a user can read: CLI11 2.1's PositiveNumber and
// NonNegativeNumber print their range's upper end, a 309-digit number. Both
// refuse nan and inf (CLI::Range lets nan through).
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

#include "commands.h"

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

}  // namespace

CLI::Validator positive_number() { return lower_limit(false); }
CLI::Validator nonnegative_number() { return lower_limit(true); }

}  // namespace placer::cli
