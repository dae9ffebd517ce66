#include "agents/run_summary_builder.h"

#include <gtest/gtest.h>

#include <set>

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

TEST(BuildRunSummary, ClampsTruncationArtifactsOfLegacyTracesToZero) {
  auto summary = CpuSummary();
  summary.ops[0].self_cpu_us = -3;  // children outlasting a parent by whole-µs truncation
  summary.ops[0].step_self_device_us = {-1, 4};
  summary.steps[0].cpu_us = -2;
  auto run = BuildRunSummary(summary, Labels());
  EXPECT_EQ(run.ops(0).self_cpu_us(), 0);
  EXPECT_EQ(run.ops(0).step_self_device_us(0), 0);
  EXPECT_EQ(run.ops(0).step_self_device_us(1), 4);
  EXPECT_EQ(run.steps(0).cpu_us(), 0);
  EXPECT_TRUE(wire::ValidateRun(run).ok());
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
