// The collector's own Prometheus metrics (served on /metrics by prometheus-cpp's Exposer).
//
//   devtime_ingest_runs_total{outcome}     uploads by outcome: stored, duplicate, invalid,
//                                          conflict, unauthorized, unavailable, error
//   devtime_ingest_duration_seconds        histogram of UploadRun handling time
//   devtime_database_up                    1 while the last database check succeeded
//   devtime_schema_version                 schema migration version in force
//   devtime_database_replication_lag_seconds  the read replica's lag (--read-database;
//                                          +Inf when it is not streaming, NaN when unreachable)
//   devtime_build_info{version}            always 1; the labels carry the build
//   devtime_auth_failures_total{reason}    refused calls: missing, invalid, forbidden
//   devtime_detection_runs_total{verdict}  regression detection passes by verdict: none,
//                                          suspected, confirmed, refuted, resolved,
//                                          insufficient_history, skipped, error
//   devtime_detection_duration_seconds     histogram of one detection pass over a run
//   devtime_hunts_started_total            culprit hunts started (issue 25)
//   devtime_hunts_finished_total{outcome}  ... finished: culprit_found, no_culprit, inconclusive
//   devtime_hunt_runs_total                culprit runs that came back (the budget spent)
//   devtime_hunt_duration_seconds          histogram of a hunt's time from start to verdict
//
// The fleet's state read from PostgreSQL (times per model, regressions, jobs, agents) is
// exported by FleetMetrics (fleet_metrics.h) into the same registry.
//
// Thread-safety: all methods are safe to call concurrently (prometheus-cpp atomics).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "services/collector/analyze/verdict.h"

namespace devtime::collector {

// How an upload ended (devtime_ingest_runs_total{outcome}).
enum class IngestOutcome {
  kStored,
  kDuplicate,
  kInvalid,
  kConflict,
  kUnauthorized,
  kUnavailable,
  kError
};

// Why a call was refused (devtime_auth_failures_total{reason}): no token, an unknown token,
// or a role that does not allow the call.
enum class AuthFailure { kMissing, kInvalid, kForbidden };

class CollectorMetrics {
 public:
  explicit CollectorMetrics(std::shared_ptr<prometheus::Registry> registry);

  void RecordIngest(IngestOutcome outcome, double seconds);
  // A neuron-monitor window stored or a duplicate (devtime_monitor_windows_total{outcome}).
  void RecordMonitorWindow(bool duplicate);
  void SetDatabaseUp(bool up);
  void SetSchemaVersion(int version);
  // The read replica's lag in seconds; nullopt (unreachable) is exported as NaN. Exported
  // only by a collector with a replica (the first call creates it); call from one thread.
  void SetReplicationLag(std::optional<double> seconds);
  void RecordAuthFailure(AuthFailure reason);
  // One detection pass over a newly stored run: its verdict, or "error" when it failed.
  void RecordDetection(const absl::StatusOr<analyze::Verdict>& verdict, double seconds);

  // Culprit hunts (store/hunt_store.h).
  void HuntStarted();
  void HuntRunSpent();
  void HuntFinished(const std::string& outcome, double seconds_to_verdict);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::map<IngestOutcome, prometheus::Counter*> ingest_by_outcome_;  // fixed after construction
  prometheus::Histogram* ingest_duration_;
  prometheus::Counter* monitor_stored_;
  prometheus::Counter* monitor_duplicate_;
  prometheus::Gauge* database_up_;
  prometheus::Gauge* schema_version_;
  prometheus::Gauge* replication_lag_ = nullptr;  // created by the first SetReplicationLag
  std::map<AuthFailure, prometheus::Counter*> auth_failures_;  // fixed after construction
  std::map<analyze::Verdict, prometheus::Counter*>
      detection_by_verdict_;  // fixed after construction
  prometheus::Counter* detection_errors_;
  prometheus::Histogram* detection_duration_;
  prometheus::Counter* hunts_started_;
  std::map<std::string, prometheus::Counter*> hunts_finished_;  // fixed after construction
  prometheus::Counter* hunt_runs_;
  prometheus::Histogram* hunt_duration_;
};

}  // namespace devtime::collector
