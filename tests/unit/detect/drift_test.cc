#include "services/collector/detect/drift.h"

#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/collector/detect/detect.h"
#include "tests/bench/detect/generator.h"

namespace devtime::detect {
namespace {

using ::testing::IsEmpty;

// 1000 x (1 + creep) x (1 + noise N(0, noise)): flat until `from`, then a linear creep that
// reaches `total` at the last run.
std::vector<Point> Creep(size_t n, size_t from, double total, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<Point> points(n);
  for (size_t i = 0; i < n; ++i) {
    const double creep =
        i < from ? 0.0 : total * static_cast<double>(i - from + 1) / static_cast<double>(n - from);
    const double level = 1000.0 * (1.0 + creep);
    points[i].value = level * (1.0 + noise * gauss(rng));
    points[i].noise = level * 0.02;
  }
  return points;
}

TEST(MannKendall, MatchesTheDefinitionWithTies) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> small(0, 6);  // many ties
  std::vector<double> x(80);
  for (double& v : x) v = small(rng);
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) s += (x[j] > x[i]) - (x[j] < x[i]);
  }
  const MannKendall mk = MannKendallS(x);
  EXPECT_EQ(mk.s, s);
  const double n = 80.0;
  EXPECT_LT(mk.variance, n * (n - 1) * (2 * n + 5) / 18.0);  // ties reduce it
  const std::vector<double> rising = {1, 2, 3, 4, 5};
  EXPECT_EQ(MannKendallS(rising).s, 10.0);
  EXPECT_EQ(MannKendallS(rising).tau, 1.0);
}

TEST(TheilSen, IsTheSlopeOfALineAndIgnoresAnOutlier) {
  std::vector<double> at, x;
  for (int i = 0; i < 50; ++i) {
    at.push_back(2.0 * i);
    x.push_back(3.0 + 0.5 * at.back());
  }
  EXPECT_DOUBLE_EQ(TheilSenSlope(at, x), 0.5);
  x[25] += 1000.0;
  EXPECT_DOUBLE_EQ(TheilSenSlope(at, x), 0.5);
}

TEST(HingeStart, FindsWhereTheCreepBegins) {
  std::vector<double> at, x;
  for (int i = 0; i < 200; ++i) {
    at.push_back(i);
    x.push_back(i < 120 ? 10.0 : 10.0 + 0.1 * (i - 120));
  }
  EXPECT_EQ(HingeStart(at, x, 190), 120u);
  const Hinge hinge = HingeFit(at, x, 190);  // and its line from there
  EXPECT_NEAR(hinge.level, 10.0, 1e-9);
  EXPECT_NEAR(hinge.slope, 0.1, 1e-9);
  EXPECT_NEAR(hinge.rss, 0.0, 1e-9);
}

TEST(DetectDrift, ReportsTheSlopePerThirtyRunsOfALinearCreep) {
  const auto points = Creep(200, 0, 0.10, 0.01, 2);
  auto drift = DetectDrift(points, {});
  ASSERT_TRUE(drift.ok()) << drift.status();
  ASSERT_TRUE(drift->has_value());
  const Drift& d = **drift;
  EXPECT_LE(d.start_index, 10u);
  EXPECT_EQ(d.end_index, 199u);
  EXPECT_NEAR(d.relative_change, 0.10, 0.02);
  EXPECT_NEAR(d.slope_per_30, 0.10 * 30 / 200, 0.003);
  EXPECT_GT(d.kendall_tau, 0.5);
  EXPECT_LT(d.p_value, 1e-6);
  EXPECT_DOUBLE_EQ(d.confidence, 1.0 - d.p_value);
}

TEST(DetectDrift, StartsWhereTheSeriesStartsToCreep) {
  const auto points = Creep(300, 150, -0.08, 0.01, 3);
  auto drift = DetectDrift(points, {});
  ASSERT_TRUE(drift.ok());
  ASSERT_TRUE(drift->has_value());
  EXPECT_NEAR(static_cast<double>((*drift)->start_index), 150.0, 15.0);
  EXPECT_LT((*drift)->slope, 0.0);
  EXPECT_NEAR((*drift)->relative_change, -0.08, 0.02);
}

TEST(DetectDrift, NoneOnStationaryNoiseOrBelowTheMinimumEffect) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto flat = DetectDrift(Creep(300, 0, 0.0, 0.02, 10 + seed), {});
    ASSERT_TRUE(flat.ok());
    EXPECT_FALSE(flat->has_value()) << seed;
  }
  // 0.5 % over 2000 runs at 0.1 % noise: significant, but under min_relative_change (1 %).
  auto tiny = DetectDrift(Creep(2000, 0, 0.005, 0.001, 4), {});
  ASSERT_TRUE(tiny.ok());
  EXPECT_FALSE(tiny->has_value());
  DetectorOptions loose;
  loose.min_relative_change = 0.002;
  loose.min_within_noise_ratio = 0.0;
  EXPECT_TRUE(DetectDrift(Creep(2000, 0, 0.005, 0.001, 4), loose)->has_value());
}

TEST(DetectDrift, ARandomWalkIsNotADrift) {
  // A wandering level: each run moves it by N(0, 0.3 %), plus 1 % measurement noise. Without
  // the serial-dependence correction most of these are "significant trends".
  int drifts = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> gauss(0.0, 1.0);
    std::vector<Point> points(300);
    double level = 1000.0;
    for (Point& p : points) {
      level *= 1.0 + 0.003 * gauss(rng);
      p.value = level * (1.0 + 0.01 * gauss(rng));
    }
    drifts += DetectDrift(points, {})->has_value() ? 1 : 0;
  }
  EXPECT_LE(drifts, 10);
}

// A creep over the last few dozen runs of a long flat history, 6-7 noise sigmas in all: the
// autocorrelation correction comes from the residuals of the hinge fitted, not of one straight
// line through the flat runs and the creep, whose long runs of one sign made it insignificant
// and nothing was reported (none of these 40; the quality bench's recent creep row: 0.0-0.2 %).
TEST(DetectDrift, ACreepOverTheLastFewDozenRunsIsReported) {
  size_t found = 0, near_start = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (const auto& [from, total] : {std::pair<size_t, double>{240, 0.07}, {270, 0.06}}) {
      const auto drift = DetectDrift(Creep(300, from, total, 0.01, 500 + seed), {});
      ASSERT_TRUE(drift.ok()) << drift.status();
      if (!drift->has_value()) continue;
      ++found;
      const size_t start = (*drift)->start_index;
      near_start += (start > from ? start - from : from - start) <= 5 ? 1 : 0;
    }
  }
  EXPECT_GE(found, 34u);       // 36 today
  EXPECT_GE(near_start, 30u);  // 34 within 5 runs of where the creep starts
}

TEST(DetectDrift, ShortSpansOtavaModeAndBadOptions) {
  EXPECT_FALSE(DetectDrift(Creep(15, 0, 0.2, 0.001, 5), {})->has_value());
  DetectorOptions otava;
  otava.mode = Mode::kOtava;
  EXPECT_FALSE(DetectDrift(Creep(200, 0, 0.2, 0.01, 5), otava)->has_value());
  DetectorOptions bad;
  bad.drift_max_pvalue = 0.0;
  EXPECT_EQ(DetectDrift({}, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DetectDrift, OneLevelJumpIsNotADrift) {
  // A 0.8 % step at 0.2 % noise: Mann-Kendall calls it a monotone trend, below the 1 %
  // minimum it is no step either; a step fits it better than any creep, so it is no drift.
  auto points = Creep(300, 0, 0.0, 0.002, 9);
  for (size_t i = 180; i < points.size(); ++i) points[i].value *= 1.008;
  EXPECT_FALSE(DetectDrift(points, {})->has_value());
  auto findings = Analyze(points, {});
  ASSERT_TRUE(findings.ok());
  EXPECT_THAT(*findings, IsEmpty());
  // A creep of the same size over the same runs still is one.
  EXPECT_TRUE(DetectDrift(Creep(300, 180, 0.02, 0.002, 9), {})->has_value());
}

TEST(StepRss, IsZeroForTwoExactLevelsAndBelowTheHingeThere) {
  std::vector<double> at, x;
  for (int i = 0; i < 40; ++i) {
    at.push_back(i);
    x.push_back(i < 25 ? 1.0 : 3.0);
  }
  EXPECT_DOUBLE_EQ(StepRss(x, 3), 0.0);
  EXPECT_GT(HingeFit(at, x, 30).rss, 1.0);
  EXPECT_EQ(StepRss(std::vector<double>{1.0, 2.0}, 3), std::numeric_limits<double>::infinity());
}

TEST(Analyze, ADriftingSeriesIsOneDriftFindingAndNoSteps) {
  // +10 % over 300 nightly runs: before issue 13 this was a staircase of 4-7 steps.
  const auto points = Creep(300, 0, 0.10, 0.01, 6);
  auto findings = Analyze(points, {});
  ASSERT_TRUE(findings.ok());
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ((*findings)[0].kind, FindingKind::kDrift);
  EXPECT_EQ(FindingKindName((*findings)[0].kind), "drift");
  EXPECT_EQ((*findings)[0].index, (*findings)[0].drift.start_index);
  EXPECT_THAT(*Detect(points, {}), IsEmpty());
}

TEST(Analyze, AStepThenACreepIsAStepAndADriftAfterIt) {
  auto points = Creep(300, 150, 0.10, 0.01, 7);
  for (size_t i = 0; i < 80; ++i) points[i].value /= 1.2;  // a 20 % step at run 80
  auto findings = Analyze(points, {});
  ASSERT_TRUE(findings.ok());
  ASSERT_EQ(findings->size(), 2u);
  EXPECT_EQ((*findings)[0].kind, FindingKind::kStep);
  EXPECT_EQ((*findings)[0].index, 80u);
  EXPECT_EQ(FindingKindName((*findings)[0].kind), "step");
  EXPECT_EQ((*findings)[1].kind, FindingKind::kDrift);
  EXPECT_NEAR(static_cast<double>((*findings)[1].index), 150.0, 15.0);
  // The gate's view: the drift since the last step, in indices of the whole history.
  auto current = CurrentDrift(points, {});
  ASSERT_TRUE(current.ok());
  ASSERT_TRUE(current->has_value());
  EXPECT_EQ((*current)->start_index, (*findings)[1].drift.start_index);
  EXPECT_EQ((*current)->end_index, 299u);
}

TEST(TurnFit, FindsWhereALineTurnsAndItsSlopes) {
  // Runs 0..99 with run 30 missing; up 0.5 a run to run 60, then down 0.25 a run.
  std::vector<double> at, x;
  for (size_t i = 0; i < 100; ++i) {
    if (i == 30) continue;
    const double t = static_cast<double>(i);
    at.push_back(t);
    x.push_back(i < 60 ? 10.0 + 0.5 * t : 40.0 - 0.25 * (t - 60.0));
  }
  const Turn turn = TurnFit(at, x, 20);
  ASSERT_GT(turn.at, 0u);
  EXPECT_EQ(at[turn.at], 60.0);
  EXPECT_NEAR(turn.slope_before, 0.5, 1e-9);
  EXPECT_NEAR(turn.slope_after, -0.25, 1e-9);
  EXPECT_NEAR(turn.level, 40.0, 1e-9);
  EXPECT_NEAR(turn.rss, 0.0, 1e-6);
  EXPECT_GT(turn.line_rss, 100.0);
  EXPECT_EQ(TurnFit(at, x, 50).at, 0u);  // no turn leaves 50 runs on both sides of 99
}

// 1000 x (1 + noise N(0, noise)) on a level that moves by `first` (relative) over runs
// [0, turn) and then by `second` over [turn, n): a turn.
std::vector<Point> Turning(size_t n, size_t turn, double first, double second, double noise,
                           uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<Point> points(n);
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    const double level =
        i < turn
            ? 1000.0 * (1.0 + first * t / static_cast<double>(turn))
            : 1000.0 * (1.0 + first) *
                  (1.0 + second * (t - static_cast<double>(turn)) / static_cast<double>(n - turn));
    points[i].value = level * (1.0 + noise * gauss(rng));
    points[i].noise = level * 0.02;
  }
  return points;
}

// A series that improved by 6 % over 180 runs and has regressed by 6 % since: over the whole,
// Mann-Kendall sees no monotone trend, and nothing at all was reported (the quality bench's
// turn row: a drift in 0 of 1000 series, now in all). Each leg is a drift; the gate's current
// drift is the regression.
TEST(Analyze, AnImprovementThatTurnsIntoARegressionIsTwoDrifts) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE(seed);
    const auto points = Turning(300, 180, -0.06, 0.06, 0.01, 40 + seed);
    auto findings = Analyze(points, {});
    ASSERT_TRUE(findings.ok());
    ASSERT_EQ(findings->size(), 2u);
    const Drift& improved = (*findings)[0].drift;
    const Drift& regressed = (*findings)[1].drift;
    EXPECT_EQ((*findings)[0].kind, FindingKind::kDrift);
    EXPECT_EQ((*findings)[1].kind, FindingKind::kDrift);
    EXPECT_LT(improved.relative_change, -0.03);
    EXPECT_GT(regressed.relative_change, 0.03);
    EXPECT_NEAR(static_cast<double>(regressed.start_index), 180.0, 30.0);
    auto current = CurrentDrift(points, {});
    ASSERT_TRUE(current.ok());
    ASSERT_TRUE(current->has_value());
    EXPECT_EQ((*current)->start_index, regressed.start_index);
    EXPECT_EQ((*current)->end_index, 299u);
  }
}

// A creep over the last 30-60 runs (the quality bench's recent creep row, seed base 1001):
// the search cut it into steps, and a step goes only where the creep that replaces it is
// reported (CreepsWhereGone). That asked DetectDrift alone, and where the flat runs before
// the creep rise a little, the span turns and Mann-Kendall over all of it sees no creep: in
// these 4 of 1000 series one or two steps stayed in place of the drift. It now asks what
// Analyze reports for the span, a turn's legs included.
TEST(Analyze, AStaircaseAlongACreepAfterARiseIsTheCreep) {
  bench::Scenario creep;
  creep.Steps(0, 0).LabelledDrift(0.05, 0.10);
  creep.drift_runs_lo = 30;
  creep.drift_runs_hi = 60;
  creep.seed = 1034;
  creep.series = 823;
  const auto all = bench::Generate(creep);
  for (size_t i : {259u, 448u, 473u, 822u}) {
    SCOPED_TRACE(i);
    auto findings = Analyze(all[i].points, {});
    ASSERT_TRUE(findings.ok());
    ASSERT_EQ(findings->size(), 1u);
    EXPECT_EQ((*findings)[0].kind, FindingKind::kDrift);
    EXPECT_GE((*findings)[0].drift.start_index, all[i].drift_start - 10);
  }
}

// A walk wanders, and turns everywhere: its turns must not read as pairs of drifts. The
// quality bench's 0.3 %/run walks at 1 % noise, 200 series: 71 drift findings, against 66
// before turns were looked for; with a turn accepted at BIC's 2 log n instead of
// kTurnEvidence, 139 (8 log n: 96).
TEST(Analyze, ARandomWalksTurnsAreNoDrifts) {
  bench::Scenario walk;
  walk.Steps(0, 0).Noise(0.01, 0.01);
  walk.random_walk = 0.003;
  walk.seed = 1020;
  walk.series = 200;
  size_t drifts = 0;
  for (const auto& series : bench::Generate(walk)) {
    auto findings = Analyze(series.points, {});
    ASSERT_TRUE(findings.ok());
    for (const Finding& f : *findings) drifts += f.kind == FindingKind::kDrift ? 1 : 0;
  }
  EXPECT_LE(drifts, 80u);
}

// Counts of each kind of finding.
struct Kinds {
  size_t steps = 0, drifts = 0;
};
Kinds CountKinds(const std::vector<Finding>& findings) {
  Kinds k;
  for (const Finding& f : findings) ++(f.kind == FindingKind::kStep ? k.steps : k.drifts);
  return k;
}

TEST(Analyze, ASlowCreepIsOneDriftNotAStaircase) {
  // Small creeps (3-5 % over 200-300 runs, 3-5 sigma in all), where each step of the staircase
  // passed its test between its neighbours: before the staircase check these gave 2-3 steps.
  struct Case {
    uint64_t seed;
    size_t from;
    double total;
  };
  for (const Case& c :
       {Case{20, 100, 0.05}, Case{28, 0, 0.05}, Case{41, 0, 0.05}, Case{14, 100, 0.03}}) {
    SCOPED_TRACE(c.seed);
    auto findings = Analyze(Creep(300, c.from, c.total, 0.01, c.seed), {});
    ASSERT_TRUE(findings.ok());
    const Kinds kinds = CountKinds(*findings);
    EXPECT_EQ(kinds.steps, 0u);
    EXPECT_EQ(kinds.drifts, 1u);
  }
}

TEST(Analyze, AStepOnACreepStaysAStepAndTheCreepsStaircaseGoes) {
  // +10 % over 300 runs with a 6 % step at run 150: before, the creep before the step was
  // also read as steps at 35, 86 and 118.
  auto points = Creep(300, 0, 0.10, 0.01, 4);
  for (size_t i = 150; i < 300; ++i) points[i].value *= 1.06;
  auto findings = Analyze(points, {});
  ASSERT_TRUE(findings.ok());
  const Kinds kinds = CountKinds(*findings);
  EXPECT_EQ(kinds.steps, 1u);
  EXPECT_EQ(kinds.drifts, 2u);  // the creep on either side of the step
  for (const Finding& f : *findings) {
    if (f.kind == FindingKind::kStep) {
      EXPECT_EQ(f.index, 150u);
    }
  }
}

TEST(Analyze, CloseStepsInOneDirectionNearTheEndStaySteps) {
  // Two 3 % steps 30 runs apart in the last 60 runs: a late ramp fits them about as well,
  // but not by the evidence a trend needs to replace steps.
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    auto points = Creep(300, 0, 0.0, 0.01, seed);
    for (size_t i = 240; i < 300; ++i) points[i].value *= 1.03;
    for (size_t i = 270; i < 300; ++i) points[i].value *= 1.03;
    auto findings = Analyze(points, {});
    ASSERT_TRUE(findings.ok());
    ASSERT_EQ(findings->size(), 2u);
    EXPECT_EQ((*findings)[0].kind, FindingKind::kStep);
    EXPECT_EQ((*findings)[0].index, 240u);
    EXPECT_EQ((*findings)[1].kind, FindingKind::kStep);
    EXPECT_EQ((*findings)[1].index, 270u);
  }
}

TEST(Analyze, OtavaModeHasStepsOnly) {
  DetectorOptions otava;
  otava.mode = Mode::kOtava;
  auto findings = Analyze(Creep(300, 0, 0.10, 0.01, 8), otava);
  ASSERT_TRUE(findings.ok());
  EXPECT_FALSE(findings->empty());  // its staircase
  for (const Finding& f : *findings) EXPECT_EQ(f.kind, FindingKind::kStep);
}

// A convex rise (growth that speeds up) from near zero: the Theil-Sen line's value at the
// start is below zero, and today's figures, relative to that intercept, had the wrong sign
// (-1,170 % per 30 runs on a rising series). They are relative to the creep's robust level,
// so they carry the slope's sign and a size that means something.
TEST(DetectDrift, FiguresAreRelativeToTheRobustLevelWithTheSlopesSign) {
  std::vector<Point> points(200);
  for (size_t i = 0; i < points.size(); ++i) {
    const double t = static_cast<double>(i);
    points[i].value = 1.0 + 0.01 * t * t * (1.0 + 0.002 * std::sin(1.7 * t));
  }
  const auto drift = DetectDrift(points, DetectorOptions{});
  ASSERT_TRUE(drift.ok()) << drift.status();
  ASSERT_TRUE(drift->has_value());
  const Drift& d = **drift;
  EXPECT_GT(d.slope, 0.0);
  EXPECT_GT(d.level, 0.0);
  EXPECT_GT(d.slope_per_30, 0.0);
  EXPECT_GT(d.relative_change, 0.0);
  EXPECT_NEAR(d.slope_per_30, 30.0 * d.slope / d.level, 1e-12);
  EXPECT_NEAR(d.relative_change, (d.end_value - d.start_value) / d.level, 1e-12);
}

}  // namespace
}  // namespace devtime::detect
