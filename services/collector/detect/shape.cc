#include "services/collector/detect/shape.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <vector>

#include "services/collector/detect/stats.h"

namespace devtime::detect {
namespace {

using Real = long double;
// Regressors, with c = i - tau: kOne = 1, kSlope = c, kKink = max(c, 0), kJump = [c >= 0].
enum Term { kOne, kSlope, kKink, kJump, kTerms };
using Matrix = std::array<std::array<Real, kTerms>, kTerms>;
using Vector = std::array<Real, kTerms>;

// Least squares over the regressors `use` from the Gram matrix and X'u: coefficients (0 for
// unused terms) and the residual sum of squares; false when the system is singular.
bool Fit(const Matrix& gram, const Vector& xu, Real uu, std::initializer_list<Term> use,
         Vector& beta, Real& rss) {
  const int n = static_cast<int>(use.size());
  std::array<int, kTerms> idx{};
  int k = 0;
  for (Term t : use) idx[k++] = t;
  Real a[kTerms][kTerms + 1];
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) a[r][c] = gram[idx[r]][idx[c]];
    a[r][n] = xu[idx[r]];
  }
  for (int col = 0; col < n; ++col) {  // Gaussian elimination, partial pivoting
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    if (!(std::fabs(a[pivot][col]) > 1e-9L * std::max<Real>(1.0L, std::fabs(gram[0][0])))) {
      return false;
    }
    std::swap(a[col], a[pivot]);
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const Real f = a[r][col] / a[col][col];
      for (int c = col; c <= n; ++c) a[r][c] -= f * a[col][c];
    }
  }
  beta.fill(0.0L);
  rss = uu;
  for (int r = 0; r < n; ++r) {
    beta[idx[r]] = a[r][n] / a[r][r];
    rss -= beta[idx[r]] * xu[idx[r]];
  }
  rss = std::max<Real>(rss, 0.0L);
  return true;
}

// LongRunVarianceInflation of the residuals u_i - fit_i over [a, b).
double ResidualInflation(std::span<const double> u, size_t a, size_t tau, size_t b, size_t kappa,
                         const Vector& beta) {
  std::vector<double> residuals(b - a);
  for (size_t i = a; i < b; ++i) {
    const Real c = static_cast<Real>(i) - static_cast<Real>(tau);
    const Real kink = i >= kappa ? static_cast<Real>(i - kappa) : 0.0L;
    const Real fit =
        beta[kOne] + beta[kSlope] * c + beta[kKink] * kink + (i >= tau ? beta[kJump] : 0.0L);
    residuals[i - a] = static_cast<double>(u[i] - fit);
  }
  return LongRunVarianceInflation(residuals);
}

// Sums of c and c^2 for c = from .. to - 1 (integers, possibly negative).
Real SumC(Real from, Real to) { return (to * (to - 1) - from * (from - 1)) / 2; }
Real SumC2(Real from, Real to) {
  auto s = [](Real x) { return (x - 1) * x * (2 * x - 1) / 6; };  // sum of c^2, c = 0 .. x - 1
  auto signed_s = [&](Real x) { return x >= 0 ? s(x) : -s(-x + 1); };
  return signed_s(to) - signed_s(from);
}

// The normal equations of the four regressors over [a, b) with the kink at kappa.
struct System {
  Matrix gram{};
  Vector xu{};
  Real uu = 0;
};
System Gram(const std::vector<Real>& prefix_, const std::vector<Real>& prefix_index_,
            const std::vector<Real>& prefix_squares_, size_t a, size_t tau, size_t b,
            size_t kappa) {
  // Coordinates c = i - tau; the kink term is (i - kappa)+, over j = i - kappa = 0 .. m - 1.
  const size_t n1 = tau - a, n2 = b - tau, m = b - kappa;
  const Real t = static_cast<Real>(tau), kp = static_cast<Real>(kappa);
  const Real d = kp - t;  // kink position in c coordinates
  const Real sum_u = prefix_[b] - prefix_[a];
  const Real right_u = prefix_[b] - prefix_[tau];
  const Real kink_u = prefix_[b] - prefix_[kappa];
  const Real sum_cu = (prefix_index_[b] - prefix_index_[a]) - t * sum_u;
  const Real kink_ju = (prefix_index_[b] - prefix_index_[kappa]) - kp * kink_u;
  const Real sc = SumC(-static_cast<Real>(n1), static_cast<Real>(n2));
  const Real sc2 = SumC2(-static_cast<Real>(n1), static_cast<Real>(n2));
  const Real rc = SumC(0, static_cast<Real>(n2));
  const Real sj = SumC(0, static_cast<Real>(m)), sj2 = SumC2(0, static_cast<Real>(m));
  const Real j0 = static_cast<Real>(tau > kappa ? tau - kappa : 0);
  const Real sjs = SumC(j0, static_cast<Real>(m));  // kink term over the right side
  System sys;
  Matrix& g = sys.gram;
  g[kOne] = {static_cast<Real>(n1 + n2), sc, sj, static_cast<Real>(n2)};
  g[kSlope] = {sc, sc2, sj2 + d * sj, rc};
  g[kKink] = {sj, sj2 + d * sj, sj2, sjs};
  g[kJump] = {static_cast<Real>(n2), rc, sjs, static_cast<Real>(n2)};
  sys.xu = {sum_u, sum_cu, kink_ju, right_u};
  sys.uu = prefix_squares_[b] - prefix_squares_[a];
  return sys;
}

}  // namespace

size_t ShapeTester::JointKink(size_t a, size_t tau, size_t b, size_t kappa) const {
  // RSS(kink at k) = RSS(line + jump) - (k~ . u~)^2 / (k~ . k~), ~ = the residual on the
  // regressors (1, c, J), which do not depend on k: one 3 x 3 inverse, then O(1) per k with
  // running sums (k goes down), in double as Test's own kink scan.
  const System base = Gram(prefix_, prefix_index_, prefix_squares_, a, tau, b, tau);
  const Matrix& g = base.gram;
  const std::array<std::array<double, 3>, 3> m = {
      {{static_cast<double>(g[kOne][kOne]), static_cast<double>(g[kOne][kSlope]),
        static_cast<double>(g[kOne][kJump])},
       {static_cast<double>(g[kSlope][kOne]), static_cast<double>(g[kSlope][kSlope]),
        static_cast<double>(g[kSlope][kJump])},
       {static_cast<double>(g[kJump][kOne]), static_cast<double>(g[kJump][kSlope]),
        static_cast<double>(g[kJump][kJump])}}};
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  if (!(std::fabs(det) > 1e-12)) return kappa;
  std::array<std::array<double, 3>, 3> inverse{};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {  // the adjugate: cofactor of (c, r)
      const int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
      inverse[r][c] = (m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]) / det;
    }
  }
  auto project = [&](const std::array<double, 3>& x, const std::array<double, 3>& y) {
    double sum = 0.0;
    for (int r = 0; r < 3; ++r) {
      sum += x[r] * (inverse[r][0] * y[0] + inverse[r][1] * y[1] + inverse[r][2] * y[2]);
    }
    return sum;
  };
  const std::array<double, 3> xu = {static_cast<double>(base.xu[kOne]),
                                    static_cast<double>(base.xu[kSlope]),
                                    static_cast<double>(base.xu[kJump])};
  const double t = static_cast<double>(tau);
  size_t best = kappa;
  double best_gain = -1.0;
  double tail_u = u_[b - 1], tail_cu = u_[b - 1] * (static_cast<double>(b - 1) - t);
  for (size_t k = b - 2; k > a; --k) {
    tail_u += u_[k];  // sums over i >= k of u and of (i - tau) u
    tail_cu += u_[k] * (static_cast<double>(k) - t);
    const double n = static_cast<double>(b - k), d = static_cast<double>(k) - t;
    const double sj = n * (n - 1) / 2, sj2 = (n - 1) * n * (2 * n - 1) / 6;
    // The kink term (i - k)+ over the jump's runs i >= max(k, tau).
    const double skip = k < tau ? static_cast<double>(tau - k) : 0.0;
    const std::array<double, 3> kx = {sj, sj2 + d * sj, sj - skip * (skip - 1) / 2};
    const double kk = sj2 - project(kx, kx);
    if (!(kk > 1e-9 * sj2)) continue;
    const double ku = (tail_cu - d * tail_u) - project(kx, xu);
    const double gain = ku * ku / kk;
    if (gain >= best_gain) {  // ties -> the smallest k
      best_gain = gain;
      best = k;
    }
  }
  return best;
}

ShapeTester::ShapeTester(std::span<const double> u) : u_(u) {
  prefix_.assign(u.size() + 1, 0.0L);
  prefix_index_.assign(u.size() + 1, 0.0L);
  prefix_squares_.assign(u.size() + 1, 0.0L);
  for (size_t i = 0; i < u.size(); ++i) {
    const Real x = u[i];
    prefix_[i + 1] = prefix_[i] + x;
    prefix_index_[i + 1] = prefix_index_[i] + static_cast<Real>(i) * x;
    prefix_squares_[i + 1] = prefix_squares_[i] + x * x;
  }
}

ShapeVerdict ShapeTester::Test(size_t a, size_t tau, size_t b, double sigma_floor,
                               bool jump_on_trend, bool white) const {
  ShapeVerdict v;
  const size_t n1 = tau - a, n2 = b - tau;
  if (n1 < 3 || n2 < 3) return v;
  // The null: the continuous line with one slope change that fits best, wherever it is (a
  // creep that starts before or after tau is still a creep).
  // RSS(kink at k) = RSS(line) - (k~ . u~)^2 / (k~ . k~), with ~ = the residual on the line's
  // regressors (1, c): O(1) per position, in double with running sums (k goes down), which is
  // exact enough for choosing the position (the fits below are in long double).
  const System line = Gram(prefix_, prefix_index_, prefix_squares_, a, tau, b, tau);
  const double g11 = static_cast<double>(line.gram[kOne][kOne]);
  const double g1c = static_cast<double>(line.gram[kOne][kSlope]);
  const double gcc = static_cast<double>(line.gram[kSlope][kSlope]);
  const double det = g11 * gcc - g1c * g1c;
  if (!(det > 0)) return v;
  // [p, q] G^-1 [r, s]' for the 2 x 2 line Gram G.
  auto project = [&](double p, double q, double r, double t) {
    return (p * (gcc * r - g1c * t) + q * (g11 * t - g1c * r)) / det;
  };
  const double su = static_cast<double>(line.xu[kOne]);
  const double scu = static_cast<double>(line.xu[kSlope]);
  size_t kappa = tau;
  double best_gain = -1.0;
  double tail_u = u_[b - 1], tail_cu = u_[b - 1] * static_cast<double>(b - 1 - tau);
  for (size_t k = b - 2; k > a; --k) {
    tail_u += u_[k];  // sums over i >= k of u and of (i - tau) u
    tail_cu += u_[k] * (static_cast<double>(k) - static_cast<double>(tau));
    const double m = static_cast<double>(b - k),
                 d = static_cast<double>(k) - static_cast<double>(tau);
    const double sj = m * (m - 1) / 2, sj2 = (m - 1) * m * (2 * m - 1) / 6;
    const double sck = sj2 + d * sj;
    const double kk = sj2 - project(sj, sck, sj, sck);
    if (!(kk > 1e-9 * sj2)) continue;
    const double ku = (tail_cu - d * tail_u) - project(sj, sck, su, scu);
    const double gain = ku * ku / kk;
    if (gain >= best_gain) {  // ties -> the smallest k, as scanning upwards with >
      best_gain = gain;
      kappa = k;
    }
  }
  if (best_gain < 0.0) return v;
  const System sys = Gram(prefix_, prefix_index_, prefix_squares_, a, tau, b, kappa);
  const Matrix& g = sys.gram;
  Vector step{}, kink{}, full{};
  Real rss_step = 0, rss_kink = 0, rss_full = 0;
  if (!Fit(g, sys.xu, sys.uu, {kOne, kJump}, step, rss_step) ||
      !Fit(g, sys.xu, sys.uu, {kOne, kSlope, kKink}, kink, rss_kink) ||
      !Fit(g, sys.xu, sys.uu, {kOne, kSlope, kKink, kJump}, full, rss_full)) {
    return v;
  }
  // (X'X)^-1 of the jump term in the full model = 1 / (its residual sum of squares on the
  // kinked line's regressors).
  Vector jump_on_kink{};
  Real jump_rss = 0;
  const Vector jump_xs = {g[kOne][kJump], g[kSlope][kJump], g[kKink][kJump], g[kJump][kJump]};
  if (!Fit(g, jump_xs, g[kJump][kJump], {kOne, kSlope, kKink}, jump_on_kink, jump_rss) ||
      !(jump_rss > 0)) {
    return v;
  }
  v.applicable = true;
  v.kappa = kappa;
  const double length = static_cast<double>(n1 + n2);
  // The kinked line has one parameter more than two levels and its kink is chosen from all
  // positions: it must beat them by half a BIC parameter (0.5 log(n) residual variances) to
  // make the split a trend, so that small steps in white noise are not lost to a kink that
  // fits the noise.
  constexpr double kTrendGain = 0.5;
  const Real variance = rss_full / (length - 4.0), gain = rss_step - rss_kink;
  if (variance > 0) {
    v.kink_gain = static_cast<double>(gain / (variance * std::log(static_cast<Real>(length))));
  } else {
    v.kink_gain = gain > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  v.step_like = v.kink_gain <= kTrendGain;

  // Only the test that decides (see ShapeVerdict) is computed: the long-run variance costs
  // O(K (b - a)).
  if (jump_on_trend) v.step_like = false;
  // The jump is judged on the kinked line that fits best WITH it (a joint model): the kinked
  // line's own best kink, fitted without the jump, moves to the jump to take part of it (a
  // trend that turns flat with a 5 % step near the turn: the kink sat at the step, the jump
  // on top of it was small, and the step was pruned), and the kinked line then misses the
  // real turn, whose residuals inflate the variance as well.
  if (!v.step_like) {
    const size_t joint = JointKink(a, tau, b, kappa);
    if (joint != kappa) {
      const System moved = Gram(prefix_, prefix_index_, prefix_squares_, a, tau, b, joint);
      const Matrix& h = moved.gram;
      const Vector xs = {h[kOne][kJump], h[kSlope][kJump], h[kKink][kJump], h[kJump][kJump]};
      Vector f{}, j{};
      Real rf = 0, rj = 0;
      // The kink moves only where the fit with the jump gains clearly, kJointKinkGain log n
      // residual variances: choosing the kink for the jump is a search (its best of ~L
      // positions gains some 2 log L by chance) that the jump's p-value does not pay for.
      // Measured on the quality bench (1000 series, seed bases 1, 1001, 2001): with no margin
      // a pure drift got 0.12 false steps per series instead of 0.01; with 3, one false step
      // in 1000 short stationary series and a few more on mixed stationary noise; with 6 the
      // stationary, drift and random-walk rows as before, and the turning point + 5 % step
      // F1 0.89 -> 0.96.
      constexpr double kJointKinkGain = 6.0;
      const double margin =
          kJointKinkGain * std::log(length) * static_cast<double>(rss_full) / (length - 4.0);
      if (Fit(h, moved.xu, moved.uu, {kOne, kSlope, kKink, kJump}, f, rf) &&
          static_cast<double>(rss_full - rf) > margin &&
          Fit(h, xs, h[kJump][kJump], {kOne, kSlope, kKink}, j, rj) && rj > 0) {
        kappa = joint;
        v.kappa = joint;
        full = f;
        rss_full = rf;
        jump_rss = rj;
      }
    }
  }
  if (v.step_like) {
    v.inflation = white ? 1.0 : ResidualInflation(u_, a, tau, b, kappa, step);
    const double f_step = 1.0 / v.inflation;
    const double sigma_step =
        std::max(sigma_floor, std::sqrt(static_cast<double>(rss_step) / (length - 2.0)));
    const double raw_level =
        static_cast<double>(step[kJump]) /
        (sigma_step * std::sqrt(1.0 / static_cast<double>(n1) + 1.0 / static_cast<double>(n2)));
    v.level_t = raw_level * std::sqrt(f_step);
    v.level_p = StudentTwoSidedP(v.level_t, std::max(1.0, length * f_step - 2.0));
  } else {
    v.inflation = white ? 1.0 : ResidualInflation(u_, a, tau, b, kappa, full);
    const double f_full = 1.0 / v.inflation;
    const double sigma_full =
        std::max(sigma_floor, std::sqrt(static_cast<double>(rss_full) / (length - 4.0)));
    const double raw_trend =
        static_cast<double>(full[kJump]) / (sigma_full / std::sqrt(static_cast<double>(jump_rss)));
    v.trend_t = raw_trend * std::sqrt(f_full);
    v.trend_p = StudentTwoSidedP(v.trend_t, std::max(1.0, length * f_full - 4.0));
  }
  return v;
}

double ShapeTester::LevelsRss(size_t a, size_t b, std::span<const size_t> jumps) const {
  Real rss = 0;
  size_t from = a;
  for (size_t k = 0; k <= jumps.size(); ++k) {
    const size_t to = k < jumps.size() ? jumps[k] : b;
    const Real s = prefix_[to] - prefix_[from];
    rss += prefix_squares_[to] - prefix_squares_[from] - s * s / static_cast<Real>(to - from);
    from = to;
  }
  return static_cast<double>(std::max<Real>(rss, 0.0L));
}

double ShapeTester::TrendRss(size_t a, size_t b, std::span<const size_t> jumps,
                             size_t min_tail) const {
  // The levels (1 and the jumps) span the segment indicators, so adding h = (i - kappa)+
  // lowers their residual sum of squares by (h~ . u~)^2 / (h~ . h~), ~ = less the segment
  // means. A segment [l, r) after kappa adds constants, h being i less a constant there:
  // sum (i - mean i) u_i and sum (i - mean i)^2 = c (c^2 - 1) / 12 (c = r - l). The segment
  // holding kappa adds, with h = j over j = 0 .. r - kappa - 1, S_hu - S_h S_u / c and
  // S_hh - S_h^2 / c. O(1) per kink position with suffix sums over the segments.
  std::vector<size_t> bounds = {a};
  bounds.insert(bounds.end(), jumps.begin(), jumps.end());
  bounds.push_back(b);
  const size_t segments = bounds.size() - 1;
  std::vector<Real> after_hu(segments + 1, 0.0L), after_hh(segments + 1, 0.0L);
  for (size_t s = segments; s-- > 0;) {
    const size_t l = bounds[s], r = bounds[s + 1];
    const Real c = static_cast<Real>(r - l);
    const Real mean_i = (static_cast<Real>(l) + static_cast<Real>(r - 1)) / 2;
    const Real centred_iu =
        (prefix_index_[r] - prefix_index_[l]) - mean_i * (prefix_[r] - prefix_[l]);
    after_hu[s] = after_hu[s + 1] + centred_iu;
    after_hh[s] = after_hh[s + 1] + c * (c * c - 1) / 12;
  }
  // The scan in double with running sums over [kappa, r) (exact enough for the best gain, as
  // in Test's kink scan).
  double best_gain = 0.0;
  size_t s = 0;
  double tail_u = 0.0, tail_iu = 0.0, segment_u = 0.0, c = 1.0, rest_hu = 0.0, rest_hh = 0.0;
  for (size_t kappa = a; kappa + min_tail <= b; ++kappa) {
    if (kappa == bounds[s + (kappa == a ? 0 : 1)]) {  // entering a segment
      if (kappa != a) ++s;
      const size_t l = bounds[s], r = bounds[s + 1];
      tail_u = segment_u = static_cast<double>(prefix_[r] - prefix_[l]);
      tail_iu = static_cast<double>(prefix_index_[r] - prefix_index_[l]);
      c = static_cast<double>(r - l);
      rest_hu = static_cast<double>(after_hu[s + 1]);
      rest_hh = static_cast<double>(after_hh[s + 1]);
    }
    const double k = static_cast<double>(kappa);
    const double m = static_cast<double>(bounds[s + 1] - kappa);
    const double sum_h = m * (m - 1) / 2;
    const double hu = (tail_iu - k * tail_u) - sum_h * segment_u / c + rest_hu;
    const double hh = (m - 1) * m * (2 * m - 1) / 6 - sum_h * sum_h / c + rest_hh;
    if (hh > 1e-9) best_gain = std::max(best_gain, hu * hu / hh);
    tail_u -= u_[kappa];
    tail_iu -= k * u_[kappa];
  }
  return std::max(0.0, LevelsRss(a, b, jumps) - best_gain);
}

std::vector<size_t> ShapeTester::RedundantSteps(size_t a, size_t b, std::span<const size_t> group,
                                                size_t min_tail) const {
  const double n = static_cast<double>(b - a);
  if (group.empty() || b - a < min_tail + 2) return {};
  const double log_n = std::log(n);
  // BIC; the residual sum of squares floored so that a noiseless fit stays finite.
  auto criterion = [&](double rss, size_t parameters) {
    return n * std::log(std::max(rss, 1e-12 * n) / n) + static_cast<double>(parameters) * log_n;
  };
  const double staircase = criterion(LevelsRss(a, b, group), 1 + 2 * group.size());
  std::vector<size_t> kept;  // sorted
  double trend = criterion(TrendRss(a, b, kept, min_tail), 3);
  std::vector<bool> in(group.size(), false);
  constexpr double kPositiveEvidence = 2.0;  // see below
  while (kept.size() < group.size()) {
    // Adding the last step would keep them all, which removes none: only worth fitting when
    // the trend without it would win.
    if (kept.size() + 1 == group.size() && !(trend + kPositiveEvidence < staircase)) break;
    double best = std::numeric_limits<double>::infinity();
    size_t best_k = group.size();
    for (size_t k = 0; k < group.size(); ++k) {
      if (in[k]) continue;
      std::vector<size_t> with = kept;
      with.insert(std::upper_bound(with.begin(), with.end(), group[k]), group[k]);
      const double c = criterion(TrendRss(a, b, with, min_tail), 3 + 2 * with.size());
      if (c < best) {
        best = c;
        best_k = k;
      }
    }
    if (!(best < trend)) break;
    trend = best;
    in[best_k] = true;
    kept.insert(std::upper_bound(kept.begin(), kept.end(), group[best_k]), group[best_k]);
  }
  // The steps passed their tests: the trend must be better by positive evidence, a BIC
  // difference of 2 (a Bayes factor of about e; Kass and Raftery), not by a hair. Real steps
  // that a ramp happens to fit about as well (a step near b, two close steps) stay steps.
  if (kept.size() == group.size() || !(trend + kPositiveEvidence < staircase)) return {};
  std::vector<size_t> redundant;
  for (size_t k = 0; k < group.size(); ++k) {
    if (!in[k]) redundant.push_back(group[k]);
  }
  return redundant;
}

}  // namespace devtime::detect
