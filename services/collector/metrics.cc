#include "services/collector/metrics.h"

namespace devtime::collector {

#ifndef DEVTIME_VERSION
#define DEVTIME_VERSION "dev"
#endif

CollectorMetrics::CollectorMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  auto& ingest = prometheus::BuildCounter()
                     .Name("devtime_ingest_runs_total")
                     .Help("Run uploads handled by the collector, by outcome")
                     .Register(*registry_);
  for (const char* outcome :
       {"stored", "duplicate", "invalid", "conflict", "unauthorized", "unavailable", "error"}) {
    ingest_by_outcome_[outcome] = &ingest.Add({{"outcome", outcome}});
  }
  ingest_duration_ =
      &prometheus::BuildHistogram()
           .Name("devtime_ingest_duration_seconds")
           .Help("Time to validate and commit one uploaded run")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                            0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  database_up_ = &prometheus::BuildGauge()
                      .Name("devtime_database_up")
                      .Help("1 if the collector's last PostgreSQL check succeeded, else 0")
                      .Register(*registry_)
                      .Add({});
  schema_version_ = &prometheus::BuildGauge()
                         .Name("devtime_schema_version")
                         .Help("Database schema migration version in force")
                         .Register(*registry_)
                         .Add({});
  auto& auth = prometheus::BuildCounter()
                   .Name("devtime_auth_failures_total")
                   .Help("Calls refused for missing, unknown or insufficient credentials")
                   .Register(*registry_);
  for (const char* reason : {"missing", "invalid", "forbidden"}) {
    auth_failures_[reason] = &auth.Add({{"reason", reason}});
  }
  prometheus::BuildGauge()
      .Name("devtime_build_info")
      .Help("Build of the running collector (always 1)")
      .Register(*registry_)
      .Add({{"version", DEVTIME_VERSION}, {"component", "collector"}})
      .Set(1);
}

void CollectorMetrics::RecordIngest(const std::string& outcome, double seconds) {
  ingest_by_outcome_.at(outcome)->Increment();
  ingest_duration_->Observe(seconds);
}

void CollectorMetrics::SetDatabaseUp(bool up) { database_up_->Set(up ? 1 : 0); }

void CollectorMetrics::SetSchemaVersion(int version) { schema_version_->Set(version); }

void CollectorMetrics::RecordAuthFailure(const std::string& reason) {
  auth_failures_.at(reason)->Increment();
}

}  // namespace devtime::collector
