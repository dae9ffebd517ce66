// What the RunSummary needs beyond the table (issue 12 item 5): a kind for every warning,
// per-kernel totals, the key_averages device-time cross-check.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

TEST(WarningKind, EveryWarningTheFixturesProduceHasAKind) {
  size_t seen = 0;
  for (const char* fixture :
       {"kineto_cuda_basic.json", "kineto_collectives.json", "kineto_int_ts.json",
        "neuron_explorer/profile_output", "neuron_fetch/i-012590440bb9fd263_pid_98399",
        "neuron_rmsnorm/explorer", "neuron_rmsnorm/fetch", "neuron_rmsnorm/fetch_device_clock",
        "kineto_alexnet_2023.json", "legacy_mlp"}) {
    const TraceSummary s = MustSummarize(Fixture(fixture));
    for (const std::string& w : s.warnings) {
      EXPECT_NE(WarningKind(w), "other") << fixture << ": " << w;
      ++seen;
    }
  }
  EXPECT_GE(seen, 6u);
  EXPECT_EQ(WarningKind("NEFF neff_555_vnc_0.neff has no NTFF with hash 555: no device profile "
                        "for that model"),
            "neff_without_ntff");
  EXPECT_EQ(WarningKind("something new"), "other");
}

TEST(EnumNames, AreTheWireNames) {
  // The agent converts layers and device kinds to the wire's enums by these names.
  const std::pair<Layer, std::string_view> layers[] = {
      {Layer::kFrameworkDispatch, "framework_dispatch"},
      {Layer::kRuntimeScheduling, "runtime_scheduling"},
      {Layer::kDeviceExecution, "device_execution"},
      {Layer::kIdle, "idle"}};
  for (const auto& [layer, name] : layers) EXPECT_EQ(LayerName(layer), name);
  const std::pair<DeviceKind, std::string_view> kinds[] = {
      {DeviceKind::kCpu, "cpu"}, {DeviceKind::kCuda, "cuda"}, {DeviceKind::kNeuron, "neuron"}};
  for (const auto& [kind, name] : kinds) EXPECT_EQ(DeviceKindName(kind), name);
  EXPECT_EQ(LayerName(static_cast<Layer>(9)), "unknown");
}

TEST(KernelTotals, GroupDeviceEventsByNameMostTimeFirst) {
  const TraceSummary s = MustSummarize(Fixture("kineto_cuda_basic.json"));
  ASSERT_GE(s.kernels.size(), 4u);
  EXPECT_EQ(s.kernels[0].name, "void gemm_kernel<float>(...)");
  EXPECT_EQ(s.kernels[0].calls, 2u);
  EXPECT_NEAR(s.kernels[0].device_us, 101.0, 1e-9);  // 52.16 + 48.84
  double sum = 0;
  for (const KernelStats& k : s.kernels) sum += k.device_us;
  EXPECT_NEAR(sum, s.device_total_us, 1e-9);  // unattributed kernels are listed too
}

TEST(KeyAveragesCrossCheck, DeviceTimeThatDisagreesWithTheTraceIsReported) {
  const absl::StatusOr<TraceSummary> s = SummarizeCapture(
      "kineto_cuda_basic.json", {{"key_averages.json", R"({"device": "cuda", "rows": [
    {"name": "aten::addmm", "calls": 2, "self_cpu_us": 1, "cpu_total_us": 1,
     "self_device_us": 150.0, "device_total_us": 150.0}]})"}});
  ASSERT_TRUE(s.ok()) << s.status();
  bool found = false;
  for (const std::string& w : s->warnings) {
    if (w.find("disagree on self device time for 1 ops: aten::addmm (150.000 us in "
               "key_averages.json, 101.000 us in trace)") != std::string::npos) {
      found = true;
      EXPECT_EQ(WarningKind(w), "key_averages_mismatch");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace devtime::trace::testing
