// PlacementService with the real environment and placers: place, evaluate,
// baselines, bad graphs/clusters/placements, optimize jobs, restarts.
#include "placer/service/service.h"
#include "placer/runtime/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "placer/agent/train.h"
#include "placer/env/presets.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"
#include "placer/runtime/runtime.h"
#include "placer/service/metrics.h"

#include "../../service/src/jobs.h"
#include "../../service/src/prepared.h"

namespace placer::service {
namespace {

using namespace std::chrono_literals;

ServiceConfig small_config() {
  ServiceConfig c;
  c.place_baselines = {"single", "round_robin", "m_etf"};
  c.optimize_methods = {"m_topo", "local_search"};
  return c;
}

std::string handle(PlacementService& s, const std::string& text) {
  return s.handle(parse_request(text), Clock::now() + 60s);
}

// Runs a request that must fail; returns "code field: message".
std::string fail(PlacementService& s, const std::string& text) {
  try {
    handle(s, text);
  } catch (const RequestError& e) {
    return e.code() + " " + e.what();
  }
  return "no error";
}

const char* kMlp = R"("graph":{"builder":"mlp","options":{"layers":2,"width":64,"input":64,"batch":8}})";

std::string field_text(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  at += key.size() + 3;
  auto end = json.find_first_of(",}", at);
  return json.substr(at, end - at);
}

TEST(Service, PlaceWithoutPolicyReturnsTheBestBaselineWithBounds) {
  PlacementService s(small_config());
  std::string r = handle(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2"})");
  EXPECT_NE(r.find(R"("cluster":"k80x2","devices":["cuda:0","cuda:1"])"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find(R"("status":"ok")"), std::string::npos);
  EXPECT_NE(r.find("no policy loaded: best of the fast-path baselines"), std::string::npos);
  double step = std::stod(field_text(r, "step_s"));
  double lb = std::stod(field_text(r, "lower_bound_s"));
  EXPECT_GT(step, 0);
  EXPECT_GT(lb, 0);
  EXPECT_LE(lb, step * (1 + 1e-9));
  // Without a policy the answer is the best baseline itself.
  EXPECT_EQ(field_text(r, "speedup_vs_best_baseline"), "1.0");
  EXPECT_NE(r.find(R"("placement":{"graph":"mlp","device":{)"), std::string::npos);
}

TEST(Service, UnknownPolicyIsNotFound) {
  PlacementService s(small_config());
  EXPECT_EQ(fail(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2","policy":"ghost"})"),
            "not_found policy: no policy 'ghost' is loaded (ask `policies`)");
}

TEST(Service, ClusterNamesAreNeverPaths) {
  PlacementService s(small_config());
  std::string e = fail(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"/etc/passwd"})");
  EXPECT_EQ(e.rfind("bad_cluster cluster: unknown cluster preset '/etc/passwd' (known: k80x2", 0), 0u) << e;
}

// An inline cluster with a denormal peak_flops (every op infinite) or an
// overhead of 1e100 s (CLP's assertion) aborted the server from one request;
// now it is bad_cluster naming the field, for every request type that places.
TEST(Service, AbsurdClusterConstantsAreBadClusterNotACrash) {
  PlacementService s(small_config());
  const std::string cluster =
      R"({"format":"placer.cluster","version":1,"name":"2c","devices":[{"name":"cpu:0","memory_bytes":1000000000,)"
      R"("peak_flops":PEAK,"op_overhead_s":OVERHEAD},{"name":"cpu:1","memory_bytes":1000000000}]})";
  auto with = [&](const std::string& peak, const std::string& overhead) {
    std::string c = cluster;
    c.replace(c.find("PEAK"), 4, peak);
    c.replace(c.find("OVERHEAD"), 8, overhead);
    return c;
  };
  for (const char* type : {"place", "baselines"}) {
    // (methods for baselines only: a place request refuses them)
    const std::string methods = std::string(type) == "baselines" ? R"(,"methods":["m_topo"])" : "";
    std::string e = fail(s, std::string(R"({"version":1,"type":")") + type + R"(",)" + kMlp + methods +
                                R"(,"cluster":)" + with("1e-320", "0") + "}");
    EXPECT_EQ(e.rfind("bad_cluster cluster: cluster '2c': devices[0] 'cpu:0': peak_flops: ", 0), 0u) << e;
    e = fail(s, std::string(R"({"version":1,"type":")") + type + R"(",)" + kMlp + R"(,"cluster":)" +
                    with("1e11", "1e100") + "}");
    EXPECT_EQ(
        e.rfind("bad_cluster cluster: cluster '2c': devices[0] 'cpu:0': op_overhead_s: 1e+100 is out of range", 0), 0u)
        << e;
  }
}

// A request is UTF-8 JSON and nothing after it: an id of raw 0xff bytes was echoed into a reply no JSON reader takes,
// and `{...} xx` was served.
TEST(Service, RequestsAreUtf8AndEndWhereTheirJsonEnds) {
  PlacementService s(small_config());
  const std::string health = R"({"version":1,"type":"health","id":"ID"})";
  std::string bad = health;
  bad.replace(bad.find("ID"), 2, "\xff\xfe");
  for (const std::string& request : {bad, health + " xx"}) {
    const std::string e = fail(s, request);
    EXPECT_EQ(e.rfind("bad_json ", 0), 0u) << e;
    EXPECT_NE(e.find("malformed JSON at byte "), std::string::npos) << e;
  }
  EXPECT_EQ(fail(s, health + " \n"), "no error");  // white space after it is fine
}

TEST(Service, BadGraphsNameTheProblem) {
  PlacementService s(small_config());
  EXPECT_EQ(fail(s, R"({"version":1,"type":"place","graph":{"builder":"alexnet"},"cluster":"k80x2"})")
                .rfind("bad_graph graph.builder: unknown builder 'alexnet' (known: ", 0),
            0u);
  std::string opt =
      fail(s, R"({"version":1,"type":"place","graph":{"builder":"mlp","options":{"colour":3}},"cluster":"k80x2"})");
  EXPECT_EQ(opt.rfind("bad_graph graph.options: ", 0), 0u) << opt;
  EXPECT_NE(opt.find("colour"), std::string::npos) << opt;

  // A cycle: a -> b -> a, written by hand in the graph format.
  Graph g;
  g.name = "two";
  Op a;
  a.name = "a";
  a.type = op_types::kInput;
  a.outputs = {TensorSpec{{4}, DType::Float32}};
  OpId ia = g.add_op(a);
  Op b;
  b.name = "b";
  b.type = "aten::relu";
  b.inputs = {TensorRef{ia, 0}};
  b.args = {Arg::tensor(0)};
  b.outputs = {TensorSpec{{4}, DType::Float32}};
  g.add_op(b);
  std::string text = graph_to_json(g);
  std::string good = fail(s, R"({"version":1,"type":"evaluate","graph":{"inline":)" + text +
                                 R"(},"cluster":"k80x2","placement":{"device":{"a":"cuda:0","b":"cuda:1"}}})");
  EXPECT_EQ(good, "no error");
  // Give op "a" an input from "b".
  auto pos = text.find("\"inputs\": []");
  ASSERT_NE(pos, std::string::npos) << text;
  text.replace(pos, 12, R"("inputs": [{"op": "b", "output": 0}])");
  std::string cyc = fail(s, R"({"version":1,"type":"place","graph":{"inline":)" + text + R"(},"cluster":"k80x2"})");
  EXPECT_EQ(cyc.rfind("bad_graph graph.inline: ", 0), 0u) << cyc;
  EXPECT_NE(cyc.find("cycle"), std::string::npos) << cyc;
}

TEST(Service, EvaluateChecksThePlacementAgainstTheGraph) {
  PlacementService s(small_config());
  Graph g = build_graph("mlp", BuilderOptions{{{"layers", 2}, {"width", 64}, {"input", 64}, {"batch", 8}}, false});
  std::string devices;
  for (const auto& op : g.ops()) devices += (devices.empty() ? "" : ",") + json_quote(op.name) + ":\"cuda:0\"";
  std::string ok = handle(s, std::string(R"({"version":1,"type":"evaluate",)") + kMlp +
                                 R"(,"cluster":"k80x2","placement":{"device":{)" + devices + "}}}");
  EXPECT_NE(ok.find(R"("status":"ok")"), std::string::npos) << ok;
  // The same placement evaluated for another graph: ops missing / unknown.
  std::string wrong = fail(
      s,
      R"({"version":1,"type":"evaluate","graph":{"builder":"mlp","options":{"layers":3,"width":64,"input":64,"batch":8}},"cluster":"k80x2","placement":{"device":{)" +
          devices + "}}}");
  EXPECT_EQ(wrong.rfind("bad_placement placement.device.", 0), 0u) << wrong;
  std::string bad_device = fail(s, std::string(R"({"version":1,"type":"evaluate",)") + kMlp +
                                       R"(,"cluster":"k80x2","placement":{"device":{)" +
                                       devices.substr(0, devices.size() - 8) + "\"cuda:9\"}}}");
  EXPECT_NE(bad_device.find("cuda:9"), std::string::npos) << bad_device;
}

TEST(Service, EvaluateMeasuresOnTheServersDevicesWithAnInterval) {
  PlacementService s(small_config());
  Graph g = build_graph("mlp", BuilderOptions{{{"layers", 2}, {"width", 64}, {"input", 64}, {"batch", 8}}, false});
  std::string devices;
  for (const auto& op : g.ops())
    devices += (devices.empty() ? "" : ",") + json_quote(op.name) +
               (op.name.rfind("fc1", 0) == 0 ? ":\"cpu:1\"" : ":\"cpu:0\"");
  const std::string request = std::string(R"({"version":1,"type":"evaluate",)") + kMlp +
                              R"(,"devices":"cpu:2","placement":{"device":{)" + devices + "}}";
  const std::string r =
      handle(s, request + R"(,"measure":{"warmup_steps":1,"measured_steps":4,"max_steps":4,"seed":3}})");
  EXPECT_EQ(field_text(r, "measured"), "true") << r;
  EXPECT_EQ(field_text(r, "steps"), "4") << r;
  EXPECT_EQ(field_text(r, "stop"), "\"steps\"") << r;
  const double step = std::stod(field_text(r, "step_s")), lo = std::stod(field_text(r, "ci_low_s")),
               hi = std::stod(field_text(r, "ci_high_s"));
  EXPECT_LE(lo, step);
  EXPECT_LE(step, hi);
  EXPECT_GT(std::stod(field_text(r, "simulated_step_s")), 0.0) << r;  // the simulator's figure beside it
  // A minimum time holds it past max_steps (the step is far under the 0.2 s asked).
  const std::string held =
      handle(s, request + R"(,"measure":{"warmup_steps":1,"measured_steps":2,"max_steps":2,"min_time":0.2,"seed":3}})");
  EXPECT_EQ(field_text(held, "stop"), "\"min_time\"") << held;
  EXPECT_GT(std::stoi(field_text(held, "steps")), 2) << held;
  // Within the deadline: a minimum time of an hour (or no budget and 1000 steps) held a request worker and
  // the devices for that long; what is left of the deadline now ends it.
  const auto t0 = Clock::now();
  const std::string bounded = s.handle(
      parse_request(request + R"(,"measure":{"warmup_steps":1,"measured_steps":2,"max_steps":2,"min_time":3600}})"),
      Clock::now() + 500ms);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
  const std::string stop = field_text(bounded, "stop");
  EXPECT_TRUE(stop == "\"budget\"" || stop == "\"min_time\"") << bounded;
  EXPECT_LT(std::stoi(field_text(bounded, "steps")) * std::stod(field_text(bounded, "step_s")), 1.0) << bounded;
  // Simulated unless asked; "measure": false is the same.
  const std::string sim = handle(s, request + R"(,"measure":false})");
  EXPECT_EQ(field_text(sim, "measured"), "false") << sim;
  EXPECT_EQ(field_text(sim, "ci_low_s"), "") << sim;
  // Bad settings name the field; a cluster this machine cannot run is an error at measure.
  EXPECT_EQ(fail(s, request + R"(,"measure":{"max_steps":0}})").rfind("bad_request measure.max_steps: ", 0), 0u);
  const std::string min_time = fail(s, request + R"(,"measure":{"min_time":-1}})");
  EXPECT_NE(min_time.find(" measure.min_time: must be in [0, "), std::string::npos) << min_time;
  const std::string target = fail(s, request + R"(,"measure":{"target":2}})");
  EXPECT_NE(target.find(" measure.target: must be in [0, 0.5]"), std::string::npos) << target;
  EXPECT_EQ(fail(s, request + R"(,"measure":"yes"})").rfind("bad_request measure: expected true, false", 0), 0u);
  std::string gpu;
  for (const auto& op : g.ops()) gpu += (gpu.empty() ? "" : ",") + json_quote(op.name) + ":\"cuda:0\"";
  const std::string on_gpu =
      fail(s, std::string(R"({"version":1,"type":"evaluate",)") + kMlp +
                  R"(,"cluster":"k80x2","placement":{"device":{)" + gpu + R"(}},"measure":true})");
  if (!cuda_available()) {
    EXPECT_EQ(on_gpu.rfind("bad_request measure: ", 0), 0u) << on_gpu;
  }
}

TEST(Service, BaselinesRunTheNamedPlacers) {
  PlacementService s(small_config());
  std::string r = handle(s, std::string(R"({"version":1,"type":"baselines",)") + kMlp +
                                R"(,"devices":"cpu:2","methods":["single","heft"],"include_placement":false})");
  EXPECT_NE(r.find(R"("results":[{"method":"single")"), std::string::npos) << r;
  EXPECT_NE(r.find(R"({"method":"heft")"), std::string::npos) << r;
  EXPECT_EQ(r.find("\"placement\""), std::string::npos);
  EXPECT_EQ(
      fail(s, std::string(R"({"version":1,"type":"baselines",)") + kMlp + R"(,"cluster":"k80x2","methods":["magic"]})")
          .rfind("bad_request methods[0]: unknown placement method 'magic'", 0),
      0u);
}

// A placer listed twice ran twice (a search job's round ran it again); refused as a learned job's lists are.
TEST(Service, AMethodListedTwiceIsRefused) {
  PlacementService s(small_config());
  const std::string head = std::string(R"({"version":1,)") + kMlp + R"(,"cluster":"k80x2",)";
  EXPECT_EQ(fail(s, head + R"("type":"baselines","methods":["m_etf","single","m_etf"]})"),
            "bad_request methods[2]: 'm_etf' is listed twice (also at [0]); each placer runs once");
  EXPECT_EQ(fail(s, head + R"("type":"optimize","budget":{"samples":10},"methods":["m_topo","m_topo"]})"),
            "bad_request methods[1]: 'm_topo' is listed twice (also at [0]); each placer runs once");
}

// The server's own lists are checked once, at start, naming the config field: a placer listed twice (or an
// unknown one) in place.baselines failed every baselines request that named no methods.
TEST(Service, TheConfiguredMethodListsAreCheckedAtStart) {
  const auto refused = [](const ServiceConfig& c) -> std::string {
    try {
      PlacementService s(c);
    } catch (const RequestError& e) {
      return std::string("a request's error: ") + e.what();
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  ServiceConfig twice = small_config();
  twice.place_baselines = {"single", "m_etf", "single"};
  EXPECT_EQ(refused(twice), "place.baselines[2]: 'single' is listed twice (also at [0]); each placer runs once");
  ServiceConfig unknown = small_config();
  unknown.place_baselines = {"single", "magic"};
  const std::string e = refused(unknown);
  EXPECT_EQ(e.rfind("place.baselines[1]: unknown placement method 'magic' (known: ", 0), 0u) << e;
  ServiceConfig jobs_twice = small_config();
  jobs_twice.optimize_methods = {"m_topo", "m_topo"};
  EXPECT_EQ(refused(jobs_twice), "jobs.methods[1]: 'm_topo' is listed twice (also at [0]); each placer runs once");
  // A request's own methods are still checked per request.
  PlacementService s(small_config());
  EXPECT_EQ(fail(s, std::string(R"({"version":1,"type":"baselines",)") + kMlp +
                        R"(,"cluster":"k80x2","methods":["heft","heft"]})"),
            "bad_request methods[1]: 'heft' is listed twice (also at [0]); each placer runs once");
}

// A baselines request keeps its deadline: each search gets its share of the time left, and stops there with
// its best so far (local_search ran its 2000 evaluations whatever the limit: 0.71 s on nmt of 10 steps).
TEST(Service, BaselinesKeepTheirDeadline) {
  PlacementService s(small_config());
  const std::string nmt = R"({"version":1,"type":"baselines","graph":{"builder":"nmt","options":{"steps":10}},)"
                          R"("cluster":"k80x4","include_placement":false,)";
  handle(s, nmt + R"("methods":["single"]})");  // the graph prepared (cached): what is timed is the search
  const auto start = Clock::now();
  const std::string r = s.handle(parse_request(nmt + R"("seed":8,"methods":["local_search"]})"), Clock::now() + 250ms);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(took, 0.5) << r.substr(0, 300);
  EXPECT_NE(r.find(R"("method":"local_search")"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find(R"("status":"ok")"), std::string::npos) << r.substr(0, 300);
}

std::string wait_state(PlacementService& s, const std::string& id, const std::string& want, int max_ms = 20000) {
  std::string r;
  for (int i = 0; i < max_ms / 20; ++i) {
    r = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
    if (r.find("\"state\":\"" + want + "\"") != std::string::npos) return r;
    std::this_thread::sleep_for(20ms);
  }
  return r;
}

std::string job_id_of(const std::string& reply) {
  auto at = reply.find("\"job_id\":\"");
  return reply.substr(at + 10, 18);
}

TEST(Service, OptimizeJobRunsToItsBudgetAndResultIsKeptUntilFetched) {
  PlacementService s(small_config());
  std::string id = job_id_of(handle(
      s, std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x2","budget":{"samples":300}})"));
  std::string done = wait_state(s, id, "done");
  ASSERT_NE(done.find("\"state\":\"done\""), std::string::npos) << done;
  EXPECT_GE(std::stoll(field_text(done, "samples")), 300);
  std::string r = handle(s, R"({"version":1,"type":"result","job_id":")" + id + "\"}");
  EXPECT_NE(r.find(R"("placement":{"graph":"mlp")"), std::string::npos);
  // The search starts from the best baseline, so it is never worse.
  EXPECT_GE(std::stod(field_text(r, "speedup_vs_start")), 1.0);
  EXPECT_EQ(fail(s, R"({"version":1,"type":"result","job_id":")" + id + "\"}").rfind("not_found job_id: no job", 0),
            0u);
}

// A finished job keeps its record, not its inputs: each finished record pinned the client's graph (up to
// 16 MiB of text), its parsed document and the prepared problem, up to max_jobs of them for an hour.
TEST(Service, AFinishedJobLetsGoOfItsGraphAndPreparedProblem) {
  ServiceConfig config = small_config();
  config.optimize_methods = {"m_topo"};
  JobManager jobs(config, nullptr);
  jobs.start();
  auto p = std::make_shared<PreparedRequest>();
  p->graph = build_graph("mlp", BuilderOptions{{{"layers", 2}, {"width", 16}, {"input", 16}, {"batch", 4}}, false});
  p->cluster = cluster_preset("k80x2");
  p->prepared = PreparedProblem::make(p->graph, p->cluster);
  const Request r =
      parse_request(std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x2","budget":{"samples":8}})");
  ASSERT_FALSE(r.graph.builder.empty() && r.graph.inline_json.empty());
  const std::string id = jobs.submit(r, p);
  std::string status;
  for (int i = 0; i < 1000 && status.find("\"state\":\"done\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(20ms);
    status = jobs.status_json(id);
  }
  ASSERT_NE(status.find("\"state\":\"done\""), std::string::npos) << status;
  EXPECT_EQ(p.use_count(), 1);  // the job's reference is gone
  const std::string result = jobs.result_json(id, true);
  EXPECT_NE(result.find("\"placement\""), std::string::npos) << result;  // what result reports is kept
}

TEST(Service, CancelStopsAJobMidWayAndKeepsTheBestSoFar) {
  ServiceConfig c = small_config();
  c.optimize_methods = {"local_search"};
  PlacementService s(c);
  std::string id = job_id_of(handle(
      s, std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x4","budget":{"seconds":60}})"));
  wait_state(s, id, "running");
  std::this_thread::sleep_for(300ms);
  auto t0 = Clock::now();
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  std::string r = wait_state(s, id, "cancelled", 5000);
  EXPECT_LT(Clock::now() - t0, 3s);
  EXPECT_NE(r.find("\"state\":\"cancelled\""), std::string::npos) << r;
  EXPECT_NE(r.find("cancelled by request; its best placement so far is kept"), std::string::npos) << r;
  EXPECT_NE(handle(s, R"({"version":1,"type":"result","job_id":")" + id + "\"}").find("\"placement\""),
            std::string::npos);
}

// A cancel of a job that already ended asks nothing of it: the reply said "cancel_requested": true beside
// "state": "done".
TEST(Service, ACancelOfAFinishedJobRequestsNothing) {
  ServiceConfig c = small_config();
  c.optimize_methods = {"m_topo"};
  PlacementService s(c);
  const std::string id = job_id_of(handle(
      s, std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x2","budget":{"samples":4}})"));
  wait_state(s, id, "done");
  const std::string r = handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  EXPECT_EQ(field_text(r, "state"), "\"done\"") << r;
  EXPECT_EQ(field_text(r, "cancel_requested"), "false") << r;
}

TEST(Service, FullJobQueueIsBusy) {
  ServiceConfig c = small_config();
  c.job_queue = 1;
  c.optimize_methods = {"local_search"};
  PlacementService s(c);
  std::string req =
      std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x2","budget":{"seconds":30}})";
  std::string first = job_id_of(handle(s, req));
  wait_state(s, first, "running");
  std::string second = job_id_of(handle(s, req));
  EXPECT_EQ(fail(s, req).rfind("busy 1 optimize jobs are already waiting", 0), 0u);
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + second + "\"}");
  EXPECT_NE(wait_state(s, second, "cancelled").find("cancelled before it started"), std::string::npos);
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + first + "\"}");
}

TEST(Service, JobsRunningWhenTheServerStopsReportFailedAfterRestart) {
  auto dir = std::filesystem::temp_directory_path() / ("placer_svc_state_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  c.optimize_methods = {"local_search"};
  std::string id, done_id;
  {
    PlacementService s(c);
    done_id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                      R"(,"cluster":"k80x2","budget":{"samples":50}})"));
    wait_state(s, done_id, "done");
    id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                 R"(,"cluster":"k80x2","budget":{"seconds":60}})"));
    wait_state(s, id, "running");
    // A crash would leave the record "running"; simulate that by writing it back as such.
  }
  {
    PlacementService s(c);  // restarted with the same state dir
    std::string r = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
    EXPECT_NE(r.find("\"state\":\"failed\""), std::string::npos) << r;
    EXPECT_NE(r.find("server shut down while the job ran"), std::string::npos) << r;
    std::string d = handle(s, R"({"version":1,"type":"result","job_id":")" + done_id + "\"}");
    EXPECT_NE(d.find("\"state\":\"done\""), std::string::npos) << d;
    EXPECT_NE(d.find(R"("placement":{"graph":"mlp")"), std::string::npos);
  }
  // A record left "running" by a process that died.
  std::string rec = read_file((dir / "jobs" / (id + ".json")).string());
  auto at = rec.find("\"state\":\"failed\"");
  ASSERT_NE(at, std::string::npos);
  rec.replace(at, std::string("\"state\":\"failed\"").size(), "\"state\":\"running\"");
  write_file_atomic((dir / "jobs" / (id + ".json")).string(), rec);
  {
    PlacementService s(c);
    std::string r = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
    EXPECT_NE(r.find("\"state\":\"failed\""), std::string::npos) << r;
    EXPECT_NE(r.find("the server restarted while the job was running"), std::string::npos) << r;
  }
  // A record whose best is a time without its placement (a learned job's policy best, held by its trainer):
  // after a restart that fails it, the result has no best, not a time with an empty placement.
  rec = read_file((dir / "jobs" / (id + ".json")).string());
  at = rec.find("\"state\":\"failed\"");
  ASSERT_NE(at, std::string::npos);
  rec.replace(at, std::string("\"state\":\"failed\"").size(), "\"state\":\"running\"");
  const size_t bp = rec.find("\"best_placement\":");
  ASSERT_NE(bp, std::string::npos) << rec;
  const size_t open = rec.find('{', rec.find("\"device\":", bp)), close = rec.find('}', open);
  rec.replace(open, close - open + 1, "{}");
  write_file_atomic((dir / "jobs" / (id + ".json")).string(), rec);
  {
    PlacementService s(c);
    const std::string r = handle(s, R"({"version":1,"type":"result","job_id":")" + id + "\"}");
    EXPECT_NE(r.find("\"best\":null"), std::string::npos) << r;
    EXPECT_EQ(r.find("\"device\":{}"), std::string::npos) << r;
  }
  placer::remove_tree(dir);
}

// A small seq2seq policy for kMlp's graph on k80x2 in `dir`, cloned from `method`.
void train_mlp_policy(const std::filesystem::path& dir, const std::string& name, const std::string& method,
                      int bc_steps, int64_t updates, int place_samples) {
  placer::remove_tree(dir);
  TrainConfig t;
  t.name = name;
  t.graph.builder = "mlp";
  t.graph.options = {{"layers", 2}, {"width", 64}, {"input", 64}, {"batch", 8}};
  t.cluster = "k80x2";
  t.policy.hidden = 16;
  if (place_samples > 0) t.policy.place_samples = place_samples;
  t.optimizer.updates = updates;
  t.optimizer.samples_per_update = 4;
  t.warm_start.methods = {method};
  t.warm_start.bc_steps = bc_steps;
  t.run.output_dir = dir.string();
  TrainControls quiet;
  quiet.progress = false;
  train(t, nullptr, quiet);
}

TEST(Service, PlaceDecodesWithALoadedPolicyAndExplicitPolicyErrorsAreNamed) {
  auto dir = std::filesystem::temp_directory_path() / ("placer_svc_policy_" + std::to_string(::getpid()));
  train_mlp_policy(dir, "svc", "m_etf", 5, 3, 0);
  ServiceConfig c = small_config();
  c.policies = {{"mlp2", dir.string(), "tiny"}};
  PlacementService s(c);
  std::string r = handle(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2"})");
  EXPECT_NE(r.find(R"("method":"policy:mlp2","status":"ok")"), std::string::npos) << r.substr(0, 400);
  EXPECT_NE(r.find(R"("best_baseline":{"method":)"), std::string::npos);
  // Naming a policy the server does not hold is an error, not a fallback.
  EXPECT_EQ(fail(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2","policy":"nope"})"),
            "not_found policy: no policy 'nope' is loaded (ask `policies`)");
  EXPECT_EQ(handle(s, R"({"version":1,"type":"policies"})"),
            R"({"default":"mlp2","policies":[{"name":"mlp2","description":"tiny","available":true}]})");
  // The checkpoint file itself, not its folder: served, and listed as available (it said false).
  ServiceConfig by_file = small_config();
  by_file.policies = {{"mlp2", (dir / "checkpoint.pt").string(), "tiny"}};
  PlacementService f(by_file);
  EXPECT_EQ(handle(f, R"({"version":1,"type":"policies"})"),
            R"({"default":"mlp2","policies":[{"name":"mlp2","description":"tiny","available":true}]})");
  r = handle(f, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2"})");
  EXPECT_NE(r.find(R"("method":"policy:mlp2","status":"ok")"), std::string::npos) << r.substr(0, 400);
  placer::remove_tree(dir);
}

// An ensemble folder (ensemble.yaml listing two policies of one shape) is served like a run folder; a member
// gone makes it unavailable, and a place request naming it gets an error naming the field.
TEST(Service, AnEnsembleFolderIsServedAndAMissingMemberIsNamed) {
  auto dir = std::filesystem::temp_directory_path() / ("placer_svc_ensemble_" + std::to_string(::getpid()));
  train_mlp_policy(dir / "a", "a", "m_etf", 5, 1, 0);
  train_mlp_policy(dir / "b", "b", "round_robin", 5, 1, 0);
  std::ofstream(dir / "ensemble.yaml") << "members: [a/checkpoint.pt, b/checkpoint.pt]\n";
  ServiceConfig c = small_config();
  c.policies = {{"ens", dir.string(), "two"}};
  PlacementService s(c);
  EXPECT_EQ(handle(s, R"({"version":1,"type":"policies"})"),
            R"({"default":"ens","policies":[{"name":"ens","description":"two","available":true}]})");
  const std::string head = std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2")";
  const std::string r = handle(s, head + R"(,"policy":"ens"})");
  EXPECT_NE(r.find(R"("method":"policy:ens","status":"ok")"), std::string::npos) << r.substr(0, 400);
  std::filesystem::remove(dir / "b" / "checkpoint.pt");
  EXPECT_EQ(handle(s, R"({"version":1,"type":"policies"})"),
            R"({"default":"ens","policies":[{"name":"ens","description":"two","available":false}]})");
  const std::string e = fail(s, head + R"(,"policy":"ens"})");
  EXPECT_NE(e.find("not_found policy: policy 'ens': "), std::string::npos) << e;
  EXPECT_NE(e.find("ensemble.yaml: field 'members'[1]: '"), std::string::npos) << e;
  placer::remove_tree(dir);
}

// The number after "key": in a reply, from `from` on.
double number_after(const std::string& reply, const std::string& key, size_t from = 0) {
  const size_t at = reply.find("\"" + key + "\":", from);
  if (at == std::string::npos) return -1.0;
  return std::stod(reply.substr(at + key.size() + 3));
}

// With no policy named, the default policy's placement stands only when the
// fast path's best baseline is not faster: a policy cloned from round_robin
// (slow on this MLP) loses to the fast path, and the reply says who found it.
TEST(Service, PlaceWithTheDefaultPolicyIsNeverSlowerThanTheFastPath) {
  auto dir = std::filesystem::temp_directory_path() / ("placer_svc_rr_" + std::to_string(::getpid()));
  train_mlp_policy(dir, "rr", "round_robin", 200, 0, 1);
  ServiceConfig c = small_config();
  c.policies = {{"rr", dir.string(), "clones round_robin"}};
  PlacementService s(c);
  const std::string head = std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2")";
  const std::string r = handle(s, head + "}");
  const double step = number_after(r, "step_s");
  const double fast = number_after(r, "step_s", r.find("\"best_baseline\":{"));
  const double policy = number_after(r, "policy_step_s");
  ASSERT_GT(step, 0) << r.substr(0, 400);
  ASSERT_GT(fast, 0) << r.substr(0, 400);
  EXPECT_LE(step, fast) << r.substr(0, 400);
  ASSERT_GT(policy, fast) << "the round_robin clone should be slower here: " << r.substr(0, 400);
  EXPECT_EQ(r.find(R"("method":"policy:rr")"), std::string::npos) << r.substr(0, 400);
  EXPECT_NE(r.find("is faster than policy:rr"), std::string::npos) << r.substr(0, 400);
  // Naming the policy asks for its placement, as before.
  const std::string named = handle(s, head + R"(,"policy":"rr"})");
  EXPECT_NE(named.find(R"("method":"policy:rr")"), std::string::npos) << named.substr(0, 400);
  EXPECT_DOUBLE_EQ(number_after(named, "step_s"), policy);
  placer::remove_tree(dir);
}

TEST(Service, HealthAndPolicies) {
  ServiceConfig c = small_config();
  c.policies = {{"p1", "/nonexistent/run", "test policy"}};
  PlacementService s(c);
  std::string h = handle(s, R"({"version":1,"type":"health"})");
  EXPECT_NE(h.find(R"("status":"serving","protocol_version":1)"), std::string::npos) << h;
  EXPECT_EQ(handle(s, R"({"version":1,"type":"policies"})"),
            R"({"default":"p1","policies":[{"name":"p1","description":"test policy","available":false}]})");
}

// configs/service.yaml names the pretrained gnn as its default before `make
// pretrained` has made it: a place request still gets the fast path's answer,
// and the note says no policy was loaded.
TEST(Service, ADefaultPolicyWithoutItsCheckpointFallsBackToTheFastPath) {
  ServiceConfig c = small_config();
  c.policies = {{"pretrained", "/nonexistent/policies/pretrained", "not made yet"}};
  c.default_policy = "pretrained";
  PlacementService s(c);
  const std::string r = handle(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2"})");
  EXPECT_NE(r.find(R"("status":"ok")"), std::string::npos) << r.substr(0, 300);
  EXPECT_NE(r.find("no policy loaded: best of the fast-path baselines"), std::string::npos) << r.substr(0, 600);
}

// A learned job's train config is read from the request's own fields: errors
// name the field under "learned" and are refused before anything runs.
TEST(Service, LearnedConfigErrorsNameTheField) {
  PlacementService s(small_config());
  const std::string head = std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                           R"(,"cluster":"k80x2","budget":{"samples":32},"learned":)";
  EXPECT_EQ(fail(s, head + R"({"train":{"lr":"fast"}}})"),
            "bad_request learned.train.lr: expected a number, got \"fast\"");
  EXPECT_EQ(fail(s, head + R"({"train":{"lr":20}}})"), "bad_request learned.train.lr: must be in [0, 10], got 20");
  EXPECT_EQ(fail(s, head + R"({"policy":{"type":"lstm"}}})"),
            "bad_request learned.policy.type: unknown policy 'lstm' (known: seq2seq, hierarchical, gnn)");
  EXPECT_EQ(fail(s, head + R"({"policy":{"hidden":9}}})"), "bad_request learned.policy.hidden: must be even, got 9");
  EXPECT_EQ(fail(s, head + R"({"trian":{}}})").rfind("bad_request learned.trian: unknown field (known here: ", 0), 0u);
  EXPECT_EQ(fail(s, head + R"({"graph":{"builder":"nmt"}}})"),
            "bad_request learned.graph: set by the server from the request (graph, cluster, devices); leave it out "
            "of the train config");
  EXPECT_EQ(fail(s, head + R"({"run":{"output_dir":"/tmp/x"}}})"),
            "bad_request learned.run.output_dir: the server keeps the job's files in its state folder");
  EXPECT_EQ(fail(s, head + R"({"policy":{"init_from":"/etc/passwd"}}})"),
            "bad_request learned.policy.init_from: a request cannot name a file on the server; 'pretrained' (the "
            "shipped policy) is the one value it takes");
  EXPECT_EQ(fail(s, head + R"({"train":5}})"), "bad_request learned.train: expected an object");
  EXPECT_EQ(fail(s, head + R"({"warm_start":{"bc_steps":9000}}})"),
            "bad_request learned.warm_start.bc_steps: at most 5000 in a service job, got 9000");
  // The refinement after the budget held the runner (and cancel, shutdown, restarts) for days at 1e12.
  EXPECT_EQ(fail(s, head + R"({"train":{"refine_evaluations":1000000000000}}})"),
            "bad_request learned.train.refine_evaluations: at most 100000 in a service job, got 1000000000000");
  EXPECT_EQ(fail(s, head + R"("seq2seq","reward_mode":"measured"})"),
            "bad_request reward_mode: 'measured' runs the model on this server's devices; the server's config does "
            "not allow it (jobs.measure: false); use simulated");
}

// A learned job's warm-start and compare names are checked at submit (an unknown one failed the job
// later), and each placer is listed once: with every name known and none twice, the list is at most
// the registry's length (a list of the same placer thousands of times held the runner, cancel and all).
TEST(Service, LearnedMethodNamesAreCheckedAtSubmit) {
  PlacementService s(small_config());
  const std::string head = std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                           R"(,"cluster":"k80x2","budget":{"samples":32},"learned":)";
  const std::string unknown = fail(s, head + R"({"warm_start":{"methods":["m_etf","nope"]}}})");
  EXPECT_EQ(unknown.rfind("bad_request learned.warm_start.methods[1]: unknown method 'nope' (known: ", 0), 0u)
      << unknown;
  EXPECT_EQ(fail(s, head + R"({"warm_start":{"methods":["m_etf","heft","m_etf"]}}})"),
            "bad_request learned.warm_start.methods[2]: 'm_etf' is listed twice (also at [0]); each placer runs once");
  const std::string compare = fail(s, head + R"({"compare":["dp","nope"]}})");
  EXPECT_EQ(compare.rfind("bad_request learned.compare[1]: unknown method 'nope' (known: ", 0), 0u) << compare;
  EXPECT_EQ(fail(s, head + R"({"compare":["dp","dp"]}})"),
            "bad_request learned.compare[1]: 'dp' is listed twice (also at [0]); each placer runs once");
}

// A cancel stops the warm start between its placers (and a search within it): the job waited for all of
// them, a SIGTERM too. A warm start cut short leaves no checkpoint, so a resumed job starts it again.
TEST(Service, ACancelStopsTheWarmStart) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_warm_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  const TrainConfig c = parse_train_config(
      "name: t\ngraph: {builder: mlp, options: {layers: 2, width: 64, input: 64, batch: 8}}\ncluster: k80x2\n"
      "policy: {type: seq2seq, hidden: 8}\ntrain: {updates: 2, samples_per_update: 4}\n"
      "warm_start: {methods: [m_etf, heft, local_search], bc_steps: 10}\nrun: {seed: 1, output_dir: " +
          dir.string() + "}\n",
      "test");
  std::atomic<bool> cancel{true};
  TrainControls ctl;
  ctl.progress = false;
  ctl.cancel = &cancel;
  const TrainResult r = train(c, nullptr, ctl);
  EXPECT_EQ(r.ended_by, "stopped");
  EXPECT_TRUE(r.baselines.empty()) << r.baselines.size() << " warm-start placers ran after the cancel";
  EXPECT_FALSE(std::filesystem::exists(dir / "checkpoint.pt"));
  placer::remove_tree(dir);
}

// A pipeline needs backward and update ops: on a forward-only graph it is refused naming the field (it was
// bad_request with an empty field).
TEST(Service, APipelineOfAForwardOnlyGraphNamesTheField) {
  PlacementService s(small_config());
  EXPECT_EQ(fail(s, R"({"version":1,"type":"place","graph":{"builder":"mlp","forward_only":true},"cluster":"k80x2",)"
                    R"("objective":"pipeline"})"),
            "bad_request graph.forward_only: a pipeline objective needs a training graph (backward and update ops); "
            "this one is forward-only");
}

// Learned jobs export reward series labelled by job; only the newest
// job_metric_series finished jobs keep them (bounded label cardinality), and a
// fetched result takes its series away.
TEST(Service, LearnedJobSeriesAreBoundedAndLeaveWithTheJob) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  ServiceConfig config = small_config();
  config.job_metric_series = 1;
  PlacementService s(config, &metrics);
  auto run_job = [&] {
    std::string r =
        handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                      R"(,"cluster":"k80x2","budget":{"samples":32},"learned":{"policy":{"type":"seq2seq","hidden":8},)"
                      R"("train":{"samples_per_update":8},"warm_start":{"methods":["m_etf"],"bc_steps":0}}})");
    std::string id = field_text(r, "job_id");
    id = id.substr(1, id.size() - 2);
    std::string st;
    for (int i = 0; i < 1200; ++i) {
      st = handle(s, R"({"version":1,"type":"status","job_id":")" + id + R"("})");
      if (st.find(R"("state":"done")") != std::string::npos || st.find(R"("state":"failed")") != std::string::npos)
        break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_NE(st.find(R"("state":"done")"), std::string::npos) << st;
    return id;
  };
  auto text = [&] { return prometheus::TextSerializer().Serialize(registry.Collect()); };
  std::string a = run_job();
  EXPECT_NE(text().find("placer_train_reward{graph=\"mlp\",run=\"" + a + "\"}"), std::string::npos);
  std::string b = run_job();
  EXPECT_EQ(text().find("run=\"" + a + "\""), std::string::npos) << "the older job's series must go";
  EXPECT_NE(text().find("placer_train_updates{graph=\"mlp\",run=\"" + b + "\"} 4"), std::string::npos) << text();
  std::string result = handle(s, R"({"version":1,"type":"result","job_id":")" + b + R"(","include_placement":false})");
  EXPECT_NE(result.find(R"("kind":"learned")"), std::string::npos) << result;
  EXPECT_EQ(text().find("run=\"" + b + "\""), std::string::npos) << "a fetched job's series must go";
}

// "Never worse than what it already saw": a learned job whose training finds
// nothing as fast as the service's own fast-path answer for the same graph and
// cluster returns that answer, says who found it, and keeps the policy's own
// best apart.
TEST(Service, LearnedJobReturnsTheFastPathWhenItIsFaster) {
  PlacementService s(small_config());
  const std::string place = handle(s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x4"})");
  const std::string fast_method = field_text(place, "method");
  const double fast_step = std::stod(field_text(place, "step_s"));
  // One update of 8 sampled placements of an untrained policy (no greedy decode); the warm start
  // round_robin is not cloned (bc_steps 0).
  std::string id = job_id_of(handle(
      s,
      std::string(R"({"version":1,"type":"optimize",)") + kMlp +
          R"(,"cluster":"k80x4","budget":{"samples":8},"seed":5,"learned":{"policy":{"type":"seq2seq","hidden":8},)"
          R"("train":{"samples_per_update":8,"greedy_sample":false},"warm_start":{"methods":["round_robin"],"bc_steps":0}}})"));
  wait_state(s, id, "done");
  const std::string r = handle(s, R"({"version":1,"type":"result","job_id":")" + id + R"("})");
  const std::string best = r.substr(r.find("\"best\":"));
  const std::string policy_best = r.substr(r.find("\"policy_best\":"));
  ASSERT_GT(std::stod(field_text(policy_best, "step_s")), fast_step) << r;  // the policy did not beat it
  EXPECT_EQ(field_text(best, "found_by"), "\"fast_path\"") << r;
  EXPECT_EQ(field_text(best, "method"), fast_method) << r;
  EXPECT_EQ(std::stod(field_text(best, "step_s")), fast_step) << r;
  EXPECT_EQ(field_text(policy_best, "method"), "\"learned:seq2seq\"") << r;
  // The final table lists the fast path's answer as a seen row, simulated like every other row.
  const std::string table = r.substr(r.find("\"final_table\":"));
  EXPECT_EQ(field_text(table, "rows_made"), "\"simulated\"") << r;
  const std::string seen =
      "{\"method\":\"fast_path:" + fast_method.substr(1, fast_method.size() - 2) + "\",\"role\":\"seen\"";
  ASSERT_NE(table.find(seen), std::string::npos) << r;
  EXPECT_EQ(std::stod(field_text(table.substr(table.find(seen)), "step_s")), fast_step) << r;
  // The placement handed out is the fast path's.
  const std::string with = handle(
      s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x4","include_placement":true})");
  EXPECT_EQ(with.substr(with.find("\"placement\":")), r.substr(r.find("\"placement\":")));
}

// A policy kept with save_as answers with its own best in training, not the run's best (a baseline's here):
// policy_best_placement.json was not copied, and the saved policy read best_placement.json as its own.
TEST(Service, ASavedPolicyAnswersWithItsOwnBestNotTheRuns) {
  PlacementService s(small_config());
  std::string id = job_id_of(handle(
      s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
             R"(,"cluster":"k80x4","budget":{"samples":8},"seed":5,"save_as":"own","learned":{"policy":)"
             R"({"type":"seq2seq","hidden":8,"place_samples":1},)"
             R"("train":{"samples_per_update":8,"greedy_sample":false},)"
             R"("warm_start":{"methods":["round_robin"],"bc_steps":100}}})"));
  wait_state(s, id, "done");
  const std::string r = handle(s, R"({"version":1,"type":"result","job_id":")" + id + R"("})");
  const double policy_best = std::stod(field_text(r.substr(r.find("\"policy_best\":")), "step_s"));
  ASSERT_LT(std::stod(field_text(r.substr(r.find("\"best\":")), "step_s")), policy_best) << r;  // a baseline's
  const std::string place = handle(
      s, std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x4","policy":"own"})");
  EXPECT_DOUBLE_EQ(number_after(place, "policy_step_s"), policy_best) << place.substr(0, 600);
}

// The objective is part of the key of every cache: a pipeline's prepared
// problem (its baselines, lower bound and policy answers) never answers a step
// request, nor one with another micro-batch count or schedule.
TEST(Service, TheObjectiveIsPartOfTheCacheKey) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  PlacementService s(small_config(), &metrics);
  const std::string head =
      std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2","include_placement":false)";
  const std::string step = handle(s, head + "}");
  const std::string pipe = handle(s, head + R"(,"objective":"pipeline"})");
  handle(s, head + R"(,"objective":"pipeline","schedule":"gpipe"})");
  handle(s, head + R"(,"objective":"pipeline","microbatches":2})");
  handle(s, head + R"(,"objective":"pipeline","microbatches":4,"schedule":"1f1b"})");  // the defaults, spelled out
  handle(s, head + R"(,"objective":"step"})");
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_NE(text.find("placer_service_cache_lookups_total{result=\"miss\"} 4"), std::string::npos) << text;
  EXPECT_NE(text.find("placer_service_cache_lookups_total{result=\"hit\"} 2"), std::string::npos) << text;
  // Replies say what they were judged by.
  EXPECT_EQ(field_text(step, "objective"), "\"step\"") << step;
  EXPECT_EQ(step.find("\"microbatches\""), std::string::npos) << step;
  EXPECT_EQ(field_text(pipe, "objective"), "\"pipeline\"") << pipe;
  EXPECT_EQ(field_text(pipe, "microbatches"), "4") << pipe;
  EXPECT_EQ(field_text(pipe, "schedule"), "\"1f1b\"") << pipe;
  const std::string base = std::string(R"({"version":1,"type":"baselines",)") + kMlp +
                           R"(,"cluster":"k80x2","methods":["m_etf"],"objective":"pipeline","schedule":"gpipe"})";
  const std::string baselines = handle(s, base);
  EXPECT_EQ(field_text(baselines, "schedule"), "\"gpipe\"") << baselines;
}

// Keeping a policy under a name it already had deleted the old one before moving the new one in: a crash
// between the two lost both. The old one is now moved aside first; a restart puts back one whose
// replacement never arrived, and drops staged copies and moved-aside ones that were replaced.
TEST(Service, APolicySaveCutOffLosesNothing) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_saves_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  const auto policies = dir / "policies";
  for (const char* d : {".p1.replaced-7-0", ".p2.saving-7-1", "p3", ".p3.replaced-7-2"}) {
    std::filesystem::create_directories(policies / d);
    write_file_atomic((policies / d / "checkpoint.pt").string(), "x");
  }
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  {
    PlacementService s(c);
    const std::string r = handle(s, R"({"version":1,"type":"policies"})");
    EXPECT_NE(r.find("\"p1\""), std::string::npos) << r;
    EXPECT_NE(r.find("\"p3\""), std::string::npos) << r;
  }
  EXPECT_TRUE(std::filesystem::exists(policies / "p1" / "checkpoint.pt"));
  EXPECT_TRUE(std::filesystem::exists(policies / "p3" / "checkpoint.pt"));
  for (const char* gone : {".p1.replaced-7-0", ".p2.saving-7-1", ".p3.replaced-7-2", "p2"})
    EXPECT_FALSE(std::filesystem::exists(policies / gone)) << gone;
  placer::remove_tree(dir);
}

// A job record that cannot be read (damaged, or cut short by a power loss) leaves its job's folder alone:
// the folder holds the checkpoint, and was deleted with the unreadable record's job. A folder without a
// record (a crash inside forget()) still goes.
TEST(Service, AnUnreadableJobRecordKeepsItsFolder) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_records_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  const auto jobs = dir / "jobs";
  std::filesystem::create_directories(jobs / "j-00000000000000aa");
  std::filesystem::create_directories(jobs / "j-00000000000000bb");
  write_file_atomic((jobs / "j-00000000000000aa" / "checkpoint.pt").string(), "x");
  write_file_atomic((jobs / "j-00000000000000aa.json").string(), "{\"id\": \"j-00000000000000aa\", \"sta");
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  { PlacementService s(c); }
  EXPECT_TRUE(std::filesystem::exists(jobs / "j-00000000000000aa" / "checkpoint.pt"));
  EXPECT_FALSE(std::filesystem::exists(jobs / "j-00000000000000bb"));
  placer::remove_tree(dir);
}

// A search job judges by its request's objective; its status says so, also
// after a restart (from its record).
TEST(Service, SearchJobKeepsItsObjective) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_objective_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  std::string id;
  for (int server = 0; server < 2; ++server) {
    PlacementService s(c);
    if (server == 0)
      id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                   R"(,"cluster":"k80x2","budget":{"samples":16},"objective":"pipeline",)"
                                   R"("microbatches":2,"schedule":"gpipe"})"));
    const std::string st = wait_state(s, id, "done");
    EXPECT_EQ(field_text(st, "objective"), "\"pipeline\"") << server << ": " << st;
    EXPECT_EQ(field_text(st, "microbatches"), "2") << server << ": " << st;
    EXPECT_EQ(field_text(st, "schedule"), "\"gpipe\"") << server << ": " << st;
  }
  placer::remove_tree(dir);
}

// A small learned job with measured rewards on cpu:2 (kMlp), `samples` its budget.
std::string measured_mlp_job(int64_t samples) {
  return std::string(R"({"version":1,"type":"optimize",)") + kMlp +
         R"(,"devices":"cpu:2","reward_mode":"measured","budget":{"samples":)" + std::to_string(samples) +
         R"(},"learned":{"policy":{"type":"seq2seq","hidden":8},"train":{"samples_per_update":4},)"
         R"("warm_start":{"methods":["m_etf"],"bc_steps":0},"reward":{"measure_warmup":1,"measure_steps":2}}})";
}

// A measured learned job's final table keeps the cross-core probe while it ran (median, lowest, highest) in its
// reply, and across a restart (its record on disk).
TEST(Service, MeasuredLearnedJobKeepsItsTablesProbeAcrossARestart) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_probe_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  c.measure_jobs = true;
  std::string id, before;
  for (int server = 0; server < 2; ++server) {
    PlacementService s(c);
    if (server == 0)
      id = job_id_of(handle(s, measured_mlp_job(8)));
    const std::string st = wait_state(s, id, "done", 300000);  // measured: slow on a loaded machine
    EXPECT_NE(st.find("\"state\":\"done\""), std::string::npos) << server << ": " << st;
    const auto at = st.find("\"core_rtt_s\":[");
    EXPECT_NE(at, std::string::npos) << server << ": " << st;
    if (at == std::string::npos) break;
    const std::string probe = st.substr(at, st.find(']', at) + 1 - at);
    double med = 0, low = 0, high = 0;
    EXPECT_EQ(std::sscanf(probe.c_str(), "\"core_rtt_s\":[%lf,%lf,%lf]", &med, &low, &high), 3) << probe;
    EXPECT_TRUE(0 < low && low <= med && med <= high && high <= 0.05) << probe;
    if (server == 0)
      before = probe;
    else
      EXPECT_EQ(probe, before) << "the restarted server's record differs";
  }
  placer::remove_tree(dir);
}

// A measuring job cancelled before its side-by-side run answers with a step measured once in training (the
// lowest of noisy figures): the reply says so beside the cancel.
TEST(Service, ACancelledMeasuredJobSaysItsStepWasNotMeasuredAgain) {
  ServiceConfig c = small_config();
  c.measure_jobs = true;
  PlacementService s(c);
  const std::string id = job_id_of(handle(s, measured_mlp_job(100000)));
  std::string st;
  for (int i = 0; i < 6000; ++i) {  // until it has a best (measured in training)
    st = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
    if (st.find("\"updates\":0,") == std::string::npos && st.find("\"updates\":") != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  // While it runs, its best is the policy's measured step, and says so (it said "measured":false).
  EXPECT_NE(st.find(R"("found_by":"policy","measured":true)"), std::string::npos) << st;
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  st = wait_state(s, id, "cancelled", 120000);
  EXPECT_NE(st.find("cancelled by request; its best placement so far is kept (its step is the one measurement of "
                    "it in training, not re-measured side by side)"),
            std::string::npos)
      << st;
}

// A finished learned job's final table survives a restart (its record on disk).
TEST(Service, LearnedJobKeepsItsFinalTableAcrossARestart) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_table_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  std::string id, before;
  for (int server = 0; server < 2; ++server) {
    PlacementService s(c);
    if (server == 0)
      id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                   R"(,"cluster":"k80x2","budget":{"samples":8},"learned":{"policy":{"type":"seq2seq",)"
                                   R"("hidden":8},"train":{"samples_per_update":8},"warm_start":{"methods":["m_etf"],)"
                                   R"("bc_steps":0}}})"));
    const std::string st = wait_state(s, id, "done");
    const auto at = st.find("\"final_table\":");
    ASSERT_NE(at, std::string::npos) << server << ": " << st;
    const std::string table = st.substr(at, st.find("]}", at) + 2 - at);
    EXPECT_NE(table.find(R"({"method":"learned:seq2seq","role":"policy","step_s":)"), std::string::npos) << table;
    EXPECT_NE(table.find(R"({"method":"m_etf","role":"baseline","step_s":)"), std::string::npos) << table;
    EXPECT_NE(table.find(R"("role":"seen")"), std::string::npos) << table;
    if (server == 0)
      before = table;
    else
      EXPECT_EQ(table, before) << "the restarted server's record differs";
  }
  placer::remove_tree(dir);
}

// A learned job running when the server stops (cleanly) resumes at the next start and counts the restart
// (it was saved as queued, which the next server did not count: restarts 0).
TEST(Service, ALearnedJobStoppedCleanlyCountsItsRestart) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_restarts_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  std::string id;
  {
    PlacementService s(c);
    id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                 R"(,"cluster":"k80x2","budget":{"samples":400000},"learned":{"policy":{"type":)"
                                 R"("seq2seq","hidden":8},"train":{"samples_per_update":8},"warm_start":{"methods":)"
                                 R"(["m_etf"],"bc_steps":0},"run":{"checkpoint_every":1}}})"));
    const std::string st = wait_state(s, id, "running");
    ASSERT_NE(st.find("\"state\":\"running\""), std::string::npos) << st;
  }  // the server stops: the job is checkpointed and saved to resume
  PlacementService s(c);
  const std::string st = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
  EXPECT_NE(st.find("\"restarts\":1"), std::string::npos) << st;
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  wait_state(s, id, "cancelled");
  placer::remove_tree(dir);
}

// With rollout workers configured, a measured job still measures on the server's own devices, which it holds:
// its measurements went to the workers (here none: the batch waited for one, then failed).
TEST(Service, AMeasuredJobMeasuresHereWithRolloutWorkersConfigured) {
  ServiceConfig c = small_config();
  c.measure_jobs = true;
  c.rollouts_bind = "tcp://127.0.0.1:*";
  c.rollouts_wait_s = 1;
  PlacementService s(c);
  const std::string id = job_id_of(handle(s, measured_mlp_job(8)));
  const std::string st = wait_state(s, id, "done", 300000);
  EXPECT_NE(st.find("\"state\":\"done\""), std::string::npos) << st;
  EXPECT_NE(st.find("\"remote_evaluations\":0"), std::string::npos) << st;
}

// A learned job cancelled while it runs, the server then killed before the trainer saw the cancel: the
// record said "running" (the cancel was held in memory only), and the next server ran the job again.
TEST(Service, ACancelledRunningJobStaysCancelledAfterACrash) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_cancel_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  std::string id;
  const auto record = [&] { return (dir / "jobs" / (id + ".json")).string(); };
  {
    PlacementService s(c);
    id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                 R"(,"cluster":"k80x2","budget":{"samples":400000},"learned":{"policy":{"type":)"
                                 R"("seq2seq","hidden":8},"train":{"samples_per_update":8},"warm_start":{"methods":)"
                                 R"(["m_etf"],"bc_steps":0},"run":{"checkpoint_every":1}}})"));
    wait_state(s, id, "running");
    handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
    EXPECT_NE(read_file(record()).find("\"cancel_requested\":true"), std::string::npos) << read_file(record());
    wait_state(s, id, "cancelled");
  }
  // What a crash right after the cancel leaves: the record still running, the cancel in it.
  std::string rec = read_file(record());
  const std::string cancelled = "\"state\":\"cancelled\"";
  const auto at = rec.find(cancelled);
  ASSERT_NE(at, std::string::npos) << rec;
  rec.replace(at, cancelled.size(), "\"state\":\"running\"");
  write_file_atomic(record(), rec);
  PlacementService s(c);
  const std::string st = handle(s, R"({"version":1,"type":"status","job_id":")" + id + "\"}");
  EXPECT_NE(st.find("\"state\":\"cancelled\""), std::string::npos) << st;
  EXPECT_NE(st.find("\"restarts\":0"), std::string::npos) << st;
  EXPECT_NE(st.find("cancelled by request (the server restarted"), std::string::npos) << st;
  placer::remove_tree(dir);
}

// A request waiting for the server's devices while a job measures ends when the server begins to shut down,
// not at its deadline (a SIGTERM took 24 s to exit behind a measured evaluate).
TEST(Service, ARequestWaitingForTheDevicesEndsAtShutdown) {
  const ServiceConfig c = small_config();
  JobManager jobs(c, nullptr);
  std::atomic<bool> release{false};
  std::promise<void> holding;
  std::thread holder([&] {
    jobs.with_devices("job j-1", Clock::now() + 30s, [&] {
      holding.set_value();
      while (!release) std::this_thread::sleep_for(5ms);
    });
  });
  holding.get_future().wait();  // the job holds them
  auto waiting = std::async(std::launch::async, [&] {
    try {
      jobs.with_devices("an evaluate request", Clock::now() + 30s, [] {});
    } catch (const RequestError& e) {
      return e.code();
    }
    return std::string("ran");
  });
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  jobs.begin_shutdown();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_EQ(waiting.get(), codes::kShuttingDown);
  release = true;
  holder.join();
  jobs.shutdown();
}

// The policy's training best has no placement until the trainer ends; a trainer that fails then leaves
// the last best that had one (the fast path's), not a bare time (it left best null and the fast path's
// placement was lost).
TEST(Service, ALearnedJobsBestWithoutItsPlacementIsTheLastThatHadOne) {
  Job job;
  job.best_step_s = 0.5;
  job.best_method = "m_etf";
  job.best_found_by = "fast_path";
  job.best_placement.device = {{"a", "cuda:0"}};
  job.last_placed = Job::Placed{job.best_step_s, job.best_method, job.best_found_by, job.best_placement};
  job.best_step_s = 0.4;  // the policy's, in training
  job.best_method = "learned:seq2seq";
  job.best_found_by = "policy";
  job.best_placement = {};
  job.restore_last_placed();
  EXPECT_EQ(job.best_step_s, 0.5);
  EXPECT_EQ(job.best_found_by, "fast_path");
  EXPECT_EQ(job.best_placement.device.at("a"), "cuda:0");
  Job none;
  none.best_step_s = 0.3;
  none.restore_last_placed();
  EXPECT_EQ(none.best_step_s, 0.0);
}

// A learned job's last best with a placement is in its record: after a crash, a cancel while it waits in
// the queue answers with it (it said "best": null, though the placement was on disk).
TEST(Service, ALearnedJobsLastPlacedSurvivesARestart) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_placed_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.place_baselines = {"round_robin"};  // a fast path the policy beats
  c.state_dir = dir.string();
  std::string id, crashed;
  const auto record = [&] { return (dir / "jobs" / (id + ".json")).string(); };
  {
    PlacementService s(c);
    id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                 R"(,"cluster":"k80x4","budget":{"samples":400000},"learned":{"policy":{"type":)"
                                 R"("seq2seq","hidden":8},"train":{"samples_per_update":8},"warm_start":{"methods":)"
                                 R"(["m_etf"],"bc_steps":100},"run":{"checkpoint_every":1}}})"));
    for (int i = 0; i < 3000 && crashed.find(R"("best_found_by":"policy")") == std::string::npos; ++i) {
      std::this_thread::sleep_for(20ms);
      crashed = read_file(record());
    }
    ASSERT_NE(crashed.find(R"("best_found_by":"policy")"), std::string::npos) << crashed;
  }
  write_file_atomic(record(), crashed);  // what a crash while it ran leaves
  c.job_runners = 0;                     // it waits in the queue
  PlacementService s(c);
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  const std::string r = handle(s, R"({"version":1,"type":"result","job_id":")" + id + "\"}");
  EXPECT_NE(r.find(R"("best":{"method":"round_robin",)"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("found_by":"fast_path")"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("placement":{"graph":"mlp","device":{")"), std::string::npos) << r;
  placer::remove_tree(dir);
}

// A resumed measuring job cancelled while it waits for the server's devices answers with its last best that
// had a placement (it showed the policy's time with "device":{}).
TEST(Service, AMeasuredJobCancelledWhileWaitingForTheDevicesKeepsAPlacement) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_lease_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  c.measure_jobs = true;
  c.job_runners = 0;
  std::string id;
  {
    PlacementService s(c);
    id = job_id_of(handle(s, measured_mlp_job(100000)));
  }  // queued on disk
  const std::string path = (dir / "jobs" / (id + ".json")).string();
  std::string rec = read_file(path);
  const std::string none = R"("best_method":"","best_step_s":0.0,)";
  const auto at = rec.find(none);
  ASSERT_NE(at, std::string::npos) << rec;
  rec.replace(at, none.size(), R"("best_method":"learned:seq2seq","best_step_s":0.25,)");
  rec.replace(rec.find(R"("best_found_by":"")"), std::string(R"("best_found_by":"")").size(),
              R"("best_found_by":"policy","last_placed":{"step_s":0.5,"method":"m_etf","found_by":"baseline",)"
              R"("measured":true,"placement":{"graph":"mlp","device":{"input/features":"cpu:0"}}})");
  write_file_atomic(path, rec);
  c.job_runners = 1;
  JobManager jobs(c, nullptr);
  std::atomic<bool> release{false};
  std::promise<void> holding;
  std::thread holder([&] {
    jobs.with_devices("an evaluate request", Clock::now() + 60s, [&] {
      holding.set_value();
      while (!release) std::this_thread::sleep_for(5ms);
    });
  });
  holding.get_future().wait();
  jobs.start();
  std::string st;
  for (int i = 0; i < 1000 && st.find("\"waiting\":") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
    st = jobs.status_json(id);
  }
  EXPECT_NE(st.find("\"waiting\":"), std::string::npos) << st;  // (no ASSERT: the holder must be joined)
  jobs.cancel(id);
  for (int i = 0; i < 1000 && st.find("\"state\":\"cancelled\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
    st = jobs.status_json(id);
  }
  release = true;
  holder.join();
  const std::string r = jobs.result_json(id, true);
  EXPECT_NE(r.find(R"("best":{"method":"m_etf","step_s":0.5,"found_by":"baseline","measured":true)"), std::string::npos)
      << r;
  EXPECT_NE(r.find(R"("device":{"input/features":"cpu:0"})"), std::string::npos) << r;
  jobs.shutdown();
  placer::remove_tree(dir);
}

// An evaluate placement's errors name the op at fault, placement.device.<op> (they all said "placement").
TEST(Service, EvaluatePlacementErrorsNameTheOp) {
  PlacementService s(small_config());
  Graph g = build_graph("mlp", BuilderOptions{{{"layers", 2}, {"width", 64}, {"input", 64}, {"batch", 8}}, false});
  std::map<std::string, std::string> all;
  for (const auto& op : g.ops()) all[op.name] = "cuda:0";
  auto evaluate = [&](const std::map<std::string, std::string>& placement) {
    std::string devices;
    for (const auto& [op, d] : placement)
      devices += (devices.empty() ? "" : ",") + json_quote(op) + ":" + json_quote(d);
    return fail(s, std::string(R"({"version":1,"type":"evaluate",)") + kMlp +
                       R"(,"cluster":"k80x2","placement":{"device":{)" + devices + "}}}");
  };
  EXPECT_EQ(evaluate(all), "no error");
  auto ghost = all;
  ghost["ghost"] = "cuda:0";
  EXPECT_EQ(evaluate(ghost), "bad_placement placement.device.ghost: no op 'ghost' in graph 'mlp'");
  auto far = all;
  far[g.ops().back().name] = "cuda:9";
  EXPECT_EQ(evaluate(far), "bad_placement placement.device." + g.ops().back().name +
                               ": device 'cuda:9' is not in cluster 'k80x2' (devices: cuda:0, cuda:1)");
  auto missing = all;
  missing.erase(g.ops().front().name);
  EXPECT_EQ(evaluate(missing), "bad_placement placement.device." + g.ops().front().name +
                                   ": missing: every op of graph 'mlp' needs a device (" +
                                   std::to_string(g.size() - 1) + " of " + std::to_string(g.size()) + " placed)");
  // An op away from the op whose gradient it computes.
  for (const auto& op : g.ops()) {
    if (!op.forward.valid()) continue;
    auto split = all;
    split[op.name] = "cuda:1";
    const std::string e = evaluate(split);
    EXPECT_EQ(e.rfind("bad_placement placement.device.", 0), 0u) << e;
    EXPECT_NE(e.find("cuda:1"), std::string::npos) << e;
    break;
  }
}

// A pipeline place answers with a placement judged as one mini-batch of M
// micro-batches (each the graph's batch): M times a step's work, so slower
// than one step on two devices.
TEST(Service, PipelinePlaceJudgesTheMiniBatch) {
  PlacementService s(small_config());
  const std::string head = std::string(R"({"version":1,"type":"place",)") + kMlp + R"(,"cluster":"k80x2")";
  const std::string step = handle(s, head + "}");
  const std::string pipe = handle(s, head + R"(,"objective":"pipeline","microbatches":4,"schedule":"gpipe"})");
  EXPECT_EQ(field_text(pipe, "objective"), "\"pipeline\"") << pipe;
  EXPECT_EQ(field_text(pipe, "microbatches"), "4") << pipe;
  EXPECT_EQ(field_text(pipe, "schedule"), "\"gpipe\"") << pipe;
  EXPECT_NE(pipe.find(R"("status":"ok")"), std::string::npos) << pipe;
  EXPECT_NE(pipe.find(R"("placement":{"graph":"mlp","device":{)"), std::string::npos) << pipe;
  const double step_s = std::stod(field_text(step, "step_s")), pipe_s = std::stod(field_text(pipe, "step_s"));
  EXPECT_GT(pipe_s, 0);
  EXPECT_LE(std::stod(field_text(pipe, "lower_bound_s")), pipe_s * (1 + 1e-9));
  // The mini-batch is judged, with its figures beside it.
  EXPECT_NE(pipe.find(R"("pipeline":{"microbatches":4,"schedule":"gpipe","minibatch_s":)"), std::string::npos) << pipe;
  EXPECT_NE(pipe.find(R"("bubble_fraction":)"), std::string::npos) << pipe;
  EXPECT_EQ(step.find(R"("pipeline":{)"), std::string::npos) << step;
  EXPECT_GT(pipe_s, step_s) << "a mini-batch of 4 micro-batches: " << pipe << "\none step: " << step;
}


// Records this server cannot read are left on disk, with their folders, and said (file and reason): an unknown
// state or format read as "failed" with no finish time, and the first status expired it and its checkpoint.
// A finished record without its finish time is kept from when it was loaded.
TEST(Service, JobRecordsItCannotReadAreKeptAndSaid) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_unknown_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  const auto jobs = dir / "jobs";
  const std::string format2 = "j-00000000000000a2", state = "j-00000000000000b2", cut = "j-00000000000000c2",
                    untimed = "j-00000000000000d2";
  for (const auto& id : {format2, state}) {
    std::filesystem::create_directories(jobs / id);
    write_file_atomic((jobs / id / "checkpoint.pt").string(), "x");
  }
  const std::string fields = R"("graph":"mlp","cluster":"k80x2","learned":true,"created_unix":1)";
  write_file_atomic((jobs / (format2 + ".json")).string(), R"({"format":2,"state":"done",)" + fields + "}");
  write_file_atomic((jobs / (state + ".json")).string(), R"({"format":1,"state":"paused",)" + fields + "}");
  write_file_atomic((jobs / (cut + ".json")).string(), R"({"format":1,"sta)");
  write_file_atomic((jobs / (untimed + ".json")).string(), R"({"format":1,"state":"done","graph":"mlp"})");
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  c.job_keep_s = 3600;
  testing::internal::CaptureStderr();
  {
    PlacementService s(c);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find(format2 + ".json"), std::string::npos) << log;
    EXPECT_NE(log.find("format: expected 1 (this server's records), got 2"), std::string::npos) << log;
    EXPECT_NE(log.find(state + ".json"), std::string::npos) << log;
    EXPECT_NE(log.find("got \"paused\""), std::string::npos) << log;
    EXPECT_NE(log.find(cut + ".json"), std::string::npos) << log;
    EXPECT_EQ(log.find(untimed + ".json"), std::string::npos) << log;
    EXPECT_NE(fail(s, R"({"version":1,"type":"status","job_id":")" + format2 + "\"}").find("not_found"),
              std::string::npos);
    const std::string st = handle(s, R"({"version":1,"type":"status","job_id":")" + untimed + "\"}");
    EXPECT_NE(st.find("\"state\":\"done\""), std::string::npos) << st;
  }
  for (const auto& id : {format2, state}) {
    EXPECT_TRUE(std::filesystem::exists(jobs / (id + ".json"))) << id;
    EXPECT_TRUE(std::filesystem::exists(jobs / id / "checkpoint.pt")) << id;
  }
  EXPECT_TRUE(std::filesystem::exists(jobs / (cut + ".json")));
  EXPECT_TRUE(std::filesystem::exists(jobs / (untimed + ".json")));
  placer::remove_tree(dir);
}

// A state_dir where job records cannot be written stops the server at start, naming it; a record that cannot
// be written later is said once per job (the job goes on).
TEST(Service, AStateDirItCannotWriteStopsItAndAFailedRecordIsSaid) {
  const auto dir = std::filesystem::temp_directory_path() / ("placer_svc_statefile_" + std::to_string(::getpid()));
  placer::remove_tree(dir);
  write_file_atomic(dir.string(), "not a folder");
  ServiceConfig c = small_config();
  c.state_dir = dir.string();
  try {
    PlacementService s(c);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("state_dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
  }
  placer::remove_tree(dir);
  PlacementService s(c);
  placer::remove_tree(dir / "jobs");
  write_file_atomic((dir / "jobs").string(), "in the way");
  testing::internal::CaptureStderr();
  const std::string id = job_id_of(handle(
      s, std::string(R"({"version":1,"type":"optimize",)") + kMlp + R"(,"cluster":"k80x4","budget":{"samples":50}})"));
  wait_state(s, id, "done");
  const std::string log = testing::internal::GetCapturedStderr();
  const auto at = log.find("cannot write the record of job " + id);
  EXPECT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find("cannot write the record of job " + id, at + 1), std::string::npos) << log;
  placer::remove_tree(dir);
}

// A learned job whose batch waits for a rollout worker that never comes stops at once at shutdown (it waited out
// worker_wait_s for each of its batches).
TEST(Service, ALearnedJobWaitingForARolloutWorkerStopsAtShutdown) {
  ServiceConfig c = small_config();
  c.rollouts_bind = "tcp://127.0.0.1:*";
  c.rollouts_wait_s = 60;
  auto s = std::make_unique<PlacementService>(c);
  const std::string id = job_id_of(handle(*s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                                  R"(,"cluster":"k80x2","budget":{"samples":400},"learned":{"policy":)"
                                                  R"({"type":"seq2seq","hidden":8},"train":{"samples_per_update":8},)"
                                                  R"("warm_start":{"methods":["round_robin"],"bc_steps":100}}})"));
  wait_state(*s, id, "running");
  std::this_thread::sleep_for(500ms);  // in its first batch
  const auto t0 = Clock::now();
  s->begin_shutdown();
  s.reset();
  EXPECT_LT(Clock::now() - t0, 10s);
}

// A cancel reaches the batch too: the trainer's cancel is the remote evaluator's (a cancel waited out
// every batch's worker_wait_s, two batches of 20 s: 37 s).
TEST(Service, ALearnedJobWaitingForARolloutWorkerStopsAtACancel) {
  ServiceConfig c = small_config();
  c.rollouts_bind = "tcp://127.0.0.1:*";
  c.rollouts_wait_s = 60;
  PlacementService s(c);
  const std::string id = job_id_of(handle(s, std::string(R"({"version":1,"type":"optimize",)") + kMlp +
                                                 R"(,"cluster":"k80x2","budget":{"samples":400},"learned":{"policy":)"
                                                 R"({"type":"seq2seq","hidden":8},"train":{"samples_per_update":8},)"
                                                 R"("warm_start":{"methods":["round_robin"],"bc_steps":100}}})"));
  wait_state(s, id, "running");
  std::this_thread::sleep_for(500ms);  // in its first batch
  const auto t0 = Clock::now();
  handle(s, R"({"version":1,"type":"cancel","job_id":")" + id + "\"}");
  wait_state(s, id, "cancelled", 30000);
  EXPECT_LT(Clock::now() - t0, 10s);
}

}  // namespace
}  // namespace placer::service
