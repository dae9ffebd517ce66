#include "services/collector/detect/edivisive.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
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

// Indices begin..end-1 of z ordered by value.
std::vector<uint32_t> ValueOrder(const std::vector<double>& z, size_t begin, size_t end) {
  std::vector<uint32_t> order(end - begin);
  std::iota(order.begin(), order.end(), static_cast<uint32_t>(begin));
  std::sort(order.begin(), order.end(), [&z](uint32_t a, uint32_t b) { return z[a] < z[b]; });
  return order;
}

// The hierarchical search derives each part's distance profile from its parent's: it must be
// the part's own profile (each value's distance sums to the part's values before and after
// it, straight from the definition), ties included, down several levels.
TEST(DetectEDivisive, SplitProfilesAreThePartsOwnProfiles) {
  std::mt19937_64 rng(5);
  EnergyScratch scratch;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> z = RandomSeries(rng, 40 + 7 * static_cast<size_t>(trial));
    if (trial % 3 == 0) z[z.size() / 2] = z[z.size() / 4];  // ties across the parts
    size_t begin = 0, end = z.size();
    DistanceProfile profile = DistanceProfileOf(z, begin, end, ValueOrder(z, begin, end), scratch);
    for (int level = 0; level < 3; ++level) {
      const size_t tau = begin + (end - begin) / 3 + static_cast<size_t>(level);
      auto [left, right] = SplitDistanceProfile(z, begin, tau, profile, ValueOrder(z, begin, tau),
                                                ValueOrder(z, tau, end));
      // Keep the right part on even levels, the left on odd ones.
      const bool keep_right = level % 2 == 0;
      profile = keep_right ? right : left;
      (keep_right ? begin : end) = tau;
      ASSERT_EQ(profile.before.size(), end - begin);
      for (size_t t = begin; t < end; ++t) {
        double before = 0.0, after = 0.0;
        for (size_t i = begin; i < t; ++i) before += std::fabs(z[t] - z[i]);
        for (size_t j = t + 1; j < end; ++j) after += std::fabs(z[t] - z[j]);
        EXPECT_NEAR(profile.before[t - begin], before, 1e-9 * (1.0 + before))
            << "trial " << trial << " level " << level << " t " << t;
        EXPECT_NEAR(profile.after[t - begin], after, 1e-9 * (1.0 + after))
            << "trial " << trial << " level " << level << " t " << t;
      }
      const auto from_profile = BestSplitOfProfile(begin, end, 2, profile, scratch);
      std::vector<double> part(z.begin() + static_cast<std::ptrdiff_t>(begin),
                               z.begin() + static_cast<std::ptrdiff_t>(end));
      const auto direct = BestSplitKappaFixed(part, 0, part.size(), 2, scratch);
      ASSERT_TRUE(from_profile.has_value() && direct.has_value());
      EXPECT_EQ(from_profile->tau, begin + direct->tau) << "trial " << trial;
    }
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
