// The capture quality gate (issue 3 item 4): one test per reason a run is INVALID.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kExplorer = "neuron_explorer/profile_output/i-0f207fb2a99bd2d08_pid_701/1729888380";

std::string ReasonFor(const fs::path& p) {
  absl::StatusOr<TraceSummary> s = Summarize(p);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok() || !s->invalid_reason) return "";
  return *s->invalid_reason;
}

// A Neuron session: the fixture's framework trace plus `system` as system_profile.json.
fs::path NeuronSession(const TempDir& dir, const std::string& system) {
  dir.Write("trace.json", ReadAll(Fixture(kExplorer / "trace.json")));
  dir.Write("system_profile.json", system);
  return dir.path();
}

constexpr char kOneStep[] = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",
  "pid": 1, "tid": 1, "ts": 100, "dur": 50})";

TEST(TraceQualityGate, CudaRuntimeButNoKernels) {
  TempDir dir;
  const fs::path p = dir.Write("t.json", std::string(R"({"traceEvents": [)") + kOneStep + R"(,
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
     "ts": 110, "dur": 5, "args": {"correlation": 3}}]})");
  EXPECT_EQ(ReasonFor(p), "device backend profiled but device time is empty");
}

TEST(TraceQualityGate, NeuronSystemTraceWithoutNeuronCoreTime) {
  TempDir dir;
  const std::string reason = ReasonFor(NeuronSession(dir, R"({"trace_event": [
    {"name": "nrt_execute", "timestamp": 1729888381210000000, "duration": 900000}],
    "warnings": []})"));
  EXPECT_EQ(reason,
            "device backend profiled but device time is empty: the Neuron system trace has no "
            "nc_exec_running event (missing torch.neuron.synchronize()?)");
}

TEST(TraceQualityGate, NeuronRuntimeDroppedEvents) {
  TempDir dir;
  std::string system = ReadAll(Fixture(kExplorer / "system_profile.json"));
  const std::string empty = "\"warnings\": []";
  system.replace(system.find(empty), empty.size(),
                 "\"warnings\": [\"WARN[0000] Warning: 1001 trace events were dropped during "
                 "capture (stored 530560 out of 531561 total events)...\"]");
  absl::StatusOr<TraceSummary> s = Summarize(NeuronSession(dir, system));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->has_device_time);  // device time is there, but not trustworthy
  EXPECT_EQ(s->capture.events_dropped, 1001u);
  ASSERT_TRUE(s->invalid_reason);
  EXPECT_EQ(*s->invalid_reason,
            "Neuron runtime dropped 1001 trace events during capture (raise max_events_per_nc / "
            "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC)");
  EXPECT_NE(s->warnings.front().find("Neuron runtime: WARN[0000]"), std::string::npos);
}

TEST(TraceQualityGate, FetchApiEventsDroppedCounter) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kExplorer / "trace.json")));
  dir.Write("ntrace.json", R"({"events_dropped": 7, "events": []})");
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->capture.events_dropped, 7u);
  ASSERT_TRUE(s->invalid_reason);
  EXPECT_NE(s->invalid_reason->find("dropped 7 trace events"), std::string::npos);
}

TEST(TraceQualityGate, NoProfilerStepWindow) {
  TempDir dir;
  const fs::path p = dir.Write("t.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  EXPECT_EQ(ReasonFor(p), "no ProfilerStep window in trace");
}

TEST(TraceQualityGate, NoProfilerStepWindowWinsOverNeuronDeviceTime) {
  TempDir dir;
  dir.Write("trace.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  dir.Write("system_profile.json", ReadAll(Fixture(kExplorer / "system_profile.json")));
  EXPECT_EQ(ReasonFor(dir.path()), "no ProfilerStep window in trace");
}

TEST(TraceQualityGate, TimestampsGoBackwardsInLegacyTrace) {
  TempDir dir;
  const fs::path p = dir.Write("t.json", R"([
    {"name": "ProfilerStep#1", "ph": "X", "ts": 100, "dur": 50, "tid": 1, "pid": "CPU functions"},
    {"name": "aten::mm", "ph": "X", "ts": 90, "dur": 5, "tid": 1, "pid": "CPU functions"}])");
  EXPECT_EQ(ReasonFor(p), "timestamps go backwards at event 1");
}

TEST(TraceQualityGate, TimestampsGoBackwardsInNeuronFetchTrace) {
  TempDir dir;
  dir.Write("trace.json", ReadAll(Fixture(kExplorer / "trace.json")));
  dir.Write("ntrace.json", R"({"events": [
    {"event_type": "nc_exec_running", "phase": "start", "tracking_id": 5, "nc_idx": 0,
     "data": {"exec_id": 1, "nc_timestamp_ns": 900}},
    {"event_type": "nc_exec_running", "phase": "stop", "tracking_id": 5, "nc_idx": 0,
     "data": {"exec_id": 1, "nc_timestamp_ns": 100}}]})");
  EXPECT_EQ(ReasonFor(dir.path()),
            "Neuron system trace timestamps go backwards: nc_exec_running tracking_id 5 stops "
            "before it starts (event 1)");
}

TEST(TraceQualityGate, NegativeDurationInKinetoTrace) {
  TempDir dir;
  const fs::path p = dir.Write("t.json", std::string(R"({"traceEvents": [)") + kOneStep + R"(,
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110,
     "dur": -3.000}]})");
  EXPECT_EQ(ReasonFor(p), "negative duration at event 1");
}

TEST(TraceQualityGate, NegativeDurationInNeuronSystemTrace) {
  TempDir dir;
  EXPECT_EQ(ReasonFor(NeuronSession(dir, R"({"trace_event": [
    {"name": "nc_exec_running", "timestamp": 1729888381300000000, "duration": 700000,
     "exec_id": 2, "lnc_idx": "0"},
    {"name": "nrt_execute", "timestamp": 1729888381210000000, "duration": -5}]})")),
            "negative duration at Neuron system trace event 1 (nrt_execute)");
}

}  // namespace
}  // namespace devtime::trace::testing
