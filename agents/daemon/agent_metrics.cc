#include "agents/daemon/agent_metrics.h"

#include <chrono>

#include "prometheus/detail/builder.h"

namespace devtime::agent {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

template <typename Metric>
prometheus::Family<Metric>& Family(prometheus::Registry& registry, const char* name,
                                   const char* help) {
  return prometheus::detail::Builder<Metric>().Name(name).Help(help).Register(registry);
}

// The one series of a family without labels.
template <typename Metric>
Metric& Unlabelled(prometheus::Registry& registry, const char* name, const char* help) {
  return Family<Metric>(registry, name, help).Add({});
}

}  // namespace

AgentMetrics::AgentMetrics()
    : jobs_(Family<Counter>(*registry_, "devtime_agent_jobs_total",
                            "Job slots handled by this agent, by job and outcome")),
      durations_(Family<Histogram>(*registry_, "devtime_agent_job_duration_seconds",
                                   "Wall time of job runs")),
      last_success_(Family<Gauge>(*registry_, "devtime_agent_last_success_timestamp_seconds",
                                  "Unix time of the last successful run of each job")),
      spool_runs_(Unlabelled<Gauge>(*registry_, "devtime_agent_spool_runs",
                                    "Runs in the spool waiting for upload")),
      spool_bytes_(Unlabelled<Gauge>(*registry_, "devtime_agent_spool_bytes",
                                     "Bytes in the spool waiting for upload")),
      spool_full_(
          Unlabelled<Counter>(*registry_, "devtime_agent_spool_full_total",
                              "Runs that found the spool or disk full (they wait for room)")),
      upload_retries_(Unlabelled<Counter>(*registry_, "devtime_agent_upload_retries_total",
                                          "Upload attempts that failed and will be retried")),
      runs_set_aside_(Unlabelled<Counter>(*registry_, "devtime_agent_runs_set_aside_total",
                                          "Runs moved to the spool's rejected/ folder undelivered "
                                          "(refused, or failed on by the collector too often)")),
      connected_(Unlabelled<Gauge>(*registry_, "devtime_agent_collector_connected",
                                   "1 while the session with the collector is up")) {}

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
void AgentMetrics::RunSetAside() { runs_set_aside_.Increment(); }

void AgentMetrics::Connected(bool up) { connected_.Set(up ? 1 : 0); }

}  // namespace devtime::agent
