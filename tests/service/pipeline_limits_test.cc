// A pipelined request whose unrolled mini-batch passes what make_pipeline_graph builds (4 million ops) is
// too_large at `microbatches`, whatever the server's limits.max_ops: with max_ops above it, such a request
// reached make_pipeline_graph's GraphError and the client got a bad_request naming no field.
#include <gtest/gtest.h>

#include "../../service/src/objective.h"
#include "placer/frontends/builders.h"
#include "placer/graphs/pipeline_limits.h"

namespace placer::service {
namespace {

TEST(PipelineLimits, PastTheUnrolledCapIsTooLargeWhateverMaxOps) {
  BuilderOptions options;
  options.values = {{"layers", 800}, {"batch", 2}, {"input", 4}, {"width", 4}, {"classes", 2}};
  const Graph g = build_graph("mlp", options);
  ASSERT_TRUE(g.is_training());
  Request request;
  request.objective = Objective::Pipeline;
  request.pipeline.microbatches = static_cast<int>(kMaxUnrolledOps / static_cast<int64_t>(g.size())) + 1;
  ASSERT_LE(request.pipeline.microbatches, 1024) << g.size();
  ServiceConfig config;
  config.max_ops = 100'000'000;
  try {
    check_pipeline_size(request, g, config);
    FAIL() << "passed";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code(), codes::kTooLarge);
    EXPECT_EQ(e.field(), "microbatches");
    EXPECT_NE(std::string(e.what()).find("at most 4000000"), std::string::npos) << e.what();
  }
  request.pipeline.microbatches = 1;
  EXPECT_NO_THROW(check_pipeline_size(request, g, config));
}

}  // namespace
}  // namespace placer::service
