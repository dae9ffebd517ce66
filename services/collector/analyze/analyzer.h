// devtime::analyze — turns stored runs into regressions: detection on ingest, attribution,
// confirmation runs, and the detector's side of the lifecycle.
//
// For each stored OK run, in one transaction (the repository serialises analyses of one
// series across collectors): the run's whole-run series is loaded back to the last
// regression accepted as the new baseline, Decide() (decision.h) says what the run means,
// and the decision is applied. A new regression gets its attribution (attribution.h), the
// operator series that moved with it as children, and — when the run came from a job that
// allows it and options.confirmation_runs — a run-now request on the same host to confirm it.
//
// Thread-safety: safe for concurrent use (each call is its own transaction).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/collector/analyze/decision.h"
#include "services/collector/analyze/repository.h"
#include "services/collector/analyze/verdict.h"

namespace devtime::analyze {

class RegressionAnalyzer {
 public:
  // `repository` must outlive the analyzer.
  RegressionAnalyzer(AnalysisRepository& repository, AnalyzerOptions options)
      : repository_(repository), options_(std::move(options)) {}

  // Analyses one stored run (idempotent: an analysed run is skipped). Returns the verdict.
  absl::StatusOr<Verdict> Analyze(const std::string& run_id);

  // Analyses, oldest first, the runs received more than `older_than` ago that nobody
  // analysed (their collector died between commit and analysis). Returns how many.
  absl::StatusOr<int> AnalyzePending(absl::Duration older_than);

 private:
  AnalysisRepository& repository_;
  AnalyzerOptions options_;
};

}  // namespace devtime::analyze
