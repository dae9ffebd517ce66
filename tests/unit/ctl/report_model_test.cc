// ToReportModel: the collector's messages become the plain values the report page draws.
#include "services/ctl/report_model.h"

#include <gtest/gtest.h>

#include <cmath>

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

v1::RunInfo Listed(const v1::RunSummary& run, double us_per_step) {
  v1::RunInfo info;
  *info.mutable_identity() = run.identity();
  *info.mutable_started_at() = run.started_at();
  info.set_status(v1::RUN_STATUS_OK);
  info.set_device_us_per_step(us_per_step);
  return info;
}

// Three fetched nights of one series (the runs' summaries as GetRun returned them).
SeriesReport FetchedSeries() {
  std::vector<v1::RunSummary> nights = {
      StepRun("n0", kNight, {{"aten::mul", 300}, {"aten::add", 100}}, 2, 0, 0),
      StepRun("n1", kNight + 86400, {{"aten::mul", 310}, {"aten::add", 90}}, 2, 0, 0),
      StepRun("n2", kNight + 2 * 86400, {{"aten::mul", 900}}, 2, 0, 0)};
  SetStepTimes(nights[0], {390, 410});  // mean 400, stddev √200
  SetStepTimes(nights[1], {400, 400});  // stddev 0
  nights[2].clear_steps();  // no step records: no spread (its 2 steps are the capture's)
  nights[2].mutable_capture()->set_active_steps(2);
  (*nights[0].mutable_environment())["neuronx-cc"] = "2.21.18";
  (*nights[1].mutable_environment())["neuronx-cc"] = "2.21.18";
  (*nights[2].mutable_environment())["neuronx-cc"] = "2.22.4";
  (*nights[2].mutable_environment())["driver"] = "2.19";
  SeriesReport s = OneSeries(nights[2], nights[1]);
  s.runs = {Listed(nights[0], 400), Listed(nights[1], 400), Listed(nights[2], 900)};
  s.recent = nights;
  return s;
}

TEST(ToReportModel, EachFetchedRunCarriesTheStddevOfItsSteps) {
  ReportSeries s = Convert(FetchedSeries()).series[0];
  EXPECT_EQ(s.noise_source, "run");
  EXPECT_EQ(s.fetched_runs, 3u);
  ASSERT_EQ(s.runs.size(), 3u);
  ASSERT_TRUE(s.runs[0].noise_us.has_value());
  EXPECT_NEAR(*s.runs[0].noise_us, std::sqrt(200.0), 1e-9);
  ASSERT_TRUE(s.runs[1].noise_us.has_value());
  EXPECT_DOUBLE_EQ(*s.runs[1].noise_us, 0);
  EXPECT_FALSE(s.runs[2].noise_us.has_value());  // no steps: no band there
}

TEST(ToReportModel, WithoutPerStepTimesTheBandIsTheRunToRunJitter) {
  SeriesReport in = OneSeries(std::nullopt, std::nullopt);
  // A step from 100 to 200 and ±2 jitter: the band must not span the step.
  for (double v : {100.0, 102.0, 100.0, 102.0, 200.0, 202.0, 200.0}) {
    v1::RunSummary run = StepRun("r" + std::to_string(in.runs.size()), kNight, {}, 1, 0, 0);
    in.runs.push_back(Listed(run, v));
  }
  ReportSeries s = Convert(in).series[0];
  EXPECT_EQ(s.noise_source, "history");
  EXPECT_NEAR(s.history_noise_us, 2 / 0.9539, 1e-9);  // median |difference| 2
  in.runs.resize(2);
  EXPECT_EQ(Convert(in).series[0].noise_source, "");  // too few runs for any band
}

TEST(ToReportModel, TheThresholdIsDrawnAroundTheBaselineRunsValue) {
  ReportSeries s = Convert(FetchedSeries()).series[0];
  ASSERT_TRUE(s.reference_us.has_value());
  EXPECT_DOUBLE_EQ(*s.reference_us, 400);  // n1, the baseline, as listed
  ModelReport report;
  report.threshold = 0.05;
  EXPECT_DOUBLE_EQ(ToReportModel(report).threshold, 0.05);
  EXPECT_DOUBLE_EQ(ModelReport().threshold, 0.01);  // the detector's default
}

TEST(ToReportModel, MarksRunsWhoseEnvironmentChanged) {
  ReportSeries s = Convert(FetchedSeries()).series[0];
  ASSERT_EQ(s.env_changes.size(), 1u);  // n1 has n0's environment
  const ReportEnvMarker& marker = s.env_changes[0];
  EXPECT_EQ(marker.run_id, "n2");
  EXPECT_EQ(marker.started_at.seconds, kNight + 2 * 86400);
  std::vector<std::string> changes;
  for (const auto& c : marker.changes) changes.push_back(c.key + ": " + c.before + " > " + c.after);
  EXPECT_EQ(changes, (std::vector<std::string>{"driver:  > 2.19", "neuronx-cc: 2.21.18 > 2.22.4"}));
}

TEST(ToReportModel, OperatorHistoryFollowsTheLargestOperatorsOverTheFetchedRuns) {
  SeriesReport in = FetchedSeries();
  for (int i = 0; i < 6; ++i) {  // six small operators in the newest run: only 3 more fit
    auto* op = in.recent[2].add_ops();
    op->set_name("small" + std::to_string(i));
    op->set_calls(2);
    op->set_self_device_us(2.0 * (i + 1));
  }
  ReportSeries s = Convert(in).series[0];
  std::vector<std::string> names;
  for (const auto& op : s.op_history) names.push_back(op.op);
  EXPECT_EQ(names,
            (std::vector<std::string>{"aten::mul", "aten::add", "small5", "small4", "small3"}));
  ASSERT_EQ(s.op_history[0].points.size(), 3u);
  EXPECT_EQ(s.op_history[0].points[2].run_id, "n2");
  EXPECT_DOUBLE_EQ(s.op_history[0].points[2].us, 900);  // per step
  ASSERT_EQ(s.op_history[1].points.size(), 2u);         // aten::add is gone from n2
  EXPECT_DOUBLE_EQ(s.op_history[1].points[1].us, 90);
}

}  // namespace
}  // namespace devtime::ctl
