#include "services/collector/detect/robust.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "services/collector/detect/stats.h"

namespace devtime::detect {
namespace {

constexpr double kMadToSigma = 1.4826;

// Median of up to k values of x on one side of i (excluding i); NaN when none.
double SideMedian(std::span<const double> x, size_t i, size_t k, bool left,
                  std::vector<double>& scratch) {
  if (k == 3 && (left ? i >= 3 : i + 3 < x.size())) {  // the default: no allocation, no sort
    const double a = left ? x[i - 1] : x[i + 1];
    const double b = left ? x[i - 2] : x[i + 2];
    const double c = left ? x[i - 3] : x[i + 3];
    return std::max(std::min(a, b), std::min(std::max(a, b), c));
  }
  scratch.clear();
  if (left) {
    for (size_t j = i; j > 0 && scratch.size() < k; --j) scratch.push_back(x[j - 1]);
  } else {
    for (size_t j = i + 1; j < x.size() && scratch.size() < k; ++j) scratch.push_back(x[j]);
  }
  return MedianInPlace(scratch);
}

}  // namespace

double RobustSigma(std::span<const double> x, std::vector<double>& scratch) {
  if (x.size() >= 3) {
    scratch.clear();
    for (size_t i = 1; i < x.size(); ++i) scratch.push_back(std::fabs(x[i] - x[i - 1]));
    const double sigma = kMadToSigma * MedianInPlace(scratch) / std::numbers::sqrt2;
    if (sigma > 0.0) return sigma;
  }
  scratch.assign(x.begin(), x.end());
  const double median = x.empty() ? 0.0 : MedianInPlace(scratch);
  scratch.clear();
  for (double v : x) scratch.push_back(std::fabs(v - median));
  const double mad = scratch.empty() ? 0.0 : kMadToSigma * MedianInPlace(scratch);
  if (mad > 0.0) return mad;
  return 1e-9 * std::max(1.0, std::fabs(median));
}

// Replaces isolated outliers (see header). The first and the last run have neighbours on one
// side only; either is replaced when it stands out from the median of its j = min(k,
// 2 x min_segment - 3) nearest runs. That cannot remove a reportable level: a run that shares
// a segment of min_segment runs with its neighbours has min_segment - 1 of them, a majority of
// those j, within the limit, and then so is their median. Without this, one spike among the
// first or last min_segment runs makes a short edge segment whose mean the spike carries
// (a 30 % spike moves a 3-run mean by 10 %), and the pooled t-test, whose variance comes
// from the long side, reports it.
std::vector<double> ReplaceOutliers(std::span<const double> x, double sigma,
                                    const DetectorOptions& options, std::vector<double>& scratch) {
  std::vector<double> clean(x.begin(), x.end());
  if (options.outlier_threshold <= 0.0 || options.outlier_neighbours == 0 || x.size() < 3) {
    return clean;
  }
  const double limit = options.outlier_threshold * sigma;
  const size_t k = options.outlier_neighbours;
  // min_segment 1: a single edge run may be a level of its own; never replaced.
  const size_t edge_neighbours =
      options.min_segment >= 2 ? std::min(k, 2 * options.min_segment - 3) : 0;
  for (size_t i = 1; i + 1 < x.size(); ++i) {
    const double right = SideMedian(x, i, k, false, scratch);
    const double dr = x[i] - right;
    if (std::fabs(dr) <= limit) continue;
    const double left = SideMedian(x, i, k, true, scratch);
    const double dl = x[i] - left;
    if (std::fabs(dl) <= limit || (dl > 0) != (dr > 0)) continue;
    scratch.clear();
    for (size_t j = i > k ? i - k : 0; j < std::min(x.size(), i + k + 1); ++j) {
      if (j != i) scratch.push_back(x[j]);
    }
    clean[i] = MedianInPlace(scratch);
  }
  // The ends last, against their neighbours as cleaned: two spikes among the first run's
  // three neighbours made their median a spike, and the first run, a plain one, was replaced
  // by it (a 26-sigma spike at run 0, which then let the random-walk screen drop every step of
  // the series: quality bench, 5 % steps with outlier runs).
  if (edge_neighbours == 0 || x.size() <= edge_neighbours) return clean;
  for (const size_t i : {size_t{0}, x.size() - 1}) {
    const double side = SideMedian(clean, i, edge_neighbours, i != 0, scratch);
    if (std::fabs(x[i] - side) > limit) clean[i] = side;
  }
  return clean;
}

namespace {

// The lag-`lag` differences inside each segment, centred on their median and winsorised at 4
// robust sigmas: their sum of squares and count, and the centre and limit used.
struct DifferenceSquares {
  double squares = 0.0, center = 0.0, limit = 0.0;
  size_t count = 0;
  double Clipped(double difference) const {
    const double c = std::clamp(difference - center, -limit, limit);
    return c * c;
  }
};
// `d` and `scratch` are working storage.
DifferenceSquares WithinSegmentDifferences(std::span<const double> x,
                                           std::span<const size_t> bounds, size_t lag,
                                           std::vector<double>& d, std::vector<double>& scratch) {
  DifferenceSquares out;
  d.clear();
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    for (size_t i = bounds[s] + lag; i < bounds[s + 1]; ++i) d.push_back(x[i] - x[i - lag]);
  }
  out.count = d.size();
  if (d.size() < 2) return out;
  // The centre and the winsorising limit from at most kRobustSample evenly spaced differences:
  // plenty for a median and a MAD, and it keeps a 10,000-run history's test within budget.
  constexpr size_t kRobustSample = 4096;
  const size_t stride = (d.size() + kRobustSample - 1) / kRobustSample;
  scratch.clear();
  for (size_t i = 0; i < d.size(); i += stride) scratch.push_back(d[i]);
  out.center = MedianInPlace(scratch);
  scratch.clear();
  for (size_t i = 0; i < d.size(); i += stride) scratch.push_back(std::fabs(d[i] - out.center));
  out.limit = 4.0 * kMadToSigma * MedianInPlace(scratch);
  for (double v : d) out.squares += out.Clipped(v);
  return out;
}

// 3 standard errors. Lower catches more walks whose cuts hid them (the segments were cut
// where the walk moved most), but then also gates white noise, where the windowed test costs
// 2 % steps their power: at 2.5 about 1.2 % of white 300-run series read as a walk, and a
// lone 2 % step at 1 % noise then failed the windowed test with t 16 as a step. Since the
// local-level screen (analysis.cc) takes most walks, this test is its fallback. Quality bench,
// 1000 series, seed bases 1/1001/2001 (with the leave-one-cut-out test gone, analysis.cc,
// RemoveWalkSteps): 2 % steps F1 0.923/0.928/0.916 -> 0.927/0.930/0.919, one 2 % step
// within +-2 runs 96.4/93.5/96.4 -> 96.8/94.0/96.7 %, 0.3 %/run walk false steps per
// 10,000 runs 0.90/1.07/0.70 -> 1.00/1.13/1.17.
constexpr double kWalkSigmas = 3.0;

// The local level from the variances of the lag-1 and lag-kWalkLag differences.
LocalLevel FromVariances(double v1, size_t n1, double vk, size_t nk, double walk_sigmas) {
  LocalLevel level;
  if (n1 < 2 || nk < 2 * kWalkLag) return level;
  const double lags = static_cast<double>(kWalkLag - 1);
  level.walk = std::max(0.0, (vk - v1) / lags);
  level.noise = std::max(0.0, (v1 - level.walk) / 2.0);
  const double standard_error = std::sqrt(8.0 / static_cast<double>(nk)) * (v1 / 2.0) / lags;
  level.significant = level.walk > walk_sigmas * standard_error;
  return level;
}

}  // namespace

LocalLevel EstimateLocalLevel(std::span<const double> x, std::span<const size_t> bounds) {
  std::vector<double> d, scratch;
  d.reserve(x.size());
  scratch.reserve(x.size());
  const DifferenceSquares one = WithinSegmentDifferences(x, bounds, 1, d, scratch);
  const DifferenceSquares lag = WithinSegmentDifferences(x, bounds, kWalkLag, d, scratch);
  if (one.count < 2 || lag.count < 2) return {};
  return FromVariances(one.squares / static_cast<double>(one.count), one.count,
                       lag.squares / static_cast<double>(lag.count), lag.count, kWalkSigmas);
}

namespace {

// q from white noise (0.001: a walk too slow to matter) to a walk that dominates the noise.
constexpr std::array<double, 9> kLevelRatios = {
    kWhiteLevelRatio, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0};

struct FilterSums {
  double scaled_squares = 0.0;  // sum of v^2 / F (F in units of the noise variance)
  double log_variances = 0.0;   // sum of log F
};

// The local level filter for one q; stores v[t] and F[t] when given (t >= 1).
FilterSums LocalLevelFilter(std::span<const double> x, double q, double sigma, double* v, double* f,
                            std::vector<bool>* clipped = nullptr) {
  FilterSums sums;
  const double noise = sigma * sigma * 2.0 / (2.0 + q);
  double level = x[0], p = 1.0 + q;  // after y[0]: the level's variance is the noise's, + q
  // F converges to its steady state within some hundred runs and then repeats exactly: its
  // logarithm and the clipping limit are computed only when it changes.
  double last_f = -1.0, log_f = 0.0, limit = 0.0;
  for (size_t t = 1; t < x.size(); ++t) {
    const double ft = p + 1.0;
    if (ft != last_f) {
      last_f = ft;
      log_f = std::log(ft);
      limit = kInnovationClip * std::sqrt(ft * noise);
    }
    const double vt = std::clamp(x[t] - level, -limit, limit);
    if (clipped != nullptr) (*clipped)[t] = std::fabs(x[t] - level) > limit;
    level += p / ft * vt;
    p = p / ft + q;  // P (1 - K) + q, with 1 - K = 1 / F
    sums.scaled_squares += vt * vt / ft;
    sums.log_variances += log_f;
    if (v != nullptr) {
      v[t] = vt;
      f[t] = ft;
    }
  }
  return sums;
}

double Neg2LogLikelihood(const FilterSums& sums, size_t n) {
  const double m = static_cast<double>(n - 1);
  const double variance = std::max(sums.scaled_squares / m, 1e-300);
  return m * (std::log(2.0 * std::numbers::pi * variance) + 1.0) + sums.log_variances;
}

// LocalLevelFilter's sums for every q of kLevelRatios, in one pass over x: the same
// operations in the same order per q (the same sums, bit for bit), but the grid's filters are
// independent chains, interleaved so that their divisions overlap (one q after the other,
// each run waited for the last one's division: a tenth of a 10,000-run analysis).
std::array<FilterSums, kLevelRatios.size()> LocalLevelGrid(std::span<const double> x,
                                                           double sigma) {
  constexpr size_t kQs = kLevelRatios.size();
  std::array<FilterSums, kQs> sums{};
  std::array<double, kQs> noise{}, level{}, p{}, last_f{}, log_f{}, limit{};
  for (size_t k = 0; k < kQs; ++k) {
    noise[k] = sigma * sigma * 2.0 / (2.0 + kLevelRatios[k]);
    level[k] = x[0];
    p[k] = 1.0 + kLevelRatios[k];
    last_f[k] = -1.0;
  }
  for (size_t t = 1; t < x.size(); ++t) {
    for (size_t k = 0; k < kQs; ++k) {
      const double ft = p[k] + 1.0;
      if (ft != last_f[k]) {
        last_f[k] = ft;
        log_f[k] = std::log(ft);
        limit[k] = kInnovationClip * std::sqrt(ft * noise[k]);
      }
      const double vt = std::clamp(x[t] - level[k], -limit[k], limit[k]);
      level[k] += p[k] / ft * vt;
      p[k] = p[k] / ft + kLevelRatios[k];
      sums[k].scaled_squares += vt * vt / ft;
      sums[k].log_variances += log_f[k];
    }
  }
  return sums;
}

}  // namespace

LocalLevelFit FitLocalLevel(std::span<const double> x, double sigma, bool smooth) {
  LocalLevelFit fit;
  const size_t n = x.size();
  if (n < 3 || !(sigma > 0.0)) return fit;
  const auto grid = LocalLevelGrid(x, sigma);
  for (size_t k = 0; k < kLevelRatios.size(); ++k) {
    const double l = Neg2LogLikelihood(grid[k], n);
    if (l < fit.neg2_loglik) {
      fit.neg2_loglik = l;
      fit.q = kLevelRatios[k];
    }
  }
  if (smooth) SmoothLocalLevel(x, sigma, fit);
  return fit;
}

void SmoothLocalLevel(std::span<const double> x, double sigma, LocalLevelFit& fit) {
  const size_t n = x.size();
  if (n < 3 || !(sigma > 0.0)) return;
  // The disturbance smoother for the best q: r[t - 1] = v[t] / F[t] + L[t] r[t] and
  // N[t - 1] = 1 / F[t] + L[t]^2 N[t], with L = 1 / F for this model; r[t - 1] belongs to the
  // disturbance that moves the level from run t - 1 to run t.
  std::vector<double> v(n, 0.0), f(n, 1.0);
  std::vector<bool> clipped(n, false);
  const FilterSums sums = LocalLevelFilter(x, fit.q, sigma, v.data(), f.data(), &clipped);
  const double noise_sigma =
      std::sqrt(std::max(sums.scaled_squares / static_cast<double>(n - 1), 1e-300));
  fit.auxiliary.assign(n, 0.0);
  double r = 0.0, nn = 0.0;
  for (size_t t = n - 1; t >= 1; --t) {
    const double l = 1.0 / f[t];
    r = v[t] / f[t] + l * r;
    nn = 1.0 / f[t] + l * l * nn;
    fit.auxiliary[t] = r / (noise_sigma * std::sqrt(nn));
  }
  // A clipped innovation is a jump beyond any walk: infinite, so that the screen keeps it and
  // places it there (the clipped remainder spreads over the following runs' residuals).
  for (size_t t = 1; t < n; ++t) {
    if (clipped[t]) fit.auxiliary[t] = std::numeric_limits<double>::infinity();
  }
}

// shift >= ratio x median of the known (finite, > 0) noise values; true when none is known.
// The same decision as comparing with MedianInPlace of those values, bit for bit, in one
// counting pass and without copying: with f(x) = ratio * x (monotone also when rounded) and
// h = known / 2, the median is the h-th smallest value (odd count; 0-based) or the mean of
// the (h-1)-th and h-th (even count), and
//   #{f(x) <= shift} >= h + 1  ->  f(h-th) <= shift, and then f(median) <= shift too;
//   #{f(x) <= shift} <= h - 1  ->  f((h-1)-th) > shift, so f(median) > shift;
//   #{f(x) <= shift} == h (even count only decides here) -> (h-1)-th = the largest value with
//   f(x) <= shift, h-th = the smallest with f(x) > shift: the median is computed from them.
bool AtLeastRatioTimesMedian(std::span<const double> noise, double ratio, double shift) {
  size_t known = 0, below = 0;
  double largest_below = 0.0;
  double smallest_above = std::numeric_limits<double>::infinity();
  for (double x : noise) {
    if (!(std::isfinite(x) && x > 0.0)) continue;
    ++known;
    if (ratio * x <= shift) {
      ++below;
      largest_below = std::max(largest_below, x);
    } else {
      smallest_above = std::min(smallest_above, x);
    }
  }
  if (known == 0) return true;
  const size_t half = known / 2;
  if (below >= half + 1) return true;
  if (known % 2 == 1 || below + 1 <= half) return false;
  return shift >= ratio * (0.5 * (largest_below + smallest_above));
}

}  // namespace devtime::detect
