// Prometheus exposition (prometheus-cpp, pull): the service's request metrics
// and the training metrics of `placer train` runs and optimize jobs.
// Families are built once; labels are low-cardinality (request type,
// outcome, run name, graph name, placer method).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "placer/agent/train.h"

namespace prometheus {
class Registry;
class Exposer;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace placer::service {

// Every metric name the program exports (tests check the dashboards against it).
std::vector<std::string> exported_metric_names();

// A registry served over HTTP at /metrics. port 0 picks a free port.
class MetricsExposer {
 public:
  MetricsExposer(const std::string& address, int port);
  ~MetricsExposer();
  int port() const { return port_; }
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
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
  void job_finished(const std::string& state);   // done | failed | cancelled
  void client_gone();
  void set_policies(int64_t loaded);
  void cache_lookup(bool hit);

 private:
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
  // Keeps the exposer alive as long as the sink (make_prometheus_sink).
  void hold(std::unique_ptr<MetricsExposer> exposer) { exposer_ = std::move(exposer); }
  int port() const { return exposer_ ? exposer_->port() : 0; }

  void on_update(const UpdateMetrics& m) override;
  // For the "best step time vs baselines" panel.
  void set_baseline(const std::string& method, double step_s);
  void set_lower_bound(double seconds);

 private:
  prometheus::Gauge *reward_, *step_, *best_step_, *entropy_, *loss_, *samples_per_s_, *lr_, *updates_, *lower_bound_;
  prometheus::Counter *samples_, *cache_hits_;
  prometheus::Family<prometheus::Gauge>* baseline_;
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
