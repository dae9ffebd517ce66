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
  // ProfilerStep* has the largest total device time, then aten::linear / aten::addmm.
  EXPECT_LT(t.find("ProfilerStep*"), t.find("aten::addmm")) << t;
  EXPECT_LT(t.find("aten::addmm"), t.find("aten::copy_")) << t;
  EXPECT_TRUE(Contains(t, "Self device time total: 120.000us (unattributed: 7.500us)")) << t;
  EXPECT_TRUE(Contains(t, "Warning: 1 device events")) << t;
}

TEST(RenderTable, OmitsDeviceColumnsForCpuOnlyTraces) {
  const std::string t = RenderTable(Load("legacy_mlp/trace.json"));
  EXPECT_FALSE(Contains(t, "Self device")) << t;
  EXPECT_TRUE(Contains(t, "% self CPU")) << t;
  EXPECT_TRUE(Contains(t, "Self CPU time total:")) << t;
  EXPECT_TRUE(Contains(t, "aten::addmm")) << t;
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
  EXPECT_TRUE(Contains(t, "+50.000us")) << t;
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
  EXPECT_NE(t.find("Self device time total: 1.520ms (unattributed: 1.520ms)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("Device time per step (mean of 2): 760.000us, min 720.000us, max 800.000us"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("Layers: framework dispatch 4.040ms, runtime scheduling 1.837ms, device "
                   "execution 1.520ms, idle 2.480ms"),
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
  EXPECT_NE(t.find("Device time per step (not attributed to ops): before 760.000us, after "
                   "2.500us"),
            std::string::npos)
      << t;
}

}  // namespace
}  // namespace devtime::trace::testing
