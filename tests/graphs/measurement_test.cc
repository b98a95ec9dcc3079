#include "placer/graphs/measurement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cereal/archives/json.hpp>
#include <cstdio>

#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"

#if defined(CEREAL_RAPIDJSON_NAMESPACE)
namespace rj = CEREAL_RAPIDJSON_NAMESPACE;
#else
namespace rj = RAPIDJSON_NAMESPACE;
#endif

namespace placer {
namespace {

TEST(Measurement, StatusNames) {
  EXPECT_STREQ(step_status_name(StepStatus::Ok), "ok");
  EXPECT_STREQ(step_status_name(StepStatus::Oom), "oom");
  EXPECT_STREQ(step_status_name(StepStatus::Timeout), "timeout");
  EXPECT_STREQ(step_status_name(StepStatus::Error), "error");
}

TEST(Measurement, ChromeTrace) {
  const std::vector<TimelineEvent> events = {
      {"fc", "cpu:0", 0.0, 0.0015, "forward"},
      {"cpu:0->cpu:1 fc:0", "cpu:0->cpu:1", 0.0015, 0.00025, "transfer"},
      {"relu", "cpu:1", 0.00175, 0.0005, "forward"},
      {"relu_grad", "cpu:1", 0.003, 0.001, "backward"},
  };
  const std::string path = ::testing::TempDir() + "placer_trace_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(events, path);
  rj::Document doc;
  const std::string text = read_file(path);
  doc.Parse(text.c_str());
  ASSERT_FALSE(doc.HasParseError()) << text;
  const rj::Value& trace = doc["traceEvents"];
  ASSERT_TRUE(trace.IsArray());
  // 3 lanes x (thread_name + thread_sort_index) + 4 events.
  ASSERT_EQ(trace.Size(), 10u);
  std::map<int, std::string> lane_of_tid;
  int complete = 0;
  for (rj::SizeType i = 0; i < trace.Size(); ++i) {
    const rj::Value& e = trace[i];
    EXPECT_EQ(e["pid"].GetInt(), 0);
    const std::string ph = e["ph"].GetString();
    if (ph == "M" && std::string(e["name"].GetString()) == "thread_name")
      lane_of_tid[e["tid"].GetInt()] = e["args"]["name"].GetString();
    if (ph == "X") ++complete;
  }
  EXPECT_EQ(complete, 4);
  // Devices first in order of appearance, then transfer channels.
  EXPECT_EQ(lane_of_tid, (std::map<int, std::string>{{0, "cpu:0"}, {1, "cpu:1"}, {2, "cpu:0->cpu:1"}}));
  const rj::Value& transfer = trace[7];  // after the 6 metadata events: fc, transfer, ...
  EXPECT_STREQ(transfer["name"].GetString(), "cpu:0->cpu:1 fc:0");
  EXPECT_STREQ(transfer["cat"].GetString(), "transfer");
  EXPECT_EQ(transfer["tid"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(transfer["ts"].GetDouble(), 1500.0);  // microseconds
  EXPECT_DOUBLE_EQ(transfer["dur"].GetDouble(), 250.0);
  std::remove(path.c_str());
  EXPECT_THROW(write_chrome_trace(events, "/nonexistent/dir/trace.json"), InputError);
}

}  // namespace
}  // namespace placer
