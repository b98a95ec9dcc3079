#include "placer/service/server.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "placer/graphs/timing.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::vector<zmq::message_t> envelope;  // routing id (+ empty delimiter for REQ clients)
  std::string body;
  Clock::time_point received;
};

// Cheap "id" recovery for replies the frontend sends itself (busy), without a
// full parse of what may be a large message.
RequestId quick_id(const std::string& body) {
  if (body.size() <= 64 * 1024) return salvage_request_id(body);
  return {};
}

}  // namespace

struct Server::Impl {
  ServiceConfig config;
  Handler handler;
  ServiceMetrics* metrics;
  zmq::context_t ctx{1};
  zmq::socket_t frontend, replies, zap;
  std::string replies_endpoint;
  std::thread io_thread, zap_thread;
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Task> queue;
  int busy_workers = 0;
  bool closing = false;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> received{0}, replied{0}, busy{0}, gone{0}, dropped{0};
  bool started = false, stopped = false;

  void send_to_client(std::vector<zmq::message_t>& envelope, const std::string& body) {
    try {
      for (size_t i = 0; i < envelope.size(); ++i) {
        auto sent = frontend.send(envelope[i], zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        if (!sent) {  // the client's pipe is full: drop rather than stall everyone
          if (i == 0) {
            count_gone();
            return;
          }
        }
      }
      frontend.send(zmq::buffer(body), zmq::send_flags::dontwait);
      replied++;
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH (ROUTER_MANDATORY): the client went away before its reply.
      count_gone();
    }
  }
  void count_gone() {
    gone++;
    if (metrics) metrics->client_gone();
  }

  void forward_replies() {
    for (int n = 0; n < 256; ++n) {
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(replies, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
      if (parts.empty()) continue;
      std::string body = parts.back().to_string();
      parts.pop_back();
      send_to_client(parts, body);
    }
  }

  // Stops taking requests: the queued ones are answered shutting_down.
  void drain_queue() {
    std::deque<Task> left;
    {
      std::lock_guard<std::mutex> lock(mutex);
      closing = true;
      left.swap(queue);
    }
    wake.notify_all();
    for (auto& t : left) {
      send_to_client(t.envelope,
                     error_reply(quick_id(t.body), "", codes::kShuttingDown, "", "the server is shutting down"));
      if (metrics) metrics->observe_request("unknown", Outcome::Error, seconds_since(t.received));
    }
    if (metrics) metrics->set_queue_depth(0);
  }

  // While draining: true once no worker runs and the queue is empty, with what is still in the inproc
  // pipe forwarded (workers send before they count themselves idle).
  bool drained() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (busy_workers != 0 || !queue.empty()) return false;
    }
    zmq::pollitem_t last[] = {{static_cast<void*>(replies), 0, ZMQ_POLLIN, 0}};
    while (zmq::poll(last, 1, std::chrono::milliseconds(20)) > 0) forward_replies();
    return true;
  }

  void io_loop() {
    zmq::pollitem_t items[] = {{static_cast<void*>(frontend), 0, ZMQ_POLLIN, 0},
                               {static_cast<void*>(replies), 0, ZMQ_POLLIN, 0}};
    bool draining = false;
    for (;;) {
      if (stop && !draining) {
        draining = true;
        drain_queue();
      }
      if (draining && drained()) break;
      zmq::poll(items, 2, std::chrono::milliseconds(draining ? 10 : 50));
      if (items[1].revents & ZMQ_POLLIN) forward_replies();
      if ((items[0].revents & ZMQ_POLLIN) && !draining)
        for (int n = 0; n < 256; ++n)
          if (!receive_one()) break;
    }
  }

  // One message from the frontend, frame by frame, so that no more than three frames are ever held: a
  // request is [id, body] (a DEALER sending the JSON alone) or [id, empty, body] (REQ, and DEALERs that
  // send the delimiter, as placer's clients do). ZMQ_MAXMSGSIZE caps each frame, not the message: any
  // other framing is read to its end and dropped (its frames were queued and echoed back as the
  // "envelope", 20 frames of 16 MiB each). False when nothing was waiting.
  bool read_message(std::vector<zmq::message_t>& frames, bool& framed) {
    frames.clear();
    framed = true;
    for (bool first = true;; first = false) {
      zmq::message_t m;
      // The frames of a message arrive together: only the first may be missing.
      if (!frontend.recv(m, first ? zmq::recv_flags::dontwait : zmq::recv_flags::none)) {
        framed = false;
        return !first;
      }
      const bool more = m.more();
      if (frames.size() < 3)
        frames.push_back(std::move(m));
      else
        framed = false;
      if (!more) break;
    }
    if (frames.size() < 2 || (frames.size() == 3 && frames[1].size() != 0)) framed = false;
    return true;
  }

  // Receives one message and queues it (or answers busy, or drops it). False when nothing was waiting.
  bool receive_one() {
    std::vector<zmq::message_t> parts;
    bool framed;
    if (!read_message(parts, framed)) return false;
    if (!framed) {
      dropped++;
      if (metrics) metrics->observe_request("invalid", Outcome::Error, 0.0);
      return true;
    }
    received++;
    Task t;
    t.received = Clock::now();
    t.body = parts.back().to_string();
    parts.pop_back();
    t.envelope = std::move(parts);
    enqueue(std::move(t));
    return true;
  }

  void enqueue(Task t) {
    bool full;
    {
      std::lock_guard<std::mutex> lock(mutex);
      full = static_cast<int>(queue.size()) >= config.queue_capacity;
      if (!full) queue.push_back(std::move(t));
      if (metrics) metrics->set_queue_depth(static_cast<int64_t>(queue.size()));  // under the lock: in order
    }
    if (!full) {
      wake.notify_one();
      return;
    }
    busy++;
    send_to_client(t.envelope, error_reply(quick_id(t.body), "", codes::kBusy, "",
                                           "the request queue is full (" + std::to_string(config.queue_capacity) +
                                               " waiting); retry later"));
    if (metrics) metrics->observe_request("unknown", Outcome::Busy, seconds_since(t.received));
  }

  // Parses and runs one request: its reply. *seen is the request's type once its envelope was read,
  // *id its id once parsed.
  std::string run(const Task& t, std::optional<RequestType>* seen, RequestId* id) {
    Request r = parse_request(t.body, config.limits, seen);
    *id = r.id;
    int64_t ms = r.deadline_ms > 0 ? r.deadline_ms : config.default_deadline_ms;
    auto deadline = t.received + std::chrono::milliseconds(ms);
    if (Clock::now() > deadline)
      throw RequestError(codes::kDeadline, "deadline_ms",
                         "waited " + std::to_string(static_cast<int64_t>(seconds_since(t.received) * 1000)) +
                             " ms in the queue, past the deadline of " + std::to_string(ms) + " ms");
    std::string result = handler(r, deadline);
    // A request that changed the server's state (a job made, a result handed over and forgotten, a job
    // cancelled) keeps its reply, late or not: replaced, the change was lost to the client for good.
    const bool committed =
        r.type == RequestType::Optimize || r.type == RequestType::Result || r.type == RequestType::Cancel;
    if (!committed && Clock::now() > deadline)
      throw RequestError(codes::kDeadline, "deadline_ms",
                         "took " + std::to_string(static_cast<int64_t>(seconds_since(t.received) * 1000)) +
                             " ms, past the deadline of " + std::to_string(ms) + " ms");
    return ok_reply(*id, r.type, result);
  }

  std::string process(const Task& t) {
    std::optional<RequestType> seen;  // the type, once read: in the reply and the metric's label
    RequestId id;
    std::string reply;
    Outcome outcome = Outcome::Error;
    auto type = [&] { return seen ? std::string(request_type_name(*seen)) : std::string(); };
    try {
      reply = run(t, &seen, &id);
      outcome = Outcome::Ok;
    } catch (const RequestError& e) {
      outcome = e.code() == codes::kBusy       ? Outcome::Busy
                : e.code() == codes::kDeadline ? Outcome::Deadline
                                               : Outcome::Error;
      reply = error_reply(id.empty() ? salvage_request_id(t.body) : id, type(), e.code(), e.field(), e.problem());
    } catch (const InputError& e) {  // one that names its field (a GraphError's, say) says it
      reply = error_reply(id.empty() ? salvage_request_id(t.body) : id, type(), codes::kBadRequest, e.field(),
                          e.field().empty() ? e.what() : e.problem());
    } catch (const std::exception& e) {
      outcome = Outcome::Internal;
      std::fprintf(stderr, "placer serve: internal error in a %s request: %s\n", type().c_str(), e.what());
      reply = error_reply(id, type(), codes::kInternal, "", std::string("internal error: ") + e.what());
    } catch (...) {
      outcome = Outcome::Internal;
      reply = error_reply(id, type(), codes::kInternal, "", "internal error: unknown exception");
    }
    if (metrics) metrics->observe_request(seen ? type() : "invalid", outcome, seconds_since(t.received));
    return reply;
  }

  void worker_loop() {
    zmq::socket_t out(ctx, zmq::socket_type::push);
    out.set(zmq::sockopt::linger, 0);
    out.connect(replies_endpoint);
    for (;;) {
      Task t;
      int64_t depth;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return closing || !queue.empty(); });
        if (queue.empty()) break;  // closing
        t = std::move(queue.front());
        queue.pop_front();
        depth = static_cast<int64_t>(queue.size());
        busy_workers++;
        if (metrics) metrics->set_queue_depth(depth);
      }
      std::string reply = process(t);
      std::vector<zmq::message_t> parts;
      for (auto& e : t.envelope) parts.emplace_back(std::move(e));
      parts.emplace_back(reply.data(), reply.size());
      try {
        zmq::send_multipart(out, parts);
      } catch (const zmq::error_t&) {
        // The context is going down.
      }
      std::lock_guard<std::mutex> lock(mutex);
      busy_workers--;
    }
    out.close();
  }

  void zap_loop(std::set<std::string> allowed) {
    zmq::pollitem_t items[] = {{static_cast<void*>(zap), 0, ZMQ_POLLIN, 0}};
    while (!stop) {
      zmq::poll(items, 1, std::chrono::milliseconds(100));
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> req;
      if (!zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
      if (req.size() < 6) continue;
      std::string version = req[0].to_string(), request_id = req[1].to_string(), mechanism = req[5].to_string();
      bool ok = false;
      std::string user;
      if (mechanism == "CURVE" && req.size() >= 7 && req[6].size() == 32) {
        char z85[41] = {0};
        zmq_z85_encode(z85, static_cast<const uint8_t*>(req[6].data()), 32);
        ok = allowed.count(z85) > 0;
        user = z85;
      }
      std::vector<zmq::message_t> rep;
      rep.emplace_back(std::string("1.0"));
      rep.emplace_back(request_id);
      rep.emplace_back(std::string(ok ? "200" : "400"));
      rep.emplace_back(std::string(ok ? "OK" : "client key not allowed"));
      rep.emplace_back(ok ? user.substr(0, 8) : std::string());
      rep.emplace_back(std::string());
      zmq::send_multipart(zap, rep);
    }
  }
};

Server::Server(const ServiceConfig& config, Handler handler, ServiceMetrics* metrics)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  impl_->handler = std::move(handler);
  impl_->metrics = metrics;
}

Server::~Server() { stop(); }

void Server::start() {
  Impl& m = *impl_;
  if (m.started) return;
  if (m.config.curve.enabled) {
    m.zap = zmq::socket_t(m.ctx, zmq::socket_type::rep);
    m.zap.set(zmq::sockopt::linger, 0);
    m.zap.bind("inproc://zeromq.zap.01");
  }
  m.frontend = zmq::socket_t(m.ctx, zmq::socket_type::router);
  m.frontend.set(zmq::sockopt::linger, 0);
  m.frontend.set(zmq::sockopt::router_mandatory, 1);
  m.frontend.set(zmq::sockopt::maxmsgsize, m.config.limits.max_request_bytes);
  if (m.config.curve.enabled) {
    m.frontend.set(zmq::sockopt::curve_server, 1);
    m.frontend.set(zmq::sockopt::curve_secretkey, m.config.curve.server_secret_key);
    m.frontend.set(zmq::sockopt::zap_domain, "placer");
  }
  try {
    m.frontend.bind(m.config.endpoint);
  } catch (const zmq::error_t& e) {
    m.frontend.close();
    if (m.zap) m.zap.close();
    throw InputError("endpoint: cannot bind " + m.config.endpoint + ": " + e.what());
  }
  endpoint_ = m.frontend.get(zmq::sockopt::last_endpoint);
  char buf[64];
  std::snprintf(buf, sizeof buf, "inproc://placer-replies-%p", static_cast<void*>(this));
  m.replies_endpoint = buf;
  m.replies = zmq::socket_t(m.ctx, zmq::socket_type::pull);
  m.replies.set(zmq::sockopt::linger, 0);
  m.replies.bind(m.replies_endpoint);
  for (int i = 0; i < m.config.workers; ++i) m.workers.emplace_back([&m] { m.worker_loop(); });
  m.io_thread = std::thread([&m] { m.io_loop(); });
  if (m.config.curve.enabled) {
    std::set<std::string> allowed(m.config.curve.allowed_client_keys.begin(), m.config.curve.allowed_client_keys.end());
    m.zap_thread = std::thread([&m, allowed] { m.zap_loop(allowed); });
  }
  m.started = true;
}

void Server::stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.stop = true;
  m.io_thread.join();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.closing = true;
  }
  m.wake.notify_all();
  for (auto& w : m.workers) w.join();
  if (m.zap_thread.joinable()) m.zap_thread.join();
  m.frontend.close();
  m.replies.close();
  if (m.zap) m.zap.close();
  m.ctx.shutdown();
  m.ctx.close();
}

int64_t Server::queue_depth() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return static_cast<int64_t>(impl_->queue.size());
}

ServerStats Server::stats() const {
  return {impl_->received.load(), impl_->replied.load(), impl_->busy.load(), impl_->gone.load(), impl_->dropped.load()};
}

std::pair<std::string, std::string> curve_keypair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) throw InputError("CurveZMQ is not available in this libzmq");
  return {pub, sec};
}

void block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_shutdown_signal(const std::atomic<bool>* stop) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  for (;;) {
    timespec ts{0, 100'000'000};
    int s = sigtimedwait(&set, nullptr, &ts);
    if (s > 0) return s;
    if (stop && stop->load()) return 0;
  }
}

}  // namespace placer::service
