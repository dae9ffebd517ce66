// Small, dependency-free statistics used by the detectors: Student t and normal tails, the
// pooled two-sample t-test in the form scipy's ttest_ind_from_stats computes it, Welch's t-test,
// the F-test for equal variances, medians.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace devtime::detect {

// after / before - 1, or 0 when `before` is below a millionth of a microsecond: a baseline
// that small is no time at all, and dividing by it would give changes of 1e300 % or Infinity
// (validation bounds durations from above, so nothing else can overflow here).
double RelativeChange(double after, double before);

// Regularised incomplete beta function I_x(a, b), a, b > 0, x in [0, 1].
double IncompleteBeta(double a, double b, double x);

// Two-sided p-value of Student's t distribution: P(|T| >= |t|) with `df` degrees of freedom.
// +-inf gives 0, NaN gives NaN.
double StudentTwoSidedP(double t, double df);

// Standard normal density and the z with P(|Z| >= z) = p (two-sided), p in (0, 1].
double NormalPdf(double z);
double NormalTwoSidedQuantile(double p);

// Pooled (equal variance) two-sample t-test from summary statistics, exactly as
// scipy.stats.ttest_ind_from_stats(..., equal_var=True) computes it (std as given).
struct TTestResult {
  double t = 0.0;
  double p = 1.0;
  double df = 0.0;
};
TTestResult PooledTTest(double mean1, double std1, double n1, double mean2, double std2, double n2);

// Welch's unequal-variance two-sample t-test from means, variances (ddof = 1) and sizes
// (Welch-Satterthwaite degrees of freedom); sizes >= 2, variances > 0.
TTestResult WelchTTest(double mean1, double var1, double n1, double mean2, double var2, double n2);

// Two-sided p-value of the F-test for equal variances: var1 and var2 with df1 and df2 degrees
// of freedom (n - 1), F = var1 / var2. Variances > 0, dfs > 0.
double VarianceRatioTwoSidedP(double var1, double df1, double var2, double df2);

// Mean and standard deviation with `ddof` (0 = population, 1 = sample); empty input gives 0s.
struct Moments {
  double mean = 0.0;
  double stddev = 0.0;
};
Moments MeanStd(std::span<const double> values, int ddof);

// How much more the mean of these residuals (zero-mean by construction) varies than the mean
// of as many independent values; >= 1. The larger of two estimates, each less its sampling
// noise under independence so that white noise keeps a factor of 1 and only clear serial
// dependence (a random walk, a slow wander, an unmodelled curve) counts:
//  - Bartlett-kernel long-run variance / variance, bandwidth K = min(30, floor(sqrt(n))),
//    less twice its sd (sqrt(4K / 3n)): slow, long-range wander;
//  - AR(1): (1 + rho) / (1 - rho), rho = lag-1 autocorrelation less 1 / sqrt(n), clamped to
//    [0, 0.95]: strong short-range dependence the kernel's bandwidth underrates.
double LongRunVarianceInflation(std::span<const double> residuals);

// Median of the values (copies; NaN-free input). Empty input gives NaN.
double Median(std::span<const double> values);
// Median using `scratch` as working storage (avoids allocation in hot loops).
double MedianInPlace(std::vector<double>& scratch);

}  // namespace devtime::detect
