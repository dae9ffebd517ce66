// The fleet's state as Prometheus gauges: what the latest run of every model costs, which
// regressions are live, how the nightly jobs and their agents are doing. Read from
// PostgreSQL on each Refresh and set into the collector's registry (served on /metrics
// next to metrics.h's own counters).
//
//   devtime_step_seconds{model,workload,instance_type,time}
//       the latest OK run's mean time per step. time="device": runs.device_us_per_step, the
//       detector's series basis, only for runs with device time; time="cpu": mean of the
//       run's run_steps.cpu_us (runs without steps: the ops' self CPU time over the
//       capture's active steps). A CPU-only profile (device kind cpu, or no device time) has
//       time="cpu" alone, which is then its series basis: a sum over `time` counts it once.
//       Its basis whatever the device: `step{time="device"} or ignoring (time) step{time="cpu"}`.
//   devtime_op_self_seconds_per_step{model,workload,instance_type,op}
//       the latest OK run's top `top_ops` operators by self time per step (self device time;
//       self CPU time when the run has no device time: CPU-only profiles), the rest summed as
//       op="other" (present only when the run has more than `top_ops` operators).
//   devtime_layer_seconds_per_step{model,workload,instance_type,layer}
//       the latest OK run's layers (framework_dispatch, runtime_scheduling, device_execution,
//       idle), each only when the run reported it.
//   devtime_latest_run_timestamp_seconds{model,workload,instance_type}
//       started_at of that latest OK run.
//   devtime_regressions_open{model,workload,instance_type,kind,severity}
//       regressions in state open or acknowledged (severity critical, warning, info).
//   devtime_regressions_suspected{model,workload,instance_type,kind}
//       regressions in state suspected (awaiting confirmation).
//       Both regression gauges are 0 (not absent) for every exported (model, workload,
//       instance_type), so `sum by (model)` and "is it back to 0" work without `or vector(0)`.
//   (The `job` label below is devtime's job name: scrape the collector with honor_labels, as
//   deploy/prometheus/prometheus.yml does, or Prometheus renames it exported_job.)
//   devtime_job_last_success_timestamp_seconds{job}
//       max finished_at of the job's slots with outcome "succeeded"; absent until the job
//       first succeeds (as the agent's own devtime_agent_last_success_timestamp_seconds).
//   devtime_job_slots_recent{job,outcome}
//       slots whose slot_time lies in the 24 h before `now`, by outcome. Every outcome name
//       (running, succeeded, failed, skipped_still_running, missed_no_agent,
//       missed_agent_down) is present, 0 when none, for every defined job and every job with
//       slots in the window (a job deleted today keeps its last day).
//   devtime_agent_last_seen_timestamp_seconds{agent,host}
//   devtime_agent_connected{agent,host}
//       1 when the agent's last_seen is within kAgentConnectedPolls heartbeat intervals of
//       `now` (the rule devtimectl agents list shows), else 0. The collector holding the
//       agent's session writes last_seen every heartbeat (rpc/session_hub.h), so a connected
//       agent's last_seen is at most one interval old, plus the time the write takes.
//
// Bounded cardinality (Prometheus keeps per-operator history badly; PostgreSQL keeps it all):
// with W the (model, workload, instance_type) triples that have an OK run started within
// `stale_after`, J the jobs and A the agents seen within `stale_after`, a refresh exports at
// most W × (2 + (top_ops + 1) + 4 + 1 + 2 × (3 + 1)) + J × 7 + A × 2 series, plus the regression
// gauges of triples that have a live regression but no fresh run. Label values are bounded by
// the wire limits (identity strings 256 bytes, operator names 2,048 bytes). A triple, operator,
// layer, job or agent that no longer qualifies is removed from its family (Family::Remove),
// so stale label sets disappear from the next scrape instead of freezing at their last value.
//
// Wiring (server.cc): construct one FleetMetrics next to CollectorMetrics, on the same
// registry, and call Refresh(absl::Now()) from the housekeeping thread every minute or so
// while the database is up. A failed Refresh leaves every gauge at its previous value.
//
// Thread-safety: Refresh may be called from any thread (calls are serialized); scrapes may run
// concurrently with it and then see some families already refreshed and others not yet.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "services/collector/metrics/monitor_metrics.h"
#include "services/collector/store/database.h"

namespace devtime::collector {

// An agent counts as connected while its last_seen is within this many heartbeat intervals
// (SessionOptions::poll_interval, --heartbeat-ms): a heartbeat or four may be late (a busy
// or restarting database, an agent moving to another collector) before the fleet is told.
// ListAgents must use the same number.
inline constexpr int kAgentConnectedPolls = 5;

struct FleetMetricsOptions {
  std::size_t top_ops = 10;  // operators exported per (model, workload, instance_type)
  // Triples with no OK run, and agents not seen, within this long before `now` are dropped.
  absl::Duration stale_after = absl::Hours(24 * 30);
  // The collector's heartbeat interval (SessionOptions::poll_interval, --heartbeat-ms).
  std::chrono::milliseconds session_poll{1000};
};

class FleetMetrics {
 public:
  // Registers the families (empty until the first Refresh). `store` and `registry` must
  // outlive this object.
  FleetMetrics(store::Database& store, prometheus::Registry& registry,
               FleetMetricsOptions options = {});
  ~FleetMetrics();
  FleetMetrics(const FleetMetrics&) = delete;
  FleetMetrics& operator=(const FleetMetrics&) = delete;

  // Reads the fleet in one read-only snapshot transaction (a handful of queries, one per
  // family group) and sets every gauge as of `now`; series that no longer qualify are
  // removed. UNAVAILABLE when the database stays unreachable (gauges unchanged).
  absl::Status Refresh(absl::Time now);

 private:
  class GaugeSet;  // a family plus the label sets this object put into it

  store::Database& store_;
  const FleetMetricsOptions options_;
  std::mutex mu_;  // serializes Refresh
  // One per exported family, in the order fleet_metrics.cc's table lists them.
  std::vector<std::unique_ptr<GaugeSet>> families_;
  // Issue 24: the "between the nights" families (monitor_metrics.h), refreshed with these.
  std::unique_ptr<MonitorMetrics> monitor_;
};

}  // namespace devtime::collector
