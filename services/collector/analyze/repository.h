// devtime::analyze — what the analyzer needs from the database, as a small interface, so the
// analysis is tested without PostgreSQL (tests/unit/analyze) and the SQL lives in one place
// (store/analysis_repository.h implements it).
//
// Errors: Status values (UNAVAILABLE when the database stays unreachable). Within one
// AnalysisTransaction every call sees and writes one transaction.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/collector/analyze/attribution.h"
#include "services/collector/analyze/decision.h"
#include "services/collector/analyze/regression.h"
#include "services/collector/analyze/verdict.h"

namespace devtime::analyze {

// The stored run being analysed.
struct RunToAnalyze {
  std::string run_id;
  std::string job;  // "" = an ad-hoc upload
  std::string host;
  SeriesKey series;
  bool ok = false;        // status OK: the run is a point of its series
  bool analyzed = false;  // analysed before (by this or another collector)
};

// One run's analysis: reads and writes inside the transaction that locks the run.
class AnalysisTransaction {
 public:
  virtual ~AnalysisTransaction() = default;

  // started_at (µs) of the first bad run of the newest regression of `series` resolved as
  // accepted_baseline: points before it are no longer the baseline.
  virtual absl::StatusOr<std::optional<int64_t>> AcceptedBaselineSince(const SeriesKey& series) = 0;
  // The newest `limit` points of the series of operator `op` ("" = the whole run), oldest
  // first, from `since_us` on.
  virtual absl::StatusOr<std::vector<SeriesPoint>> LoadSeries(const SeriesKey& series,
                                                              const std::string& op,
                                                              std::optional<int64_t> since_us,
                                                              int limit) = 0;
  // The oldest live (suspected, open, acknowledged) step regression of `series`.
  virtual absl::StatusOr<std::optional<LiveRegression>> Live(const SeriesKey& series) = 0;
  // The live drift regression of `series` (there is at most one).
  virtual absl::StatusOr<std::optional<LiveRegression>> LiveDrift(const SeriesKey& series) = 0;
  // One stored run's figures per step; `total_us` is its series value.
  virtual absl::StatusOr<RunFigures> Figures(const std::string& run_id, double total_us) = 0;
  // A run-now request of `job` on `host` to confirm a suspected regression; nullopt when the
  // job is unknown (ad hoc or deleted) or opts out (skip_confirmation_runs).
  virtual absl::StatusOr<std::optional<int64_t>> RequestConfirmation(const std::string& job,
                                                                     const std::string& host) = 0;
  virtual absl::Status Apply(const Transition& transition) = 0;
  virtual absl::StatusOr<int64_t> Open(const NewRegression& regression) = 0;
  // New figures for the live drift regression `update.regression_id` (its summary with them).
  virtual absl::Status UpdateDrift(const DriftUpdate& update) = 0;
};

class AnalysisRepository {
 public:
  using Work = std::function<absl::StatusOr<Verdict>(const RunToAnalyze&, AnalysisTransaction&)>;
  virtual ~AnalysisRepository() = default;

  // Locks run `run_id`, and — when it is OK and not analysed yet — its series against every
  // other collector's analysis, runs `work`, marks the run analysed and commits. A run that
  // is not OK or already analysed is marked and kSkipped without calling `work`. When `work`
  // fails nothing is written (the run stays pending). NOT_FOUND for an unknown run.
  virtual absl::StatusOr<Verdict> AnalyzeLocked(const std::string& run_id, const Work& work) = 0;

  // Runs received more than `older_than` ago that nobody analysed, oldest first (at most
  // `limit`): their collector died between the ingest commit and the analysis.
  virtual absl::StatusOr<std::vector<std::string>> Pending(absl::Duration older_than,
                                                           int limit) = 0;
};

}  // namespace devtime::analyze
