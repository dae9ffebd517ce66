// devtime::analyze — the analyzer's decision about one stored run, as a pure function.
//
// Input: the run's whole-run series (oldest first, back to the last regression accepted as
// the new baseline, the run itself last when it is the newest point) and the series' live
// regression, if any. Output: a Verdict plus what to do:
//  - a live suspected regression: the run is gated against the regression's baseline (the
//    points before its first bad run); still slower -> open (confirmed, the run is linked),
//    back at the baseline -> invalid ("not reproduced");
//  - a live open / acknowledged regression: when the last `resolve_runs` runs are all back at
//    the baseline -> resolved (fixed), by the detector;
//  - no live step regression: detect::GateNewest judges the run; a slowdown it suspects opens
//    a new step regression (Decision::suspected carries the gate) unless the series is
//    drifting (detect::CurrentDrift) and the run lies on the drift's line (within
//    gate_threshold robust sigmas of its residuals): a creep crosses the gate too, and is
//    judged as the drift below instead of as a staircase of steps. Faster runs open nothing;
//  - no live step and no step suspected: the drift. A series is drifting when
//    detect::CurrentDrift finds a slower creep (slope > 0, the detector's p and minimum effect)
//    over its runs since the last step, and the last `drift_recent_runs` runs still creep
//    (DetectDrift at the laxer drift_continue_pvalue: strict to open, lax to keep, so that a
//    drift near the threshold does not flap). Without a live drift that opens ONE drift
//    regression, straight in state open: its evidence is already the many runs of the creep
//    (at least drift_min_runs), which one confirmation run could neither add to nor refute.
//    With one, each run that still creeps updates its figures (Decision::updated_drift); when
//    the last `resolve_runs` recent spans all no longer creep the series is flat again and the
//    drift resolves (fixed). While a step regression is live the drift is left as it is;
//  - a run that is not the newest point of its series (a late upload) is skipped.
// Nothing here reads a database: analyzer.h loads the inputs and applies the decision.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/collector/analyze/regression.h"
#include "services/collector/analyze/verdict.h"
#include "services/collector/detect/detect.h"

namespace devtime::analyze {

struct AnalyzerOptions {
  detect::DetectorOptions detector;     // gate and effect-size thresholds
  int history_runs = 200;               // newest points loaded per series
  int resolve_runs = 2;                 // consecutive runs back at the baseline that resolve
  bool confirmation_runs = true;        // false: never request run-now confirmation runs
  int drift_recent_runs = 30;           // the recent span a drift must still creep over
  double drift_continue_pvalue = 0.05;  // the recent span's Mann-Kendall p (see above)
};

// One point of a series: the run it came from and when that run started.
struct SeriesPoint {
  std::string run_id;
  int64_t at_us = 0;  // the run's started_at, µs since the epoch
  detect::Point point;
};

// A series' live regressions: at most one of each kind.
struct LiveRegressions {
  std::optional<LiveRegression> step;
  std::optional<LiveRegression> drift;
};

// Verdicts of drifts: opening one is kSuspected (a new regression), resolving it kResolved,
// an update kNone.
struct Decision {
  Verdict verdict = Verdict::kNone;
  std::optional<Transition> transition;         // move the live regression it names
  std::optional<detect::GateResult> suspected;  // open a new step regression with this gate
  std::optional<DriftFigures> opened_drift;     // open a drift regression with these figures
  std::optional<DriftUpdate> updated_drift;     // the live drift continues
};

// Decides what `run_id` means for its series. `series` must end with the run's own point
// when the run is the newest of its series.
absl::StatusOr<Decision> Decide(const std::string& run_id, std::span<const SeriesPoint> series,
                                const LiveRegressions& live, const AnalyzerOptions& options);
// The same for a series without a live drift; `live` is its live step regression.
absl::StatusOr<Decision> Decide(const std::string& run_id, std::span<const SeriesPoint> series,
                                const std::optional<LiveRegression>& live,
                                const AnalyzerOptions& options);

// The child of a new regression for one operator's series, when that series moved with the
// run (its newest point, which must be the run's, is suspected slower).
std::optional<SeriesChange> OperatorChange(const std::string& run_id, const std::string& metric,
                                           const std::string& op,
                                           std::span<const SeriesPoint> op_series,
                                           const AnalyzerOptions& options);

// The child of a new drift regression for one operator's series, when that series drifts
// too (detect::CurrentDrift, slower) up to the run, which must be its newest point.
std::optional<SeriesChange> OperatorDrift(const std::string& run_id, const std::string& metric,
                                          const std::string& op,
                                          std::span<const SeriesPoint> op_series,
                                          const AnalyzerOptions& options);

// The series change a drift measured: fitted start -> newest level, Mann-Kendall z.
SeriesChange ChangeOf(const std::string& metric, const std::string& op, const DriftFigures& drift);

// The series change the gate measured (a regression's whole-run child: op "").
SeriesChange ChangeOf(const std::string& metric, const std::string& op,
                      const detect::GateResult& gate);

// 1 - p of a one-sided normal test of z.
double ConfidenceOf(double z);

}  // namespace devtime::analyze
