// Metrics: what the program exports, and that every PromQL expression in the
// Grafana dashboard names only metrics the program exports.
#include "placer/service/metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <rapidjson/document.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "placer/graphs/serialize.h"

namespace placer::service {
namespace {

std::set<std::string> names_in_exposition(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t end = line.find_first_of("{ ");
    names.insert(line.substr(0, end));
  }
  return names;
}

// Fills every family once and serializes the registry.
std::string sample_exposition() {
  prometheus::Registry registry;
  ServiceMetrics service(registry);
  service.observe_request("place", Outcome::Ok, 0.004);
  service.set_queue_depth(3);
  service.set_running_jobs(1);
  service.job_finished("done");
  service.client_gone();
  service.set_policies(2);
  service.cache_lookup(true);
  PrometheusSink sink(registry, "run1", "nmt");
  UpdateMetrics m;
  m.update = 4;
  m.reward_mean = -1.25;
  m.best_step_s = 1.5;
  m.samples = 64;
  m.cache_hits = 10;
  m.samples_per_s = 32;
  sink.on_update(m);
  m.samples = 80;
  m.cache_hits = 12;
  sink.on_update(m);
  sink.set_baseline("m_etf", 1.75);
  sink.set_lower_bound(1.0);
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(Metrics, ExportedNamesAreExactlyWhatTheRegistryServes) {
  std::set<std::string> served = names_in_exposition(sample_exposition());
  auto listed = exported_metric_names();
  EXPECT_EQ(served, std::set<std::string>(listed.begin(), listed.end()));
}

TEST(Metrics, SinkTurnsRunningTotalsIntoCounters) {
  std::string text = sample_exposition();
  EXPECT_NE(text.find(R"(placer_train_samples_total{graph="nmt",run="run1"} 80)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(placer_train_cache_hits_total{graph="nmt",run="run1"} 12)"), std::string::npos);
  EXPECT_NE(text.find(R"(placer_train_reward{graph="nmt",run="run1"} -1.25)"), std::string::npos);
  EXPECT_NE(text.find(R"(placer_baseline_step_seconds{graph="nmt",method="m_etf",run="run1"} 1.75)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(placer_service_requests_total{outcome="ok",type="place"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(placer_service_request_duration_seconds_bucket{type="place",le="0.005"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(placer_service_request_duration_seconds_bucket{type="place",le="0.0025"} 0)"),
            std::string::npos);
}

TEST(Metrics, EveryDashboardExpressionNamesAnExportedMetric) {
  std::string text = read_file(std::string(PLACER_SOURCE_DIR) + "/configs/grafana/dashboards/placer.json");
  rapidjson::Document d;
  d.Parse(text.c_str());
  ASSERT_FALSE(d.HasParseError());
  auto listed = exported_metric_names();
  std::set<std::string> exported(listed.begin(), listed.end());
  std::regex ident("[a-zA-Z_:][a-zA-Z0-9_:]*");
  int expressions = 0;
  std::set<std::string> titles;
  for (const auto& panel : d["panels"].GetArray()) {
    titles.insert(panel["title"].GetString());
    for (const auto& target : panel["targets"].GetArray()) {
      std::string expr = target["expr"].GetString();
      ++expressions;
      int metrics = 0;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), ident); it != std::sregex_iterator(); ++it) {
        std::string name = it->str();
        if (name.rfind("placer_", 0) != 0) continue;
        ++metrics;
        EXPECT_TRUE(exported.count(name))
            << "dashboard expression '" << expr << "' names '" << name << "', which the program does not export";
      }
      EXPECT_GE(metrics, 1) << "expression names no placer metric: " << expr;
    }
  }
  EXPECT_GE(expressions, 10);
  for (const char* t : {"Reward per run or job (mean of each update, best so far)", "Best step time vs baselines",
                        "Samples and updates per second", "Service requests per second", "Service latency p50 / p99"})
    EXPECT_TRUE(titles.count(t)) << t;
}

TEST(Metrics, ExposerServesOverHttpOnAnyPort) {
  auto sink = make_prometheus_sink(0, "http-run", "mlp");
  auto* prom = dynamic_cast<PrometheusSink*>(sink.get());
  ASSERT_NE(prom, nullptr);
  ASSERT_GT(prom->port(), 0);
  UpdateMetrics m;
  m.reward_mean = -0.5;
  sink->on_update(m);
  // A plain HTTP GET over a socket.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(prom->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
  std::string body;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) body.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_NE(body.find(R"(placer_train_reward{graph="mlp",run="http-run"} -0.5)"), std::string::npos)
      << body.substr(0, 400);
}

// A client sending one byte every 1.5 s held the one-connection exposer for hours (the 2 s timeout was per
// read); a connection now has 2 s in all, and a scrape behind it is answered.
TEST(Metrics, ATricklingClientCannotHoldTheExposer) {
  auto sink = make_prometheus_sink(0, "trickle", "mlp");
  auto* prom = dynamic_cast<PrometheusSink*>(sink.get());
  ASSERT_NE(prom, nullptr);
  auto connect_to = [&] {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(prom->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  };
  std::atomic<bool> done{false};
  const int slow = connect_to();
  std::thread trickle([&] {
    const char* get = "GET /metrics HTTP/1.1\r\n";
    for (int i = 0; get[i] && !done; ++i) {
      if (::send(slow, get + i, 1, MSG_NOSIGNAL) <= 0) break;
      for (int k = 0; k < 15 && !done; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the slow one is accepted first
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = connect_to();
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
  std::string body;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) body.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  trickle.join();
  ::close(slow);
  EXPECT_NE(body.find("200 OK"), std::string::npos) << body.substr(0, 200);
  EXPECT_LT(waited, 4.0);
}

}  // namespace
}  // namespace placer::service
