#include "services/collector/detect/analysis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <span>
#include <utility>

#include "services/collector/detect/drift.h"
#include "services/collector/detect/edivisive.h"
#include "services/collector/detect/robust.h"
#include "services/collector/detect/season.h"
#include "services/collector/detect/shape.h"
#include "services/collector/detect/stats.h"

namespace devtime::detect {
namespace {

// Pooled sigmas are floored at half the global robust sigma (u is in its units), so that two
// short, accidentally quiet sides cannot make a tiny shift "significant".
constexpr double kSigmaFloor = 0.5;
constexpr double kMadToSigma = 1.4826;
constexpr size_t kSpreadPositions = 4;
// A joint step (AddJointSteps) is a second search of every segment: it must reach this
// fraction of the p-value a two-level step needs, so that the two searches together do not
// report more false steps on flat series than the first alone.
constexpr double kJointPvalueFactor = 0.1;
// The local-level screen (ScreenUnderLocalLevel): its minimum history; the likelihood ratio
// that shows a walk in the segments' residuals; the BIC cost of a cut beyond its two
// parameters (a level and a position), in log n, where the walk is compared with the
// segments (the cuts were placed where they fit best, which plain BIC does not charge for);
// and the auxiliary residual a change point needs where the series is a walk. Measured on the
// quality bench at 200 series (0.3 %/run walk: false steps per 10,000 runs; 2 % steps at 1 %
// noise: F1; without the screen 7.50 and 0.940): extra cost 0, 3.5 sigmas: 5.67, 0.939;
// 0.5: 3.17, 0.939; 1: 1.83, 0.938; 1.5: 1.50, 0.922; 1 and 4 sigmas: 1.17, 0.937. At 1000
// series (seed bases 1 and 1001), 4 sigmas: extra cost 0.75: 0.87 and 1.70, 0.924 and 0.926;
// 1: 0.63 and 0.97, 0.921 and 0.925 (without the screen 7.73, 0.926 at seed base 1); 1.25:
// 0.37, 0.916 (seed base 1). A likelihood ratio of 20 instead of 10 changes nothing there.
// Since the cut-concentration test (MovesAtCuts) and kWalkSigmas 3 (robust.cc), the walk's false
// steps have room under their target of 2 per 10,000 runs; 0.85 spends some of it on 2 % steps.
// 1000 series, seed bases 1/1001/2001/3001/4001/5001, cost 1 -> 0.85: 2 % steps F1
// 0.927/0.930/0.919/0.927/0.928/0.929 -> 0.928/0.930/0.920/0.927/0.929/0.930, recall
// 0.895/0.899/0.881/0.892/0.896/0.895 -> 0.897/0.900/0.883/0.893/0.898/0.898; walk false steps
// 1.00/1.13/1.13/1.00/1.33/0.80 -> 1.00/1.27/1.33/1.40/1.47/1.03 (detect_test's 0.3 %/run walks,
// 600 series: 30 -> 32 false steps). 0.75 adds little (F1 +0.001 on seed base 1, recall +0.002 and
// +0.001 on 1 and 5001) and costs the walk far more: 1.17/1.53/1.43/1.63/1.73/1.17, and 43 of
// detect_test's 600 walks. 0.65: 1.87 and 1.93 (seed bases 2001, 4001); 0.5: 2.40 and 2.50 (1001,
// 2001). A likelihood ratio of 30 with 0.85 (the walks whose residuals wander: there 2 % steps that
// the search missed make the wander) adds 2 % steps F1 +0.002 on seed bases 2001 and 5001 but costs
// the drift with two 5-10 % steps 0.001 to 0.003 F1 on five seed bases.
constexpr size_t kWalkMinRuns = 50;
constexpr double kWalkLikelihoodRatio = 10.0;
constexpr double kWalkCutPenalty = 0.85;
constexpr double kWalkJumpSigmas = 4.0;
// Readmit: the runs on either side of a kept step whose means' difference is taken out.
constexpr size_t kJumpWindow = 10;

// The square of a residual, and the sum of squares of `residuals`, each clipped at
// kInnovationClip as the local level's innovations are (robust.h): a likelihood compared with the
// local level's must clip alike, or a cluster of spikes that ReplaceOutliers left (each has a spike
// for a neighbour) reads as the walk's gain. A 3-run cluster of +30 % runs at 1 % noise gave the
// local level a likelihood ratio of 390 over white noise, all of it the clipping, and the screen
// then dropped three 5 % steps at p 1e-15 to 1e-50 (DetectWalk.AClusterOfSpikesIsNoWander).
double ClippedSquare(double r) {
  const double clipped = std::min(std::fabs(r), kInnovationClip);
  return clipped * clipped;
}
double ClippedSquares(std::span<const double> residuals) {
  double sum = 0.0;
  for (double r : residuals) sum += ClippedSquare(r);
  return sum;
}

// The default detector on the valid runs of one region.
class Analysis {
 public:
  Analysis(const Valid& valid, const DetectorOptions& options) : valid_(valid), options_(options) {
    const auto& x = valid_.values;
    sigma_ = RobustSigma(x, scratch_);
    std::vector<double> clean = ReplaceOutliers(x, sigma_, options_, scratch_);
    // A seasonal cycle is a shape, not a level: the search runs on the levels without it
    // (season.h), and the across-run sigma is the one left after it.
    if (options_.shape_test) season_ = SeasonalProfile(clean);
    if (!season_.empty()) {
      for (size_t i = 0; i < clean.size(); ++i) clean[i] -= season_[i % season_.size()];
      sigma_ = RobustSigma(clean, scratch_);
    }
    scratch_.assign(clean.begin(), clean.end());
    center_ = MedianInPlace(scratch_);
    u_.resize(clean.size());
    prefix_.assign(clean.size() + 1, 0.0L);
    prefix_squares_.assign(clean.size() + 1, 0.0L);
    prefix_index_.assign(clean.size() + 1, 0.0L);
    for (size_t i = 0; i < clean.size(); ++i) {
      u_[i] = (clean[i] - center_) / sigma_;
      prefix_[i + 1] = prefix_[i] + u_[i];
      prefix_squares_[i + 1] = prefix_squares_[i] + static_cast<long double>(u_[i]) * u_[i];
      prefix_index_[i + 1] = prefix_index_[i] + static_cast<long double>(i) * u_[i];
    }
  }

  // Change points as positions in the valid runs (segment starts), sorted. Where the shape
  // test took a strong change point and the result then reports nothing over it (no step
  // near it, no drift over its segment), the analysis runs again and keeps it
  // (KeptForWantOfADrift).
  std::vector<ChangePoint> Run() {
    Pass pass = RunOnce();
    if (options_.shape_test && FindUnexplained(pass.taus)) {
      second_pass_ = true;
      pass = RunOnce();
    }
    return std::move(pass.result);
  }

 private:
  // A pass's result, and the positions it ended with (small change points included).
  struct Pass {
    std::vector<ChangePoint> result;
    std::vector<size_t> taus;
  };
  // The whole analysis: the search, then pruning, joint steps, the random-walk screen and
  // locating. The second pass searches again rather than keep the first search's result: it
  // runs for few series, and splitting the search out of this function to keep it changed
  // the order of the heap's allocations: 4,800 more page faults in the speed bench (glibc
  // returning the heap's top and faulting it in again; with trimming off both ran at 5.0 ms),
  // Detect on 10,000 points 6.0 -> 7.1 ms.
  Pass RunOnce() {
    const size_t n = u_.size();
    const size_t m = std::max<size_t>(1, options_.min_segment);
    std::vector<size_t> taus;
    std::vector<double> q_hats(n, 0.0);
    struct Job {
      size_t a, b;
      std::vector<uint32_t> sorted;  // a..b-1 ordered by value
      DistanceProfile profile;       // of [a, b): from its parent's (SplitDistanceProfile)
    };
    std::vector<Job> jobs;
    if (n >= 2 * m) {
      // Sorted as (value, index) pairs, not indices compared through u_: no indirect loads
      // (ties may come in another order, which changes nothing: equal values are at distance 0).
      std::vector<std::pair<double, uint32_t>> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = {u_[i], static_cast<uint32_t>(i)};
      std::sort(order.begin(), order.end());
      Job all{0, n, std::vector<uint32_t>(n), {}};
      for (size_t i = 0; i < n; ++i) all.sorted[i] = order[i].second;
      all.profile = DistanceProfileOf(u_, 0, n, all.sorted, energy_);
      jobs.push_back(std::move(all));
    }
    // Binary segmentation; when an interval's best split fails, its halves are explored
    // (with a stricter threshold per level) so that changes that cancel out over the whole
    // interval (up, then down) are still found.
    while (!jobs.empty()) {
      Job job = std::move(jobs.back());
      jobs.pop_back();
      const auto candidate = BestSplitOfProfile(job.a, job.b, m, job.profile, energy_);
      if (!candidate) continue;
      std::optional<size_t> tau;
      if (Test(job.a, candidate->tau, job.b).p_value <= options_.max_pvalue) {
        tau = candidate->tau;
      } else {
        tau = Explore(job.a, job.b, job.sorted, job.profile, candidate->tau, 1);
      }
      if (!tau) continue;
      taus.push_back(*tau);
      q_hats[*tau] = candidate->tau == *tau ? candidate->q_hat : 0.0;
      auto [left, right] = Partition(job.sorted, *tau);
      auto [left_profile, right_profile] =
          SplitDistanceProfile(u_, job.a, *tau, job.profile, left, right);
      jobs.push_back({job.a, *tau, std::move(left), std::move(left_profile)});
      jobs.push_back({*tau, job.b, std::move(right), std::move(right_profile)});
    }
    std::sort(taus.begin(), taus.end());
    // Prune: re-test each change point between its neighbours, for its level and (shape_test)
    // its shape; drop the weakest failure (by p). A verdict depends only on (a, tau, b): it is
    // kept until a neighbour goes. A change point that is significant and step-like but below
    // the minimum effect (Verdict::small) is a real level change that is not worth reporting:
    // it stays as a neighbour and is left out of the result only at the end. Dropping it
    // would merge two levels into one segment, where its neighbours' tests see a staircase
    // (a kinked line fits two steps better than one level each) and fail in turn: a 1 % step
    // estimated at 0.98 % took the real steps next to it with it.
    std::vector<Verdict> verdicts(taus.size());
    std::vector<bool> known(taus.size(), false);
    do {
      Prune(taus, verdicts, known);
    } while (options_.shape_test && (RemoveStaircases(taus, verdicts, known) ||
                                     RemoveShortExcursion(taus, verdicts, known)));
    std::vector<bool> joint(taus.size(), false);
    std::vector<bool> located(taus.size(), false);
    if (options_.shape_test) {
      AddJointSteps(taus, verdicts, joint);
      located.assign(taus.size(), false);
      // Each change point at its most probable position before the random-walk tests judge
      // the segments: a step that the search put a few runs off leaves a piece of itself in
      // both neighbouring segments, whose residuals then wander like a walk (quality bench,
      // a trend that turns flat with a 5 % step, 1000 series: F1 0.78 -> 0.89).
      Refine(taus, q_hats, joint, located);
      // RemoveWalkSteps is the fallback for walks the screen did not take. Its evidence, the
      // variance ratio of the differences inside the segments (EstimateLocalLevel, at 3
      // standard errors), reads about 1 in 500 white series as a walk, and a lone 2 % step at
      // 1 % noise (t 17) then failed its windowed test and nothing was reported. It is not run
      // where the likelihood says there is no walk: the local level fitted to the segments'
      // residuals is white noise and no segment creeps (kWhite). Along a ramp it also takes
      // the ramp's chance cuts, so a sloped segment keeps it: without that condition the
      // trend that turns flat with a step lost 0.008-0.019 F1. Quality bench, 1000 series,
      // 20 seed bases 6001..25001, against running it everywhere: one 2 % step per series
      // all+-2 +0.23 points (better on 17, worse on none), 2 % steps F1 +0.0011 (15/0), the
      // mix F1 +0.0005 (8/0); false points per 10,000 runs: the 0.3 %/run walk +0.0035 (worse
      // on one seed base, 1.93 -> 2.00), the drift with dirt +0.005 (worse on three).
      if (ScreenUnderLocalLevel(taus, verdicts, joint, located, q_hats) == WalkScreen::kUnclear) {
        RemoveWalkSteps(taus, verdicts, joint);
        located.assign(taus.size(), false);  // it erased some; none was located yet
      }
    }
    Refine(taus, q_hats, joint, located);
    // The figures of each reported change point are those between its neighbours, small
    // ones included: the levels on either side of its own jump; for a jump under a slope
    // (joint), the fitted levels on either side of the break.
    std::vector<ChangePoint> result;
    for (size_t i = 0; i < taus.size(); ++i) {
      if (verdicts[i].small) continue;
      const size_t a = Before(taus, i), b = After(taus, i, n);
      ChangePoint cp = joint[i] ? JointChangePoint(a, taus[i], b) : Test(a, taus[i], b);
      cp.index = valid_.index[taus[i]];
      cp.previous_index = valid_.index[taus[i] - 1];
      cp.q_hat = joint[i] ? 0.0 : q_hats[taus[i]];  // a joint step is no E-Divisive split
      result.push_back(cp);
    }
    return {std::move(result), std::move(taus)};
  }

  // A split's test (Test): the figures of the change point it would be, all but where it is
  // (index, previous_index: input indices) and q_hat, and whether its effect is large enough.
  struct SideTest : ChangePoint {
    bool effect_ok = false;
  };

  // Moves each change point, between its neighbours, within +-refine_window runs (Locate);
  // a joint step is already where its model (a line with a jump) fits best.
  void Refine(std::vector<size_t>& taus, std::vector<double>& q_hats,
              const std::vector<bool>& joint, const std::vector<bool>& located) const {
    for (size_t i = 0; i < taus.size(); ++i) {
      if (joint[i] || located[i]) continue;
      const size_t best = Locate(Before(taus, i), taus[i], After(taus, i, u_.size()));
      if (best != taus[i]) {
        q_hats[best] = q_hats[taus[i]];
        taus[i] = best;
      }
    }
  }

  // Where in [a, b) the step found at tau most probably is (step 5). The one-step model's
  // posterior over the position t, with flat priors on both levels, is proportional to
  // exp(-RSS(t) / 2 sigma^2) / sqrt(n1 n2) (RSS: the two-level residual sum of squares, sigma
  // estimated from the best split's residuals, floored as in Test). Its single most probable
  // position (the least-squares split) is the right run only about 64 % of the time for a
  // step of 2 sigma, and within +-2 runs 94 %: the posterior is flat-topped and ragged there,
  // and one noisy run next to the step moves its peak. The Bayes choice for "within
  // +-kLocationMargin runs" (what the segment baselines and drift spans need; the gate itself
  // flags the exact newest run) is the position whose neighbourhood holds the most posterior
  // mass. The centre run's mass counts kExactBonus more, so that a sharp posterior (a large
  // step) keeps its exact peak rather than the first run of a flat window. Monte-Carlo on
  // Gaussian noise, 2-sigma step: within +-2 runs 94 % -> 96.8 % (97.0 % with no bonus; 300
  // runs, 20,000 series), the exact run 64 % -> 55 % (33 % with no bonus); from 3 sigma up
  // the exact run is about unchanged (86 %, 95 % at 4 sigma). Scanned over +-refine_window
  // runs of tau, at least min_segment runs from the neighbours; O(refine_window).
  size_t Locate(size_t a, size_t tau, size_t b) const {
    constexpr size_t kLocationMargin = 2;
    constexpr double kExactBonus = 0.05;
    const auto [lo, hi] = RefineWindow(a, tau, b, std::max<size_t>(1, options_.min_segment));
    if (lo >= hi) return tau;
    // RSS(t) = total - n1 n2 / n (mean2 - mean1)^2; only differences of RSS matter.
    const double n = static_cast<double>(b - a);
    const long double total_s = prefix_[b] - prefix_[a];
    const double total_ss =
        static_cast<double>(prefix_squares_[b] - prefix_squares_[a] - total_s * total_s / (b - a));
    std::vector<double> rss(hi - lo + 1);
    double best_rss = std::numeric_limits<double>::infinity();
    for (size_t t = lo; t <= hi; ++t) {
      const double n1 = static_cast<double>(t - a), n2 = static_cast<double>(b - t);
      const double shift =
          static_cast<double>((prefix_[b] - prefix_[t]) / n2 - (prefix_[t] - prefix_[a]) / n1);
      rss[t - lo] = total_ss - shift * shift * n1 * n2 / n;
      best_rss = std::min(best_rss, rss[t - lo]);
    }
    const double variance =
        std::max(kSigmaFloor * kSigmaFloor, std::max(0.0, best_rss) / std::max(1.0, n - 2.0));
    std::vector<double> mass(rss.size());
    for (size_t t = lo; t <= hi; ++t) {
      const double n1 = static_cast<double>(t - a), n2 = static_cast<double>(b - t);
      mass[t - lo] = std::exp(-(rss[t - lo] - best_rss) / (2.0 * variance)) / std::sqrt(n1 * n2);
    }
    size_t best = tau;
    double best_mass = -1.0;
    for (size_t t = lo; t <= hi; ++t) {
      double around = kExactBonus * mass[t - lo];
      const size_t from = t - lo > kLocationMargin ? t - kLocationMargin : lo;
      for (size_t k = from; k <= std::min(hi, t + kLocationMargin); ++k) around += mass[k - lo];
      if (around > best_mass) {
        best_mass = around;
        best = t;
      }
    }
    return best;
  }

  // Pooled t-test of u[a, tau) against u[tau, b), corrected for the choice of tau.
  SideTest Test(size_t a, size_t tau, size_t b) {
    SideTest test;
    const double n1 = static_cast<double>(tau - a);
    const double n2 = static_cast<double>(b - tau);
    const double m1 = Mean(a, tau), m2 = Mean(tau, b);
    const double ss1 = Scatter(a, tau), ss2 = Scatter(tau, b);
    test.before_mean = center_ + sigma_ * m1;
    test.after_mean = center_ + sigma_ * m2;
    test.before_stddev = n1 > 1 ? sigma_ * std::sqrt(ss1 / (n1 - 1)) : 0.0;
    test.after_stddev = n2 > 1 ? sigma_ * std::sqrt(ss2 / (n2 - 1)) : 0.0;
    test.before_count = tau - a;
    test.after_count = b - tau;
    test.relative_change = RelativeChange(test.after_mean, test.before_mean);
    const double df = n1 + n2 - 2.0;
    if (df <= 0.0) return test;
    // Pooled sample sigma in robust-sigma units, floored at half the global robust sigma so
    // that two short, accidentally quiet sides cannot make a tiny shift "significant".
    const double pooled = std::max(kSigmaFloor, std::sqrt((ss1 + ss2) / df));
    test.t_statistic = (m2 - m1) / (pooled * std::sqrt(1.0 / n1 + 1.0 / n2));
    double p_single = StudentTwoSidedP(test.t_statistic, df);
    // The pooled test borrows the long side's variance for the short side, valid only when
    // both scatter alike. Spikes that escape ReplaceOutliers come in clusters (two or more
    // within one run's 2k + 1 window, or at the series' ends), and E-Divisive then cuts a short
    // segment around them (2 spikes of a 3-run tail, 3 of 4 runs): its mean is carried by the
    // spikes and its variance is far above the long side's. There the F-test rejects equal
    // variances and Welch's test, which uses each side's own variance, is the valid one; it is
    // taken when more conservative. Only sides of at most 2k + 1 runs qualify: a longer side's
    // mean is not carried by such a cluster, and there a larger variance more often means a
    // further change inside that side, which the hierarchical search finds next (Welch would
    // only lose power on it). Homoscedastic short sides switch at rate kUnequalVarianceAlpha,
    // and a switch can only make a split fail, never pass. Evaluated only where the pooled
    // test alone would pass (it can only raise p).
    constexpr double kUnequalVarianceAlpha = 0.001;
    const double short_side = static_cast<double>(2 * options_.outlier_neighbours + 1);
    if (p_single <= options_.max_pvalue && n1 >= 2 && n2 >= 2 && std::min(n1, n2) <= short_side) {
      const double v1 = std::max(0.25, ss1 / (n1 - 1)), v2 = std::max(0.25, ss2 / (n2 - 1));
      if (VarianceRatioTwoSidedP(v1, n1 - 1, v2, n2 - 1) <= kUnequalVarianceAlpha) {
        p_single = std::max(p_single, WelchTTest(m1, v1, n1, m2, v2, n2).p);
      }
    }
    test.p_value = CorrectForSelection(p_single, n1 + n2);
    test.confidence = 1.0 - test.p_value;
    const double shift = std::fabs(test.after_mean - test.before_mean);
    test.effect_ok = std::fabs(test.relative_change) >= options_.min_relative_change;
    // The within-run noise check costs O(b - a): only for otherwise passing splits.
    if (test.effect_ok && test.p_value <= options_.max_pvalue &&
        options_.min_within_noise_ratio > 0.0) {
      test.effect_ok = AtLeastRatioTimesMedian(std::span(valid_.noise).subspan(a, b - a),
                                               options_.min_within_noise_ratio, shift);
    }
    return test;
  }

  // p of the best of all admissible splits of `length` runs from the p of one: Siegmund's
  // approximation for the maximum of a standardised two-sample statistic, capped by Bonferroni
  // over the splits (the approximation only where p_single itself could pass).
  double CorrectForSelection(double p_single, double length) const {
    const double m = static_cast<double>(std::max<size_t>(1, options_.min_segment));
    const double splits = std::max(1.0, length - 2.0 * m + 1.0);
    double p = p_single * splits;
    if (length > 2.0 * m && p_single <= options_.max_pvalue) {
      const double z = NormalTwoSidedQuantile(p_single);
      const double siegmund = 2.0 * z * NormalPdf(z) * std::log((length - m) / m);
      p = std::min(p, siegmund);
    }
    return std::clamp(std::max(p, p_single), 0.0, 1.0);
  }

  // The prune step's verdict on a change point between a and b: passes; small (significant
  // and step-like, but its effect is below the minimum); or fails, with its failing p.
  struct Verdict {
    size_t a = 0, b = 0;
    bool pass = false;
    bool small = false;
    double score = 0.0;
  };
  Verdict Judge(size_t a, size_t tau, size_t b) {
    Verdict v;
    v.a = a;
    v.b = b;
    const SideTest test = Test(a, tau, b);
    const double threshold = Threshold(a, tau, b);
    v.score = test.p_value;
    if (test.p_value > threshold) return v;
    const Shape shape = options_.shape_test ? ShapeOf(a, tau, b) : Shape{};
    v.score = shape.p;
    if (v.score > threshold) {
      // A clear one-run jump that the shape test failed only by its effective sample size.
      const bool jump_anyway =
          shape.step_like && test.effect_ok && JumpStandsOut(a, tau, b, threshold);
      if (!jump_anyway && !KeptForWantOfADrift(a, tau, b, test.p_value, shape)) return v;
    } else if (options_.shape_test && !JumpOnLineHolds(a, tau, b)) {
      v.score = 1.0;  // the weakest: a trend with no jump of its own goes first
      return v;
    }
    v.pass = test.effect_ok;
    v.small = !test.effect_ok;
    return v;
  }

  // Whether the run-to-run difference at tau stands out from the other differences of [a, b)
  // at `threshold`, Bonferroni-corrected over the positions: the jump tested under a random
  // walk's null, whose differences are its innovations plus white noise. Judge lets a split
  // that two levels fit pass on it where the shape test failed it only by its effective
  // sample size, the walk's guard: in a history of a dozen runs that sample size rests on a
  // long-run variance guessed from a dozen residuals, and a slight sag beside a 10 % step at
  // 1 % noise cost the step (DetectShape.ALargeJumpInAShortHistoryIsNotTakenForAWander). A
  // jump of two noise sigmas, the smallest we must find, hardly ever stands out of its
  // differences' spread at 1e-3 (its difference needs a t near 5 after the correction): the
  // walk's guard still decides there. Quality bench, 1000
  // series, against Judge without it: the 10 % step in 10-30 runs, all+-2 on seed bases
  // 1/1001/2001/3001/4001/5001 99.9/99.6/99.8/99.9/99.8/99.7 % -> 99.9/99.8/99.9/99.9/100/
  // 99.9 %; on seed bases 6001..25001 better on 7, worse on none; the drift with two 5-10 %
  // steps F1 +0.0012 (15 better, none worse) and the trend with three steps +0.0004 (7/0);
  // the 0.3 %/run walk unchanged, the 1 %/run walk one false point more in 6,000 series.
  // Only where the split's effect is large enough: a small change point stays a neighbour
  // that AddJointSteps judges.
  bool JumpStandsOut(size_t a, size_t tau, size_t b, double threshold) const {
    if (b - a < 6) return false;
    std::vector<double> others;  // the run-to-run differences of [a, b) but the one at tau
    others.reserve(b - a - 2);
    for (size_t i = a + 1; i < b; ++i) {
      if (i != tau) others.push_back(u_[i] - u_[i - 1]);
    }
    const Moments spread = MeanStd(others, /*ddof=*/1);
    const double count = static_cast<double>(others.size());
    const double scale = std::max(kSigmaFloor, spread.stddev) * std::sqrt(1.0 + 1.0 / count);
    const double t = (u_[tau] - u_[tau - 1] - spread.mean) / scale;
    return StudentTwoSidedP(t, count - 1.0) * static_cast<double>(b - a - 1) <= threshold;
  }

  // Whether the jump at tau is still a jump with a straight line over [a, b) in the model
  // (u ~ 1, c, [i >= tau]; its two-sided p, not corrected for the choice of tau, at most
  // kLineJumpAlpha). The shape test lets two levels decide where they fit about as well as
  // its kinked line; on a gentle slope a noisy stretch then passes as two levels (quality
  // bench, a trend of up to 10 % over the series with three 5 % steps: false steps in the
  // middle of sloped segments, the line with a jump finding neither the jump nor the slope
  // significant). Only spans of kLineJumpMinRuns runs or more: a line through a step takes
  // part of it (the two are collinear; a central jump's t about halves), and a jump of 2
  // noise sigmas, the smallest we must find, reaches a t of about sqrt(n) / 2 on the line:
  // 3.9 at 60 runs, where closely spaced 2 % steps (20-run sides) fall to 3.3 and were lost.
  // Quality bench, 1000 series, seed base 1 (trend + 3 steps F1, 2 % steps F1): without the
  // test 0.957, 0.924; every span at 0.01: 0.978, 0.920; from 60 runs at 0.01: 0.976, 0.923;
  // at 0.003: 0.984, 0.920; from 80 runs at 0.01: 0.970, 0.924.
  bool JumpOnLineHolds(size_t a, size_t tau, size_t b) const {
    constexpr size_t kLineJumpMinRuns = 60;
    constexpr double kLineJumpAlpha = 0.01;
    if (b - a < kLineJumpMinRuns) return true;
    LineSums s;
    s.n = static_cast<double>(b - a);
    s.centre = 0.5 * static_cast<double>(a + b - 1);
    s.su = static_cast<double>(prefix_[b] - prefix_[a]);
    s.scu = static_cast<double>(prefix_index_[b] - prefix_index_[a]) - s.centre * s.su;
    s.scc = s.n * (s.n * s.n - 1.0) / 12.0;
    s.suu = static_cast<double>(prefix_squares_[b] - prefix_squares_[a]);
    const double nj = static_cast<double>(b - tau);
    const double sju = static_cast<double>(prefix_[b] - prefix_[tau]);
    const double sjc = nj * (0.5 * static_cast<double>(tau + b - 1) - s.centre);
    const double line_rss = s.suu - s.su * s.su / s.n - s.scu * s.scu / s.scc;
    const double gain = std::max(0.0, JumpGain(s, nj, sju, sjc));
    const double df = s.n - 3.0;
    const double variance = std::max(kSigmaFloor * kSigmaFloor, (line_rss - gain) / df);
    return StudentTwoSidedP(std::sqrt(gain / variance), df) <= kLineJumpAlpha;
  }
  // Selection-corrected p of the shape test (shape.h) of a change point between its
  // neighbours: where two levels fit at least as well as a kinked line, the level test with
  // the effective sample size of the two-level residuals; otherwise the level jump on top of
  // the kinked line (whose residuals then give the effective sample size: those of two levels
  // fitted to a trend are the trend). p 0 (passes) where the test does not apply. With it,
  // which test decided and by how much the kinked line fits better (ShapeVerdict).
  struct Shape {
    double p = 0.0;
    bool step_like = true;
    double kink_gain = 0.0;
  };
  // The shape tester over u_, built on first use: its prefix sums only when a change point
  // needs them.
  ShapeTester& Shapes() {
    if (!shape_) shape_.emplace(u_);
    return *shape_;
  }
  Shape ShapeOf(size_t a, size_t tau, size_t b) {
    const ShapeVerdict v = Shapes().Test(a, tau, b, kSigmaFloor);
    if (!v.applicable) return {};
    return {CorrectForSelection(v.step_like ? v.level_p : v.trend_p, static_cast<double>(b - a)),
            v.step_like, v.kink_gain};
  }

  // Whether a change point that failed the shape test stays all the same (issue 21 item 1:
  // the shape test must never discard a change without reporting what it kept instead).
  // Candidates: the level jump is strong (p at most kStrongLevelP), with at least
  // edge_segment runs on both sides (a jump next to a few runs is a cluster, which the
  // excursion and edge rules judge), and the shape test failed it as a trend whose kinked
  // line fits [a, b) only somewhat better than two levels (by less than kAmbiguousKinkGain
  // BIC parameters) or that is a clear jump where it is (StepLikeNearby); a step-like split
  // that fails by its effective sample size, the random walk's guard, is never kept. The
  // first pass notes them (shape_dropped_); the second keeps those that the first pass left
  // unexplained (FindUnexplained).
  // Three 2 % steps at 1 % noise, two of them in one direction with sloping noise on both
  // sides, fit a kinked line over their 70-100 runs about as well as two levels: the shape
  // test took the first, its neighbour then failed over the wider span, the third went with
  // them, and nothing at all was reported (48 and 50 of 1000 series, seed bases 1 and 2001).
  // Quality bench, 1000 series, seed bases 1/1001/2001/3001/4001/5001 (with DetectDrift's
  // hinge-residual correction, drift.cc): 2 % steps F1 0.928/0.930/0.920/0.927/0.929/0.930 ->
  // 0.936/0.940/0.932/0.935/0.936/0.938, recall 0.897/0.900/0.883/0.893/0.898/0.898 ->
  // 0.915/0.920/0.904/0.908/0.914/0.914; 5 % steps at 2 % noise +0.007 to +0.009; the trend
  // that turns flat with a step 0.960/0.970/0.968/0.955/0.953/0.959 ->
  // 0.958/0.969/0.967/0.955/0.952/0.959; the 0.3 %/run walk 1.00/1.27/1.33/1.40/1.47/1.03 ->
  // 1.17/1.60/1.67/1.50/1.60/1.20 false points per 10,000 runs (detect_test's walks, 600
  // series: 32 -> 41 change points; they ended with nothing reported, so the second pass keeps
  // a split of theirs). Keeping every unexplained drop whatever its kink gain: the turning
  // trend 0.948 on seed base 3001; gain 2: 2 % steps 0.930 on seed base 2001; 5: 0.933 and the
  // walks 43. A first version kept, in one pass, every candidate (gain below 1.5) over whose
  // [a, b) no drift was reported: 2 % steps about as here, but the walks 44 and the turning
  // trend 0.947 on seed base 3001 (pieces of its ramp, before the drift.cc correction).
  bool KeptForWantOfADrift(size_t a, size_t tau, size_t b, double level_p, const Shape& shape) {
    constexpr double kStrongLevelP = 1e-6;
    constexpr double kAmbiguousKinkGain = 3.0;
    if (level_p > kStrongLevelP || shape.step_like ||
        std::min(tau - a, b - tau) < options_.edge_segment) {
      return false;
    }
    if (shape.kink_gain >= kAmbiguousKinkGain && !StepLikeNearby(a, tau, b)) return false;
    if (!second_pass_) {
      shape_dropped_.push_back(tau);
      return false;
    }
    return std::binary_search(unexplained_.begin(), unexplained_.end(), tau);
  }
  // Whether the split at tau, which failed the shape test over [a, b), is a clear jump within
  // kLocalRuns runs on either side: two levels fit there at least as well as a kinked line
  // (step_like), and the level test passes at kLocalPvalueFactor times the threshold, which
  // pays for this second look. Pruning drops a series' other change points one at a time, and
  // each drop widens the span its neighbours are judged over: a jump on a slow cycle, or
  // between trends that turn, ends up judged over most of the series, where one kinked line is
  // no null for several turns, the residuals' inflation eats its power, and it went with the
  // rest (TCPD's quality_control_4, periodic components and an offset at run 341 of 500: the
  // offset, step-like over [298, 369) at p 1e-35, was lost and nothing at all was reported;
  // DetectShape.AnOffsetOnASlowCycleIsKept, 18 -> 34 of 40 found). A ramp stays a ramp
  // within 30 runs, and the candidate is kept only where the first pass reported nothing near
  // it. Quality bench, 1000 series, seed bases 1/1001/2001/3001/4001/5001: a
  // trend with three 5 % steps F1 0.980/0.976/0.980/0.978/0.976/0.978 ->
  // 0.982/0.979/0.984/0.982/0.981/0.981; a drift with two 5-10 % steps
  // 0.947/0.947/0.948/0.952/0.947/0.949 -> 0.952/0.954/0.956/0.958/0.954/0.956; the 0.3 %/run
  // walk 1.10/1.60/1.67/1.50/1.60/1.30 -> 1.23/1.77/1.67/1.70/1.70/1.30 false points per 10,000
  // runs; 2 % steps and the mix +0.001 or the same; every other row within one change point.
  // Over 50 runs, seed bases 1/1001: the trend with three steps +0.002 and +0.002, the drift
  // with two +0.002 and +0.006. As a second look in Judge for every split that fails, not only
  // for the second pass's candidates: false points on a drift with a 5 % step down 1.27 ->
  // 1.90 per 10,000 runs, steps per pure drift 0.01 -> 0.02 (seed base 1).
  bool StepLikeNearby(size_t a, size_t tau, size_t b) {
    constexpr size_t kLocalRuns = 30;
    constexpr double kLocalPvalueFactor = 0.01;
    if (tau - a <= kLocalRuns && b - tau <= kLocalRuns) return false;  // [a, b) is local already
    const size_t from = tau - std::min(tau - a, kLocalRuns);
    const size_t to = tau + std::min(b - tau, kLocalRuns);
    const double threshold = kLocalPvalueFactor * Threshold(a, tau, b);
    // The two-level test first: O(1), where the shape test's kink scan is O(to - from).
    if (Test(from, tau, to).p_value > threshold) return false;
    const Shape local = ShapeOf(from, tau, to);
    return local.step_like && local.p <= threshold;
  }
  // After the first pass, which ended with `taus`: the change points the shape test dropped
  // (shape_dropped_) that have no change point of `taus` within refine_window runs and lie in
  // a segment between them over which no drift is reported, read either way (a creep that
  // starts, or one that ends there: DetectDrift fits flat-then-linear), into unexplained_
  // (sorted); whether there are any.
  bool FindUnexplained(const std::vector<size_t>& taus) {
    const size_t n = u_.size(), w = options_.refine_window;
    std::sort(shape_dropped_.begin(), shape_dropped_.end());
    shape_dropped_.erase(std::unique(shape_dropped_.begin(), shape_dropped_.end()),
                         shape_dropped_.end());
    size_t tested_from = n, tested_to = n;  // the last segment tested (sorted drops share them)
    bool drift = false;
    for (size_t d : shape_dropped_) {
      const auto [from, to] = Around(taus, d, n);
      if ((from > 0 && d - from <= w) || (to < n && to - d <= w)) continue;
      if (from != tested_from || to != tested_to) {
        tested_from = from;
        tested_to = to;
        drift = DriftReportedIn(from, to, /*backwards=*/false) ||
                DriftReportedIn(from, to, /*backwards=*/true);
      }
      if (!drift) unexplained_.push_back(d);
    }
    return !unexplained_.empty();
  }

  // Whether a creep is reported over the valid runs [from, to): read in time order, as Analyze
  // reports it (DetectDrift's over the whole, or one on a leg where the span turns,
  // SpanReportsDrift); backwards, DetectDrift's (a creep that ends there). With DetectDrift
  // alone in time order, a span that turns reported nothing here: a staircase along a creep
  // that followed a slight rise stayed as steps (CreepsWhereGone), and a split of a turn was
  // kept for want of a drift (FindUnexplained). Quality bench, 1000 series, seed bases
  // 1001/2001/3001/4001, a recent creep's false points per 10,000 runs 0.63/0.77/0.63/0.57 ->
  // 0.40/0.67/0.50/0.50 (Analyze.AStaircaseAlongACreepAfterARiseIsTheCreep); with
  // StepLikeNearby, the turn row's 0.13 -> 0 (seed base 1).
  bool DriftReportedIn(size_t from, size_t to, bool backwards) const {
    std::vector<Point> segment(to - from);
    for (size_t i = from; i < to; ++i) segment[i - from] = {valid_.values[i], valid_.noise[i]};
    if (!backwards) return SpanReportsDrift(segment, options_);
    std::reverse(segment.begin(), segment.end());
    const auto drift = DetectDrift(segment, options_);
    return drift.ok() && drift->has_value();
  }

  // One prune pass (see Run): until every change point passes or is small.
  void Prune(std::vector<size_t>& taus, std::vector<Verdict>& verdicts, std::vector<bool>& known) {
    const size_t n = u_.size();
    while (!taus.empty()) {
      size_t weakest = taus.size();
      double weakest_score = -1.0;
      for (size_t i = 0; i < taus.size(); ++i) {
        const size_t a = Before(taus, i), b = After(taus, i, n);
        Verdict& v = verdicts[i];
        if (!known[i] || v.a != a || v.b != b) {
          v = Judge(a, taus[i], b);
          known[i] = true;
        }
        if (v.pass || v.small) continue;
        if (v.score > weakest_score) {
          weakest_score = v.score;
          weakest = i;
        }
      }
      if (weakest == taus.size()) break;
      Erase(weakest, taus, verdicts, known);
    }
  }

  static void Erase(size_t i, std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                    std::vector<bool>& known) {
    const auto at = static_cast<std::ptrdiff_t>(i);
    taus.erase(taus.begin() + at);
    verdicts.erase(verdicts.begin() + at);
    known.erase(known.begin() + at);
  }

  // A short excursion (two change points in opposite directions around a segment shorter
  // than the segments on either side) was found as two splits, each corrected for choosing
  // its own position only; together they chose a start and a length, a search of about
  // (b - a) x length excursions in [a, b). Its test: the middle segment against the runs on
  // both sides, Bonferroni-corrected for that search (on stationary mixed noise, a few runs
  // of chance dip or bump between bimodal runs passed as two steps). Where it fails, the
  // change point of the pair with the weaker two-level test goes and pruning runs again.
  bool RemoveShortExcursion(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                            std::vector<bool>& known) {
    const size_t n = u_.size();
    size_t worst = taus.size();
    double worst_p = -1.0;
    for (size_t i = 0; i + 1 < taus.size(); ++i) {
      if (verdicts[i].small || verdicts[i + 1].small) continue;
      const size_t a = Before(taus, i), t1 = taus[i], t2 = taus[i + 1], b = After(taus, i + 1, n);
      const size_t inside = t2 - t1;
      if (inside >= t1 - a || inside >= b - t2) continue;
      const double p = ExcursionP(a, t1, t2, b);
      // A middle of fewer than edge_segment runs needs the edge rule's strength too: its
      // mean rests on a few runs, as an end segment's does.
      const double factor = inside < options_.edge_segment ? options_.edge_pvalue_factor : 1.0;
      if (p <= factor * Threshold(a, t1, b) || p <= worst_p) continue;
      worst_p = p;
      worst = Test(a, t1, t2).p_value >= Test(t1, t2, b).p_value ? i : i + 1;
    }
    if (worst == taus.size()) return false;
    Erase(worst, taus, verdicts, known);
    return true;
  }
  // The corrected p of the runs [t1, t2) against the nearer of their sides, [a, t1) or
  // [t2, b) (0 where the middle is not beyond both: a staircase, not an excursion, which this
  // test does not judge): the middle must differ from both, and the two sides need not be at
  // one level (a 22 % drop that recovers 3 % a few dozen runs later). The noise is the
  // scatter of each of the three segments about its own mean. With the sides pooled as one
  // group, their levels' difference counted as noise, and such a recovery failed and went
  // (DetectExcursion.ADropThatPartlyRecoversIsTwoSteps), while a chance pair of splits beside
  // a real step passed against the pooled sides' mean. Quality bench, 1000
  // series, seed bases 1/1001/2001 (F1): a drift with a 5 % step down 0.953/0.957/0.958 ->
  // 0.966/0.968/0.968, up 0.961/0.957/0.957 -> 0.967/0.972/0.968; a trend with three 5 %
  // steps 0.978/0.974/0.976 -> 0.980/0.976/0.980; the mix 0.853/0.843/0.844 ->
  // 0.854/0.844/0.846; stationary with dirt 0/0.14/0.25 -> 0/0.14/0.18 false points per 10k;
  // 2 % steps 0.936/0.940/0.932 -> 0.936/0.940/0.931.
  double ExcursionP(size_t a, size_t t1, size_t t2, size_t b) const {
    const double n_left = static_cast<double>(t1 - a), n_in = static_cast<double>(t2 - t1),
                 n_right = static_cast<double>(b - t2);
    const double left = Mean(a, t1), m_in = Mean(t1, t2), right = Mean(t2, b);
    if ((m_in - left) * (m_in - right) <= 0.0) return 0.0;  // the middle is not beyond both
    const bool left_nearer = std::fabs(m_in - left) < std::fabs(m_in - right);
    const double nearer = left_nearer ? left : right;
    const double n_near = left_nearer ? n_left : n_right;
    const double ss = ClippedScatter(a, t1) + ClippedScatter(t1, t2) + ClippedScatter(t2, b);
    const double df = n_in + n_left + n_right - 3.0;
    const double pooled = std::max(kSigmaFloor, std::sqrt(ss / df));
    const double t = (m_in - nearer) / (pooled * std::sqrt(1.0 / n_in + 1.0 / n_near));
    const double searched = static_cast<double>(b - a) * n_in;
    return std::min(1.0, StudentTwoSidedP(t, df) * searched);
  }
  // Scatter with each deviation clipped at kInnovationClip sigmas: a cluster of spikes that
  // ReplaceOutliers left (each has a spike for a neighbour) must not inflate the excursion
  // test's sigma. Two +30 % spikes 40 runs before a 17-run 5 % dip at 1 % noise tripled it,
  // and the dip failed at p 0.45 (DetectExcursion.SpikesFarAwayDoNotHideADip). Gaussian
  // noise never reaches the clip: on the quality bench (1000 series, six seed bases) one
  // series changed, that one. No deviation reaches it unless the whole scatter does, so the
  // usual segment costs the O(1) Scatter, not a pass over its runs.
  double ClippedScatter(size_t from, size_t to) const {
    const double scatter = Scatter(from, to);
    if (scatter <= kInnovationClip * kInnovationClip) return scatter;
    const double mean = Mean(from, to);
    double sum = 0.0;
    for (size_t i = from; i < to; ++i) sum += ClippedSquare(u_[i] - mean);
    return sum;
  }
  // The mean of u over [from, to), and (Scatter) the sum of the squared deviations from it.
  double Mean(size_t from, size_t to) const {
    return static_cast<double>((prefix_[to] - prefix_[from]) / static_cast<long double>(to - from));
  }
  double Scatter(size_t from, size_t to) const {
    const long double sum = prefix_[to] - prefix_[from];
    return std::max(0.0, static_cast<double>(prefix_squares_[to] - prefix_squares_[from] -
                                             sum * sum / static_cast<long double>(to - from)));
  }

  // Staircases along a trend (ShapeTester::RedundantSteps): each maximal group of consecutive
  // change points in one direction (small ones included: they are levels of the staircase
  // too) competes with a continuous creep over the span between the change points around it;
  // the steps the creep explains go, so that the span reads as one segment (where DetectDrift
  // reports the creep) and not as a staircase. True when any went: the prune pass then runs
  // again, since the neighbours of the others changed.
  bool RemoveStaircases(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                        std::vector<bool>& known) {
    const size_t n = u_.size();
    if (taus.empty()) return false;
    auto up = [&](size_t i) {  // the direction of change point i between its neighbours
      const size_t a = Before(taus, i), t = taus[i], b = After(taus, i, n);
      return (prefix_[b] - prefix_[t]) / static_cast<long double>(b - t) >
             (prefix_[t] - prefix_[a]) / static_cast<long double>(t - a);
    };
    std::vector<size_t> redundant;
    for (size_t i = 0; i < taus.size();) {
      size_t j = i + 1;
      while (j < taus.size() && up(j) == up(i)) ++j;
      const std::span<const size_t> group = std::span(taus).subspan(i, j - i);
      const size_t a = Before(taus, i), b = After(taus, j - 1, n);
      const std::vector<size_t> gone = Shapes().RedundantSteps(a, b, group, kMinCreepRuns);
      if (!gone.empty() && CreepsWhereGone(a, b, group, gone)) {
        redundant.insert(redundant.end(), gone.begin(), gone.end());
      }
      i = j;
    }
    for (size_t tau : redundant) {
      Erase(static_cast<size_t>(std::find(taus.begin(), taus.end(), tau) - taus.begin()), taus,
            verdicts, known);
    }
    return !redundant.empty();
  }

  // Whether each segment of [a, b) that the removal of `gone` from `group` (both sorted) leaves
  // around a removed step is a drift DetectDrift reports: the creep that replaces a step must
  // be one, or the span would report nothing at all (DetectDrift has its own tests: significance,
  // minimum effect, and that no single level jump fits better).
  bool CreepsWhereGone(size_t a, size_t b, std::span<const size_t> group,
                       const std::vector<size_t>& gone) const {
    std::vector<size_t> bounds = {a};
    for (size_t tau : group) {
      if (!std::binary_search(gone.begin(), gone.end(), tau)) bounds.push_back(tau);
    }
    bounds.push_back(b);
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const size_t from = bounds[s], to = bounds[s + 1];
      const auto first = std::upper_bound(gone.begin(), gone.end(), from);
      if (first == gone.end() || *first >= to) continue;  // no removed step in it
      if (!DriftReportedIn(from, to, /*backwards=*/false)) return false;
    }
    return true;
  }

  // Sums over [a, b) of a straight line's regressors (1, c = i - centre) and of u, from which
  // the line's fit, with or without a jump, follows in O(1) (JumpGain).
  struct LineSums {
    double n = 0, su = 0, scu = 0, scc = 0, suu = 0, centre = 0;
  };
  LineSums Sums(size_t a, size_t b) const {
    LineSums s;
    s.n = static_cast<double>(b - a);
    s.centre = 0.5 * static_cast<double>(a + b - 1);
    for (size_t i = a; i < b; ++i) {
      const double c = static_cast<double>(i) - s.centre;
      s.su += u_[i];
      s.scu += c * u_[i];
      s.scc += c * c;
      s.suu += u_[i] * u_[i];
    }
    return s;
  }
  // How much a jump J = [i >= tau] lowers the straight line's residual sum of squares,
  // (J~ . u~)^2 / (J~ . J~), ~ = the residual on (1, c), from the jump's sums over [tau, b):
  // its count nj, sum of u and sum of c.
  static double JumpGain(const LineSums& s, double nj, double sju, double sjc) {
    const double ju = sju - nj * s.su / s.n - sjc * s.scu / s.scc;
    const double jj = nj - nj * nj / s.n - sjc * sjc / s.scc;
    return jj > 0.0 ? ju * ju / jj : 0.0;
  }
  // The least-squares fit over [a, b) of u ~ 1, c, (i - kappa)+, [i >= tau], with kappa the
  // kink the shape test chose for this jump (the jump on top of the best kinked line): the
  // levels just before and just after the break, in u units, and the residual sum of squares.
  struct BreakLevels {
    double before = 0.0, after = 0.0, rss = 0.0;
  };
  BreakLevels FitAt(size_t a, size_t tau, size_t b) {
    const size_t kappa = JumpOnTrend(a, tau, b).kappa;
    const double centre = 0.5 * static_cast<double>(a + b - 1);
    auto regressors = [&](size_t i, bool jump) {
      const double c = static_cast<double>(i) - centre;
      const double k = kappa > a && i >= kappa ? static_cast<double>(i - kappa) : 0.0;
      return std::array<double, 4>{1.0, c, k, jump ? 1.0 : 0.0};
    };
    std::array<std::array<double, 5>, 4> system{};  // [X'X | X'u]
    for (size_t i = a; i < b; ++i) {
      const auto x = regressors(i, i >= tau);
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) system[r][c] += x[r] * x[c];
        system[r][4] += x[r] * u_[i];
      }
    }
    // Without a kink (kappa at a) its column is all zeros: a line with a jump.
    const int used = kappa > a ? 4 : 3;
    const int order[4] = {0, 1, 3, 2};  // the jump before the kink, so `used` drops the kink
    std::array<double, 4> beta{};
    std::array<std::array<double, 5>, 4> m{};
    for (int r = 0; r < used; ++r) {
      for (int c = 0; c < used; ++c) m[r][c] = system[order[r]][order[c]];
      m[r][4] = system[order[r]][4];
    }
    for (int col = 0; col < used; ++col) {  // Gauss-Jordan, partial pivoting
      int pivot = col;
      for (int r = col + 1; r < used; ++r) {
        if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
      }
      if (!(std::fabs(m[pivot][col]) > 1e-12)) return {};
      std::swap(m[col], m[pivot]);
      for (int r = 0; r < used; ++r) {
        if (r == col) continue;
        const double f = m[r][col] / m[col][col];
        for (int c = col; c < 5; ++c) m[r][c] -= f * m[col][c];
      }
    }
    for (int r = 0; r < used; ++r) beta[order[r]] = m[r][4] / m[r][r];
    auto fit = [&](size_t i, bool jump) {
      const auto x = regressors(i, jump);
      return beta[0] * x[0] + beta[1] * x[1] + beta[2] * x[2] + beta[3] * x[3];
    };
    BreakLevels levels;
    levels.before = fit(tau - 1, false);
    levels.after = fit(tau, true);
    for (size_t i = a; i < b; ++i) levels.rss += std::pow(u_[i] - fit(i, i >= tau), 2);
    return levels;
  }

  // Steps under a slope (issue 21): inside each segment the pipeline left (small change
  // points count as bounds), the jump that a line with a level break fits best, kept when the
  // shape test passes it (the jump on top of the best kinked line, ShapeOf) and its effect is
  // large enough; then again inside both halves. A creep with a step of the other sign has
  // two levels of about equal means, so the two-level search cannot see it, and the creep
  // test (Mann-Kendall) saw a broken line, neither trend nor step: both were lost. Fitted
  // jointly, the step is found and each side keeps its own drift finding. A small change point
  // (a neighbour whose two-level effect is below the minimum) is judged by the same model
  // first: a step between creeps of the other sign has two levels of about equal means there
  // too, and where it stayed small it also hid the jump from the search inside its segments
  // (DetectJoint.AStepKeptSmallByDriftsIsJudgedWithThem), where that model's jump is strongest
  // nearby (BestJointPosition) if it holds there. Quality bench, 1000 series, seed
  // bases 1/1001/2001/3001/4001/5001: a drift of 5-10 % with a 5 % step of the other sign,
  // all+-2 96.7-98.2 % -> 99.4-100 % (either sign); 1 % steps at 0.5 % noise, F1
  // 0.595-0.629 -> 0.655-0.681 (recall +0.06, false points per 10,000 runs +0.17 to +0.47,
  // before BestJointPosition); 2 % steps and the mix equal or better. On seed
  // bases 6001..25001 the same rows better on all 20, and the 0.3 %/run walk 1 to 3 false
  // points more in 300,000 runs on five of them (2.13 -> 2.17 per 10,000 on 23001, over its
  // target before too).
  void AddJointSteps(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                     std::vector<bool>& joint) {
    constexpr int kMaxJointDepth = 3;
    JudgeSmallJointly(taus, verdicts, joint);
    std::vector<size_t> bounds = {0};
    bounds.insert(bounds.end(), taus.begin(), taus.end());
    bounds.push_back(u_.size());
    std::vector<size_t> added;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      ScanJoint(bounds[s], bounds[s + 1], kMaxJointDepth, added);
    }
    for (size_t tau : added) {
      const auto at = std::lower_bound(taus.begin(), taus.end(), tau) - taus.begin();
      taus.insert(taus.begin() + at, tau);
      Verdict pass;
      pass.pass = true;
      verdicts.insert(verdicts.begin() + at, pass);
      joint.insert(joint.begin() + at, true);
    }
  }
  // Each small change point that the joint model holds becomes a joint step, at the strongest
  // jump nearby (BestJointPosition) where it holds there, else where it is.
  void JudgeSmallJointly(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                         std::vector<bool>& joint) {
    for (size_t i = 0; i < taus.size(); ++i) {
      if (!verdicts[i].small) continue;
      const size_t a = Before(taus, i), b = After(taus, i, u_.size());
      auto holds = [&](size_t at) { return JointStepHolds(a, at, b, JointP(a, at, b)); };
      const size_t best = BestJointPosition(a, taus[i], b);
      if (holds(best)) {
        taus[i] = best;
      } else if (best == taus[i] || !holds(taus[i])) {
        continue;
      }
      verdicts[i].small = false;
      verdicts[i].pass = true;
      joint[i] = true;
    }
  }
  // Where within +-refine_window runs of tau (min_segment from a and b) the jump on the kinked
  // line is strongest (its p with white residuals: the ranking needs no long-run variance). A
  // small change point kept the search's position, which its two levels chose; a joint step is
  // not moved by Refine. Quality bench, 1000 series, 26 seed bases (1..25001), 1 % steps at
  // 0.5 % noise: F1 +0.0022 (better on 24, worse on none), false points per 10,000 runs -0.06
  // (fewer on 20, more on 3); no other row moved but the mix, on one seed base, by one step.
  size_t BestJointPosition(size_t a, size_t tau, size_t b) {
    const auto [lo, hi] = RefineWindow(a, tau, b, std::max<size_t>(3, options_.min_segment));
    size_t best = tau;
    double best_p = 2.0;
    for (size_t t = lo; t <= hi; ++t) {
      const ShapeVerdict v =
          Shapes().Test(a, t, b, kSigmaFloor, /*jump_on_trend=*/true, /*white=*/true);
      if (v.applicable && v.trend_p < best_p) {
        best_p = v.trend_p;
        best = t;
      }
    }
    return best;
  }
  void ScanJoint(size_t a, size_t b, int depth, std::vector<size_t>& added) {
    const size_t m = std::max<size_t>(3, options_.min_segment);
    if (depth == 0 || b - a < 2 * kMinCreepRuns || b - a < 2 * m + 1) return;
    // Two candidates: the jump on a straight line (a creep through the step), and the jump on
    // the best kinked line (a trend that turns, with a step near the turn); the stronger one
    // that holds is kept.
    size_t best = 0;
    double best_p = 2.0;
    for (size_t tau : {BestJumpOnLine(a, b, m), BestJumpOnKink(a, b, m)}) {
      if (tau == 0 || tau == best) continue;
      const double p = JointP(a, tau, b, /*quick=*/true);
      if (p < best_p && JointStepHolds(a, tau, b, p)) {
        best_p = p;
        best = tau;
      }
    }
    if (best == 0) return;
    added.push_back(best);
    ScanJoint(a, best, depth - 1, added);
    ScanJoint(best, b, depth - 1, added);
  }
  // Where a jump on top of a straight line fits [a, b) best (0: nowhere).
  size_t BestJumpOnLine(size_t a, size_t b, size_t m) const {
    const LineSums s = Sums(a, b);
    double nj = 0.0, sju = 0.0, sjc = 0.0, best_gain = -1.0;
    size_t best = 0;
    for (size_t tau = b - 1; tau > a; --tau) {
      nj += 1.0;
      sju += u_[tau];
      sjc += static_cast<double>(tau) - s.centre;
      if (tau > b - m || tau < a + m) continue;
      const double gain = JumpGain(s, nj, sju, sjc);
      if (gain > best_gain) {
        best_gain = gain;
        best = tau;
      }
    }
    return best;
  }
  // Where a jump fits [a, b) best on top of a kinked line: u ~ 1, c, (i - kappa)+,
  // [i >= tau], over tau and over kinks kappa on a grid of at most kKinkGrid positions (the
  // test, JointP, then finds the kink exactly). Per kink O(b - a): with the basis
  // B = (1, c, k) fixed, adding J lowers the residual sum of squares by
  // (J~ . u~)^2 / (J~ . J~), J~ . u~ = J.u - (B'J)' beta, J~ . J~ = J.J - (B'J)' G^-1 B'J.
  size_t BestJumpOnKink(size_t a, size_t b, size_t m) const {
    constexpr size_t kKinkGrid = 30;
    const LineSums s = Sums(a, b);
    // Without a clear slope change (a kink alone lowering the straight line's residual sum of
    // squares by less than kMinKinkGain robust variances) the straight line's candidate
    // stands for this one: most segments, and the scan below is the joint search's cost.
    // 16, not 10: the best of a flat segment's kinks passes 10 often (a maximum over its
    // positions), and the quality bench (300 series) is the same or better with 16, a
    // 10,000-run history 4 % cheaper.
    constexpr double kMinKinkGain = 16.0;
    if (BestKink(a, b, m, s).second < kMinKinkGain) return 0;
    const size_t stride = std::max<size_t>(1, (b - a) / kKinkGrid);
    double best_gain = -1.0;
    size_t best = 0, best_kappa = 0;
    auto consider = [&](size_t kappa) {
      const auto [tau, gain] = BestJumpGivenKink(a, b, m, kappa, s);
      if (tau != 0 && gain > best_gain) {
        best_gain = gain;
        best = tau;
        best_kappa = kappa;
      }
    };
    for (size_t kappa = a + m; kappa + m <= b; kappa += stride) consider(kappa);
    if (best == 0 || stride == 1) return best;
    // Then every kink within a grid step of the best one.
    const size_t grid_kappa = best_kappa;
    const size_t from = std::max(a + m, grid_kappa > stride ? grid_kappa - stride : 0);
    for (size_t kappa = from; kappa <= grid_kappa + stride && kappa + m <= b; ++kappa) {
      consider(kappa);
    }
    return best;
  }
  std::pair<size_t, double> BestJumpGivenKink(size_t a, size_t b, size_t m, size_t kappa,
                                              const LineSums& s) const {
    const double kp = static_cast<double>(kappa);
    double sk = 0, skc = 0, skk = 0, sku = 0;
    for (size_t i = kappa; i < b; ++i) {
      const double k = static_cast<double>(i) - kp, c = static_cast<double>(i) - s.centre;
      sk += k;
      skc += k * c;
      skk += k * k;
      sku += k * u_[i];
    }
    const Matrix3 gram = {{{s.n, 0.0, sk}, {0.0, s.scc, skc}, {sk, skc, skk}}};
    Matrix3 inverse;
    if (!Invert(gram, inverse)) return {0, 0.0};
    const std::array<double, 3> beta = Multiply(inverse, {s.su, s.scu, sku});
    // The kinked line's own gain over the straight line is the same for every tau: only the
    // jump's gain on top of it is compared between taus of one kink, and the total (kink and
    // jump) between kinks.
    const double line_rss = s.suu - s.su * s.su / s.n - s.scu * s.scu / s.scc;
    const double kink_rss = s.suu - (s.su * beta[0] + s.scu * beta[1] + sku * beta[2]);
    double nj = 0, sjc = 0, sjk = 0, sju = 0, best_gain = -1.0;
    size_t best = 0;
    for (size_t tau = b - 1; tau > a; --tau) {
      nj += 1.0;
      sjc += static_cast<double>(tau) - s.centre;
      sjk += tau >= kappa ? static_cast<double>(tau) - kp : 0.0;
      sju += u_[tau];
      if (tau > b - m || tau < a + m) continue;
      const std::array<double, 3> bj = {nj, sjc, sjk};
      const std::array<double, 3> g_bj = Multiply(inverse, bj);
      const double ju = sju - (bj[0] * beta[0] + bj[1] * beta[1] + bj[2] * beta[2]);
      const double jj = nj - (bj[0] * g_bj[0] + bj[1] * g_bj[1] + bj[2] * g_bj[2]);
      if (!(jj > 1e-9)) continue;
      if (ju * ju / jj > best_gain) {
        best_gain = ju * ju / jj;
        best = tau;
      }
    }
    return {best, line_rss - kink_rss + best_gain};
  }
  // The slope change kappa in [a + m, b - m] that lowers a straight line's residual sum of
  // squares over [a, b) most (0 when none does), and by how much: O(b - a), suffix sums.
  std::pair<size_t, double> BestKink(size_t a, size_t b, size_t m, const LineSums& s) const {
    double t0 = 0, t1 = 0, t2 = 0, tu = 0, tiu = 0, best_gain = 0.0;
    size_t best = 0;
    for (size_t kappa = b - 1; kappa > a; --kappa) {
      const double i = static_cast<double>(kappa) - s.centre;  // centred coordinates
      t0 += 1.0;
      t1 += i;
      t2 += i * i;
      tu += u_[kappa];
      tiu += i * u_[kappa];
      if (kappa > b - m || kappa < a + m) continue;
      const double sk = t1 - i * t0, skk = t2 - 2.0 * i * t1 + i * i * t0;
      const double skc = t2 - i * t1, sku = tiu - i * tu;
      const double ku = sku - sk * s.su / s.n - skc * s.scu / s.scc;
      const double kk = skk - sk * sk / s.n - skc * skc / s.scc;
      if (!(kk > 1e-9)) continue;
      if (ku * ku / kk > best_gain) {
        best_gain = ku * ku / kk;
        best = kappa;
      }
    }
    return {best, best_gain};
  }
  using Matrix3 = std::array<std::array<double, 3>, 3>;
  static bool Invert(const Matrix3& g, Matrix3& inverse) {
    const double det = g[0][0] * (g[1][1] * g[2][2] - g[1][2] * g[2][1]) -
                       g[0][1] * (g[1][0] * g[2][2] - g[1][2] * g[2][0]) +
                       g[0][2] * (g[1][0] * g[2][1] - g[1][1] * g[2][0]);
    if (!(std::fabs(det) > 1e-12)) return false;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) {
        // Cofactor of (c, r), transposed: the adjugate.
        const int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
        inverse[r][c] = (g[r1][c1] * g[r2][c2] - g[r1][c2] * g[r2][c1]) / det;
      }
    }
    return true;
  }
  static std::array<double, 3> Multiply(const Matrix3& g, const std::array<double, 3>& x) {
    std::array<double, 3> y{};
    for (int r = 0; r < 3; ++r) y[r] = g[r][0] * x[0] + g[r][1] * x[1] + g[r][2] * x[2];
    return y;
  }
  // ShapeTester::Test with jump_on_trend of one split: a joint step's p (JointP), its break
  // levels (FitAt) and its figures (JointChangePoint) all need it, for the same split in a
  // row; it costs O(b - a) with the long-run variance, so the last one is kept.
  const ShapeVerdict& JumpOnTrend(size_t a, size_t tau, size_t b) {
    if (jump_on_trend_key_ != std::array<size_t, 3>{a, tau, b}) {
      jump_on_trend_ = Shapes().Test(a, tau, b, kSigmaFloor, /*jump_on_trend=*/true);
      jump_on_trend_key_ = {a, tau, b};
    }
    return jump_on_trend_;
  }
  // The jump on top of the best kinked line (ShapeTester::Test with jump_on_trend),
  // corrected for the choice of tau; 1 where the test does not apply.
  // `quick`: most candidates (every flat segment has one) fail already as if the residuals
  // were white, which skips the long-run variance, the joint search's main cost on a long
  // history; such a failing p is returned as it is (lower than the full test's, still failing).
  double JointP(size_t a, size_t tau, size_t b, bool quick = false) {
    if (quick) {
      const ShapeVerdict white =
          Shapes().Test(a, tau, b, kSigmaFloor, /*jump_on_trend=*/true, /*white=*/true);
      if (!white.applicable) return 1.0;
      const double p = CorrectForSelection(white.trend_p, static_cast<double>(b - a));
      if (p > JointThreshold(a, tau, b)) return p;
    }
    const ShapeVerdict& v = JumpOnTrend(a, tau, b);
    if (!v.applicable) return 1.0;
    return CorrectForSelection(v.trend_p, static_cast<double>(b - a));
  }
  bool JointStepHolds(size_t a, size_t tau, size_t b, double p) {
    if (p > JointThreshold(a, tau, b)) return false;
    const BreakLevels f = FitAt(a, tau, b);
    const double before = center_ + sigma_ * f.before;
    const double after = center_ + sigma_ * f.after;
    const double shift = std::fabs(after - before);
    if (std::fabs(RelativeChange(after, before)) < options_.min_relative_change) return false;
    if (!LocalMediansAgree(a, tau, b, f.after - f.before)) return false;
    return options_.min_within_noise_ratio <= 0.0 ||
           AtLeastRatioTimesMedian(std::span(valid_.noise).subspan(a, b - a),
                                   options_.min_within_noise_ratio, shift);
  }
  // Whether the medians of the 2k + 1 runs (k = outlier_neighbours) on either side of tau
  // differ in the direction of `jump` by at least kLocalShare of it. A least-squares jump can
  // be carried by a cluster of spikes that ReplaceOutliers leaves (two of three 30 % runs in a
  // row: each has a spike for a neighbour), which the two-level test meets with Welch's test;
  // the medians next to a real jump move with it (a drift adds only 2k + 1 runs of slope).
  bool LocalMediansAgree(size_t a, size_t tau, size_t b, double jump) {
    constexpr double kLocalShare = 0.25;
    const size_t k = std::min({2 * options_.outlier_neighbours + 1, tau - a, b - tau});
    if (k < 3) return true;
    scratch_.assign(u_.begin() + static_cast<std::ptrdiff_t>(tau - k),
                    u_.begin() + static_cast<std::ptrdiff_t>(tau));
    const double left = MedianInPlace(scratch_);
    scratch_.assign(u_.begin() + static_cast<std::ptrdiff_t>(tau),
                    u_.begin() + static_cast<std::ptrdiff_t>(tau + k));
    const double local = MedianInPlace(scratch_) - left;
    return local * jump > 0.0 && std::fabs(local) >= kLocalShare * std::fabs(jump);
  }
  // A joint step's figures: the fitted levels just before and just after the break.
  SideTest JointChangePoint(size_t a, size_t tau, size_t b) {
    SideTest cp;
    const BreakLevels f = FitAt(a, tau, b);
    cp.before_mean = center_ + sigma_ * f.before;
    cp.after_mean = center_ + sigma_ * f.after;
    const double spread =
        sigma_ * std::sqrt(f.rss / std::max(1.0, static_cast<double>(b - a) - 4.0));
    cp.before_stddev = cp.after_stddev = spread;
    cp.before_count = tau - a;
    cp.after_count = b - tau;
    cp.relative_change = RelativeChange(cp.after_mean, cp.before_mean);
    cp.t_statistic = JumpOnTrend(a, tau, b).trend_t;
    cp.p_value = JointP(a, tau, b);
    cp.confidence = 1.0 - cp.p_value;
    return cp;
  }

  // A level that wanders (a random walk under the noise, EstimateLocalLevel) makes the levels
  // of long segments differ by chance. Where the segments show such a walk, each change point
  // must also be a jump against the series' own wander: the difference of the means of the w
  // runs on either side, against the spread of that same difference at every position at
  // least w runs from a change point (its robust sigma, WindowSpread), corrected for the
  // choice of the position. The spread is measured rather than modelled because the walk's
  // estimate is low (the segments were cut where the walk moved most); w is the window that
  // the local-level model says separates a jump from the walk best, sqrt(3 noise / walk)
  // (within the change point's neighbours). The weakest failing change point goes first, then
  // the others are judged again between their new neighbours.
  void RemoveWalkSteps(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                       std::vector<bool>& joint) {
    const size_t n = u_.size();
    while (!taus.empty()) {
      std::vector<size_t> bounds = {0};
      bounds.insert(bounds.end(), taus.begin(), taus.end());
      bounds.push_back(n);
      // Only where all segments show a walk. Testing also where the wander across one cut
      // showed one (that cut left out) took lone 2 % steps at 1 % noise, whose own jump reads
      // as a walk across their cut, and the local-level screen now takes the walks it was
      // for (with kWalkSigmas 3 instead of 2.5, robust.cc, quality bench, six seed bases: 2 %
      // steps F1 +0.002 to +0.004; the trend that turns flat with a step F1 +0.001 to +0.004
      // on four, the same on one, -0.002 on one).
      const LocalLevel all = EstimateLocalLevel(u_, bounds);
      if (!all.significant) return;
      const size_t m = std::max<size_t>(1, options_.min_segment);
      const size_t window = std::clamp<size_t>(std::lround(std::sqrt(3.0 * all.noise / all.walk)),
                                               m, std::max(m, kWalkLag));
      std::vector<double> spreads;  // by window, computed when needed
      size_t weakest = taus.size();
      double weakest_p = -1.0;
      for (size_t i = 0; i < taus.size(); ++i) {
        if (verdicts[i].small) continue;
        const size_t a = Before(taus, i), b = After(taus, i, n);
        const size_t room = std::min(taus[i] - a, b - taus[i]);
        const size_t w = std::min(window, room);
        if (spreads.size() <= w) spreads.resize(w + 1, 0.0);
        if (spreads[w] == 0.0) spreads[w] = WindowSpread(w, taus);
        // Where the spread cannot be measured, the model's.
        const double spread = std::isnan(spreads[w]) ? ModelSpread(w, all) : spreads[w];
        // The jump at its best place within +-2 runs of tau (not yet refined, step 5): the
        // windows' difference falls off fast on either side of a real step.
        double difference = WindowDifference(taus[i], w);
        for (size_t t = std::max(a + w, taus[i] > 2 ? taus[i] - 2 : 0);
             t <= std::min(taus[i] + 2, b - w); ++t) {
          const double d = WindowDifference(t, w);
          if (std::fabs(d) > std::fabs(difference)) difference = d;
        }
        const double z = difference / spread;
        const double p_single = std::erfc(std::fabs(z) / std::numbers::sqrt2);
        const double p = CorrectForSelection(std::min(1.0, p_single), static_cast<double>(b - a));
        if (p > Threshold(a, taus[i], b) && p > weakest_p) {
          weakest_p = p;
          weakest = i;
        }
      }
      if (weakest == taus.size()) return;
      const auto at = static_cast<std::ptrdiff_t>(weakest);
      taus.erase(taus.begin() + at);
      verdicts.erase(verdicts.begin() + at);
      joint.erase(joint.begin() + at);
    }
  }
  // The textbook random-walk null (issue 21): the local level model (a random walk under white
  // noise, FitLocalLevel). The series is taken for a walk where the segments found leave
  // residuals that still wander (likelihood ratio of the local level against white noise on
  // them) or where the walk has the lower BIC than the segments (the detector cut the walk
  // where it moved most, which can leave white residuals). Then each change point must also
  // be a jump of the walk's level: Harvey & Koopman's auxiliary residual of the level
  // disturbance, within +-refine_window runs, at least kWalkJumpSigmas; it moves there. Under
  // the walk those residuals are about N(0, 1) (the margin above 3 pays for the window and for
  // the cuts having been put where the walk moved most). Returns kWalk where the series was
  // taken for a walk; where it is not (steps in white noise, drifts), nothing changes here, and
  // it returns kWhite where the local level fitted to the segments' residuals is white noise
  // (its q the grid's smallest) and every segment is flat, kUnclear otherwise.
  enum class WalkScreen { kWalk, kWhite, kUnclear };
  WalkScreen ScreenUnderLocalLevel(std::vector<size_t>& taus, std::vector<Verdict>& verdicts,
                                   std::vector<bool>& joint, std::vector<bool>& located,
                                   std::vector<double>& q_hats) {
    const size_t n = u_.size();
    if (taus.empty() || n < kWalkMinRuns) return WalkScreen::kUnclear;
    // Is there a walk beyond the segments found? The local level fitted to their residuals
    // against white noise, by likelihood ratio: steps in white noise leave white residuals,
    // a walk cut into segments still wanders inside them.
    const auto [residuals, sloped] = SegmentResiduals(taus);
    const LocalLevelFit inside = FitLocalLevel(residuals, 1.0, /*smooth=*/false);
    const WalkScreen not_walk =
        inside.q <= kWhiteLevelRatio && !sloped ? WalkScreen::kWhite : WalkScreen::kUnclear;
    const double squares = ClippedSquares(std::span(residuals).subspan(1));
    const double m1 = static_cast<double>(n - 1);
    const double white =
        m1 * (std::log(2.0 * std::numbers::pi * std::max(squares / m1, 1e-300)) + 1.0);
    LocalLevelFit walk = FitLocalLevel(u_, 1.0, /*smooth=*/false);
    const bool wanders = white - inside.neg2_loglik >= kWalkLikelihoodRatio;
    if (!wanders && !WalkBeatsSegments(walk, residuals, taus.size())) return not_walk;
    SmoothLocalLevel(u_, 1.0, walk);
    if (walk.auxiliary.empty()) return not_walk;
    if (!wanders && MovesAtCuts(walk, taus)) return not_walk;
    // Under the walk the least-squares split of two long segments lands where the walk moved
    // most, not at the jump: the jump is looked for within +-refine_window runs (between the
    // neighbours, min_segment from them) and the change point moves to it.
    std::vector<Dropped> dropped;
    for (size_t i = taus.size(); i-- > 0;) {
      if (verdicts[i].small) continue;
      const size_t a = Before(taus, i), b = After(taus, i, n);
      auto [best, largest] = LargestLevelJump(walk, a, taus[i], b);
      // Where it moves, it must still pass its own test there (its figures are taken there):
      // a spike the outlier screen left (two or three in a row) is a clipped innovation, an
      // infinite auxiliary residual, and took a step a few runs off to where its two levels
      // did not differ at all (reported with p 1; quality bench, stationary series with dirt).
      // Looking for the next largest residual that passes instead found nothing more.
      if (largest >= kWalkJumpSigmas && !PassesAt(a, best, b, joint[i])) largest = 0.0;
      if (largest >= kWalkJumpSigmas) {
        q_hats[best] = q_hats[taus[i]];
        taus[i] = best;
        located[i] = true;
        continue;
      }
      dropped.push_back({taus[i], verdicts[i], joint[i]});
      const auto at = static_cast<std::ptrdiff_t>(i);
      taus.erase(taus.begin() + at);
      verdicts.erase(verdicts.begin() + at);
      joint.erase(joint.begin() + at);
      located.erase(located.begin() + at);
    }
    Readmit(dropped, taus, verdicts, joint, located, q_hats);
    return WalkScreen::kWalk;
  }
  // The largest auxiliary residual of the walk's level within +-refine_window runs of tau,
  // at least min_segment runs from the neighbours a and b: where, and its size.
  std::pair<size_t, double> LargestLevelJump(const LocalLevelFit& walk, size_t a, size_t tau,
                                             size_t b) const {
    const auto [from, hi] = RefineWindow(a, tau, b, std::max<size_t>(1, options_.min_segment));
    const size_t lo = std::max<size_t>(from, 1);  // auxiliary[0] belongs to no move
    std::pair<size_t, double> best = {tau, 0.0};
    for (size_t t = lo; t <= hi; ++t) {
      if (std::fabs(walk.auxiliary[t]) > best.second) best = {t, std::fabs(walk.auxiliary[t])};
    }
    return best;
  }
  // A change point the local-level screen dropped, as it was.
  struct Dropped {
    size_t tau;
    Verdict verdict;
    bool joint;
  };
  // The walk that judged the dropped change points was fitted to the series with its steps in
  // it: a few large real steps (a 25 % and a 45 % one) pass for the walk's own moves and
  // inflate its variance, and beside them a 5 % step at 1-2 % noise no longer reads as a jump
  // of the level. As in intervention analysis (Harvey; Durbin & Koopman), the steps the screen
  // kept are taken out (each the difference of the means of the kJumpWindow runs on either
  // side) and the walk is fitted again to what is left; a dropped change point whose
  // auxiliary residual then reaches kWalkJumpSigmas, and which passes its own test there,
  // comes back; again, until none does. Quality bench, 1000 series, seed bases 1/1001/2001
  // (F1): the mix (1-50 % steps, outliers, a slow drift) 0.854/0.844/0.846 ->
  // 0.856/0.844/0.848 (5 and 4 more steps found on the first two, no false one more); a drift
  // with two 5-10 % steps 0.944/0.944/0.946 -> 0.947/0.947/0.948; the 0.3 %/run walks
  // unchanged (their cuts are the walk's own moves, which stay small against a walk fitted
  // without the kept ones).
  void Readmit(std::vector<Dropped>& dropped, std::vector<size_t>& taus,
               std::vector<Verdict>& verdicts, std::vector<bool>& joint, std::vector<bool>& located,
               std::vector<double>& q_hats) {
    const size_t n = u_.size();
    const size_t m = std::max<size_t>(1, options_.min_segment);
    while (!dropped.empty() && !taus.empty()) {
      std::vector<double> rest(u_.begin(), u_.end());
      for (size_t i = 0; i < taus.size(); ++i) {
        if (verdicts[i].small) continue;
        const size_t a = Before(taus, i), b = After(taus, i, n);
        const size_t k = std::min<size_t>({kJumpWindow, taus[i] - a, b - taus[i]});
        const double jump = WindowDifference(taus[i], k);
        for (size_t t = taus[i]; t < n; ++t) rest[t] -= jump;
      }
      LocalLevelFit walk = FitLocalLevel(rest, 1.0, /*smooth=*/false);
      SmoothLocalLevel(rest, 1.0, walk);
      if (walk.auxiliary.empty()) return;
      bool added = false;
      for (size_t d = dropped.size(); d-- > 0;) {
        const size_t tau = dropped[d].tau;
        const auto [a, b] = Around(taus, tau, n);
        if (tau < a + m || tau + m > b) continue;
        const auto [best, largest] = LargestLevelJump(walk, a, tau, b);
        if (largest < kWalkJumpSigmas || !PassesAt(a, best, b, dropped[d].joint)) continue;
        const auto at = std::lower_bound(taus.begin(), taus.end(), best) - taus.begin();
        taus.insert(taus.begin() + at, best);
        verdicts.insert(verdicts.begin() + at, dropped[d].verdict);
        joint.insert(joint.begin() + at, dropped[d].joint);
        located.insert(located.begin() + at, true);
        q_hats[best] = q_hats[tau];
        dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(d));
        added = true;
      }
      if (!added) return;
    }
  }
  // Whether a change point at tau between a and b passes its own significance test there: a
  // joint step's (the jump on the kinked line, JointP), else the two-level test.
  bool PassesAt(size_t a, size_t tau, size_t b, bool is_joint) {
    if (is_joint) return JointP(a, tau, b) <= JointThreshold(a, tau, b);
    return Test(a, tau, b).p_value <= Threshold(a, tau, b);
  }
  // Whether the local level fitted to u_ (walk: start level, noise, q) has a lower BIC than
  // the segments (residuals: u_ less their fit; each cut a level, a position and
  // kWalkCutPenalty, the noise and the first level).
  bool WalkBeatsSegments(const LocalLevelFit& walk, const std::vector<double>& residuals,
                         size_t cuts) const {
    const size_t n = u_.size();
    const double dn = static_cast<double>(n), log_n = std::log(dn);
    const double rss = ClippedSquares(residuals);
    const double segments =
        dn * (std::log(2.0 * std::numbers::pi * std::max(rss / dn, 1e-300)) + 1.0) +
        (2.0 + (2.0 + kWalkCutPenalty) * static_cast<double>(cuts)) * log_n;
    return walk.neg2_loglik * dn / (dn - 1.0) + 3.0 * log_n < segments;
  }
  // Whether the walk fitted to u_ moves mostly at the cuts it would not keep, as it does where
  // they are steps under white noise: a walk can fit those (paying with a q that also follows
  // the noise), but its smoothed level disturbances (the auxiliary residuals) then come as a
  // few bursts at the steps, where a real walk's are spread over the whole series (its cuts
  // sit where it moved most, which concentrates them only somewhat). The share of their sum
  // of squares within +-kCutReach runs of those cuts must reach kCutConcentration times the
  // share of runs those windows hold. A cut the screen keeps anyway (a jump of at least
  // kWalkJumpSigmas within its reach) is left out with its window: a large step inside a walk
  // concentrates the walk's movement too, and it must not spare the walk's other cuts. It
  // overrules only the BIC comparison (WalkBeatsSegments), which charges three 2 % steps at
  // 1 % noise nearly what a walk pays: where the segments' residuals still wander, the walk
  // stands.
  static bool MovesAtCuts(const LocalLevelFit& walk, const std::vector<size_t>& taus) {
    constexpr size_t kCutReach = 5;
    // Quality bench, 1000 series, seed base 1, the series that only WalkBeatsSegments took
    // for a walk: the ratio's median is 4.1 on 2 % steps at 1 % noise (29 series) and 2.1 on
    // the 0.3 %/run walk (150). 2 % steps F1 and walk false steps per 10,000 runs, seed bases
    // 1 and 1001: without 0.917, 0.923 and 0.73, 0.80; 3: 0.925, 0.928 and 1.13, 1.77; 3.5:
    // 0.924, 0.928 and 0.87, 1.07; 4: 0.922, 0.928 and 0.80, 0.90.
    constexpr double kCutConcentration = 3.5;
    const std::vector<double>& aux = walk.auxiliary;
    const size_t n = aux.size();
    enum Zone : char { kAway, kWeakCut, kKeptCut };
    std::vector<Zone> zone(n, kAway);
    for (size_t tau : taus) {
      const size_t lo = std::max<size_t>(1, tau > kCutReach ? tau - kCutReach : 0);
      const size_t hi = std::min(n - 1, tau + kCutReach);
      bool kept = false;
      for (size_t t = lo; t <= hi; ++t) kept = kept || !(std::fabs(aux[t]) < kWalkJumpSigmas);
      for (size_t t = lo; t <= hi; ++t) {
        if (zone[t] != kKeptCut) zone[t] = kept ? kKeptCut : kWeakCut;
      }
    }
    double total = 0.0, near = 0.0;
    size_t counted = 0, covered = 0;
    for (size_t t = 1; t < n; ++t) {
      if (zone[t] == kKeptCut) continue;
      total += aux[t] * aux[t];
      ++counted;
      if (zone[t] == kWeakCut) {
        near += aux[t] * aux[t];
        ++covered;
      }
    }
    if (covered == 0 || !(total > 0.0)) return false;
    const double share_of_runs = static_cast<double>(covered) / static_cast<double>(counted);
    return near / total >= kCutConcentration * share_of_runs;
  }
  // u_ less the segments between taus: each a constant, or a line where its slope gains more
  // than log n robust variances (a drift); and whether any segment took a line.
  struct SegmentFit {
    std::vector<double> residuals;
    bool sloped = false;
  };
  SegmentFit SegmentResiduals(const std::vector<size_t>& taus) const {
    const size_t n = u_.size();
    const double log_n = std::log(static_cast<double>(n));
    SegmentFit fit;
    std::vector<double>& residuals = fit.residuals;
    residuals.resize(n);
    for (size_t s = 0; s <= taus.size(); ++s) {
      const size_t a = s == 0 ? 0 : taus[s - 1], b = s == taus.size() ? n : taus[s];
      const double mean = Mean(a, b);
      double sxy = 0.0, sxx = 0.0;
      const double centre = 0.5 * static_cast<double>(a + b - 1);
      for (size_t t = a; t < b; ++t) {
        const double d = static_cast<double>(t) - centre;
        sxy += d * (u_[t] - mean);
        sxx += d * d;
      }
      const double slope = sxx > 0.0 && sxy * sxy / sxx > log_n ? sxy / sxx : 0.0;
      fit.sloped = fit.sloped || slope != 0.0;
      for (size_t t = a; t < b; ++t) {
        residuals[t] = u_[t] - mean - slope * (static_cast<double>(t) - centre);
      }
    }
    return fit;
  }
  // The local-level model's sigma of WindowDifference(t, w).
  static double ModelSpread(size_t w, const LocalLevel& level) {
    const double dw = static_cast<double>(w);
    return std::sqrt(2.0 * level.noise / dw + level.walk * (2.0 * dw * dw + 1.0) / (3.0 * dw));
  }
  // Mean of the w runs from t less the mean of the w runs before t.
  double WindowDifference(size_t t, size_t w) const {
    const double dw = static_cast<double>(w);
    return static_cast<double>((prefix_[t + w] - prefix_[t]) - (prefix_[t] - prefix_[t - w])) / dw;
  }
  // Robust sigma (MAD) of WindowDifference(t, w) over the positions t whose windows hold no
  // change point of `taus`; NaN when there are fewer than kSpreadPositions x w such positions
  // (the windows overlap: that many give a few independent ones).
  double WindowSpread(size_t w, const std::vector<size_t>& taus) const {
    const size_t n = u_.size();
    // At most about kSpreadSample positions, evenly spaced (overlapping windows: neighbours
    // carry nearly the same difference), so that a long history's spread costs no more.
    constexpr size_t kSpreadSample = 4096;
    const size_t stride = n > 2 * kSpreadSample ? n / kSpreadSample : 1;
    std::vector<double> differences;
    size_t positions = 0;
    size_t next = 0;  // first change point >= t - w + 1
    for (size_t t = w; t + w <= n; ++t) {
      while (next < taus.size() && taus[next] + w <= t) ++next;
      if (next < taus.size() && taus[next] < t + w && taus[next] + w > t && taus[next] != t) {
        continue;
      }
      if (next < taus.size() && taus[next] == t) continue;
      if (positions++ % stride == 0) differences.push_back(WindowDifference(t, w));
    }
    if (positions < kSpreadPositions * w) return std::nan("");
    const double center = MedianInPlace(differences);
    for (double& d : differences) d = std::fabs(d - center);
    return std::max(kSigmaFloor * std::sqrt(2.0 / static_cast<double>(w)),
                    kMadToSigma * MedianInPlace(differences));
  }

  // The p-value a change point between a and b must reach: max_pvalue, and
  // max_pvalue x edge_pvalue_factor when it leaves fewer than edge_segment runs at either end
  // of the analysed runs (a split in the last few runs needs strong evidence).
  double Threshold(size_t a, size_t tau, size_t b) const {
    const size_t n = u_.size();
    const bool short_edge =
        (a == 0 && tau - a < options_.edge_segment) || (b == n && b - tau < options_.edge_segment);
    return short_edge ? options_.max_pvalue * options_.edge_pvalue_factor : options_.max_pvalue;
  }

  // A joint step's (the jump on a kinked line) threshold: kJointPvalueFactor x Threshold.
  double JointThreshold(size_t a, size_t tau, size_t b) const {
    return kJointPvalueFactor * Threshold(a, tau, b);
  }

  // The positions within +-refine_window runs of tau that leave at least m runs to a and to b
  // (lo > hi where there are none).
  std::pair<size_t, size_t> RefineWindow(size_t a, size_t tau, size_t b, size_t m) const {
    const size_t w = options_.refine_window;
    return {std::max(a + m, tau > w ? tau - w : 0), std::min(b - m, tau + w)};
  }

  static size_t Before(const std::vector<size_t>& taus, size_t i) {
    return i == 0 ? 0 : taus[i - 1];
  }
  static size_t After(const std::vector<size_t>& taus, size_t i, size_t n) {
    return i + 1 == taus.size() ? n : taus[i + 1];
  }
  // The change points of `taus` (sorted) around position `at`: the last before it (0 where
  // none) and the first at or after it (n where none).
  static std::pair<size_t, size_t> Around(const std::vector<size_t>& taus, size_t at, size_t n) {
    const auto next = std::lower_bound(taus.begin(), taus.end(), at);
    return {next == taus.begin() ? 0 : *(next - 1), next == taus.end() ? n : *next};
  }

  // Splits a value-ordered index list at position `tau` (stable: both halves stay ordered).
  static std::pair<std::vector<uint32_t>, std::vector<uint32_t>> Partition(
      const std::vector<uint32_t>& sorted, size_t tau) {
    std::pair<std::vector<uint32_t>, std::vector<uint32_t>> halves;
    for (uint32_t i : sorted) (i < tau ? halves.first : halves.second).push_back(i);
    return halves;
  }

  // Looks for a change inside [a, split) and [split, b), each tested at max_pvalue / 2^depth
  // (a Bonferroni share per exploration level), recursing up to kMaxExploreDepth levels.
  std::optional<size_t> Explore(size_t a, size_t b, const std::vector<uint32_t>& sorted,
                                const DistanceProfile& profile, size_t split, int depth) {
    constexpr int kMaxExploreDepth = 2;
    const size_t m = std::max<size_t>(1, options_.min_segment);
    const double threshold = options_.max_pvalue / std::ldexp(1.0, depth);
    auto halves = Partition(sorted, split);
    auto profiles = SplitDistanceProfile(u_, a, split, profile, halves.first, halves.second);
    const std::pair<size_t, size_t> bounds[2] = {{a, split}, {split, b}};
    const std::vector<uint32_t>* orders[2] = {&halves.first, &halves.second};
    const DistanceProfile* half_profiles[2] = {&profiles.first, &profiles.second};
    std::optional<size_t> best;
    double best_p = 2.0;
    size_t next_split[2] = {0, 0};
    for (int h = 0; h < 2; ++h) {
      const auto [lo, hi] = bounds[h];
      const auto candidate = BestSplitOfProfile(lo, hi, m, *half_profiles[h], energy_);
      if (!candidate) continue;
      next_split[h] = candidate->tau;
      const SideTest test = Test(lo, candidate->tau, hi);
      if (test.p_value <= threshold && test.p_value < best_p) {
        best = candidate->tau;
        best_p = test.p_value;
      }
    }
    if (best || depth >= kMaxExploreDepth) return best;
    for (int h = 0; h < 2; ++h) {
      const auto [lo, hi] = bounds[h];
      if (next_split[h] == 0 || hi - lo < 4 * m) continue;
      if (auto found = Explore(lo, hi, *orders[h], *half_profiles[h], next_split[h], depth + 1)) {
        return found;
      }
    }
    return std::nullopt;
  }

  const Valid& valid_;
  const DetectorOptions& options_;
  double sigma_ = 1.0;
  double center_ = 0.0;
  std::vector<double> u_;
  std::vector<long double> prefix_;
  std::vector<long double> prefix_squares_;
  std::vector<long double> prefix_index_;  // sums of i u
  std::vector<double> scratch_;
  EnergyScratch energy_;
  std::optional<ShapeTester> shape_;                     // over u_
  std::array<size_t, 3> jump_on_trend_key_ = {0, 0, 0};  // JumpOnTrend's last split
  ShapeVerdict jump_on_trend_;
  std::vector<double> season_;  // the cycle taken out of the values (season.h), if any
  // KeptForWantOfADrift: whether this is the second pass; the candidates the shape test
  // dropped in the first; those the first pass left unexplained (sorted).
  bool second_pass_ = false;
  std::vector<size_t> shape_dropped_;
  std::vector<size_t> unexplained_;
};

}  // namespace

Valid CollectValid(std::span<const Point> points, size_t offset) {
  Valid valid;
  valid.values.reserve(points.size());
  valid.noise.reserve(points.size());
  valid.index.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i].value)) continue;
    valid.values.push_back(points[i].value);
    valid.noise.push_back(points[i].noise);
    valid.index.push_back(offset + i);
  }
  return valid;
}

std::vector<ChangePoint> AnalyzeValid(const Valid& valid, const DetectorOptions& options) {
  Analysis analysis(valid, options);
  return analysis.Run();
}

std::vector<ChangePoint> AnalyzeDefault(std::span<const Point> points, size_t offset,
                                        const DetectorOptions& options) {
  return AnalyzeValid(CollectValid(points, offset), options);
}

}  // namespace devtime::detect
