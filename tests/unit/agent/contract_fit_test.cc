// Issue 22: the agent sends only what the collector accepts. Profiles past the wire contract's
// limits (steps, operators, names, step numbers, message size) become runs that
// wire::ValidateRun accepts, each repair with a warning in the run, and with their totals.
#include "agents/contract/contract_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "agents/contract/run_summary_builder.h"
#include "agents/trace/trace_summary.h"
#include "proto/wire/change.h"
#include "proto/wire/limits.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RunLabels Labels() {
  RunLabels labels;
  labels.model = "fit";
  labels.workload = "limits";
  labels.host = "h1";
  labels.started_at = std::chrono::system_clock::time_point(std::chrono::seconds(1795917600));
  labels.finished_at = labels.started_at + std::chrono::seconds(5);
  return labels;
}

trace::OpStats Op(const std::string& name, double self_cpu_us, std::size_t windows = 0) {
  trace::OpStats op;
  op.name = name;
  op.calls = 1;
  op.self_cpu_us = self_cpu_us;
  op.total_cpu_us = self_cpu_us;
  op.step_self_device_us = trace::StepSamples(windows);
  return op;
}

// A CPU profile of `steps` ProfilerStep windows: step i took 100 + i % 7 µs, all of it in
// aten::mul, whose per-step samples say the same.
trace::TraceSummary ManySteps(std::size_t steps) {
  trace::TraceSummary summary;
  summary.source_format = "legacy-array";
  summary.device_kind = trace::DeviceKind::kCpu;
  trace::OpStats mul = Op("aten::mul", 0, steps);
  for (std::size_t i = 0; i < steps; ++i) {
    const double us = 100.0 + static_cast<double>(i % 7);
    summary.steps.push_back({static_cast<uint32_t>(i), 0, us});
    mul.step_self_device_us.Add(i, us);
    mul.self_cpu_us += us;
    mul.calls += 1;
  }
  mul.total_cpu_us = mul.self_cpu_us;
  summary.ops.push_back(mul);
  return summary;
}

const v1::CaptureWarning* WarningOf(const v1::RunSummary& run, const std::string& kind) {
  for (const auto& w : run.warnings()) {
    if (w.kind() == kind) return &w;
  }
  return nullptr;
}

void ExpectAccepted(const v1::RunSummary& run) {
  const absl::Status valid = wire::ValidateRun(run);
  EXPECT_TRUE(valid.ok()) << valid;
}

TEST(ContractFit, TwentyThousandStepsAreSentAsTenThousandBucketsWithExactTotals) {
  const trace::TraceSummary summary = ManySteps(20'000);
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.steps_size(), 10'000);
  EXPECT_EQ(wire::StepsCovered(run), 20'000);
  // Bucket 3 holds steps 6 and 7: 106 and 100 µs (i % 7), a mean per step of 103.
  EXPECT_EQ(run.steps(3).step(), 6u);
  EXPECT_EQ(run.steps(3).steps(), 2u);
  EXPECT_DOUBLE_EQ(run.steps(3).cpu_us(), 103.0);
  ASSERT_EQ(run.ops(0).step_self_device_us_size(), 10'000);
  EXPECT_DOUBLE_EQ(run.ops(0).step_self_device_us(3), 103.0);
  // The series value is the exact mean over all 20,000 steps.
  double total = 0;
  for (const auto& step : summary.steps) total += step.cpu_us;
  EXPECT_NEAR(wire::TimePerStep(run), total / 20'000, 1e-9);
  const auto* warning = WarningOf(run, "steps_bucketed");
  ASSERT_NE(warning, nullptr);
  EXPECT_THAT(warning->message(), HasSubstr("20000 steps"));
  EXPECT_THAT(warning->message(), HasSubstr("10000 buckets of 2 contiguous steps"));
  EXPECT_TRUE(IsRepairWarning(*warning));
}

TEST(ContractFit, AnUnevenLastBucketWeighsTheStepsItHolds) {
  const trace::TraceSummary summary = ManySteps(10'001);  // 5,001 buckets: the last of 1
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.steps_size(), 5'001);
  EXPECT_EQ(run.steps(5'000).steps(), 1u);
  EXPECT_EQ(run.steps(5'000).step(), 10'000u);
  double total = 0;
  for (const auto& step : summary.steps) total += step.cpu_us;
  EXPECT_NEAR(wire::TimePerStep(run), total / 10'001, 1e-9);
}

TEST(ContractFit, RunsWithinTheLimitsAreSentAsTheyAre) {
  const v1::RunSummary run = BuildRunSummary(ManySteps(10'000), Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.steps_size(), 10'000);
  EXPECT_EQ(run.steps(9'999).steps(), 0u);  // not a bucket: the field is absent
  EXPECT_EQ(run.steps(9'999).step(), 9'999u);
  EXPECT_EQ(run.warnings_size(), 0);
}

TEST(ContractFit, StepsAndSamplesAreBucketedFurtherWhenTheyWouldNotFitOneMessage) {
  // 250 operators with a sample in each of 10,000 steps: 20 MB of samples, past 16 MiB.
  trace::TraceSummary summary = ManySteps(10'000);
  for (int k = 0; k < 249; ++k) {
    trace::OpStats op = Op("op_" + std::to_string(k), 10'000, 10'000);
    for (std::size_t i = 0; i < 10'000; ++i) op.step_self_device_us.Add(i, 1.0);
    summary.ops.push_back(std::move(op));
  }
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  EXPECT_LE(run.ByteSizeLong(), wire::kMaxMessageBytes);
  EXPECT_LT(run.steps_size(), 10'000);
  EXPECT_EQ(wire::StepsCovered(run), 10'000);
  EXPECT_NE(WarningOf(run, "steps_bucketed"), nullptr);
  for (const auto& op : run.ops()) EXPECT_EQ(op.step_self_device_us_size(), run.steps_size());
}

TEST(ContractFit, OperatorsPastTheLimitAreSummedIntoACountedRemainder) {
  trace::TraceSummary summary;
  summary.source_format = "legacy-array";
  summary.device_kind = trace::DeviceKind::kCpu;
  double total = 0;
  for (int i = 0; i < 20'001; ++i) {  // op_0 took the most time
    summary.ops.push_back(Op("op_" + std::to_string(i), 30'000.0 - i));
    total += 30'000.0 - i;
  }
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.ops_size(), 20'000);
  EXPECT_EQ(run.ops(0).name(), "op_0");
  EXPECT_EQ(run.ops(19'998).name(), "op_19998");
  const v1::OpStat& other = run.ops(19'999);
  EXPECT_EQ(other.name(), kOtherOperatorsName);
  EXPECT_EQ(other.calls(), 2u);  // op_19999 and op_20000
  EXPECT_DOUBLE_EQ(other.self_cpu_us(), (30'000.0 - 19'999) + (30'000.0 - 20'000));
  double sent = 0;
  for (const auto& op : run.ops()) sent += op.self_cpu_us();
  EXPECT_DOUBLE_EQ(sent, total);
  const auto* warning = WarningOf(run, "operators_merged");
  ASSERT_NE(warning, nullptr);
  EXPECT_THAT(warning->message(), HasSubstr("20001 operators"));
  EXPECT_THAT(warning->message(), HasSubstr("the 2 with the least time"));
}

TEST(ContractFit, ControlAndBidiCharactersInOperatorNamesAreEscaped) {
  trace::TraceSummary summary = ManySteps(2);
  summary.ops.push_back(Op("esc\x1b[31m", 5));
  summary.ops.push_back(Op("c1\xc2\x85", 4));              // U+0085, a C1 control
  summary.ops.push_back(Op("bidi\xe2\x80\xae", 3));        // U+202E RIGHT-TO-LEFT OVERRIDE
  summary.ops.push_back(Op(std::string("nul\0x", 5), 2));  // a NUL inside
  summary.ops.push_back(Op("broken\xff", 1));              // not UTF-8
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  std::vector<std::string> names;
  for (const auto& op : run.ops()) names.push_back(op.name());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("aten::mul", "esc\\x1b[31m", "c1\\x85",
                                                     "bidi\\u202e", "nul\\x00x", "broken\\xff"));
  const auto* warning = WarningOf(run, "operator_names_escaped");
  ASSERT_NE(warning, nullptr);
  EXPECT_THAT(warning->message(), HasSubstr("5 operator names"));
}

TEST(ContractFit, LongOperatorNamesAreCutWithAMarkerThatKeepsThemApart) {
  trace::TraceSummary summary = ManySteps(2);
  const std::string prefix(3'000, 'T');
  summary.ops.push_back(Op(prefix + "<float>", 2));
  summary.ops.push_back(Op(prefix + "<half>", 1));
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.ops_size(), 3);
  const std::string& a = run.ops(1).name();
  const std::string& b = run.ops(2).name();
  EXPECT_LE(a.size(), wire::kMaxOpNameBytes);
  EXPECT_THAT(a, HasSubstr("[cut from 3007 bytes, #"));
  EXPECT_NE(a, b);
  // The same name is cut the same way every night: its series goes on.
  EXPECT_EQ(FitText(prefix + "<float>", wire::kMaxOpNameBytes).text, a);
  EXPECT_NE(WarningOf(run, "operator_names_cut"), nullptr);
}

TEST(ContractFit, RepeatedStepNumbersAreRenumberedInWindowOrder) {
  trace::TraceSummary summary = ManySteps(3);
  summary.steps[2].step = 1;  // two sessions, say, both counting from 0
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  ASSERT_EQ(run.steps_size(), 3);
  EXPECT_EQ(run.steps(2).step(), 2u);
  EXPECT_DOUBLE_EQ(run.steps(2).cpu_us(), summary.steps[2].cpu_us);
  const auto* warning = WarningOf(run, "steps_renumbered");
  ASSERT_NE(warning, nullptr);
  EXPECT_THAT(warning->message(), HasSubstr("step number 1 appears twice"));
}

TEST(ContractFit, StepNumbersPastAPostgresIntegerAreRenumbered) {
  trace::TraceSummary summary = ManySteps(2);
  summary.steps[0].step = 3'000'000'000u;
  summary.steps[1].step = 3'000'000'001u;
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  EXPECT_EQ(run.steps(0).step(), 0u);
  EXPECT_EQ(run.steps(1).step(), 1u);
  ASSERT_NE(WarningOf(run, "steps_renumbered"), nullptr);
  EXPECT_THAT(WarningOf(run, "steps_renumbered")->message(), HasSubstr("3000000000 is past"));
}

TEST(ContractFit, EnvironmentTextIsEscapedAndCut) {
  trace::TraceSummary summary = ManySteps(2);
  summary.environment["compiler_flags"] = std::string(2'000, 'f');
  summary.environment["banner"] = "\x1b[1mbold";
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  EXPECT_EQ(run.environment().at("banner"), "\\x1b[1mbold");
  EXPECT_LE(run.environment().at("compiler_flags").size(), wire::kMaxEnvironmentValueBytes);
  const auto* warning = WarningOf(run, "text_repaired");
  ASSERT_NE(warning, nullptr);
  EXPECT_THAT(warning->message(), HasSubstr("environment[banner]"));
}

TEST(ContractFit, RepairWarningsAreKeptWhenTheTraceFillsTheWarnings) {
  trace::TraceSummary summary = ManySteps(2);
  summary.ops.push_back(Op("esc\x1b", 1));
  for (int i = 0; i < 300; ++i) summary.warnings.push_back("warning " + std::to_string(i));
  const v1::RunSummary run = BuildRunSummary(summary, Labels());
  ExpectAccepted(run);
  EXPECT_EQ(run.warnings_size(), static_cast<int>(wire::kMaxWarnings));
  EXPECT_NE(WarningOf(run, "operator_names_escaped"), nullptr);
}

// What has no repair is left for the contract to refuse, naming the field (the daemon then
// fails the slot with that message instead of spooling the run).
TEST(ContractFit, ATimePastTheContractsBoundIsRefusedNotRepaired) {
  trace::TraceSummary summary = ManySteps(2);
  summary.ops.push_back(Op("aten::forever", 2e15));
  const absl::Status valid = wire::ValidateRun(BuildRunSummary(summary, Labels()));
  EXPECT_EQ(valid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(valid.message()), HasSubstr("self_cpu_us: must be finite"));
}

TEST(StepBuckets, ContiguousBucketsOfEqualSizeButTheLast) {
  StepBuckets buckets(7, 3);
  EXPECT_EQ(buckets.steps_per_bucket(), 3u);
  EXPECT_EQ(buckets.count(), 3u);
  EXPECT_EQ(buckets.Size(2), 1u);
  EXPECT_EQ(buckets.BucketOf(5), 1u);
  EXPECT_FALSE(StepBuckets(3, 3).bucketed());
}

TEST(FitText, PrintableTextWithinTheLimitIsUnchanged) {
  const FittedText fitted = FitText("aten::mul", 16);
  EXPECT_EQ(fitted.text, "aten::mul");
  EXPECT_FALSE(fitted.escaped);
  EXPECT_FALSE(fitted.cut);
  EXPECT_THAT(FitText("\xc3\xa9t\xc3\xa9", 16).text, Not(HasSubstr("\\")));
}

}  // namespace
}  // namespace devtime::agent

namespace devtime::agent {
namespace {

// A Kineto CPU trace of 3 ProfilerStep windows holding `names` distinct operators (one call
// each, op_i taking 1 + (i * 7919) % 5000 us, so times tie and interleave), written to a file.
std::string ManyNamesTrace(int names) {
  const std::string path = ::testing::TempDir() + "/many_names.json";
  std::string json = R"({"traceEvents": [)";
  const int per_step = (names + 2) / 3;
  int64_t ts = 0;
  for (int step = 0; step < 3; ++step) {
    const int64_t start = ts;
    std::string ops;
    for (int i = step * per_step; i < std::min(names, (step + 1) * per_step); ++i) {
      const int64_t dur = 1 + (int64_t{i} * 7919) % 5000;
      ops += R"(,{"ph": "X", "cat": "cpu_op", "name": "op_)" + std::to_string(i) +
             R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts + 1) + R"(, "dur": )" +
             std::to_string(dur) + "}";
      ts += dur + 2;
    }
    ts += 2;
    json += (step ? "," : "") + std::string(R"({"ph": "X", "cat": "user_annotation", )") +
            R"("name": "ProfilerStep#)" + std::to_string(step) + R"(", "pid": 1, "tid": 1, )" +
            R"("ts": )" + std::to_string(start) + R"(, "dur": )" + std::to_string(ts - start) +
            "}" + ops;
    ts += 1;
  }
  json += "]}";
  std::ofstream(path) << json;
  return path;
}

// Issue 23: `summarize --format json` folds the operators past the RunSummary's limit as the
// rows are made (a million names are never a million rows); the run is the one the unfolded
// summary makes: the same rows, times, samples and repair warning.
TEST(ContractFit, OperatorsFoldedByTheLibraryMakeTheSameRun) {
  const std::string path = ManyNamesTrace(25'000);
  auto all = trace::Summarize(path);
  ASSERT_TRUE(all.ok()) << all.status();
  trace::SummarizeOptions options;
  options.max_op_rows = wire::kMaxOps;
  auto folded = trace::Summarize(path, options);
  ASSERT_TRUE(folded.ok()) << folded.status();
  ASSERT_EQ(all->ops.size(), 25'001u);  // and ProfilerStep*
  ASSERT_EQ(folded->ops.size(), wire::kMaxOps);
  EXPECT_EQ(folded->folded_ops, 25'001u - (wire::kMaxOps - 1));
  EXPECT_DOUBLE_EQ(folded->self_cpu_total_us, all->self_cpu_total_us);

  const v1::RunSummary want = BuildRunSummary(*all, Labels());
  const v1::RunSummary got = BuildRunSummary(*folded, Labels());
  ExpectAccepted(got);
  ASSERT_EQ(got.ops_size(), want.ops_size());
  for (int i = 0; i < want.ops_size(); ++i) {
    const v1::OpStat& w = want.ops(i);
    const v1::OpStat& g = got.ops(i);
    ASSERT_EQ(g.name(), w.name()) << i;
    EXPECT_EQ(g.calls(), w.calls()) << w.name();
    EXPECT_NEAR(g.self_cpu_us(), w.self_cpu_us(), 1e-6 * w.self_cpu_us()) << w.name();
    EXPECT_NEAR(g.total_cpu_us(), w.total_cpu_us(), 1e-6 * w.total_cpu_us()) << w.name();
    ASSERT_EQ(g.step_self_device_us_size(), w.step_self_device_us_size()) << w.name();
    for (int s = 0; s < w.step_self_device_us_size(); ++s) {
      EXPECT_NEAR(g.step_self_device_us(s), w.step_self_device_us(s),
                  1e-6 * std::abs(w.step_self_device_us(s)))
          << w.name() << " step " << s;
    }
  }
  const auto* w = WarningOf(want, "operators_merged");
  const auto* g = WarningOf(got, "operators_merged");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->message(), w->message());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace devtime::agent

namespace devtime::agent {
namespace {

// Issue 23: FitText escapes only the head of a long text (a 100 MB name is not copied whole);
// the result is the whole text's escape, cut, whatever character lies at the cut.
TEST(FitText, ALongTextIsFittedFromItsHeadAsFromTheWhole) {
  auto whole = [](const std::string& text, std::size_t max) {
    const std::string escaped = wire::EscapedText(text);
    const FittedText fitted = FitText(text, max);
    EXPECT_EQ(fitted.escaped, escaped != text);
    EXPECT_TRUE(fitted.cut);
    EXPECT_LE(fitted.text.size(), max);
    const std::size_t marker = fitted.text.rfind("\u2026[cut from ");
    EXPECT_NE(marker, std::string::npos);
    return std::make_pair(fitted.text.substr(0, marker), escaped);
  };
  for (std::size_t shift = 0; shift < 4; ++shift) {
    for (const std::string& tail :
         {std::string("\u20ac"), std::string("\x1b"), std::string("\xff"), std::string("a")}) {
      std::string text(2048 - 50 + shift, 'x');
      while (text.size() < 3000) text += tail;
      text += std::string(1 << 20, 'y');
      const auto [head, escaped] = whole(text, 2048);
      EXPECT_EQ(escaped.compare(0, head.size(), head), 0) << shift;
    }
  }
}

}  // namespace
}  // namespace devtime::agent
