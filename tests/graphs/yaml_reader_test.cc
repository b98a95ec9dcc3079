// The YAML node adapter (yaml_reader.h) under the one field reader (fields.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/yaml_reader.h"

namespace placer {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(YamlReader, ReadsFieldsThroughFieldReader) {
  const YamlNode root = parse_yaml("name: a\nlr: 0.5\nsteps: 7\non: true\ntags: [x, y]\ntrain: {batch: 4}\n");
  YamlFields f(root, "", throw_field_error<InputError>("cfg.yaml"));
  std::string name;
  double lr = 0, missing = 3.0;
  int steps = 0, batch = 0;
  bool on = false;
  std::vector<std::string> tags;
  EXPECT_TRUE(f.read("name", &name));
  EXPECT_TRUE(f.read("lr", &lr, 0.0, 1.0));
  EXPECT_TRUE(f.read("steps", &steps, 1, 100));
  EXPECT_TRUE(f.read("on", &on));
  EXPECT_TRUE(f.read("tags", &tags));
  EXPECT_FALSE(f.read("missing", &missing, 0.0, 10.0));
  YamlFields train = f.section("train");
  EXPECT_TRUE(train.read("batch", &batch, 1, 64));
  train.finish();
  f.finish();
  EXPECT_EQ(name, "a");
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(steps, 7);
  EXPECT_TRUE(on);
  EXPECT_EQ(tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(missing, 3.0);
  EXPECT_EQ(batch, 4);
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
  EXPECT_TRUE(parse_yaml("").is_null());
}

TEST(YamlReader, ErrorsNameThePathAndTheProblem) {
  const YamlNode root = parse_yaml("train: {lr: fast, extra: 1}\nlist: [a]\n");
  EXPECT_EQ(error_of([&] {
              YamlFields f(root, "", throw_field_error<InputError>("cfg.yaml"));
              double lr = 0;
              f.section("train").read("lr", &lr, 0.0, 1.0);
            }),
            "cfg.yaml: train.lr: expected a number, got 'fast'");
  EXPECT_EQ(error_of([&] {
              YamlFields f(root, "", throw_field_error<InputError>());
              YamlFields train = f.section("train");
              train.get("lr");
              train.finish();
            }),
            "train.extra: unknown field (known here: lr)");
  EXPECT_EQ(error_of([&] {
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

}  // namespace
}  // namespace placer
