// The analyzer's decision about one stored run, without a database: what a run means for
// its series and for the series' live regression.
#include "services/collector/analyze/decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace devtime::analyze {
namespace {

using ::testing::HasSubstr;

// A nightly series, one run per day, 1 % noise around `level`; run ids "r0", "r1", ...
class Series {
 public:
  Series& Add(double value) {
    const int i = static_cast<int>(points_.size());
    points_.push_back({"r" + std::to_string(i), Day(i), {value, 0.0}});
    return *this;
  }
  Series& Level(double level, int runs) {
    for (int i = 0; i < runs; ++i) Add(level * (1.0 + 0.01 * ((i * 7) % 5 - 2) / 2.0));
    return *this;
  }
  // `runs` runs creeping from `level` by `per_run` (relative) each, with the same 1 % noise.
  Series& Creep(double level, double per_run, int runs) {
    for (int i = 0; i < runs; ++i) {
      Add(level * (1.0 + per_run * (i + 1)) * (1.0 + 0.01 * ((i * 7) % 5 - 2) / 2.0));
    }
    return *this;
  }
  double back() const { return points_.back().point.value; }
  static int64_t Day(int i) { return 1'700'000'000'000'000 + int64_t{86'400'000'000} * i; }
  const std::vector<SeriesPoint>& points() const { return points_; }
  std::string last() const { return points_.back().run_id; }

 private:
  std::vector<SeriesPoint> points_;
};

LiveRegression Live(State state, int first_bad_index, bool confirmation_requested = false) {
  return {.id = 7,
          .state = state,
          .first_bad_at_us = Series::Day(first_bad_index),
          .confirmation_requested = confirmation_requested};
}

absl::StatusOr<Decision> DecideLast(const Series& s, std::optional<LiveRegression> live = {}) {
  return Decide(s.last(), s.points(), live, AnalyzerOptions{});
}

TEST(Decision, ALateRunIsSkipped) {
  Series s;
  s.Level(100, 10);
  auto d = Decide("r3", s.points(), std::nullopt, AnalyzerOptions{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict, Verdict::kSkipped);
  EXPECT_FALSE(d->transition);
  EXPECT_FALSE(d->suspected);
}

// What the last run of a series means when no regression is live: `runs` runs at `level`,
// then the `last` run when there is one.
struct LastRunCase {
  const char* name;
  double level;
  int runs;
  std::optional<double> last;
  Verdict verdict;
  std::optional<double> suspected_change;  // the gate measure of the step it suspects, if any
};

class LastRun : public ::testing::TestWithParam<LastRunCase> {};

TEST_P(LastRun, HasItsVerdictAndSuspectsOnlyAStepUp) {
  const LastRunCase& c = GetParam();
  Series s;
  s.Level(c.level, c.runs);
  if (c.last) s.Add(*c.last);
  auto d = DecideLast(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict, c.verdict);
  EXPECT_FALSE(d->transition) << "nothing is live to move";
  if (c.suspected_change) {
    ASSERT_TRUE(d->suspected);
    EXPECT_NEAR(d->suspected->relative_change, *c.suspected_change, 0.02);
  } else {
    EXPECT_FALSE(d->suspected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Decision, LastRun,
    ::testing::Values(
        LastRunCase{"TooFewRunsBeforeItIsInsufficientHistory", 100, 3, 300,
                    Verdict::kInsufficientHistory, std::nullopt},
        LastRunCase{"ASteadyRunIsNone", 100, 20, std::nullopt, Verdict::kNone, std::nullopt},
        LastRunCase{"ALostFusionIsSuspectedWithTheGateMeasure", 403.3, 20, 2354.9,
                    Verdict::kSuspected, 2354.9 / 403.3 - 1},
        LastRunCase{"AFasterRunOpensNothing", 2354.9, 20, 403.3, Verdict::kNone, std::nullopt}),
    [](const ::testing::TestParamInfo<LastRunCase>& c) { return c.param.name; });

TEST(Decision, AConfirmationRunStillSlowerOpensTheSuspectedRegression) {
  Series s;
  s.Level(403.3, 20).Add(2354.9).Add(2360.0);
  auto d = DecideLast(s, Live(v1::REGRESSION_STATE_SUSPECTED, 20, true));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kConfirmed);
  ASSERT_TRUE(d->transition);
  EXPECT_EQ(d->transition->regression_id, 7);
  EXPECT_EQ(d->transition->to, v1::REGRESSION_STATE_OPEN);
  EXPECT_EQ(d->transition->actor, "detector");
  EXPECT_EQ(d->transition->confirmation_run_id, "r21");
  EXPECT_THAT(d->transition->reason, HasSubstr("confirmation run r21 agrees"));
}

TEST(Decision, ANextRunBackAtTheBaselineRefutesIt) {
  Series s;
  s.Level(403.3, 20).Add(2354.9).Add(404.0);
  auto d = DecideLast(s, Live(v1::REGRESSION_STATE_SUSPECTED, 20));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kRefuted);
  ASSERT_TRUE(d->transition);
  EXPECT_EQ(d->transition->to, v1::REGRESSION_STATE_INVALID);
  EXPECT_THAT(d->transition->reason, HasSubstr("next run r21 is back at the baseline"));
  EXPECT_THAT(d->transition->reason, HasSubstr("not reproduced"));
}

TEST(Decision, AnOpenRegressionResolvesAfterResolveRunsBackAtTheBaseline) {
  Series s;
  s.Level(403.3, 20).Add(2354.9).Add(2350.0).Add(404.0);
  // One run back is not enough (resolve_runs = 2) ...
  auto d = DecideLast(s, Live(v1::REGRESSION_STATE_OPEN, 20));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kNone);
  EXPECT_FALSE(d->transition);
  // ... two are.
  s.Add(402.5);
  d = DecideLast(s, Live(v1::REGRESSION_STATE_ACKNOWLEDGED, 20));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kResolved);
  ASSERT_TRUE(d->transition);
  EXPECT_EQ(d->transition->to, v1::REGRESSION_STATE_RESOLVED);
  EXPECT_EQ(d->transition->resolution, v1::RESOLUTION_FIXED);
  EXPECT_THAT(d->transition->reason, HasSubstr("the last 2 runs are back at the baseline"));
}

TEST(Decision, TheFirstBadRunNeverCountsTowardsResolving) {
  Series s;
  s.Level(403.3, 20).Add(404.0);  // a regression whose first bad run is itself at baseline
  AnalyzerOptions options;
  options.resolve_runs = 1;
  auto d = Decide(s.last(), s.points(), Live(v1::REGRESSION_STATE_OPEN, 20), options);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kNone);
}

TEST(Decision, AnOperatorSeriesThatMovedWithTheRunIsAChild) {
  Series op;
  op.Level(100, 20).Add(150);
  auto change = OperatorChange(op.last(), "device_us_per_step", "aten::rms_norm", op.points(),
                               AnalyzerOptions{});
  ASSERT_TRUE(change);
  EXPECT_EQ(change->op, "aten::rms_norm");
  EXPECT_NEAR(change->relative_change, 0.5, 0.02);
  EXPECT_GE(change->baseline_runs, 5);
  // Not the run's own point, or not slower: no child.
  EXPECT_FALSE(OperatorChange("other-run", "device_us_per_step", "aten::rms_norm", op.points(),
                              AnalyzerOptions{}));
  Series flat;
  flat.Level(100, 21);
  EXPECT_FALSE(OperatorChange(flat.last(), "device_us_per_step", "aten::rms_norm", flat.points(),
                              AnalyzerOptions{}));
}

LiveRegression LiveDrift(int first_bad_index) {
  return {
      .id = 9, .state = v1::REGRESSION_STATE_OPEN, .first_bad_at_us = Series::Day(first_bad_index)};
}

TEST(Decision, ASlowCreepOpensOneDriftWithItsSlopeAndStart) {
  Series s;
  s.Level(400, 20).Creep(400, 0.003, 30);  // +0.3 % per run from run 20 on: +9 % per 30 runs
  auto d = DecideLast(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict, Verdict::kSuspected);
  EXPECT_FALSE(d->suspected) << "a creep is no step";
  EXPECT_FALSE(d->transition);
  ASSERT_TRUE(d->opened_drift);
  const DriftFigures& drift = *d->opened_drift;
  EXPECT_NEAR(drift.slope_per_30, 0.09, 0.09 * 0.25);
  EXPECT_GT(drift.slope, 0.0);
  EXPECT_EQ(drift.end_run_id, "r49");
  EXPECT_EQ(drift.end_at_us, Series::Day(49));
  const int start = std::stoi(drift.start_run_id.substr(1));
  EXPECT_NEAR(start, 20, 4) << drift.start_run_id;
  EXPECT_EQ(drift.last_good_run_id, "r" + std::to_string(start - 1));
  EXPECT_GT(drift.relative_change, 0.05);
  EXPECT_GT(drift.confidence, 0.999);
  EXPECT_GT(drift.runs, 20);
}

TEST(Decision, AFlatSeriesAndAFasterCreepOpenNoDrift) {
  Series flat;
  flat.Level(400, 60);
  auto d = DecideLast(flat);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->opened_drift);
  Series faster;
  faster.Level(400, 20).Creep(400, -0.003, 30);
  d = DecideLast(faster);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->opened_drift);
  EXPECT_FALSE(d->suspected);
}

TEST(Decision, ALiveDriftThatContinuesIsUpdatedNotReopened) {
  Series s;
  s.Level(400, 20).Creep(400, 0.003, 40);
  auto d = Decide(s.last(), s.points(), LiveRegressions{.drift = LiveDrift(45)}, AnalyzerOptions{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict, Verdict::kNone);
  EXPECT_FALSE(d->opened_drift);
  EXPECT_FALSE(d->transition);
  ASSERT_TRUE(d->updated_drift);
  EXPECT_EQ(d->updated_drift->regression_id, 9);
  EXPECT_EQ(d->updated_drift->figures.end_run_id, "r59");
  EXPECT_NEAR(d->updated_drift->figures.slope_per_30, 0.09, 0.09 * 0.25);
}

TEST(Decision, ALiveDriftResolvesWhenTheSeriesIsFlatAgain) {
  Series s;
  s.Level(400, 20).Creep(400, 0.003, 40);
  const double top = s.back();
  s.Level(top, 30);  // flat for the last 30 runs
  auto d = Decide(s.last(), s.points(), LiveRegressions{.drift = LiveDrift(45)}, AnalyzerOptions{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->verdict, Verdict::kResolved);
  ASSERT_TRUE(d->transition);
  EXPECT_EQ(d->transition->regression_id, 9);
  EXPECT_EQ(d->transition->to, v1::REGRESSION_STATE_RESOLVED);
  EXPECT_EQ(d->transition->resolution, v1::RESOLUTION_FIXED);
  EXPECT_THAT(d->transition->reason, HasSubstr("flat again"));
  EXPECT_FALSE(d->updated_drift);
  // Without a live drift the same series opens none: its creep is over.
  d = DecideLast(s);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->opened_drift);
}

TEST(Decision, AStepDuringADriftStillOpensAStepRegression) {
  Series s;
  s.Level(400, 20).Creep(400, 0.003, 30).Add(2 * s.back());
  auto d = Decide(s.last(), s.points(), LiveRegressions{.drift = LiveDrift(45)}, AnalyzerOptions{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, Verdict::kSuspected);
  EXPECT_TRUE(d->suspected);
  EXPECT_FALSE(d->updated_drift);
  EXPECT_FALSE(d->opened_drift);
}

TEST(Decision, ACreepNightByNightIsOneDriftNotAStaircaseOfSteps) {
  Series s;
  s.Level(400, 20);
  LiveRegressions live;
  int opened = 0;
  for (int k = 1; k <= 60; ++k) {
    s.Add(400 * (1.0 + 0.003 * k) * (1.0 + 0.01 * ((k * 7) % 5 - 2) / 2.0));
    auto d = Decide(s.last(), s.points(), live, AnalyzerOptions{});
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(d->suspected) << "night " << k << " opened a step";
    if (d->opened_drift) {
      ++opened;
      live.drift = LiveDrift(20 + k);
    }
  }
  EXPECT_EQ(opened, 1);
}

TEST(Decision, AnOperatorSeriesThatDriftsTooIsAChildOfTheDrift) {
  Series op;
  op.Level(100, 20).Creep(100, 0.004, 30);
  auto change =
      OperatorDrift(op.last(), "device_us_per_step", "aten::mul", op.points(), AnalyzerOptions{});
  ASSERT_TRUE(change);
  EXPECT_EQ(change->op, "aten::mul");
  EXPECT_GT(change->relative_change, 0.05);
  Series flat;
  flat.Level(100, 50);
  EXPECT_FALSE(OperatorDrift(flat.last(), "device_us_per_step", "aten::mul", flat.points(),
                             AnalyzerOptions{}));
}

TEST(Decision, AnOperatorDriftsChangeIsRelativeToItsRobustLevelNotItsFittedStart) {
  // The drift's figure is the fitted rise over the creep's robust level (the median of its
  // runs), as the detector reports it (issue 21): never over the fitted start, which can be
  // near or below zero. On a rising creep the median lies above the start, so the figure is
  // smaller than (end - start) / start.
  Series op;
  op.Level(100, 20).Creep(100, 0.004, 30);
  auto change =
      OperatorDrift(op.last(), "device_us_per_step", "aten::mul", op.points(), AnalyzerOptions{});
  ASSERT_TRUE(change);
  const double from_start = (change->after - change->before) / change->before;
  EXPECT_GT(change->relative_change, 0.0);
  EXPECT_LT(change->relative_change, from_start - 0.003) << "taken from the fitted start";
}

TEST(Decision, ConfidenceIsOneMinusTheOneSidedP) {
  EXPECT_NEAR(ConfidenceOf(0.0), 0.5, 1e-12);
  EXPECT_NEAR(ConfidenceOf(1.6449), 0.95, 1e-4);
}

}  // namespace
}  // namespace devtime::analyze
