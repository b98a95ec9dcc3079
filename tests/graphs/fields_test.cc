// The one field reader (fields.h over JSON and over YAML, yaml_reader.h) and the one JSON writer (json_writer.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../error_of.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/yaml_reader.h"

namespace placer {
namespace {

using testing::error_of;

rj::Document parse(const std::string& text) {
  rj::Document doc;
  doc.Parse(text.c_str(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

TEST(FieldReader, ReadsPresentFieldsAndKeepsDefaults) {
  const rj::Document doc = parse(R"({"name": "a", "lr": 0.5, "steps": 7, "on": true, "tags": ["x", "y"]})");
  FieldReader<JsonNode> f(JsonNode(&doc), "train", throw_field_error<InputError>("cfg.json"));
  std::string name;
  double lr = 0, missing = 3.0;
  int steps = 0;
  bool on = false;
  std::vector<std::string> tags;
  EXPECT_TRUE(f.read("name", &name));
  EXPECT_TRUE(f.read("lr", &lr, 0.0, 1.0));
  EXPECT_TRUE(f.read("steps", &steps, 1, 100));
  EXPECT_TRUE(f.read("on", &on));
  EXPECT_TRUE(f.read("tags", &tags));
  EXPECT_FALSE(f.read("absent", &missing, 0.0, 10.0));
  EXPECT_NO_THROW(f.finish());
  EXPECT_EQ(name, "a");
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(steps, 7);
  EXPECT_TRUE(on);
  EXPECT_EQ(tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(missing, 3.0);
}

TEST(FieldReader, ErrorsNameThePathAndTheProblem) {
  const rj::Document doc = parse(R"({"train": {"lr": "x", "steps": 0, "tags": ["a", 3], "extra": 1}})");
  const FieldFail fail = throw_field_error<InputError>("learned");
  FieldReader<JsonNode> top(JsonNode(&doc), "", fail);
  FieldReader<JsonNode> train = top.section("train");
  double lr = 0;
  int steps = 0;
  std::vector<std::string> tags;
  EXPECT_EQ(error_of<InputError>([&] { train.read("lr", &lr, 0.0, 10.0); }), "learned: train.lr: expected a number, got \"x\"");
  EXPECT_EQ(error_of<InputError>([&] { train.read("steps", &steps, 1, 100); }), "learned: train.steps: must be in [1, 100], got 0");
  EXPECT_EQ(error_of<InputError>([&] { train.read("tags", &tags); }), "learned: train.tags[1]: expected a string, got 3");
  EXPECT_EQ(error_of<InputError>([&] { train.need("seed"); }), "learned: train.seed: missing required field");
  // Unknown keys: every key asked for (present or not) is known.
  EXPECT_EQ(error_of<InputError>([&] { train.finish(); }),
            "learned: train.extra: unknown field (known here: lr, seed, steps, tags)");
  EXPECT_NO_THROW(top.finish());
}

// A key given twice is refused (the reader would keep the first), as the graph readers do (JsonReader::known).
TEST(FieldReader, RefusesARepeatedKey) {
  const rj::Document doc =
      parse(R"({"maxFPGAs": 2, "node": {"cpuLatency": 1, "gpu": 3, "cpuLatency": 100}, "maxFPGAs": 4})");
  FieldReader<JsonNode> top(JsonNode(&doc), "", throw_field_error<InputError>("w.json"));
  FieldReader<JsonNode> node = top.section("node");
  int64_t v = 0;
  node.read("cpuLatency", &v, 0, 1000);
  node.read("gpu", &v, 0, 1000);
  EXPECT_EQ(error_of<InputError>([&] { node.finish(); }), "w.json: node.cpuLatency: given twice");
  top.read("maxFPGAs", &v, 0, 1000);
  EXPECT_EQ(error_of<InputError>([&] { top.finish(); }), "w.json: maxFPGAs: given twice");
}

TEST(FieldReader, OneSidedRangesAndTooLarge) {
  const rj::Document doc = parse(R"({"a": -1, "b": 2000})");
  FieldProblem seen = FieldProblem::Invalid;
  std::string message;
  FieldReader<JsonNode> f(JsonNode(&doc), "", [&](const std::string& path, const std::string& problem, FieldProblem k) {
    seen = k;
    throw InputError(path + ": " + problem);
  });
  int64_t a = 0, b = 0;
  EXPECT_EQ(error_of<InputError>([&] { f.read("a", &a, 0, std::numeric_limits<int64_t>::max()); }), "a: must be >= 0, got -1");
  EXPECT_EQ(seen, FieldProblem::Invalid);
  EXPECT_EQ(error_of<InputError>([&] { f.read("b", &b, std::numeric_limits<int64_t>::min(), 1000); }),
            "b: must be <= 1000, got 2000");
  EXPECT_EQ(seen, FieldProblem::TooLarge);
}

TEST(FieldReader, NotAMapIsNamed) {
  const rj::Document doc = parse(R"({"policy": [1, 2]})");
  FieldReader<JsonNode> top(JsonNode(&doc), "", throw_field_error<InputError>());
  EXPECT_EQ(error_of<InputError>([&] { top.section("policy"); }), "policy: expected a map, got an array");
}

TEST(UnknownName, ListsTheKnownNames) {
  EXPECT_EQ(unknown_name("policy", "lstm", {"seq2seq", "gnn"}), "unknown policy 'lstm' (known: seq2seq, gnn)");
  const std::vector<std::string> known = {"a", "b"};
  EXPECT_EQ(unknown_name("method", "c", known), "unknown method 'c' (known: a, b)");
}

TEST(YamlReader, ReadsFieldsThroughFieldReader) {
  const YamlNode root = parse_yaml("train: {lr: 0.5, steps: 7, on: true}\ntags: [x, y]\nname: 12\n");
  YamlFields top(root, "", throw_field_error<InputError>("cfg.yaml"));
  YamlFields train = top.section("train");
  double lr = 0;
  int steps = 0;
  bool on = false;
  EXPECT_TRUE(train.read("lr", &lr, 0.0, 1.0) && train.read("steps", &steps, 1, 100) && train.read("on", &on));
  std::string name;
  std::vector<std::string> tags;
  EXPECT_TRUE(top.read("name", &name) && top.read("tags", &tags));
  EXPECT_NO_THROW(train.finish());
  EXPECT_NO_THROW(top.finish());
  EXPECT_EQ(name, "12");  // any scalar reads as a string
  EXPECT_EQ(tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(steps, 7);
  EXPECT_TRUE(on);
}

TEST(YamlReader, NodesDescribeThemselves) {
  const YamlNode root = parse_yaml("m: {a: 1, b: 2}\nl: [1, 2, 3]\nn: null\ns: fast\n");
  EXPECT_TRUE(root.is_map());
  EXPECT_EQ(root.keys(), (std::vector<std::string>{"m", "l", "n", "s"}));
  EXPECT_EQ(root.member("m").describe(), "a map");
  EXPECT_EQ(root.member("m").keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(root.member("l").describe(), "a list");
  EXPECT_EQ(root.member("l").size(), 3u);
  EXPECT_EQ(root.member("l").at(2).integer(), 3);
  EXPECT_TRUE(root.member("n").is_null());
  EXPECT_EQ(root.member("n").describe(), "null");
  EXPECT_EQ(root.member("s").describe(), "'fast'");
  EXPECT_EQ(root.member("s").string(), "fast");
  EXPECT_FALSE(root.member("s").number());
  EXPECT_FALSE(root.member("absent").present());
  EXPECT_EQ(root.member("absent").describe(), "nothing");
  EXPECT_FALSE(root.member("l").member("x").present());
  EXPECT_EQ(YamlNode().size(), 0u);
  // A key given twice in one map is an error with its line (the first was kept, the second dropped);
  // aliases, however nested, are walked once each.
  try {
    parse_yaml("policy:\n  type: bogus\n  hidden: 8\n  type: gnn\n");
    ADD_FAILURE() << "a repeated key was accepted";
  } catch (const YamlSyntaxError& e) {
    EXPECT_EQ(e.line(), 4);
    EXPECT_EQ(e.problem(), "the key 'type' is given twice in one map");
  }
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 30; ++i)
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" +
              std::string(i == 1 ? "*a" : "*l" + std::to_string(i - 1)) + ", " +
              std::string(i == 1 ? "*a" : "*l" + std::to_string(i - 1)) + ", " +
              std::string(i == 1 ? "*a" : "*l" + std::to_string(i - 1)) + "]\n";
  EXPECT_TRUE(parse_yaml(laughs).is_map());  // 3^29 paths, 31 collections
  EXPECT_TRUE(parse_yaml("a: [{k: 1}, {k: 2}]\nb: {k: 1}\n").is_map());  // the same key in different maps
  EXPECT_TRUE(parse_yaml("").is_null());
}

TEST(YamlReader, ErrorsNameThePathAndTheProblem) {
  const YamlNode root = parse_yaml("train: {lr: fast, extra: 1}\nlist: [a]\n");
  EXPECT_EQ(error_of<InputError>([&] {
              YamlFields f(root, "", throw_field_error<InputError>("cfg.yaml"));
              double lr = 0;
              f.section("train").read("lr", &lr, 0.0, 1.0);
            }),
            "cfg.yaml: train.lr: expected a number, got 'fast'");
  EXPECT_EQ(error_of<InputError>([&] {
              YamlFields f(root, "", throw_field_error<InputError>());
              YamlFields train = f.section("train");
              train.get("lr");
              train.finish();
            }),
            "train.extra: unknown field (known here: lr)");
  EXPECT_EQ(error_of<InputError>([&] {
              YamlFields f(root, "", throw_field_error<InputError>());
              f.section("list");
            }),
            "list: expected a map, got a list");
}

TEST(YamlReader, SyntaxErrorsGiveTheLineAndTheProblem) {
  try {
    parse_yaml("name: a\nlist: [x\n");
    FAIL() << "no error";
  } catch (const YamlSyntaxError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.problem(), "end of sequence flow not found");
    EXPECT_EQ(std::string(e.what()), "yaml-cpp: error at line 3, column 1: end of sequence flow not found");
  }
}

TEST(YamlReader, NestingTooDeepSaysSo) {
  // yaml-cpp stops at a recursion depth of 2000 with the message "bad file", which reads as an unreadable file.
  const std::string deep = "a: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  try {
    parse_yaml(deep);
    FAIL() << "no error";
  } catch (const YamlSyntaxError& e) {
    EXPECT_EQ(e.line(), 1);
    EXPECT_NE(e.problem().find("nested too deeply"), std::string::npos) << e.problem();
    EXPECT_EQ(std::string(e.what()).find("bad file"), std::string::npos) << e.what();
  }
}

TEST(JsonWriter, EscapesStrings) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("line\nnext\ttab"), "\"line\\nnext\\ttab\"");
  EXPECT_EQ(json_quote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 kept as is
}

TEST(JsonWriter, WritesShortestRoundTripNumbers) {
  EXPECT_EQ(json_number(0.25), "0.25");
  EXPECT_EQ(json_number(0.1), "0.1");
  EXPECT_EQ(json_number(1e-7), "1e-07");
  EXPECT_EQ(json_number(3.0), "3");
  EXPECT_EQ(std::stod(json_number(1.0 / 3.0)), 1.0 / 3.0);
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(std::nan("")), "null");
}

TEST(JsonWriter, BuildsDocuments) {
  NamedPlacement p;
  p.graph = "g";
  p.device = {{"x", "cpu:0"}};
  JsonWriter w;
  w.begin().field("name", "a\"b").field("n", int64_t{3}).field("ok", true).field("lr", 0.5);
  w.field("bad", std::nan("")).begin_array("list").str("x").integer(1).end_array().placement("p", p).end();
  EXPECT_EQ(
      w.text(),
      R"({"name":"a\"b","n":3,"ok":true,"lr":0.5,"bad":null,"list":["x",1],"p":{"graph":"g","device":{"x":"cpu:0"}}})");
  // What it writes reads back through the reader.
  const rj::Document doc = parse(w.text());
  FieldReader<JsonNode> f(JsonNode(&doc), "", throw_field_error<InputError>());
  std::string name;
  f.read("name", &name);
  EXPECT_EQ(name, "a\"b");
}

TEST(JsonWriter, WritesAPairedTestInOneLayout) {
  // measure --compare, the trainer's summary and the service's final tables all write it this way.
  PairedTest t = paired_rounds({1, 1, 1, 1, 1, 1}, {1.01, 1.02, 1.03, 1.04, 1.05, 1.06});
  t.ratio = 1.035;  // shortest round-trip text below, whatever the estimator's last digit
  t.ratio_low = 1.01;
  t.ratio_high = 1.06;
  JsonWriter w;
  w.begin().paired("paired", t).end();
  EXPECT_EQ(
      w.text(),
      R"({"paired":{"rounds":6,"ratio":1.035,"ratio_low":1.01,"ratio_high":1.06,"p_value":0.03125,"significant":true}})");
}

}  // namespace
}  // namespace placer
