// ToReportModel: the collector's messages become the plain values the report page draws.
#include "services/ctl/report_model.h"

#include <gtest/gtest.h>

#include "services/ctl/report.h"
#include "tests/unit/ctl/report_samples.h"

namespace devtime::ctl {
namespace {

constexpr long long kNight = 1795917600;  // 2026-11-29T02:00:00Z

SeriesReport OneSeries(std::optional<v1::RunSummary> latest,
                       std::optional<v1::RunSummary> baseline) {
  SeriesReport s;
  s.workload = "fused";
  s.latest = std::move(latest);
  s.baseline = std::move(baseline);
  if (s.baseline) s.baseline_label = "previous OK run";
  return s;
}

ReportModel Convert(const SeriesReport& s) {
  ModelReport report;
  report.model = "rmsnorm";
  report.generated_at.set_seconds(kNight);
  report.series = {s};
  return ToReportModel(report);
}

TEST(ToReportModel, TimesKeepSecondsAndTheirText) {
  ModelReport report;
  report.generated_at.set_seconds(kNight);
  report.generated_at.set_nanos(500'000'000);
  ReportModel model = ToReportModel(report);
  EXPECT_DOUBLE_EQ(model.generated_at.seconds, kNight + 0.5);
  EXPECT_EQ(model.generated_at.text, "2026-11-29T02:00:00Z");
}

TEST(ToReportModel, ListedRunsKeepTheirStatusAndSeriesValue) {
  SeriesReport s = OneSeries(std::nullopt, std::nullopt);
  v1::RunInfo failed;
  failed.mutable_identity()->set_run_id("r1");
  failed.set_status(v1::RUN_STATUS_FAILED);
  failed.set_status_reason("timed out");
  v1::RunInfo ok;
  ok.mutable_identity()->set_run_id("r2");
  ok.set_status(v1::RUN_STATUS_OK);
  ok.set_device_us_per_step(403.3);
  s.runs = {failed, ok};
  ReportModel model = Convert(s);
  ASSERT_EQ(model.series.size(), 1u);
  const auto& runs = model.series[0].runs;
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].ok);
  EXPECT_EQ(runs[0].status, "failed");
  EXPECT_EQ(runs[0].status_reason, "timed out");
  EXPECT_TRUE(runs[1].ok);
  EXPECT_DOUBLE_EQ(runs[1].us_per_step, 403.3);
  EXPECT_FALSE(model.series[0].breakdown.has_value());  // no OK run summary to break down
}

TEST(ToReportModel, LayersArePerStepAndMissingWhenNotReported) {
  v1::RunSummary latest = StepRun("new", kNight, {{"aten::mul", 100}}, 4, 20, 100);
  v1::RunSummary baseline = StepRun("old", kNight - 86400, {{"aten::mul", 90}}, 2, 10, 90);
  baseline.clear_layers();
  ReportModel model = Convert(OneSeries(latest, baseline));
  const ReportBreakdown& b = *model.series[0].breakdown;
  ASSERT_TRUE(b.latest_layers.has_value());
  EXPECT_DOUBLE_EQ(b.latest_layers->framework_dispatch, 20);
  EXPECT_DOUBLE_EQ(b.latest_layers->device_execution, 100);
  EXPECT_DOUBLE_EQ(b.latest_layers->idle, 0);
  EXPECT_FALSE(b.baseline_layers.has_value());
  ASSERT_TRUE(b.baseline.has_value());
  EXPECT_EQ(b.baseline->run_id, "old");
  EXPECT_EQ(b.baseline_label, "previous OK run");
}

TEST(ToReportModel, ComparesOperatorsPerStepWithTheBaseline) {
  v1::RunSummary latest = StepRun("new", kNight, {{"aten::mul", 100}, {"aten::add", 5}}, 2, 0, 0);
  v1::RunSummary baseline = StepRun("old", kNight - 86400, {{"aten::mul", 80}}, 2, 0, 0);
  ReportModel model = Convert(OneSeries(latest, baseline));
  const ReportBreakdown& b = *model.series[0].breakdown;
  EXPECT_EQ(b.basis, "device");
  EXPECT_DOUBLE_EQ(b.baseline_us, 80);
  EXPECT_DOUBLE_EQ(b.latest_us, 105);
  EXPECT_DOUBLE_EQ(b.relative_change, 25.0 / 80);
  ASSERT_EQ(b.ops.size(), 2u);
  EXPECT_EQ(b.ops[0].name, "aten::mul");  // largest |Δ| first
  EXPECT_DOUBLE_EQ(b.ops[0].baseline_us, 80);
  EXPECT_DOUBLE_EQ(b.ops[0].latest_us, 100);
  EXPECT_EQ(b.ops[1].name, "aten::add");
  EXPECT_FALSE(b.ops[1].in_baseline);
  EXPECT_TRUE(b.ops[1].in_latest);
}

TEST(ToReportModel, CpuRunsMeasureSelfCpuTime) {
  v1::RunSummary latest = StepRun("new", kNight, {{"aten::mul", 100}}, 2, 0, 0);
  latest.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  EXPECT_EQ(Convert(OneSeries(latest, std::nullopt)).series[0].basis, "self CPU");
  EXPECT_EQ(Convert(OneSeries(std::nullopt, std::nullopt)).series[0].basis, "device");
}

TEST(ToReportModel, RegressionsKeepStateLivenessAndAttribution) {
  ModelReport report;
  for (auto state : {v1::REGRESSION_STATE_SUSPECTED, v1::REGRESSION_STATE_OPEN,
                     v1::REGRESSION_STATE_ACKNOWLEDGED, v1::REGRESSION_STATE_RESOLVED,
                     v1::REGRESSION_STATE_INVALID}) {
    report.regressions.push_back(MakeRegression({.id = static_cast<int>(state),
                                                 .state = state,
                                                 .model = "rmsnorm",
                                                 .workload = "fused",
                                                 .last_good_run_id = "good",
                                                 .first_bad_run_id = "bad",
                                                 .first_bad_at = kNight,
                                                 .relative_change = 0.5,
                                                 .summary = "slower",
                                                 .compiler_before = "2.21",
                                                 .compiler_after = ""}));
  }
  ReportModel model = ToReportModel(report);
  ASSERT_EQ(model.regressions.size(), 5u);
  EXPECT_EQ(model.regressions[0].state, "suspected");
  std::vector<bool> live;
  for (const auto& r : model.regressions) live.push_back(r.live);
  EXPECT_EQ(live, (std::vector<bool>{true, true, true, false, false}));
  const ReportRegression& r = model.regressions[1];
  EXPECT_EQ(r.state, "open");
  EXPECT_EQ(r.first_bad_at.text, "2026-11-29T02:00:00Z");
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].op, "aten::mul");
  EXPECT_DOUBLE_EQ(r.ops[0].delta_us, 1164.5);
  ASSERT_EQ(r.environment.size(), 1u);
  EXPECT_EQ(r.environment[0].key, "neuronx-cc");
  EXPECT_EQ(r.environment[0].before, "2.21");
  EXPECT_EQ(r.environment[0].after, "");
}

}  // namespace
}  // namespace devtime::ctl
