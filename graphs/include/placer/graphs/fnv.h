// FNV-1a, 64-bit: a stable hash of bytes (the same on every run and machine), for
// hashed vocabularies and content fingerprints.
#pragma once

#include <cstdint>
#include <string_view>

namespace placer {

inline constexpr uint64_t kFnvOffset = 1469598103934665603ULL;

// `h` carries a hash on over more bytes (fnv1a(b, fnv1a(a)) hashes a then b).
inline uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace placer
