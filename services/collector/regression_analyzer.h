// devtime::collector — turns stored runs into regressions: detection on ingest, attribution,
// confirmation runs, and the detector's side of the lifecycle.
//
// For each stored OK run, in one transaction (serialised per model/workload/instance type by
// an advisory lock, so several collectors on one database never double-create):
//  1. the run's whole-run series (device or CPU time per step) is loaded, back to the last
//     regression accepted as the new baseline; a run that is not the newest point of its
//     series (a late upload) is only marked analysed;
//  2. a live regression of the series is advanced first:
//     - suspected: the run is gated against the regression's baseline (the runs before its
//       first bad run); still slower -> open (confirmed; the run is linked), back at the
//       baseline -> invalid ("not reproduced");
//     - open / acknowledged: when the last `resolve_runs` runs are all back at the baseline
//       -> resolved (fixed), by the detector;
//  3. otherwise detect::GateNewest judges the run; a slowdown it suspects becomes a new
//     regression (state suspected) with its attribution (attribution.h), the operator series
//     that moved with it as children, and — when the run came from a job that allows it — a
//     run-now request on the same host to confirm it.
// Faster runs are not regressions and open nothing.
//
// Verdicts (for metrics and logs): none, suspected, confirmed, refuted, resolved,
// insufficient_history, skipped (not OK, not the newest, or already analysed).
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/collector/detect/detect.h"
#include "services/collector/store.h"

namespace devtime::collector {

struct AnalyzerOptions {
  detect::DetectorOptions detector;  // gate and effect-size thresholds
  int history_runs = 200;            // newest points loaded per series
  int resolve_runs = 2;              // consecutive runs back at the baseline that resolve
  bool confirmation_runs = true;     // false: never request run-now confirmation runs
};

class RegressionAnalyzer {
 public:
  RegressionAnalyzer(Store& store, AnalyzerOptions options)
      : store_(store), options_(std::move(options)) {}

  // Analyses one stored run (idempotent: an analysed run is skipped). Returns the verdict.
  absl::StatusOr<std::string> Analyze(const std::string& run_id);

  // Analyses, oldest first, the runs received more than `older_than` ago that nobody
  // analysed (their collector died between commit and analysis). Returns how many.
  absl::StatusOr<int> AnalyzePending(absl::Duration older_than);

 private:
  Store& store_;
  AnalyzerOptions options_;
};

}  // namespace devtime::collector
