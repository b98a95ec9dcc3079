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
//   --policy-samples 256 \
//       --background-job --health-probe
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

#include "placer/graphs/builders.h"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"service_bench: load test of `placer serve` over loopback"};
  int clients = 16, workers = 2, timeout_ms = 30000;
  int64_t requests = 10000;
  std::string builder = "nmt", cluster = "k80x4";
  std::vector<std::string> options;
  bool builder_requests = false, background_job = false, health_probe = false;
  int64_t policy_samples = 0;
  app.add_option("--clients", clients, "Concurrent clients");
  app.add_option("--requests", requests, "Total place requests");
  app.add_option("--workers", workers, "Server worker threads");
  app.add_option("--builder", builder, "Graph builder");
  app.add_option("--option", options, "Builder option KEY=VALUE");
  app.add_option("--cluster", cluster, "Cluster preset");
  app.add_flag("--builder-requests", builder_requests, "Send the builder name instead of the inline graph");
  app.add_option(
      "--policy-samples", policy_samples,
      "Train a seq2seq policy for the graph first (a learned job of this many samples, save_as) and place with it");
  app.add_flag("--background-job", background_job, "Keep a learned optimize job training while the clients run");
  app.add_flag("--health-probe", health_probe, "Time a `health` request every 100 ms during the load");
  CLI11_PARSE(app, argc, argv);

  BuilderOptions bo;
  for (const auto& kv : options) bo.values[kv.substr(0, kv.find('='))] = std::stoll(kv.substr(kv.find('=') + 1));
  Graph graph = build_graph(builder, bo);
  std::string graph_spec;
  if (builder_requests) {
    graph_spec = "{\"builder\":" + json_quote(builder) + ",\"options\":{";
    bool first = true;
    for (const auto& [k, v] : bo.values) {
      graph_spec += (first ? "" : ",") + json_quote(k) + ":" + std::to_string(v);
      first = false;
    }
    graph_spec += "}}";
  } else {
    graph_spec = "{\"inline\":" + graph_to_json(graph) + "}";
  }

  ServiceConfig config;
  config.endpoint = "tcp://127.0.0.1:*";
  config.workers = workers;
  config.queue_capacity = 4 * clients;  // the benchmark measures service time, not refusals
  PlacementService service(config);
  Server server(config, [&](const Request& r, Clock::time_point d) { return service.handle(r, d); });
  service.queue_depth = [&] { return server.queue_depth(); };
  server.start();

  auto call = [&](const std::string& text) {
    ClientOptions o;
    o.endpoint = server.endpoint();
    o.timeout_ms = 600000;
    Client c(o);
    return c.request(text);
  };
  auto job_request = [&](int64_t samples, double seconds, const std::string& save_as) {
    std::string r =
        "{\"version\":1,\"type\":\"optimize\",\"graph\":" + graph_spec + ",\"cluster\":" + json_quote(cluster) +
        ",\"budget\":{\"samples\":" + std::to_string(samples) + ",\"seconds\":" + json_number(seconds) + "}" +
        ",\"learned\":{\"policy\":{\"type\":\"seq2seq\"},\"warm_start\":{\"methods\":[\"m_etf\",\"expert\"]}}";
    if (!save_as.empty()) r += ",\"save_as\":" + json_quote(save_as);
    std::string reply = call(r + "}");
    std::string id = field(reply, "job_id");
    if (id.size() < 3) throw std::runtime_error("optimize failed: " + reply.substr(0, 300));
    return id.substr(1, id.size() - 2);
  };
  std::string policy;
  double train_s = 0;
  if (policy_samples > 0) {
    auto t0 = Clock::now();
    std::string id = job_request(policy_samples, 0, "bench-policy");
    for (;;) {
      std::string st = call("{\"version\":1,\"type\":\"status\",\"job_id\":\"" + id + "\"}");
      if (st.find("\"state\":\"done\"") != std::string::npos) break;
      if (st.find("\"state\":\"failed\"") != std::string::npos) {
        std::fprintf(stderr, "policy job failed: %s\n", st.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    train_s = std::chrono::duration<double>(Clock::now() - t0).count();
    policy = "bench-policy";
  }
  auto make_request = [&](int64_t i) {
    return "{\"version\":1,\"id\":\"" + std::to_string(i) + "\",\"type\":\"place\",\"graph\":" + graph_spec +
           ",\"cluster\":" + json_quote(cluster) + (policy.empty() ? "" : ",\"policy\":" + json_quote(policy)) + "}";
  };
  // The expected answer, from one request before timing.
  std::string expected_step, expected_method;
  size_t reply_bytes = 0;
  double first_s = 0;
  {
    ClientOptions o;
    o.endpoint = server.endpoint();
    o.timeout_ms = 600000;
    Client c(o);
    auto t0 = Clock::now();
    std::string r = c.request(make_request(-1));
    first_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r.find("\"status\":\"ok\"") == std::string::npos) {
      std::fprintf(stderr, "first request failed: %s\n", r.substr(0, 500).c_str());
      return 1;
    }
    expected_step = field(r, "step_s");
    expected_method = field(r, "method");
    reply_bytes = r.size();
  }
  size_t request_bytes = make_request(0).size();

  std::atomic<int64_t> next{0}, ok{0}, wrong{0}, lost{0}, busy{0};
  std::vector<double> latencies;
  std::mutex lat_mutex;
  std::vector<std::pair<int64_t, int64_t>> rss;  // (requests done, kB)
  std::mutex rss_mutex;
  rss.push_back({0, rss_kb()});
  std::string background;
  if (background_job) background = job_request(1000000, 3600, "");
  std::atomic<bool> load_done{false};
  std::vector<double> health;
  std::thread prober;
  if (health_probe) {
    prober = std::thread([&] {
      ClientOptions o;
      o.endpoint = server.endpoint();
      o.timeout_ms = 10000;
      Client c(o);
      while (!load_done) {
        auto t0 = Clock::now();
        std::string r = c.request("{\"version\":1,\"type\":\"health\"}");
        if (r.find("\"status\":\"ok\"") != std::string::npos)
          health.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      ClientOptions o;
      o.endpoint = server.endpoint();
      o.timeout_ms = timeout_ms;
      Client c(o);
      std::vector<double> mine;
      for (;;) {
        int64_t i = next++;
        if (i >= requests) break;
        std::string req = make_request(i);
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
                   r.find("\"status\":\"ok\"") != std::string::npos && field(r, "step_s") == expected_step &&
                   field(r, "method") == expected_method && field(r, "ops") == std::to_string(graph.size())) {
          ok++;
        } else {
          wrong++;
          if (wrong < 3)
            std::fprintf(stderr, "wrong reply to %lld: %s\n", static_cast<long long>(i), r.substr(0, 300).c_str());
        }
        int64_t done = ok + wrong + lost + busy;
        if (done % (requests / 10) == 0) {
          std::lock_guard<std::mutex> lock(rss_mutex);
          rss.push_back({done, rss_kb()});
        }
      }
      std::lock_guard<std::mutex> lock(lat_mutex);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  double wall = std::chrono::duration<double>(Clock::now() - start).count();
  load_done = true;
  if (prober.joinable()) prober.join();
  std::string background_status;
  if (!background.empty()) {
    background_status = call("{\"version\":1,\"type\":\"status\",\"job_id\":\"" + background + "\"}");
    call("{\"version\":1,\"type\":\"cancel\",\"job_id\":\"" + background + "\"}");
  }
  rss.push_back({requests, rss_kb()});
  server.stop();
  service.shutdown();

  std::sort(latencies.begin(), latencies.end());
  double mean = 0;
  for (double l : latencies) mean += l;
  mean /= std::max<size_t>(1, latencies.size());
  std::printf("## service_bench\n\n");
  std::printf(
      "- graph: %s (%lld ops), cluster %s, %s requests (%zu bytes each), replies %zu bytes with the placement\n",
      builder.c_str(), static_cast<long long>(graph.size()), cluster.c_str(),
      builder_requests ? "builder" : "inline-graph", request_bytes, reply_bytes);
  std::printf("- server: %d workers, queue %d; %d clients (DEALER, one request in flight each), %u hardware threads\n",
              workers, config.queue_capacity, clients, std::thread::hardware_concurrency());
  std::string names;
  for (const auto& b : config.place_baselines) names += (names.empty() ? "" : "/") + b;
  if (!policy.empty())
    std::printf(
        "- policy: a seq2seq policy trained by a learned optimize job of %lld samples (%.1f s), kept with save_as; "
        "every request names it\n",
        static_cast<long long>(policy_samples), train_s);
  std::printf("- first request (cold: parse, lower bound, baselines %s%s): %.1f ms; answer %s at %s s\n", names.c_str(),
              policy.empty() ? "" : ", policy load and decode", first_s * 1e3, expected_method.c_str(),
              expected_step.c_str());
  std::printf("- requests: %lld, ok %lld, wrong %lld, lost %lld, busy %lld\n", static_cast<long long>(requests),
              static_cast<long long>(ok.load()), static_cast<long long>(wrong.load()),
              static_cast<long long>(lost.load()), static_cast<long long>(busy.load()));
  std::printf("- wall %.2f s, throughput %.1f req/s\n", wall, requests / wall);
  if (!latencies.empty())
    std::printf("- latency ms: p50 %.2f, p90 %.2f, p99 %.2f, max %.2f, mean %.2f\n", pct(latencies, 0.5) * 1e3,
                pct(latencies, 0.9) * 1e3, pct(latencies, 0.99) * 1e3, latencies.back() * 1e3, mean * 1e3);
  if (!background.empty())
    std::printf("- a learned job trained during the load: %lld samples, %lld updates\n",
                std::stoll("0" + field(background_status, "samples")),
                std::stoll("0" + field(background_status, "updates")));
  if (!health.empty()) {
    std::sort(health.begin(), health.end());
    std::printf("- health during the load (%zu probes): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", health.size(),
                pct(health, 0.5) * 1e3, pct(health, 0.99) * 1e3, health.back() * 1e3);
  }
  std::printf("- process RSS (kB) by requests done:");
  std::sort(rss.begin(), rss.end());
  for (const auto& [n, kb] : rss) std::printf(" %lld:%lld", static_cast<long long>(n), static_cast<long long>(kb));
  std::printf("\n");
  return (wrong == 0 && lost == 0) ? 0 : 1;
}
