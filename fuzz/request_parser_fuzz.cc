// libFuzzer target over the service's request parser (fuzz/README.md).
// Any input must either parse or raise RequestError; a crash, a sanitizer
// report, a leak or another exception type is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placer/service/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  placer::service::ProtocolLimits limits;
  limits.max_request_bytes = 1 << 20;
  try {
    placer::service::Request r = placer::service::parse_request(text, limits);
    // Round-trip the parts a handler would use next.
    (void)r.graph.cache_key();
    (void)r.cluster.cache_key();
    (void)placer::service::ok_reply(r.id, r.type, "{}");
  } catch (const placer::service::RequestError& e) {
    (void)placer::service::error_reply(placer::service::salvage_request_id(text), "", e.code(), e.field(), e.what());
  }
  return 0;
}
