// `--help` for the benchmark programs: each prints its usage and exits 0.
#pragma once

#include <cstdio>
#include <cstring>

namespace placer::bench {

// True, after printing `usage` to stdout, when an argument is --help or -h.
inline bool asked_for_help(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(usage, stdout);
      return true;
    }
  return false;
}

}  // namespace placer::bench
