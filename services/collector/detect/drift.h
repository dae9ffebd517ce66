// Trend statistics behind DetectDrift (detect.h; issue 13 item 1): Mann-Kendall's S in
// O(n log n), the Theil-Sen slope, and the start of a creep by a flat-then-linear (hinge) fit.
// Internal to devtime::detect. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>

#include "services/collector/detect/detect.h"

namespace devtime::detect {

// Mann-Kendall: S = sum over i < j of sign(x_j - x_i) and its variance under "no trend" with
// the tie correction, (n (n-1) (2n+5) - sum over tie groups of t (t-1) (2t+5)) / 18.
struct MannKendall {
  double s = 0.0;
  double variance = 0.0;
  double tau = 0.0;  // S / (n (n-1) / 2)
};
MannKendall MannKendallS(std::span<const double> x);

// Median of the pairwise slopes (x_j - x_i) / (at_j - at_i), i < j, at strictly increasing.
// Exact up to 700 points; longer inputs use every k-th point (k = ceil(n / 700)).
double TheilSenSlope(std::span<const double> at, std::span<const double> x);

// The position k in [0, last] minimising the squared error of x ~ a + b max(0, at - at[k])
// (k = 0: a plain line), that error and the fit's a (level) and b (slope). at strictly
// increasing; last < x.size().
struct Hinge {
  size_t start = 0;
  double rss = 0.0;
  double level = 0.0;
  double slope = 0.0;
};
Hinge HingeFit(std::span<const double> at, std::span<const double> x, size_t last);
inline size_t HingeStart(std::span<const double> at, std::span<const double> x, size_t last) {
  return HingeFit(at, x, last).start;
}

// The smallest squared error of two levels, x ~ mean of [0, k) and of [k, n), over k with at
// least min_side values on each side; +infinity where there is no such k.
double StepRss(std::span<const double> x, size_t min_side);

// The continuous line whose slope changes once, x ~ a + b at + c max(0, at - at[k]), over k
// with at least min_leg values on each side (at strictly increasing): where it turns (k), its
// value there (level), the slopes before (b) and after (b + c), and its squared error against
// a straight line's (line_rss). k = 0 where no k qualifies. O(n).
struct Turn {
  size_t at = 0;
  double level = 0.0;
  double slope_before = 0.0;
  double slope_after = 0.0;
  double rss = 0.0;
  double line_rss = 0.0;
};
Turn TurnFit(std::span<const double> at, std::span<const double> x, size_t min_leg);

// Whether Analyze reports a drift over `points`, one span between steps: DetectDrift's over all
// of it, or one on a leg where the span turns (drift.cc, DriftsOf).
bool SpanReportsDrift(std::span<const Point> points, const DetectorOptions& options);

}  // namespace devtime::detect
