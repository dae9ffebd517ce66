// Robust building blocks of the default detector (see detect.h, steps 2 and 3), shared by the
// offline analysis (analysis.cc) and the newest-point gate (gate.cc): the across-run scale
// estimate, the replacement of isolated outlier runs and the within-run-noise effect check.
// Internal to devtime::detect. All functions are pure and thread-safe.
#pragma once

#include <limits>
#include <span>
#include <vector>

#include "services/collector/detect/detect.h"

namespace devtime::detect {

// Robust across-run sigma: MAD of first differences (insensitive to steps and to single
// outliers), falling back to the MAD of the values, then to a tiny scale. `scratch` is working
// storage.
double RobustSigma(std::span<const double> x, std::vector<double>& scratch);

// x with its isolated outlier runs (more than options.outlier_threshold x sigma away from the
// medians of their neighbours on both sides, see detect.h step 2) replaced by their
// neighbours' median.
std::vector<double> ReplaceOutliers(std::span<const double> x, double sigma,
                                    const DetectorOptions& options, std::vector<double>& scratch);

// The local-level model of a series between its change points (issue 21): a level that
// wanders as a random walk (innovation variance `walk` per run) under white noise (variance
// `noise`), both in the units of the input. Estimated from the spread of the differences at
// lag 1 and lag kWalkLag inside the segments (none spans a change point), centred on their
// median (a constant drift moves them all alike) and winsorised at 4 robust sigmas:
// Var(x[t + k] - x[t]) = 2 noise + k walk. `significant` when the walk exceeds 3 standard
// errors of its estimate under white noise (sqrt(8 / N) noise / (k - 1), N differences):
// noisy shared hosts wander like this, and their wander is not a step.
inline constexpr size_t kWalkLag = 20;
struct LocalLevel {
  double walk = 0.0;
  double noise = 0.0;
  bool significant = false;
};
// bounds: the segments' starts, sorted, then x.size().
LocalLevel EstimateLocalLevel(std::span<const double> x, std::span<const size_t> bounds);

// The innovations' winsorising limit, in standard deviations. Wide: at 4 a short deep
// excursion (8 runs of -80 %) cost the walk so little that it beat the segments that cut it
// out, and the excursion's edges were screened out. ReplaceOutliers has already taken isolated
// spikes. The likelihoods compared with a local level's (analysis.cc: white noise, the
// segments) clip their residuals at the same limit.
inline constexpr double kInnovationClip = 8.0;
// The smallest q the fit tries: a walk too slow to matter over any history, i.e. white noise.
inline constexpr double kWhiteLevelRatio = 0.001;

// The local level model (Harvey; Durbin & Koopman ch. 2), y[t] = mu[t] + eps[t],
// mu[t + 1] = mu[t] + eta[t], fitted by concentrated maximum likelihood over a grid of
// q = Var(eta) / Var(eps) with the Kalman filter (diffuse start at y[0]; O(n) per q). Outliers
// must not pass for a walk: each innovation is winsorised at kInnovationClip of its standard
// deviation, the noise's taken from the robust sigma of the first differences (`sigma`, whose
// square is Var(eps) (2 + q) / 2 under the model). `auxiliary[t]` (t >= 1) is Harvey &
// Koopman's auxiliary residual of the level disturbance between runs t - 1 and t, from the
// disturbance smoother: r / sqrt(N) over the fitted noise sigma, about N(0, 1) where the level
// only wanders, large where it jumps. `neg2_loglik`: -2 log-likelihood of y[1..] given y[0],
// the noise variance concentrated out. Empty (neg2_loglik infinite) below 3 values;
// `auxiliary` empty also when not `smooth` (the likelihood alone).
struct LocalLevelFit {
  double q = 0.0;
  double neg2_loglik = std::numeric_limits<double>::infinity();
  std::vector<double> auxiliary;
};
LocalLevelFit FitLocalLevel(std::span<const double> x, double sigma, bool smooth = true);
// Sets fit.auxiliary for fit.q (a FitLocalLevel of the same x and sigma without `smooth`).
void SmoothLocalLevel(std::span<const double> x, double sigma, LocalLevelFit& fit);

// shift >= ratio x median of the known (finite, > 0) values of `noise`; true when none is known.
bool AtLeastRatioTimesMedian(std::span<const double> noise, double ratio, double shift);

}  // namespace devtime::detect
