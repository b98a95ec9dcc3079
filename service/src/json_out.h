// Replies and job records are written with the one JSON writer (graphs/json_writer.h).
#pragma once

#include "placer/graphs/json_writer.h"

namespace placer::service {

using JsonOut = placer::JsonWriter;

}  // namespace placer::service
