// "Between the nights" on the collector's /metrics (issue 24): the newest hour of every
// monitor series group and its latency regressions, read from PostgreSQL on each fleet
// Refresh (fleet_metrics.h calls Refresh; same registry).
//
//   devtime_monitor_latency_seconds{model,workload,instance_type,metric}
//       metric = device_p50 | device_p99 | total_p99: the newest window start's value, mean
//       over the hosts' windows of that hour
//   devtime_monitor_executions{model,workload,instance_type}      executions in that hour
//   devtime_monitor_error_ratio{model,workload,instance_type}     errors / (executions + errors)
//   devtime_monitor_utilization_ratio{model,workload,instance_type}  mean NeuronCore use, 0..1
//   devtime_monitor_hosts{model,workload,instance_type}           hosts reporting that hour
//   devtime_monitor_regressions{model,workload,instance_type}     latency regressions firing
//       (open or acknowledged; regressions of kind latency)
//   devtime_monitor_last_regression_timestamp_seconds{model,workload,instance_type}
//       first bad window of the newest one (the dashboards' annotations)
//
// Bounded: with T the triples that have a window within `stale_after`, at most 9 T series;
// a triple that no longer qualifies is removed.
//
// Thread-safety: Refresh calls are serialized by the caller (FleetMetrics).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "services/collector/store/database.h"

namespace devtime::collector {

class MonitorMetrics {
 public:
  MonitorMetrics(store::Database& store, prometheus::Registry& registry);
  absl::Status Refresh(absl::Time now, absl::Duration stale_after);

 private:
  using Labels = std::map<std::string, std::string>;
  struct Family {
    prometheus::Family<prometheus::Gauge>* family;
    std::set<Labels> exported;
  };
  // Sets `values` into family `name`, removing the label sets it no longer has.
  void Apply(const std::string& name, const std::map<Labels, double>& values);

  store::Database& store_;
  std::map<std::string, Family> families_;
};

}  // namespace devtime::collector
