// The layers (run.proto `Layer`) and the capture time a summary carries. Expected numbers are
// worked out by hand from the fixtures (tests/fixtures/trace/, each with its "_source").
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

namespace fs = std::filesystem;

// kineto_alexnet_2023.json, self time (duration minus children's) of each cpu_op: aten::to 4,
// _to_copy 16, empty_strided 20, copy_ 15 (260 − memcpy call 240 − sync 5), conv2d 4,
// convolution 4, _convolution 12, cudnn_convolution 60 (80 − two launches of 10), relu_ 22,
// linear 10, addmm 42: 209 us. The runtime calls: 240 + 5 + 10 + 10 + 8 + 8 = 281 us.
// ProfilerStep#2's own 1,510 us is a step window, not dispatch.
TEST(Layers, FrameworkDispatchIsTheSelfTimeOfCpuOpsOnly) {
  TraceSummary s = MustSummarize(Fixture("kineto_alexnet_2023.json"));
  EXPECT_EQ(FindLayerUs(s, Layer::kFrameworkDispatch), 209.0);
  EXPECT_EQ(FindLayerUs(s, Layer::kRuntimeScheduling), 281.0);
  EXPECT_EQ(FindLayerUs(s, Layer::kDeviceExecution), 712.0);
}

// kineto_collectives.json: aten::mm 85 (90 − launch 5), record_param_comms 10, aten::foo 60
// (100 − my_region 40); nccl:all_reduce, my_region, Optimizer.step and ProfilerStep#7 are
// annotations.
TEST(Layers, AnnotationRangesAreNotFrameworkDispatch) {
  TraceSummary s = MustSummarize(Fixture("kineto_collectives.json"));
  EXPECT_EQ(FindLayerUs(s, Layer::kFrameworkDispatch), 155.0);
  EXPECT_EQ(FindLayerUs(s, Layer::kRuntimeScheduling), 21.0);
}

// Two steps [0, 100) and [150, 250) us; device busy [10, 20), [60, 70), [160, 170). The gaps:
// 20..60 (40, step 1), 70..160 of which 70..100 (30) in step 1 and 150..160 (10) in step 2;
// 100..150 lies between the steps and is no step's idle time: 80 us.
TEST(Layers, IdleIsTheDeviceGapsInsideTheSteps) {
  TempDir dir;
  const fs::path path = dir.Write("trace.json", R"({"baseTimeNanoseconds": 1700000000000000000,
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
     "ts": 0.000, "dur": 100.000},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1,
     "ts": 150.000, "dur": 100.000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.000, "dur": 10.000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 60.000, "dur": 10.000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 160.000, "dur": 10.000}
    ]})");
  TraceSummary s = MustSummarize(path);
  EXPECT_EQ(FindLayerUs(s, Layer::kIdle), 80.0);
  EXPECT_EQ(FindLayerUs(s, Layer::kDeviceExecution), 30.0);
}

TEST(Layers, AlexnetIdleIsTheGapsBetweenItsDeviceWork) {
  // Busy 1..8, 55..285, 450..750, 760..880, 890..905, 910..950 us inside the one step:
  // gaps 47 + 165 + 10 + 10 + 5.
  TraceSummary s = MustSummarize(Fixture("kineto_alexnet_2023.json"));
  EXPECT_EQ(FindLayerUs(s, Layer::kIdle), 237.0);
}

// kineto_collectives.json: baseTimeNanoseconds 1719853884000000000; the host events span
// ProfilerStep#7, ts 1212075549000.000 us for 1,000 us.
TEST(CaptureTime, ComesFromBaseTimeNanosecondsAndTheHostEventsSpan) {
  TraceSummary s = MustSummarize(Fixture("kineto_collectives.json"));
  EXPECT_EQ(s.capture.started_unix_ns, int64_t{1719853884000000000} + 1212075549000000);
  EXPECT_EQ(s.capture.finished_unix_ns, int64_t{1719853884000000000} + 1212075550000000);
  EXPECT_EQ(s.capture.time_source, "trace");
}

TEST(CaptureTime, ComesFromEpochTimestampsWithoutBaseTime) {
  TraceSummary s = MustSummarize(Fixture("kineto_alexnet_2023.json"));
  EXPECT_EQ(s.capture.started_unix_ns, int64_t{1690000000000000000});
  EXPECT_EQ(s.capture.finished_unix_ns, int64_t{1690000000002000000});
}

TEST(CaptureTime, IsUnknownForRelativeTimestamps) {
  TempDir dir;
  const fs::path path = dir.Write("trace.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
     "ts": 12.000, "dur": 100.000}]})");
  TraceSummary s = MustSummarize(path);
  EXPECT_FALSE(s.capture.started_unix_ns);
  EXPECT_FALSE(s.capture.finished_unix_ns);
  EXPECT_EQ(s.capture.time_source, "");
}

// A Neuron session without a framework trace: the <timestamp> directory's name (epoch seconds).
TEST(CaptureTime, ComesFromTheNeuronSessionDirectoryWhenNoTraceSaysIt) {
  TempDir dir;
  const fs::path session = dir.path() / "i-0aa11bb22cc33dd44_pid_4242" / "1730000000";
  fs::create_directories(session);
  const fs::path explorer =
      Fixture("neuron_rmsnorm/explorer/i-0aa11bb22cc33dd44_pid_4242/1730000000");
  fs::copy_file(explorer / "system_profile.json", session / "system_profile.json");
  fs::copy_file(explorer / "ntrace.pb", session / "ntrace.pb");
  TraceSummary s = MustSummarize(dir.path());
  EXPECT_EQ(s.capture.started_unix_ns, int64_t{1730000000} * 1000000000);
  EXPECT_EQ(s.capture.finished_unix_ns, s.capture.started_unix_ns);
  EXPECT_EQ(s.capture.time_source, "session_directory");
}

// torch 1.13's legacy trace has relative timestamps: a harness directory's run.json gives the
// times (agents/harness writes started_at / finished_at, RFC 3339 UTC).
TEST(CaptureTime, ComesFromTheHarnessRunJsonWhenTheTraceIsRelative) {
  absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "legacy_mlp/trace.json", {{"run.json", R"({"workload": "mlp", "device": "cpu", "steps": 2,
                          "started_at": "2026-12-01T10:00:00.125Z",
                          "finished_at": "2026-12-01T10:00:05.500Z"})"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->capture.started_unix_ns, int64_t{1796119200125000000});
  EXPECT_EQ(s->capture.finished_unix_ns, int64_t{1796119205500000000});
  EXPECT_EQ(s->capture.time_source, "run_json");
}

TEST(CaptureTime, AnUnreadableRunJsonIsAWarningNotAnError) {
  absl::StatusOr<TraceSummary> s =
      SummarizeCapture("legacy_mlp/trace.json", {{"run.json", "{\"started_at\": "}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->capture.started_unix_ns);
  ASSERT_TRUE(HasWarning(*s, "its started_at/finished_at are not used"));
  for (const std::string& w : s->warnings) EXPECT_NE(WarningKind(w), "other") << w;
}

// With a framework trace the session's own clock wins over the directory name.
TEST(CaptureTime, NeuronSessionPrefersTheFrameworkTrace) {
  TraceSummary s = MustSummarize(Fixture("neuron_rmsnorm/explorer"));
  EXPECT_EQ(s.capture.time_source, "trace");
  // ProfilerStep#5 starts 1,000,000 ns after 1729888380000000000 (make_neuron_fixtures.py).
  EXPECT_EQ(s.capture.started_unix_ns, int64_t{1729888380001000000});
}

}  // namespace
}  // namespace devtime::trace::testing
