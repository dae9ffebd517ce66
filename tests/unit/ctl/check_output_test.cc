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
  v.series = "rmsnorm/fused trn1.2xlarge neuron";
  v.run = "rmsnorm/fused trn1.2xlarge neuron 2026-11-25T02:00:00Z (b87ae65c)";
  v.baseline = "rmsnorm/fused trn1.2xlarge neuron 2026-11-24T02:00:00Z (08f66244)";
  v.run_id = "b87ae65c-1586-5981-9b67-2f63345e092d";
  v.baseline_id = "08f66244-c1be-511b-a153-caf06a56c0de";
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
                       "<testsuites name=\"devtime check\" tests=\"4\" failures=\"3\" "
                       "errors=\"0\">",
                       "name=\"rmsnorm/fused trn1.2xlarge neuron: operator aten::rms_norm\"/>",
                       "name=\"rmsnorm/fused trn1.2xlarge neuron: operator a&lt;b&gt;|c\">",
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

TEST(CheckOutput, JunitNamesTestsBySeriesAndPutsRunIdsInProperties) {
  const std::string xml = RenderCheckJunit(LostFusion());
  EXPECT_THAT(xml, ContainsEach({
                       "<testsuite name=\"devtime check rmsnorm/fused trn1.2xlarge neuron\"",
                       "name=\"rmsnorm/fused trn1.2xlarge neuron: device time per step\">",
                       "<property name=\"run\" value=\"b87ae65c-1586-5981-9b67-2f63345e092d\"/>",
                       "<property name=\"baseline\" "
                       "value=\"08f66244-c1be-511b-a153-caf06a56c0de\"/>",
                   }));
  // No test name carries a run id or a time: CI test history follows the workload.
  for (std::size_t at = xml.find("<testcase"); at != std::string::npos;
       at = xml.find("<testcase", at + 1)) {
    const std::string tag = xml.substr(at, xml.find('>', at) - at);
    EXPECT_THAT(tag, Not(HasSubstr("b87ae65c")));
    EXPECT_THAT(tag, Not(HasSubstr("2026-")));
  }
}

TEST(CheckOutput, AComparisonAcrossSeriesSaysSoOnEverySide) {
  CheckVerdict v = LostFusion();
  v.crossed = {{IdentityKey::kWorkload, "fused", "fused-pr"}};
  v.diff.before_basis = "self CPU";
  EXPECT_THAT(RenderCheckMarkdown(v),
              ContainsEach({"⚠️ across series (--allow-different): workload fused vs fused-pr",
                            "time per step (self CPU before, device after) 403.3 µs"}));
  EXPECT_THAT(RenderCheckJunit(v),
              ContainsEach({"<property name=\"across_series\" value=\"workload fused vs "
                            "fused-pr\"/>",
                            "across series (--allow-different): workload fused vs fused-pr"}));
}

CheckFailure Unreachable() {
  return {.run_ref = "b87ae65c",
          .baseline_ref = "latest",
          .exit_code = 3,
          .reason = "cannot reach the collector at 127.0.0.1:1: ```connection refused```\x1b"};
}

TEST(CheckOutput, MarkdownSaysCouldNotCheckWithTheReason) {
  const std::string md = RenderCheckFailureMarkdown(Unreachable());
  EXPECT_THAT(md, ContainsEach({
                      "### devtime check: ⚠️ could not check (exit 3: unavailable)",
                      "**run b87ae65c** against baseline **latest**: no verdict.",
                      "```text\ncannot reach the collector at 127.0.0.1:1: "
                      "'''connection refused'''",  // a fence in the reason cannot end the block
                  }));
  EXPECT_THAT(md, Not(HasSubstr("OK")));
}

TEST(CheckOutput, JunitSaysCouldNotCheckAsOneErrorNamedByTheSeries) {
  const std::string unknown = RenderCheckFailureJunit(Unreachable());
  EXPECT_THAT(unknown, ContainsEach({
                           "<testsuites name=\"devtime check\" tests=\"1\" failures=\"0\" "
                           "errors=\"1\">",
                           "<testcase classname=\"devtime.check\" name=\"run b87ae65c: time "
                           "per step\">",
                           "<error type=\"unavailable\" message=\"could not check (exit 3: "
                           "unavailable)\">",
                           "<property name=\"exit_code\" value=\"3\"/>",
                           "```connection refused```?</error>",  // no control character in XML
                       }));
  CheckFailure known = Unreachable();
  known.exit_code = 6;
  known.series = "rmsnorm/fused-pr trn1.2xlarge cpu";
  known.basis = "self CPU";
  EXPECT_THAT(RenderCheckFailureJunit(known),
              ContainsEach({"name=\"rmsnorm/fused-pr trn1.2xlarge cpu: self CPU time per step\"",
                            "<error type=\"different series\""}));
}

}  // namespace
}  // namespace devtime::ctl
