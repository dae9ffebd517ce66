// The sketch's promise (agents/monitor/README.md): a window's p99 read from it is within 1 %
// of the exact p99 of the same per-period data (the executions-weighted mixture of the
// periods' piecewise-linear quantile functions).
#include "agents/monitor/latency_sketch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace devtime::agent::monitor {
namespace {

constexpr double kZ[kMonitorPoints] = {-3.2, -2.326, -0.674, 0, 0.674, 2.326, 3.6};

// One hour of 10 s periods: lognormal latencies whose median follows traffic, executions too.
struct Window {
  std::vector<std::vector<double>> periods;
  std::vector<double> executions;
};

Window MakeWindow(unsigned seed, double median_us, double sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  std::uniform_real_distribution<double> traffic(50, 2000);
  Window w;
  for (int i = 0; i < 360; ++i) {
    const double m = median_us * (1 + 0.3 * std::sin(i / 40.0)) * (1 + noise(rng));
    std::vector<double> p;
    for (double z : kZ) p.push_back(m * std::exp(sigma * z));
    w.periods.push_back(p);
    w.executions.push_back(i % 50 == 3 ? 0 : traffic(rng));  // some idle periods
  }
  return w;
}

LatencySketch Sketch(const Window& w) {
  LatencySketch sketch;
  for (std::size_t i = 0; i < w.periods.size(); ++i) {
    double p[kMonitorPoints];
    std::copy(w.periods[i].begin(), w.periods[i].end(), p);
    EXPECT_TRUE(FeedPeriod(sketch, p, w.executions[i]));
  }
  return sketch;
}

TEST(LatencySketchTest, WindowP99IsWithinOnePercentOfTheExactP99) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    for (double sigma : {0.05, 0.25, 0.8}) {
      const Window w = MakeWindow(seed, 8'000, sigma);
      const LatencySketch sketch = Sketch(w);
      for (double q : {0.5, 0.99}) {
        const double exact = ExactMixtureQuantile(w.periods, w.executions, q);
        EXPECT_NEAR(sketch.Quantile(q) / exact, 1.0, 0.01)
            << "seed " << seed << " sigma " << sigma << " q " << q;
      }
    }
  }
}

TEST(LatencySketchTest, MergingHostsIsTheSketchOfAllTheirPeriods) {
  const Window a = MakeWindow(3, 5'000, 0.3), b = MakeWindow(4, 9'000, 0.3);
  LatencySketch merged = Sketch(a);
  ASSERT_TRUE(merged.Merge(Sketch(b)));
  Window both = a;
  both.periods.insert(both.periods.end(), b.periods.begin(), b.periods.end());
  both.executions.insert(both.executions.end(), b.executions.begin(), b.executions.end());
  EXPECT_NEAR(merged.Quantile(0.99) / ExactMixtureQuantile(both.periods, both.executions, 0.99),
              1.0, 0.01);
  EXPECT_DOUBLE_EQ(merged.total_weight(), Sketch(a).total_weight() + Sketch(b).total_weight());
  EXPECT_FALSE(merged.Merge(LatencySketch(0.01)));  // another accuracy: refused
}

TEST(LatencySketchTest, RefusesPointsThatAreNotPercentiles) {
  LatencySketch sketch;
  double descending[kMonitorPoints] = {7, 6, 5, 4, 3, 2, 1};
  double nan[kMonitorPoints] = {1, 2, NAN, 4, 5, 6, 7};
  EXPECT_FALSE(FeedPeriod(sketch, descending, 10));
  EXPECT_FALSE(FeedPeriod(sketch, nan, 10));
  EXPECT_TRUE(sketch.empty());
  EXPECT_TRUE(std::isnan(sketch.Quantile(0.99)));
}

}  // namespace
}  // namespace devtime::agent::monitor
