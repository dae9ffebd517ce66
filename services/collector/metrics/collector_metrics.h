// The collector's own Prometheus metrics (served on /metrics by prometheus-cpp's Exposer).
//
//   devtime_ingest_runs_total{outcome}     uploads by outcome: stored, duplicate, invalid,
//                                          conflict, unauthorized, unavailable, error
//   devtime_ingest_duration_seconds        histogram of UploadRun handling time
//   devtime_database_up                    1 while the last database check succeeded
//   devtime_schema_version                 schema migration version in force
//   devtime_build_info{version}            always 1; the labels carry the build
//   devtime_auth_failures_total{reason}    refused calls: missing, invalid, forbidden
//   devtime_detection_runs_total{verdict}  regression detection passes by verdict: none,
//                                          suspected, confirmed, refuted, resolved,
//                                          insufficient_history, skipped, error
//   devtime_detection_duration_seconds     histogram of one detection pass over a run
//
// The fleet's state read from PostgreSQL (times per model, regressions, jobs, agents) is
// exported by FleetMetrics (fleet_metrics.h) into the same registry.
//
// Thread-safety: all methods are safe to call concurrently (prometheus-cpp atomics).
#pragma once

#include <map>
#include <memory>
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
  void RecordAuthFailure(AuthFailure reason);
  // One detection pass over a newly stored run: its verdict, or "error" when it failed.
  void RecordDetection(const absl::StatusOr<analyze::Verdict>& verdict, double seconds);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::map<IngestOutcome, prometheus::Counter*> ingest_by_outcome_;  // fixed after construction
  prometheus::Histogram* ingest_duration_;
  prometheus::Counter* monitor_stored_;
  prometheus::Counter* monitor_duplicate_;
  prometheus::Gauge* database_up_;
  prometheus::Gauge* schema_version_;
  std::map<AuthFailure, prometheus::Counter*> auth_failures_;  // fixed after construction
  std::map<analyze::Verdict, prometheus::Counter*>
      detection_by_verdict_;  // fixed after construction
  prometheus::Counter* detection_errors_;
  prometheus::Histogram* detection_duration_;
};

}  // namespace devtime::collector
