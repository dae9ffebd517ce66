#include "services/collector/detect/stats.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace devtime::detect {
namespace {

TEST(DetectStats, RelativeChangeOfNoTimeIsNoChangeNotInfinity) {
  EXPECT_DOUBLE_EQ(RelativeChange(3.0, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(RelativeChange(1.0, 2.0), -0.5);
  EXPECT_EQ(RelativeChange(1.0, 1e-300), 0.0);  // 1 / 1e-300 - 1 would be 1e300
  EXPECT_EQ(RelativeChange(1e15, 0.0), 0.0);
  EXPECT_TRUE(std::isfinite(RelativeChange(1e15, 1e-6)));
}

TEST(DetectStats, StudentTwoSidedMatchesTables) {
  // Reference values from scipy.stats.t.sf(|t|, df) * 2.
  EXPECT_NEAR(StudentTwoSidedP(2.2281388519649385, 10), 0.05, 1e-9);
  EXPECT_NEAR(StudentTwoSidedP(1.0, 1), 0.5, 1e-12);
  EXPECT_NEAR(StudentTwoSidedP(-2.0, 30), 0.054625044963, 1e-10);
  EXPECT_NEAR(StudentTwoSidedP(0.0, 5), 1.0, 1e-12);
  EXPECT_EQ(StudentTwoSidedP(std::numeric_limits<double>::infinity(), 3), 0.0);
  EXPECT_TRUE(std::isnan(StudentTwoSidedP(std::nan(""), 3)));
}

TEST(DetectStats, NormalQuantileInvertsTail) {
  EXPECT_NEAR(NormalTwoSidedQuantile(0.05), 1.959963985, 1e-8);
  EXPECT_NEAR(NormalTwoSidedQuantile(1e-6), 4.891638475, 1e-7);
  EXPECT_EQ(NormalTwoSidedQuantile(1.0), 0.0);
}

TEST(DetectStats, PooledTTestLikeScipy) {
  // ttest_ind_from_stats(1, 1, 10, 2, 1, 10): t = -sqrt(5), p = 0.0382496 (checked by
  // numerically integrating the t density)
  const TTestResult r = PooledTTest(1, 1, 10, 2, 1, 10);
  EXPECT_NEAR(r.t, -2.2360679775, 1e-9);
  EXPECT_NEAR(r.p, 0.038249614516, 1e-9);
  EXPECT_EQ(r.df, 18);
  // Zero variance, different means: t infinite, p 0 (as scipy).
  EXPECT_EQ(PooledTTest(1, 0, 3, 2, 0, 3).p, 0.0);
}

TEST(DetectStats, WelchTTestByHand) {
  // se^2 = 1/10 + 4/20 = 0.3; df = 0.09 / (0.01/9 + 0.04/19) (Welch-Satterthwaite).
  const TTestResult r = WelchTTest(1, 1, 10, 2, 4, 20);
  EXPECT_NEAR(r.t, -1.0 / std::sqrt(0.3), 1e-12);
  EXPECT_NEAR(r.df, 0.09 / (0.01 / 9 + 0.04 / 19), 1e-9);
  EXPECT_NEAR(r.p, StudentTwoSidedP(r.t, r.df), 1e-15);
  // Equal sizes and variances: the same t as the pooled test.
  EXPECT_NEAR(WelchTTest(1, 1, 10, 2, 1, 10).t, PooledTTest(1, 1, 10, 2, 1, 10).t, 1e-12);
}

TEST(DetectStats, VarianceRatioTest) {
  // df1 = 2: P(F >= f) = (1 + 2 f / df2)^(-df2 / 2) in closed form.
  EXPECT_NEAR(VarianceRatioTwoSidedP(10, 2, 1, 30), 2 * std::pow(1 + 20.0 / 30, -15), 1e-12);
  // Symmetric in the order of the sides; F = 1 with equal dfs is the median.
  EXPECT_NEAR(VarianceRatioTwoSidedP(1, 30, 10, 2), VarianceRatioTwoSidedP(10, 2, 1, 30), 1e-12);
  EXPECT_NEAR(VarianceRatioTwoSidedP(3, 7, 3, 7), 1.0, 1e-12);
  // Tables: the 5 % upper critical value of F(5, 10) is 3.3258.
  EXPECT_NEAR(VarianceRatioTwoSidedP(3.3258345, 5, 1, 10), 0.10, 1e-6);
}

TEST(DetectStats, MedianAndMoments) {
  const std::vector<double> v = {5, 1, 3, 2, 4, 100};
  EXPECT_EQ(Median(v), 3.5);
  const Moments m = MeanStd(std::vector<double>{1, 2, 3, 4}, 1);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.stddev, 1.2909944487, 1e-9);
}

TEST(DetectStats, LongRunVarianceInflationSeesSerialDependenceOnly) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> white(300), walk(300);
  double level = 0.0;
  for (size_t i = 0; i < 300; ++i) {
    white[i] = gauss(rng);
    level += gauss(rng);
    walk[i] = level;
  }
  const auto centred = [](std::vector<double> x) {
    double mean = 0.0;
    for (double v : x) mean += v / static_cast<double>(x.size());
    for (double& v : x) v -= mean;
    return x;
  };
  EXPECT_EQ(LongRunVarianceInflation(centred(white)), 1.0);
  EXPECT_GT(LongRunVarianceInflation(centred(walk)), 10.0);
  EXPECT_EQ(LongRunVarianceInflation(std::vector<double>{1.0, -1.0}), 1.0);  // too short
}

}  // namespace
}  // namespace devtime::detect
