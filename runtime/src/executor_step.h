// The executor's per-step and per-worker state (executor.cc runs steps;
// executor_times.cc keeps their op times and timeline). Internal to the runtime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "internal.h"

namespace placer {

struct Executor::Worker {
  int32_t id = 0;
  int32_t device = 0;  // device workers: the device; channels: the source
  int32_t to = -1;     // channels: the destination
  std::string lane;
  std::mutex mu;
  std::condition_variable cv;
  // A device's ready ops, lowest id first (copies it makes itself before them). A channel's copies in
  // `fifo`, first in, first out: the link model of the simulator, the list schedulers and the ILP (by
  // transfer index, a copy queued later left first whenever its producer's id was lower).
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> queue;
  std::deque<int32_t> fifo;
  std::vector<int32_t> held;       // take_item: queued ops the gate holds back
  std::atomic<int32_t> queued{0};  // queue.size(), readable without the lock
  bool stop = false;
  std::vector<TimelineEvent> events;
  std::thread thread;
};

struct Executor::Step {
  Step(Session& run_session, int32_t devices, bool traced);

  const KernelPlan* plan = nullptr;
  Session* session = nullptr;
  std::vector<at::Tensor> slots;
  std::unique_ptr<std::atomic<int32_t>[]> refs;
  std::unique_ptr<std::atomic<int32_t>[]> deps;
  std::vector<ForwardState> states;
  std::atomic<int64_t> outstanding{0};
  std::atomic<int32_t> ops_done{0};
  std::atomic<bool> aborted{false};
  std::mutex mu;
  std::condition_variable cv;
  StepOutcome outcome;  // status fields under mu
  std::unique_ptr<std::atomic<int64_t>[]> live;
  std::unique_ptr<std::atomic<int64_t>[]> peak;
  std::vector<int64_t> resident_at_start;   // per device: the session's params and inputs when the step began
  std::vector<int64_t> allocated_at_start;  // per device: its allocator's bytes then (-1: not read, or no allocator)
  std::vector<double> busy;  // per device, written only by its worker
  MicrobatchGate gate;       // a pipelined mini-batch under 1F1B; its device's worker drives each device's part
  std::atomic<int64_t> transfer_bytes{0};
  Clock::time_point start;
  std::atomic<bool> started{false};
  Clock::time_point first_op;  // set by the first op to start
  Clock::time_point end;       // set when the last item finishes (under mu)
  bool timeline = false;
};

}  // namespace placer
