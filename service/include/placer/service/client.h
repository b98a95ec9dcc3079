// The C++ client: one request at a time over a DEALER socket, with a timeout,
// optional CurveZMQ. Used by `placer query`, the tests and the load benchmark.
#pragma once

#include <memory>
#include <string>

#include "placer/graphs/error.h"

namespace placer::service {

struct ClientOptions {
  std::string endpoint;     // tcp://HOST:PORT
  int timeout_ms = 30'000;  // per request
  // CurveZMQ: all three set = encrypted and authenticated (Z85 keys).
  std::string server_public_key;
  std::string client_public_key;
  std::string client_secret_key;
};

// No reply within the timeout (the server is down, refused us, or dropped an
// oversized message). The socket is reset, so the client stays usable.
class TimeoutError : public InputError {
 public:
  using InputError::InputError;
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends one request (JSON text, sent as is) and returns the reply (JSON
  // text). Throws TimeoutError.
  std::string request(const std::string& json);
  // Sends raw bytes (tests: malformed messages).
  std::string request_raw(const std::string& bytes) { return request(bytes); }

 private:
  void reset();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer::service
