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

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/collector/analyze/decision.h"
#include "services/collector/analyze/repository.h"
#include "services/collector/analyze/verdict.h"

namespace devtime::analyze {

// The analysis queue's workers: the queue is the stored runs not analysed yet (durable: a
// collector that dies leaves them for the others), claimed oldest first.
struct WorkerOptions {
  int workers = 2;
  absl::Duration poll = absl::Seconds(5);  // also without Wake(): other collectors' runs
  int batch = 64;                          // pending runs read per pass
  // Called after each analysis a worker made (run_id "" with the error when the queue could
  // not be read); from the worker's thread.
  std::function<void(const std::string& run_id, const absl::StatusOr<Verdict>&, double seconds)>
      on_verdict;
};

class RegressionAnalyzer {
 public:
  // `repository` must outlive the analyzer.
  RegressionAnalyzer(AnalysisRepository& repository, AnalyzerOptions options)
      : repository_(repository), options_(std::move(options)) {}
  ~RegressionAnalyzer();  // stops the workers
  RegressionAnalyzer(const RegressionAnalyzer&) = delete;
  RegressionAnalyzer& operator=(const RegressionAnalyzer&) = delete;

  // Analyses one stored run (idempotent: an analysed run is skipped). Returns the verdict.
  // A run that is not the newest point of its series (uploaded late) is judged against the
  // points before it: it may open a regression, never moves a live one. ABORTED when another
  // worker holds the run, or an older run of its series is not analysed yet: try it later.
  absl::StatusOr<Verdict> Analyze(const std::string& run_id);

  // Analyses, oldest first, the runs received more than `older_than` ago that nobody
  // analysed (their collector died between commit and analysis). Returns how many.
  absl::StatusOr<int> AnalyzePending(absl::Duration older_than);

  // Starts `options.workers` threads working the queue; Wake() after a commit makes them
  // look at once. StopWorkers() joins them (also done by the destructor).
  void StartWorkers(WorkerOptions options);
  void StopWorkers();
  void Wake();

 private:
  void Work();

  AnalysisRepository& repository_;
  AnalyzerOptions options_;

  std::mutex mu_;
  std::condition_variable wake_;
  WorkerOptions worker_options_;      // set before the workers start
  std::vector<std::thread> workers_;  // guarded by mu_
  bool stopping_ = false;             // guarded by mu_
  uint64_t wakeups_ = 0;              // guarded by mu_
};

}  // namespace devtime::analyze
