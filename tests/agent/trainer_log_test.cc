// The training log's SVG plot: names from the config (run, graph, cluster, warm-start method) are
// text in an XML document, escaped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../agent/src/trainer.h"

namespace placer {
namespace {

// Every '&' in `xml` starts one of XML's predefined entities.
bool ampersands_are_entities(const std::string& xml) {
  for (size_t i = xml.find('&'); i != std::string::npos; i = xml.find('&', i + 1)) {
    bool entity = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      entity = entity || xml.compare(i, std::string(e).size(), e) == 0;
    if (!entity) return false;
  }
  return true;
}

TEST(TrainerLog, RewardSvgEscapesItsTitleAndSeriesNames) {
  LogRow row;
  row.update = 1, row.samples = 3, row.reward_mean = -0.5, row.best_step_s = 2.0;
  const std::string svg = reward_svg({row}, "R&D <v2>: mlp on k80x2", 1.0, 1.5, "warm start (a&b <c>)");
  EXPECT_NE(svg.find(">R&amp;D &lt;v2&gt;: mlp on k80x2</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">warm start (a&amp;b &lt;c&gt;)</text>"), std::string::npos) << svg;
  EXPECT_TRUE(ampersands_are_entities(svg)) << svg;
  EXPECT_EQ(svg.find("<v2>"), std::string::npos) << svg;
}

}  // namespace
}  // namespace placer
