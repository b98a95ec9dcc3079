// The WorkerPool with in-process workers (run_worker threads) and with fake
// workers speaking the wire protocol by hand: results equal to local
// evaluation, exactly one result per placement, re-sends after a worker goes
// silent, late and duplicate replies ignored, errors as clear exceptions.
// Assertions never depend on timing: a worker that a loaded machine makes
// look lost only causes extra re-sends, never a different result.
#include "placer/service/workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "../env/remote_helpers.h"
#include "../../service/src/workers_wire.h"
#include "placer/env/presets.h"
#include "placer/graphs/serialize.h"

namespace placer::service {
namespace {

using namespace std::chrono_literals;

std::vector<Placement> random_placements(const Graph& g, int count, uint64_t seed) {
  return testing::random_placements(g, 2, count, seed);
}

WorkerPoolOptions fast_pool() {
  WorkerPoolOptions o;
  o.heartbeat_ms = 200;
  o.liveness = 3;
  o.worker_wait_s = 30;  // generous: only the tests about missing workers lower it
  return o;
}

// A run_worker thread; stops (saying goodbye) when destroyed.
class InProcessWorker {
 public:
  InProcessWorker(const std::string& endpoint, const std::string& name, int threads = 1, std::string devices = "cpu:2",
                  int problem_cache = 4)
      : InProcessWorker(endpoint, options(name, threads, std::move(devices), problem_cache)) {}
  InProcessWorker(const std::string& endpoint, const WorkerOptions& o) {
    thread_ = std::thread([this, endpoint, o] { stats_ = run_worker(endpoint, o, stop_); });
  }
  static WorkerOptions options(const std::string& name, int threads = 1, std::string devices = "cpu:2",
                               int problem_cache = 4) {
    WorkerOptions o;
    o.problem_cache = problem_cache;
    o.name = name;
    o.threads = threads;
    o.heartbeat_ms = 200;
    o.devices = std::move(devices);
    return o;
  }
  ~InProcessWorker() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  WorkerStats stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return stats_;
  }

 private:
  std::atomic<bool> stop_{false};
  WorkerStats stats_;
  std::thread thread_;
};

// A worker driven by hand: a DEALER socket and the protocol's frames.
class FakeWorker {
 public:
  // `registered`: says READY first (else a peer the pool does not know).
  FakeWorker(const std::string& endpoint, const std::string& name, bool registered = true)
      : name_(name), socket_(ctx_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
    if (registered) ready();
  }
  void ready() { send({"PLW1", "READY", name_, "cpu:0,cpu:1", "1", "200"}); }
  void send(const std::vector<std::string>& frames) {
    std::vector<zmq::const_buffer> parts;
    for (const auto& f : frames) parts.push_back(zmq::buffer(f));
    zmq::send_multipart(socket_, parts);
  }
  // The next message whose command is `command` (heartbeats and others
  // skipped), or empty. Meanwhile it heartbeats, and registers again if a
  // stalled machine made the pool forget it, unless `command` is DISCONNECT.
  std::vector<std::string> next(const std::string& command, std::chrono::milliseconds timeout = 30s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      zmq::pollitem_t items[] = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 1, 50ms);
      if (command != "DISCONNECT" && std::chrono::steady_clock::now() - last_heartbeat_ > 100ms) {
        heartbeat();
        last_heartbeat_ = std::chrono::steady_clock::now();
      }
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(socket_, std::back_inserter(parts))) continue;
      if (command != "DISCONNECT" && parts.size() >= 2 && parts[1].to_string() == "DISCONNECT") ready();
      if (parts.size() >= 2 && parts[1].to_string() == command) {
        std::vector<std::string> out;
        for (auto& p : parts) out.push_back(p.to_string());
        return out;
      }
    }
    return {};
  }
  void heartbeat() { send({"PLW1", "HEARTBEAT"}); }

 private:
  std::string name_;
  zmq::context_t ctx_;
  zmq::socket_t socket_;
  std::chrono::steady_clock::time_point last_heartbeat_{};
};

// A pool with one fake worker registered, and a problem prepared: the small
// MLP on k80x2, simulated.
struct PoolAndFake {
  explicit PoolAndFake(const std::string& name) : pool(fast_pool()), fake(pool.endpoint(), name) {
    EXPECT_EQ(pool.wait_for_workers(1, 30), 1);
    problem = pool.prepare(graph, cluster, RemoteSettings{});
  }
  WorkerPool pool;
  FakeWorker fake;
  Graph graph = testing::small_mlp();
  Cluster cluster = cluster_preset("k80x2");
  std::shared_ptr<const RemoteProblem> problem;
};

std::string result_json(double step_s) {
  StepResult r;
  r.step_s = step_s;
  return step_result_to_json(r);
}

TEST(WorkerPool, BindsAnyPortAndFailsClearlyWithoutWorkers) {
  WorkerPoolOptions o = fast_pool();
  o.worker_wait_s = 0.3;
  WorkerPool pool(o);
  EXPECT_EQ(pool.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  EXPECT_NE(pool.endpoint(), "tcp://127.0.0.1:*");
  const Graph g = testing::small_mlp();
  RemoteSettings s;
  auto problem = pool.prepare(g, cluster_preset("k80x2"), s);
  try {
    pool.evaluate(*problem, random_placements(g, 2, 1));
    FAIL() << "expected RemoteError";
  } catch (const RemoteError& e) {
    EXPECT_NE(std::string(e.what()).find("no worker able to evaluate graph 'mlp'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("placer worker --connect " + pool.endpoint()), std::string::npos) << e.what();
  }
  EXPECT_THROW(WorkerPool(WorkerPoolOptions{"tcp://999.1.1.1:1"}), InputError);
}

TEST(WorkerPool, SimulatedResultsEqualLocalOnesExactlyOnce) {
  WorkerPool pool(fast_pool());
  InProcessWorker a(pool.endpoint(), "a"), b(pool.endpoint(), "b", 2);
  ASSERT_EQ(pool.wait_for_workers(2, 30), 2);
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  auto remote = std::shared_ptr<WorkerPool>(&pool, [](WorkerPool*) {});
  EnvOptions ro;
  ro.remote = remote;
  Environment local(g, c), far(g, c, ro);
  auto batch = random_placements(g, 40, 11);
  batch.push_back(batch[3]);  // a repeat: evaluated once
  const auto want = local.evaluate_batch(batch);
  const auto got = far.evaluate_batch(batch);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(step_result_to_json(got[i].result), step_result_to_json(want[i].result)) << i;
    EXPECT_EQ(got[i].reward, want[i].reward) << i;
  }
  const auto s = pool.stats();
  EXPECT_EQ(s.results, far.stats().remote);
  EXPECT_EQ(s.results + far.stats().cache_hits, static_cast<int64_t>(batch.size()));
  EXPECT_GE(s.problems_sent, 1);
  EXPECT_LE(s.problems_sent, s.workers_joined);  // once per worker registration
}

TEST(WorkerPool, ConcurrentBatchesFromSeveralThreads) {
  WorkerPool pool(fast_pool());
  InProcessWorker a(pool.endpoint(), "a", 2);
  ASSERT_EQ(pool.wait_for_workers(1, 30), 1);
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  Environment local(g, c);
  auto problem = pool.prepare(g, c, RemoteSettings{});
  std::vector<std::future<std::vector<StepResult>>> runs;
  std::vector<std::vector<Placement>> batches;
  for (int t = 0; t < 4; ++t) batches.push_back(random_placements(g, 10, 100 + t));
  for (int t = 0; t < 4; ++t)
    runs.push_back(std::async(std::launch::async, [&, t] { return pool.evaluate(*problem, batches[t]); }));
  for (int t = 0; t < 4; ++t) {
    const auto results = runs[t].get();
    ASSERT_EQ(results.size(), 10u);
    for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].step_s, local.simulate(batches[t][i]).step_s);
  }
  EXPECT_EQ(pool.stats().results, 40);
}

TEST(WorkerPool, ResendsTheTasksOfASilentWorkerAndIgnoresItsLateReply) {
  PoolAndFake setup("silent");
  WorkerPool& pool = setup.pool;
  FakeWorker& silent = setup.fake;
  const auto batch = random_placements(setup.graph, 6, 21);
  auto run = std::async(std::launch::async, [&] { return pool.evaluate(*setup.problem, batch); });
  // It takes a task (after its problem), then says nothing more: no result, no heartbeat.
  ASSERT_FALSE(silent.next("PROBLEM").empty());
  const auto task = silent.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  InProcessWorker good(pool.endpoint(), "good");
  const auto results = run.get();
  Environment local(setup.graph, setup.cluster);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(results[i].step_s, local.simulate(batch[i]).step_s) << i;
  auto s = pool.stats();
  EXPECT_GE(s.workers_lost, 1);
  EXPECT_GE(s.resent, 1);
  EXPECT_EQ(s.results, 6);
  // Its answer comes late: ignored (the placement counted once), and the pool
  // tells the unknown worker to register again.
  silent.send({"PLW1", "RESULT", task[2], result_json(999.0)});
  EXPECT_FALSE(silent.next("DISCONNECT").empty());
  s = pool.stats();
  EXPECT_EQ(s.results, 6);
  EXPECT_GE(s.ignored, 1);
}

TEST(WorkerPool, DuplicateRepliesCountOnce) {
  PoolAndFake setup("twice");
  WorkerPool& pool = setup.pool;
  FakeWorker& fake = setup.fake;
  const auto batch = random_placements(setup.graph, 3, 5);
  auto run = std::async(std::launch::async, [&] { return pool.evaluate(*setup.problem, batch); });
  uint64_t first = 0;
  for (int k = 0; k < 3; ++k) {
    const auto task = fake.next("TASK");
    ASSERT_EQ(task.size(), 5u);
    if (k == 0) first = std::stoull(task[2]);
    const double step = 2.0 + static_cast<double>(std::stoull(task[2]) - first);  // ids in batch order
    fake.send({"PLW1", "RESULT", task[2], result_json(step)});
    fake.send({"PLW1", "RESULT", task[2], result_json(-1.0)});
  }
  const auto results = run.get();
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].step_s, 2.0 + static_cast<double>(i));
  // The duplicates of the last task may still be on their way.
  for (int n = 0; n < 100 && pool.stats().ignored < 3; ++n) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(pool.stats().ignored, 3);
  EXPECT_EQ(pool.stats().results, 3);
}

TEST(WorkerPool, AWorkerThatDroppedTheProblemGetsItAgain) {
  PoolAndFake setup("forgetful");
  const auto batch = random_placements(setup.graph, 1, 9);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  FakeWorker& fake = setup.fake;
  const auto problem = fake.next("PROBLEM");
  ASSERT_EQ(problem.size(), 9u);
  const auto task = fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  EXPECT_EQ(task[3], problem[2]);  // the task names its problem by key
  fake.send({"PLW1", "NEED", task[2], task[3]});
  const auto again = fake.next("PROBLEM");
  ASSERT_EQ(again.size(), 9u);
  EXPECT_EQ(again[2], problem[2]);
  const auto task_again = fake.next("TASK");
  ASSERT_EQ(task_again.size(), 5u);
  EXPECT_EQ(task_again[2], task[2]);  // the same task id
  fake.send({"PLW1", "RESULT", task[2], result_json(3.0)});
  EXPECT_EQ(run.get()[0].step_s, 3.0);
  EXPECT_EQ(setup.pool.stats().problems_sent, 2);
}

TEST(WorkerPool, AWorkerKeepingOneProblemAsksForTheOtherAgain) {
  WorkerPool pool(fast_pool());
  InProcessWorker w(pool.endpoint(), "small-cache", 1, "cpu:2", /*problem_cache=*/1);
  ASSERT_EQ(pool.wait_for_workers(1, 30), 1);
  const Graph g = testing::small_mlp();
  const Cluster two = cluster_preset("k80x2"), four = cluster_preset("k80x4");
  auto p2 = pool.prepare(g, two, RemoteSettings{});
  auto p4 = pool.prepare(g, four, RemoteSettings{});
  Environment local2(g, two), local4(g, four);
  const auto batch = random_placements(g, 3, 17);  // devices 0 and 1: valid on both clusters
  for (int round = 0; round < 2; ++round) {
    const auto r2 = pool.evaluate(*p2, batch);
    const auto r4 = pool.evaluate(*p4, batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(r2[i].step_s, local2.simulate(batch[i]).step_s);
      EXPECT_EQ(r4[i].step_s, local4.simulate(batch[i]).step_s);
    }
  }
  // Each problem was sent once, then again after the worker had dropped it for the other one.
  EXPECT_GE(pool.stats().problems_sent, 3);
  EXPECT_EQ(pool.stats().results, 12);
}

TEST(WorkerPool, AWorkersErrorFailsTheBatchWithItsMessage) {
  PoolAndFake setup("grumpy");
  const auto batch = random_placements(setup.graph, 2, 5);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  FakeWorker& fake = setup.fake;
  const auto task = fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  fake.send({"PLW1", "ERROR", task[2], "the GPU caught fire"});
  try {
    run.get();
    FAIL() << "expected RemoteError";
  } catch (const RemoteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker 'grumpy' (cpu:0,cpu:1) cannot evaluate graph 'mlp'"), std::string::npos) << what;
    EXPECT_NE(what.find("the GPU caught fire"), std::string::npos) << what;
  }
}

// A worker answering garbage is dropped and its task goes to another: one broken worker does not fail the batch.
TEST(WorkerPool, AMalformedResultSendsTheTaskToAnotherWorker) {
  PoolAndFake setup("garbled");
  WorkerPool& pool = setup.pool;
  const auto batch = random_placements(setup.graph, 3, 7);
  auto run = std::async(std::launch::async, [&] { return pool.evaluate(*setup.problem, batch); });
  const auto task = setup.fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  setup.fake.send({"PLW1", "RESULT", task[2], "{\"step_s\": \"fast\"}"});
  InProcessWorker good(pool.endpoint(), "good");
  const auto results = run.get();
  Environment local(setup.graph, setup.cluster);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(results[i].step_s, local.simulate(batch[i]).step_s) << i;
  const WorkerPoolStats s = pool.stats();
  EXPECT_GE(s.workers_lost, 1);
  EXPECT_GE(s.resent, 1);
  EXPECT_EQ(s.results, 3);
}

// ... but a placement that only gets garbage fails its batch after max_attempts, saying why.
TEST(WorkerPool, OnlyMalformedResultsFailTheBatchSayingSo) {
  PoolAndFake setup("garbled");
  const auto batch = random_placements(setup.graph, 1, 7);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  for (int k = 0; k < 20 && run.wait_for(0ms) != std::future_status::ready; ++k) {
    const auto task = setup.fake.next("TASK", 5s);  // registers again when told to
    if (task.size() == 5u) setup.fake.send({"PLW1", "RESULT", task[2], "not json"});
  }
  try {
    run.get();
    FAIL() << "expected RemoteError";
  } catch (const RemoteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("lost with 4 workers in a row"), std::string::npos) << what;
    EXPECT_NE(what.find("sent a malformed result"), std::string::npos) << what;
  }
}

// The PROBLEM frame carries the whole measurement protocol (a worker measured with its defaults for what it did
// not get: the per-step timeout, the least time, re-warming, the inputs' seed), and problems that measure
// differently get different keys.
TEST(WorkerPool, AProblemCarriesTheWholeMeasurementProtocol) {
  PoolAndFake setup("reader");
  RemoteSettings settings;
  settings.mode = RewardMode::Measured;
  settings.measure.timeout_s = 7.5;
  settings.measure.min_time_s = 0.25;
  settings.measure.rewarm_steps = 2;
  settings.measure.lockstep = true;
  settings.measure.seed = 18446744073709551615ull;
  const Cluster two = parse_device_list("cpu:0,cpu:1");
  // The PROBLEM frames of a batch on `problem`, its tasks answered.
  auto problem_frames = [&](const RemoteProblem& problem) {
    auto run = std::async(std::launch::async,
                          [&] { return setup.pool.evaluate(problem, random_placements(setup.graph, 2, 1)); });
    const auto frames = setup.fake.next("PROBLEM");
    while (run.wait_for(0ms) != std::future_status::ready) {
      const auto task = setup.fake.next("TASK", 1s);
      if (task.size() == 5u) setup.fake.send({"PLW1", "RESULT", task[2], result_json(1.0)});
    }
    EXPECT_EQ(run.get().size(), 2u);
    return frames;
  };
  const auto frames = problem_frames(*setup.pool.prepare(setup.graph, two, settings));
  ASSERT_EQ(frames.size(), 9u);  // PLW1 PROBLEM key mode warmup measure graph cluster profile
  MeasureOptions got;
  ASSERT_TRUE(wire::parse_measure_frame(frames[5], &got)) << frames[5];
  EXPECT_EQ(got.measured_steps, settings.measure.measured_steps);
  EXPECT_EQ(got.max_steps, settings.measure.max_steps);
  EXPECT_EQ(got.target_halfwidth, settings.measure.target_halfwidth);
  EXPECT_EQ(got.timeout_s, 7.5);
  EXPECT_EQ(got.min_time_s, 0.25);
  EXPECT_EQ(got.rewarm_steps, 2);
  EXPECT_TRUE(got.lockstep);
  EXPECT_EQ(got.seed, settings.measure.seed);
  settings.measure.timeout_s = 8;
  const auto second = problem_frames(*setup.pool.prepare(setup.graph, two, settings));
  ASSERT_EQ(second.size(), 9u);
  EXPECT_NE(second[2], frames[2]);                                     // another key
  EXPECT_FALSE(wire::parse_measure_frame("5 30 0.02 0", &got));              // the four-field frame of before
  EXPECT_FALSE(wire::parse_measure_frame("5 30 0.02 0 0 0 2 120 0", &got));  // lockstep is 0 or 1
}

TEST(WorkerPool, MeasuredTasksGoOnlyToWorkersWithTheDevices) {
  WorkerPoolOptions o = fast_pool();
  o.worker_wait_s = 0.5;
  WorkerPool pool(o);
  InProcessWorker small(pool.endpoint(), "one-cpu", 1, "cpu:1");
  ASSERT_EQ(pool.wait_for_workers(1, 30), 1);
  const Graph g = testing::small_mlp();
  const Cluster cpus = parse_device_list("cpu:2");
  RemoteSettings s;
  s.mode = RewardMode::Measured;
  s.measure.warmup_steps = 0;
  s.measure.measured_steps = 1;
  s.measure.max_steps = 1;
  auto problem = pool.prepare(g, cpus, s);
  const std::vector<Placement> one = {single_device(g, DeviceId(1))};
  try {
    pool.evaluate(*problem, one);
    FAIL() << "expected RemoteError";
  } catch (const RemoteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("measured tasks need a worker with devices cpu:0,cpu:1"), std::string::npos) << what;
    EXPECT_NE(what.find("'one-cpu' (cpu:0)"), std::string::npos) << what;
  }
  // A worker with both devices measures it for real.
  InProcessWorker two(pool.endpoint(), "two-cpus", 1, "cpu:2");
  ASSERT_EQ(pool.wait_for_workers(2, 30), 2);
  const auto results = pool.evaluate(*problem, one);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_GT(results[0].step_s, 0.0);
  EXPECT_EQ(results[0].samples_s.size(), 1u);
}

TEST(WorkerPool, AWorkerLeavingSaysGoodbye) {
  WorkerPool pool(fast_pool());
  {
    InProcessWorker a(pool.endpoint(), "brief");
    ASSERT_EQ(pool.wait_for_workers(1, 30), 1);
  }
  for (int n = 0; n < 200 && !pool.workers().empty(); ++n) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(pool.workers().empty());
  EXPECT_GE(pool.stats().workers_left + pool.stats().workers_lost, 1);
}

}  // namespace
}  // namespace placer::service

namespace placer::service {
namespace {

// Tasks that waited behind a busy worker: when it leaves, they wait worker_wait_s for another from then,
// not from when they were queued (they failed at once, "no worker able ... (live workers: none)").
TEST(WorkerPool, TasksWaitForANewWorkerFromWhenTheLastOneLeft) {
  WorkerPoolOptions o = fast_pool();
  o.worker_wait_s = 3;
  o.prefetch = 0;
  WorkerPool pool(o);
  const Graph graph = testing::small_mlp();
  const Cluster cluster = cluster_preset("k80x2");
  const auto problem = pool.prepare(graph, cluster, RemoteSettings{});
  const auto batch = random_placements(graph, 3, 4);
  // Queued before any worker: they wait (as starved) until the first joins.
  auto run = std::async(std::launch::async, [&] { return pool.evaluate(*problem, batch); });
  std::this_thread::sleep_for(500ms);
  FakeWorker busy(pool.endpoint(), "busy");
  ASSERT_EQ(busy.next("TASK").size(), 5u);
  busy.next("NOTHING", 4000ms);  // holds its task, heartbeating, past worker_wait_s
  busy.send({"PLW1", "BYE"});
  InProcessWorker next(pool.endpoint(), "next");
  const auto results = run.get();
  Environment local(graph, cluster);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(results[i].step_s, local.simulate(batch[i]).step_s) << i;
}

// A worker with a shorter heartbeat than the pool's gave up on the pool during every task longer than
// its own liveness x interval (0 results, 19 reconnects): it waits for the pool's interval, which the
// pool sends at registration and in every heartbeat.
TEST(WorkerPool, AWorkerWaitsForThePoolsHeartbeatNotItsOwn) {
  WorkerPoolOptions o = fast_pool();
  o.heartbeat_ms = 1500;
  WorkerPool pool(o);
  WorkerOptions w = InProcessWorker::options("quick");
  w.heartbeat_ms = 100;  // gives up after 300 ms of silence on its own
  w.slow_ms = 700;
  InProcessWorker quick(pool.endpoint(), w);
  ASSERT_EQ(pool.wait_for_workers(1, 30), 1);
  const Graph graph = testing::small_mlp();
  const Cluster cluster = cluster_preset("k80x2");
  const auto problem = pool.prepare(graph, cluster, RemoteSettings{});
  const auto batch = random_placements(graph, 3, 8);
  const auto results = pool.evaluate(*problem, batch);
  EXPECT_EQ(results.size(), 3u);
  EXPECT_EQ(quick.stop().reconnects, 0);
  EXPECT_EQ(pool.stats().workers_lost, 0);
}

// A worker's heartbeat interval is capped (1e8 ms made a silent worker's patience 83 hours).
TEST(WorkerPool, AWorkersHeartbeatIntervalIsCapped) {
  std::vector<std::string> log;
  std::mutex mu;
  WorkerPoolOptions o = fast_pool();
  o.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(line);
  };
  WorkerPool pool(o);
  FakeWorker slow(pool.endpoint(), "slow");
  slow.send({"PLW1", "READY", "slow", "cpu:0", "1", "100000000"});
  bool capped = false;
  for (int n = 0; n < 200 && !capped; ++n) {
    std::this_thread::sleep_for(20ms);
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& line : log) capped = capped || line.find("taken as 60000 ms") != std::string::npos;
  }
  EXPECT_TRUE(capped);
}


// Waits until the pool has ignored `count` more messages than `before` (false after 3 s).
bool ignored_more(const WorkerPool& pool, int64_t before, int64_t count) {
  for (int n = 0; n < 150; ++n) {
    if (pool.stats().ignored >= before + count) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Only the worker that holds a task answers it: a RESULT from a peer that never registered (one of another
// pool, or a stray script sending RESULT 1..64) for a task sent to another or still queued is ignored, and
// task ids are not 1, 2, ... in every pool.
TEST(WorkerPool, OnlyTheWorkerHoldingATaskAnswersIt) {
  PoolAndFake setup("holder");
  FakeWorker stray(setup.pool.endpoint(), "stray", /*registered=*/false);
  const auto batch = random_placements(setup.graph, 2, 3);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  const auto task = setup.fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  EXPECT_NE(task[2], "1");
  const int64_t before = setup.pool.stats().ignored;
  const uint64_t id = std::stoull(task[2]);
  for (uint64_t k : {id, id + 1}) stray.send({"PLW1", "RESULT", std::to_string(k), result_json(1e-7)});
  EXPECT_TRUE(ignored_more(setup.pool, before, 2));
  setup.fake.send({"PLW1", "RESULT", task[2], result_json(2.0)});
  for (int k = 0; k < 5 && run.wait_for(0ms) != std::future_status::ready; ++k) {
    const auto next = setup.fake.next("TASK", 2s);
    if (next.size() == 5u) setup.fake.send({"PLW1", "RESULT", next[2], result_json(2.0)});
  }
  for (const StepResult& r : run.get()) EXPECT_EQ(r.step_s, 2.0);
}

// ... and an ERROR from a peer that does not hold the task fails nothing.
TEST(WorkerPool, AnErrorFromAPeerNotHoldingTheTaskIsIgnored) {
  PoolAndFake setup("holder");
  FakeWorker stray(setup.pool.endpoint(), "stray", /*registered=*/false);
  const auto batch = random_placements(setup.graph, 1, 3);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  const auto task = setup.fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  const int64_t before = setup.pool.stats().ignored;
  stray.send({"PLW1", "ERROR", task[2], "not mine to say"});
  EXPECT_TRUE(ignored_more(setup.pool, before, 1));
  setup.fake.send({"PLW1", "RESULT", task[2], result_json(2.0)});
  EXPECT_EQ(run.get()[0].step_s, 2.0);
}

// A result with per-device figures for another number of devices than the problem's cluster is malformed: the
// worker is dropped and the task goes out again.
TEST(WorkerPool, AResultForAnotherNumberOfDevicesIsMalformed) {
  PoolAndFake setup("miscounted");
  const auto batch = random_placements(setup.graph, 1, 3);
  auto run = std::async(std::launch::async, [&] { return setup.pool.evaluate(*setup.problem, batch); });
  const auto task = setup.fake.next("TASK");
  ASSERT_EQ(task.size(), 5u);
  StepResult wrong;
  wrong.step_s = 1e-7;
  wrong.devices.resize(5);  // k80x2: two
  setup.fake.send({"PLW1", "RESULT", task[2], step_result_to_json(wrong)});
  EXPECT_FALSE(setup.fake.next("DISCONNECT", 3s).empty());
  setup.fake.ready();
  const auto again = setup.fake.next("TASK");
  ASSERT_EQ(again.size(), 5u);
  setup.fake.send({"PLW1", "RESULT", again[2], result_json(2.0)});
  EXPECT_EQ(run.get()[0].step_s, 2.0);
  EXPECT_GE(setup.pool.stats().workers_lost, 1);
}


// A batch waiting for a worker that never comes gives up as soon as its cancel is set (it waited out
// worker_wait_s), through a DistributedEvaluator's settings too, and leaves nothing queued; shut_down() ends every
// waiting batch, and later ones.
TEST(WorkerPool, ACancelOrAShutdownEndsABatchWaitingForAWorker) {
  WorkerPoolOptions o = fast_pool();
  o.worker_wait_s = 60;
  auto pool = std::make_shared<WorkerPool>(o);
  const Graph g = testing::small_mlp();
  const Cluster c = cluster_preset("k80x2");
  std::atomic<bool> cancel{false};
  RemoteSettings settings;
  settings.cancel = &cancel;
  DistributedEvaluator far(PreparedProblem::make(g, c), pool, settings, RewardOptions{});
  auto run = std::async(std::launch::async, [&] { return far.evaluate(random_placements(g, 3, 1)); });
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  cancel = true;
  EXPECT_THROW(run.get(), EvaluationCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  FakeWorker late(pool->endpoint(), "late");  // what the cancelled batch queued is gone: none of it comes
  EXPECT_TRUE(late.next("TASK", 1s).empty());
  auto problem = pool->prepare(g, c, RemoteSettings{});
  auto waiting = std::async(std::launch::async, [&] { return pool->evaluate(*problem, random_placements(g, 2, 2)); });
  std::this_thread::sleep_for(200ms);
  pool->shut_down();
  EXPECT_THROW(waiting.get(), EvaluationCancelled);
  EXPECT_THROW(pool->evaluate(*problem, random_placements(g, 1, 3)), EvaluationCancelled);
}

}  // namespace
}  // namespace placer::service
