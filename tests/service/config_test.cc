// The service config: read with the one field reader, unknown keys rejected.
#include <gtest/gtest.h>

#include "../error_of.h"
#include "placer/service/config.h"

namespace placer::service {
namespace {

std::string error_of(const std::string& yaml) {
  return testing::error_of<InputError>([&] { parse_service_config(yaml, "/base"); });
}

TEST(ServiceConfig, ReadsFieldsAndResolvesPaths) {
  const ServiceConfig c = parse_service_config(R"(
endpoint: tcp://127.0.0.1:6000
workers: 3
state_dir: state
limits: {max_ops: 1000, max_message_bytes: 4096}
place: {baselines: [m_etf, heft], cache_entries: 4}
jobs: {runners: 2, methods: [m_topo], measure: true}
policies:
  - {name: p1, checkpoint: runs/p1}
default_policy: p1
)",
                                               "/base");
  EXPECT_EQ(c.endpoint, "tcp://127.0.0.1:6000");
  EXPECT_EQ(c.workers, 3);
  EXPECT_EQ(c.state_dir, "/base/state");
  EXPECT_EQ(c.max_ops, 1000);
  EXPECT_EQ(c.limits.max_request_bytes, 4096);
  EXPECT_EQ(c.place_baselines, (std::vector<std::string>{"m_etf", "heft"}));
  EXPECT_EQ(c.cache_entries, 4);
  EXPECT_EQ(c.job_runners, 2);
  EXPECT_TRUE(c.measure_jobs);
  ASSERT_EQ(c.policies.size(), 1u);
  EXPECT_EQ(c.policies[0].checkpoint, "/base/runs/p1");
  EXPECT_EQ(c.default_policy, "p1");
  // Defaults where nothing is said.
  const ServiceConfig d = parse_service_config("endpoint: tcp://127.0.0.1:1\n", "");
  EXPECT_EQ(d.workers, ServiceConfig{}.workers);
  EXPECT_EQ(d.place_baselines, ServiceConfig{}.place_baselines);
}

TEST(ServiceConfig, RejectsUnknownKeysAtEveryLevel) {
  EXPECT_EQ(error_of("endpoint: x\nworkerz: 2\n").rfind("workerz: unknown field (known here: ", 0), 0u)
      << error_of("workerz: 2\n");
  EXPECT_NE(error_of("limits: {max_opz: 3}\n").find("limits.max_opz: unknown field (known here: "), std::string::npos);
  EXPECT_NE(error_of("jobs: {runner: 3}\n").find("jobs.runner: unknown field"), std::string::npos);
  EXPECT_NE(error_of("policies: [{name: a, checkpoint: b, path: c}]\n").find("policies[0].path: unknown field"),
            std::string::npos);
  EXPECT_NE(error_of("curve: {enable: true}\n").find("curve.enable: unknown field"), std::string::npos);
}

TEST(ServiceConfig, WrongTypesAndRangesNameTheField) {
  EXPECT_EQ(error_of("workers: many\n"), "workers: expected an integer, got 'many'");
  EXPECT_EQ(error_of("workers: 0\n"), "workers: must be in [1, 256], got 0");
  EXPECT_EQ(error_of("limits: {max_message_bytes: 10}\n"), "limits.max_message_bytes: must be >= 1024, got 10");
  EXPECT_EQ(error_of("limits: {max_ops: -5}\n"), "limits.max_ops: must be >= 1, got -5");  // was accepted
  EXPECT_EQ(error_of("limits: {max_refine_samples: -1}\n"), "limits.max_refine_samples: must be >= 0, got -1");
  EXPECT_EQ(error_of("limits: [1]\n"), "limits: expected a map, got a list");
  EXPECT_EQ(error_of("place: {baselines: [m_etf, [x]]}\n"), "place.baselines[1]: expected a string, got a list");
  EXPECT_EQ(error_of("jobs: {measure: sometimes}\n"), "jobs.measure: expected true or false, got 'sometimes'");
  EXPECT_EQ(error_of("policies: [{name: a}]\n"), "policies[0].checkpoint: missing");
  EXPECT_EQ(error_of("default_policy: nope\n"), "default_policy: 'nope' is not in policies");
  EXPECT_EQ(error_of("metrics_port: 70000\n"), "metrics_port: must be -1 (off), 0 (any) or a port");
  // Accepted before: a negative queue or max_jobs answered every optimize `busy`.
  EXPECT_EQ(error_of("jobs: {queue: -1}\n"), "jobs.queue: must be in [1, 1048576], got -1");
  EXPECT_EQ(error_of("jobs: {max_jobs: -5}\n"), "jobs.max_jobs: must be in [1, 16777216], got -5");
  EXPECT_NE(error_of("jobs: {keep_results_s: -1e300}\n").find("jobs.keep_results_s: must be in [0, "), std::string::npos);
  EXPECT_EQ(error_of("place: {cache_entries: -7}\n"), "place.cache_entries: must be in [1, 1048576], got -7");
  // A key given twice (the first was kept, the second dropped in silence).
  EXPECT_NE(error_of("workers: 2\nworkers: 4\n").find("the key 'workers' is given twice in one map"), std::string::npos)
      << error_of("workers: 2\nworkers: 4\n");
}

// Values that were taken and then ignored, or worse: runners started that many threads (INT_MAX), a queue of
// 0 answered every optimize `busy`, cache_entries 0 kept one, worker_wait_s without bind waited for nobody.
TEST(ServiceConfig, ValuesItWouldIgnoreAreRefused) {
  EXPECT_EQ(error_of("jobs: {runners: 257}\n"), "jobs.runners: must be in [1, 256], got 257");
  EXPECT_EQ(error_of("jobs: {runners: 2147483647}\n"), "jobs.runners: must be in [1, 256], got 2147483647");
  EXPECT_EQ(error_of("jobs: {queue: 0}\n"), "jobs.queue: must be in [1, 1048576], got 0");
  EXPECT_EQ(error_of("place: {cache_entries: 0}\n"), "place.cache_entries: must be in [1, 1048576], got 0");
  EXPECT_EQ(error_of("rollouts: {worker_wait_s: 5}\n"),
            "rollouts.worker_wait_s: only with rollouts.bind (without it there are no rollout workers to wait for)");
  EXPECT_EQ(parse_service_config("jobs: {runners: 256, queue: 1}\n", "").job_runners, 256);
  EXPECT_EQ(parse_service_config("rollouts: {bind: 'tcp://*:1', worker_wait_s: 5}\n", "").rollouts_wait_s, 5.0);
}

// received + milliseconds(ms) overflowed at INT64_MAX; a default above the cap made every request that
// gave no deadline carry one it could not have asked for.
TEST(ServiceConfig, DeadlinesAreCappedAndTheDefaultIsWithinTheMaximum) {
  EXPECT_EQ(error_of("default_deadline_ms: 9223372036854775807\n"),
            "default_deadline_ms: must be in [1, 1000000000], got 9223372036854775807");
  EXPECT_EQ(error_of("limits: {max_deadline_ms: 9223372036854775807}\n"),
            "limits.max_deadline_ms: must be in [1, 1000000000], got 9223372036854775807");
  EXPECT_EQ(error_of("default_deadline_ms: 700000\n"),
            "default_deadline_ms: 700000 is over limits.max_deadline_ms (600000)");
  EXPECT_EQ(error_of("limits: {max_deadline_ms: 1000}\n"),
            "default_deadline_ms: 30000 is over limits.max_deadline_ms (1000)");
  const ServiceConfig c =
      parse_service_config("default_deadline_ms: 1000000000\nlimits: {max_deadline_ms: 1000000000}\n", "");
  EXPECT_EQ(c.default_deadline_ms, 1'000'000'000);
  EXPECT_EQ(c.limits.max_deadline_ms, 1'000'000'000);
}

}  // namespace
}  // namespace placer::service
