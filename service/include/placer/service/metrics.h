// Prometheus exposition (prometheus-cpp, pull): the service's request metrics
// and the training metrics of `placer train` runs and optimize jobs.
// Families are built once; labels are low-cardinality (request type,
// outcome, run name, graph name, placer method).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "placer/agent/train.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace placer::service {

// Every metric name the program exports (tests check the dashboards against it).
std::vector<std::string> exported_metric_names();

// A registry served over HTTP at /metrics (text format 0.0.4). port 0 picks
// a free port. A small HTTP/1.x responder of our own rather than
// prometheus-cpp's civetweb Exposer: Debian's civetweb worker crashes inside
// vsnprintf on every scrape in processes that also load LibTorch.
class MetricsExposer {
 public:
  MetricsExposer(const std::string& address, int port);
  ~MetricsExposer();
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;
  int port() const { return port_; }
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  int64_t scrapes() const { return scrapes_.load(); }

 private:
  void serve();
  std::shared_ptr<prometheus::Registry> registry_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> scrapes_{0};
  std::thread thread_;
};

// Request outcomes (the "outcome" label).
enum class Outcome { Ok, Error, Busy, Deadline, Internal, ClientGone };
const char* outcome_name(Outcome outcome);

class ServiceMetrics {
 public:
  explicit ServiceMetrics(prometheus::Registry& registry);
  // type: a request type name or "invalid" for requests that failed to parse.
  void observe_request(const std::string& type, Outcome outcome, double seconds);
  void set_queue_depth(int64_t depth);
  void set_running_jobs(int64_t running);
  void job_finished(const std::string& state);  // done | failed | cancelled
  void client_gone();
  void set_policies(int64_t loaded);
  void cache_lookup(bool hit);
  // Learned jobs add their training series (PrometheusSink) here.
  prometheus::Registry& registry() { return registry_; }

 private:
  prometheus::Registry& registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Counter>* jobs_;
  prometheus::Family<prometheus::Counter>* cache_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* running_jobs_;
  prometheus::Gauge* policies_;
  prometheus::Counter* clients_gone_;
  std::mutex mutex_;  // Family::Add is thread-safe; this guards our own lookup of histograms
};

// Training metrics of one run (labels run, graph). Thread-safe.
class PrometheusSink : public MetricsSink {
 public:
  PrometheusSink(prometheus::Registry& registry, const std::string& run, const std::string& graph);
  ~PrometheusSink() override;  // removes the run's series from the registry
  // Keeps the exposer alive as long as the sink (make_prometheus_sink).
  void hold(std::unique_ptr<MetricsExposer> exposer) { exposer_ = std::move(exposer); }
  int port() const { return exposer_ ? exposer_->port() : 0; }

  void on_update(const UpdateMetrics& m) override;
  void on_reference(double lower_bound_s, const std::vector<BaselineResult>& baselines) override;
  // For the "best step time vs baselines" panel.
  void set_baseline(const std::string& method, double step_s);
  void set_lower_bound(double seconds);

 private:
  prometheus::Gauge* add_gauge(const char* name, const char* help);
  void add_update_series();
  prometheus::Registry& registry_;
  prometheus::Gauge *reward_ = nullptr, *reward_best_ = nullptr, *step_ = nullptr, *best_step_ = nullptr,
                    *entropy_ = nullptr, *loss_ = nullptr, *samples_per_s_ = nullptr, *updates_per_s_ = nullptr,
                    *lr_ = nullptr, *updates_ = nullptr, *lower_bound_ = nullptr;
  prometheus::Counter *samples_ = nullptr, *cache_hits_ = nullptr;
  prometheus::Family<prometheus::Gauge>* baseline_;
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> gauges_;
  std::vector<std::pair<prometheus::Family<prometheus::Counter>*, prometheus::Counter*>> counters_;
  std::vector<prometheus::Gauge*> baselines_;
  double best_reward_ = 0;
  bool best_reward_set_ = false;
  std::string run_, graph_;
  int64_t last_samples_ = 0, last_cache_hits_ = 0;
  std::mutex mutex_;
  std::unique_ptr<MetricsExposer> exposer_;
};

// `placer train --metrics-port PORT`: a sink serving its own /metrics on
// 0.0.0.0:PORT (0 = any free port; see the returned sink's port()).
std::unique_ptr<MetricsSink> make_prometheus_sink(int port, const std::string& run_name,
                                                  const std::string& graph_name = "");

}  // namespace placer::service
