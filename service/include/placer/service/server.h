// The ZeroMQ transport: a ROUTER frontend, a bounded request queue and a
// worker pool; optional CurveZMQ with a ZAP handler that admits only listed
// client keys. Replies keep the client's envelope, so REQ and DEALER clients
// both work.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "placer/service/config.h"
#include "placer/service/protocol.h"

namespace placer::service {

class ServiceMetrics;
using Clock = std::chrono::steady_clock;

// Turns a parsed request into its reply's "result" JSON; throws RequestError
// for bad requests, anything else for internal failures.
using Handler = std::function<std::string(const Request&, std::chrono::steady_clock::time_point deadline)>;

struct ServerStats {
  int64_t received = 0;
  int64_t replied = 0;
  int64_t busy = 0;
  int64_t client_gone = 0;
  int64_t dropped = 0;  // messages framed as no client sends a request (not [id, body] or [id, empty, body])
};

class Server {
 public:
  Server(const ServiceConfig& config, Handler handler, ServiceMetrics* metrics = nullptr);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds (throws InputError naming the endpoint) and starts the threads.
  void start();
  // The bound endpoint ("tcp://127.0.0.1:41234" after binding port *).
  std::string endpoint() const { return endpoint_; }
  // Stops taking requests, answers queued ones `shutting_down`, lets running
  // ones finish, closes every socket (linger 0) and shuts the context down.
  void stop();
  int64_t queue_depth() const;
  ServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
};

// Z85 key pair for CurveZMQ (public, secret).
std::pair<std::string, std::string> curve_keypair();

// Blocks SIGINT/SIGTERM in the calling thread and the threads it starts later
// (call before Server::start), so wait_for_shutdown_signal receives them.
void block_shutdown_signals();
// Waits for SIGINT/SIGTERM or for `stop` to become true. Returns the signal
// number, or 0 when stopped.
int wait_for_shutdown_signal(const std::atomic<bool>* stop = nullptr);

}  // namespace placer::service
