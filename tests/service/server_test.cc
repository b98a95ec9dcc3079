// The ZeroMQ transport with fake handlers: envelopes, busy, deadlines, faults,
// message size, CurveZMQ and shutdown. Binds tcp://127.0.0.1:* only.
#include "placer/service/server.h"

#include <gtest/gtest.h>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "placer/service/client.h"
#include "placer/service/metrics.h"

namespace placer::service {
namespace {

using namespace std::chrono_literals;

ServiceConfig test_config(int workers = 2, int queue = 8) {
  ServiceConfig c;
  c.endpoint = "tcp://127.0.0.1:*";
  c.workers = workers;
  c.queue_capacity = queue;
  c.default_deadline_ms = 10'000;
  return c;
}

std::string echo(const Request& r, Clock::time_point) {
  return "{\"echo\":" + json_quote(request_type_name(r.type)) + "}";
}

std::string req(const std::string& type, const std::string& id, const std::string& extra = "") {
  return "{\"version\":1,\"id\":\"" + id + "\",\"type\":\"" + type + "\"" + extra + "}";
}

Client client_for(const Server& s, int timeout_ms = 5000) {
  ClientOptions o;
  o.endpoint = s.endpoint();
  o.timeout_ms = timeout_ms;
  return Client(o);
}

// A gate the fake handler waits on.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> waiting{0};
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    waiting++;
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(Server, RepliesEchoIdAndTypeAndBindsAnyPort) {
  Server server(test_config(), echo);
  server.start();
  EXPECT_EQ(server.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  EXPECT_NE(server.endpoint(), "tcp://127.0.0.1:*");
  Client c = client_for(server);
  EXPECT_EQ(c.request(req("health", "h1")),
            R"({"version":1,"id":"h1","type":"health","status":"ok","result":{"echo":"health"}})");
  EXPECT_EQ(c.request(req("policies", "p2")),
            R"({"version":1,"id":"p2","type":"policies","status":"ok","result":{"echo":"policies"}})");
}

// An integer id comes back as the integer it was ("id":7 came back "7"), up to 2^64-1 (past 2^63-1 it was
// refused as no integer), in an error reply too.
TEST(Server, AnIntegerIdIsEchoedAsAnInteger) {
  Server server(test_config(), echo);
  server.start();
  Client c = client_for(server);
  EXPECT_EQ(c.request(R"({"version":1,"id":7,"type":"health"})"),
            R"({"version":1,"id":7,"type":"health","status":"ok","result":{"echo":"health"}})");
  EXPECT_EQ(c.request(R"({"version":1,"id":18446744073709551615,"type":"health"})"),
            R"({"version":1,"id":18446744073709551615,"type":"health","status":"ok","result":{"echo":"health"}})");
  EXPECT_EQ(c.request(R"({"version":1,"id":-3,"type":"health"})").find(R"({"version":1,"id":-3,"type":"health",)"), 0u);
  EXPECT_EQ(c.request(R"({"version":1,"id":"7","type":"health"})").find(R"({"version":1,"id":"7",)"), 0u);
  EXPECT_EQ(c.request(R"({"version":9,"id":12,"type":"health"})").find(R"({"version":1,"id":12,"type":"",)"), 0u);
  EXPECT_NE(c.request(R"({"version":1,"id":18446744073709551616,"type":"health"})")
                .find(R"("field":"id","message":"expected a string or an integer up to 18446744073709551615)"),
            std::string::npos);
}

TEST(Server, ReqSocketClientsWorkToo) {
  Server server(test_config(), echo);
  server.start();
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::req);
  s.set(zmq::sockopt::linger, 0);
  s.connect(server.endpoint());
  s.send(zmq::buffer(req("health", "r")));
  zmq::message_t m;
  ASSERT_TRUE(s.recv(m));
  EXPECT_NE(m.to_string().find("\"id\":\"r\""), std::string::npos);
}

TEST(Server, BadInputGetsNamedErrorsAndServerKeepsServing) {
  Server server(test_config(), echo);
  server.start();
  Client c = client_for(server);
  EXPECT_NE(c.request("{nope").find(R"("code":"bad_json")"), std::string::npos);
  EXPECT_NE(c.request(R"({"version":9,"id":"v","type":"health"})")
                .find(R"("id":"v","type":"","status":"error","error":{"code":"bad_version","field":"version")"),
            std::string::npos);
  EXPECT_NE(c.request(req("fly", "u")).find(R"("code":"unknown_type","field":"type")"), std::string::npos);
  std::string missing = c.request(req("place", "m", R"(,"cluster":"k80x2")"));
  EXPECT_NE(missing.find(R"("code":"bad_request","field":"graph","message":"missing required field")"),
            std::string::npos)
      << missing;
  EXPECT_NE(c.request(req("health", "ok")).find(R"("status":"ok")"), std::string::npos);
}

TEST(Server, FullQueueAnswersBusyAtOnce) {
  Gate gate;
  auto handler = [&](const Request& r, Clock::time_point) {
    if (r.type == RequestType::Place) gate.wait();
    return std::string("{}");
  };
  Server server(test_config(/*workers=*/1, /*queue=*/1), handler);
  server.start();
  const std::string place = req("place", "p", R"(,"graph":{"builder":"mlp"},"cluster":"k80x2")");
  // First occupies the only worker, second waits in the queue, third is refused.
  auto first = std::async(std::launch::async, [&] { return client_for(server).request(place); });
  while (gate.waiting < 1) std::this_thread::sleep_for(1ms);
  auto second = std::async(std::launch::async, [&] { return client_for(server).request(place); });
  while (server.queue_depth() < 1) std::this_thread::sleep_for(1ms);
  auto t0 = std::chrono::steady_clock::now();
  std::string third =
      client_for(server).request(req("place", "third", R"(,"graph":{"builder":"mlp"},"cluster":"k80x2")"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_NE(third.find(R"("id":"third","type":"","status":"busy","error":{"code":"busy")"), std::string::npos) << third;
  gate.release();
  EXPECT_NE(first.get().find(R"("status":"ok")"), std::string::npos);
  EXPECT_NE(second.get().find(R"("status":"ok")"), std::string::npos);
  EXPECT_EQ(server.stats().busy, 1);
}

TEST(Server, WorkerThatThrowsGivesInternalErrorAndServingGoesOn) {
  auto handler = [](const Request& r, Clock::time_point) -> std::string {
    if (r.type == RequestType::Policies) throw std::runtime_error("boom in the handler");
    if (r.type == RequestType::Status) throw 42;  // not even an exception type
    return "{}";
  };
  Server server(test_config(1), handler);
  server.start();
  Client c = client_for(server);
  EXPECT_EQ(
      c.request(req("policies", "x")),
      R"({"version":1,"id":"x","type":"policies","status":"error","error":{"code":"internal","field":"","message":"internal error: boom in the handler"}})");
  EXPECT_NE(c.request(req("status", "y", R"(,"job_id":"j")")).find("unknown exception"), std::string::npos);
  EXPECT_NE(c.request(req("health", "z")).find(R"("status":"ok")"), std::string::npos);
}

TEST(Server, ClientThatDisappearsMidRequestDoesNotDisturbOthers) {
  Gate gate;
  auto handler = [&](const Request& r, Clock::time_point) {
    if (r.type == RequestType::Place) gate.wait();
    return std::string("{}");
  };
  Server server(test_config(2), handler);
  server.start();
  {
    zmq::context_t ctx;
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(server.endpoint());
    s.send(zmq::message_t(), zmq::send_flags::sndmore);
    s.send(zmq::buffer(req("place", "gone", R"(,"graph":{"builder":"mlp"},"cluster":"k80x2")")));
    while (gate.waiting < 1) std::this_thread::sleep_for(1ms);
  }  // the client closes while its request runs
  std::this_thread::sleep_for(50ms);
  gate.release();
  for (int i = 0; i < 200 && server.stats().client_gone < 1; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server.stats().client_gone, 1);
  Client c = client_for(server);
  EXPECT_NE(c.request(req("health", "still")).find(R"("status":"ok")"), std::string::npos);
}

TEST(Server, DeadlinePassedGivesDeadlineExceeded) {
  auto handler = [](const Request&, Clock::time_point) {
    std::this_thread::sleep_for(150ms);
    return std::string("{}");
  };
  Server server(test_config(1), handler);
  server.start();
  Client c = client_for(server);
  std::string r = c.request(req("health", "d", R"(,"deadline_ms":50)"));
  EXPECT_NE(r.find(R"("code":"deadline_exceeded","field":"deadline_ms")"), std::string::npos) << r;
  EXPECT_NE(c.request(req("health", "e", R"(,"deadline_ms":5000)")).find(R"("status":"ok")"), std::string::npos);
}

// A request that changed the server's state keeps its reply, late or not: an optimize answered
// deadline_exceeded after its job was made orphaned the job (the retry made another), and a late result
// reply lost the result the server had already forgotten.
TEST(Server, ALateReplyOfARequestThatCommittedIsKept) {
  std::atomic<int> made{0};
  auto handler = [&](const Request& r, Clock::time_point) {
    std::this_thread::sleep_for(150ms);
    if (r.type == RequestType::Result) ++made;
    return std::string(R"({"state":"done"})");
  };
  Server server(test_config(1), handler);
  server.start();
  Client c = client_for(server);
  const std::string r = c.request(req("result", "late", R"(,"job_id":"j1","deadline_ms":50)"));
  EXPECT_NE(r.find(R"("status":"ok")"), std::string::npos) << r;
  EXPECT_EQ(made.load(), 1);
}

TEST(Server, OversizedMessageIsDroppedAndServerKeepsServing) {
  ServiceConfig config = test_config();
  config.limits.max_request_bytes = 4096;
  Server server(config, echo);
  server.start();
  {
    Client big = client_for(server, 500);
    EXPECT_THROW(big.request(req("health", "big", ",\"pad\":\"" + std::string(10000, 'x') + "\"")), TimeoutError);
  }
  Client c = client_for(server);
  EXPECT_NE(c.request(req("health", "small")).find(R"("status":"ok")"), std::string::npos);
}

// ZMQ_MAXMSGSIZE caps each frame, not a message: every frame before the last became the reply's "envelope",
// was queued and echoed back (20 frames of 16 MiB - 1 and a health request held ~320 MiB each). Only
// [id, body] and [id, empty, body] are requests; anything else is dropped before the queue, and counted.
TEST(Server, OnlyTheFramingsClientsSendAreQueued) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  Server server(test_config(), echo, &metrics);
  server.start();
  zmq::context_t ctx;
  auto send = [&](const std::vector<std::string>& frames) {
    auto s = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
    s->set(zmq::sockopt::linger, 0);
    s->connect(server.endpoint());
    for (size_t i = 0; i < frames.size(); ++i)
      s->send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    return s;
  };
  auto reply = [](zmq::socket_t& s, int ms) {
    zmq::pollitem_t items[] = {{static_cast<void*>(s), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 1, std::chrono::milliseconds(ms));
    if (!(items[0].revents & ZMQ_POLLIN)) return std::vector<std::string>{};
    std::vector<zmq::message_t> parts;
    (void)zmq::recv_multipart(s, std::back_inserter(parts));
    std::vector<std::string> out;
    for (auto& p : parts) out.push_back(p.to_string());
    return out;
  };
  const std::string health = req("health", "h");
  auto delimited = send({"", health});
  auto bare = send({health});
  EXPECT_EQ(reply(*delimited, 5000).size(), 2u);  // the delimiter back, then the reply
  EXPECT_EQ(reply(*bare, 5000).size(), 1u);
  auto extra = send({std::string(1000, 'x'), "", health});
  auto not_empty = send({"x", health});
  EXPECT_TRUE(reply(*extra, 300).empty()) << "an extra frame was queued and echoed back";
  EXPECT_TRUE(reply(*not_empty, 300).empty()) << "a non-empty delimiter was queued and echoed back";
  EXPECT_EQ(server.stats().received, 2);
  EXPECT_EQ(server.stats().dropped, 2);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_NE(text.find(R"(placer_service_requests_total{outcome="error",type="invalid"} 2)"), std::string::npos) << text;
}

// A request whose type was read but whose body is bad says its type, in the reply and the metric
// (it said "type":"" and counted as invalid); a type not known stays invalid (a bounded label set).
TEST(Server, AnErrorAfterTheTypeCarriesTheType) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  Server server(test_config(), echo, &metrics);
  server.start();
  Client c = client_for(server);
  const std::string r = c.request(req("place", "m", R"(,"cluster":"k80x2")"));
  EXPECT_NE(r.find(R"("id":"m","type":"place","status":"error","error":{"code":"bad_request","field":"graph")"),
            std::string::npos)
      << r;
  // A field of the envelope read after the type, too.
  const std::string d = c.request(req("health", "d", R"(,"deadline_ms":0)"));
  EXPECT_NE(d.find(R"("type":"health","status":"error","error":{"code":"bad_request","field":"deadline_ms")"),
            std::string::npos)
      << d;
  EXPECT_NE(c.request(req("fly", "u")).find(R"("type":"","status":"error")"), std::string::npos);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_NE(text.find(R"(placer_service_requests_total{outcome="error",type="health"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(placer_service_requests_total{outcome="error",type="place"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(placer_service_requests_total{outcome="error",type="invalid"} 1)"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"(type="fly")"), std::string::npos) << text;
}

// An InputError that names its field (a GraphError of a pipeline, say) names it in the reply.
TEST(Server, AnInputErrorWithAFieldNamesIt) {
  auto handler = [](const Request&, Clock::time_point) -> std::string {
    throw InputError("", "graph.forward_only", "a forward-only graph cannot be pipelined");
  };
  Server server(test_config(1), handler);
  server.start();
  const std::string r =
      client_for(server).request(req("place", "f", R"(,"graph":{"builder":"mlp"},"cluster":"k80x2")"));
  EXPECT_NE(r.find(R"("code":"bad_request","field":"graph.forward_only","message":"a forward-only graph cannot be )"
                   R"(pipelined")"),
            std::string::npos)
      << r;
}

TEST(Server, CurveAdmitsOnlyListedClients) {
  auto [server_pub, server_sec] = curve_keypair();
  auto [good_pub, good_sec] = curve_keypair();
  auto [bad_pub, bad_sec] = curve_keypair();
  ServiceConfig config = test_config();
  config.curve.enabled = true;
  config.curve.server_public_key = server_pub;
  config.curve.server_secret_key = server_sec;
  config.curve.allowed_client_keys = {good_pub};
  Server server(config, echo);
  server.start();
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.timeout_ms = 3000;
  o.server_public_key = server_pub;
  o.client_public_key = good_pub;
  o.client_secret_key = good_sec;
  Client good(o);
  EXPECT_NE(good.request(req("health", "g")).find(R"("status":"ok")"), std::string::npos);

  o.timeout_ms = 700;
  o.client_public_key = bad_pub;
  o.client_secret_key = bad_sec;
  Client unlisted(o);
  EXPECT_THROW(unlisted.request(req("health", "b")), TimeoutError);

  ClientOptions plain;
  plain.endpoint = server.endpoint();
  plain.timeout_ms = 700;
  Client no_curve(plain);
  EXPECT_THROW(no_curve.request(req("health", "p")), TimeoutError);
  EXPECT_EQ(server.stats().received, 1);  // refused clients never reach the queue
  EXPECT_NE(good.request(req("health", "g2")).find(R"("status":"ok")"), std::string::npos);
}

TEST(Server, StopFinishesRunningWorkAndAnswersQueuedShuttingDown) {
  Gate gate;
  auto handler = [&](const Request& r, Clock::time_point) {
    if (r.type == RequestType::Place) gate.wait();
    return std::string("{\"done\":true}");
  };
  auto server = std::make_unique<Server>(test_config(1, 4), handler);
  server->start();
  const std::string place = req("place", "run", R"(,"graph":{"builder":"mlp"},"cluster":"k80x2")");
  auto running = std::async(std::launch::async, [&] { return client_for(*server).request(place); });
  while (gate.waiting < 1) std::this_thread::sleep_for(1ms);
  auto queued = std::async(std::launch::async, [&] { return client_for(*server).request(req("health", "q")); });
  while (server->queue_depth() < 1) std::this_thread::sleep_for(1ms);
  auto stopping = std::async(std::launch::async, [&] { server->stop(); });
  std::string q = queued.get();
  EXPECT_NE(q.find(R"("code":"shutting_down")"), std::string::npos) << q;
  gate.release();
  EXPECT_NE(running.get().find(R"("done":true)"), std::string::npos);
  stopping.get();
}

}  // namespace
}  // namespace placer::service
