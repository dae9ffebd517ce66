// The Notifier's pass logic against an in-memory source and endpoints nobody listens on; the
// exchanges with a real Alertmanager and a real webhook receiver are in
// tests/integration/alertmanager_test.cc.
#include "services/collector/notify/notifier.h"

#include <gtest/gtest.h>

#include "services/collector/notify/http_client.h"
#include "tests/support/process.h"
#include "tests/unit/notify/memory_alert_source.h"
#include "tests/unit/notify/sample_regression.h"

namespace devtime::collector::notify {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1795917600);

// The value of a counter or the sample count of a histogram, -1 when there is no such series.
double MetricValue(prometheus::Registry& registry, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      return family.type == prometheus::MetricType::Histogram
                 ? static_cast<double>(metric.histogram.sample_count)
                 : metric.counter.value;
    }
  }
  return -1;
}

std::string DeadEndpoint() { return "http://127.0.0.1:" + std::to_string(testing::FreePort()); }

AlertSource::Event MakeEvent(int64_t id, const std::string& kind, int64_t regression_id) {
  return {id, kind, SampleRegression(regression_id, kNow)};
}

TEST(Notifier, RegistersBothChannelsMetricsAtZero) {
  MemoryAlertSource source;
  prometheus::Registry registry;
  Notifier notifier({}, source, registry);
  for (const char* channel : {"alertmanager", "webhook"}) {
    for (const char* outcome : {"sent", "failed"}) {
      EXPECT_EQ(MetricValue(registry, "devtime_notifications_total",
                            {{"channel", channel}, {"outcome", outcome}}),
                0);
    }
    EXPECT_EQ(
        MetricValue(registry, "devtime_notification_duration_seconds", {{"channel", channel}}), 0);
  }
}

TEST(Notifier, ChannelsSwitchedOffTouchNothing) {
  MemoryAlertSource source;
  source.regressions.push_back(SampleRegression(1, kNow));
  source.pending.push_back(MakeEvent(1, "opened", 1));
  prometheus::Registry registry;
  Notifier notifier({}, source, registry);
  EXPECT_TRUE(notifier.PushOnce(kNow).ok());
  EXPECT_EQ(source.reads, 0);
  EXPECT_EQ(source.pending.size(), 1u);
}

TEST(Notifier, NothingToSendSendsNoRequest) {
  MemoryAlertSource source;
  prometheus::Registry registry;
  NotifierOptions options;
  options.alertmanager_url = DeadEndpoint();  // a request would fail
  options.webhook_url = DeadEndpoint();
  options.ended_window = std::chrono::seconds(600);
  Notifier notifier(options, source, registry);
  EXPECT_TRUE(notifier.PushOnce(kNow).ok());
  EXPECT_EQ(source.last_ended_since, kNow - absl::Minutes(10));
  EXPECT_EQ(
      MetricValue(registry, "devtime_notification_duration_seconds", {{"channel", "alertmanager"}}),
      0);
}

TEST(Notifier, TriesBothChannelsAndReturnsTheFirstError) {
  MemoryAlertSource source;
  source.regressions.push_back(SampleRegression(1, kNow));
  source.pending = {MakeEvent(10, "opened", 1), MakeEvent(11, "resolved", 1)};
  prometheus::Registry registry;
  NotifierOptions options;
  options.alertmanager_url = DeadEndpoint();
  options.webhook_url = DeadEndpoint() + "/hook";
  Notifier notifier(options, source, registry);

  absl::Status status = notifier.PushOnce(kNow);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message().rfind("alertmanager: POST " + options.alertmanager_url + "/…: ", 0),
            0u)
      << status;
  // The webhook was tried too: its first event failed, and the pass stopped there.
  ASSERT_EQ(source.failures.size(), 1u);
  EXPECT_EQ(source.failures[0].first, 10);
  EXPECT_EQ(source.failures[0].second.rfind("POST " + RedactUrl(options.webhook_url) + ": ", 0), 0u)
      << source.failures[0].second;
  EXPECT_TRUE(source.delivered.empty());
  EXPECT_EQ(source.pending.size(), 2u);
  for (const char* channel : {"alertmanager", "webhook"}) {
    EXPECT_EQ(MetricValue(registry, "devtime_notifications_total",
                          {{"channel", channel}, {"outcome", "failed"}}),
              1)
        << channel;
  }
}

TEST(Notifier, WebhookErrorNamesTheEvent) {
  MemoryAlertSource source;
  source.pending = {MakeEvent(10, "opened", 3)};
  prometheus::Registry registry;
  NotifierOptions options;
  options.webhook_url = DeadEndpoint();
  Notifier notifier(options, source, registry);
  absl::Status status = notifier.PushOnce(kNow);
  EXPECT_EQ(status.message().rfind("webhook: event 10 (opened, regression 3): POST ", 0), 0u)
      << status;
}

TEST(Notifier, SourceFailuresAreReportedAndTheOtherChannelStillRuns) {
  MemoryAlertSource source;
  source.read_error = absl::UnavailableError("database is away");
  prometheus::Registry registry;
  NotifierOptions options;
  options.alertmanager_url = DeadEndpoint();
  options.webhook_url = DeadEndpoint();
  Notifier notifier(options, source, registry);
  absl::Status status = notifier.PushOnce(kNow);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "alertmanager: cannot read the alerts: database is away");
  EXPECT_EQ(source.reads, 2);  // AlertsToPush and PendingEvents
}

TEST(ValidateOptions, AcceptsDefaultsAndHttpUrls) {
  EXPECT_TRUE(ValidateOptions({}).ok());
  NotifierOptions options;
  options.alertmanager_url = "http://127.0.0.1:9093";
  options.webhook_url = "HTTPS://hooks.example.com/x";
  options.external_url = "http://collector:9464";
  EXPECT_TRUE(ValidateOptions(options).ok());
}

TEST(ValidateOptions, NamesTheBadOption) {
  NotifierOptions options;
  options.webhook_url = "hooks.example.com/x";
  EXPECT_EQ(ValidateOptions(options).message(),
            "webhook_url: must be an http:// or https:// URL, got \"hooks.example.com/x\"");
  options = {};
  options.resend_every = std::chrono::seconds(0);
  EXPECT_EQ(ValidateOptions(options).message(), "resend_every: must be positive");
  options = {};
  options.request_timeout = std::chrono::seconds(-1);
  EXPECT_EQ(ValidateOptions(options).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devtime::collector::notify
