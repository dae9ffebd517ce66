#include "agents/contract/run_summary_builder.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "agents/trace/trace_summary.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/wire/json.h"
#include "proto/wire/limits.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

trace::TraceSummary CpuSummary() {
  trace::TraceSummary summary;
  summary.source_format = "legacy-array";
  summary.device_kind = trace::DeviceKind::kCpu;
  summary.environment = {{"torch", "1.13.1"}, {"workload", "rmsnorm-naive"}};
  summary.capture.active_steps = 2;
  trace::OpStats mul;
  mul.name = "aten::mul";
  mul.calls = 4;
  mul.self_cpu_us = 20;
  mul.total_cpu_us = 25;
  mul.step_self_device_us = {10, 10};
  summary.ops.push_back(mul);
  summary.steps = {{1, 0, 30}, {2, 0, 31}};
  summary.layers = {{trace::Layer::kFrameworkDispatch, 61}};
  return summary;
}

RunLabels Labels() {
  RunLabels labels;
  labels.model = "rmsnorm";
  labels.started_at = std::chrono::system_clock::time_point(std::chrono::seconds(1795917600));
  labels.finished_at = labels.started_at + std::chrono::seconds(5);
  return labels;
}

TEST(BuildRunSummary, ProducesARunTheCollectorAccepts) {
  auto run = BuildRunSummary(CpuSummary(), Labels());
  auto status = wire::ValidateRun(run);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(run.identity().model(), "rmsnorm");
  EXPECT_EQ(run.identity().workload(), "rmsnorm-naive");  // from the environment
  EXPECT_EQ(run.identity().device_kind(), v1::DEVICE_KIND_CPU);
  EXPECT_EQ(run.status(), v1::RUN_STATUS_OK);
  EXPECT_EQ(run.capture().trace_format(), "legacy-array");
  EXPECT_EQ(run.capture().profiler(), "torch.profiler 1.13.1");
  ASSERT_EQ(run.ops_size(), 1);
  EXPECT_EQ(run.ops(0).calls(), 4u);
  EXPECT_EQ(run.ops(0).step_self_device_us_size(), 2);
  EXPECT_EQ(run.steps_size(), 2);
  EXPECT_EQ(run.layers(0).layer(), v1::LAYER_FRAMEWORK_DISPATCH);
}

// The validator's value bounds (total >= self, finite and bounded times, step numbers) hold
// for every capture the fixtures keep, as the agent validates each run before spooling it.
TEST(BuildRunSummary, EveryFixtureCaptureMakesARunTheCollectorAccepts) {
  const std::string dir = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/";
  RunLabels labels = Labels();
  labels.fallback_workload = "fixture";
  for (const char* fixture :
       {"kineto_collectives.json", "kineto_cuda_basic.json", "kineto_cuda_basic.json.gz",
        "kineto_int_ts.json", "kineto_neuron_no_device.json", "kineto_precision.json",
        "legacy_conv", "legacy_mlp", "neuron_explorer/profile_output", "neuron_fetch",
        "neuron_rmsnorm/explorer", "neuron_rmsnorm/fetch"}) {
    auto summary = trace::Summarize(dir + fixture);
    ASSERT_TRUE(summary.ok()) << fixture << ": " << summary.status();
    auto status = wire::ValidateRun(BuildRunSummary(*summary, labels));
    EXPECT_TRUE(status.ok()) << fixture << ": " << status;
  }
}

TEST(BuildRunSummary, MarksUntrustworthyCaptureInvalidWithReason) {
  auto summary = CpuSummary();
  summary.invalid_reason = "no ProfilerStep window in trace";
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.status(), v1::RUN_STATUS_INVALID);
  EXPECT_EQ(run.status_reason(), "no ProfilerStep window in trace");
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, KeepsGivenRunIdAndFallsBackForWorkload) {
  auto summary = CpuSummary();
  summary.environment.erase("workload");
  auto labels = Labels();
  labels.run_id = "3f2c9a5e-0b1d-4c6e-9f00-12ab34cd56ef";
  labels.fallback_workload = "trace";
  auto run = BuildRunSummary(summary, labels);
  EXPECT_EQ(run.identity().run_id(), labels.run_id);
  EXPECT_EQ(run.identity().workload(), "trace");
}

// Totals below 0 are sent as 0; per-step self-CPU samples stay exact down to the contract's
// rounding floor (issue 23: their mean is the total over the steps, see below).
TEST(BuildRunSummary, ClampsTruncationArtifactsOfLegacyTracesToZero) {
  auto summary = CpuSummary();
  summary.ops[0].self_cpu_us = -3;  // children outlasting a parent by whole-µs truncation
  summary.ops[0].step_self_device_us = {-1, 4};
  summary.steps[0].cpu_us = -2;
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.ops(0).self_cpu_us(), 0);
  EXPECT_EQ(run.ops(0).step_self_device_us(0), -1);
  EXPECT_EQ(run.ops(0).step_self_device_us(1), 4);
  EXPECT_EQ(run.steps(0).cpu_us(), 0);
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, CarriesDeviceTotalsAndUnattributedTime) {
  auto summary = CpuSummary();
  summary.device_total_us = 2'355.0;
  summary.unattributed_device_us = 12.5;
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.device_total_us(), 2'355.0);
  EXPECT_EQ(run.unattributed_device_us(), 12.5);
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, NegativeUnattributedTimeIsZeroAsEveryOtherTime) {
  auto summary = CpuSummary();
  summary.device_total_us = -1;
  summary.unattributed_device_us = -2;
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.device_total_us(), 0);
  EXPECT_EQ(run.unattributed_device_us(), 0);
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, TotalIsNeverBelowTheUnattributedPartItIncludes) {
  auto summary = CpuSummary();
  summary.device_total_us = 99.999999;  // summation rounding
  summary.unattributed_device_us = 100;
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.device_total_us(), 100);
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, EachWarningHasItsKindAndMessage) {
  auto summary = CpuSummary();
  summary.warnings = {"model.neff has no NTFF with hash abc: no device profile",
                      "something the library never wrote"};
  auto run = BuildRunSummary(summary, Labels());
  ASSERT_EQ(run.warnings_size(), 2);
  EXPECT_EQ(run.warnings(0).kind(), "neff_without_ntff");
  EXPECT_EQ(run.warnings(0).message(), summary.warnings[0]);
  EXPECT_EQ(run.warnings(1).kind(), "other");
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, WarningMessagesFitTheWireLimitsWithoutSplittingCharacters) {
  auto summary = CpuSummary();
  // 'é' is two bytes: an odd limit would split one if cut blindly.
  std::string long_text(wire::kMaxWarningMessageBytes - 1, 'a');
  long_text += "\xc3\xa9\xc3\xa9";
  summary.warnings = {long_text, "line one\nline\ttwo"};
  for (int i = 0; i < 300; ++i) summary.warnings.push_back("warning " + std::to_string(i));
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.warnings_size(), static_cast<int>(wire::kMaxWarnings));
  EXPECT_EQ(run.warnings(0).message().size(), wire::kMaxWarningMessageBytes - 1);
  EXPECT_EQ(run.warnings(1).message(), "line one line two");
  auto status = wire::ValidateRun(run);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(BuildRunSummary, KeepsTheTopKernelsAndSumsTheRestIntoOneRow) {
  auto summary = CpuSummary();
  for (int i = 0; i < 60; ++i) {
    summary.kernels.push_back({"kernel_" + std::to_string(i), 2, 100.0 - i});
  }
  auto run = BuildRunSummary(summary, Labels());
  ASSERT_EQ(run.kernels_size(), static_cast<int>(wire::kMaxKernels));
  EXPECT_EQ(run.kernels(0).name(), "kernel_0");
  EXPECT_EQ(run.kernels(0).calls(), 2u);
  EXPECT_EQ(run.kernels(0).device_us(), 100);
  EXPECT_EQ(run.kernels(49).name(), "kernel_49");
  const auto& other = run.kernels(50);
  EXPECT_EQ(other.name(), "(other kernels)");
  EXPECT_EQ(other.calls(), 20u);               // 10 kernels x 2 calls
  EXPECT_DOUBLE_EQ(other.device_us(), 455.0);  // 50 + 49 + ... + 41
  EXPECT_TRUE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, FewKernelsNeedNoOtherRow) {
  auto summary = CpuSummary();
  summary.kernels = {{"nc_exec_running", 12, 4'709.8}};
  auto run = BuildRunSummary(summary, Labels());
  ASSERT_EQ(run.kernels_size(), 1);
  EXPECT_EQ(run.kernels(0).name(), "nc_exec_running");
  EXPECT_EQ(run.kernels(0).calls(), 12u);
}

TEST(BuildRunSummary, DeviceJoinSaysWhichMethodCoveredHowMuch) {
  struct Case {
    uint64_t by_id, by_order;
    double by_id_us, by_order_us;
    v1::DeviceJoinMethod method;
  };
  for (auto c :
       {Case{0, 0, 0, 0, v1::DEVICE_JOIN_METHOD_NONE}, Case{3, 0, 30, 0, v1::DEVICE_JOIN_METHOD_ID},
        Case{0, 12, 0, 4'709.8, v1::DEVICE_JOIN_METHOD_ORDER},
        Case{3, 12, 30, 4'709.8, v1::DEVICE_JOIN_METHOD_ID_AND_ORDER}}) {
    auto summary = CpuSummary();
    trace::DeviceJoin join;
    join.by_id = c.by_id;
    join.by_id_us = c.by_id_us;
    join.by_order = c.by_order;
    join.by_order_us = c.by_order_us;
    join.unjoined = 1;
    join.unjoined_us = 7;
    summary.device_join = join;
    auto run = BuildRunSummary(summary, Labels());
    ASSERT_TRUE(run.has_device_join());
    const auto& out = run.device_join();
    EXPECT_EQ(out.method(), c.method) << join.Method();
    EXPECT_EQ(out.by_id_executions(), c.by_id);
    EXPECT_EQ(out.by_id_us(), c.by_id_us);
    EXPECT_EQ(out.by_order_executions(), c.by_order);
    EXPECT_EQ(out.by_order_us(), c.by_order_us);
    EXPECT_EQ(out.unjoined_executions(), 1u);
    EXPECT_EQ(out.unjoined_us(), 7);
    EXPECT_TRUE(wire::ValidateRun(run).ok());
  }
}

TEST(BuildRunSummary, RunsWithoutASystemTraceHaveNoDeviceJoin) {
  auto run = BuildRunSummary(CpuSummary(), Labels());
  EXPECT_FALSE(run.has_device_join());
  EXPECT_EQ(run.kernels_size(), 0);
  EXPECT_EQ(run.warnings_size(), 0);
}

TEST(NewRunId, IsACanonicalVersion4UuidAndUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    auto id = NewRunId();
    ASSERT_TRUE(wire::IsCanonicalUuid(id)) << id;
    EXPECT_EQ(id[14], '4') << id;
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

}  // namespace
}  // namespace devtime::agent

namespace devtime::agent {
namespace {

// Issue 23: a legacy trace's self-CPU step samples are exact in the run, also a step a few us
// below 0 from the profiler's rounding, so that the collector's per-step mean (the mean of the
// samples) is the op's time in the steps over the steps, as the agent's table shows it.
// Clamping each sample at 0 made it 7.6 where the total over 5 steps is 5.8.
trace::TraceSummary RoundedCpuSummary() {
  trace::TraceSummary summary = CpuSummary();
  summary.capture.active_steps = 5;
  summary.ops[0].calls = 10;
  summary.ops[0].self_cpu_us = 29;
  summary.ops[0].total_cpu_us = 40;
  summary.ops[0].step_self_device_us = {10, -9, 10, 10, 8};
  summary.steps = {{1, 0, 30}, {2, 0, 31}, {3, 0, 30}, {4, 0, 30}, {5, 0, 30}};
  return summary;
}

double Mean(const v1::OpStat& op) {
  double sum = 0;
  for (double v : op.step_self_device_us()) sum += v;
  return sum / op.step_self_device_us_size();
}

TEST(BuildRunSummary, SelfCpuStepSamplesKeepRoundingBelowZero) {
  const auto run = BuildRunSummary(RoundedCpuSummary(), Labels());
  auto status = wire::ValidateRun(run);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(run.ops(0).step_self_device_us_size(), 5);
  EXPECT_DOUBLE_EQ(run.ops(0).step_self_device_us(1), -9.0);
  EXPECT_DOUBLE_EQ(Mean(run.ops(0)), 29.0 / 5);  // total / steps, not 7.6
}

TEST(BuildRunSummary, BucketedSelfCpuSamplesKeepTheExactTotal) {
  trace::TraceSummary summary = RoundedCpuSummary();
  const std::size_t windows = 25'000;  // bucketed by 3
  summary.ops[0].calls = 2 * windows;
  summary.ops[0].step_self_device_us = trace::StepSamples(windows);
  summary.steps.clear();
  double total = 0;
  for (std::size_t w = 0; w < windows; ++w) {
    const double v = w % 3 == 1 ? -2.0 : 1.0;  // every bucket of 3: 1 - 2 + 1 = 0
    summary.ops[0].step_self_device_us.Add(w, v);
    total += v;
    summary.steps.push_back({static_cast<uint32_t>(w), 0, 30});
  }
  const auto run = BuildRunSummary(summary, Labels());
  auto status = wire::ValidateRun(run);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_GT(run.steps(0).steps(), 1u);
  double weighted = 0, steps = 0;
  for (int b = 0; b < run.steps_size(); ++b) {
    weighted += run.ops(0).step_self_device_us(b) * run.steps(b).steps();
    steps += run.steps(b).steps();
  }
  EXPECT_NEAR(weighted / steps, total / static_cast<double>(windows), 1e-9);
}

TEST(ValidateRun, SelfCpuSamplesMayGoBelowZeroByTheRoundingPerCallOnly) {
  auto run = BuildRunSummary(RoundedCpuSummary(), Labels());  // aten::mul, 10 calls
  run.mutable_ops(0)->set_step_self_device_us(1, -10.0);      // 1 us per call: the floor
  EXPECT_TRUE(wire::ValidateRun(run).ok());
  run.mutable_ops(0)->set_step_self_device_us(1, -10.5);
  auto status = wire::ValidateRun(run);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("run.ops[0].step_self_device_us[1]: must be >= -10"),
            std::string::npos)
      << status;
  // Device time samples are never below 0.
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CUDA);
  run.mutable_ops(0)->set_step_self_device_us(1, -1.0);
  EXPECT_FALSE(wire::ValidateRun(run).ok());
}

TEST(BuildRunSummary, DeviceSamplesStayAtLeastZero) {
  trace::TraceSummary summary = RoundedCpuSummary();
  summary.device_kind = trace::DeviceKind::kCuda;
  summary.has_device_time = true;
  summary.ops[0].self_device_us = 29;
  summary.ops[0].total_device_us = 29;
  summary.device_total_us = 29;
  const auto run = BuildRunSummary(summary, Labels());
  EXPECT_TRUE(wire::ValidateRun(run).ok());
  EXPECT_DOUBLE_EQ(run.ops(0).step_self_device_us(1), 0.0);
}

}  // namespace
}  // namespace devtime::agent

namespace devtime::agent {
namespace {

// Issue 23: `summarize --format json` streams the operators and steps; the text is protobuf's.
// The text is compared where the run has no map (protobuf prints a map in its own order, which
// a copy of the message need not keep); with one, what it reads back as.
TEST(WriteRunJson, PrintsWhatToJsonPrints) {
  for (const trace::TraceSummary& summary :
       {CpuSummary(), RoundedCpuSummary(), trace::TraceSummary()}) {
    v1::RunSummary run = BuildRunSummary(summary, Labels());
    std::ostringstream with_map;
    WriteRunJson(run, with_map);
    v1::RunSummary read;
    ASSERT_TRUE(wire::ParseJson(with_map.str(), "written.json", &read).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(read, run));
    run.clear_environment();
    std::ostringstream out;
    WriteRunJson(run, out);
    EXPECT_EQ(out.str(), wire::ToJson(run));
  }
  const std::string dir = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/";
  auto summary = trace::Summarize(dir + "kineto_collectives.json");
  ASSERT_TRUE(summary.ok()) << summary.status();
  v1::RunSummary run = BuildRunSummary(*summary, Labels());
  ASSERT_GT(run.ops_size(), 1);
  run.clear_environment();
  std::ostringstream out;
  WriteRunJson(run, out);
  EXPECT_EQ(out.str(), wire::ToJson(run));
}

}  // namespace
}  // namespace devtime::agent
