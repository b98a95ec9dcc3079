#include "placer/graphs/error.h"

#include <cstdio>
#include <cstdlib>

namespace placer {

void check_failed(const char* file, int line, const char* condition, const std::string& message) {
  std::fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, condition, message.empty() ? "" : ": ",
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace placer
