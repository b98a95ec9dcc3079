// The cross-core probe (runtime.h): the measurement protocol reads it (StepResult::core_rtt_s).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "internal.h"
#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

namespace placer {
namespace {
bool pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}
}  // namespace

double cache_line_round_trip_s(int core_a, int core_b, int batches, int trips_per_batch) {
  using Clock = std::chrono::steady_clock;
  if (core_a < 0 || core_b < 0 || core_a == core_b || batches < 1 || trips_per_batch < 1) return -1;
  // Two threads that spin without yielding each need a core: where pinning
  // fails, or they end up sharing one, each trip waits for the scheduler. The
  // whole probe is bounded (kDeadline; about 0.1-0.5 ms when it works) and
  // says -1 then.
  constexpr double kDeadline = 0.05;
  std::atomic<int> ball{0};
  std::atomic<bool> stop{false};
  const int total = batches * trips_per_batch;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kDeadline));
  // Spins until the ball reads `want`; false when the probe was stopped or ran past its deadline.
  auto wait_for = [&](int want) {
    for (uint32_t spins = 1;; ++spins) {
      if (ball.load(std::memory_order_acquire) == want) return true;
      if (spins % 1024 == 0 && (stop.load(std::memory_order_relaxed) || Clock::now() > deadline)) {
        stop.store(true, std::memory_order_relaxed);
        return false;
      }
    }
  };
  std::thread other([&] {
    if (!pin_to(core_b)) stop.store(true);
    for (int i = 0; i < total && !stop.load(std::memory_order_relaxed); ++i) {
      if (!wait_for(2 * i + 1)) return;
      ball.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::vector<double> per_trip;
  std::thread self([&] {  // a thread of its own: the caller's affinity stays as it was
    if (!pin_to(core_a)) stop.store(true);
    for (int b = 0; b < batches && !stop.load(std::memory_order_relaxed); ++b) {
      const auto t0 = Clock::now();
      for (int j = 0; j < trips_per_batch; ++j) {
        const int i = b * trips_per_batch + j;
        ball.store(2 * i + 1, std::memory_order_release);
        if (!wait_for(2 * i + 2)) return;
      }
      per_trip.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / trips_per_batch);
    }
  });
  self.join();
  other.join();
  if (stop.load() || per_trip.size() != static_cast<size_t>(batches)) return -1;
  return quantile(per_trip, 0.5);
}

std::vector<int> probe_cores(const Executor& ex) {
  std::vector<int> cores;
  for (const DeviceCtx& d : ex.devices())
    if (d.kind == DeviceKind::Cpu && !d.cores.empty() && cores.size() < 2) cores.push_back(d.cores.front());
  if (cores.size() < 2) cores.clear();
  return cores;
}

double read_core_probe(const Executor& ex) {
  const std::vector<int> cores = probe_cores(ex);
  if (cores.empty()) return -1;
  // Idle executor threads spin (PLACER_SPIN_US) before they sleep; at most 2 ms is waited for.
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(ex.spin_s(), 2e-3) + 200e-6));
  return cache_line_round_trip_s(cores[0], cores[1]);
}

}  // namespace placer
