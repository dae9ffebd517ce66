#include "services/collector/store/analysis_repository.h"

#include <exception>

#include "proto/wire/names.h"
#include "services/collector/store/job_store.h"
#include "services/collector/store/regression_store.h"
#include "services/collector/store/series.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

using analyze::SeriesKey;

// The analyzer's reads and writes on one open transaction.
class SqlAnalysisTransaction final : public analyze::AnalysisTransaction {
 public:
  explicit SqlAnalysisTransaction(pqxx::work& tx) : tx_(tx) {}

  // Re-raises the first database exception an access swallowed (for Database::Run).
  void RethrowFailure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

  absl::StatusOr<std::optional<int64_t>> AcceptedBaselineSince(const SeriesKey& series) override {
    return Guard([&] { return regression_sql::AcceptedBaselineSince(tx_, series); });
  }

  absl::StatusOr<std::vector<analyze::SeriesPoint>> LoadSeries(const SeriesKey& series,
                                                               const std::string& op,
                                                               std::optional<int64_t> since_us,
                                                               int limit) override {
    return Guard([&] {
      auto rows = tx_.exec_params(
          "SELECT sp.run_id::text, " + EpochMicros("sp.at") +
              ", sp.value, coalesce(sp.noise, 'NaN') FROM series_points sp JOIN series s USING"
              " (series_id) WHERE s.model = $1 AND s.workload = $2 AND s.instance_type = $3"
              " AND s.metric = $4 AND s.op = $5 AND sp.at >= coalesce('epoch'::timestamptz +"
              " $6::bigint * interval '1 microsecond', '-infinity')"
              " ORDER BY sp.at DESC, sp.run_id DESC LIMIT $7",
          series.model, series.workload, series.instance_type, series.metric, op, since_us, limit);
      std::vector<analyze::SeriesPoint> points;
      for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
        points.push_back({(*it)[0].as<std::string>(),
                          (*it)[1].as<int64_t>(),
                          {(*it)[2].as<double>(), (*it)[3].as<double>()}});
      }
      return points;
    });
  }

  absl::StatusOr<std::optional<analyze::LiveRegression>> Live(const SeriesKey& series) override {
    return Guard([&] { return regression_sql::OldestLive(tx_, series); });
  }

  absl::StatusOr<std::optional<analyze::LiveRegression>> LiveDrift(
      const SeriesKey& series) override {
    return Guard([&] { return regression_sql::LiveDrift(tx_, series); });
  }

  absl::Status UpdateDrift(const analyze::DriftUpdate& update) override {
    return GuardStatus([&] { return regression_sql::UpdateDrift(tx_, update); });
  }

  absl::StatusOr<analyze::RunFigures> Figures(const std::string& run_id, double total_us) override {
    auto summary = Guard([&] {
      return pqxx::binarystring(
                 tx_.exec_params1("SELECT summary FROM runs WHERE run_id = $1", run_id)[0])
          .str();
    });
    if (!summary.ok()) return summary.status();
    v1::RunSummary run;
    if (!run.ParseFromString(*summary)) {
      return absl::DataLossError("run " + run_id + ": stored summary does not parse");
    }
    return FiguresOf(run, total_us);
  }

  absl::StatusOr<std::optional<int64_t>> RequestConfirmation(const std::string& job,
                                                             const std::string& host) override {
    return Guard([&]() -> std::optional<int64_t> {
      std::optional<v1::JobSpec> spec = JobStore::FindJob(tx_, job);
      if (!spec || spec->skip_confirmation_runs()) return std::nullopt;
      return JobStore::InsertRunRequest(tx_, job, host);
    });
  }

  absl::Status Apply(const analyze::Transition& transition) override {
    return GuardStatus([&] { return regression_sql::Transition(tx_, transition); });
  }

  absl::StatusOr<int64_t> Open(const analyze::NewRegression& regression) override {
    return Guard([&] { return regression_sql::Insert(tx_, regression); });
  }

 private:
  // Runs one database access; a pqxx exception becomes INTERNAL here and is kept for
  // RethrowFailure (the transaction is unusable after it anyway).
  template <typename Access>
  absl::StatusOr<std::invoke_result_t<Access&>> Guard(Access&& access) {
    if (failure_) return absl::InternalError("the analysis transaction already failed");
    try {
      return access();
    } catch (const std::exception& e) {
      failure_ = std::current_exception();
      return absl::InternalError(e.what());
    }
  }

  // Guard for an access that answers a Status of its own: that Status, or Guard's error.
  template <typename Access>
  absl::Status GuardStatus(Access&& access) {
    absl::Status answered;
    auto ran = Guard([&] {
      answered = access();
      return true;
    });
    return ran.ok() ? answered : ran.status();
  }

  pqxx::work& tx_;
  std::exception_ptr failure_;
};

}  // namespace

absl::StatusOr<analyze::Verdict> SqlAnalysisRepository::AnalyzeLocked(const std::string& run_id,
                                                                      const Work& work) {
  return db_.Transact(
      "analyse run " + run_id, [&](pqxx::work& tx) -> absl::StatusOr<analyze::Verdict> {
        // The claim: NO KEY UPDATE excludes every other analysis of the run but not the
        // KEY SHARE locks that regressions referencing it take; SKIP LOCKED lets the other
        // workers (of any collector) move on to the next run instead of queueing here.
        auto rows = tx.exec_params(
            "SELECT job, model, workload, host, instance_type, device_kind, status,"
            " analyzed_at IS NOT NULL, started_at, environment ? 'devtime.hunt' FROM runs"
            " WHERE run_id = $1"
            " FOR NO KEY UPDATE SKIP LOCKED",
            run_id);
        if (rows.empty()) {
          if (tx.exec_params("SELECT 1 FROM runs WHERE run_id = $1", run_id).empty()) {
            return absl::NotFoundError("no run " + run_id);
          }
          return absl::AbortedError("run " + run_id + " is being analysed by another worker");
        }
        const auto& row = rows[0];
        const analyze::RunToAnalyze run{
            .run_id = run_id,
            .job = row[0].as<std::string>(),
            .host = row[3].as<std::string>(),
            .series = {.model = row[1].as<std::string>(),
                       .workload = row[2].as<std::string>(),
                       .instance_type = row[4].as<std::string>(),
                       .metric = MetricFor(wire::DeviceKindFromName(row[5].as<std::string>()))},
            .ok = row[6].as<std::string>() == "ok",
            .analyzed = row[7].as<bool>()};
        analyze::Verdict verdict = analyze::Verdict::kSkipped;
        if (row[9].as<bool>()) {
          // A culprit run (issue 25, hunt_store.h): judged by its hunt, never a point of its
          // series, so it neither opens, confirms nor resolves anything.
          tx.exec_params("DELETE FROM series_points WHERE run_id = $1", run_id);
        } else if (run.ok && !run.analyzed) {
          // One analysis at a time per series, whichever collector.
          tx.exec_params("SELECT pg_advisory_xact_lock(hashtext($1))",
                         "devtime-series/" + run.series.model + "/" + run.series.workload + "/" +
                             run.series.instance_type + "/" + run.series.metric);
          // ...and in started_at order: an older OK run of the series still unanalysed (in
          // the queue, or claimed by a worker that has not committed) goes first, so that
          // runs uploaded out of order are still judged in the order they ran.
          const bool cpu = run.series.metric == kCpuMetric;
          auto older = tx.exec_params(
              "SELECT 1 FROM runs WHERE analyzed_at IS NULL AND status = 'ok' AND model = $1"
              " AND workload = $2 AND instance_type = $3 AND (device_kind = $4) = $5"
              " AND (started_at, run_id) < ($6::timestamptz, $7::uuid) LIMIT 1",
              run.series.model, run.series.workload, run.series.instance_type,
              wire::DeviceKindName(v1::DEVICE_KIND_CPU), cpu, row[8].c_str(), run_id);
          if (!older.empty()) {
            return absl::AbortedError("run " + run_id +
                                      ": an older run of its series is analysed first");
          }
          SqlAnalysisTransaction access(tx);
          auto result = work(run, access);
          access.RethrowFailure();
          if (!result.ok()) return result.status();
          verdict = *result;
        }
        tx.exec_params(
            "UPDATE runs SET analyzed_at = now() WHERE run_id = $1 AND analyzed_at IS NULL",
            run_id);
        return verdict;
      });
}

absl::StatusOr<std::vector<std::string>> SqlAnalysisRepository::Pending(absl::Duration older_than,
                                                                        int limit) {
  return db_.Transact(
      "find runs to analyse", [&](pqxx::work& tx) -> absl::StatusOr<std::vector<std::string>> {
        std::vector<std::string> pending;
        for (const auto& row :
             tx.exec_params("SELECT run_id::text FROM runs WHERE analyzed_at IS NULL"
                            " AND received_at < now() - $1::float8 * interval '1 second'"
                            " ORDER BY started_at, run_id LIMIT $2",
                            absl::ToDoubleSeconds(older_than), limit)) {
          pending.push_back(row[0].as<std::string>());
        }
        return pending;
      });
}

}  // namespace devtime::store
