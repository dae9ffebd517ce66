// Per-step samples stored sparsely (issue 12 item 6): an op costs memory for the steps it
// occurs in, not for every ProfilerStep window of the trace.
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

}  // namespace
}  // namespace devtime::trace::testing
