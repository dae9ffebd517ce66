// The collector's metrics without a database: detection counters and histogram as a scrape
// sees them, and FleetMetrics' documented defaults. (FleetMetrics against PostgreSQL:
// tests/integration/fleet_metrics_test.cc.)
#include "services/collector/metrics/collector_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "prometheus/text_serializer.h"
#include "services/collector/metrics/fleet_metrics.h"

namespace devtime::collector {
namespace {

using ::testing::HasSubstr;

std::string Scrape(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(CollectorMetrics, DetectionRunsAreCountedByVerdictAndTimed) {
  auto registry = std::make_shared<prometheus::Registry>();
  CollectorMetrics metrics(registry);
  metrics.RecordDetection(analyze::Verdict::kSuspected, 0.004);
  metrics.RecordDetection(analyze::Verdict::kSuspected, 0.02);
  metrics.RecordDetection(analyze::Verdict::kInsufficientHistory, 0.0005);
  std::string text = Scrape(*registry);
  EXPECT_THAT(text, HasSubstr("devtime_detection_runs_total{verdict=\"suspected\"} 2"));
  EXPECT_THAT(text, HasSubstr("devtime_detection_runs_total{verdict=\"insufficient_history\"} 1"));
  // Every verdict is exported from the start, so rate() sees the first one.
  for (const char* verdict : {"none", "confirmed", "refuted", "resolved", "skipped", "error"}) {
    EXPECT_THAT(text, HasSubstr("devtime_detection_runs_total{verdict=\"" + std::string(verdict) +
                                "\"} 0"));
  }
  EXPECT_THAT(text, HasSubstr("devtime_detection_duration_seconds_count 3"));
  EXPECT_THAT(text, HasSubstr("devtime_detection_duration_seconds_bucket{le=\"0.005\"} 2"));
}

TEST(CollectorMetrics, AFailedAnalysisIsCountedAsError) {
  auto registry = std::make_shared<prometheus::Registry>();
  CollectorMetrics metrics(registry);
  metrics.RecordDetection(absl::UnavailableError("database down"), 0.1);
  EXPECT_THAT(Scrape(*registry), HasSubstr("devtime_detection_runs_total{verdict=\"error\"} 1"));
}

TEST(CollectorMetrics, IngestMetricsAreUnchanged) {
  auto registry = std::make_shared<prometheus::Registry>();
  CollectorMetrics metrics(registry);
  metrics.RecordIngest(IngestOutcome::kStored, 0.01);
  std::string text = Scrape(*registry);
  EXPECT_THAT(text, HasSubstr("devtime_ingest_runs_total{outcome=\"stored\"} 1"));
  EXPECT_THAT(text, HasSubstr("devtime_ingest_duration_seconds_count 1"));
}

TEST(FleetMetricsOptions, DefaultsAreTheDocumentedOnes) {
  FleetMetricsOptions options;
  EXPECT_EQ(options.top_ops, 10u);
  EXPECT_EQ(options.stale_after, absl::Hours(24 * 30));
  EXPECT_EQ(options.session_poll, std::chrono::milliseconds(1000));
  EXPECT_EQ(kAgentConnectedPolls, 5);
}

}  // namespace
}  // namespace devtime::collector
