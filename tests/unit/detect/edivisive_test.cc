#include "services/collector/detect/edivisive.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace devtime::detect {
namespace {

// Otava's compute_Q_and_candidate_slow: every (tau, kappa) from the definition, first maximum
// in row-major (tau, kappa) order.
SplitCandidate SlowKappaFree(const std::vector<double>& z, size_t begin, size_t end) {
  SplitCandidate best;
  bool have = false;
  for (size_t tau = begin + 1; tau < end; ++tau) {
    for (size_t kappa = tau + 1; kappa <= end; ++kappa) {
      const double q = QHatDirect({z.data() + begin, tau - begin}, {z.data() + tau, kappa - tau});
      if (!have || q > best.q_hat) {
        have = true;
        best = {tau, kappa, q};
      }
    }
  }
  return best;
}

std::vector<double> RandomSeries(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_int_distribution<size_t> where(1, n - 1);
  const size_t step = where(rng);
  std::vector<double> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = noise(rng) + (i >= step ? 3.0 : 0.0);
  return z;
}

TEST(DetectEDivisive, KappaFreeMatchesSlowOracle) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<double> z = RandomSeries(rng, 4 + trial % 20);
    const size_t begin = trial % 3 == 0 ? 1 : 0;
    const SplitCandidate slow = SlowKappaFree(z, begin, z.size());
    const auto fast = BestSplitKappaFree(z, begin, z.size());
    ASSERT_TRUE(fast.has_value());
    EXPECT_EQ(fast->tau, slow.tau) << "trial " << trial;
    EXPECT_EQ(fast->kappa, slow.kappa) << "trial " << trial;
    EXPECT_NEAR(fast->q_hat, slow.q_hat, 1e-9 * std::max(1.0, std::fabs(slow.q_hat)));
  }
}

TEST(DetectEDivisive, KappaFixedMatchesDefinition) {
  std::mt19937_64 rng(11);
  EnergyScratch scratch;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<double> z = RandomSeries(rng, 8 + trial);
    if (trial % 4 == 0) z[z.size() / 2] = z[z.size() / 3];  // ties
    const size_t min_segment = 1 + trial % 3;
    size_t best_tau = 0;
    double best_q = 0.0;
    for (size_t tau = min_segment; tau + min_segment <= z.size(); ++tau) {
      const double q = QHatDirect({z.data(), tau}, {z.data() + tau, z.size() - tau});
      if (best_tau == 0 || q > best_q + 1e-12) {
        best_tau = tau;
        best_q = q;
      }
    }
    const auto fast = BestSplitKappaFixed(z, 0, z.size(), min_segment, scratch);
    ASSERT_TRUE(fast.has_value());
    EXPECT_EQ(fast->tau, best_tau) << "trial " << trial;
    EXPECT_NEAR(fast->q_hat, best_q, 1e-9 * std::max(1.0, std::fabs(best_q)));
    EXPECT_EQ(fast->kappa, z.size());
  }
}

TEST(DetectEDivisive, TooShortIntervalsHaveNoCandidate) {
  EnergyScratch scratch;
  const std::vector<double> z = {1, 2, 3, 4, 5};
  EXPECT_FALSE(BestSplitKappaFree(z, 2, 3).has_value());
  EXPECT_FALSE(BestSplitKappaFixed(z, 0, 5, 3, scratch).has_value());
  EXPECT_TRUE(BestSplitKappaFixed(z, 0, 4, 2, scratch).has_value());
}

}  // namespace
}  // namespace devtime::detect
