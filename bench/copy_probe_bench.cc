// A fixed-size probe of what a copy between two cores costs right now
// (bench/results/copy_probe_cpu2.md). The executor's copy between cpu:0 and
// cpu:1 is a clone made by a thread on the destination's core of a tensor just
// written on the source's core; on the 2-core VM its cost moved from minute to
// minute (bench/results/rewarm_cpu2.md). This times the same thing in a few
// hundred milliseconds, so that it can be taken beside every measured round:
//   cross: a thread on core A writes a fresh tensor, a thread on core B clones it;
//   same:  the thread on core A clones the tensor it just wrote (the control);
//   handoff: the time from A's signal to B's waking (a condition variable, as
//            the executor's channel sleeps after spinning);
//   pingpong: a cache line passed back and forth between the two cores by
//            spinning threads, per round trip (where the two vCPUs sit now).
// Prints one line: median microseconds of each, and cross / same.
//
//   copy_probe_bench [--bytes N] [--rounds N] [--cores A,B] [--json]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "placer/graphs/stats.h"
#include "placer/runtime/runtime.h"

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// One producer and one consumer thread; the producer hands each tensor over
// through a mutex and condition variable.
struct Handoff {
  std::mutex mu;
  std::condition_variable cv;
  at::Tensor t;
  Clock::time_point sent;
  bool full = false, copied = false, done = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "copy_probe_bench: %s\nusage: copy_probe_bench [--bytes N] [--rounds N] [--cores A,B] [--json]\n", why);
  std::exit(2);
}
}  // namespace

int main(int argc, char** argv) {
  int64_t bytes = 4 << 20;
  int rounds = 300;
  int core_a = 0, core_b = 1;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("'" + a + "' needs a value").c_str());
      return argv[++i];
    };
    if (a == "--bytes") {
      bytes = std::atoll(next().c_str());
      if (bytes < 1024 || bytes > (int64_t{1} << 30)) usage("--bytes must be in [1024, 2^30]");
    } else if (a == "--rounds") {
      rounds = std::atoi(next().c_str());
      if (rounds < 5 || rounds > 100000) usage("--rounds must be in [5, 100000]");
    } else if (a == "--cores") {
      if (std::sscanf(next().c_str(), "%d,%d", &core_a, &core_b) != 2 || core_a < 0 || core_b < 0)
        usage("--cores takes two core numbers, A,B");
    } else if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("copy_probe_bench [--bytes N (4 MiB)] [--rounds N (300)] [--cores A,B (0,1)] [--json]\n");
      return 0;
    } else {
      usage(("unknown argument '" + a + "'").c_str());
    }
  }
  placer::configure_host_memory();  // the runtime's allocator settings
  at::set_num_threads(1);
  const int64_t n = bytes / 4;
  std::vector<double> cross, same, handoff;
  Handoff h;
  std::thread consumer([&] {
    pin(core_b);
    for (;;) {
      std::unique_lock<std::mutex> lk(h.mu);
      h.cv.wait(lk, [&] { return h.full || h.done; });
      if (!h.full) return;
      handoff.push_back(seconds_since(h.sent));
      at::Tensor src = std::move(h.t);
      h.full = false;
      lk.unlock();
      const auto t0 = Clock::now();
      at::Tensor dst = src.clone(at::MemoryFormat::Contiguous);
      cross.push_back(seconds_since(t0));
      src.reset();
      lk.lock();
      h.copied = true;
      h.cv.notify_all();
    }
  });
  pin(core_a);
  float v = 1.0f;
  for (int r = 0; r < rounds + 3; ++r) {  // 3 unrecorded warm-up rounds
    at::Tensor mine = at::empty({n}, at::kFloat).fill_(v += 1.0f);
    const auto t0 = Clock::now();
    at::Tensor copy = mine.clone(at::MemoryFormat::Contiguous);
    if (r >= 3) same.push_back(seconds_since(t0));
    copy.reset();
    at::Tensor theirs = at::empty({n}, at::kFloat).fill_(v += 1.0f);
    std::unique_lock<std::mutex> lk(h.mu);
    h.t = std::move(theirs);
    h.full = true;
    h.copied = false;
    h.sent = Clock::now();
    h.cv.notify_all();
    h.cv.wait(lk, [&] { return h.copied; });  // one copy at a time: the two clones never overlap
  }
  {
    std::lock_guard<std::mutex> lk(h.mu);
    h.done = true;
  }
  h.cv.notify_all();
  consumer.join();
  cross.erase(cross.begin(), cross.begin() + std::min<size_t>(3, cross.size()));
  handoff.erase(handoff.begin(), handoff.begin() + std::min<size_t>(3, handoff.size()));
  const double rtt = placer::cache_line_round_trip_s(core_a, core_b, 20, 1000);
  const double pp = rtt > 0 ? rtt * 1e9 : -1;  // -1: not readable (equal cores, no pinning)
  const double c = placer::quantile(cross, 0.5) * 1e6, s = placer::quantile(same, 0.5) * 1e6,
               w = placer::quantile(handoff, 0.5) * 1e6;
  if (json)
    std::printf(
        "{\"bytes\": %lld, \"rounds\": %d, \"cross_us\": %.2f, \"same_us\": %.2f, \"handoff_us\": %.2f, "
        "\"cross_over_same\": %.4f, \"pingpong_ns\": %.1f}\n",
        static_cast<long long>(bytes), rounds, c, s, w, s > 0 ? c / s : 0.0, pp);
  else
    std::printf(
        "%lld bytes, cores %d -> %d, %d rounds: cross %.1f us, same %.1f us (cross/same %.3f), handoff %.1f us, "
        "cache-line round trip %.0f ns\n",
        static_cast<long long>(bytes), core_a, core_b, rounds, c, s, s > 0 ? c / s : 0.0, w, pp);
  return 0;
}
