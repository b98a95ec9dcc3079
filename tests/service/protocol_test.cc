#include "placer/service/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace placer::service {
namespace {

// Parses and expects a RequestError with this code and field.
void expect_error(const std::string& text, const std::string& code, const std::string& field,
                  const std::string& message_part = "", const ProtocolLimits& limits = {}) {
  try {
    parse_request(text, limits);
    ADD_FAILURE() << "parsed without error: " << text;
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    if (!message_part.empty()) {
      EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
    }
  }
}

TEST(Protocol, ParsesPlaceWithBuilderAndPreset) {
  Request r = parse_request(
      R"({"version":1,"id":"a1","type":"place","graph":{"builder":"nmt","options":{"layers":2,"batch":64}},
                               "cluster":"k80x4","policy":"nmt4","refine_samples":100,"deadline_ms":2500,"seed":7})");
  EXPECT_EQ(r.type, RequestType::Place);
  EXPECT_EQ(r.id.text, "a1");
  EXPECT_EQ(r.graph.builder, "nmt");
  EXPECT_EQ(r.graph.options.at("layers"), 2);
  EXPECT_EQ(r.graph.options.at("batch"), 64);
  EXPECT_EQ(r.cluster.preset, "k80x4");
  EXPECT_EQ(r.policy, "nmt4");
  EXPECT_EQ(r.refine_samples, 100);
  EXPECT_EQ(r.deadline_ms, 2500);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_TRUE(r.include_placement);
}

TEST(Protocol, ParsesInlineGraphDevicesAndIntegerId) {
  Request r =
      parse_request(R"({"version":1,"id":42,"type":"baselines","graph":{"inline":{"format":"placer.graph","ops":[]}},
                               "devices":"cpu:2","methods":["m_etf","heft"],"include_placement":false})");
  EXPECT_EQ(r.id.json(), "42");  // an integer, echoed as one
  EXPECT_EQ(r.graph.inline_json, R"({"format":"placer.graph","ops":[]})");
  EXPECT_EQ(r.cluster.devices, "cpu:2");
  ASSERT_EQ(r.methods.size(), 2u);
  EXPECT_EQ(r.methods[1], "heft");
  EXPECT_FALSE(r.include_placement);
}

TEST(Protocol, ParsesOptimizeAndJobRequests) {
  Request r = parse_request(R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2",
                               "budget":{"samples":500,"seconds":2.5}})");
  EXPECT_EQ(r.budget.samples, 500);
  EXPECT_DOUBLE_EQ(r.budget.seconds, 2.5);
  EXPECT_EQ(r.reward_mode, "");  // the train config's (learned jobs) or simulated
  EXPECT_FALSE(r.is_learned());
  EXPECT_EQ(parse_request(R"({"version":1,"type":"cancel","job_id":"j-1"})").job_id, "j-1");
  EXPECT_EQ(parse_request(R"({"version":1,"type":"health"})").type, RequestType::Health);
}

TEST(Protocol, ParsesLearnedOptimizeRequests) {
  Request r = parse_request(R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2",
                               "budget":{"samples":64},"learned":"gnn","save_as":"mlp-gnn.v2"})");
  EXPECT_EQ(r.learned_policy, "gnn");
  EXPECT_FALSE(r.learned.present());
  EXPECT_EQ(r.save_as, "mlp-gnn.v2");
  r = parse_request(
      R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"devices":"cpu:2","budget":{"seconds":5},
                       "learned":{"policy":{"type":"seq2seq","hidden":8},"train":{"lr":0.02}},"reward_mode":"hybrid"})");
  // The train-config object itself, a node of the parsed request (read by the job).
  EXPECT_TRUE(r.learned.is_map());
  EXPECT_EQ(r.learned.keys(), (std::vector<std::string>{"policy", "train"}));
  EXPECT_EQ(r.learned.member("policy").member("type").string(), "seq2seq");
  EXPECT_EQ(r.learned.member("policy").member("hidden").integer(), 8);
  EXPECT_EQ(r.learned.member("train").member("lr").number(), 0.02);
  EXPECT_TRUE(r.learned_policy.empty());
  EXPECT_EQ(r.reward_mode, "hybrid");
  const std::string head =
      R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2","budget":{"samples":9},)";
  expect_error(head + R"("learned":"lstm"})", codes::kBadRequest, "learned", "expected a policy type");
  expect_error(head + R"("learned":[1]})", codes::kBadRequest, "learned", "got an array");
  expect_error(head + R"("learned":"seq2seq","methods":["m_etf"]})", codes::kBadRequest, "methods", "not both");
  expect_error(head + R"("learned":"seq2seq","save_as":"a/b"})", codes::kBadRequest, "save_as", "a policy name is");
  expect_error(head + R"("learned":"seq2seq","save_as":".hidden"})", codes::kBadRequest, "save_as",
               "not starting with");
  expect_error(head + R"("save_as":"x"})", codes::kBadRequest, "save_as", "only a learned job");
  expect_error(head + R"("learned":"seq2seq","reward_mode":"real"})", codes::kBadRequest, "reward_mode",
               "expected simulated");
}

// objective, microbatches, schedule (issue 27): defaults, values, and the key
// every cache of prepared problems and answers includes.
TEST(Protocol, ParsesTheObjective) {
  const std::string head = R"({"version":1,"type":"place","graph":{"builder":"mlp"},"cluster":"k80x2")";
  Request r = parse_request(head + "}");
  EXPECT_EQ(r.objective, Objective::Step);
  EXPECT_EQ(r.objective_key(), "step");
  r = parse_request(head + R"(,"objective":"pipeline"})");
  EXPECT_EQ(r.objective, Objective::Pipeline);
  EXPECT_EQ(r.pipeline.microbatches, 4);
  EXPECT_EQ(r.pipeline.schedule, PipelineSchedule::OneFOneB);
  EXPECT_EQ(r.objective_key(), "pipeline:4:1f1b");
  r = parse_request(head + R"(,"objective":"pipeline","microbatches":16,"schedule":"gpipe"})");
  EXPECT_EQ(r.pipeline.microbatches, 16);
  EXPECT_EQ(r.pipeline.schedule, PipelineSchedule::GPipe);
  EXPECT_EQ(r.objective_key(), "pipeline:16:gpipe");
  EXPECT_EQ(parse_request(head + R"(,"objective":"step"})").objective_key(), "step");
  // Every request about a placement's time takes it.
  for (const char* type : {"baselines", "evaluate", "optimize"}) {
    const std::string text = std::string(R"({"version":1,"type":")") + type +
                             R"(","graph":{"builder":"mlp"},"cluster":"k80x2","budget":{"samples":9},)"
                             R"("placement":{"device":{}},"objective":"pipeline","microbatches":2})";
    EXPECT_EQ(parse_request(text).objective_key(), "pipeline:2:1f1b") << type;
  }
}

TEST(Protocol, BadObjectivesNameTheFieldAndTheProblem) {
  const std::string head = R"({"version":1,"type":"place","graph":{"builder":"mlp"},"cluster":"k80x2",)";
  expect_error(head + R"("objective":"fast"})", codes::kBadRequest, "objective",
               "unknown objective 'fast' (known: step, pipeline)");
  expect_error(head + R"("objective":1})", codes::kBadRequest, "objective", "expected a string, got 1");
  expect_error(head + R"("objective":"pipeline","microbatches":0})", codes::kBadRequest, "microbatches",
               "must be in [1, 1024], got 0");
  expect_error(head + R"("objective":"pipeline","microbatches":2.5})", codes::kBadRequest, "microbatches",
               "expected an integer, got 2.5");
  expect_error(head + R"("objective":"pipeline","microbatches":"4"})", codes::kBadRequest, "microbatches",
               "expected an integer");
  expect_error(head + R"("objective":"pipeline","microbatches":5000})", codes::kTooLarge, "microbatches", "got 5000");
  expect_error(head + R"("objective":"pipeline","schedule":"zb"})", codes::kBadRequest, "schedule",
               "unknown schedule 'zb' (known: gpipe, 1f1b)");
  // A pipeline's fields without the pipeline: the client meant something else.
  expect_error(head + R"("microbatches":8})", codes::kBadRequest, "microbatches",
               R"(only with "objective": "pipeline")");
  expect_error(head + R"("objective":"step","schedule":"gpipe"})", codes::kBadRequest, "schedule",
               R"(only with "objective": "pipeline")");
}

// A learned job's config may say it too (learned.reward.*): it fills in what
// the request leaves out; where both say it, they must agree.
TEST(Protocol, LearnedConfigAndRequestAgreeOnTheObjective) {
  const std::string head =
      R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2","budget":{"samples":9},)";
  Request r = parse_request(head + R"("learned":{"reward":{"objective":"pipeline","microbatches":8}}})");
  EXPECT_EQ(r.objective_key(), "pipeline:8:1f1b");
  r = parse_request(head + R"("objective":"pipeline","learned":{"reward":{"schedule":"gpipe"}}})");
  EXPECT_EQ(r.objective_key(), "pipeline:4:gpipe");
  r = parse_request(
      head +
      R"("objective":"pipeline","microbatches":8,"learned":{"reward":{"objective":"pipeline","microbatches":8}}})");
  EXPECT_EQ(r.objective_key(), "pipeline:8:1f1b");
  expect_error(head + R"("objective":"step","learned":{"reward":{"objective":"pipeline"}}})", codes::kBadRequest,
               "learned.reward.objective",
               "pipeline disagrees with the request's objective step: give it in one place, or the same in both");
  expect_error(head + R"("objective":"pipeline","microbatches":4,"learned":{"reward":{"microbatches":8}}})",
               codes::kBadRequest, "learned.reward.microbatches", "8 disagrees with the request's microbatches 4");
  expect_error(head + R"("objective":"pipeline","schedule":"1f1b","learned":{"reward":{"schedule":"gpipe"}}})",
               codes::kBadRequest, "learned.reward.schedule", "gpipe disagrees with the request's schedule 1f1b");
  expect_error(head + R"("learned":{"reward":{"objective":"fastest"}}})", codes::kBadRequest,
               "learned.reward.objective", "unknown objective 'fastest'");
  expect_error(head + R"("learned":{"reward":{"objective":"pipeline","microbatches":-1}}})", codes::kBadRequest,
               "learned.reward.microbatches", "must be in [1, 1024], got -1");
}

TEST(Protocol, MalformedJson) {
  expect_error("{\"version\":1,", codes::kBadJson, "", "malformed JSON at byte");
  expect_error("", codes::kBadJson, "");
  expect_error("[1,2]", codes::kBadJson, "", "expected a JSON object, got an array");
  expect_error(std::string("{\"version\":1,\"type\":\"health\"\0}", 30), codes::kBadJson, "");
}

TEST(Protocol, VersionChecks) {
  expect_error(R"({"type":"health"})", codes::kBadRequest, "version", "missing required field");
  expect_error(R"({"version":"1","type":"health"})", codes::kBadRequest, "version", "expected an integer, got \"1\"");
  expect_error(R"({"version":2,"type":"health"})", codes::kBadVersion, "version",
               "protocol version 2 is not supported");
}

TEST(Protocol, UnknownTypeListsKnownOnes) {
  expect_error(R"({"version":1,"type":"teleport"})", codes::kUnknownType, "type",
               "unknown request type 'teleport' (known: health");
  expect_error(R"({"version":1,"type":7})", codes::kBadRequest, "type", "expected a string, got 7");
}

TEST(Protocol, MissingAndWrongTypedFieldsAreNamed) {
  expect_error(R"({"version":1,"type":"place","cluster":"k80x2"})", codes::kBadRequest, "graph",
               "missing required field");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt"}})", codes::kBadRequest, "cluster", "missing");
  expect_error(R"({"version":1,"type":"place","graph":"nmt","cluster":"k80x2"})", codes::kBadRequest, "graph",
               "got \"nmt\"");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt","inline":{}},"cluster":"k80x2"})",
               codes::kBadRequest, "graph", "exactly one");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt","options":{"layers":"two"}},"cluster":"k80x2"})",
               codes::kBadRequest, "graph.options.layers", "expected an integer, got \"two\"");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt","options":{"layers":2.5}},"cluster":"k80x2"})",
               codes::kBadRequest, "graph.options.layers", "expected an integer, got 2.5");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt"},"cluster":3})", codes::kBadRequest, "cluster",
               "got 3");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt"},"cluster":"k80x2","refine_samples":-1})",
               codes::kBadRequest, "refine_samples", "must be in [0, 5000], got -1");
  expect_error(R"({"version":1,"type":"baselines","graph":{"builder":"nmt"},"cluster":"k80x2","methods":["m_etf",3]})",
               codes::kBadRequest, "methods[1]", "expected a string");
  expect_error(R"({"version":1,"type":"status"})", codes::kBadRequest, "job_id", "missing");
  expect_error(R"({"version":1,"type":"optimize","graph":{"builder":"nmt"},"cluster":"k80x2","budget":{}})",
               codes::kBadRequest, "budget", "samples > 0 or seconds > 0");
  expect_error(R"({"version":1,"type":"optimize","graph":{"builder":"nmt"},"cluster":"k80x2","budget":{"samples":10},
                  "reward_mode":"measured"})",
               codes::kBadRequest, "reward_mode", "only learned jobs measure");
  expect_error(
      R"({"version":1,"type":"evaluate","graph":{"builder":"nmt"},"cluster":"k80x2","placement":{"device":{"a":1}}})",
      codes::kBadRequest, "placement.device.a", "expected a device name");
  expect_error(R"({"version":1,"type":"evaluate","graph":{"builder":"nmt"},"cluster":"k80x2",
                  "placement":{"device":{"a":"cuda:0","a":"cuda:1"}}})",
               codes::kBadRequest, "placement.device.a", "given twice");  // the last was kept
  expect_error(R"({"version":1,"type":"health","include_placement":"yes"})", codes::kBadRequest, "include_placement",
               "expected true or false");
}

// A typo in "measure" ran the defaults in silence; "methods" on a place or evaluate request was ignored.
TEST(Protocol, MeasureSettingsAndMethodsNobodyReadsAreRefused) {
  const std::string evaluate =
      R"({"version":1,"type":"evaluate","graph":{"builder":"mlp"},"devices":"cpu:2","placement":{"device":{}},)";
  expect_error(evaluate + R"("measure":{"max_step":3}})", codes::kBadRequest, "measure.max_step",
               "unknown field (known here: ");
  EXPECT_EQ(parse_request(evaluate + R"("measure":{"max_steps":3}})").measure->max_steps, 3);
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"mlp"},"devices":"cpu:2","methods":["bogus"]})",
               codes::kBadRequest, "methods", "only baselines and optimize requests take methods");
  expect_error(evaluate + R"("methods":["m_etf"]})", codes::kBadRequest, "methods", "only baselines and optimize");
}

// A key given twice kept the first ("devices", "graph") or the last ("graph.options.layers") in silence.
TEST(Protocol, AKeyGivenTwiceIsRefusedWhereverItIs) {
  const std::string head = R"({"version":1,"type":"place",)";
  expect_error(head + R"("graph":{"builder":"mlp"},"devices":"cpu:2","devices":"cpu:4"})", codes::kBadRequest,
               "devices", "given twice");
  expect_error(head + R"("graph":{"builder":"mlp","options":{"layers":2,"layers":3}},"devices":"cpu:2"})",
               codes::kBadRequest, "graph.options.layers", "given twice");
  expect_error(head + R"("graph":{"builder":"mlp"},"graph":{"builder":"nmt"},"devices":"cpu:2"})", codes::kBadRequest,
               "graph", "given twice");
  expect_error(R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"devices":"cpu:2","budget":{"samples":1},
                  "learned":{"train":{"lr":0.1,"lr":0.2}}})",
               codes::kBadRequest, "learned.train.lr", "given twice");
  expect_error(R"({"version":1,"type":"health","x":[{"a":1,"a":2}]})", codes::kBadRequest, "x[0].a", "given twice");
  // An inline graph's keys are its loader's to check (bad_graph, naming the op).
  EXPECT_NO_THROW(parse_request(head + R"("graph":{"inline":{"ops":[],"ops":[]}},"devices":"cpu:2"})"));
}

TEST(Protocol, HugeDeclaredSizesAreRefusedBeforeAnythingIsBuilt) {
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"nmt","options":{"batch":1e15}},"cluster":"k80x2"})",
               codes::kTooLarge, "graph.options.batch", "must be in [0, 1048576], got 1000000000000000");
  expect_error(
      R"({"version":1,"type":"place","graph":{"builder":"nmt","options":{"batch":18446744073709551615}},"cluster":"k80x2"})",
      codes::kTooLarge, "graph.options.batch");
  expect_error(
      R"({"version":1,"type":"place","graph":{"builder":"nmt","options":{"layers":64,"steps":1000}},"cluster":"k80x2"})",
      codes::kTooLarge, "graph.options", "layers x steps = 64000 exceeds the limit 4096");
  expect_error(
      R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2","budget":{"samples":1000000000000}})",
      codes::kTooLarge, "budget.samples");
  expect_error(
      R"({"version":1,"type":"optimize","graph":{"builder":"mlp"},"cluster":"k80x2","budget":{"seconds":1e300}})",
      codes::kTooLarge, "budget.seconds");
  expect_error(R"({"version":1,"type":"place","graph":{"builder":"mlp"},"cluster":"k80x2","refine_samples":99999999})",
               codes::kTooLarge, "refine_samples");
  expect_error(R"({"version":1,"type":"health","deadline_ms":100000000})", codes::kTooLarge, "deadline_ms");
  ProtocolLimits small;
  small.max_request_bytes = 64;
  expect_error(std::string(100, ' '), codes::kTooLarge, "", "100 bytes exceeds the limit of 64", small);
  expect_error(R"({"version":1,"type":"status","job_id":")" + std::string(1000, 'x') + "\"}", codes::kTooLarge,
               "job_id");
}

TEST(Protocol, DeepNestingIsRefusedWithoutRecursion) {
  std::string deep = R"({"version":1,"type":"health","x":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(deep, codes::kTooLarge, "", "nested deeper than 64");
}

TEST(Protocol, LargeInlineGraphKeepsTheClientsTextAndMalformedOnesEnd) {
  std::string graph = R"({"format":"placer.graph", "ops": [ )" + std::string(70000, ' ') + "]}";
  Request r = parse_request(R"({"version":1,"type":"place","graph":{"inline":)" + graph + R"(},"cluster":"k80x2"})");
  EXPECT_EQ(r.graph.inline_json, graph);  // the bytes as sent, whitespace and all
  // A NUL byte and unbalanced brackets inside a large inline value: an error, never a hang.
  std::string bad =
      R"({"version":1,"type":"place","graph":{"inline":{"a":[)" + std::string(1, '\0') + std::string(70000, 'x');
  expect_error(bad, codes::kBadJson, "");
}

// Every inline graph is cut out of the request before it is parsed (the graph
// loader parses it once, on a cache miss); errors after it still give the
// byte offset in the client's text.
TEST(Protocol, InlineGraphIsNotParsedWithTheRequest) {
  const std::string graph = R"({"format":"placer.graph", "ops": [1, 2, 3]})";
  const std::string text = R"({"version":1,"type":"place","graph":{"inline":)" + graph + R"(},"cluster":"k80x2",})";
  expect_error(text, codes::kBadJson, "", "malformed JSON at byte " + std::to_string(text.size() - 1) + ":");
  const Request r = parse_request(text.substr(0, text.size() - 2) + "}");
  EXPECT_EQ(r.graph.inline_json, graph);
}

TEST(Protocol, SalvagesIdFromBadRequests) {
  EXPECT_EQ(salvage_request_id(R"({"id":"x9","version":3})").text, "x9");
  EXPECT_EQ(salvage_request_id(R"({"id":12})").json(), "12");  // an integer, echoed as one
  EXPECT_EQ(salvage_request_id(R"({"id":18446744073709551615})").json(), "18446744073709551615");
  EXPECT_EQ(salvage_request_id(R"({"id":"12"})").json(), "\"12\"");
  EXPECT_TRUE(salvage_request_id("not json").empty());
}

// Seeds are 64-bit unsigned, as the CLI's (`placer query --seed` sent up to 2^64-1; the server refused
// past 2^63-1), in measure too.
TEST(Protocol, SeedsTakeEvery64BitValue) {
  const std::string head = R"({"version":1,"type":"evaluate","graph":{"builder":"mlp"},"cluster":"k80x2",)"
                           R"("placement":{"device":{}},)";
  EXPECT_EQ(parse_request(head + R"("seed":18446744073709551615})").seed, 18446744073709551615u);
  EXPECT_EQ(parse_request(head + R"("measure":{"seed":18446744073709551615}})").measure->seed,
            18446744073709551615u);
  EXPECT_EQ(parse_request(head + R"("seed":1e3})").seed, 1000u);
  expect_error(head + R"("seed":18446744073709551616})", codes::kTooLarge, "seed", "must be <= 18446744073709551615");
  expect_error(head + R"("seed":-1})", codes::kBadRequest, "seed", "must be >= 0");
  expect_error(head + R"("seed":1.5})", codes::kBadRequest, "seed", "expected an integer, got 1.5");
  expect_error(head + R"("measure":{"seed":-1}})", codes::kBadRequest, "measure.seed", "must be >= 0");
}

TEST(Protocol, ReplyBuilders) {
  EXPECT_EQ(ok_reply(RequestId{"a"}, RequestType::Health, "{}"),
            R"({"version":1,"id":"a","type":"health","status":"ok","result":{}})");
  EXPECT_EQ(
      error_reply(RequestId{"b"}, "place", codes::kBadGraph, "graph.inline", "cycle \"x\""),
      R"({"version":1,"id":"b","type":"place","status":"error","error":{"code":"bad_graph","field":"graph.inline","message":"cycle \"x\""}})");
  EXPECT_EQ(error_reply({}, "", codes::kBusy, "", "full"),
            R"({"version":1,"id":"","type":"","status":"busy","error":{"code":"busy","field":"","message":"full"}})");
  EXPECT_EQ(json_number(0.25), "0.25");
  EXPECT_EQ(json_number(1.0 / 0.0), "null");
}

}  // namespace
}  // namespace placer::service
