#include "services/collector/metrics/collector_metrics.h"

#include <limits>

namespace devtime::collector {
namespace {

// From a millisecond to ten seconds: an ingest or a detection pass slower than that is an
// outage, not a latency.
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace

#ifndef DEVTIME_VERSION
#define DEVTIME_VERSION "dev"
#endif

CollectorMetrics::CollectorMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  prometheus::Registry& r = *registry_;
  auto counters = [&r](const char* name, const char* help) -> auto& {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r);
  };
  auto histogram = [&r](const char* name, const char* help) {
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({},
                                                                               LatencyBuckets());
  };
  auto gauge = [&r](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
  };

  auto& ingest =
      counters("devtime_ingest_runs_total", "Run uploads handled by the collector, by outcome");
  for (auto [outcome, name] : {std::pair{IngestOutcome::kStored, "stored"},
                               {IngestOutcome::kDuplicate, "duplicate"},
                               {IngestOutcome::kInvalid, "invalid"},
                               {IngestOutcome::kConflict, "conflict"},
                               {IngestOutcome::kUnauthorized, "unauthorized"},
                               {IngestOutcome::kUnavailable, "unavailable"},
                               {IngestOutcome::kError, "error"}}) {
    ingest_by_outcome_[outcome] = &ingest.Add({{"outcome", name}});
  }
  auto& monitor = counters("devtime_monitor_windows_total",
                           "neuron-monitor windows uploaded (issue 24), stored or duplicate");
  monitor_stored_ = &monitor.Add({{"outcome", "stored"}});
  monitor_duplicate_ = &monitor.Add({{"outcome", "duplicate"}});
  ingest_duration_ =
      histogram("devtime_ingest_duration_seconds", "Time to validate and commit one uploaded run");
  database_up_ =
      gauge("devtime_database_up", "1 if the collector's last PostgreSQL check succeeded, else 0");
  schema_version_ = gauge("devtime_schema_version", "Database schema migration version in force");
  auto& auth = counters("devtime_auth_failures_total",
                        "Calls refused for missing, unknown or insufficient credentials");
  for (auto [reason, name] : {std::pair{AuthFailure::kMissing, "missing"},
                              {AuthFailure::kInvalid, "invalid"},
                              {AuthFailure::kForbidden, "forbidden"}}) {
    auth_failures_[reason] = &auth.Add({{"reason", name}});
  }
  auto& detection = counters("devtime_detection_runs_total",
                             "Regression detection passes over stored runs, by verdict");
  for (analyze::Verdict verdict : analyze::kAllVerdicts) {
    detection_by_verdict_[verdict] = &detection.Add({{"verdict", analyze::VerdictName(verdict)}});
  }
  detection_errors_ = &detection.Add({{"verdict", "error"}});
  detection_duration_ = histogram("devtime_detection_duration_seconds",
                                  "Time of one regression detection pass over a stored run");
  hunts_started_ = &counters("devtime_hunts_started_total", "Culprit hunts started").Add({});
  auto& finished = counters("devtime_hunts_finished_total", "Culprit hunts finished, by outcome");
  for (const char* outcome : {"culprit_found", "no_culprit", "inconclusive"}) {
    hunts_finished_[outcome] = &finished.Add({{"outcome", outcome}});
  }
  hunt_runs_ =
      &counters("devtime_hunt_runs_total", "Culprit runs that came back (hunt budget spent)")
           .Add({});
  // A hunt takes minutes to hours (each culprit run is a whole job run).
  hunt_duration_ = &prometheus::BuildHistogram()
                        .Name("devtime_hunt_duration_seconds")
                        .Help("Time of a culprit hunt from its start to its verdict")
                        .Register(r)
                        .Add({}, prometheus::Histogram::BucketBoundaries{
                                     10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400});
  prometheus::BuildGauge()
      .Name("devtime_build_info")
      .Help("Build of the running collector (always 1)")
      .Register(r)
      .Add({{"version", DEVTIME_VERSION}, {"component", "collector"}})
      .Set(1);
}

void CollectorMetrics::RecordIngest(IngestOutcome outcome, double seconds) {
  ingest_by_outcome_.at(outcome)->Increment();
  ingest_duration_->Observe(seconds);
}

void CollectorMetrics::RecordMonitorWindow(bool duplicate) {
  (duplicate ? monitor_duplicate_ : monitor_stored_)->Increment();
}

void CollectorMetrics::SetDatabaseUp(bool up) { database_up_->Set(up ? 1 : 0); }

void CollectorMetrics::SetSchemaVersion(int version) { schema_version_->Set(version); }

void CollectorMetrics::SetReplicationLag(std::optional<double> seconds) {
  if (replication_lag_ == nullptr) {
    replication_lag_ = &prometheus::BuildGauge()
                            .Name("devtime_database_replication_lag_seconds")
                            .Help(
                                "Replication lag of the read replica (--read-database): 0 when "
                                "it replayed all it received, +Inf when not streaming, NaN "
                                "when unreachable")
                            .Register(*registry_)
                            .Add({});
  }
  replication_lag_->Set(seconds ? *seconds : std::numeric_limits<double>::quiet_NaN());
}

void CollectorMetrics::RecordAuthFailure(AuthFailure reason) {
  auth_failures_.at(reason)->Increment();
}

void CollectorMetrics::RecordDetection(const absl::StatusOr<analyze::Verdict>& verdict,
                                       double seconds) {
  (verdict.ok() ? detection_by_verdict_.at(*verdict) : detection_errors_)->Increment();
  detection_duration_->Observe(seconds);
}

void CollectorMetrics::HuntStarted() { hunts_started_->Increment(); }

void CollectorMetrics::HuntRunSpent() { hunt_runs_->Increment(); }

void CollectorMetrics::HuntFinished(const std::string& outcome, double seconds_to_verdict) {
  if (auto it = hunts_finished_.find(outcome); it != hunts_finished_.end()) it->second->Increment();
  hunt_duration_->Observe(seconds_to_verdict);
}

}  // namespace devtime::collector
