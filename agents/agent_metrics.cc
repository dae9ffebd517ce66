#include "agents/agent_metrics.h"

#include <chrono>

namespace devtime::agent {
namespace {

prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const char* name,
                                                   const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r, const char* name,
                                                       const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

}  // namespace

AgentMetrics::AgentMetrics()
    : jobs_(CounterFamily(*registry_, "devtime_agent_jobs_total",
                          "Job slots handled by this agent, by job and outcome")),
      durations_(prometheus::BuildHistogram()
                     .Name("devtime_agent_job_duration_seconds")
                     .Help("Wall time of job runs")
                     .Register(*registry_)),
      last_success_(GaugeFamily(*registry_, "devtime_agent_last_success_timestamp_seconds",
                                "Unix time of the last successful run of each job")),
      spool_runs_(GaugeFamily(*registry_, "devtime_agent_spool_runs",
                              "Runs in the spool waiting for upload")
                      .Add({})),
      spool_bytes_(GaugeFamily(*registry_, "devtime_agent_spool_bytes",
                               "Bytes in the spool waiting for upload")
                       .Add({})),
      spool_full_(CounterFamily(*registry_, "devtime_agent_spool_full_total",
                                "Runs refused because the spool was full")
                      .Add({})),
      upload_retries_(CounterFamily(*registry_, "devtime_agent_upload_retries_total",
                                    "Upload attempts that failed and will be retried")
                          .Add({})),
      connected_(GaugeFamily(*registry_, "devtime_agent_collector_connected",
                             "1 while the session with the collector is up")
                     .Add({})) {}

absl::StatusOr<std::unique_ptr<AgentMetrics>> AgentMetrics::Start(const std::string& listen) {
  std::unique_ptr<AgentMetrics> metrics(new AgentMetrics());
  try {
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError("cannot serve agent metrics on " + listen + ": " + e.what());
  }
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->port_ = metrics->exposer_->GetListeningPorts().at(0);
  return metrics;
}

namespace {
const prometheus::Histogram::BucketBoundaries kJobDurationBuckets{1,   5,   15,   30,   60,  120,
                                                                  300, 600, 1800, 3600, 7200};
const char* const kJobOutcomes[] = {"succeeded", "failed", "skipped_still_running"};
}  // namespace

void AgentMetrics::DeclareJob(const std::string& job) {
  // Family::Add is thread-safe and returns the existing child for a known label set.
  for (const char* outcome : kJobOutcomes) jobs_.Add({{"job", job}, {"outcome", outcome}});
  durations_.Add({{"job", job}}, kJobDurationBuckets);
}

void AgentMetrics::JobFinished(const std::string& job, const std::string& outcome, double seconds) {
  jobs_.Add({{"job", job}, {"outcome", outcome}}).Increment();
  durations_.Add({{"job", job}}, kJobDurationBuckets).Observe(seconds);
  if (outcome == "succeeded") {
    auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch());
    last_success_.Add({{"job", job}}).Set(now.count());
  }
}

void AgentMetrics::SpoolState(uint64_t runs, uint64_t bytes) {
  spool_runs_.Set(static_cast<double>(runs));
  spool_bytes_.Set(static_cast<double>(bytes));
}

void AgentMetrics::SpoolFull() { spool_full_.Increment(); }

void AgentMetrics::UploadRetry() { upload_retries_.Increment(); }

void AgentMetrics::Connected(bool up) { connected_.Set(up ? 1 : 0); }

}  // namespace devtime::agent
