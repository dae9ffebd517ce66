#include "services/ctl/check_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/matchers.h"

namespace devtime::ctl {
namespace {

using devtime::testing::ContainsEach;
using ::testing::HasSubstr;
using ::testing::Not;

// The TorchNeuron guide's lost fusion: fused rms_norm 403.3 µs/step, then the naive ops.
CheckVerdict LostFusion() {
  CheckVerdict v;
  v.run = "rmsnorm/fused 2026-11-25T02:00:00Z (b87ae65c)";
  v.baseline = "rmsnorm/fused 2026-11-24T02:00:00Z (08f66244)";
  v.diff.basis = "device";
  v.diff.before_us = 403.3;
  v.diff.after_us = 2354.9;
  v.diff.relative_change = 2354.9 / 403.3 - 1;
  v.diff.tested = true;
  v.diff.p_value = 1e-9;
  v.diff.ops = {
      {.name = "aten::mul", .kind = OpDelta::Kind::kAdded, .after_us = 1165.6},
      {.name = "aten::rms_norm", .kind = OpDelta::Kind::kRemoved, .before_us = 403.3},
      {.name = "aten::add", .before_us = 10.0, .after_us = 12.0},  // 2 µs < 2 % of 403.3
      {.name = "a<b>|c", .before_us = 100.0, .after_us = 400.0},
  };
  v.diff.environment = {{"neuronx-cc", "2.21.18", "2.22.4"}};
  v.regression = IsRegression(v.diff, v.options);
  return v;
}

TEST(CheckOutput, SignificantOpsAreAddedRemovedOrMovedByTheThreshold) {
  auto ops = SignificantOps(LostFusion(), 10);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "aten::mul");
  EXPECT_EQ(ops[1].name, "aten::rms_norm");
  EXPECT_EQ(ops[2].name, "a<b>|c");
  EXPECT_EQ(SignificantOps(LostFusion(), 1).size(), 1u);
}

TEST(CheckOutput, MarkdownHasTheVerdictTheFiguresAndATableOfTheChangedOperators) {
  const std::string md = RenderCheckMarkdown(LostFusion());
  EXPECT_THAT(md, ContainsEach({
                      "### devtime check: ❌ REGRESSION",
                      "device time per step 403.3 µs → 2.355 ms (+483.9 %, p = 1e-09)",
                      "| operator | | before / step | after / step | Δ / step | Δ % |",
                      "| `aten::mul` | added | 0.0 µs | 1.166 ms | +1.166 ms | added |",
                      "| `a<b>\\|c` |",  // a | inside a cell is escaped
                      "Environment changes: `neuronx-cc` 2.21.18 → 2.22.4",
                  }));
  EXPECT_THAT(md, Not(HasSubstr("aten::add")));
}

TEST(CheckOutput, MarkdownSaysOkWhenTheRunDidNotRegress) {
  CheckVerdict v = LostFusion();
  v.diff.after_us = v.diff.before_us;
  v.diff.relative_change = 0;
  v.diff.ops.clear();
  v.regression = IsRegression(v.diff, v.options);
  EXPECT_THAT(RenderCheckMarkdown(v),
              ContainsEach({"✅ OK", "No operator changed by the threshold or more."}));
}

TEST(CheckOutput, JunitHasOneCaseForTheRunAndOnePerSignificantOperator) {
  const std::string xml = RenderCheckJunit(LostFusion());
  // The run, aten::mul (added) and a<b>|c (slower) fail; aten::rms_norm (removed) passes.
  EXPECT_THAT(xml, ContainsEach({
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                       "<testsuites name=\"devtime check\" tests=\"4\" failures=\"3\">",
                       "name=\"operator aten::rms_norm\"/>",
                       "name=\"operator a&lt;b&gt;|c\">",
                       "<failure type=\"regression\" message=\"device time per step",
                   }));
  EXPECT_THAT(xml, Not(HasSubstr("<b>")));
}

TEST(CheckOutput, JunitHasNoFailuresWhenTheRunDidNotRegress) {
  CheckVerdict v = LostFusion();
  v.regression = false;
  const std::string xml = RenderCheckJunit(v);
  EXPECT_THAT(xml, HasSubstr("failures=\"0\""));
  EXPECT_THAT(xml, Not(HasSubstr("<failure")));
}

}  // namespace
}  // namespace devtime::ctl
