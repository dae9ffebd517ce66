// Harness output directories: trace + environment.json + key_averages.json.
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

bool HasArtifact(const TraceSummary& s, const std::string& kind) {
  for (const ArtifactRef& a : s.artifacts) {
    if (a.kind == kind && a.size_bytes > 0) return true;
  }
  return false;
}

TEST(TraceDirectory, SummarizesHarnessDirectoryWithEnvironmentAndArtifacts) {
  absl::StatusOr<TraceSummary> s = Summarize(Fixture("legacy_mlp"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source_format, "legacy-array");
  EXPECT_EQ(s->environment.at("workload"), "mlp");
  EXPECT_EQ(s->environment.at("capture.active"), "2");
  EXPECT_TRUE(s->environment.contains("torch"));
  EXPECT_TRUE(HasArtifact(*s, "framework_trace"));
  EXPECT_TRUE(HasArtifact(*s, "key_averages"));
  EXPECT_TRUE(HasArtifact(*s, "environment"));
  EXPECT_TRUE(HasArtifact(*s, "run_metadata"));
  EXPECT_TRUE(s->warnings.empty()) << s->warnings.front();  // calls agree with key_averages
}

TEST(TraceDirectory, TakesCaptureSettingsFromHarnessEnvironment) {
  absl::StatusOr<TraceSummary> s = Summarize(Fixture("legacy_conv"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->capture.wait_steps, 1u);
  EXPECT_EQ(s->capture.warmup_steps, 1u);
  EXPECT_EQ(s->capture.active_steps, 2u);
  EXPECT_FALSE(s->capture.synchronized);
}

TEST(TraceDirectory, WarnsWhenRunJsonIsMissingOrStepsDisagree) {
  absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "legacy_mlp/trace.json",
      {{"environment.json", R"({"capture.active": "5", "capture.synchronized": "true"})"}});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->warnings.size(), 2u);
  EXPECT_EQ(s->warnings[0],
            "environment.json says 5 active steps but the trace has 2 ProfilerStep windows");
  EXPECT_NE(s->warnings[1].find("run.json is missing"), std::string::npos);
  EXPECT_TRUE(s->capture.synchronized);
}

TEST(TraceDirectory, WarnsWhenKeyAveragesDisagreesOnCalls) {
  absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "legacy_mlp/trace.json", {{"key_averages.json", R"({"device": "cpu", "rows": [
    {"name": "ProfilerStep*", "calls": 3, "self_cpu_us": 1.0, "cpu_total_us": 1.0,
     "self_device_us": 0.0, "device_total_us": 0.0}]})"}});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_NE(s->warnings[0].find("ProfilerStep* (3 in key_averages.json, 2 in trace)"),
            std::string::npos)
      << s->warnings[0];
}

TEST(TraceDirectory, FindsTensorboardNamedGzipTraces) {
  TempDir dir;
  dir.Write("host_1102.1719853884000000000.pt.trace.json.gz",
            ReadAll(Fixture("kineto_cuda_basic.json.gz")));
  dir.Write("host_1102.1719853884000000000.pt.trace.json.tmp", "{garbage");  // ignored
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source_format, "kineto-json");
  EXPECT_TRUE(s->has_device_time);
}

TEST(TraceDirectory, FallsBackToKeyAveragesWithoutTrace) {
  TempDir dir;
  dir.Write("key_averages.json", R"({"rows": [
    {"name": "aten::mm", "calls": 4, "self_cpu_us": 10.5, "cpu_total_us": 12.0,
     "self_device_us": 30.0, "device_total_us": 30.0},
    {"name": "ProfilerStep*", "calls": 2, "self_cpu_us": 5.0, "cpu_total_us": 17.0,
     "self_device_us": 0.0, "device_total_us": 30.0}], "device": "cuda"})");
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->source_format, "key-averages-json");
  EXPECT_EQ(s->device_kind, DeviceKind::kCuda);
  EXPECT_TRUE(s->has_device_time);
  EXPECT_EQ(s->capture.active_steps, 2u);
  ASSERT_EQ(s->ops.size(), 2u);
  EXPECT_EQ(s->ops[0].name, "aten::mm");
  EXPECT_FALSE(s->invalid_reason);
}

TEST(TraceDirectory, DeviceBackendFromHarnessWithEmptyDeviceTimeIsInvalid) {
  absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "legacy_mlp/trace.json", {{"key_averages.json", R"({"device": "neuron", "rows": []})"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->device_kind, DeviceKind::kNeuron);
  ASSERT_TRUE(s->invalid_reason);
  EXPECT_EQ(*s->invalid_reason, "device backend profiled but device time is empty");
}

TEST(TraceDirectory, EmptyDirectoryIsNotFound) {
  TempDir dir;
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

TEST(TraceDirectory, RejectsNestedEnvironmentValues) {
  absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "legacy_mlp/trace.json", {{"environment.json", R"({"torch": "1.13", "nested": {"a": 1}})"}});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("environment.json"), std::string::npos);
  EXPECT_NE(s.status().message().find("'nested'"), std::string::npos);
}

}  // namespace
}  // namespace devtime::trace::testing
