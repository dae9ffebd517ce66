// devtime::detect — finds change points in one device-time series (one point per nightly run)
// and gates the newest point. No gRPC, no database: the collector loads a series, calls these
// functions and stores what they return. Start here.
//
//   Detect(points, options)        whole-history analysis -> change points (segment starts)
//   Analyze(points, options)       the same with kinds: steps, and drifts (slow creeps)
//   Detector                       Detect kept up to date one Append(point) at a time
//   GateNewest(points, options)    is last night's point already a suspected change?
//   CurrentDrift(points, options)  is the series creeping since its last step? (for the gate;
//                                  DetectDrift(span, options) tests a given span)
//
// Default mode (DetectorOptions::mode = kDefault), deterministic, no random permutations:
//  1. missing nights (NaN values) are dropped; indices always refer to the input;
//  2. single outlier runs are replaced by their neighbours' median when they stand out from
//     both the runs before and the runs after by more than `outlier_threshold` robust sigmas
//     (a spike is not a change point; a new level, which the following runs share, is kept);
//     the first and the last run, with neighbours on one side only, when they stand out from
//     the min(outlier_neighbours, 2 x min_segment - 3) runs next to them (such a run cannot
//     share a segment of min_segment runs); then (shape_test) a significant seasonal cycle
//     (a fixed period up to 60 runs, season.h) is subtracted: the steps are searched, tested
//     and located on the deseasonalised levels;
//  3. E-Divisive means over the whole history, hierarchically: each interval's best split
//     (energy statistic, alpha = 1, kappa = interval end; O(n log n) for the whole history,
//     then O(L) per part from its parent's distance sums, edivisive.h) is kept when a pooled
//     t-test of the two sides, corrected for having chosen the best of all splits
//     (Siegmund's approximation for the maximum of a standardised two-sample statistic,
//     capped by Bonferroni), gives p <= max_pvalue; when one side has at most
//     2 x outlier_neighbours + 1 runs and an F-test says the sides' variances differ
//     (p <= 0.001), Welch's t-test is used instead if it is more conservative (a short
//     segment carried by a cluster of spikes is not a level);
//  4. a pruning pass re-tests every change point between its final neighbours and removes
//     the weakest failing one until all pass; besides step 3's test (shape_test) the split
//     must be a jump of the level, not a piece of a trend, a slope change, a cycle or a random
//     walk (shape.h: against the best continuous kinked line, whose kink is chosen with the
//     jump in the model where that fits clearly better, with an effective sample size
//     from the residuals' serial dependence; a split that two levels fit and that fails only
//     by that sample size passes where its one-run jump stands out from the other run-to-run
//     differences at the same threshold, a jump under a walk too: analysis.cc,
//     JumpStandsOut; between neighbours 60 or more runs apart, also a
//     jump with a straight line in the model, analysis.cc, JumpOnLineHolds: a gentle slope
//     is no step), and a split that leaves fewer than edge_segment
//     runs at either end needs p <= max_pvalue x edge_pvalue_factor. A change point that
//     passes is reported only when its effect is large enough:
//     - |after/before - 1| >= min_relative_change, and
//     - |after - before| >= min_within_noise_ratio x median within-run stddev (Point::noise)
//       of the runs on both sides: a shift far below the run's own step-to-step jitter is
//       not reported even when many runs make it statistically visible;
//     one that is too small stays as a neighbour of the others (two real levels are not
//     merged into one segment, where they would read as a staircase) but is not reported;
//     then (shape_test) two change points of opposite sign around a segment shorter than
//     the segments on either side are tested as one excursion (its runs against those on
//     both sides, each deviation clipped at 8 sigmas in the pooled sigma, Bonferroni-corrected
//     for the search of a start and a length; a middle of
//     fewer than edge_segment runs needs edge_pvalue_factor too), and the
//     weaker one goes where it fails; each group of consecutive change points in one
//     direction competes with a continuous creep over its span (shape.h, RedundantSteps:
//     BIC of the staircase against flat-then-linear plus the fewest of its steps); the
//     steps the creep explains go
//     when a drift is reported in what they leave (as Analyze reports it, a turn's legs
//     included), and pruning runs again: a creep is one segment with one drift finding, not a
//     staircase of steps. The shape test never discards a change without reporting what it
//     kept instead: a strong split it failed (two-level p <= 1e-6) comes back in a second
//     pass where the result has nothing near it (no change point within refine_window runs,
//     no drift over its segment either way) and its kinked line fits only somewhat better
//     than two levels, or it is a clear jump within 30 runs on either side (analysis.cc,
//     KeptForWantOfADrift, StepLikeNearby);
//  4b. (shape_test, issue 21) joint models, so that a step and a drift cannot hide each
//     other: inside each segment, the jump that fits best on top of a straight line (a creep
//     through the step) or of the best kinked line (a trend that turns) is a step of its own
//     ("joint") when the jump on top of the kinked line is significant (selection-corrected,
//     effective sample size from the residuals) and its effect is large enough; its figures
//     are that model's levels just before and after the break, and each side keeps its own
//     drift finding; a small change point is judged by that model first (between creeps of
//     the other sign a step's two levels have about equal means). Then the random-walk null: where
//     the series is a local level (robust.h, FitLocalLevel: a random walk under white noise, Kalman
//     filter by concentrated ML) rather than the segments found (their residuals, clipped as the
//     walk's innovations are, still wander, or the walk has the lower BIC and its smoothed movement
//     is not concentrated at the cuts it would drop, as a walk fitted to steps in white noise is:
//     analysis.cc, MovesAtCuts), each change point must be a jump of the walk's level, an auxiliary
//     residual of at least 4 within +-refine_window runs, and moves there (each change point
//     first placed as in step 5, so that a cut a few runs off leaves no piece of its step in
//     the segments' residuals)
//     (analysis.cc, ScreenUnderLocalLevel); elsewhere, where the segments show a random-walk
//     level (EstimateLocalLevel) and are not flat with white residuals by the local level's
//     likelihood, each change point must also be a jump against the series'
//     own wander: the means of the w runs on either side against the measured spread of
//     that difference away from change points (analysis.cc, RemoveWalkSteps);
//  5. each change point that is neither joint nor placed by the walk's screen moves, within
//     +-refine_window runs and between its neighbours, to
//     the position with the most posterior mass of the one-step model within +-2 runs of it
//     (analysis.cc, Locate): the Bayes choice for "within 2 runs" of the true position.
// Drifts (Analyze, DetectDrift): Mann-Kendall over each segment between steps, see
// DetectDrift, or over each leg of a segment that turns. A creep is one drift finding, where
// steps 1-5 alone made a staircase.
// Otava mode (kOtava) reproduces Apache Otava 0.8 (see otava.h); missing values forward-filled.
//
// Thread-safety: free functions are thread-safe; a Detector is thread-compatible.
//
// Files: detect.cc (these entry points, the Otava adapter, Detector), analysis.cc (steps 1-5),
// robust.cc (sigma, outliers, within-run-noise check, the random-walk estimate), season.cc
// (step 2's cycle), shape.cc (step 4's shape test),
// drift.cc (Drift, Analyze, CurrentDrift), gate.cc (GateNewest), edivisive.cc, otava.cc
// (reference mode), stats.cc.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/collector/detect/edivisive.h"

namespace devtime::detect {

// One run's point: per-step mean device time and the stddev over the run's steps.
struct Point {
  double value = std::numeric_limits<double>::quiet_NaN();  // NaN = missing night
  double noise = std::numeric_limits<double>::quiet_NaN();  // NaN or 0 = unknown
};

enum class Mode { kDefault, kOtava };

struct DetectorOptions {
  Mode mode = Mode::kDefault;

  // --- default mode ---
  // Largest selection-corrected p-value of a change point.
  double max_pvalue = 0.001;
  // Smallest |after/before - 1| reported (1 %: below the 2 % steps we must find, so that the
  // estimate of a 2 % step does not straddle the cut).
  double min_relative_change = 0.01;
  // Smallest |after - before| as a multiple of the median within-run stddev (0 = off).
  double min_within_noise_ratio = 0.25;
  // Shortest segment: a change point needs this many valid runs on each side.
  size_t min_segment = 3;
  // A run is an outlier when it is this many robust sigmas away from the medians of both its
  // `outlier_neighbours` predecessors and successors, in the same direction (0 = off).
  double outlier_threshold = 5.0;
  size_t outlier_neighbours = 3;
  // Detector::Append re-analyses at most this many trailing runs (plus the last two
  // segments); older change points are kept as they are.
  size_t incremental_horizon = 1000;
  // Step 4's shape test (shape.h) on or off.
  bool shape_test = true;
  // A change point that leaves fewer than edge_segment runs at either end of the history needs
  // p <= max_pvalue x edge_pvalue_factor: a short end segment's mean rests on a few runs,
  // whose tails (bimodal runs, clusters of spikes, the end of a slow creep) the t-test does
  // not model. 12, not 6: quality bench, 1000 series, seed bases 1, 1001, 2001, false steps
  // 3 to 11 runs from an end on stationary series with dirt (0.04, 0.21, 0.32 per 10,000
  // runs -> 0, 0.21, 0.25) and with a slow drift (0.03 -> 0 at 2001); the one cost, a 10 %
  // step in 10-30-run series found within +-2 runs 0.1 to 0.2 points less often; 16 the
  // same, 20 cost 2 % steps (F1 0.923 -> 0.918). A 2-sigma step 8 runs from the end
  // has an expected t of 5.6, p 4e-6 after the choice of split: it still passes.
  size_t edge_segment = 12;
  double edge_pvalue_factor = 0.01;
  // Step 5 refines each change point's position within +-refine_window runs.
  size_t refine_window = 10;

  // --- drift (Analyze, DetectDrift) ---
  double drift_max_pvalue = 0.001;  // largest autocorrelation-corrected Mann-Kendall p
  size_t drift_min_runs = 20;       // shortest span tested for a drift

  // --- GateNewest ---
  size_t gate_window = 30;      // baseline = up to this many valid runs before the newest
  size_t gate_min_history = 5;  // fewer valid baseline runs -> kInsufficientHistory
  double gate_threshold = 4.0;  // robust z of the newest run against the baseline

  // --- Otava reference mode (Otava CLI defaults) ---
  size_t otava_window = 50;
  double otava_max_pvalue = 0.001;
  double otava_min_magnitude = 0.0;
};

// InvalidArgument naming the first bad field.
absl::Status ValidateOptions(const DetectorOptions& options);

struct ChangePoint {
  size_t index = 0;            // first input index of the new segment (the first bad run)
  size_t previous_index = 0;   // last valid input index before it (the last good run)
  double before_mean = 0.0;    // mean of the segment before (outliers replaced); for a step
                               // found jointly with a slope (step 4b): the fitted level just
                               // before the break
  double after_mean = 0.0;     // mean of the segment after (joint: the level just after)
  double before_stddev = 0.0;  // sample stddev (Otava mode: population, as upstream)
  double after_stddev = 0.0;
  size_t before_count = 0;  // valid runs in each segment
  size_t after_count = 0;
  double relative_change = 0.0;  // after_mean / before_mean - 1 (0 if before_mean == 0)
  double t_statistic = 0.0;      // pooled t, after minus before
  double p_value = 1.0;          // default: selection-corrected (pooled or Welch, see above);
                                 // Otava: its t-test p
  double confidence = 0.0;       // 1 - p_value
  double q_hat = 0.0;            // E-Divisive statistic of the split (Otava: at discovery;
                                 // 0 for a step found jointly with a slope, step 4b)
};

// Whole-history analysis; change points sorted by index.
absl::StatusOr<std::vector<ChangePoint>> Detect(std::span<const Point> points,
                                                const DetectorOptions& options);
// Convenience: values only (noise unknown).
absl::StatusOr<std::vector<ChangePoint>> DetectValues(std::span<const double> values,
                                                      const DetectorOptions& options);

// Incremental analysis of one growing series. Append costs O(H log H) with H <= the last two
// segments or incremental_horizon runs; in Otava mode it re-runs the full reference analysis.
class Detector {
 public:
  static absl::StatusOr<Detector> Create(const DetectorOptions& options);

  // Adds last night's point (NaN value = missing night) and updates change_points().
  void Append(Point point);
  // Replaces the history (e.g. when loaded from the database) and analyses it fully.
  void Reset(std::span<const Point> points);

  const std::vector<ChangePoint>& change_points() const { return change_points_; }
  const std::vector<Point>& points() const { return points_; }

 private:
  explicit Detector(const DetectorOptions& options) : options_(options) {}
  DetectorOptions options_;
  std::vector<Point> points_;
  std::vector<ChangePoint> change_points_;
};

// A monotone drift (slow creep) of the level: the finding of kind drift.
struct Drift {
  size_t start_index = 0;        // input index where the creep starts (continuous hinge fit)
  size_t end_index = 0;          // last valid input index of the span (the newest run)
  size_t count = 0;              // valid runs from start_index to end_index
  double start_value = 0.0;      // fitted level at start_index (Theil-Sen line)
  double end_value = 0.0;        // fitted level at end_index
  double slope = 0.0;            // Theil-Sen slope, value units per run (> 0: slower)
  double level = 0.0;            // robust level of the creep: the median of its runs
  double slope_per_30 = 0.0;     // 30 x slope / |level|: 0.03 = +3 % every 30 runs
  double relative_change = 0.0;  // (end_value - start_value) / |level|: the slope's sign
  double kendall_tau = 0.0;      // of the whole span tested
  double z = 0.0;                // Mann-Kendall z, corrected for lag-1 autocorrelation
  double p_value = 1.0;          // two-sided, from z
  double confidence = 0.0;       // 1 - p_value
};

// Tests the span `points` (the runs since the last change point, oldest first) for a
// monotone drift: Mann-Kendall's S over the valid runs (isolated outliers replaced as in
// step 2), its variance multiplied by the long-run variance inflation of the residuals from
// the Theil-Sen line (serial dependence beyond white noise, so that a random walk is not a
// trend);
// a drift needs p <= drift_max_pvalue and a minimum effect over the creep: |relative_change|
// >= min_relative_change, |end - start| >= the across-run robust sigma and >=
// min_within_noise_ratio x the median within-run stddev. The start is where a flat-then-linear
// (hinge) fit is best, and that fit must beat the best single level jump (two levels at
// any split with min_segment runs a side; both models have three parameters): a step is
// not a drift. The slope is Theil-Sen's over [start, end]. nullopt when there is no
// such drift or fewer than drift_min_runs valid runs. Indices are indices into `points`.
// Otava mode has no drift test: always nullopt.
absl::StatusOr<std::optional<Drift>> DetectDrift(std::span<const Point> points,
                                                 const DetectorOptions& options);

// What a whole-history analysis reports: a step (a change point) or a drift.
enum class FindingKind { kStep, kDrift };
std::string FindingKindName(FindingKind kind);  // "step" or "drift"

struct Finding {
  FindingKind kind = FindingKind::kStep;
  size_t index = 0;  // step: first run of the new segment; drift: start of the creep
  ChangePoint step;  // kind == kStep
  Drift drift;       // kind == kDrift
};

// Whole-history analysis with kinds: the change points of Detect as steps, and in default mode
// a drift for each segment between them (and after the last) where DetectDrift finds one;
// where it finds none and the segment clearly turns (a creep one way, then the other: no
// monotone trend over the whole), a drift for each leg DetectDrift finds one in (drift.cc,
// SpanDrifts); sorted by index.
absl::StatusOr<std::vector<Finding>> Analyze(std::span<const Point> points,
                                             const DetectorOptions& options);

// For the online gate: the creep since the last step change point of `points` (the whole
// history, oldest first) that runs to the newest run: DetectDrift's over all those runs, or,
// where they turn, over the last leg (as Analyze); indices are indices into `points`.
absl::StatusOr<std::optional<Drift>> CurrentDrift(std::span<const Point> points,
                                                  const DetectorOptions& options);

enum class GateVerdict { kNone, kSuspected, kInsufficientHistory, kMissing };
std::string GateVerdictName(GateVerdict verdict);

struct GateResult {
  GateVerdict verdict = GateVerdict::kNone;
  double value = 0.0;            // the newest point's value
  double baseline = 0.0;         // median of the baseline runs
  double baseline_sigma = 0.0;   // robust across-run sigma of the baseline
  double relative_change = 0.0;  // value / baseline - 1 (> 0: slower = regression)
  double z = 0.0;                // (value - baseline) / (sigma * sqrt(1 + 1.57 / n))
  size_t baseline_count = 0;
};

// Judges the last point of `points` against the runs before it (since their last change
// point, at most gate_window valid runs). kSuspected needs |z| >= gate_threshold,
// |relative_change| >= min_relative_change and the within-run-noise effect size.
absl::StatusOr<GateResult> GateNewest(std::span<const Point> points,
                                      const DetectorOptions& options);

}  // namespace devtime::detect
