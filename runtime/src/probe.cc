// The cross-core probe (runtime.h): the measurement protocol reads it (StepResult::core_rtt_s).
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "internal.h"
#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

namespace placer {
namespace {
void pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort, as the executor's own pinning
}
}  // namespace

double cache_line_round_trip_s(int core_a, int core_b, int batches, int trips_per_batch) {
  using Clock = std::chrono::steady_clock;
  std::atomic<int> ball{0};
  const int total = batches * trips_per_batch;
  std::thread other([&] {
    pin_to(core_b);
    for (int i = 0; i < total; ++i) {
      while (ball.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      ball.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::vector<double> per_trip;
  std::thread self([&] {  // a thread of its own: the caller's affinity stays as it was
    pin_to(core_a);
    for (int b = 0; b < batches; ++b) {
      const auto t0 = Clock::now();
      for (int j = 0; j < trips_per_batch; ++j) {
        const int i = b * trips_per_batch + j;
        ball.store(2 * i + 1, std::memory_order_release);
        while (ball.load(std::memory_order_acquire) != 2 * i + 2) {
        }
      }
      per_trip.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / trips_per_batch);
    }
  });
  self.join();
  other.join();
  return quantile(per_trip, 0.5);
}

double read_core_probe(const Executor& ex) {
  std::vector<int> cores;
  for (const DeviceCtx& d : ex.devices())
    if (d.kind == DeviceKind::Cpu && !d.cores.empty()) cores.push_back(d.cores.front());
  if (cores.size() < 2) return -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(ex.spin_s() + 200e-6));
  return cache_line_round_trip_s(cores[0], cores[1]);
}

}  // namespace placer
