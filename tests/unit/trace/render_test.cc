#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

TraceSummary Load(const std::string& name) {
  absl::StatusOr<TraceSummary> s = Summarize(Fixture(name));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : TraceSummary();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(RenderTable, ShowsDeviceColumnsSortedByDeviceTime) {
  const std::string t = RenderTable(Load("kineto_cuda_basic.json"));
  EXPECT_TRUE(Contains(t, "Self device")) << t;
  EXPECT_TRUE(Contains(t, "% device")) << t;
  EXPECT_TRUE(Contains(t, "Step mean")) << t;
  // Operators by self device time (the % device column); ProfilerStep*, which holds the most
  // device time of all (its operators'), is listed apart below them.
  EXPECT_LT(t.find("aten::addmm"), t.find("aten::copy_")) << t;
  EXPECT_LT(t.find("aten::copy_"), t.find("aten::linear")) << t;
  EXPECT_LT(t.find("aten::linear"), t.find("Step markers")) << t;
  EXPECT_LT(t.find("Step markers"), t.find("ProfilerStep*")) << t;
  EXPECT_TRUE(Contains(t, "Self device time total: 120.0 us (unattributed: 7.5 us)")) << t;
  EXPECT_TRUE(Contains(t, "Warning: 1 device events")) << t;
}

// A CPU-only Kineto trace of two steps, as torch.profiler writes one without
// ProfilerActivity.CUDA: a large aten::zeros at model setup, before the first step, and per
// step a "## forward ##" record_function around aten::mm and aten::relu.
std::string CpuOnlyTrace() {
  std::string events;
  auto event = [&events](const char* cat, const char* name, int ts, int dur) {
    if (!events.empty()) events += ",\n";
    events += absl::StrFormat(
        R"({"ph": "X", "cat": "%s", "name": "%s", "pid": 1, "tid": 1, "ts": %d, "dur": %d})", cat,
        name, ts, dur);
  };
  event("cpu_op", "aten::zeros", 0, 5000);
  for (int step = 1, at = 10000; step <= 2; ++step, at += 1000) {
    event("user_annotation", absl::StrFormat("ProfilerStep#%d", step).c_str(), at, 900);
    event("user_annotation", "## forward ##", at + 10, 800);
    event("cpu_op", "aten::mm", at + 20, 600);
    event("cpu_op", "aten::relu", at + 700, 50);
  }
  return R"({"schemaVersion": 1, "traceEvents": [)" + events + "]}";
}

TEST(RenderTable, RanksCpuOperatorsByTheirTimeInsideTheSteps) {
  TempDir dir;
  const std::string t = RenderTable(MustSummarize(dir.Write("cpu.json", CpuOnlyTrace())));
  // aten::zeros has the most self CPU of all (5 ms), none of it in a step: it does not top the
  // table, and the annotations do not sit among the operators.
  EXPECT_LT(t.find("aten::mm"), t.find("aten::relu")) << t;
  EXPECT_LT(t.find("aten::relu"), t.find("aten::zeros")) << t;
  EXPECT_LT(t.find("aten::zeros"), t.find("Step markers and annotations")) << t;
  EXPECT_LT(t.find("Step markers and annotations"), t.find("ProfilerStep*")) << t;
  EXPECT_LT(t.find("Step markers and annotations"), t.find("## forward ##")) << t;
}

// Legacy traces truncate durations to whole us, so a parent's self time can be −1 us in a
// step (children 6 + 5 us in a 10 us parent) and 5 us in the next. The samples stay exact and
// the mean is the total over the steps (2.0 us, not 2.5 from a clamped −1); only the figures
// shown are clamped (min 0.0 us).
TEST(RenderTable, StepMeanIsTheExactTotalOverTheStepsClampedOnlyWhereShown) {
  TempDir dir;
  const auto path = dir.Write("legacy.json", R"([
    {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "name": "aten::parent", "pid": 1, "tid": 1, "ts": 10, "dur": 10},
    {"ph": "X", "name": "aten::a", "pid": 1, "tid": 1, "ts": 10, "dur": 6},
    {"ph": "X", "name": "aten::b", "pid": 1, "tid": 1, "ts": 15, "dur": 5},
    {"ph": "X", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "name": "aten::parent", "pid": 1, "tid": 1, "ts": 110, "dur": 10},
    {"ph": "X", "name": "aten::a", "pid": 1, "tid": 1, "ts": 110, "dur": 5}])");
  const TraceSummary s = MustSummarize(path);
  const OpStats& parent = Op(s, "aten::parent");
  ASSERT_EQ(parent.step_self_device_us.size(), 2u);
  EXPECT_DOUBLE_EQ(parent.step_self_device_us[0], -1.0);
  EXPECT_DOUBLE_EQ(parent.step_self_device_us[1], 5.0);
  const std::string t = RenderTable(s);
  const std::string line = t.substr(t.find("aten::parent"),
                                    t.find('\n', t.find("aten::parent")) - t.find("aten::parent"));
  EXPECT_TRUE(Contains(line, "2.0 us        0.0 us        5.0 us")) << t;
}

TEST(RenderTable, WarnsThatATraceWithoutDeviceEventsHasNoDeviceTime) {
  const std::string warning =
      "Warning: no device events in this trace, so no device time — profile with "
      "ProfilerActivity.CUDA / PrivateUse1 (Neuron) to get device time";
  EXPECT_TRUE(Contains(RenderTable(Load("legacy_mlp/trace.json")), warning));
  EXPECT_TRUE(Contains(RenderTable(Load("kineto_neuron_no_device.json")), warning));
  EXPECT_FALSE(Contains(RenderTable(Load("kineto_cuda_basic.json")), "no device events"));
}

TEST(RenderTable, OmitsDeviceColumnsForCpuOnlyTraces) {
  const std::string t = RenderTable(Load("legacy_mlp/trace.json"));
  EXPECT_FALSE(Contains(t, "Self device")) << t;
  EXPECT_TRUE(Contains(t, "% self CPU")) << t;
  EXPECT_TRUE(Contains(t, "Self CPU time total:")) << t;
  EXPECT_TRUE(Contains(t, "aten::addmm")) << t;
  // A self time below 0 (a child's rounding) is shown as 0, its share too.
  EXPECT_FALSE(Contains(t, "-0.")) << t;
}

TEST(RenderTable, ShowsInvalidReason) {
  const std::string t = RenderTable(Load("kineto_neuron_no_device.json"));
  EXPECT_TRUE(Contains(t, "INVALID: device backend profiled but device time is empty")) << t;
}

TEST(RenderTable, TruncatesLongNames) {
  TraceSummary s;
  s.ops.push_back(OpStats{std::string(80, 'x'), 1, 1, 1, 0, 0, {}});
  s.self_cpu_total_us = 1;
  const std::string t = RenderTable(s);
  EXPECT_TRUE(Contains(t, std::string(52, 'x') + "...")) << t;
  EXPECT_FALSE(Contains(t, std::string(56, 'x'))) << t;
}

TEST(RenderComparison, ListsAddedRemovedAndChangedOps) {
  TraceSummary before;
  before.has_device_time = true;
  before.ops = {OpStats{"aten::mm", 4, 10, 10, 100, 100, {}},
                OpStats{"aten::relu", 2, 1, 1, 5, 5, {}}, OpStats{"aten::gone", 1, 1, 1, 3, 3, {}}};
  TraceSummary after = before;
  after.ops = {OpStats{"aten::mm", 4, 10, 10, 150, 150, {}},
               OpStats{"aten::relu", 2, 1, 1, 5, 5, {}}, OpStats{"aten::new", 6, 1, 1, 7, 7, {}}};
  const std::string t = RenderComparison(before, after);
  EXPECT_TRUE(Contains(t, "self device total")) << t;
  EXPECT_TRUE(Contains(t, "+50.0 us")) << t;
  EXPECT_TRUE(Contains(t, "+50.0%")) << t;
  EXPECT_TRUE(Contains(t, "added")) << t;
  EXPECT_TRUE(Contains(t, "removed")) << t;
  EXPECT_TRUE(Contains(t, "(+6)")) << t;
  EXPECT_TRUE(Contains(t, "1 ops unchanged")) << t;
  EXPECT_FALSE(Contains(t, "aten::relu")) << t;
  // Largest change first.
  EXPECT_LT(t.find("aten::mm"), t.find("aten::new")) << t;
}

TEST(RenderComparison, ComparesPerStepSelfCpuForCpuTraces) {
  const TraceSummary a = Load("legacy_mlp/trace.json");
  const TraceSummary b = Load("legacy_conv/trace.json");
  const std::string t = RenderComparison(a, b);
  EXPECT_TRUE(Contains(t, "self CPU per step")) << t;
  EXPECT_TRUE(Contains(t, "aten::addmm")) << t;
  EXPECT_TRUE(Contains(t, "removed")) << t;
}

}  // namespace
}  // namespace devtime::trace::testing

namespace devtime::trace::testing {
namespace {

// A copy of the Neuron session `fixture` whose framework trace has no privateuse1 launches (its
// runtime/driver events recorded as cpu_op), so that NeuronCore time cannot be joined to ops.
std::filesystem::path WithoutLaunches(const TempDir& dir, const std::string& fixture) {
  for (const auto& e : std::filesystem::directory_iterator(Fixture(fixture))) {
    std::string content = ReadAll(e.path());
    const std::string name = e.path().filename().string();
    if (name == "trace.json" || name.starts_with("neuron_framework_trace")) {
      for (const std::string cat : {"privateuse1_driver", "privateuse1_runtime"}) {
        for (size_t at = content.find(cat); at != std::string::npos; at = content.find(cat)) {
          content.replace(at, cat.size(), "cpu_op");
        }
      }
    }
    dir.Write(name, content);
  }
  return dir.path();
}

TEST(RenderTable, NeuronRunShowsLayersStepsAndNoEmptyDeviceColumns) {
  TempDir dir;
  absl::StatusOr<TraceSummary> s = Summarize(WithoutLaunches(
      dir, "neuron_explorer/profile_output/i-0f207fb2a99bd2d08_pid_701/1729888380"));
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string t = RenderTable(*s);
  EXPECT_NE(t.find("Device: neuron"), std::string::npos) << t;
  EXPECT_EQ(t.find("Self device  "), std::string::npos) << t;  // no all-zero op columns
  EXPECT_NE(t.find("Self device time total: 1.520 ms (unattributed: 1.520 ms)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("Device time per step (mean of 2): 760.0 us, min 720.0 us, max 800.0 us"),
            std::string::npos)
      << t;
  // Dispatch: the cpu_ops' self time, here with the launches recorded as cpu_op too:
  // (60 + 40 + 60 + 20 + 400) us per step.
  EXPECT_NE(t.find("Layers: framework dispatch 1.160 ms, runtime scheduling 1.837 ms, device "
                   "execution 1.520 ms, idle 2.480 ms"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("Warning: NeuronCore time"), std::string::npos) << t;
}

TEST(RenderComparison, NeuronRunsCompareDevicePerStep) {
  TempDir dir_a, dir_b;
  absl::StatusOr<TraceSummary> a = Summarize(WithoutLaunches(
      dir_a, "neuron_explorer/profile_output/i-0f207fb2a99bd2d08_pid_701/1729888380"));
  absl::StatusOr<TraceSummary> b =
      Summarize(WithoutLaunches(dir_b, "neuron_fetch/i-012590440bb9fd263_pid_98399"));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string t = RenderComparison(*a, *b);
  EXPECT_NE(t.find("Device time per step (not attributed to ops): before 760.0 us, after "
                   "2.5 us"),
            std::string::npos)
      << t;
}

}  // namespace
}  // namespace devtime::trace::testing
