#include "services/collector/analyze/analyzer.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_format.h"
#include "proto/wire/change.h"
#include "services/collector/analyze/attribution.h"

namespace devtime::analyze {
namespace {

// `series` up to and including `run_id`'s point; false when the run is not in it (older
// than the points loaded). A run whose point is not the newest (uploaded after a newer run
// of its series was judged) is judged against the points before it, as if it had arrived
// in order.
bool UpToRun(std::vector<SeriesPoint>& series, const std::string& run_id) {
  for (size_t i = series.size(); i-- > 0;) {
    if (series[i].run_id == run_id) {
      series.resize(i + 1);
      return true;
    }
  }
  return false;
}

// One run's analysis inside its transaction: load, Decide(), apply.
class RunAnalysis {
 public:
  RunAnalysis(const RunToAnalyze& run, AnalysisTransaction& tx, const AnalyzerOptions& options)
      : run_(run), tx_(tx), options_(options) {}

  absl::StatusOr<Verdict> Run() {
    auto since = tx_.AcceptedBaselineSince(run_.series);
    if (!since.ok()) return since.status();
    since_ = *since;
    auto series = tx_.LoadSeries(run_.series, "", since_, options_.history_runs);
    if (!series.ok()) return series.status();
    const bool newest = !series->empty() && series->back().run_id == run_.run_id;
    if (!newest && !UpToRun(*series, run_.run_id)) return Verdict::kSkipped;
    auto step = tx_.Live(run_.series);
    if (!step.ok()) return step.status();
    auto drift = tx_.LiveDrift(run_.series);
    if (!drift.ok()) return drift.status();
    LiveRegressions live{.step = *step, .drift = *drift};
    // A late run: gated against the points before it. It may open a step regression (when
    // the series has none live), but it never moves a live one, nor opens or updates a drift:
    // confirming, refuting, resolving and following a creep go by the runs after it.
    late_ = !newest;
    if (late_) live = {};
    auto decision = Decide(run_.run_id, *series, live, options_);
    if (!decision.ok()) return decision.status();
    if (late_ && (*step || *drift) && decision->suspected) {
      return Verdict::kNone;  // the series already has its alert; this run is part of it
    }
    if (late_ && (decision->opened_drift || decision->updated_drift)) {
      return Verdict::kNone;  // a creep is followed by the newest runs, not by a late one
    }
    if (decision->transition) {
      if (absl::Status applied = tx_.Apply(*decision->transition); !applied.ok()) return applied;
    }
    if (decision->suspected) {
      if (absl::Status opened = Open(*series, *decision->suspected); !opened.ok()) return opened;
    }
    if (decision->opened_drift) {
      if (absl::Status opened = OpenDrift(*decision->opened_drift); !opened.ok()) return opened;
    }
    if (decision->updated_drift) {
      if (absl::Status updated = tx_.UpdateDrift(*decision->updated_drift); !updated.ok()) {
        return updated;
      }
    }
    return decision->verdict;
  }

 private:
  // A drift opens straight in state open (decision.h says why), attributed between the run
  // before the creep and this run, with the operator series that drift too as children. No
  // confirmation run: one more run is no evidence for or against a creep of many.
  absl::Status OpenDrift(const DriftFigures& drift) {
    const std::string& before_run =
        drift.last_good_run_id.empty() ? drift.start_run_id : drift.last_good_run_id;
    auto r = Regression(ChangeOf(run_.series.metric, "", drift), before_run, drift.start_value,
                        drift.confidence);
    if (!r.ok()) return r.status();
    r->reason =
        absl::StrFormat("drift: %+.1f %% per 30 runs over %d runs since run %s (p = %.2g)",
                        100.0 * drift.slope_per_30, drift.runs, drift.start_run_id, drift.p_value);
    r->kind = Kind::kDrift;
    r->state = v1::REGRESSION_STATE_OPEN;
    r->drift = drift;
    if (absl::Status added = AddOperatorChanges(*r, OperatorDrift); !added.ok()) return added;
    return tx_.Open(*r).status();
  }

  absl::Status Open(const std::vector<SeriesPoint>& series, const detect::GateResult& gate) {
    const SeriesPoint& last_good = series[series.size() - 2];
    auto r = Regression(ChangeOf(run_.series.metric, "", gate), last_good.run_id,
                        last_good.point.value, ConfidenceOf(gate.z));
    if (!r.ok()) return r.status();
    r->baseline_sigma = gate.baseline_sigma;
    if (absl::Status added = AddOperatorChanges(*r); !added.ok()) return added;
    if (options_.confirmation_runs && !run_.job.empty()) {
      auto request = tx_.RequestConfirmation(run_.job, run_.host);
      if (!request.ok()) return request.status();
      r->confirmation_request_id = *request;
    }
    r->reason =
        absl::StrFormat("gate: %s against %d baseline runs (z = %.1f)%s",
                        wire::FormatFraction(gate.relative_change), gate.baseline_count, gate.z,
                        r->confirmation_request_id ? "; confirmation run requested" : "");
    return tx_.Open(*r).status();
  }

  // A new regression of the run's series whose figures are those of `whole`, its whole-run
  // change (its first child), attributed between `last_good_run_id` (whose series value is
  // `good_value`) and this run. A step and a drift differ only in what the caller adds.
  absl::StatusOr<NewRegression> Regression(SeriesChange whole, const std::string& last_good_run_id,
                                           double good_value, double confidence) {
    auto good = tx_.Figures(last_good_run_id, good_value);
    if (!good.ok()) return good.status();
    auto bad = tx_.Figures(run_.run_id, whole.after);
    if (!bad.ok()) return bad.status();
    NewRegression r{.series = run_.series,
                    .job = run_.job,
                    .host = run_.host,
                    .severity = SeverityFor(whole.relative_change),
                    .last_good_run_id = last_good_run_id,
                    .first_bad_run_id = run_.run_id,
                    .before = whole.before,
                    .after = whole.after,
                    .relative_change = whole.relative_change,
                    .z = whole.z,
                    .confidence = confidence,
                    .baseline_count = whole.baseline_runs,
                    .attribution = Attribute(*good, *bad)};
    r.series_changes.push_back(std::move(whole));
    return r;
  }

  // The attributed operators whose own series moved with the run (`moved`: OperatorChange
  // for a step, OperatorDrift for a drift) become children.
  using Moved = std::optional<SeriesChange> (*)(const std::string&, const std::string&,
                                                const std::string&, std::span<const SeriesPoint>,
                                                const AnalyzerOptions&);
  absl::Status AddOperatorChanges(NewRegression& regression, Moved moved = OperatorChange) {
    for (const OpDelta& op : regression.attribution.ops) {
      if (op.delta_us <= 0.0 || op.before_us <= 0.0) continue;  // new ops have no series
      auto series = tx_.LoadSeries(run_.series, op.op, since_, options_.history_runs);
      if (!series.ok()) return series.status();
      if (late_ && !UpToRun(*series, run_.run_id)) continue;
      if (auto change = moved(run_.run_id, run_.series.metric, op.op, *series, options_)) {
        regression.series_changes.push_back(std::move(*change));
      }
    }
    return absl::OkStatus();
  }

  const RunToAnalyze& run_;
  AnalysisTransaction& tx_;
  const AnalyzerOptions& options_;
  std::optional<int64_t> since_;
  bool late_ = false;  // the run is not the newest point of its series
};

}  // namespace

absl::StatusOr<Verdict> RegressionAnalyzer::Analyze(const std::string& run_id) {
  return repository_.AnalyzeLocked(run_id, [&](const RunToAnalyze& run, AnalysisTransaction& tx) {
    return RunAnalysis(run, tx, options_).Run();
  });
}

absl::StatusOr<int> RegressionAnalyzer::AnalyzePending(absl::Duration older_than) {
  auto pending = repository_.Pending(older_than, 1000);
  if (!pending.ok()) return pending.status();
  int analysed = 0;
  for (const std::string& run_id : *pending) {
    auto verdict = Analyze(run_id);
    if (absl::IsAborted(verdict.status())) continue;  // another worker's, or not its turn yet
    if (!verdict.ok()) return verdict.status();
    ++analysed;
  }
  return analysed;
}

// ---- the queue workers ------------------------------------------------------------------

RegressionAnalyzer::~RegressionAnalyzer() { StopWorkers(); }

void RegressionAnalyzer::StartWorkers(WorkerOptions options) {
  std::lock_guard lock(mu_);
  if (!workers_.empty()) return;
  stopping_ = false;
  worker_options_ = std::move(options);
  for (int i = 0; i < std::max(worker_options_.workers, 0); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void RegressionAnalyzer::StopWorkers() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    workers.swap(workers_);
  }
  wake_.notify_all();
  for (auto& worker : workers) worker.join();
}

void RegressionAnalyzer::Wake() {
  {
    std::lock_guard lock(mu_);
    ++wakeups_;
  }
  wake_.notify_all();
}

// One worker: claims pending runs, oldest first, until the queue holds none it may take,
// then sleeps until a commit wakes it or the poll interval passes (runs stored by other
// collectors, or left by one that died).
void RegressionAnalyzer::Work() {
  uint64_t seen = 0;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      seen = wakeups_;
    }
    bool progressed = false;
    auto pending = repository_.Pending(absl::ZeroDuration(), worker_options_.batch);
    if (pending.ok()) {
      for (const std::string& run_id : *pending) {
        auto start = std::chrono::steady_clock::now();
        auto verdict = Analyze(run_id);
        if (absl::IsAborted(verdict.status())) continue;
        progressed = progressed || verdict.ok();
        if (worker_options_.on_verdict) {
          worker_options_.on_verdict(
              run_id, verdict,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        std::lock_guard lock(mu_);
        if (stopping_) return;
      }
    } else if (worker_options_.on_verdict) {
      worker_options_.on_verdict("", pending.status(), 0.0);
    }
    std::unique_lock lock(mu_);
    if (progressed) continue;  // there may be more behind the batch
    wake_.wait_for(lock, absl::ToChronoMilliseconds(worker_options_.poll),
                   [&] { return stopping_ || wakeups_ != seen; });
  }
}

}  // namespace devtime::analyze
