// Load benchmark of the placement service over loopback: C concurrent
// clients send N `place` requests for one graph (inline JSON, as a user's own
// graph would come) and check every reply. Reports p50/p90/p99 latency,
// throughput, lost/wrong replies and the server's memory over the run.
// --policy-samples trains a policy first (a learned optimize job with
// save_as) and every request names it; --background-job keeps a learned job
// training during the load; --health-probe times `health` every 100 ms.
//
//   build/bench/service_bench --clients 16 --requests 10000 --builder rnnlm --cluster k80x4 --workers 2
//   build/bench/service_bench --clients 16 --requests 10000 --builder rnnlm --cluster k80x4 --builder-requests
//   --policy-samples 256
//   build/bench/service_bench --clients 8 --requests 4000 --builder rnnlm --cluster k80x4 --builder-requests
//   --policy-samples 256 --background-job --health-probe
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "placer/frontends/builders.h"
#include "placer/graphs/serialize.h"
#include "placer/service/client.h"
#include "placer/service/server.h"
#include "placer/service/service.h"

using namespace placer;
using namespace placer::service;
using Clock = std::chrono::steady_clock;

namespace {

int64_t rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

std::string field(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  at += key.size() + 3;
  auto end = json.find_first_of(",}", at);
  return json.substr(at, end - at);
}

double pct(std::vector<double>& v, double p) {
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

struct Options {
  int clients = 16, workers = 2, timeout_ms = 30000;
  int64_t requests = 10000;
  std::string builder = "nmt", cluster = "k80x4";
  std::vector<std::string> options;
  bool builder_requests = false, background_job = false, health_probe = false;
  int64_t policy_samples = 0;
};

// Parses the command line into `opt`. Returns false with `exit_code` set when
// the program should stop (help, or a bad argument), as CLI11_PARSE would.
bool parse_options(int argc, char** argv, Options& opt, int& exit_code) {
  CLI::App app{"service_bench: load test of `placer serve` over loopback"};
  app.add_option("--clients", opt.clients, "Concurrent clients");
  app.add_option("--requests", opt.requests, "Total place requests");
  app.add_option("--workers", opt.workers, "Server worker threads");
  app.add_option("--builder", opt.builder, "Graph builder");
  app.add_option("--option", opt.options, "Builder option KEY=VALUE");
  app.add_option("--cluster", opt.cluster, "Cluster preset");
  app.add_flag("--builder-requests", opt.builder_requests, "Send the builder name instead of the inline graph");
  app.add_option(
      "--policy-samples", opt.policy_samples,
      "Train a seq2seq policy for the graph first (a learned job of this many samples, save_as) and place with it");
  app.add_flag("--background-job", opt.background_job, "Keep a learned optimize job training while the clients run");
  app.add_flag("--health-probe", opt.health_probe, "Time a `health` request every 100 ms during the load");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    return false;
  }
  return true;
}

// The request's "graph" value: the builder name and options, or the graph inline.
std::string make_graph_spec(const Options& opt, const BuilderOptions& bo, const Graph& graph) {
  if (!opt.builder_requests) return "{\"inline\":" + graph_to_json(graph) + "}";
  std::string spec = "{\"builder\":" + json_quote(opt.builder) + ",\"options\":{";
  bool first = true;
  for (const auto& [k, v] : bo.values) {
    spec += (first ? "" : ",") + json_quote(k) + ":" + std::to_string(v);
    first = false;
  }
  return spec + "}}";
}

// The service and its loopback server, started on construction.
struct Harness {
  ServiceConfig config;
  PlacementService service;
  Server server;

  explicit Harness(const ServiceConfig& c)
      : config(c),
        service(config),
        server(config, [this](const Request& r, Clock::time_point d) { return service.handle(r, d); }) {
    service.queue_depth = [this] { return server.queue_depth(); };
    server.start();
  }
  void stop() {
    server.stop();
    service.shutdown();
  }
};

ServiceConfig make_config(const Options& opt) {
  ServiceConfig config;
  config.endpoint = "tcp://127.0.0.1:*";
  config.workers = opt.workers;
  config.queue_capacity = 4 * opt.clients;  // the benchmark measures service time, not refusals
  return config;
}

struct Results {
  double train_s = 0;
  std::string expected_step, expected_method;
  size_t reply_bytes = 0, request_bytes = 0;
  double first_s = 0;
  int64_t ok = 0, wrong = 0, lost = 0, busy = 0;
  std::vector<double> latencies, health;
  std::vector<std::pair<int64_t, int64_t>> rss;  // (requests done, kB)
  double wall = 0;
  std::string background, background_status;
};

// One run's state: the options, the graph and its request text, the server.
struct Bench {
  const Options& opt;
  Graph graph;
  std::string graph_spec;
  std::string policy;
  Harness& harness;

  Client client(int timeout_ms) const {
    ClientOptions o;
    o.endpoint = harness.server.endpoint();
    o.timeout_ms = timeout_ms;
    return Client(o);
  }
  std::string call(const std::string& text) const {
    Client c = client(600000);
    return c.request(text);
  }
  // Starts a learned optimize job; returns its id.
  std::string job_request(int64_t samples, double seconds, const std::string& save_as) const {
    std::string r =
        "{\"version\":1,\"type\":\"optimize\",\"graph\":" + graph_spec + ",\"cluster\":" + json_quote(opt.cluster) +
        ",\"budget\":{\"samples\":" + std::to_string(samples) + ",\"seconds\":" + json_number(seconds) + "}" +
        ",\"learned\":{\"policy\":{\"type\":\"seq2seq\"},\"warm_start\":{\"methods\":[\"m_etf\",\"expert\"]}}";
    if (!save_as.empty()) r += ",\"save_as\":" + json_quote(save_as);
    std::string reply = call(r + "}");
    std::string id = field(reply, "job_id");
    if (id.size() < 3) throw std::runtime_error("optimize failed: " + reply.substr(0, 300));
    return id.substr(1, id.size() - 2);
  }
  std::string make_request(int64_t i) const {
    return "{\"version\":1,\"id\":\"" + std::to_string(i) + "\",\"type\":\"place\",\"graph\":" + graph_spec +
           ",\"cluster\":" + json_quote(opt.cluster) + (policy.empty() ? "" : ",\"policy\":" + json_quote(policy)) +
           "}";
  }
};

// Trains the policy every request names (--policy-samples). False if the job failed.
bool train_policy(Bench& b, Results& res) {
  auto t0 = Clock::now();
  std::string id = b.job_request(b.opt.policy_samples, 0, "bench-policy");
  for (;;) {
    std::string st = b.call("{\"version\":1,\"type\":\"status\",\"job_id\":\"" + id + "\"}");
    if (st.find("\"state\":\"done\"") != std::string::npos) break;
    if (st.find("\"state\":\"failed\"") != std::string::npos) {
      std::fprintf(stderr, "policy job failed: %s\n", st.c_str());
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  res.train_s = std::chrono::duration<double>(Clock::now() - t0).count();
  b.policy = "bench-policy";
  return true;
}

// The expected answer, from one request before timing. False if it failed.
bool first_request(const Bench& b, Results& res) {
  Client c = b.client(600000);
  auto t0 = Clock::now();
  std::string r = c.request(b.make_request(-1));
  res.first_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (r.find("\"status\":\"ok\"") == std::string::npos) {
    std::fprintf(stderr, "first request failed: %s\n", r.substr(0, 500).c_str());
    return false;
  }
  res.expected_step = field(r, "step_s");
  res.expected_method = field(r, "method");
  res.reply_bytes = r.size();
  return true;
}

// Times a `health` request every 100 ms until `load_done`.
std::thread start_prober(const Bench& b, const std::atomic<bool>& load_done, std::vector<double>& health) {
  return std::thread([&b, &load_done, &health] {
    Client c = b.client(10000);
    while (!load_done) {
      auto t0 = Clock::now();
      std::string r = c.request("{\"version\":1,\"type\":\"health\"}");
      if (r.find("\"status\":\"ok\"") != std::string::npos)
        health.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

// The clients: each sends requests until all are taken and checks every reply.
void run_clients(const Bench& b, Results& res) {
  const int64_t requests = b.opt.requests;
  std::atomic<int64_t> next{0}, ok{0}, wrong{0}, lost{0}, busy{0};
  std::mutex lat_mutex, rss_mutex;
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < b.opt.clients; ++t) {
    threads.emplace_back([&] {
      Client c = b.client(b.opt.timeout_ms);
      std::vector<double> mine;
      for (;;) {
        int64_t i = next++;
        if (i >= requests) break;
        std::string req = b.make_request(i);
        auto t0 = Clock::now();
        std::string r;
        try {
          r = c.request(req);
        } catch (const TimeoutError&) {
          lost++;
          continue;
        }
        mine.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        if (r.find("\"status\":\"busy\"") != std::string::npos) {
          busy++;
        } else if (field(r, "id") == "\"" + std::to_string(i) + "\"" &&
                   r.find("\"status\":\"ok\"") != std::string::npos && field(r, "step_s") == res.expected_step &&
                   field(r, "method") == res.expected_method && field(r, "ops") == std::to_string(b.graph.size())) {
          ok++;
        } else {
          wrong++;
          if (wrong < 3)
            std::fprintf(stderr, "wrong reply to %lld: %s\n", static_cast<long long>(i), r.substr(0, 300).c_str());
        }
        int64_t done = ok + wrong + lost + busy;
        if (done % std::max<int64_t>(1, requests / 10) == 0) {  // fewer than 10 requests: every one
          std::lock_guard<std::mutex> lock(rss_mutex);
          res.rss.push_back({done, rss_kb()});
        }
      }
      std::lock_guard<std::mutex> lock(lat_mutex);
      res.latencies.insert(res.latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  res.wall = std::chrono::duration<double>(Clock::now() - start).count();
  res.ok = ok, res.wrong = wrong, res.lost = lost, res.busy = busy;
}

// The timed load, with the background job and the health prober around it.
void run_load(const Bench& b, Results& res) {
  res.rss.push_back({0, rss_kb()});
  if (b.opt.background_job) res.background = b.job_request(1000000, 3600, "");
  std::atomic<bool> load_done{false};
  std::thread prober;
  if (b.opt.health_probe) prober = start_prober(b, load_done, res.health);
  run_clients(b, res);
  load_done = true;
  if (prober.joinable()) prober.join();
  if (!res.background.empty()) {
    res.background_status = b.call("{\"version\":1,\"type\":\"status\",\"job_id\":\"" + res.background + "\"}");
    b.call("{\"version\":1,\"type\":\"cancel\",\"job_id\":\"" + res.background + "\"}");
  }
  res.rss.push_back({b.opt.requests, rss_kb()});
}

void write_report(const Bench& b, const ServiceConfig& config, Results& res) {
  const Options& opt = b.opt;
  std::vector<double>& latencies = res.latencies;
  std::sort(latencies.begin(), latencies.end());
  double mean = 0;
  for (double l : latencies) mean += l;
  mean /= std::max<size_t>(1, latencies.size());
  std::printf("## service_bench\n\n");
  std::printf(
      "- graph: %s (%lld ops), cluster %s, %s requests (%zu bytes each), replies %zu bytes with the placement\n",
      opt.builder.c_str(), static_cast<long long>(b.graph.size()), opt.cluster.c_str(),
      opt.builder_requests ? "builder" : "inline-graph", res.request_bytes, res.reply_bytes);
  std::printf("- server: %d workers, queue %d; %d clients (DEALER, one request in flight each), %u hardware threads\n",
              opt.workers, config.queue_capacity, opt.clients, std::thread::hardware_concurrency());
  std::string names;
  for (const auto& n : config.place_baselines) names += (names.empty() ? "" : "/") + n;
  if (!b.policy.empty())
    std::printf(
        "- policy: a seq2seq policy trained by a learned optimize job of %lld samples (%.1f s), kept with save_as; "
        "every request names it\n",
        static_cast<long long>(opt.policy_samples), res.train_s);
  std::printf("- first request (cold: parse, lower bound, baselines %s%s): %.1f ms; answer %s at %s s\n", names.c_str(),
              b.policy.empty() ? "" : ", policy load and decode", res.first_s * 1e3, res.expected_method.c_str(),
              res.expected_step.c_str());
  std::printf("- requests: %lld, ok %lld, wrong %lld, lost %lld, busy %lld\n", static_cast<long long>(opt.requests),
              static_cast<long long>(res.ok), static_cast<long long>(res.wrong), static_cast<long long>(res.lost),
              static_cast<long long>(res.busy));
  std::printf("- wall %.2f s, throughput %.1f req/s\n", res.wall, opt.requests / res.wall);
  if (!latencies.empty())
    std::printf("- latency ms: p50 %.2f, p90 %.2f, p99 %.2f, max %.2f, mean %.2f\n", pct(latencies, 0.5) * 1e3,
                pct(latencies, 0.9) * 1e3, pct(latencies, 0.99) * 1e3, latencies.back() * 1e3, mean * 1e3);
  if (!res.background.empty())
    std::printf("- a learned job trained during the load: %lld samples, %lld updates\n",
                std::stoll("0" + field(res.background_status, "samples")),
                std::stoll("0" + field(res.background_status, "updates")));
  if (!res.health.empty()) {
    std::sort(res.health.begin(), res.health.end());
    std::printf("- health during the load (%zu probes): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", res.health.size(),
                pct(res.health, 0.5) * 1e3, pct(res.health, 0.99) * 1e3, res.health.back() * 1e3);
  }
  std::printf("- process RSS (kB) by requests done:");
  std::sort(res.rss.begin(), res.rss.end());
  for (const auto& [n, kb] : res.rss) std::printf(" %lld:%lld", static_cast<long long>(n), static_cast<long long>(kb));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  int exit_code = 0;
  if (!parse_options(argc, argv, opt, exit_code)) return exit_code;

  BuilderOptions bo;
  for (const auto& kv : opt.options) bo.values[kv.substr(0, kv.find('='))] = std::stoll(kv.substr(kv.find('=') + 1));
  Graph graph = build_graph(opt.builder, bo);
  std::string graph_spec = make_graph_spec(opt, bo, graph);

  Harness harness(make_config(opt));
  Bench bench{opt, std::move(graph), std::move(graph_spec), "", harness};
  Results res;
  if (opt.policy_samples > 0 && !train_policy(bench, res)) return 1;
  if (!first_request(bench, res)) return 1;
  res.request_bytes = bench.make_request(0).size();

  run_load(bench, res);
  harness.stop();
  write_report(bench, harness.config, res);
  return (res.wrong == 0 && res.lost == 0) ? 0 : 1;
}
