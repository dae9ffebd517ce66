#include "agents/agent_metrics.h"

#include <chrono>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace devtime::agent {
namespace {

prometheus::Family<prometheus::Counter>& Jobs(prometheus::Registry& r) {
  return prometheus::BuildCounter()
      .Name("devtime_agent_jobs_total")
      .Help("Job slots handled by this agent, by job and outcome")
      .Register(r);
}
prometheus::Family<prometheus::Histogram>& Durations(prometheus::Registry& r) {
  return prometheus::BuildHistogram()
      .Name("devtime_agent_job_duration_seconds")
      .Help("Wall time of job runs")
      .Register(r);
}
prometheus::Family<prometheus::Gauge>& Gauge(prometheus::Registry& r, const std::string& name,
                                             const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Counter>& Counter(prometheus::Registry& r, const std::string& name,
                                                 const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentMetrics>> AgentMetrics::Start(const std::string& listen) {
  std::unique_ptr<AgentMetrics> metrics(new AgentMetrics());
  auto& r = *metrics->registry_;
  Jobs(r);
  Durations(r);
  Gauge(r, "devtime_agent_spool_runs", "Runs in the spool waiting for upload").Add({});
  Gauge(r, "devtime_agent_spool_bytes", "Bytes in the spool waiting for upload").Add({});
  Counter(r, "devtime_agent_spool_full_total", "Runs refused because the spool was full").Add({});
  Counter(r, "devtime_agent_upload_retries_total",
          "Upload attempts that failed and will be retried")
      .Add({});
  Gauge(r, "devtime_agent_last_success_timestamp_seconds",
        "Unix time of the last successful run of each job");
  Gauge(r, "devtime_agent_collector_connected", "1 while the session with the collector is up")
      .Add({});
  try {
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError("cannot serve agent metrics on " + listen + ": " + e.what());
  }
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->port_ = metrics->exposer_->GetListeningPorts().at(0);
  return metrics;
}

void AgentMetrics::JobFinished(const std::string& job, const std::string& outcome, double seconds) {
  std::lock_guard lock(mu_);
  auto& r = *registry_;
  Jobs(r).Add({{"job", job}, {"outcome", outcome}}).Increment();
  Durations(r)
      .Add({{"job", job}}, prometheus::Histogram::BucketBoundaries{1, 5, 15, 30, 60, 120, 300, 600,
                                                                   1800, 3600, 7200})
      .Observe(seconds);
  if (outcome == "succeeded") {
    auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch());
    Gauge(r, "devtime_agent_last_success_timestamp_seconds", "")
        .Add({{"job", job}})
        .Set(now.count());
  }
}

void AgentMetrics::SpoolState(uint64_t runs, uint64_t bytes) {
  std::lock_guard lock(mu_);
  Gauge(*registry_, "devtime_agent_spool_runs", "").Add({}).Set(static_cast<double>(runs));
  Gauge(*registry_, "devtime_agent_spool_bytes", "").Add({}).Set(static_cast<double>(bytes));
}

void AgentMetrics::SpoolFull() {
  std::lock_guard lock(mu_);
  Counter(*registry_, "devtime_agent_spool_full_total", "").Add({}).Increment();
}

void AgentMetrics::UploadRetry() {
  std::lock_guard lock(mu_);
  Counter(*registry_, "devtime_agent_upload_retries_total", "").Add({}).Increment();
}

void AgentMetrics::Connected(bool up) {
  std::lock_guard lock(mu_);
  Gauge(*registry_, "devtime_agent_collector_connected", "").Add({}).Set(up ? 1 : 0);
}

}  // namespace devtime::agent
