#include "placer/service/client.h"

#include <iterator>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace placer::service {

struct Client::Impl {
  ClientOptions options;
  zmq::context_t ctx{1};
  zmq::socket_t socket;
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.endpoint.empty()) throw InputError("--endpoint: empty");
  reset();
}

Client::~Client() {
  impl_->socket.close();
  impl_->ctx.shutdown();
  impl_->ctx.close();
}

void Client::reset() {
  Impl& m = *impl_;
  if (m.socket) m.socket.close();
  m.socket = zmq::socket_t(m.ctx, zmq::socket_type::dealer);
  m.socket.set(zmq::sockopt::linger, 0);
  const auto& o = m.options;
  if (!o.server_public_key.empty() || !o.client_public_key.empty() || !o.client_secret_key.empty()) {
    if (o.server_public_key.size() != 40 || o.client_public_key.size() != 40 || o.client_secret_key.size() != 40)
      throw InputError("curve: give the server's public key and the client's key pair, 40 Z85 characters each");
    m.socket.set(zmq::sockopt::curve_serverkey, o.server_public_key);
    m.socket.set(zmq::sockopt::curve_publickey, o.client_public_key);
    m.socket.set(zmq::sockopt::curve_secretkey, o.client_secret_key);
  }
  try {
    m.socket.connect(o.endpoint);
  } catch (const zmq::error_t& e) {
    throw InputError("--endpoint: cannot connect to '" + o.endpoint + "': " + e.what());
  }
}

std::string Client::request(const std::string& json) {
  Impl& m = *impl_;
  // An empty delimiter frame first, like REQ, so the server sees the same
  // envelope from every kind of client.
  m.socket.send(zmq::message_t(), zmq::send_flags::sndmore);
  m.socket.send(zmq::buffer(json), zmq::send_flags::none);
  zmq::pollitem_t items[] = {{static_cast<void*>(m.socket), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 1, std::chrono::milliseconds(m.options.timeout_ms));
  if (!(items[0].revents & ZMQ_POLLIN)) {
    reset();  // a late reply must not answer the next request
    throw TimeoutError("no reply from " + m.options.endpoint + " within " + std::to_string(m.options.timeout_ms) +
                       " ms");
  }
  std::vector<zmq::message_t> parts;
  const auto received = zmq::recv_multipart(m.socket, std::back_inserter(parts));
  if (!received || parts.empty()) throw InputError("empty reply from " + m.options.endpoint);
  return parts.back().to_string();
}

}  // namespace placer::service
