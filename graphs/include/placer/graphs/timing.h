// Wall-clock helpers shared by every layer.
#pragma once

#include <chrono>

namespace placer {

using Clock = std::chrono::steady_clock;

// Seconds elapsed since t (steady clock).
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace placer
