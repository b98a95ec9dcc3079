// Shared by the two ends of the worker protocol (workers.cc: the pool,
// worker.cc: `placer worker`): message names, the placement encoding, the
// problem key, and a waker for zmq_poll. docs/workers.md describes the wire.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "placer/runtime/runtime.h"

#include "placer/graphs/placement.h"

namespace placer::service::wire {

using Clock = std::chrono::steady_clock;

// Every message starts with the protocol version frame, then a command.
constexpr std::string_view kVersion = "PLW1";
constexpr std::string_view kReady = "READY";            // worker: name, devices, slots, heartbeat_ms
constexpr std::string_view kHeartbeat = "HEARTBEAT";    // both ways
constexpr std::string_view kProblem = "PROBLEM";        // pool: key, mode, warmup, steps, graph, cluster, profile
constexpr std::string_view kTask = "TASK";              // pool: task id, key, placement
constexpr std::string_view kResult = "RESULT";          // worker: task id, step result JSON
constexpr std::string_view kError = "ERROR";            // worker: task id, message
constexpr std::string_view kNeed = "NEED";              // worker: task id, key (problem not held)
constexpr std::string_view kBye = "BYE";                // worker: leaving
constexpr std::string_view kDisconnect = "DISCONNECT";  // pool: unknown worker, register again
constexpr size_t kProblemFrames = 6;                    // mode .. profile
// A HEARTBEAT from the pool carries its interval in ms (a frame after the command), so a worker with a
// shorter one waits for the pool's, not its own. Intervals above this are taken as this.
constexpr int64_t kMaxWorkerHeartbeatMs = 60'000;

// Wakes a zmq_poll from another thread: a pipe the poll also watches.
class Waker {
 public:
  Waker() {
    if (pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("workers: pipe2 failed");
  }
  ~Waker() {
    close(fds_[0]);
    close(fds_[1]);
  }
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  void wake() {
    const char c = 1;
    [[maybe_unused]] ssize_t n = write(fds_[1], &c, 1);  // a full pipe is awake already
  }
  void drain() {
    char buf[256];
    while (read(fds_[0], buf, sizeof buf) > 0) {}
  }
  int fd() const { return fds_[0]; }

 private:
  int fds_[2];
};

inline std::string join(const std::vector<std::string>& parts, const char* sep = ",") {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

inline std::vector<std::string> split(const std::string& text, char sep = ',') {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

inline bool parse_int(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// The PROBLEM frame `measure`: "MIN MAX TARGET BUDGET MIN_TIME REWARM LOCKSTEP TIMEOUT SEED" (runtime.h's
// MeasureOptions: measured_steps, max_steps, target_halfwidth, budget_s, min_time_s, rewarm_steps, lockstep,
// timeout_s, seed; the warm-up has a frame of its own). The content key covers them all, so environments that
// measure differently never share a worker's problem. False for anything else.
inline std::string measure_frame(const MeasureOptions& m) {
  char b[256];
  std::snprintf(b, sizeof b, "%d %d %.17g %.17g %.17g %d %d %.17g %llu", m.measured_steps, m.max_steps,
                m.target_halfwidth, m.budget_s, m.min_time_s, m.rewarm_steps, m.lockstep ? 1 : 0, m.timeout_s,
                static_cast<unsigned long long>(m.seed));
  return b;
}
inline bool parse_measure_frame(const std::string& text, MeasureOptions* m) {
  if (text.size() > 240) return false;
  char tail = 0;
  int lockstep = 0;
  unsigned long long seed = 0;
  const int n = std::sscanf(text.c_str(), "%d %d %lf %lf %lf %d %d %lf %llu %c", &m->measured_steps, &m->max_steps,
                            &m->target_halfwidth, &m->budget_s, &m->min_time_s, &m->rewarm_steps, &lockstep,
                            &m->timeout_s, &seed, &tail);
  if (n != 9 || (lockstep != 0 && lockstep != 1)) return false;
  m->lockstep = lockstep == 1;
  m->seed = seed;
  return true;
}

// 128-bit content key over the frames (length-prefixed): a worker caches
// problems by it, across pools, so equal content must give equal keys.
inline std::string content_key(const std::vector<std::string>& frames) {
  uint64_t a = 14695981039346656037ull, b = 0x9e3779b97f4a7c15ull;
  auto add = [&](unsigned char c) {
    a = (a ^ c) * 1099511628211ull;  // FNV-1a
    b = ((b << 5) | (b >> 59)) ^ c;  // rotate-xor-multiply
    b *= 0xff51afd7ed558ccdull;
  };
  for (const auto& f : frames) {
    const uint64_t n = f.size();
    for (int i = 0; i < 8; ++i) add(static_cast<unsigned char>(n >> (8 * i)));
    for (char c : f) add(static_cast<unsigned char>(c));
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

// Placements on the wire: one little-endian int32 device index per op.
inline std::string encode_placement(const Placement& p) {
  std::string out(p.device_of.size() * 4, '\0');
  for (size_t i = 0; i < p.device_of.size(); ++i) {
    const uint32_t v = static_cast<uint32_t>(p.device_of[i].value);
    for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<char>((v >> (8 * k)) & 0xff);
  }
  return out;
}

inline Placement decode_placement(const std::string& bytes) {
  Placement p;
  p.device_of.reserve(bytes.size() / 4);
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + k])) << (8 * k);
    p.device_of.push_back(DeviceId(static_cast<int32_t>(v)));
  }
  return p;
}

// zmq::poll over a socket and a waker; false when a signal interrupted it
// (the caller loops again), other errors thrown.
inline bool poll_interruptible(zmq::pollitem_t (&items)[2], std::chrono::milliseconds timeout) {
  try {
    zmq::poll(items, 2, timeout);
    return true;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
}

inline std::string ms_text(double seconds) { return std::to_string(static_cast<int64_t>(seconds * 1000)) + " ms"; }

}  // namespace placer::service::wire
