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

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace devtime::collector {

class CollectorMetrics {
 public:
  explicit CollectorMetrics(std::shared_ptr<prometheus::Registry> registry);

  // `outcome` must be one of the outcomes listed above.
  void RecordIngest(const std::string& outcome, double seconds);
  void SetDatabaseUp(bool up);
  void SetSchemaVersion(int version);
  // `reason`: missing, invalid (unknown token) or forbidden (role does not allow it).
  void RecordAuthFailure(const std::string& reason);
  // One detection pass over a newly stored run; `verdict` must be one of those listed above.
  void RecordDetection(const std::string& verdict, double seconds);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::map<std::string, prometheus::Counter*> ingest_by_outcome_;  // fixed after construction
  prometheus::Histogram* ingest_duration_;
  prometheus::Gauge* database_up_;
  prometheus::Gauge* schema_version_;
  std::map<std::string, prometheus::Counter*> auth_failures_;         // fixed after construction
  std::map<std::string, prometheus::Counter*> detection_by_verdict_;  // fixed after construction
  prometheus::Histogram* detection_duration_;
};

}  // namespace devtime::collector
