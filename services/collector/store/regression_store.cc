#include "services/collector/store/regression_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "proto/wire/trace_links.h"
#include "services/collector/analyze/lifecycle.h"
#include "services/collector/store/regression_codec.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

using wire::IsFiring;
using wire::RegressionStateName;

// Undelivered events older than this are given up: stale news, and a webhook configured long
// after regressions were recorded should not receive their whole backlog.
constexpr absl::Duration kEventMaxAge = absl::Hours(24 * 7);

// pg_try_advisory_xact_lock key of the notification pass ("devtime-notify").
constexpr long long kNotifierLockKey = 0x6e6f74696679;

// The artifacts of the regression's `which` ("last_good", "first_bad") run, read from the
// run when the regression is read ("[]" once the run is gone).
std::string RunArtifacts(const std::string& which) {
  return "coalesce((SELECT artifacts::text FROM runs WHERE runs.run_id = regressions." + which +
         "_run_id), '[]') AS " + which + "_artifacts";
}

const std::string kColumns =
    "regression_id, state, resolution, severity, model, workload, instance_type, job, host,"
    // A latency regression (kind 'latency', migration 12) has no runs: "".
    " metric, coalesce(last_good_run_id::text, ''), coalesce(first_bad_run_id::text, ''),"
    " coalesce(confirmation_run_id::text, ''), confirmation_request_id IS NOT NULL, before_us,"
    " after_us, relative_change, z, confidence, series::text, attribution::text, summary, " +
    EpochMicros("created_at") + ", " + EpochMicros("updated_at") + ", " +
    EpochMicros("first_bad_at") + ", " + EpochMicros("fired_at") + ", " + EpochMicros("ended_at") +
    ", kind, coalesce(drift::text, ''), " + RunArtifacts("last_good") + ", " +
    RunArtifacts("first_bad") +
    // Issue 25: the culprit hunt (hunt_store.h), read with the regression wherever it is read.
    ", coalesce((SELECT h.hunt::text FROM hunts h WHERE h.regression_id ="
    " regressions.regression_id AND h.state <> 'none'), '') AS hunt,"
    // Issue 24: where a latency regression sits (a v1::LatencyWindow).
    " coalesce(latency::text, '') AS latency";

const std::string kSeriesIs = "model = $1 AND workload = $2 AND instance_type = $3 AND metric = $4";

std::string SeriesJson(const v1::Regression& regression) {
  std::string json = "[";
  for (int i = 0; i < regression.series_size(); ++i) {
    absl::StrAppend(&json, i ? "," : "", JsonForSql(regression.series(i)));
  }
  return json + "]";
}

// The row's jsonb columns were written by this file and run_store.cc from the same messages,
// so a parse failure means a hand-edited row: DATA_LOSS naming it rather than a silent drop.
// Each element of the array `json` is parsed into add() (a repeated field's Add).
template <typename Add>
absl::Status ParseArray(const std::string& json, const std::string& what, Add add) {
  const auto parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return absl::DataLossError(what + ": not a JSON array");
  for (const auto& element : parsed) {
    absl::Status status = wire::ParseJson(element.dump(), what, add());
    if (!status.ok()) return absl::DataLossError(status.message());
  }
  return absl::OkStatus();
}

// The trace files (proto/wire/trace_links.h) among a run's stored artifacts.
absl::Status ParseTraces(const std::string& json, const std::string& what,
                         google::protobuf::RepeatedPtrField<v1::Artifact>* traces) {
  google::protobuf::RepeatedPtrField<v1::Artifact> artifacts;
  absl::Status status = ParseArray(json, what, [&] { return artifacts.Add(); });
  if (status.ok()) *traces = wire::TraceFiles(artifacts);
  return status;
}

absl::StatusOr<v1::Regression> FromRow(const pqxx::row& row) {
  v1::Regression r;
  r.set_id(row[0].as<int64_t>());
  r.set_state(wire::RegressionStateFromName(row[1].as<std::string>()));
  r.set_resolution(wire::ResolutionFromName(row[2].as<std::string>()));
  r.set_severity(row[3].as<std::string>());
  r.set_model(row[4].as<std::string>());
  r.set_workload(row[5].as<std::string>());
  r.set_instance_type(row[6].as<std::string>());
  r.set_job(row[7].as<std::string>());
  r.set_host(row[8].as<std::string>());
  r.set_metric(row[9].as<std::string>());
  r.set_last_good_run_id(row[10].as<std::string>());
  r.set_first_bad_run_id(row[11].as<std::string>());
  r.set_confirmation_run_id(row[12].as<std::string>());
  r.set_confirmation_requested(row[13].as<bool>());
  r.set_before(row[14].as<double>());
  r.set_after(row[15].as<double>());
  r.set_relative_change(row[16].as<double>());
  r.set_z(row[17].as<double>());
  r.set_confidence(row[18].as<double>());
  const std::string what = "regression " + std::to_string(r.id());
  if (absl::Status s =
          ParseArray(row[19].as<std::string>(), what + " series", [&] { return r.add_series(); });
      !s.ok()) {
    return s;
  }
  absl::Status status =
      wire::ParseJson(row[20].as<std::string>(), what + " attribution", r.mutable_attribution());
  if (!status.ok()) return absl::DataLossError(status.message());
  r.set_summary(row[21].as<std::string>());
  *r.mutable_created_at() = FromMicros(row[22].as<long long>());
  *r.mutable_updated_at() = FromMicros(row[23].as<long long>());
  *r.mutable_first_bad_at() = FromMicros(row[24].as<long long>());
  if (!row[25].is_null()) *r.mutable_fired_at() = FromMicros(row[25].as<long long>());
  if (!row[26].is_null()) *r.mutable_ended_at() = FromMicros(row[26].as<long long>());
  r.set_kind(row[27].as<std::string>());
  if (const std::string drift = row[28].as<std::string>(); !drift.empty()) {
    status = wire::ParseJson(drift, what + " drift", r.mutable_drift());
    if (!status.ok()) return absl::DataLossError(status.message());
  }
  status = ParseTraces(row[29].as<std::string>(), what + " last good run's artifacts",
                       r.mutable_last_good_traces());
  if (status.ok()) {
    status = ParseTraces(row[30].as<std::string>(), what + " first bad run's artifacts",
                         r.mutable_first_bad_traces());
  }
  if (const std::string hunt = row[31].as<std::string>(); status.ok() && !hunt.empty()) {
    status = wire::ParseJson(hunt, what + " hunt", r.mutable_hunt());
    if (!status.ok()) status = absl::DataLossError(status.message());
  }
  if (const std::string latency = row[32].as<std::string>(); status.ok() && !latency.empty()) {
    status = wire::ParseJson(latency, what + " latency window", r.mutable_latency());
    if (!status.ok()) status = absl::DataLossError(status.message());
  }
  if (!status.ok()) return status;
  return r;
}

absl::StatusOr<std::vector<v1::Regression>> FromResult(const pqxx::result& rows) {
  std::vector<v1::Regression> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    auto regression = FromRow(row);
    if (!regression.ok()) return regression.status();
    out.push_back(std::move(*regression));
  }
  return out;
}

// The regressions `where_and_order` (the SQL after FROM regressions, with $n parameters)
// selects, in one transaction named `what`.
template <typename... Params>
absl::StatusOr<std::vector<v1::Regression>> Select(Database& db, const std::string& what,
                                                   const std::string& where_and_order,
                                                   const Params&... params) {
  return db.Transact(what, [&](pqxx::work& tx) {
    return FromResult(
        tx.exec_params("SELECT " + kColumns + " FROM regressions" + where_and_order, params...));
  });
}

// '{suspected,open}' for `= ANY($n::text[])`; state names are fixed words.
std::string StateArray(const std::vector<v1::RegressionState>& states) {
  std::string array = "{";
  for (size_t i = 0; i < states.size(); ++i) {
    absl::StrAppend(&array, i ? "," : "", RegressionStateName(states[i]));
  }
  return array + "}";
}

const std::vector<v1::RegressionState> kLiveStates = {
    v1::REGRESSION_STATE_SUSPECTED, v1::REGRESSION_STATE_OPEN, v1::REGRESSION_STATE_ACKNOWLEDGED};

void AddTransitions(pqxx::work& tx, v1::Regression& regression) {
  auto rows = tx.exec_params(
      "SELECT from_state, to_state, actor, reason, " + EpochMicros("at") +
          " FROM regression_transitions WHERE regression_id = $1 ORDER BY at, transition_id",
      regression.id());
  for (const auto& row : rows) {
    auto* t = regression.add_transitions();
    t->set_from(wire::RegressionStateFromName(row[0].as<std::string>()));
    t->set_to(wire::RegressionStateFromName(row[1].as<std::string>()));
    t->set_actor(row[2].as<std::string>());
    t->set_reason(row[3].as<std::string>());
    *t->mutable_at() = FromMicros(row[4].as<long long>());
  }
}

}  // namespace

namespace regression_sql {

int64_t Insert(pqxx::work& tx, const analyze::NewRegression& created) {
  const v1::Regression r = ToProto(created);
  const bool firing = IsFiring(r.state());
  std::optional<std::string> drift;
  std::optional<long long> drift_end_us;
  if (r.has_drift()) {
    drift = JsonForSql(r.drift());
    drift_end_us = created.drift->end_at_us;
  }
  int64_t id =
      tx.exec_params1(
            "INSERT INTO regressions (state, severity, model, workload, instance_type, job, host,"
            " metric, last_good_run_id, first_bad_run_id, first_bad_at, confirmation_run_id,"
            " confirmation_request_id, before_us, baseline_sigma_us, baseline_count, after_us,"
            " relative_change, z, confidence, series, attribution, summary, kind, drift,"
            " drift_end_at, fired_at)"
            " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, started_at, NULL, $11, $12, $13,"
            " $14, $15, $16, $17, $18, $19::jsonb, $20::jsonb, $21, $22, $23::jsonb,"
            " 'epoch'::timestamptz + $24::bigint * interval '1 microsecond',"
            " CASE WHEN $25 THEN now() END FROM runs WHERE run_id = $10"
            " RETURNING regression_id",
            RegressionStateName(r.state()), r.severity(), r.model(), r.workload(),
            r.instance_type(), r.job(), r.host(), r.metric(), r.last_good_run_id(),
            r.first_bad_run_id(), created.confirmation_request_id, r.before(),
            created.baseline_sigma, created.baseline_count, r.after(), r.relative_change(), r.z(),
            r.confidence(), SeriesJson(r), JsonForSql(r.attribution()), r.summary(), r.kind(),
            drift, drift_end_us, firing)[0]
          .as<int64_t>();
  tx.exec_params(
      "INSERT INTO regression_transitions (regression_id, to_state, actor, reason)"
      " VALUES ($1, $2, 'detector', $3)",
      id, RegressionStateName(r.state()), created.reason);
  // A regression created firing (a drift) is news at once, like one that enters open.
  if (auto event = analyze::EventFor(v1::REGRESSION_STATE_UNSPECIFIED, r.state())) {
    tx.exec_params("INSERT INTO regression_events (regression_id, kind) VALUES ($1, $2)", id,
                   analyze::EventName(*event));
  }
  return id;
}

std::optional<int64_t> InsertLatency(pqxx::work& tx, const v1::Regression& r,
                                     const std::string& reason) {
  auto rows = tx.exec_params(
      "INSERT INTO regressions (state, severity, model, workload, instance_type, job, host,"
      " metric, last_good_run_id, first_bad_run_id, first_bad_at, before_us, baseline_sigma_us,"
      " baseline_count, after_us, relative_change, z, confidence, series, attribution, summary,"
      " kind, latency, fired_at) VALUES ('open', $1, $2, $3, $4, '', '', $5, NULL, NULL,"
      " to_timestamp($6::float8), $7, 0, $8, $9, $10, 0, $11, $12::jsonb, $13::jsonb, $14,"
      " 'latency', $15::jsonb, now())"
      " ON CONFLICT (model, workload, instance_type, first_bad_at) WHERE kind = 'latency'"
      " DO NOTHING RETURNING regression_id",
      r.severity(), r.model(), r.workload(), r.instance_type(), r.metric(),
      static_cast<double>(r.first_bad_at().seconds()), r.before(),
      r.series_size() > 0 ? r.series(0).baseline_runs() : 0u, r.after(), r.relative_change(),
      r.confidence(), SeriesJson(r), JsonForSql(r.attribution()), r.summary(),
      JsonForSql(r.latency()));
  if (rows.empty()) return std::nullopt;
  const int64_t id = rows[0][0].as<int64_t>();
  tx.exec_params(
      "INSERT INTO regression_transitions (regression_id, to_state, actor, reason)"
      " VALUES ($1, 'open', 'detector', $2)",
      id, reason);
  if (auto event = analyze::EventFor(v1::REGRESSION_STATE_UNSPECIFIED, v1::REGRESSION_STATE_OPEN)) {
    tx.exec_params("INSERT INTO regression_events (regression_id, kind) VALUES ($1, $2)", id,
                   analyze::EventName(*event));
  }
  return id;
}

absl::Status UpdateDrift(pqxx::work& tx, const analyze::DriftUpdate& update) {
  const int64_t id = update.regression_id;
  auto rows = tx.exec_params(
      "SELECT " + kColumns + " FROM regressions WHERE regression_id = $1 FOR UPDATE", id);
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("no regression ", id));
  auto found = FromRow(rows[0]);
  if (!found.ok()) return found.status();
  const bool live =
      std::find(kLiveStates.begin(), kLiveStates.end(), found->state()) != kLiveStates.end();
  if (found->kind() != "drift" || !live) {
    return absl::FailedPreconditionError(
        absl::StrCat("regression ", id, " is not a live drift: its figures stay"));
  }
  SetDriftFigures(update.figures, *found);
  tx.exec_params(
      "UPDATE regressions SET before_us = $2, after_us = $3, relative_change = $4, z = $5,"
      " confidence = $6, series = $7::jsonb, drift = $8::jsonb, summary = $9,"
      " baseline_count = $10, drift_end_at = 'epoch'::timestamptz + $11::bigint * interval"
      " '1 microsecond', updated_at = now() WHERE regression_id = $1",
      id, found->before(), found->after(), found->relative_change(), found->z(),
      found->confidence(), SeriesJson(*found), JsonForSql(found->drift()), found->summary(),
      update.figures.runs, static_cast<long long>(update.figures.end_at_us));
  return absl::OkStatus();
}

absl::Status Transition(pqxx::work& tx, const analyze::Transition& t) {
  const int64_t id = t.regression_id;
  auto rows =
      tx.exec_params("SELECT state FROM regressions WHERE regression_id = $1 FOR UPDATE", id);
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("no regression ", id));
  v1::RegressionState from = wire::RegressionStateFromName(rows[0][0].as<std::string>());
  if (absl::Status status = analyze::CheckTransition(from, t.to, t.resolution); !status.ok()) {
    return status;
  }
  std::optional<std::string> confirmation;
  if (!t.confirmation_run_id.empty()) confirmation = t.confirmation_run_id;
  tx.exec_params(
      "UPDATE regressions SET state = $2, resolution = $3, updated_at = now(),"
      " confirmation_run_id = coalesce($4::uuid, confirmation_run_id),"
      " fired_at = CASE WHEN $5 THEN now() ELSE fired_at END,"
      " ended_at = CASE WHEN $6 THEN now() ELSE ended_at END"
      " WHERE regression_id = $1",
      id, RegressionStateName(t.to), wire::ResolutionName(t.resolution), confirmation,
      !IsFiring(from) && IsFiring(t.to), IsFiring(from) && !IsFiring(t.to));
  tx.exec_params(
      "INSERT INTO regression_transitions (regression_id, from_state, to_state, actor, reason)"
      " VALUES ($1, $2, $3, $4, $5)",
      id, RegressionStateName(from), RegressionStateName(t.to), t.actor, t.reason);
  if (auto event = analyze::EventFor(from, t.to)) {
    tx.exec_params("INSERT INTO regression_events (regression_id, kind) VALUES ($1, $2)", id,
                   analyze::EventName(*event));
  }
  return absl::OkStatus();
}

namespace {

// The oldest live regression of the series of `kind`.
std::optional<analyze::LiveRegression> OldestLiveOf(pqxx::work& tx,
                                                    const analyze::SeriesKey& series,
                                                    analyze::Kind kind) {
  auto rows = tx.exec_params(
      "SELECT regression_id, state, " + EpochMicros("first_bad_at") +
          ", confirmation_request_id IS NOT NULL FROM regressions WHERE " + kSeriesIs +
          " AND state = ANY($5::text[]) AND kind = $6 ORDER BY first_bad_at LIMIT 1",
      series.model, series.workload, series.instance_type, series.metric, StateArray(kLiveStates),
      std::string(analyze::KindName(kind)));
  if (rows.empty()) return std::nullopt;
  return analyze::LiveRegression{
      .id = rows[0][0].as<int64_t>(),
      .state = wire::RegressionStateFromName(rows[0][1].as<std::string>()),
      .first_bad_at_us = rows[0][2].as<int64_t>(),
      .confirmation_requested = rows[0][3].as<bool>()};
}

}  // namespace

std::optional<analyze::LiveRegression> OldestLive(pqxx::work& tx,
                                                  const analyze::SeriesKey& series) {
  return OldestLiveOf(tx, series, analyze::Kind::kStep);
}

std::optional<analyze::LiveRegression> LiveDrift(pqxx::work& tx, const analyze::SeriesKey& series) {
  return OldestLiveOf(tx, series, analyze::Kind::kDrift);
}

std::optional<int64_t> AcceptedBaselineSince(pqxx::work& tx, const analyze::SeriesKey& series) {
  // An accepted drift's new level is the one its newest run reached.
  auto rows = tx.exec_params("SELECT " + EpochMicros("coalesce(drift_end_at, first_bad_at)") +
                                 " FROM regressions WHERE " + kSeriesIs +
                                 " AND resolution = 'accepted_baseline'"
                                 " ORDER BY coalesce(drift_end_at, first_bad_at) DESC LIMIT 1",
                             series.model, series.workload, series.instance_type, series.metric);
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<int64_t>();
}

}  // namespace regression_sql

absl::StatusOr<std::vector<v1::Regression>> RegressionStore::List(const RegressionFilter& filter) {
  const std::vector<v1::RegressionState>& states =
      filter.states.empty() ? kLiveStates : filter.states;
  const unsigned limit = filter.limit == 0 ? 100 : filter.limit;
  std::optional<std::string> after_time;
  if (filter.after) after_time = TimestampText(FromMicros(filter.after->first));
  const int64_t after_id = filter.after ? filter.after->second : 0;
  return Select(db_, "list regressions",
                " WHERE state = ANY($1::text[]) AND ($2 = '' OR model = $2)"
                " AND ($3 = '' OR workload = $3)"
                " AND ($5::timestamptz IS NULL OR (first_bad_at, regression_id) <"
                " ($5::timestamptz, $6)) ORDER BY first_bad_at DESC, regression_id DESC LIMIT $4",
                StateArray(states), filter.model, filter.workload, limit, after_time, after_id);
}

absl::StatusOr<v1::Regression> RegressionStore::Get(int64_t id) {
  return db_.Transact("get regression", [&](pqxx::work& tx) -> absl::StatusOr<v1::Regression> {
    auto rows =
        tx.exec_params("SELECT " + kColumns + " FROM regressions WHERE regression_id = $1", id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("no regression ", id));
    auto found = FromRow(rows[0]);
    if (found.ok()) AddTransitions(tx, *found);
    return found;
  });
}

absl::StatusOr<v1::Regression> RegressionStore::Transition(const analyze::Transition& transition) {
  if (transition.actor.empty()) return absl::InvalidArgumentError("actor: required (who)");
  if (transition.to != v1::REGRESSION_STATE_ACKNOWLEDGED &&
      transition.to != v1::REGRESSION_STATE_RESOLVED &&
      transition.to != v1::REGRESSION_STATE_INVALID) {
    return absl::InvalidArgumentError("to: must be acknowledged, resolved or invalid");
  }
  absl::Status moved = db_.Transact("triage regression", [&](pqxx::work& tx) {
    return regression_sql::Transition(tx, transition);
  });
  if (!moved.ok()) return moved;
  return Get(transition.regression_id);
}

absl::StatusOr<bool> RegressionStore::AsOnlyNotifier(const std::function<absl::Status()>& pass) {
  bool ran = false;
  absl::Status outcome = absl::OkStatus();
  absl::Status status = db_.Run("notification pass", [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    ran = tx.exec_params1("SELECT pg_try_advisory_xact_lock($1)", kNotifierLockKey)[0].as<bool>();
    if (ran) outcome = pass();
    tx.commit();  // releases the lock
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!outcome.ok()) return outcome;
  return ran;
}

absl::StatusOr<std::vector<v1::Regression>> RegressionStore::AlertsToPush(absl::Time ended_since) {
  return Select(db_, "list alerts to push",
                " WHERE state IN ('open', 'acknowledged')"
                " OR (fired_at IS NOT NULL AND ended_at >= to_timestamp($1::float8 / 1e6))"
                " ORDER BY regression_id",
                static_cast<double>(absl::ToUnixMicros(ended_since)));
}

absl::StatusOr<std::vector<collector::notify::AlertSource::Event>> RegressionStore::PendingEvents(
    int limit) {
  return db_.Transact(
      "list notification events", [&](pqxx::work& tx) -> absl::StatusOr<std::vector<Event>> {
        // The regression's columns in a subquery: both tables have created_at.
        auto rows = tx.exec_params(
            "SELECT e.event_id, e.kind, r.* FROM regression_events e JOIN (SELECT " + kColumns +
                " FROM regressions) r USING (regression_id)"
                " WHERE e.delivered_at IS NULL"
                " AND e.created_at > now() - $2::float8 * interval '1 second'"
                " ORDER BY e.event_id LIMIT $1",
            limit, absl::ToDoubleSeconds(kEventMaxAge));
        std::vector<Event> out;
        for (const auto& row : rows) {
          // FromRow reads the regression's columns, which start after the event's two.
          auto regression = FromRow(row.slice(2, row.size()));
          if (!regression.ok()) return regression.status();
          out.push_back(
              Event{row[0].as<int64_t>(), row[1].as<std::string>(), std::move(*regression)});
        }
        return out;
      });
}

absl::Status RegressionStore::MarkDelivered(int64_t event_id) {
  return db_.Transact("mark event delivered", [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE regression_events SET delivered_at = now(), attempts = attempts + 1"
        " WHERE event_id = $1",
        event_id);
    return absl::OkStatus();
  });
}

absl::Status RegressionStore::MarkFailed(int64_t event_id, const std::string& error) {
  return db_.Transact("mark event failed", [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE regression_events SET attempts = attempts + 1, last_error = $2"
        " WHERE event_id = $1",
        event_id, error);
    return absl::OkStatus();
  });
}

}  // namespace devtime::store
