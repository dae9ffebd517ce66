// ShapeTester::RedundantSteps: which steps of a same-direction group a continuous creep
// explains (shape.h).
#include "services/collector/detect/shape.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devtime::detect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Unit-variance Gaussian noise plus `shape(i)`, in robust-sigma units as the analysis has it.
template <typename Shape>
std::vector<double> Series(size_t n, uint64_t seed, Shape shape) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> u(n);
  for (size_t i = 0; i < n; ++i) u[i] = shape(i) + gauss(rng);
  return u;
}

constexpr size_t kMinTail = 10;

// Least squares by the normal equations (Gauss-Jordan), for checking the closed forms.
double NaiveRss(const std::vector<std::vector<double>>& columns, const std::vector<double>& y) {
  const size_t k = columns.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t r = 0; r < k; ++r) {
    for (size_t c = 0; c < k; ++c) {
      for (size_t i = 0; i < y.size(); ++i) m[r][c] += columns[r][i] * columns[c][i];
    }
    for (size_t i = 0; i < y.size(); ++i) m[r][k] += columns[r][i] * y[i];
  }
  for (size_t col = 0; col < k; ++col) {
    for (size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (size_t c = col; c <= k; ++c) m[r][c] -= f * m[col][c];
    }
  }
  double rss = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    double fit = 0.0;
    for (size_t r = 0; r < k; ++r) fit += m[r][k] / m[r][r] * columns[r][i];
    rss += (y[i] - fit) * (y[i] - fit);
  }
  return rss;
}

// The columns of the model over [a, b): 1, a jump at each of `jumps`, and with kappa the hinge
// (i - kappa)+.
std::vector<std::vector<double>> Columns(size_t a, size_t b, const std::vector<size_t>& jumps,
                                         std::optional<size_t> kappa) {
  std::vector<std::vector<double>> columns = {std::vector<double>(b - a, 1.0)};
  for (size_t s : jumps) {
    columns.emplace_back(b - a);
    for (size_t i = a; i < b; ++i) columns.back()[i - a] = i >= s ? 1.0 : 0.0;
  }
  if (kappa) {
    columns.emplace_back(b - a);
    for (size_t i = a; i < b; ++i) {
      columns.back()[i - a] = i > *kappa ? static_cast<double>(i - *kappa) : 0.0;
    }
  }
  return columns;
}

TEST(TrendRss, MatchesLeastSquaresOverEveryKink) {
  const auto u =
      Series(120, 7, [](size_t i) { return i < 60 ? 0.0 : 0.05 * static_cast<double>(i - 60); });
  const ShapeTester tester(u);
  const size_t a = 10, b = 110;
  const std::vector<double> y(u.begin() + a, u.begin() + b);
  for (const std::vector<size_t>& jumps : {std::vector<size_t>{}, std::vector<size_t>{40, 75}}) {
    EXPECT_NEAR(tester.LevelsRss(a, b, jumps), NaiveRss(Columns(a, b, jumps, std::nullopt), y),
                1e-6);
    // Longer tails keep the kink in the first segments, with whole segments after it.
    for (size_t tail : {kMinTail, size_t{50}, size_t{80}}) {
      double best = std::numeric_limits<double>::infinity();
      for (size_t kappa = a; kappa + tail <= b; ++kappa) {
        best = std::min(best, NaiveRss(Columns(a, b, jumps, kappa), y));
      }
      EXPECT_NEAR(tester.TrendRss(a, b, jumps, tail), best, 1e-6) << tail;
    }
  }
}

TEST(RedundantSteps, ARampExplainsItsWholeStaircase) {
  // 6 sigma over 300 runs: the two-level pieces of a staircase at 100 and 200.
  const auto u = Series(300, 1, [](size_t i) { return 0.02 * static_cast<double>(i); });
  const ShapeTester tester(u);
  const std::vector<size_t> group = {100, 200};
  EXPECT_THAT(tester.RedundantSteps(0, 300, group, kMinTail), ElementsAre(100, 200));
}

TEST(RedundantSteps, FlatLevelsAreNoTrend) {
  // Three flat levels 3 sigma apart: the steps are the model.
  const auto u = Series(300, 2, [](size_t i) { return i < 100 ? 0.0 : i < 200 ? 3.0 : 6.0; });
  const ShapeTester tester(u);
  const std::vector<size_t> group = {100, 200};
  EXPECT_THAT(tester.RedundantSteps(0, 300, group, kMinTail), IsEmpty());
  const std::vector<size_t> late = {290};  // a late step: no 10-run creep imitates it
  const auto v = Series(300, 3, [](size_t i) { return i < 290 ? 0.0 : 4.0; });
  EXPECT_THAT(ShapeTester(v).RedundantSteps(0, 300, late, kMinTail), IsEmpty());
}

TEST(RedundantSteps, AJumpOnTheRampStaysTheOthersGo) {
  // A ramp from run 50 with a 10-sigma jump at 150; the staircase also cut at 100 and 220.
  const auto u = Series(300, 4, [](size_t i) {
    const double ramp = i < 50 ? 0.0 : 0.03 * static_cast<double>(i - 50);
    return ramp + (i >= 150 ? 10.0 : 0.0);
  });
  const ShapeTester tester(u);
  const std::vector<size_t> group = {100, 150, 220};
  EXPECT_THAT(tester.RedundantSteps(0, 300, group, kMinTail), ElementsAre(100, 220));
}

TEST(RedundantSteps, NothingToDoForAnEmptyGroupOrATinySpan) {
  const auto u = Series(40, 5, [](size_t i) { return 0.1 * static_cast<double>(i); });
  const ShapeTester tester(u);
  EXPECT_THAT(tester.RedundantSteps(0, 40, {}, kMinTail), IsEmpty());
  const std::vector<size_t> group = {5};
  EXPECT_THAT(tester.RedundantSteps(0, 11, group, kMinTail), IsEmpty());
}

}  // namespace
}  // namespace devtime::detect
