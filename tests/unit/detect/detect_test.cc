#include "services/collector/detect/detect.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/collector/detect/robust.h"
#include "tests/bench/detect/generator.h"

namespace devtime::detect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// level x (1 + noise N(0, noise_fraction)), with level multiplied by (1 + step) at each start.
std::vector<Point> Series(size_t n, double noise_fraction,
                          std::vector<std::pair<size_t, double>> steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<Point> points(n);
  double level = 1000.0;
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (next < steps.size() && steps[next].first == i) level *= 1.0 + steps[next++].second;
    points[i].value = level * (1.0 + noise_fraction * gauss(rng));
    points[i].noise = level * 0.03;
  }
  return points;
}

std::vector<size_t> Indices(const std::vector<ChangePoint>& cps) {
  std::vector<size_t> out;
  for (const auto& cp : cps) out.push_back(cp.index);
  return out;
}

std::vector<size_t> DetectIndices(const std::vector<Point>& points, const DetectorOptions& o = {}) {
  auto cps = Detect(points, o);
  EXPECT_TRUE(cps.ok()) << cps.status();
  return cps.ok() ? Indices(*cps) : std::vector<size_t>{};
}

TEST(Detect, FindsStepsAtTheFirstBadRun) {
  const auto points = Series(200, 0.01, {{60, 0.05}, {140, -0.08}}, 1);
  auto cps = Detect(points, {});
  ASSERT_TRUE(cps.ok());
  ASSERT_THAT(Indices(*cps), ElementsAre(60, 140));
  const ChangePoint& first = (*cps)[0];
  EXPECT_EQ(first.previous_index, 59u);
  EXPECT_NEAR(first.relative_change, 0.05, 0.01);
  EXPECT_NEAR(first.before_mean, 1000.0, 5.0);
  EXPECT_LT(first.p_value, 1e-6);
  EXPECT_GT(first.t_statistic, 0.0);
  EXPECT_EQ(first.before_count, 60u);
  EXPECT_EQ(first.after_count, 80u);
  EXPECT_LT((*cps)[1].relative_change, 0.0);
}

TEST(Detect, StationaryNoiseHasNoChangePoints) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_THAT(DetectIndices(Series(300, 0.02, {}, 100 + seed)), IsEmpty()) << seed;
  }
}

TEST(Detect, SingleSpikesAreNotChangePoints) {
  auto points = Series(120, 0.01, {}, 2);
  points[30].value *= 1.3;
  points[31].value *= 1.25;  // two in a row
  points[80].value *= 0.6;
  points[1].value *= 2.0;
  EXPECT_THAT(DetectIndices(points), IsEmpty());
  // Otava's reference mode (with its old defaults) does report spikes.
  DetectorOptions otava;
  otava.mode = Mode::kOtava;
  otava.otava_window = 30;
  otava.otava_max_pvalue = 0.05;
  EXPECT_THAT(DetectIndices(points, otava), ::testing::Not(IsEmpty()));
}

// Two spikes in a row next to the first run: its three neighbours' median was a spike, and
// the first run, a plain one, was replaced by it. The 26-sigma spike left at run 0 then made
// the random-walk screen (whose innovations are clipped, where the segments' residuals are
// not) prefer a walk, and every step of the series was dropped (quality bench, 5 % steps with
// outlier runs: 5 of 3,000 series reported nothing).
TEST(Detect, TwoSpikesBesideTheFirstRunDoNotReplaceIt) {
  auto points = Series(300, 0.01, {{95, 0.05}, {240, -0.05}, {279, 0.05}}, 7);
  points[1].value *= 1.27;
  points[2].value *= 1.30;
  for (size_t i : {7u, 27u, 142u, 235u}) points[i].value *= 1.31;
  // Within +-2 runs, the margin the quality bench scores.
  auto near = [](size_t at) {
    return ::testing::AllOf(::testing::Ge(at - 2), ::testing::Le(at + 2));
  };
  EXPECT_THAT(DetectIndices(points), ElementsAre(near(95), near(240), near(279)));
  std::reverse(points.begin(), points.end());  // the same beside the last run
  EXPECT_THAT(DetectIndices(points), ElementsAre(near(300 - 279), near(300 - 240), near(300 - 95)));
}

TEST(Detect, MissingNightsAreSkippedAndIndicesStayInputIndices) {
  auto points = Series(100, 0.01, {{50, 0.1}}, 3);
  for (size_t i : {10u, 11u, 48u, 49u, 50u, 77u}) points[i].value = std::nan("");
  auto cps = Detect(points, {});
  ASSERT_TRUE(cps.ok());
  ASSERT_THAT(Indices(*cps), ElementsAre(51));
  EXPECT_EQ((*cps)[0].previous_index, 47u);
  EXPECT_EQ((*cps)[0].before_count, 46u);  // 0..47 less two missing nights
}

TEST(Detect, MinimumEffectSizeAndWithinRunNoise) {
  // 0.5 % step at 0.1 % noise: statistically clear, but below the 1 % minimum.
  const auto small = Series(200, 0.001, {{100, 0.005}}, 4);
  EXPECT_THAT(DetectIndices(small), IsEmpty());
  DetectorOptions loose;
  loose.min_relative_change = 0.002;
  loose.min_within_noise_ratio = 0.0;  // the series' within-run noise (3 %) would block it
  EXPECT_THAT(DetectIndices(small, loose), ElementsAre(100));
  // A 3 % step when each run's own step-to-step stddev is 40 %: under 0.25 x within noise.
  auto jittery = Series(200, 0.005, {{100, 0.03}}, 5);
  for (Point& p : jittery) p.noise = 0.4 * p.value;
  EXPECT_THAT(DetectIndices(jittery), IsEmpty());
  EXPECT_THAT(DetectIndices(jittery, loose), ElementsAre(100));
}

TEST(Detect, ASmallStepStillSeparatesTheStepsNextToIt) {
  // A staircase of real steps: +1.5 % at 100, +0.8 % at 200 (significant, but under the 1 %
  // minimum), +1.5 % at 250. The small one is not reported, but its neighbours are judged
  // with it in place: merged into one segment, three levels look like a trend, and the step
  // at 250 was lost in 3 of these 20 series.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    const auto points = Series(300, 0.002, {{100, 0.015}, {200, 0.008}, {250, 0.015}}, seed);
    EXPECT_THAT(DetectIndices(points), ElementsAre(100, 250));
  }
}

TEST(Detect, LocatesSmallStepsWithinTwoRuns) {
  // A 2 % step at 1 % noise in each of 200 series. On average the best single position
  // (least squares) is within +-2 runs in about 94 % of such series, the position with the
  // most posterior mass around it (step 5) in about 96.5 %; on these 200, 193 and 198.
  size_t within = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const size_t at = 40 + 11 * seed % 220;
    const auto found = DetectIndices(Series(300, 0.01, {{at, 0.02}}, 100 + seed));
    for (size_t index : found) within += index + 2 >= at && index <= at + 2 ? 1 : 0;
  }
  EXPECT_GE(within, 195u);  // 97.5 %
}

TEST(Detect, ShortAndDegenerateInputs) {
  EXPECT_THAT(DetectIndices({}), IsEmpty());
  EXPECT_THAT(DetectIndices(Series(5, 0.01, {}, 6)), IsEmpty());
  std::vector<Point> constant(50, Point{5.0, 0.0});
  EXPECT_THAT(DetectIndices(constant), IsEmpty());
  for (size_t i = 25; i < 50; ++i) constant[i].value = 6.0;
  EXPECT_THAT(DetectIndices(constant), ElementsAre(25));
  std::vector<Point> missing(30);
  EXPECT_THAT(DetectIndices(missing), IsEmpty());
}

TEST(Detect, RejectsBadOptions) {
  DetectorOptions options;
  options.max_pvalue = 0.0;
  EXPECT_EQ(Detect({}, options).status().code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.gate_min_history = 100;
  EXPECT_THAT(std::string(ValidateOptions(options).message()),
              ::testing::HasSubstr("gate_min_history"));
  EXPECT_FALSE(Detector::Create(options).ok());
}

// Series() with a shape on top: level x shape(i).
template <typename Shape>
std::vector<Point> Shaped(size_t n, double noise_fraction, uint64_t seed, Shape shape) {
  auto points = Series(n, noise_fraction, {}, seed);
  for (size_t i = 0; i < n; ++i) points[i].value *= shape(i);
  return points;
}

TEST(DetectShape, ATrendIsNotAStaircase) {
  // +10 % over 300 runs at 1 % noise: 4-7 "steps" without the shape test.
  const auto trend =
      Shaped(300, 0.01, 20, [](size_t i) { return 1.0 + 0.1 * static_cast<double>(i) / 300.0; });
  EXPECT_THAT(DetectIndices(trend), IsEmpty());
  DetectorOptions without;
  without.shape_test = false;
  EXPECT_GE(DetectIndices(trend, without).size(), 3u);
}

TEST(DetectShape, AStepOnATrendIsStillAStep) {
  auto points =
      Shaped(300, 0.01, 21, [](size_t i) { return 1.0 + 0.1 * static_cast<double>(i) / 300.0; });
  for (size_t i = 180; i < 300; ++i) points[i].value *= 1.05;
  EXPECT_THAT(DetectIndices(points), ElementsAre(180));
}

TEST(DetectShape, ARandomWalkIsNotCutEveryFewRuns) {
  size_t with = 0, without = 0;
  DetectorOptions off;
  off.shape_test = false;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(300 + seed);
    std::normal_distribution<double> gauss(0.0, 1.0);
    double walk = 1.0;
    const auto points = Shaped(300, 0.005, 30 + seed, [&](size_t) {
      walk *= 1.0 + 0.01 * gauss(rng);
      return walk;
    });
    with += DetectIndices(points).size();
    without += DetectIndices(points, off).size();
  }
  EXPECT_LE(with, 20u);      // <= 1 per series on average
  EXPECT_GE(without, 100u);  // the staircase the shape test removes
}

TEST(DetectShape, ARepeatingCycleHasNoChangePoints) {
  for (size_t period : {7u, 12u}) {
    const auto cycle = Shaped(300, 0.01, 40 + period, [period](size_t i) {
      return 1.0 + 0.05 * std::sin(2.0 * 3.141592653589793 * static_cast<double>(i) /
                                   static_cast<double>(period));
    });
    EXPECT_THAT(DetectIndices(cycle), IsEmpty()) << period;
  }
}

TEST(DetectShape, ASplitInTheLastFewRunsNeedsStrongEvidence) {
  // 4 runs at +2.8 % after 96 flat ones at 1 % noise: p ~ 3e-5 after the choice of split,
  // enough inside the history, not for a segment shorter than edge_segment at its end. (The
  // shape test alone also refuses it: a ramp through 4 runs fits as well; it is off here to
  // test the edge rule by itself.)
  auto points = Series(100, 0.01, {}, 50);
  for (size_t i = 96; i < 100; ++i) points[i].value = 1028.0 + (i % 2 ? 3.0 : -3.0);
  DetectorOptions edge;
  edge.shape_test = false;
  EXPECT_THAT(DetectIndices(points, edge), IsEmpty());
  DetectorOptions lenient = edge;
  lenient.edge_pvalue_factor = 1.0;
  EXPECT_THAT(DetectIndices(points, lenient), ElementsAre(96));
  for (size_t i = 96; i < 100; ++i) points[i].value *= 1.1;  // a clear 13 % jump
  EXPECT_THAT(DetectIndices(points), ElementsAre(96));
}

// A short segment at either end of the history is a few runs whose mean the t-test takes as
// Gaussian; their tails (bimodal runs, spikes the outlier screen leaves in clusters, the end of
// a slow creep) make a chance end segment pass more often than its p says (quality bench:
// stationary series with dirt and with a slow drift, false steps 3 to 15 runs from an end).
// 10 runs at +1.6 % after 290 flat ones at 1 % noise: p ~ 1e-4 after the choice of split,
// enough inside the history, not for a segment of fewer than edge_segment runs at its end;
// a clear 5 % jump there is still found.
TEST(DetectShape, ASplitInTheLastDozenRunsNeedsStrongEvidence) {
  auto points = Series(300, 0.01, {}, 51);
  for (size_t i = 290; i < 300; ++i) points[i].value = 1016.0 + (i % 2 ? -10.0 : 10.0);
  EXPECT_THAT(DetectIndices(points), IsEmpty());
  DetectorOptions lenient;
  lenient.edge_pvalue_factor = 1.0;
  EXPECT_THAT(DetectIndices(points, lenient), ElementsAre(290));
  for (size_t i = 290; i < 300; ++i) points[i].value *= 1.034;  // a clear 5 % jump
  EXPECT_THAT(DetectIndices(points), ElementsAre(290));
}

// Issue 21: the patterns today's detector lost, each measured on data it was not tuned for.

// The repro and its mirror: a +-10 % creep over 300 runs with a step of the other
// sign at run 150 (1 % deterministic jitter). Two levels have about the same means there, so
// the two-level search saw nothing, and the creep test saw a broken line: today nothing at
// all was reported (the mirror: only a drift). Fitted jointly, the step is found at the
// break and the drift on both sides.
std::vector<Point> CreepWithStep(double creep, double step) {
  std::vector<Point> points(300);
  for (size_t t = 0; t < points.size(); ++t) {
    const double i = static_cast<double>(t);
    points[t].value = 10.0 * (1.0 + creep * i / 299.0) * (t >= 150 ? 1.0 + step : 1.0) *
                      (1.0 + 0.01 * std::sin(1.7 * i));
  }
  return points;
}

TEST(DetectJoint, AStepUnderADriftOfTheOtherSignIsFoundWithTheDrift) {
  for (const auto& [creep, step] : {std::pair{0.1, -0.05}, std::pair{-0.1, 0.05}}) {
    SCOPED_TRACE(testing::Message() << "creep " << creep << ", step " << step);
    const auto findings = Analyze(CreepWithStep(creep, step), {});
    ASSERT_TRUE(findings.ok()) << findings.status();
    std::vector<size_t> steps;
    size_t drifts = 0;
    for (const Finding& f : *findings) {
      if (f.kind == FindingKind::kStep) {
        steps.push_back(f.index);
        // The levels at the break, not the segments' means (which hardly differ here).
        EXPECT_NEAR(f.step.relative_change, step, 0.01);
      } else {
        ++drifts;
        EXPECT_EQ(f.drift.slope > 0.0, creep > 0.0);
      }
    }
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_NEAR(static_cast<double>(steps[0]), 150.0, 2.0);
    EXPECT_GE(drifts, 1u);
  }
}

TEST(DetectJoint, StepsUnderNoisyDriftsOfEitherSignAreFound) {
  size_t found = 0, total = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const double sign = seed % 2 == 0 ? 1.0 : -1.0;
    const size_t at = 110 + 4 * seed;
    auto points = Shaped(300, 0.01, 500 + seed, [&](size_t i) {
      return (1.0 + sign * 0.08 * static_cast<double>(i) / 300.0) *
             (i >= at ? 1.0 - sign * 0.05 : 1.0);
    });
    const auto found_at = DetectIndices(points);
    ++total;
    for (size_t i : found_at) found += (i + 2 >= at && i <= at + 2) ? 1 : 0;
  }
  EXPECT_GE(found, 19u) << "of " << total;  // today: 7 of 20
}

// A trend that turns flat, with a step later on. Today the step was folded into the drift
// (nothing reported), or reported at the trend's turning point with a "before" mean over the
// whole ramp; it is found at the break, with the levels on either side of it.
TEST(DetectJoint, AStepAfterATrendsTurningPointIsLocatedAtTheBreak) {
  for (size_t at : {190u, 250u}) {
    SCOPED_TRACE(at);
    std::vector<Point> points(300);
    for (size_t t = 0; t < points.size(); ++t) {
      const double ramp = 1.0 + 0.2 * static_cast<double>(std::min<size_t>(t, 150)) / 150.0;
      points[t].value = 1000.0 * ramp * (t >= at ? 0.95 : 1.0) *
                        (1.0 + 0.01 * std::sin(1.7 * static_cast<double>(t)));
    }
    const auto cps = Detect(points, {});
    ASSERT_TRUE(cps.ok());
    ASSERT_EQ(cps->size(), 1u);
    const ChangePoint& cp = cps->front();
    EXPECT_NEAR(static_cast<double>(cp.index), static_cast<double>(at), 2.0);
    EXPECT_NEAR(cp.before_mean, 1200.0, 12.0);  // the flat level after the ramp
    EXPECT_NEAR(cp.after_mean, 1140.0, 12.0);
    EXPECT_NEAR(cp.relative_change, -0.05, 0.01);
  }
}

// A random walk of 0.3 % per run under 1 % noise (a noisy shared host): today 24.8 false
// change points per 10,000 runs; the walk-aware test keeps its wander from reading as steps.
TEST(DetectWalk, ASlowRandomWalkIsNotCut) {
  size_t found = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::mt19937_64 rng(700 + seed);
    std::normal_distribution<double> gauss(0.0, 1.0);
    double walk = 1.0;
    const auto points = Shaped(300, 0.01, 800 + seed, [&](size_t) {
      walk *= 1.0 + 0.003 * gauss(rng);
      return walk;
    });
    found += DetectIndices(points).size();
  }
  EXPECT_LE(found, 6u);  // in 9,000 runs; today: 11
}

// The series of WalkSeries: a 0.3 %/run random walk under 1 % noise, times (1 + step) from
// run `at` on (step 0: none).
std::vector<Point> WalkSeries(uint64_t seed, size_t at, double step) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  double walk = 1.0;
  return Shaped(300, 0.01, seed + 5000, [&](size_t i) {
    walk *= 1.0 + 0.003 * gauss(rng);
    return walk * (i >= at ? 1.0 + step : 1.0);
  });
}

// Where the series is a walk (the local level model against the segments found), a change
// point must be a jump of the walk's level (its auxiliary residual), and a 0.3 %/run walk has
// few: at most 3 change points in 60 series (h/21b's windowed walk test alone: 16).
TEST(DetectWalk, ASlowRandomWalkHasAlmostNoChangePoints) {
  size_t found = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    found += DetectIndices(WalkSeries(7100 + seed, 300, 0.0)).size();
  }
  EXPECT_LE(found, 3u);
}

// A 5 % step inside that walk (some 17 walk sigmas, 5 noise sigmas) is kept and located at
// the jump of the walk's level: within +-2 runs in at least 27 of 40 series, at most 2 change
// points elsewhere (h/21b: 24 and 4; found today 28 and 0; a 3 % step is mostly lost before
// this screen, by the shape test's effective sample size: see the report of issue 21).
TEST(DetectWalk, AFivePercentStepInsideAWalkIsFoundAtItsJump) {
  size_t found = 0, other = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const size_t at = 100 + 3 * seed;
    const double step = seed % 2 == 0 ? 0.05 : -0.05;
    for (size_t i : DetectIndices(WalkSeries(7300 + seed, at, step))) {
      (i + 2 >= at && i <= at + 2 ? found : other) += 1;
    }
  }
  EXPECT_GE(found, 27u);
  EXPECT_LE(other, 2u);
}

TEST(DetectWalk, TwoPercentStepsInWhiteNoiseAreKept) {
  size_t found = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const auto points = Series(300, 0.01, {{100, 0.02}, {200, -0.02}}, 900 + seed);
    for (size_t i : DetectIndices(points)) {
      found += (i + 2 >= 100 && i <= 102) || (i + 2 >= 200 && i <= 202) ? 1 : 0;
    }
  }
  EXPECT_GE(found, 18u);
}

// The quality bench's "stationary, 0.5-5% noise, 2% outliers, 10% bimodal, 5% missing" row,
// its series drawn from `seed`.
bench::Scenario StationaryWithDirt(uint64_t seed) {
  bench::Scenario s;
  s.Steps(0, 0).Noise(0.005, 0.05).Dirt(0.02, 0.1, 0.05);
  s.seed = seed;
  return s;
}

// The quality bench's scenario (tests/bench/detect/generator.h) on its own seed-base-1 data,
// first `count` series: the steps found within +-2 runs, and the false ones.
bench::Score BenchSteps(bench::Scenario scenario, size_t count) {
  scenario.series = count;
  bench::Score score;
  for (const auto& series : bench::Generate(scenario)) {
    score.Add(series.changes, DetectIndices(series.points), 2);
  }
  return score;
}

// Where the series is taken for a walk, the local-level screen moves each change point to the
// walk's largest jump near it. A cluster of spikes the outlier screen leaves is such a jump
// (clipped, infinite), and a chance step was moved onto it, to where its two levels did not
// differ: reported with p 1 and 0.033 (the quality bench's stationary series with dirt, seed
// bases 3001 and 4001: series 235 and 159, the only false steps among these). A change point
// the screen moves must still pass its own test there.
TEST(DetectWalk, AChangePointTheWalkScreenMovesStillPassesThere) {
  size_t found = 0;
  for (const auto& [seed, count] : {std::pair{3011, 236}, std::pair{4011, 160}}) {
    bench::Scenario mixed = StationaryWithDirt(seed);
    mixed.series = count;
    for (const auto& series : bench::Generate(mixed)) {
      const auto cps = Detect(series.points, {});
      ASSERT_TRUE(cps.ok());
      for (const ChangePoint& cp : *cps) EXPECT_LE(cp.p_value, 0.001) << seed << " " << cp.index;
      found += cps->size();
    }
  }
  EXPECT_EQ(found, 0u);
}

// Each of the chosen series (which hold `steps` labelled steps each) has every step found
// within +-2 runs and no other change point.
void ExpectEveryStepFoundAndNoOther(const std::vector<bench::LabelledSeries>& all,
                                    std::initializer_list<size_t> chosen, size_t steps) {
  for (size_t i : chosen) {
    SCOPED_TRACE(i);
    ASSERT_EQ(all[i].changes.size(), steps);
    bench::Score score;
    score.Add(all[i].changes, DetectIndices(all[i].points), 2);
    EXPECT_EQ(score.true_positives, steps);
    EXPECT_EQ(score.false_positives, 0u);
  }
}

// One 2 % step at 1 % noise (t 16 as a step): the within-segment differences of about 1 in 80
// such white series read as a walk at 2.5 standard errors, and the step then failed the
// windowed test against that walk's wander; another test took lone steps whose own jump
// reads as a walk across their cut. The quality bench's one-step row (seed base 1): these
// four series had no step at all; each is now found within +-2 runs.
TEST(DetectWalk, ALoneStepInWhiteNoiseIsNotTakenForAWalk) {
  bench::Scenario s;
  s.Steps(1, 1).StepSize(0.02, 0.02);
  s.seed = 24;
  s.series = 755;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {150, 275, 631, 754}, 1);
}

// The same where the walk fallback (analysis.cc, RemoveWalkSteps) took white noise for a walk
// at 3 standard errors: a lone 2 % step at 1 % noise (t 17) failed its windowed test and
// nothing was reported. The local level fitted to the two flat segments' residuals is white
// noise there, and then the fallback does not run. The quality bench's one-step row, seed
// bases 7001 and 8001: these six series had no step at all.
TEST(DetectWalk, ALoneStepWhoseSegmentsAreWhiteIsNotJudgedAgainstAWalk) {
  bench::Scenario s;
  s.Steps(1, 1).StepSize(0.02, 0.02);
  s.seed = 7024;
  s.series = 621;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {39, 366, 620}, 1);
  s.seed = 8024;
  s.series = 901;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {317, 865, 900}, 1);
}

// A 10 % step at 1 % noise in a history of 11 to 14 runs, with a slight sag on one side: every
// split there is an end split (p <= 1e-5), and the shape test's effective sample size, whose
// long-run variance is guessed from a dozen residuals, took the sag for a wander and failed it
// (p 2e-5 and 4e-5 after the choice of split; 6e-11 and 8e-9 as plain steps). A jump of ten
// noise sigmas from one run to the next is a jump under a walk too: its run-to-run difference
// stands out from the others at that threshold. The quality bench's short-step row, seed base
// 1001: these two series had no step at all.
TEST(DetectShape, ALargeJumpInAShortHistoryIsNotTakenForAWander) {
  bench::Scenario s;
  s.Lengths(10, 30).Steps(1, 1).StepSize(0.10, 0.10);
  s.min_gap = 5;
  s.seed = 1022;
  s.series = 469;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {318, 468}, 1);
}

// The first `count` series of the quality bench's row "5 % step, 1 % noise, 2 % outlier runs"
// at seed base 1001.
std::vector<bench::LabelledSeries> OutlierRowSeries(size_t count) {
  bench::Scenario s;
  s.Dirt(0.02, 0, 0);
  s.seed = 1004;
  s.series = count;
  return bench::Generate(s);
}

// Three 5 % steps at 1 % noise with 2 % outlier runs of +30 %, three of them in a row, which
// ReplaceOutliers leaves (each has a spike for a neighbour): the random-walk screen compared
// the local level, whose innovations are winsorised at 8 sigmas, with the segments' white
// noise, whose residuals were not, and read the cluster as a wander (a likelihood ratio of
// 390, all of it the clipping), then dropped all three steps (p 1e-15 to 1e-50). Both sides
// of the comparison now clip alike. The quality bench's outlier row, seed base 1001.
TEST(DetectWalk, AClusterOfSpikesIsNoWander) {
  ExpectEveryStepFoundAndNoOther(OutlierRowSeries(236), {235}, 3);
}

// The same row: a 5 % dip of 17 runs, with two +30 % spikes 40 runs away that ReplaceOutliers
// left in the long segment before it. The excursion test pooled that segment's scatter, whose
// spikes made its sigma three times the noise's, and failed the dip at p 0.45; each deviation
// now counts at most 8 sigmas. Before, the steps at 143 and 160 were lost.
TEST(DetectExcursion, SpikesFarAwayDoNotHideADip) {
  ExpectEveryStepFoundAndNoOther(OutlierRowSeries(32), {31}, 3);
}

// A 5 % step down under a creep of +5 to 10 % over the series: the two levels around it have
// nearly equal means, so the prune pass kept it only as a small change point (significant, its
// effect below 1 %), which is not reported, and which as a bound also kept the joint search
// from finding the jump inside its segments. A small change point is now judged by the joint
// model (the jump on a kinked line), whose levels at the break differ by the step. The quality
// bench's "drift +5..10 % + one 5 % step down" row, seed base 1: these series had no step.
TEST(DetectJoint, AStepKeptSmallByDriftsIsJudgedWithThem) {
  bench::Scenario s;
  s.Steps(1, 1).Signs(-1, +1).LabelledDrift(0.05, 0.10);
  s.drift_runs_lo = s.drift_runs_hi = 300;
  s.seed = 26;
  s.series = 35;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {11, 27, 34}, 1);
}

// A 1 % step at 0.5 % noise that the prune pass kept as small (its two-level effect just under
// 1 %) and the joint model then reported: it kept the search's position, 4 and 5 runs from the
// step, which the jump on the kinked line fits best. It is now placed there. The quality
// bench's "1 % step, 0.5 % noise" row, seed base 1: before, a false step and a miss each.
TEST(DetectJoint, AStepJudgedByTheJointModelIsPlacedWhereItsJumpIsStrongest) {
  bench::Scenario s;
  s.StepSize(0.01, 0.01).Noise(0.005, 0.005);
  s.seed = 7;
  s.series = 853;
  const auto all = bench::Generate(s);
  for (const auto& [i, step] : {std::pair<size_t, size_t>{297, 141}, {852, 150}}) {
    SCOPED_TRACE(i);
    ASSERT_EQ(all[i].changes[1], step);
    const std::vector<size_t> found = DetectIndices(all[i].points);
    EXPECT_TRUE(std::any_of(found.begin(), found.end(),
                            [&](size_t at) { return at + 2 >= step && at <= step + 2; }));
    EXPECT_FALSE(std::any_of(found.begin(), found.end(), [&](size_t at) {
      return (at + 10 >= step && at + 2 < step) || (at > step + 2 && at <= step + 10);
    }));
  }
}

// Three 2 % steps under 1 % noise, where the segments' residuals are white: a walk (q about
// 0.03 of the noise) fits them at nearly the BIC of the three steps, and where it won, the
// random-walk screen wiped all three. Its smoothed level moves in bursts at the steps, which a
// walk's does not: the screen now stands down there. The quality bench's first row (seed base
// 1), first 500 series: before, 1336 of the 1500 steps found and 31 series with none; then
// 1350 and 25, false steps unchanged (55); since a change the shape test drops with nothing
// reported instead is kept (AStepIsNotDroppedAsATrendWithNothingReportedInstead), 1371 and
// 17, 61 false steps.
TEST(DetectWalk, StepsInWhiteNoiseAreNotTakenForAWalk) {
  bench::Scenario s;
  s.StepSize(0.02, 0.02);
  s.series = 500;
  size_t found = 0, false_steps = 0, none = 0;
  for (const auto& series : bench::Generate(s)) {
    const std::vector<size_t> steps = DetectIndices(series.points);
    bench::Score score;
    score.Add(series.changes, steps, 2);
    found += score.true_positives;
    false_steps += score.false_positives;
    none += steps.empty() ? 1 : 0;
  }
  EXPECT_GE(found, 1364u);
  EXPECT_LE(none, 20u);
  EXPECT_LE(false_steps, 64u);
}

// Where the segments' residuals are white, the walk must beat them by BIC with each cut
// charged 2.85 log n (kWalkCutPenalty 0.85, analysis.cc): at 3 log n the walk still won on
// these two series of three 2 % steps at 1 % noise (the quality bench's first row, seed base
// 1) and the screen wiped all their steps; now each has all three within +-2 runs.
TEST(DetectWalk, ThreeTwoPercentStepsBeatAWalkThatBarelyFitsBetter) {
  bench::Scenario s;
  s.StepSize(0.02, 0.02);
  s.series = 930;
  ExpectEveryStepFoundAndNoOther(bench::Generate(s), {477, 929}, 3);
}

// Three 2 % steps at 1 % noise where sloping noise on both sides of one lets a kinked line fit
// it about as well as two levels: the shape test dropped it, its neighbour then failed over
// the wider span, the third went with them, and nothing at all was reported. The shape test
// may drop a change only where something is reported instead (a step near it, a drift over
// its segment); elsewhere the analysis runs again and keeps it. The quality bench's first row,
// seed base 2001, first 300 series: findings in every series but `silent`.
TEST(DetectShape, AStepIsNotDroppedAsATrendWithNothingReportedInstead) {
  bench::Scenario s;
  s.StepSize(0.02, 0.02);
  s.seed = 2001;
  s.series = 300;
  size_t silent = 0;
  bench::Score score;
  for (const auto& series : bench::Generate(s)) {
    const auto findings = Analyze(series.points, {});
    ASSERT_TRUE(findings.ok()) << findings.status();
    std::vector<size_t> steps;
    for (const Finding& f : *findings) {
      if (f.kind == FindingKind::kStep) steps.push_back(f.index);
    }
    silent += findings->empty() ? 1 : 0;
    score.Add(series.changes, steps, 2);
  }
  EXPECT_LE(silent, 10u);                 // 14 before, 9 today
  EXPECT_GE(score.true_positives, 802u);  // of 900; 794 before, 806 today
  EXPECT_LE(score.false_positives, 34u);  // 32 before and today
}

// A trend of up to 10 % over the series with three 5 % steps (the quality bench's row, seed
// base 1): a noisy stretch of a gently sloped segment passed as two levels, since two levels
// fit it about as well as the shape test's kinked line; with a line in the model the jump is
// not significant. 300 series: before, 78 false steps; now 27, the steps found 896 of 900
// either way.
TEST(DetectShape, AGentleSlopeInsideASegmentIsNoStep) {
  bench::Scenario s;
  s.drift_max = 0.10;
  s.seed = 15;
  const bench::Score score = BenchSteps(s, 300);
  EXPECT_LE(score.false_positives, 40u);
  EXPECT_GE(score.true_positives, 890u);
}

// A trend that turns flat, then one 5 % step: the search put the step a few runs off, and the
// random-walk tests judged the segments before the change points were located, where a
// misplaced cut leaves pieces of the ramp and of the step wandering in both neighbours'
// residuals: they were taken for a walk's and kept as false steps. 200 series: before, 33
// false steps; now 10 (the quality bench's turning-point row, seed base 1).
// The quality bench's turning-point row (seed base 1): a trend of +10..20 % over the first
// 100-200 runs, then flat, with one 5 % step.
bench::Scenario TurningScenario() {
  bench::Scenario s;
  s.Steps(1, 1).LabelledDrift(0.10, 0.20);
  s.drift_runs_lo = 100;
  s.drift_runs_hi = 200;
  s.drift_turns = true;
  s.seed = 31;
  return s;
}

TEST(DetectJoint, ATrendThatTurnsFlatThenStepsHasFewFalseSteps) {
  EXPECT_LE(BenchSteps(TurningScenario(), 200).false_positives, 15u);
}

// A 5 % step on a ramp that turns flat later: the shape test judged the jump on top of the
// kinked line fitted without it, whose kink moved to the step to take part of it (and then
// missed the real turn); the jump left was not significant and the step was pruned (-5 % 40
// runs before the turn). The kink is now chosen with the jump in the model.
TEST(DetectJoint, AStepOnATrendBeforeItTurnsFlatIsKept) {
  for (double sign : {-1.0, 1.0}) {
    for (size_t at : {110u, 125u, 140u, 160u, 175u}) {
      SCOPED_TRACE(testing::Message() << "step " << sign * 5 << " % at " << at);
      std::vector<Point> points(300);
      for (size_t t = 0; t < points.size(); ++t) {
        const double ramp = 1.0 + 0.15 * static_cast<double>(std::min<size_t>(t, 150)) / 150.0;
        points[t].value = 1000.0 * ramp * (t >= at ? 1.0 + 0.05 * sign : 1.0) *
                          (1.0 + 0.01 * std::sin(1.7 * static_cast<double>(t)));
      }
      const auto found = DetectIndices(points);
      ASSERT_EQ(found.size(), 1u);
      EXPECT_NEAR(static_cast<double>(found[0]), static_cast<double>(at), 2.0);
    }
  }
}

// The same at scale, on the quality bench's own data (seed base 1, first 200 series): a trend
// that turns flat with one 5 % step (before: 177 of 200 steps found within +-2 runs), and a
// drift with two 5-10 % steps (before: 343 of 400).
TEST(DetectJoint, StepsOnTrendsThatTurnAreFound) {
  EXPECT_GE(BenchSteps(TurningScenario(), 200).true_positives, 190u);
  bench::Scenario drifting;
  drifting.Steps(2, 2).StepSize(0.05, 0.10).LabelledDrift(0.05, 0.20);
  drifting.seed = 16;
  EXPECT_GE(BenchSteps(drifting, 200).true_positives, 370u);
}

// A short excursion is one search of a start and a length, not two of a position each: a
// few runs of chance bump or dip between two change points of opposite sign passed as two
// steps (quality bench, seed base 1001: a 14-run bump in white noise, a 9-run dip in mixed
// noise with bimodal runs; before, these first series had 2 and 5 false steps; a 6-run bump
// of 4 % made of bimodal runs stays).
TEST(DetectExcursion, AShortChanceBumpIsNoPairOfSteps) {
  bench::Scenario white;
  white.Steps(0, 0);
  white.seed = 1010;
  EXPECT_EQ(BenchSteps(white, 800).false_positives, 0u);
  EXPECT_LE(BenchSteps(StationaryWithDirt(1011), 330).false_positives, 3u);
}

// A bump of fewer than edge_segment runs rests on a few runs, as a short end segment does: it
// needs the edge rule's strength too. On stationary mixed noise, six runs lifted by bimodal
// runs (in one, with two spikes replaced by their lifted neighbours' median) passed as a +4 %
// and a +2.4 % excursion (quality bench, seed bases 1001 and 5001: series 322 and 876).
TEST(DetectExcursion, ABumpOfAFewRunsNeedsTheEdgeRulesStrength) {
  for (const auto& [seed, index] : {std::pair{1011, 322u}, std::pair{5011, 876u}}) {
    SCOPED_TRACE(seed);
    bench::Scenario mixed = StationaryWithDirt(seed);
    mixed.series = index + 1;
    EXPECT_THAT(DetectIndices(bench::Generate(mixed)[index].points), IsEmpty());
  }
  // (Deep short excursions still pass: DetectExcursion.BothEdgesOfALongExcursionAreFound.)
}

// A drop that partly recovers a few dozen runs later is two steps, not an excursion: the
// middle segment is shorter than both sides and beyond both, which makes it a candidate for
// the excursion test, but the sides are at different levels. Pooled as one group, their
// levels' difference counted as noise, and the recovery (+3 % at 1 % noise, 25 runs after a
// 22 % drop, 215 before the end) failed the test and went: 53 of these 80 steps were found,
// now all.
TEST(DetectExcursion, ADropThatPartlyRecoversIsTwoSteps) {
  size_t found = 0, other = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const auto points = Series(300, 0.01, {{60, -0.22}, {85, 0.03}}, 7000 + seed);
    bench::Score score;
    score.Add({60, 85}, DetectIndices(points), 2);
    found += score.true_positives;
    other += score.false_positives;
  }
  EXPECT_GE(found, 78u);
  EXPECT_LE(other, 1u);
}

// A level offset on a slow cycle (TCPD's quality_control_4 is "multiple periodic components
// and an offset change"; its offset at run 341 was lost and nothing at all was reported): an
// offset of 6 noise sigmas at run 341 of 500 on a sine of 4 sigmas and period 400. Pruning
// drops the cycle's splits one at a time, each drop widens the span the offset is judged
// over, and over most of the series one kinked line is no null for the cycle. Within 30 runs
// on either side the offset is a jump, and where nothing else is reported near it the second
// pass keeps it. 40 series: 18 offsets found before, now 34 (the other 6 are still lost,
// with nothing reported in their place).
TEST(DetectShape, AnOffsetOnASlowCycleIsKept) {
  size_t found = 0, other = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(9100 + seed);
    std::normal_distribution<double> gauss(0.0, 1.0);
    std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
    const double start = phase(rng);
    std::vector<Point> points(500);
    for (size_t i = 0; i < points.size(); ++i) {
      const double t = static_cast<double>(i);
      points[i].value = 10.0 + 2.0 * std::sin(2.0 * std::numbers::pi * t / 400.0 + start) +
                        (i >= 341 ? 3.0 : 0.0) + 0.5 * gauss(rng);
    }
    bench::Score score;
    score.Add({341}, DetectIndices(points), 2);
    found += score.true_positives;
    other += score.false_positives;
  }
  EXPECT_GE(found, 30u);
  EXPECT_LE(other, 2u);  // none today
}

// The mix of the quality bench (1-50 % steps at 0.5-5 % noise, outliers, bimodal runs, a slow
// drift), series the local-level screen took for walks: their large steps (17-45 %) inflated
// the walk fitted with them in it, and a 5 % step beside them read as the walk's own move and
// went. With the kept steps taken out before the walk is fitted again, it comes back.
TEST(DetectWalk, AStepBesideLargeStepsIsNotTakenForTheWalksMove) {
  auto mix = [](uint64_t seed, size_t count) {
    bench::Scenario s;
    s.Steps(1, 5).StepSize(0.01, 0.5).Noise(0.005, 0.05).Dirt(0.01, 0.1, 0.05);
    s.drift_max = 0.01;
    s.seed = seed;
    s.series = count;
    return bench::Generate(s);
  };
  size_t found = 0, labelled = 0;
  for (const auto& [seed, chosen] : {std::pair{8, std::vector<size_t>{207, 261}},
                                     std::pair{1008, std::vector<size_t>{56, 765}}}) {
    const auto all = mix(seed, chosen.back() + 1);
    for (size_t i : chosen) {
      bench::Score score;
      score.Add(all[i].changes, DetectIndices(all[i].points), 2);
      found += score.true_positives;
      labelled += all[i].changes.size();
    }
  }
  EXPECT_EQ(labelled, 17u);
  EXPECT_GE(found, 15u);
}

// A 5 % step on a 5 % cycle of period 12: today the cycle's swing made the step look like
// serially dependent noise and it was not reported at all; the cycle is taken out first.
TEST(DetectSeason, AStepOnACycleIsFoundWithinTwoRuns) {
  size_t found = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const size_t at = 120 + 7 * seed;
    const auto points = Shaped(300, 0.01, 1000 + seed, [&](size_t i) {
      const double phase =
          2.0 * 3.141592653589793 * static_cast<double>(i) / 12.0 + 0.5 * static_cast<double>(seed);
      return (1.0 + 0.05 * std::sin(phase)) * (i >= at ? 1.05 : 1.0);
    });
    const auto at_found = DetectIndices(points);
    ASSERT_EQ(at_found.size(), 1u) << "seed " << seed;
    found += (at_found[0] + 2 >= at && at_found[0] <= at + 2) ? 1 : 0;
  }
  EXPECT_EQ(found, 10u);
}

// A sustained excursion is a segment, not a run of outliers: both of its edges are change
// points, for long excursions and for ones just longer than the minimum segment. (Kept as a
// guard: today's detector already finds these synthetic ones, see the report of issue 21.)
TEST(DetectExcursion, BothEdgesOfALongExcursionAreFound) {
  for (size_t length : {4u, 8u, 90u}) {
    SCOPED_TRACE(length);
    std::vector<Point> points(300);
    for (size_t t = 0; t < points.size(); ++t) {
      const double level = t >= 100 && t < 100 + length ? 40.0 : 200.0;
      points[t].value = level * (1.0 + 0.01 * std::sin(1.7 * static_cast<double>(t)));
    }
    EXPECT_THAT(DetectIndices(points), ElementsAre(100, 100 + length));
  }
}

// Three 30 % runs in a row near the end of a flat history (a noisy host's bad evening): the
// middle one is replaced as an outlier, the two at the ends of the cluster are not (each has
// a spike for a neighbour). The two-level test meets such a short cluster with Welch's test;
// the joint search (a line with a jump) fitted its jump to the two spikes and reported a
// +6 % step at the cluster's start (quality bench: the stationary series with dirt and the
// 5 % steps with 2 % outlier runs).
TEST(DetectJoint, AClusterOfSpikesIsNoJointStep) {
  size_t found = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto points = Series(300, 0.01, {}, 1100 + seed);
    for (size_t i : {268u, 269u, 270u}) points[i].value *= 1.3;
    for (size_t i : {243u, 247u, 259u}) points[i].value = std::nan("");
    found += DetectIndices(points).size();
  }
  // Today: 12 of the 20 series. The few left are the two-level search's own, where Welch's
  // test passes the cluster (4 here).
  EXPECT_LE(found, 5u);
}

TEST(Detector, AppendMatchesFullAnalysis) {
  const auto points = Series(400, 0.01, {{90, 0.04}, {200, 0.2}, {260, -0.03}, {330, 0.06}}, 7);
  auto detector = Detector::Create({});
  ASSERT_TRUE(detector.ok());
  for (const Point& p : points) detector->Append(p);
  EXPECT_EQ(Indices(detector->change_points()), DetectIndices(points));
  EXPECT_THAT(Indices(detector->change_points()), ElementsAre(90, 200, 260, 330));
  detector->Reset(std::span<const Point>(points).first(150));
  EXPECT_THAT(Indices(detector->change_points()), ElementsAre(90));
}

TEST(Detector, AppendBeyondTheHorizonKeepsOldChangePoints) {
  DetectorOptions options;
  options.incremental_horizon = 100;
  const auto points = Series(500, 0.01, {{50, 0.1}, {420, 0.1}}, 8);
  auto detector = Detector::Create(options);
  ASSERT_TRUE(detector.ok());
  for (const Point& p : points) detector->Append(p);
  EXPECT_THAT(Indices(detector->change_points()), ElementsAre(50, 420));
}

TEST(DetectGate, SuspectsANewLevelOnItsFirstNight) {
  auto points = Series(60, 0.01, {}, 9);
  points.push_back({1080.0, 30.0});
  auto gate = GateNewest(points, {});
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(gate->verdict, GateVerdict::kSuspected);
  EXPECT_NEAR(gate->relative_change, 0.08, 0.015);
  EXPECT_GT(gate->z, 4.0);
  EXPECT_EQ(gate->baseline_count, 30u);
  points.back().value = 1005.0;
  EXPECT_EQ(GateNewest(points, {})->verdict, GateVerdict::kNone);
}

TEST(DetectGate, UsesOnlyTheCurrentSegmentAsBaseline) {
  auto points = Series(60, 0.01, {{40, 0.2}}, 10);
  points.push_back({1200.0, 30.0});  // the new level, not a regression against it
  auto gate = GateNewest(points, {});
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(gate->verdict, GateVerdict::kNone);
  EXPECT_EQ(gate->baseline_count, 20u);
}

TEST(DetectGate, MissingAndShortHistories) {
  auto points = Series(3, 0.01, {}, 11);
  EXPECT_EQ(GateNewest(points, {})->verdict, GateVerdict::kInsufficientHistory);
  points.push_back({});
  EXPECT_EQ(GateNewest(points, {})->verdict, GateVerdict::kMissing);
  EXPECT_FALSE(GateNewest({}, {}).ok());
  EXPECT_EQ(GateVerdictName(GateVerdict::kSuspected), "suspected");
}

// The local level model's fit: white noise is no walk (the smallest q), a walk of q = 0.09
// (0.3 % per run under 1 % noise) is found near its q, and the auxiliary residual of a jump
// of the level peaks at the jump.
TEST(LocalLevel, FitsQAndPointsAtAJump) {
  std::mt19937_64 rng(4242);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> white(400), walk(400), jump(400);
  double level = 0.0;
  for (size_t t = 0; t < 400; ++t) {
    level += 0.3 * gauss(rng);
    white[t] = gauss(rng);
    walk[t] = level + gauss(rng);
    jump[t] = 0.1 * level + gauss(rng) + (t >= 200 ? 4.0 : 0.0);
  }
  std::vector<double> scratch;
  EXPECT_LE(FitLocalLevel(white, RobustSigma(white, scratch)).q, 0.01);
  const LocalLevelFit fitted = FitLocalLevel(walk, RobustSigma(walk, scratch));
  EXPECT_GE(fitted.q, 0.03);
  EXPECT_LE(fitted.q, 0.3);
  const LocalLevelFit at_jump = FitLocalLevel(jump, RobustSigma(jump, scratch));
  ASSERT_EQ(at_jump.auxiliary.size(), 400u);
  size_t peak = 1;
  for (size_t t = 1; t < 400; ++t) {
    if (std::fabs(at_jump.auxiliary[t]) > std::fabs(at_jump.auxiliary[peak])) peak = t;
  }
  EXPECT_NEAR(static_cast<double>(peak), 200.0, 1.0);
  EXPECT_GE(std::fabs(at_jump.auxiliary[peak]), 4.0);
}

}  // namespace
}  // namespace devtime::detect
