// docs/formats.md against the readers and writers: every field a writer emits
// is documented, and what the doc says has no value or must name a device is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "tiny_graphs.h"

namespace placer {
namespace {

using testing::error_of;

// The text of docs/formats.md from `heading` up to the next "## " heading.
std::string doc_section(const std::string& heading) {
  std::ifstream in(std::string(PLACER_SOURCE_DIR) + "/docs/formats.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find(heading);
  if (begin == std::string::npos) return "";
  const size_t end = doc.find("\n## ", begin + heading.size());
  return doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The JSON keys of a written document (cereal writes `"key": value`).
std::set<std::string> json_keys(const std::string& json) {
  std::set<std::string> keys;
  const std::regex key("\"([A-Za-z_]+)\":");
  for (std::sregex_iterator it(json.begin(), json.end(), key), end; it != end; ++it) keys.insert((*it)[1]);
  return keys;
}

// Each key appears in the section as `key` or "key".
void expect_documented(const std::string& json, const std::string& heading) {
  const std::string section = doc_section(heading);
  ASSERT_FALSE(section.empty()) << heading;
  for (const std::string& k : json_keys(json))
    EXPECT_TRUE(section.find("`" + k + "`") != std::string::npos || section.find("\"" + k + "\"") != std::string::npos)
        << heading << ": field '" << k << "' is written but not documented";
}

TEST(FormatsDoc, StepResultFieldsAreDocumented) {
  StepResult s;
  s.samples_s = {0.1, 0.2};
  s.core_rtt_s = {9e-8};
  s.devices.push_back(DeviceStats{"cpu:0", 0.1, 1024});
  expect_documented(step_result_to_json(s), "## Step result");
}

TEST(FormatsDoc, ProfileFieldsAreDocumented) {
  Profile p;
  p.gpu_op_overhead_s = 1e-5;
  p.gpu_op_scale = 0.5;
  p.gpu_step_s = 0.01;
  p.mixed.devices = {"cpu:0", "cpu:1"};
  p.mixed.step_s = 0.04;
  p.mixed.core_rtt_s = 9e-8;
  p.cpu_steps.push_back(DeviceStep{"cpu:0", 0.05});
  p.ops.push_back(OpTiming{"fc", "sig", "cpu:0", "cpu", 1e-5, 1.2e-5});
  LinkFit l{"cpu:0", "cpu:1", 2e-6, 4e9, {{1024, 2.3e-6}}};
  p.links.push_back(l);
  expect_documented(profile_to_json(p), "## Profile");
}

Cluster one_device(const std::string& name, const std::string& physical) {
  return cluster_from_json(R"({"format":"placer.cluster","version":1,"devices":[{"name":")" + name +
                           R"(","physical":")" + physical + R"(","memory_bytes":1000000000}]})");
}

TEST(FormatsDoc, DevicePhysicalIsACudaDeviceOrEmpty) {
  EXPECT_EQ(one_device("cuda:1", "cuda:0").devices.at(0).physical, "cuda:0");
  EXPECT_EQ(one_device("cuda:1", "cuda:12").devices.at(0).physical, "cuda:12");
  EXPECT_EQ(one_device("cuda:1", "").devices.at(0).physical, "");
  EXPECT_EQ(one_device("cpu:0", "").devices.at(0).physical, "");
  for (const std::string bad : {"cuda:-1", "cuda:01", "cuda", "cuda:", "cpu:0", "banana"}) {
    const std::string msg = error_of<InputError>([&] { one_device("cuda:0", bad); });
    EXPECT_NE(msg.find("devices[0] 'cuda:0': physical: expected 'cuda:K'"), std::string::npos) << bad << ": " << msg;
  }
  for (const std::string bad : {"banana", "cpu:1", "cuda:0"}) {
    const std::string msg = error_of<InputError>([&] { one_device("cpu:0", bad); });
    EXPECT_NE(msg.find("devices[0] 'cpu:0': physical: must be empty on a cpu device"), std::string::npos)
        << bad << ": " << msg;
  }
}

TEST(FormatsDoc, NoneArgumentWithAValueIsRefused) {
  const std::string ops = R"({"name":"x","type":"placer::input","outputs":[{"shape":[2]}],
      "args":[{"kind":"none","value":5}]})";
  const std::string text = R"({"format":"placer.graph","version":1,"ops":[)" + ops + "]}";
  const std::string msg = error_of<GraphError>([&] { graph_from_json(text); });
  EXPECT_NE(msg.find("ops[0] 'x' args[0]: value: an argument of kind 'none' has no value"), std::string::npos) << msg;
  const std::string none = R"({"format":"placer.graph","version":1,"ops":[{"name":"x","type":"placer::input",
      "outputs":[{"shape":[2]}],"args":[{"kind":"none"}]}]})";
  EXPECT_EQ(graph_from_json(none).op(OpId(0)).args.at(0).kind, Arg::Kind::None);
}

}  // namespace
}  // namespace placer
