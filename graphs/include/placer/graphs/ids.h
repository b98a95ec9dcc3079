// Strong ids: an OpId indexes Graph::ops(), a DeviceId indexes Cluster::devices.
#pragma once

#include <cstdint>
#include <functional>

namespace placer {

template <typename Tag>
struct StrongId {
  int32_t value = -1;
  constexpr StrongId() = default;
  constexpr explicit StrongId(int32_t v) : value(v) {}
  constexpr bool valid() const { return value >= 0; }
  constexpr bool operator==(StrongId o) const { return value == o.value; }
  constexpr bool operator!=(StrongId o) const { return value != o.value; }
  constexpr bool operator<(StrongId o) const { return value < o.value; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(value);
  }
};

struct OpTag {};
struct DeviceTag {};
using OpId = StrongId<OpTag>;
using DeviceId = StrongId<DeviceTag>;

}  // namespace placer

template <typename Tag>
struct std::hash<placer::StrongId<Tag>> {
  size_t operator()(placer::StrongId<Tag> id) const noexcept { return std::hash<int32_t>()(id.value); }
};
