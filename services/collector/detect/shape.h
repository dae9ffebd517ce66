// The shape test of a candidate step (issue 13 item 2): is the split at tau of u[a, b) a jump
// of the level, or only a piece of a smooth trend, a slope change, a cycle or a random walk?
//
// Method: a piecewise-linear null model. Between a change point's neighbours the series may
// follow a continuous line whose slope changes once, at the best position kappa anywhere in
// [a, b) (regressors 1, c, (i - kappa)+ with c = i - tau; the scan is O(1) per position); a
// step must add a level jump at tau (regressor [i >= tau]) that this kinked line cannot explain.
//  - step_like: two flat levels fit at least as well as the kinked line, allowing it half a
//    BIC parameter (0.5 log(n) residual variances) for its extra parameter and chosen kink;
//    then the two-level test decides (level_p): a plain step keeps its full power;
//  - otherwise the jump must be significant with the kinked line in the model (trend_p), so a
//    staircase along a trend or at the start of a creep is not a step, and a step on top of a
//    trend still is; the kink is then the one that fits best with the jump (a joint model),
//    where that beats the kinked line's own kink by a clear margin (a kink fitted without
//    the jump moves to the step, takes part of it and misses the trend's real turn);
//  - both use an effective sample size n / inflation, inflation = the long-run variance of
//    the deciding model's residuals over their variance (LongRunVarianceInflation, stats.h):
//    serially dependent residuals (a random walk, a slow wander, an unmodelled curve) carry
//    less information than white noise, which is what makes a random walk look significant
//    every few points; white noise keeps its full sample.
// Chosen over detrending or deseasonalising the whole series first because those need a
// global model that steps break (a trend fitted across a step is wrong on both sides), a known
// or estimated period with several cycles of history, and fail on short series; the local test
// reuses the E-Divisive candidates, costs O(b - a) for the kink scan plus O(K (b - a)),
// K <= 30, for the long-run variance, and a clean step in white noise nearly always passes as
// before (step-like, no inflation). Internal to devtime::detect. Thread-compatible (const methods
// are thread-safe).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace devtime::detect {

// The test that decides is computed, the other keeps its defaults: level_* where step_like,
// trend_* where not.
struct ShapeVerdict {
  bool applicable = false;  // both sides have >= 3 runs and the fits are well defined
  bool step_like = true;    // two levels fit about as well as the best kinked line (see below)
  double level_t = 0.0;     // two-level t, autocorrelation-corrected
  double level_p = 1.0;     // its two-sided p (not corrected for the choice of tau)
  double trend_t = 0.0;     // level-jump t with the kinked line in the model, corrected
  double trend_p = 1.0;     // its two-sided p (not corrected for the choice of tau)
  double inflation = 1.0;   // long-run variance inflation of the deciding model's residuals
  size_t kappa = 0;         // where the best kinked line changes slope
  // How much better the best kinked line fits than two levels, in BIC parameters: (RSS of
  // two levels - RSS of the kinked line) / (residual variance x log n); step_like up to 0.5.
  double kink_gain = 0.0;
};

class ShapeTester {
 public:
  // u: the series in units of its robust sigma (kept by reference; must outlive the tester).
  explicit ShapeTester(std::span<const double> u);

  // The shape test of the split [a, tau) | [tau, b). Sigmas are floored at `sigma_floor`
  // (robust-sigma units), as the two-sample test does.
  // `jump_on_trend`: always decide by trend_* (the jump on top of the kinked line), as a step
  // found under a slope (analysis.cc, joint steps) must be: two levels can fit a creep with a
  // step of the other sign about as well as a kinked line does, and there the level test
  // sees the ramps' residuals, not the jump.
  // `white`: the residuals taken as white noise (inflation 1, no O(K (b - a)) long-run
  // variance): t can only be larger and p smaller than the full test's, so a split that fails
  // this quick test fails the full one too.
  ShapeVerdict Test(size_t a, size_t tau, size_t b, double sigma_floor, bool jump_on_trend = false,
                    bool white = false) const;

  // Staircases along a trend: of `group`, consecutive steps in one direction (sorted, inside
  // (a, b), where a and b are the change points around them or the ends), the ones that a
  // continuous trend explains; empty when the steps are the better model. Each step passed Test
  // between its neighbours, but along a creep those neighbours are the staircase's other steps:
  // over a few dozen runs of a slope a noisy stretch looks like a jump, and a kinked line
  // fitted to that short span has no room to show it is a trend. Over the whole span the
  // models compete: the staircase (a level per segment, 2g + 1 parameters with the positions)
  // against a continuous flat-then-linear line (level, slope and where the creep starts, at
  // least min_tail runs before b: 3 parameters, the creep DetectDrift reports) plus the fewest
  // of the steps it needs (2 parameters each), added one at a time (forward selection, each
  // addition the one that lowers the criterion most) while that pays. The criterion is BIC,
  // n log(RSS / n) + parameters x log(n): Gaussian likelihood with its own variance, so it
  // needs no sigma, and a kink position, like a step position, counts as one parameter; the
  // trend must win by 2 (positive evidence) since the steps passed their own tests. A step the
  // trend cannot replace (a real jump on the creep, a step near b that a steep late ramp would
  // have to imitate) stays. O(g^2) fits of O(b - a) each (g = group size).
  std::vector<size_t> RedundantSteps(size_t a, size_t b, std::span<const size_t> group,
                                     size_t min_tail) const;

  // The two models' fits (jumps sorted, inside (a, b)): the residual sum of squares over
  // [a, b) of one level per segment between `jumps`; and the smallest over kinks kappa in
  // [a, b - min_tail] of level + slope x (i - kappa)+ + a level jump at each of `jumps`.
  double LevelsRss(size_t a, size_t b, std::span<const size_t> jumps) const;
  double TrendRss(size_t a, size_t b, std::span<const size_t> jumps, size_t min_tail) const;

 private:
  // The kink in (a, b) where a line with that kink and a jump at tau fits best (a grid of
  // about 30 positions, then every position within a grid step of the best; `kappa` competes).
  size_t JointKink(size_t a, size_t tau, size_t b, size_t kappa) const;

  std::span<const double> u_;
  std::vector<long double> prefix_;          // sums of u
  std::vector<long double> prefix_index_;    // sums of i u
  std::vector<long double> prefix_squares_;  // sums of u^2
};

}  // namespace devtime::detect
