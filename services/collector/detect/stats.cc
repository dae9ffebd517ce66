#include "services/collector/detect/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace devtime::detect {

double RelativeChange(double after, double before) {
  constexpr double kNoTimeUs = 1e-6;
  return std::fabs(before) < kNoTimeUs ? 0.0 : after / before - 1.0;
}
namespace {

// Continued fraction for the incomplete beta function (modified Lentz).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxIterations = 500;
  constexpr double kEpsilon = 1e-16;
  constexpr double kTiny = 1e-300;
  const double qab = a + b;
  const double qap = a + 1.0;
  const double qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return h;
}

}  // namespace

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1.0) / (a + b + 2.0)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1.0 - front * BetaContinuedFraction(b, a, 1.0 - x) / b;
}

double StudentTwoSidedP(double t, double df) {
  if (std::isnan(t) || std::isnan(df) || df <= 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  const double t2 = t * t;
  // I_{df/(df+t^2)}(df/2, 1/2); for huge t use the complementary form to keep precision.
  return std::min(1.0, IncompleteBeta(0.5 * df, 0.5, df / (df + t2)));
}

double NormalPdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi); }

namespace {

// log P(|Z| >= z) for z >= 0; the asymptotic form where erfc underflows (p below ~1e-308).
double LogTwoSidedTail(double z) {
  const double x = z / std::numbers::sqrt2;
  const double tail = std::erfc(x);
  if (tail > 0.0) return std::log(tail);
  return -x * x - std::log(x * std::sqrt(std::numbers::pi));
}

}  // namespace

double NormalTwoSidedQuantile(double p) {
  if (!(p > 0.0)) return std::numeric_limits<double>::infinity();
  if (p >= 1.0) return 0.0;
  // Start: Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4). Then Newton on the log of the
  // tail, g(z) = log P(|Z| >= z) - log p, which is close to linear in z where the tail itself
  // is exponentially flat: two or three steps reach 1e-12 (Newton on the tail took dozens).
  const double t = std::sqrt(-2.0 * std::log(0.5 * p));
  double z = t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                     (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  z = std::max(z, 0.0);
  const double log_p = std::log(p);
  const double log_two_pdf_front = std::log(2.0) - 0.5 * std::log(2.0 * std::numbers::pi);
  for (int i = 0; i < 50; ++i) {
    const double log_tail = LogTwoSidedTail(z);
    // g'(z) = -2 pdf(z) / P(|Z| >= z), in logs so that neither underflows.
    const double slope = -std::exp(log_two_pdf_front - 0.5 * z * z - log_tail);
    const double step = (log_tail - log_p) / slope;
    z = std::max(0.0, z - step);
    if (std::fabs(step) < 1e-12 * std::max(1.0, z)) break;
  }
  return z;
}

TTestResult PooledTTest(double mean1, double std1, double n1, double mean2, double std2,
                        double n2) {
  TTestResult result;
  result.df = n1 + n2 - 2.0;
  if (result.df <= 0.0) return result;
  const double pooled_variance = ((n1 - 1.0) * std1 * std1 + (n2 - 1.0) * std2 * std2) / result.df;
  const double denominator = std::sqrt(pooled_variance * (1.0 / n1 + 1.0 / n2));
  result.t = (mean1 - mean2) / denominator;  // +-inf or NaN when the denominator is 0
  result.p = StudentTwoSidedP(result.t, result.df);
  return result;
}

TTestResult WelchTTest(double mean1, double var1, double n1, double mean2, double var2, double n2) {
  TTestResult result;
  const double a = var1 / n1, b = var2 / n2;
  result.df = (a + b) * (a + b) / (a * a / (n1 - 1.0) + b * b / (n2 - 1.0));
  result.t = (mean1 - mean2) / std::sqrt(a + b);
  result.p = StudentTwoSidedP(result.t, result.df);
  return result;
}

double VarianceRatioTwoSidedP(double var1, double df1, double var2, double df2) {
  // P(F >= f) = I_{df2 / (df2 + df1 f)}(df2 / 2, df1 / 2); the smaller tail, doubled.
  const double f = var1 / var2;
  const double upper = IncompleteBeta(0.5 * df2, 0.5 * df1, df2 / (df2 + df1 * f));
  return std::min(1.0, 2.0 * std::min(upper, 1.0 - upper));
}

Moments MeanStd(std::span<const double> values, int ddof) {
  Moments moments;
  if (values.empty()) return moments;
  long double sum = 0.0L;
  for (double v : values) sum += v;
  const long double mean = sum / static_cast<long double>(values.size());
  long double squares = 0.0L;
  for (double v : values) squares += (v - mean) * (v - mean);
  moments.mean = static_cast<double>(mean);
  const long double denominator = static_cast<long double>(values.size()) - ddof;
  moments.stddev = denominator > 0 ? static_cast<double>(std::sqrt(squares / denominator)) : 0.0;
  return moments;
}

double MedianInPlace(std::vector<double>& scratch) {
  if (scratch.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t half = scratch.size() / 2;
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(half),
                   scratch.end());
  const double upper = scratch[half];
  if (scratch.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(half));
  return 0.5 * (lower + upper);
}

double Median(std::span<const double> values) {
  std::vector<double> scratch(values.begin(), values.end());
  return MedianInPlace(scratch);
}

double LongRunVarianceInflation(std::span<const double> residuals) {
  const size_t n = residuals.size();
  if (n < 4) return 1.0;
  const size_t k_max = std::min<size_t>(30, static_cast<size_t>(std::sqrt(static_cast<double>(n))));
  double gamma0 = 0.0;
  for (double r : residuals) gamma0 += r * r;
  if (!(gamma0 > 0.0)) return 1.0;
  double weighted = 0.0, lag1 = 0.0;
  for (size_t k = 1; k <= k_max; ++k) {
    double gamma = 0.0;
    for (size_t i = k; i < n; ++i) gamma += residuals[i] * residuals[i - k];
    if (k == 1) lag1 = gamma / gamma0;
    weighted += (1.0 - static_cast<double>(k) / static_cast<double>(k_max + 1)) * gamma;
  }
  const double dn = static_cast<double>(n);
  const double bartlett = 1.0 + 2.0 * weighted / gamma0 -
                          2.0 * std::sqrt(4.0 * static_cast<double>(k_max) / (3.0 * dn));
  const double rho = std::clamp(lag1 - 1.0 / std::sqrt(dn), 0.0, 0.95);
  return std::max({1.0, bartlett, (1.0 + rho) / (1.0 - rho)});
}

}  // namespace devtime::detect
