#include "services/collector/detect/season.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "services/collector/detect/stats.h"

namespace devtime::detect {
namespace {

constexpr double kMadToSigma = 1.4826;
constexpr double kWinsorSigmas = 4.0;
constexpr size_t kSeasonSearchRuns = 1200;  // 20 cycles of the longest period

// Upper tail P(F >= f) of the F distribution with (df1, df2) degrees of freedom.
double FUpperP(double f, double df1, double df2) {
  if (!(f > 0.0)) return 1.0;
  return IncompleteBeta(0.5 * df2, 0.5 * df1, df2 / (df2 + df1 * f));
}

// The first differences of x, winsorised at kWinsorSigmas robust sigmas around their median.
std::vector<double> WinsorisedDifferences(std::span<const double> x) {
  std::vector<double> d(x.size() - 1);
  for (size_t i = 1; i < x.size(); ++i) d[i - 1] = x[i] - x[i - 1];
  const double center = Median(d);
  std::vector<double> spread(d.size());
  for (size_t i = 0; i < d.size(); ++i) spread[i] = std::fabs(d[i] - center);
  const double limit = kWinsorSigmas * kMadToSigma * MedianInPlace(spread);
  for (double& v : d) v = std::clamp(v, center - limit, center + limit);
  return d;
}

// p-value of the F-test that the differences' means differ by phase i mod `period` (i the
// index of the run each difference leads to).
double PhasePvalue(std::span<const double> d, size_t period, std::vector<double>& sums,
                   std::vector<double>& counts) {
  sums.assign(period, 0.0);
  counts.assign(period, 0.0);
  double total = 0.0, squares = 0.0;
  size_t phase = 1 % period;  // (i + 1) % period, without a division per run
  for (size_t i = 0; i < d.size(); ++i) {
    sums[phase] += d[i];
    counts[phase] += 1.0;
    total += d[i];
    squares += d[i] * d[i];
    if (++phase == period) phase = 0;
  }
  const double n = static_cast<double>(d.size());
  const double mean = total / n;
  double between = 0.0;
  for (size_t k = 0; k < period; ++k) {
    if (counts[k] > 0.0) between += counts[k] * std::pow(sums[k] / counts[k] - mean, 2);
  }
  const double within = squares - n * mean * mean - between;
  const double df1 = static_cast<double>(period - 1), df2 = n - static_cast<double>(period);
  if (!(within > 0.0) || df2 < 1.0) return 1.0;
  return FUpperP((between / df1) / (within / df2), df1, df2);
}

// Phase medians of x less its centred moving average over one period (for an even period the
// 2 x p average, whose end runs count half), centred to mean 0. Medians, not means: where the
// average's window spans a step or a spike (one cycle per step) x less it is off by the
// step's share, and a mean would carry that error into every cycle, where it reads as a
// staircase of steps one period apart.
std::vector<double> Decompose(std::span<const double> x, size_t period) {
  const size_t n = x.size();
  const size_t half = period / 2;
  const bool even = period % 2 == 0;
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  std::vector<std::vector<double>> by_phase(period);
  for (size_t i = half; i + half < n; ++i) {
    double average = 0.0;
    if (even) {
      const double inner = prefix[i + half] - prefix[i - half + 1];
      average = (inner + 0.5 * (x[i - half] + x[i + half])) / static_cast<double>(period);
    } else {
      average = (prefix[i + half + 1] - prefix[i - half]) / static_cast<double>(period);
    }
    by_phase[i % period].push_back(x[i] - average);
  }
  std::vector<double> profile(period, 0.0);
  double mean = 0.0;
  for (size_t k = 0; k < period; ++k) {
    profile[k] = by_phase[k].empty() ? 0.0 : MedianInPlace(by_phase[k]);
    mean += profile[k] / static_cast<double>(period);
  }
  for (double& v : profile) v -= mean;
  return profile;
}

}  // namespace

std::vector<double> SeasonalProfile(std::span<const double> x) {
  const size_t n = x.size();
  const size_t longest = std::min(kMaxSeasonPeriod, n / 4);
  if (longest < 2) return {};
  // The period is searched in the last kSeasonSearchRuns runs (plenty for periods up to
  // kMaxSeasonPeriod, and it keeps a 10,000-run history's analysis within its time budget).
  const size_t from = n > kSeasonSearchRuns ? n - kSeasonSearchRuns : 0;
  const std::vector<double> d = WinsorisedDifferences(x.subspan(from));
  std::vector<double> sums, counts;
  double best_p = 1.0;
  size_t best_period = 0;
  for (size_t period = 2; period <= longest; ++period) {
    const double p = PhasePvalue(d, period, sums, counts);
    if (p < best_p) {
      best_p = p;
      best_period = period;
    }
  }
  const double tried = static_cast<double>(longest - 1);
  if (best_period == 0 || best_p * tried > kSeasonPvalue) return {};
  return Decompose(x, best_period);
}

}  // namespace devtime::detect
