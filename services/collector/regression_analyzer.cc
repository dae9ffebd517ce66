#include "services/collector/regression_analyzer.h"

#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "devtime/v1/jobs.pb.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "services/collector/attribution.h"
#include "services/collector/regression_store.h"
#include "services/collector/sql_util.h"

namespace devtime::collector {
namespace {

using google::protobuf::util::TimeUtil;

struct RunRow {
  std::string run_id, job, model, workload, host, instance_type, metric, status;
  bool analyzed = false;
};

struct SeriesPoint {
  std::string run_id;
  long long at_us = 0;
  detect::Point point;
};

// Steps a run's totals are spread over, as the store computed its series points.
const char* kStepDivisor =
    "(CASE WHEN r.step_count > 0 THEN r.step_count"
    " ELSE greatest(coalesce((r.capture->>'active_steps')::int, 1), 1) END)::float8";

std::optional<RunRow> LockRun(pqxx::work& tx, const std::string& run_id) {
  auto rows = tx.exec_params(
      "SELECT job, model, workload, host, instance_type, device_kind, status,"
      " analyzed_at IS NOT NULL FROM runs WHERE run_id = $1 FOR UPDATE",
      run_id);
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  RunRow run{run_id,
             row[0].as<std::string>(),
             row[1].as<std::string>(),
             row[2].as<std::string>(),
             row[3].as<std::string>(),
             row[4].as<std::string>(),
             row[5].as<std::string>() == "cpu" ? "cpu_us_per_step" : "device_us_per_step",
             row[6].as<std::string>(),
             row[7].as<bool>()};
  return run;
}

// The newest `limit` points of one series, oldest first, from `since` (a timestamptz text).
std::vector<SeriesPoint> LoadSeries(pqxx::work& tx, const RunRow& run, const std::string& op,
                                    const std::optional<std::string>& since, int limit) {
  auto rows = tx.exec_params(
      "SELECT sp.run_id::text, " + EpochMicros("sp.at") +
          ", sp.value, coalesce(sp.noise, 'NaN') FROM series_points sp JOIN series s USING"
          " (series_id) WHERE s.model = $1 AND s.workload = $2 AND s.instance_type = $3"
          " AND s.metric = $4 AND s.op = $5 AND sp.at >= coalesce($6::timestamptz, '-infinity')"
          " ORDER BY sp.at DESC, sp.run_id DESC LIMIT $7",
      run.model, run.workload, run.instance_type, run.metric, op, since, limit);
  std::vector<SeriesPoint> points;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    points.push_back({(*it)[0].as<std::string>(),
                      (*it)[1].as<long long>(),
                      {(*it)[2].as<double>(), (*it)[3].as<double>()}});
  }
  return points;
}

std::vector<detect::Point> PointsOf(std::span<const SeriesPoint> series) {
  std::vector<detect::Point> points;
  points.reserve(series.size());
  for (const auto& p : series) points.push_back(p.point);
  return points;
}

// The newest point judged against `baseline` (and only it).
absl::StatusOr<detect::GateResult> GateAgainst(std::span<const SeriesPoint> baseline,
                                               const detect::Point& newest,
                                               const detect::DetectorOptions& options) {
  std::vector<detect::Point> points = PointsOf(baseline);
  points.push_back(newest);
  return detect::GateNewest(points, options);
}

bool Slower(const detect::GateResult& gate) {
  return gate.verdict == detect::GateVerdict::kSuspected && gate.relative_change > 0.0;
}

// The points strictly before `at_us`.
std::span<const SeriesPoint> Before(const std::vector<SeriesPoint>& points, long long at_us) {
  size_t n = 0;
  while (n < points.size() && points[n].at_us < at_us) ++n;
  return {points.data(), n};
}

std::map<std::string, std::string> StringMap(const std::string& json) {
  std::map<std::string, std::string> out;
  const nlohmann::json parsed = nlohmann::json::parse(json);  // items() only refers to it
  for (const auto& [key, value] : parsed.items()) {
    out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return out;
}

RunFigures LoadFigures(pqxx::work& tx, const std::string& run_id, const std::string& metric,
                       double total_us) {
  RunFigures figures;
  figures.total_us = total_us;
  for (const auto& row :
       tx.exec_params("SELECT s.op, sp.value FROM series_points sp JOIN series s USING (series_id)"
                      " WHERE sp.run_id = $1 AND s.metric = $2 AND s.op <> ''",
                      run_id, metric)) {
    figures.op_us[row[0].as<std::string>()] = row[1].as<double>();
  }
  for (const auto& row : tx.exec_params(std::string("SELECT o.op, o.calls / ") + kStepDivisor +
                                            " FROM op_stats o JOIN runs r USING (run_id)"
                                            " WHERE o.run_id = $1",
                                        run_id)) {
    figures.op_calls[row[0].as<std::string>()] = row[1].as<double>();
  }
  auto run = tx.exec_params1(std::string("SELECT r.layers::text, r.environment::text, ") +
                                 kStepDivisor + " FROM runs r WHERE r.run_id = $1",
                             run_id);
  const double steps = run[2].as<double>();
  const nlohmann::json layers = nlohmann::json::parse(run[0].as<std::string>());
  for (const auto& [layer, time] : layers.items()) {
    if (time.is_number()) figures.layer_us[layer] = time.get<double>() / steps;
  }
  figures.environment = StringMap(run[1].as<std::string>());
  return figures;
}

v1::RegressionSeries SeriesChild(const std::string& metric, const std::string& op,
                                 const detect::GateResult& gate) {
  v1::RegressionSeries child;
  child.set_metric(metric);
  child.set_op(op);
  child.set_before(gate.baseline);
  child.set_after(gate.value);
  child.set_relative_change(gate.relative_change);
  child.set_z(gate.z);
  child.set_baseline_runs(static_cast<uint32_t>(gate.baseline_count));
  return child;
}

// 1 - p of a one-sided normal test of z.
double ConfidenceOf(double z) { return 1.0 - 0.5 * std::erfc(z / std::sqrt(2.0)); }

class Analysis {
 public:
  Analysis(pqxx::work& tx, const RunRow& run, const AnalyzerOptions& options)
      : tx_(tx), run_(run), options_(options) {}

  absl::StatusOr<std::string> Run() {
    since_ = regression_sql::AcceptedBaselineSince(tx_, run_.model, run_.workload,
                                                   run_.instance_type, run_.metric);
    points_ = LoadSeries(tx_, run_, "", since_, options_.history_runs);
    if (points_.empty() || points_.back().run_id != run_.run_id) return std::string("skipped");
    std::vector<v1::Regression> live =
        regression_sql::Live(tx_, run_.model, run_.workload, run_.instance_type, run_.metric);
    if (!live.empty()) return Advance(live.front());
    return GateNewRun();
  }

 private:
  absl::StatusOr<std::string> Advance(const v1::Regression& regression) {
    const long long first_bad_us = TimeUtil::TimestampToMicroseconds(regression.first_bad_at());
    std::span<const SeriesPoint> baseline = Before(points_, first_bad_us);
    if (regression.state() == v1::REGRESSION_STATE_SUSPECTED) {
      return Confirm(regression, baseline);
    }
    return MaybeResolve(regression, baseline, first_bad_us);
  }

  absl::StatusOr<std::string> Confirm(const v1::Regression& regression,
                                      std::span<const SeriesPoint> baseline) {
    auto gate = GateAgainst(baseline, points_.back().point, options_.detector);
    if (!gate.ok()) return gate.status();
    const std::string which =
        regression.confirmation_requested() ? "confirmation run " : "next run ";
    if (Slower(*gate)) {
      auto status = regression_sql::Transition(
          tx_, regression.id(), v1::REGRESSION_STATE_OPEN, v1::RESOLUTION_UNSPECIFIED, "detector",
          absl::StrFormat("%s%s agrees: %+.1f %% against the baseline (z = %.1f)", which,
                          run_.run_id, 100.0 * gate->relative_change, gate->z),
          run_.run_id);
      if (!status.ok()) return status;
      return std::string("confirmed");
    }
    auto status = regression_sql::Transition(
        tx_, regression.id(), v1::REGRESSION_STATE_INVALID, v1::RESOLUTION_UNSPECIFIED, "detector",
        absl::StrFormat("%s%s is back at the baseline (%+.1f %%): not reproduced", which,
                        run_.run_id, 100.0 * gate->relative_change),
        run_.run_id);
    if (!status.ok()) return status;
    return std::string("refuted");
  }

  absl::StatusOr<std::string> MaybeResolve(const v1::Regression& regression,
                                           std::span<const SeriesPoint> baseline,
                                           long long first_bad_us) {
    const size_t after = points_.size() - Before(points_, first_bad_us + 1).size();
    const size_t needed = static_cast<size_t>(std::max(options_.resolve_runs, 1));
    if (after <= needed) return std::string("none");  // the first bad run itself never counts
    double worst = -INFINITY;
    for (size_t i = points_.size() - needed; i < points_.size(); ++i) {
      auto gate = GateAgainst(baseline, points_[i].point, options_.detector);
      if (!gate.ok()) return gate.status();
      if (Slower(*gate)) return std::string("none");
      worst = std::max(worst, gate->relative_change);
    }
    auto status = regression_sql::Transition(
        tx_, regression.id(), v1::REGRESSION_STATE_RESOLVED, v1::RESOLUTION_FIXED, "detector",
        absl::StrFormat("the last %d runs are back at the baseline (at most %+.1f %%)", needed,
                        100.0 * worst));
    if (!status.ok()) return status;
    return std::string("resolved");
  }

  absl::StatusOr<std::string> GateNewRun() {
    std::vector<detect::Point> points = PointsOf(points_);
    auto gate = detect::GateNewest(points, options_.detector);
    if (!gate.ok()) return gate.status();
    if (gate->verdict == detect::GateVerdict::kInsufficientHistory) {
      return std::string("insufficient_history");
    }
    if (!Slower(*gate) || points_.size() < 2) return std::string("none");
    Create(*gate);
    return std::string("suspected");
  }

  void Create(const detect::GateResult& gate) {
    const SeriesPoint& last_good = points_[points_.size() - 2];
    RunFigures good = LoadFigures(tx_, last_good.run_id, run_.metric, last_good.point.value);
    RunFigures bad = LoadFigures(tx_, run_.run_id, run_.metric, gate.value);
    NewRegression created;
    v1::Regression& r = created.regression;
    r.set_state(v1::REGRESSION_STATE_SUSPECTED);
    r.set_severity(SeverityFor(gate.relative_change));
    r.set_model(run_.model);
    r.set_workload(run_.workload);
    r.set_instance_type(run_.instance_type);
    r.set_job(run_.job);
    r.set_host(run_.host);
    r.set_metric(run_.metric);
    r.set_last_good_run_id(last_good.run_id);
    r.set_first_bad_run_id(run_.run_id);
    r.set_before(gate.baseline);
    r.set_after(gate.value);
    r.set_relative_change(gate.relative_change);
    r.set_z(gate.z);
    r.set_confidence(ConfidenceOf(gate.z));
    *r.mutable_attribution() = Attribute(good, bad);
    *r.add_series() = SeriesChild(run_.metric, "", gate);
    AddOperatorChildren(r);
    r.set_summary(Summarize(r));
    created.baseline_sigma_us = gate.baseline_sigma;
    created.baseline_count = static_cast<int>(gate.baseline_count);
    created.confirmation_request_id = RequestConfirmation();
    r.set_confirmation_requested(created.confirmation_request_id.has_value());
    regression_sql::Insert(
        tx_, created,
        absl::StrFormat("gate: %+.1f %% against %d baseline runs (z = %.1f)%s",
                        100.0 * gate.relative_change, gate.baseline_count, gate.z,
                        created.confirmation_request_id ? "; confirmation run requested" : ""));
  }

  // The attributed operators whose own series moved with the run become children.
  void AddOperatorChildren(v1::Regression& regression) {
    for (const auto& op : regression.attribution().ops()) {
      if (op.delta_us() <= 0.0 || op.before_us() <= 0.0) continue;  // new ops have no series
      std::vector<SeriesPoint> series =
          LoadSeries(tx_, run_, op.op(), since_, options_.history_runs);
      if (series.empty() || series.back().run_id != run_.run_id) continue;
      std::vector<detect::Point> points = PointsOf(series);
      auto gate = detect::GateNewest(points, options_.detector);
      if (gate.ok() && Slower(*gate))
        *regression.add_series() = SeriesChild(run_.metric, op.op(), *gate);
    }
  }

  // A run-now of the run's job on the same host, unless the job or the collector opts out.
  std::optional<int64_t> RequestConfirmation() {
    if (!options_.confirmation_runs || run_.job.empty()) return std::nullopt;
    auto rows = tx_.exec_params("SELECT spec FROM jobs WHERE name = $1", run_.job);
    if (rows.empty()) return std::nullopt;  // an ad-hoc or deleted job: the next run confirms
    v1::JobSpec spec;
    pqxx::binarystring bytes(rows[0][0]);
    if (!spec.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
        spec.skip_confirmation_runs()) {
      return std::nullopt;
    }
    return tx_
        .exec_params1("INSERT INTO run_requests (job, host) VALUES ($1, $2) RETURNING request_id",
                      run_.job, run_.host)[0]
        .as<int64_t>();
  }

  pqxx::work& tx_;
  const RunRow& run_;
  const AnalyzerOptions& options_;
  std::optional<std::string> since_;
  std::vector<SeriesPoint> points_;
};

}  // namespace

absl::StatusOr<std::string> RegressionAnalyzer::Analyze(const std::string& run_id) {
  std::string verdict;
  absl::Status outcome = absl::OkStatus();
  absl::Status status = store_.Run("analyse run " + run_id, [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    std::optional<RunRow> run = LockRun(tx, run_id);
    if (!run) {
      outcome = absl::NotFoundError("no run " + run_id);
      return absl::OkStatus();
    }
    if (run->analyzed || run->status != "ok") {
      verdict = "skipped";
    } else {
      // One analysis at a time per (model, workload, instance type), whichever collector.
      tx.exec_params("SELECT pg_advisory_xact_lock(hashtext($1))",
                     "devtime-series/" + run->model + "/" + run->workload + "/" +
                         run->instance_type + "/" + run->metric);
      auto result = Analysis(tx, *run, options_).Run();
      if (!result.ok()) {
        outcome = result.status();
        return absl::OkStatus();
      }
      verdict = *result;
    }
    tx.exec_params("UPDATE runs SET analyzed_at = now() WHERE run_id = $1 AND analyzed_at IS NULL",
                   run_id);
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!outcome.ok()) return outcome;
  return verdict;
}

absl::StatusOr<int> RegressionAnalyzer::AnalyzePending(absl::Duration older_than) {
  std::vector<std::string> pending;
  absl::Status status = store_.Run("find runs to analyse", [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    pending.clear();
    for (const auto& row :
         tx.exec_params("SELECT run_id::text FROM runs WHERE analyzed_at IS NULL"
                        " AND received_at < now() - $1::float8 * interval '1 second'"
                        " ORDER BY started_at, run_id LIMIT 1000",
                        absl::ToDoubleSeconds(older_than))) {
      pending.push_back(row[0].as<std::string>());
    }
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  for (const std::string& run_id : pending) {
    if (auto verdict = Analyze(run_id); !verdict.ok()) return verdict.status();
  }
  return static_cast<int>(pending.size());
}

}  // namespace devtime::collector
