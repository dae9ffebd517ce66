// Per-step samples stored sparsely (issue 12 item 6): an op costs memory for the steps it
// occurs in, not for every ProfilerStep window of the trace.
#include <algorithm>
#include <string>
#include <vector>

#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/summary/summarizer.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

TEST(StepSamples, ReadsAsADenseSequenceWithZerosWhereNothingWasAdded) {
  StepSamples s(4);
  s.Add(2, 5.0);
  s.Add(0, 1.0);  // out of order
  s.Add(2, 0.5);
  s.Add(3, 0.0);  // zeros are not stored
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.stored(), 2u);
  EXPECT_EQ(std::vector<double>(s.begin(), s.end()), (std::vector<double>{1.0, 0.0, 5.5, 0.0}));
  EXPECT_EQ(s[1], 0.0);
  EXPECT_EQ(s[2], 5.5);
  EXPECT_EQ(s, (StepSamples{1.0, 0.0, 5.5, 0.0}));
}

TEST(StepSamples, AddAllSumsWindowByWindow) {
  StepSamples a{1, 0, 2};
  a.AddAll(StepSamples{0, 3, 4});
  EXPECT_EQ(std::vector<double>(a.begin(), a.end()), (std::vector<double>{1, 3, 6}));
}

// `steps` ProfilerStep windows on one thread; aten::rare runs in the last one only.
std::string ManySteps(int steps) {
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < steps; ++i) {
    const int ts = 100 * i;
    json += (i ? "," : "") + std::string(R"({"ph": "X", "cat": "user_annotation", "name": )") +
            "\"ProfilerStep#" + std::to_string(i + 1) +
            "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts) +
            R"(, "dur": 90}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", )" +
            R"("pid": 1, "tid": 1, "ts": )" + std::to_string(ts + 10) + R"(, "dur": 20})";
  }
  json += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::rare", "pid": 1, "tid": 1, "ts": )" +
          std::to_string(100 * (steps - 1) + 40) + R"(, "dur": 10}]})";
  return json;
}

TEST(Summarizer, StoresPerStepSamplesOnlyForTheStepsAnOpOccursIn) {
  constexpr int kSteps = 3000;
  const std::string json = ManySteps(kSteps);
  absl::StatusOr<RawTrace> raw = ParseTraceJson(json.data(), json.size(), "many_steps.json");
  ASSERT_TRUE(raw.ok()) << raw.status();
  const TraceSummary s = SummarizeRawTrace(*raw, SummarizeOptions());
  ASSERT_EQ(s.steps.size(), static_cast<size_t>(kSteps));
  const OpStats& step = Op(s, "ProfilerStep*");
  const OpStats& rare = Op(s, "aten::rare");
  EXPECT_EQ(step.calls, static_cast<uint64_t>(kSteps));  // all ProfilerStep#N in one row
  EXPECT_EQ(s.ops.size(), 3u);
  // Dense to read, sparse to store: 3,000 steps, one stored value for aten::rare.
  EXPECT_EQ(rare.step_self_device_us.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(rare.step_self_device_us.stored(), 1u);
  EXPECT_DOUBLE_EQ(rare.step_self_device_us[kSteps - 1], 10.0);  // self CPU (no device)
  EXPECT_DOUBLE_EQ(rare.step_self_device_us[0], 0.0);
  EXPECT_EQ(Op(s, "aten::mm").step_self_device_us.stored(), static_cast<size_t>(kSteps));
  EXPECT_DOUBLE_EQ(step.step_self_device_us[kSteps - 1], 60.0);  // 90 - 20 - 10
}

TEST(StepSamples, SumIsTheDenseWalksSumAndFromDenseStoresTheNonZeros) {
  const StepSamples s = StepSamples::FromDense({0.0, 1.5, 0.0, -0.25, 2.0});
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s.stored(), 3u);
  EXPECT_EQ(s, (StepSamples{0.0, 1.5, 0.0, -0.25, 2.0}));
  double dense = 0;
  for (double v : s) dense += v;
  EXPECT_EQ(s.Sum(), dense);
}

// `ns` nanoseconds as Kineto writes microseconds: "0.998".
std::string Micros(int ns) {
  std::string frac = std::to_string(ns % 1000);
  return std::to_string(ns / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

// `names` distinct cpu_ops op_0..op_<names-1> in 2 ProfilerStep windows; op_i takes 1000 - i ns
// and is called twice when i is even.
std::string ManyNames(int names) {
  std::string json = R"({"traceEvents": [)";
  int64_t ts = 0;
  for (int step = 0; step < 2; ++step) {
    const int64_t start = ts;
    std::string ops;
    for (int i = step; i < names; i += 2) {
      for (int call = 0; call < (i % 2 == 0 ? 2 : 1); ++call) {
        ops += R"(,{"ph": "X", "cat": "cpu_op", "name": "op_)" + std::to_string(i) +
               R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts + 1) + R"(.000, "dur": )" +
               Micros(1000 - i) + "}";
        ts += 1000;
      }
    }
    ts += 10;
    json += (step ? "," : "") + std::string(R"({"ph": "X", "cat": "user_annotation", )") +
            R"("name": "ProfilerStep#)" + std::to_string(step) +
            R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(start) + R"(, "dur": )" +
            std::to_string(ts - start) + "}" + ops;
    ts += 10;
  }
  return json + "]}";
}

// Issue 23: with max_op_rows the rows past the limit are summed into one row as the rows are
// made; the kept rows, the totals and the per-step samples are those of the unfolded summary.
TEST(Summarizer, FoldsTheOperatorsWithTheLeastTimePastMaxOpRows) {
  const std::string json = ManyNames(300);
  absl::StatusOr<RawTrace> raw = ParseTraceJson(json.data(), json.size(), "many_names.json");
  ASSERT_TRUE(raw.ok()) << raw.status();
  const TraceSummary all = SummarizeRawTrace(*raw, SummarizeOptions());
  SummarizeOptions options;
  options.max_op_rows = 50;
  const TraceSummary folded = SummarizeRawTrace(*raw, options);
  ASSERT_EQ(all.ops.size(), 301u);  // and ProfilerStep*
  ASSERT_EQ(folded.ops.size(), 50u);
  EXPECT_EQ(folded.folded_ops, 301u - 49u);
  EXPECT_EQ(all.folded_ops, 0u);
  EXPECT_EQ(folded.self_cpu_total_us, all.self_cpu_total_us);
  ASSERT_EQ(folded.steps.size(), all.steps.size());
  // The 49 kept: the most self CPU (ProfilerStep*, then op_0 to op_94: the even ops are called
  // twice).
  OpStats rest;
  StepSamples rest_samples(all.steps.size());
  for (const OpStats& op : all.ops) {
    const auto kept = std::find_if(folded.ops.begin(), folded.ops.end(),
                                   [&](const OpStats& f) { return f.name == op.name; });
    if (kept != folded.ops.end()) {
      EXPECT_EQ(kept->calls, op.calls) << op.name;
      EXPECT_EQ(kept->self_cpu_us, op.self_cpu_us) << op.name;
      EXPECT_EQ(kept->step_self_device_us, op.step_self_device_us) << op.name;
      continue;
    }
    EXPECT_LE(op.self_cpu_us, Op(folded, "op_94").self_cpu_us) << op.name;
    rest.calls += op.calls;
    rest.self_cpu_us += op.self_cpu_us;
    rest_samples.AddAll(op.step_self_device_us);
  }
  const OpStats& other = Op(folded, kOtherOperatorsName);
  EXPECT_EQ(other.calls, rest.calls);
  EXPECT_NEAR(other.self_cpu_us, rest.self_cpu_us, 1e-9 * rest.self_cpu_us);
  ASSERT_EQ(other.step_self_device_us.size(), all.steps.size());
  for (size_t s = 0; s < all.steps.size(); ++s) {
    EXPECT_NEAR(other.step_self_device_us[s], rest_samples[s], 1e-9 * rest_samples[s]);
  }
}

}  // namespace
}  // namespace devtime::trace::testing
