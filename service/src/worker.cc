// Rollouts on several machines, the worker's side (`placer worker`): a
// DEALER that registers with a WorkerPool (workers.cc), heartbeats from its
// own I/O thread while evaluation threads simulate or measure, keeps one
// Environment per problem, and reconnects when the pool goes silent.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iterator>
#include <list>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "placer/graphs/serialize.h"
#include "placer/service/workers.h"
#include "workers_wire.h"

namespace placer::service {
namespace {

using namespace wire;
using std::chrono::milliseconds;

struct HeldProblem {
  std::vector<std::string> frames;  // mode, warmup, measure, graph, cluster, profile
  std::once_flag built;
  std::shared_ptr<Environment> env;
  bool measured = false;
  int32_t ops = 0;
  std::string error;  // could not build: every task of it answers this
};

struct Job {
  uint64_t generation = 0;
  std::string id, key, placement;
};

struct Reply {
  uint64_t generation = 0;
  std::string command, id, payload;
};

class WorkerRun {
 public:
  WorkerRun(std::string endpoint, WorkerOptions options, const std::atomic<bool>& stop)
      : endpoint_(std::move(endpoint)), o_(std::move(options)), stop_(stop) {
    for (const Device& d : parse_device_list(o_.devices).devices) devices_.push_back(d.name);
    if (o_.threads < 1 || o_.threads > 256) throw InputError("worker: --threads must be in 1..256");
    if (o_.heartbeat_ms < 10 || o_.heartbeat_ms > kMaxWorkerHeartbeatMs || o_.liveness < 1)
      throw InputError("worker: heartbeat_ms must be in [10, " + std::to_string(kMaxWorkerHeartbeatMs) +
                       "] and liveness >= 1");
    if (o_.name.empty()) {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      o_.name = std::string(host) + ":" + std::to_string(getpid());
    }
  }

  WorkerStats run();

 private:
  void say(const std::string& line) { std::fprintf(stderr, "placer worker %s: %s\n", o_.name.c_str(), line.c_str()); }
  void connect();
  void receive(std::vector<zmq::message_t>& parts);
  void send_replies();
  void evaluate_loop();
  Reply evaluate(const Job& job);
  void build(HeldProblem& p);
  bool send(std::initializer_list<std::string_view> frames);

  std::string endpoint_;
  WorkerOptions o_;
  const std::atomic<bool>& stop_;
  std::vector<std::string> devices_;
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  Waker waker_;
  WorkerStats stats_;

  std::mutex mu_;
  std::condition_variable work_;
  std::deque<Job> jobs_;
  std::deque<Reply> replies_;
  std::list<std::pair<std::string, std::shared_ptr<HeldProblem>>> problems_;  // most recently used first
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::shared_mutex devices_mu_;  // measurements run alone: no other evaluation beside them
};

bool WorkerRun::send(std::initializer_list<std::string_view> frames) {
  try {
    size_t i = 0;
    for (std::string_view f : frames) {
      const bool last = ++i == frames.size();
      if (!socket_.send(zmq::buffer(f.data(), f.size()),
                        (last ? zmq::send_flags::none : zmq::send_flags::sndmore) | zmq::send_flags::dontwait))
        return false;
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

void WorkerRun::connect() {
  if (socket_) socket_.close();
  socket_ = zmq::socket_t(ctx_, zmq::socket_type::dealer);
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& e) {
    throw InputError("--connect: cannot connect to '" + endpoint_ + "': " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    jobs_.clear();  // the pool re-sends what the old connection held
  }
  send({kVersion, kReady, o_.name, join(devices_), std::to_string(o_.threads), std::to_string(o_.heartbeat_ms)});
}

void WorkerRun::receive(std::vector<zmq::message_t>& parts) {
  if (parts.size() < 2 || parts[0].to_string_view() != kVersion) return;
  const std::string_view command = parts[1].to_string_view();
  if (command == kProblem && parts.size() >= 3 + kProblemFrames) {
    auto p = std::make_shared<HeldProblem>();
    for (size_t i = 0; i < kProblemFrames; ++i) p->frames.push_back(parts[3 + i].to_string());
    const std::string key = parts[2].to_string();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = problems_.begin(); it != problems_.end(); ++it)
      if (it->first == key) {
        problems_.splice(problems_.begin(), problems_, it);
        return;  // held already (a pool sends it again after a reconnect)
      }
    problems_.emplace_front(key, std::move(p));
    while (static_cast<int>(problems_.size()) > std::max(1, o_.problem_cache)) problems_.pop_back();
  } else if (command == kTask && parts.size() >= 5) {
    Job job;
    job.id = parts[2].to_string();
    job.key = parts[3].to_string();
    job.placement = parts[4].to_string();
    {
      std::lock_guard<std::mutex> lock(mu_);
      job.generation = generation_;
      jobs_.push_back(std::move(job));
    }
    work_.notify_one();
  }
}

void WorkerRun::build(HeldProblem& p) {
  const RewardMode mode = parse_reward_mode(p.frames[0]);
  if (mode == RewardMode::Hybrid) throw InputError("hybrid is not a worker mode");
  int64_t warmup = 0;
  EnvOptions eo;
  MeasureOptions& m = eo.measure;
  if (!parse_int(p.frames[1], &warmup) || warmup > 100000 ||
      !parse_measure_frame(p.frames[2], &m))
    throw InputError("malformed measure settings");
  m.warmup_steps = static_cast<int>(warmup);
  validate(m);
  Graph graph = graph_from_json(p.frames[3]);
  Cluster cluster = cluster_from_json(p.frames[4]);
  if (mode == RewardMode::Measured) {
    std::vector<std::string> missing;
    for (const Device& d : cluster.devices)
      if (std::find(devices_.begin(), devices_.end(), d.name) == devices_.end()) missing.push_back(d.name);
    if (!missing.empty())
      throw InputError("measured tasks on cluster '" + cluster.name + "' need devices " + join(missing) +
                       ", which this worker lacks (it has " + join(devices_) + "; start it with --devices)");
  }
  eo.mode = mode;
  eo.threads = 1;  // this worker runs its slots in parallel, not one evaluation
  if (!p.frames[5].empty()) eo.profile = profile_from_json(p.frames[5]);
  p.ops = graph.size();
  p.measured = mode == RewardMode::Measured;
  p.env = std::make_shared<Environment>(std::move(graph), std::move(cluster), std::move(eo));
}

Reply WorkerRun::evaluate(const Job& job) {
  Reply r{job.generation, std::string(kResult), job.id, ""};
  std::shared_ptr<HeldProblem> p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = problems_.begin(); it != problems_.end(); ++it)
      if (it->first == job.key) {
        problems_.splice(problems_.begin(), problems_, it);
        p = it->second;
        break;
      }
  }
  if (!p) return {job.generation, std::string(kNeed), job.id, job.key};
  std::call_once(p->built, [&] {
    try {
      build(*p);
    } catch (const std::exception& e) {
      p->error = e.what();
    }
  });
  try {
    if (!p->error.empty()) throw InputError(p->error);
    if (job.placement.size() != static_cast<size_t>(p->ops) * 4)
      throw InputError("placement of " + std::to_string(job.placement.size()) + " bytes, expected 4 per op (" +
                       std::to_string(p->ops) + " ops)");
    const Placement placement = decode_placement(job.placement);
    StepResult result;
    if (p->measured) {
      std::unique_lock<std::shared_mutex> alone(devices_mu_);
      result = p->env->evaluate(placement).result;
    } else {
      std::shared_lock<std::shared_mutex> shared(devices_mu_);
      result = p->env->simulate(placement);  // what the pool's environment computes: no cache kept here
    }
    r.payload = step_result_to_json(result);
  } catch (const std::exception& e) {
    r.command = std::string(kError);
    r.payload = e.what();
  }
  return r;
}

void WorkerRun::evaluate_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (o_.verbose) say("task " + job.id + " started");
    if (o_.slow_ms > 0) {
      const auto until = Clock::now() + milliseconds(o_.slow_ms);
      while (Clock::now() < until) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (stopping_) return;
        }
        std::this_thread::sleep_for(std::min<Clock::duration>(milliseconds(50), until - Clock::now()));
      }
    }
    Reply reply = evaluate(job);
    if (o_.verbose)
      say("task " + job.id + " " + (reply.command == kResult ? "done" : reply.command + ": " + reply.payload));
    {
      std::lock_guard<std::mutex> lock(mu_);
      replies_.push_back(std::move(reply));
    }
    waker_.wake();
  }
}

// The evaluation threads' replies, to the pool (those of the current connection).
void WorkerRun::send_replies() {
  std::deque<Reply> replies;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    replies.swap(replies_);
    generation = generation_;
  }
  for (const Reply& r : replies) {
    if (r.generation != generation) continue;  // for a connection we gave up: the pool re-sent it
    if (r.command == kResult)
      ++stats_.tasks;
    else if (r.command == kError)
      ++stats_.errors;
    send({kVersion, r.command, r.id, r.payload});
  }
}

WorkerStats WorkerRun::run() {
  say("connecting to " + endpoint_ + " (devices " + join(devices_) + ", " + std::to_string(o_.threads) + " thread(s))");
  connect();  // before the threads: a bad endpoint is an error, not a terminate with threads running
  std::vector<std::thread> threads;
  for (int i = 0; i < o_.threads; ++i) threads.emplace_back([this] { evaluate_loop(); });
  const auto heartbeat = milliseconds(o_.heartbeat_ms);
  auto patience = heartbeat * o_.liveness;  // of the larger of ours and the pool's interval, once it says
  Clock::duration backoff = heartbeat;
  auto expiry = Clock::now() + patience;
  auto next_heartbeat = Clock::now() + heartbeat;
  bool heard = false;
  while (!stop_) {
    zmq::pollitem_t items[] = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0}, {nullptr, waker_.fd(), ZMQ_POLLIN, 0}};
    if (!poll_interruptible(items, milliseconds(std::clamp(o_.heartbeat_ms / 4, 10, 100)))) continue;
    if (items[0].revents & ZMQ_POLLIN)
      for (int n = 0; n < 1024; ++n) {
        std::vector<zmq::message_t> parts;
        if (!zmq::recv_multipart(socket_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
        expiry = Clock::now() + patience;
        backoff = heartbeat;
        if (!heard) say("the pool answers");
        heard = true;
        int64_t pool_ms = 0;
        if (parts.size() >= 3 && parts[1].to_string_view() == kHeartbeat && parse_int(parts[2].to_string(), &pool_ms) &&
            pool_ms >= 1) {
          // A worker with a shorter interval gave up during every longer task (0 results, 19 reconnects).
          patience = milliseconds(std::clamp<int64_t>(pool_ms, o_.heartbeat_ms, kMaxWorkerHeartbeatMs)) * o_.liveness;
          expiry = Clock::now() + patience;
        }
        if (parts.size() >= 2 && parts[1].to_string_view() == kDisconnect) {
          say("the pool does not know this worker (it restarted, or expired us): registering again");
          ++stats_.reconnects;
          connect();
          break;
        }
        receive(parts);
      }
    if (items[1].revents & ZMQ_POLLIN) waker_.drain();
    send_replies();
    const auto now = Clock::now();
    if (now >= next_heartbeat) {
      send({kVersion, kHeartbeat});
      next_heartbeat = now + heartbeat;
    }
    if (now > expiry) {
      // Paranoid Pirate: a silent pool means a new socket; patience grows while it stays silent.
      say(std::string(heard ? "the pool went silent" : "no answer from the pool") + "; reconnecting (next try in " +
          ms_text(std::chrono::duration<double>(patience + backoff).count()) + ")");
      heard = false;
      ++stats_.reconnects;
      connect();
      expiry = now + patience + backoff;
      backoff = std::min<Clock::duration>(backoff * 2, milliseconds(std::max(o_.heartbeat_ms, o_.max_backoff_ms)));
    }
  }
  socket_.set(zmq::sockopt::linger, 500);  // let the goodbye out
  send({kVersion, kBye});
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads) t.join();
  socket_.close();
  ctx_.shutdown();
  ctx_.close();
  say("stopped after " + std::to_string(stats_.tasks) + " results, " + std::to_string(stats_.errors) + " errors, " +
      std::to_string(stats_.reconnects) + " reconnects");
  return stats_;
}

}  // namespace

WorkerStats run_worker(const std::string& endpoint, const WorkerOptions& options, const std::atomic<bool>& stop) {
  WorkerRun run(endpoint, options, stop);
  return run.run();
}

}  // namespace placer::service
