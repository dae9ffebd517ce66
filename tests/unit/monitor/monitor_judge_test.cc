// The hourly series' judgment: a +15 % step on a daily cycle is found at its window; a pure
// daily cycle opens nothing (services/collector/analyze/monitor_judge.h).
#include "services/collector/analyze/monitor_judge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace devtime::analyze {
namespace {

std::vector<MonitorPoint> Series(int hours, int step_at, double step, unsigned seed,
                                 double cycle = 0.10) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.005);
  std::vector<MonitorPoint> points;
  for (int h = 0; h < hours; ++h) {
    double v = 10'000 * (1 + cycle * std::sin(2 * M_PI * (h % 24) / 24)) * (1 + noise(rng));
    if (step_at >= 0 && h >= step_at) v *= 1 + step;
    points.push_back({.window_start_s = 1'764'547'200 + h * 3600, .value = v});
  }
  return points;
}

TEST(MonitorJudgeTest, FindsAStepOnADailyCycleAtItsWindow) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    for (int step_at : {60, 100, 112}) {
      auto changes = JudgeMonitorSeries(Series(120, step_at, 0.15, seed), WindowDetectorOptions());
      ASSERT_TRUE(changes.ok()) << changes.status();
      ASSERT_EQ(changes->size(), 1u) << "seed " << seed << " step " << step_at;
      EXPECT_EQ((*changes)[0].index, static_cast<std::size_t>(step_at));
      EXPECT_NEAR((*changes)[0].relative_change, 0.15, 0.03);
    }
  }
}

TEST(MonitorJudgeTest, APureDailyCycleOpensNothing) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    for (int hours : {30, 48, 120, 336}) {  // 30: under two days nothing is judged
      auto changes = JudgeMonitorSeries(Series(hours, -1, 0, seed, 0.2), WindowDetectorOptions());
      ASSERT_TRUE(changes.ok());
      EXPECT_TRUE(changes->empty())
          << "seed " << seed << " hours " << hours << ": index " << (*changes)[0].index;
    }
  }
}

TEST(MonitorJudgeTest, AFasterWindowIsNotARegression) {
  auto changes = JudgeMonitorSeries(Series(120, 90, -0.2, 3), WindowDetectorOptions());
  ASSERT_TRUE(changes.ok());
  EXPECT_TRUE(changes->empty());
}

}  // namespace
}  // namespace devtime::analyze
