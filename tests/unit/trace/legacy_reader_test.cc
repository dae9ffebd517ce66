// Legacy bare-array traces as Debian's python3-torch 1.13 (built without Kineto) writes them,
// checked against torch's own key_averages() numbers.
//
// Tolerance: none. torch 1.13's legacy profiler keeps every event as integer microseconds
// (KinetoEvent start_us/duration_us), export_chrome_trace writes exactly those integers
// (time_range.start, time_range.elapsed_us()), and key_averages() derives calls, self and
// total CPU time from the same integers with the nesting rule devtime reproduces
// (EventList._populate_cpu_children: sort by (start, -end), child iff start < parent end and
// end <= parent end). So calls, self CPU and CPU total must match exactly.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include "agents/trace/kineto/key_averages_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// Summarize() of `json` written to a temporary t.json.
absl::StatusOr<TraceSummary> SummarizeJson(const std::string& json) {
  TempDir dir;
  return Summarize(dir.Write("t.json", json));
}

// Asserts that the summary of `trace` matches torch's key_averages rows in `key_averages`.
void ExpectMatchesKeyAverages(const std::filesystem::path& trace,
                              const std::filesystem::path& key_averages) {
  absl::StatusOr<TraceSummary> s = Summarize(trace);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<KeyAverages> ka = ReadKeyAverages(key_averages);
  ASSERT_TRUE(ka.ok()) << ka.status();
  ASSERT_FALSE(ka->rows.empty());
  std::map<std::string, OpStats> truth;  // summed by name, as devtime groups
  for (const OpStats& row : ka->rows) {
    OpStats& t = truth[row.name];
    t.calls += row.calls;
    t.self_cpu_us += row.self_cpu_us;
    t.total_cpu_us += row.total_cpu_us;
  }
  EXPECT_EQ(s->ops.size(), truth.size());
  double truth_self_total = 0;
  for (const auto& [name, t] : truth) {
    SCOPED_TRACE(name);
    const OpStats& op = Op(*s, name);
    EXPECT_EQ(op.calls, t.calls);
    EXPECT_EQ(op.self_cpu_us, t.self_cpu_us);
    EXPECT_EQ(op.total_cpu_us, t.total_cpu_us);
    truth_self_total += t.self_cpu_us;
  }
  EXPECT_EQ(s->self_cpu_total_us, truth_self_total);
}

TEST(LegacyReader, ReadsBareArrayWrittenByTorch113) {
  absl::StatusOr<TraceSummary> s = Summarize(Fixture("legacy_mlp/trace.json"));
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectValidCapture(*s, "legacy-array", DeviceKind::kCpu);
  ASSERT_EQ(s->steps.size(), 2u);  // schedule(wait=1, warmup=1, active=2)
  EXPECT_EQ(s->steps[0].step + 1, s->steps[1].step);
  EXPECT_EQ(Op(*s, "ProfilerStep*").calls, 2u);
}

TEST(LegacyReader, MatchesTorchKeyAveragesForMlpTraining) {
  ExpectMatchesKeyAverages(Fixture("legacy_mlp/trace.json"),
                           Fixture("legacy_mlp/key_averages.json"));
}

TEST(LegacyReader, MatchesTorchKeyAveragesForConvInference) {
  ExpectMatchesKeyAverages(Fixture("legacy_conv/trace.json"),
                           Fixture("legacy_conv/key_averages.json"));
}

TEST(LegacyReader, StepSamplesAreSelfCpuWhenThereIsNoDeviceTime) {
  absl::StatusOr<TraceSummary> s = Summarize(Fixture("legacy_mlp/trace.json"));
  ASSERT_TRUE(s.ok()) << s.status();
  for (const OpStats& op : s->ops) {
    ASSERT_EQ(op.step_self_device_us.size(), 2u) << op.name;
    double in_steps = op.step_self_device_us[0] + op.step_self_device_us[1];
    EXPECT_LE(in_steps, op.self_cpu_us + 1e-9) << op.name;
  }
}

// Profiles `workload` with /usr/bin/python3 (Debian's torch 1.13) during the test run and
// checks devtime against torch's key_averages() for that very run. Torch missing is a
// failure, not a skip: the test command installs it (deploy/install-deps.sh).
void ExpectLiveParity(const std::string& workload, int active_steps) {
  const std::filesystem::path python = "/usr/bin/python3";
  ASSERT_TRUE(std::filesystem::exists(python)) << "no /usr/bin/python3: run deploy/install-deps.sh";
  TempDir dir;
  const std::string cmd = python.string() + " " + Fixture("make_fixtures.py").string() + " --out " +
                          dir.path().string() + " --workload " + workload + " --active " +
                          std::to_string(active_steps) + " > " + (dir.path() / "log.txt").string() +
                          " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0)
      << "generator failed (exit 77: torch not importable): " << ReadAll(dir.path() / "log.txt");
  ExpectMatchesKeyAverages(dir.path() / "trace.json", dir.path() / "key_averages.json");
  // The directory form reads the same trace and cross-checks calls without complaint.
  absl::StatusOr<TraceSummary> s = Summarize(dir.path());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->warnings.empty()) << s->warnings.front();
  EXPECT_EQ(s->steps.size(), static_cast<std::size_t>(active_steps));
}

TEST(LegacyReader, MatchesTorchKeyAveragesLiveForMlpTraining) { ExpectLiveParity("mlp", 3); }

TEST(LegacyReader, MatchesTorchKeyAveragesLiveForConvInference) { ExpectLiveParity("conv", 4); }

// A trace that reads but cannot be trusted, and the reason devtime gives.
struct InvalidCapture {
  std::string name;
  std::string json;
  std::string reason;
  size_t ops;  // rows the summary still has
};

void PrintTo(const InvalidCapture& c, std::ostream* os) { *os << c.name; }

class LegacyReaderFlags : public ::testing::TestWithParam<InvalidCapture> {};

TEST_P(LegacyReaderFlags, MarkTheCaptureInvalidAndSayWhy) {
  absl::StatusOr<TraceSummary> s = SummarizeJson(GetParam().json);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->invalid_reason);
  EXPECT_EQ(*s->invalid_reason, GetParam().reason);
  EXPECT_EQ(s->ops.size(), GetParam().ops);
}

INSTANTIATE_TEST_SUITE_P(
    LegacyReader, LegacyReaderFlags,
    ::testing::Values(
        InvalidCapture{
            "TimestampsGoingBackwards",
            R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 10, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}}, )"
            R"({"name": "aten::add", "ph": "X", "ts": 5, "dur": 1, "tid": 1, "pid": "CPU functions", "args": {}}])",
            "timestamps go backwards at event 1", 2},
        InvalidCapture{
            "NegativeDuration",
            R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 10, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}}, )"
            R"({"name": "aten::add", "ph": "X", "ts": 15, "dur": -3, "tid": 1, "pid": "CPU functions", "args": {}}])",
            "negative duration at event 1", 2},
        InvalidCapture{
            "TraceWithoutProfilerStep",
            R"([{"name": "aten::add", "ph": "X", "ts": 15, "dur": 3, "tid": 1, "pid": "CPU functions", "args": {}}])",
            "no ProfilerStep window in trace", 1},
        // Valid JSON, but an empty capture.
        InvalidCapture{"EmptyArray", "[]", "trace has no complete (\"ph\": \"X\") events", 0}),
    [](const ::testing::TestParamInfo<InvalidCapture>& param) { return param.param.name; });

TEST(LegacyReader, NestsZeroDurationAndEqualIntervalsLikeTorch) {
  // torch: [0,10) parent of [0,10) (first in file order); a zero-length event at the
  // parent's end is not a child; a zero-length parent has no children.
  TempDir dir;
  const auto p = dir.Write("t.json", R"([
    {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "a", "ph": "X", "ts": 0, "dur": 10, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "b", "ph": "X", "ts": 0, "dur": 10, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "z", "ph": "X", "ts": 10, "dur": 0, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "y", "ph": "X", "ts": 10, "dur": 0, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "c", "ph": "X", "ts": 20, "dur": 5, "tid": 2, "pid": "CPU functions", "args": {}}])");
  absl::StatusOr<TraceSummary> s = Summarize(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Op(*s, "a").self_cpu_us, 0.0);
  EXPECT_EQ(Op(*s, "b").self_cpu_us, 10.0);
  EXPECT_EQ(Op(*s, "ProfilerStep*").self_cpu_us, 90.0);  // thread 2 is not nested
  EXPECT_EQ(Op(*s, "c").self_cpu_us, 5.0);
}

}  // namespace
}  // namespace devtime::trace::testing
