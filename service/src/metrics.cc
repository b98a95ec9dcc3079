#include "placer/service/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "placer/graphs/error.h"

namespace placer::service {
namespace {

const prometheus::Histogram::BucketBoundaries& latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                   0.25,  0.5,    1,     2.5,  5,     10,   30};
  return kBuckets;
}

}  // namespace

std::vector<std::string> exported_metric_names() {
  return {"placer_service_requests_total",
          "placer_service_request_duration_seconds_bucket",
          "placer_service_request_duration_seconds_sum",
          "placer_service_request_duration_seconds_count",
          "placer_service_queue_depth",
          "placer_service_running_jobs",
          "placer_service_jobs_total",
          "placer_service_clients_gone_total",
          "placer_service_policies_loaded",
          "placer_service_cache_lookups_total",
          "placer_train_reward",
          "placer_train_step_seconds",
          "placer_train_best_step_seconds",
          "placer_train_entropy",
          "placer_train_loss",
          "placer_train_samples_total",
          "placer_train_samples_per_second",
          "placer_train_cache_hits_total",
          "placer_train_learning_rate",
          "placer_train_updates",
          "placer_train_reward_best",
          "placer_train_updates_per_second",
          "placer_train_lower_bound_seconds",
          "placer_baseline_step_seconds"};
}

MetricsExposer::MetricsExposer(const std::string& address, int port)
    : registry_(std::make_shared<prometheus::Registry>()) {
  std::string bind = address + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 || ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1)
    throw InputError("metrics: '" + bind + "' is not an IPv4 address and port");
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 16) != 0) {
    std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw InputError("metrics: cannot listen on " + bind + ": " + why);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

MetricsExposer::~MetricsExposer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

namespace {

// Sets `c`'s receive and send timeouts to what is left until `deadline`; false when nothing is.
bool time_left_for(int c, std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  timeval tv{static_cast<time_t>(left.count() / 1000000), static_cast<suseconds_t>(left.count() % 1000000)};
  ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return true;
}

}  // namespace

// One connection at a time: scrapes are rare and small. A connection has 2 s in
// all, reads and writes together (a timeout per read let a client sending a
// byte every 1.5 s hold the exposer, and the server's shutdown, for hours).
void MetricsExposer::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    std::string request;
    char buf[2048];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384 && !stop_ &&
           time_left_for(c, deadline)) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
    bool head = request.rfind("HEAD ", 0) == 0;
    if (request.rfind("GET ", 0) != 0 && !head) {
      status = "405 Method Not Allowed";
      type = "text/plain";
      body = "only GET /metrics\n";
    } else {
      std::string target = request.substr(head ? 5 : 4, request.find(' ', head ? 5 : 4) - (head ? 5 : 4));
      if (target == "/metrics" || target.rfind("/metrics?", 0) == 0) {
        body = prometheus::TextSerializer().Serialize(registry_->Collect());
        scrapes_++;
      } else {
        status = "404 Not Found";
        type = "text/plain";
        body = "see /metrics\n";
      }
    }
    std::string response = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
                           (head ? "" : body);
    for (size_t sent = 0; sent < response.size() && time_left_for(c, deadline);) {
      ssize_t n = ::send(c, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(c);
  }
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Ok: return "ok";
    case Outcome::Error: return "error";
    case Outcome::Busy: return "busy";
    case Outcome::Deadline: return "deadline";
    case Outcome::Internal: return "internal";
    case Outcome::ClientGone: return "client_gone";
  }
  return "unknown";
}

ServiceMetrics::ServiceMetrics(prometheus::Registry& registry) : registry_(registry) {
  requests_ = &prometheus::BuildCounter()
                   .Name("placer_service_requests_total")
                   .Help("Requests answered, by request type and outcome")
                   .Register(registry);
  latency_ = &prometheus::BuildHistogram()
                  .Name("placer_service_request_duration_seconds")
                  .Help("Time from receiving a request to sending its reply, by request type")
                  .Register(registry);
  jobs_ = &prometheus::BuildCounter()
               .Name("placer_service_jobs_total")
               .Help("Optimize jobs finished, by final state")
               .Register(registry);
  cache_ = &prometheus::BuildCounter()
                .Name("placer_service_cache_lookups_total")
                .Help("Lookups of prepared (graph, cluster) problems, by result")
                .Register(registry);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("placer_service_queue_depth")
                      .Help("Requests waiting for a worker")
                      .Register(registry)
                      .Add({});
  running_jobs_ = &prometheus::BuildGauge()
                       .Name("placer_service_running_jobs")
                       .Help("Optimize jobs running now")
                       .Register(registry)
                       .Add({});
  policies_ = &prometheus::BuildGauge()
                   .Name("placer_service_policies_loaded")
                   .Help("Learned policies the service can place with")
                   .Register(registry)
                   .Add({});
  clients_gone_ = &prometheus::BuildCounter()
                       .Name("placer_service_clients_gone_total")
                       .Help("Replies dropped because the client had disconnected")
                       .Register(registry)
                       .Add({});
}

void ServiceMetrics::observe_request(const std::string& type, Outcome outcome, double seconds) {
  requests_->Add({{"type", type}, {"outcome", outcome_name(outcome)}}).Increment();
  latency_->Add({{"type", type}}, latency_buckets()).Observe(seconds);
}

void ServiceMetrics::set_queue_depth(int64_t depth) { queue_depth_->Set(static_cast<double>(depth)); }
void ServiceMetrics::set_running_jobs(int64_t running) { running_jobs_->Set(static_cast<double>(running)); }
void ServiceMetrics::job_finished(const std::string& state) { jobs_->Add({{"state", state}}).Increment(); }
void ServiceMetrics::client_gone() { clients_gone_->Increment(); }
void ServiceMetrics::set_policies(int64_t loaded) { policies_->Set(static_cast<double>(loaded)); }
void ServiceMetrics::cache_lookup(bool hit) { cache_->Add({{"result", hit ? "hit" : "miss"}}).Increment(); }

PrometheusSink::PrometheusSink(prometheus::Registry& registry, const std::string& run, const std::string& graph)
    : registry_(registry), run_(run), graph_(graph) {
  baseline_ = &prometheus::BuildGauge()
                   .Name("placer_baseline_step_seconds")
                   .Help("Step time of an algorithmic placer's placement, for comparison")
                   .Register(registry);
}

prometheus::Gauge* PrometheusSink::add_gauge(const char* name, const char* help) {
  auto& family = prometheus::BuildGauge().Name(name).Help(help).Register(registry_);
  auto* g = &family.Add({{"run", run_}, {"graph", graph_}});
  gauges_.emplace_back(&family, g);
  return g;
}

// The per-update series appear with the first update: a run that has not
// sampled yet shows no reward rather than a reward of 0.
void PrometheusSink::add_update_series() {
  auto counter = [&](const char* name, const char* help) {
    auto& family = prometheus::BuildCounter().Name(name).Help(help).Register(registry_);
    auto* c = &family.Add({{"run", run_}, {"graph", graph_}});
    counters_.emplace_back(&family, c);
    return c;
  };
  reward_ = add_gauge("placer_train_reward", "Mean reward of the last policy update's samples");
  reward_best_ = add_gauge("placer_train_reward_best", "Best reward of any sample so far (reward = -step_s^exponent)");
  step_ = add_gauge("placer_train_step_seconds", "Mean step time of the last update's samples");
  best_step_ = add_gauge("placer_train_best_step_seconds", "Step time of the best placement found so far");
  entropy_ = add_gauge("placer_train_entropy", "Mean policy entropy per decision in the last update");
  loss_ = add_gauge("placer_train_loss", "Policy loss of the last update");
  samples_per_s_ = add_gauge("placer_train_samples_per_second", "Placements evaluated per second");
  updates_per_s_ = add_gauge("placer_train_updates_per_second", "Policy updates per second over the run");
  lr_ = add_gauge("placer_train_learning_rate", "Learning rate of the last update");
  updates_ = add_gauge("placer_train_updates", "Policy updates done");
  samples_ = counter("placer_train_samples_total", "Placements evaluated");
  cache_hits_ = counter("placer_train_cache_hits_total", "Evaluations answered from the evaluation cache");
}

// The run's series leave the registry with it (service jobs come and go;
// label cardinality stays bounded by the jobs alive).
PrometheusSink::~PrometheusSink() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [family, g] : gauges_) family->Remove(g);
  for (auto& [family, c] : counters_) family->Remove(c);
  for (auto* g : baselines_) baseline_->Remove(g);
}

void PrometheusSink::on_update(const UpdateMetrics& m) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reward_) add_update_series();
  reward_->Set(m.reward_mean);
  // reward = -step^exponent is monotone in the step time: the best reward is the best step's.
  if (std::isfinite(m.reward_best) && (!best_reward_set_ || m.reward_best > best_reward_)) {
    best_reward_ = m.reward_best;
    best_reward_set_ = true;
    reward_best_->Set(best_reward_);
  }
  step_->Set(m.step_mean_s);
  best_step_->Set(m.best_step_s);
  entropy_->Set(m.entropy);
  loss_->Set(m.loss);
  samples_per_s_->Set(m.samples_per_s);
  if (m.elapsed_s > 0) updates_per_s_->Set(static_cast<double>(m.update) / m.elapsed_s);
  lr_->Set(m.lr);
  updates_->Set(static_cast<double>(m.update));
  // The trainer reports running totals; counters only move forward.
  if (m.samples > last_samples_) samples_->Increment(static_cast<double>(m.samples - last_samples_));
  last_samples_ = std::max(last_samples_, m.samples);
  if (m.cache_hits > last_cache_hits_) cache_hits_->Increment(static_cast<double>(m.cache_hits - last_cache_hits_));
  last_cache_hits_ = std::max(last_cache_hits_, m.cache_hits);
}

void PrometheusSink::set_baseline(const std::string& method, double step_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* g = &baseline_->Add({{"run", run_}, {"graph", graph_}, {"method", method}});
  g->Set(step_s);
  if (std::find(baselines_.begin(), baselines_.end(), g) == baselines_.end()) baselines_.push_back(g);
}

void PrometheusSink::on_reference(double lower_bound_s, const std::vector<BaselineResult>& baselines) {
  if (lower_bound_s > 0) set_lower_bound(lower_bound_s);
  for (const auto& b : baselines)
    if (b.ok) set_baseline(b.method, b.step_s);
}

void PrometheusSink::set_lower_bound(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lower_bound_)
    lower_bound_ = add_gauge("placer_train_lower_bound_seconds", "Lower bound on any placement's step time");
  lower_bound_->Set(seconds);
}

std::unique_ptr<MetricsSink> make_prometheus_sink(int port, const std::string& run_name,
                                                  const std::string& graph_name) {
  if (port < 0 || port > 65535) throw InputError("--metrics-port: " + std::to_string(port) + " is not a port");
  auto exposer = std::make_unique<MetricsExposer>("0.0.0.0", port);
  auto sink = std::make_unique<PrometheusSink>(*exposer->registry(), run_name, graph_name);
  sink->hold(std::move(exposer));
  return sink;
}

}  // namespace placer::service
