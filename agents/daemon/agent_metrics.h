// The agent's own Prometheus metrics, on its own /metrics (agent.yaml: metrics_listen).
//
//   devtime_agent_jobs_total{job,outcome}              slots by outcome
//   devtime_agent_job_duration_seconds{job}            histogram of job run time
//   devtime_agent_spool_runs / _spool_bytes            runs waiting for upload
//   devtime_agent_spool_full_total                     runs that found the spool or disk full (they
//   wait for room) devtime_agent_upload_retries_total                 failed upload attempts
//   (retried later) devtime_agent_runs_set_aside_total                 runs moved to
//   spool/rejected/ undelivered devtime_agent_last_success_timestamp_seconds{job}  when the job
//   last produced a good run devtime_agent_collector_connected                  1 while the session
//   is up
//   devtime_agent_monitor_*                            neuron-monitor's stream (issue 24),
//   listed in agents/daemon/daemon_monitor.cc and agents/monitor/README.md
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace devtime::agent {

class AgentMetrics {
 public:
  // Serves on `listen` (host:port; port 0 = any free).
  static absl::StatusOr<std::unique_ptr<AgentMetrics>> Start(const std::string& listen);

  // Creates the job's series at 0 when it is assigned: Prometheus's increase() counts nothing
  // for a series whose first sample is already 1, so the first run would go unseen.
  void DeclareJob(const std::string& job);
  void JobFinished(const std::string& job, const std::string& outcome, double seconds);
  void SpoolState(uint64_t runs, uint64_t bytes);
  void SpoolFull();
  void UploadRetry();
  void RunSetAside();
  void Connected(bool up);
  int port() const { return port_; }
  // For the families of other parts of the agent (the monitor's, daemon_monitor.cc).
  prometheus::Registry& registry() { return *registry_; }

 private:
  AgentMetrics();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  // Families with a `job` label get a child per job on first use.
  prometheus::Family<prometheus::Counter>& jobs_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Family<prometheus::Gauge>& last_success_;
  prometheus::Gauge& spool_runs_;
  prometheus::Gauge& spool_bytes_;
  prometheus::Counter& spool_full_;
  prometheus::Counter& upload_retries_;
  prometheus::Counter& runs_set_aside_;
  prometheus::Gauge& connected_;
};

}  // namespace devtime::agent
