// The notifier against the real things: Debian's Alertmanager (/usr/bin/prometheus-alertmanager)
// routing to tests/support/webhook_receiver.py, and the receiver as the webhook channel's
// endpoint. The database side is replaced by an in-memory AlertSource.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "proto/wire/json.h"
#include "services/collector/notify/notifier.h"
#include "services/collector/notify/payloads.h"
#include "tests/support/alerting.h"
#include "tests/support/process.h"
#include "tests/unit/notify/memory_alert_source.h"
#include "tests/unit/notify/sample_regression.h"

namespace devtime::collector::notify {
namespace {

using devtime::testing::Alertmanager;
using devtime::testing::MakeTempDir;
using Receiver = devtime::testing::WebhookReceiver;
using devtime::testing::AlertmanagerNotification;
using devtime::testing::FreePort;
using devtime::testing::WaitUntil;

double Counter(prometheus::Registry& registry, const std::string& channel,
               const std::string& outcome) {
  for (const auto& family : registry.Collect()) {
    if (family.name != "devtime_notifications_total") continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& label : metric.label) labels[label.name] = label.value;
      if (labels["channel"] == channel && labels["outcome"] == outcome) {
        return metric.counter.value;
      }
    }
  }
  return -1;
}

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(AlertmanagerChannel, FiringRegressionIsNotifiedAndItsResolutionToo) {
  std::string dir = MakeTempDir("devtime-alertmanager");
  Receiver receiver(dir, "alertmanager-webhook");
  Alertmanager alertmanager(dir, receiver.url());

  MemoryAlertSource source;
  auto regression = SampleRegression(7, absl::Now() - absl::Minutes(5));
  source.regressions.push_back(regression);
  prometheus::Registry registry;
  NotifierOptions options;
  options.alertmanager_url = alertmanager.url();
  options.external_url = "http://collector.test:9464";
  Notifier notifier(options, source, registry);

  ASSERT_TRUE(notifier.PushOnce(absl::Now()).ok()) << alertmanager.Log();

  // Alertmanager holds it, active, with the labels we pushed (payloads_test.cc pins what
  // they are) and our annotations.
  std::optional<nlohmann::json> held;
  ASSERT_TRUE(WaitUntil([&] { return (held = alertmanager.Alert(7)).has_value(); }))
      << alertmanager.Log();
  const auto pushed =
      AlertmanagerAlert(regression, absl::Now(), absl::Minutes(4), options.external_url);
  ASSERT_TRUE(pushed.has_value());
  EXPECT_EQ(held->at("labels"), pushed->at("labels"));
  EXPECT_EQ(held->at("status").at("state"), "active");
  EXPECT_EQ(held->at("generatorURL"), "http://collector.test:9464/regressions/7");
  EXPECT_EQ(held->at("annotations").at("environment_changes"), "neuronx-cc 2.21 -> 2.22");

  // ... and delivers it through its own webhook.
  std::optional<nlohmann::json> firing;
  ASSERT_TRUE(WaitUntil([&] {
    return (firing = AlertmanagerNotification(receiver, "firing", 7)).has_value();
  })) << alertmanager.Log()
      << receiver.Log();
  EXPECT_EQ(firing->at("annotations").at("summary"), regression.summary());
  EXPECT_EQ(firing->at("annotations").at("state"), "open");

  // Resolved: the next pass carries endsAt, and Alertmanager notifies the resolution.
  source.regressions[0] = Resolved(regression, absl::Now() - absl::Seconds(1));
  ASSERT_TRUE(notifier.PushOnce(absl::Now()).ok()) << alertmanager.Log();
  std::optional<nlohmann::json> resolved;
  ASSERT_TRUE(WaitUntil([&] {
    return (resolved = AlertmanagerNotification(receiver, "resolved", 7)).has_value();
  })) << alertmanager.Log()
      << receiver.Log();
  EXPECT_EQ(resolved->at("annotations").at("state"), "resolved");
  EXPECT_EQ(resolved->at("annotations").at("resolution"), "fixed");

  EXPECT_EQ(Counter(registry, "alertmanager", "sent"), 2);
  EXPECT_EQ(Counter(registry, "alertmanager", "failed"), 0);
}

TEST(AlertmanagerChannel, ARestartedAlertmanagerLearnsTheAlertsOnTheNextPass) {
  std::string dir = MakeTempDir("devtime-alertmanager");
  Receiver receiver(dir, "alertmanager-webhook");
  Alertmanager alertmanager(dir, receiver.url());
  MemoryAlertSource source;
  source.regressions.push_back(SampleRegression(9, absl::Now() - absl::Minutes(5)));
  prometheus::Registry registry;
  NotifierOptions options;
  options.alertmanager_url = alertmanager.url();
  Notifier notifier(options, source, registry);
  ASSERT_TRUE(notifier.PushOnce(absl::Now()).ok()) << alertmanager.Log();
  ASSERT_TRUE(WaitUntil([&] { return alertmanager.Alert(9).has_value(); })) << alertmanager.Log();

  alertmanager.Restart();  // Alertmanager keeps alerts in memory only
  ASSERT_FALSE(alertmanager.Alert(9).has_value());
  // No state on our side to get wrong: the next pass sends the whole set again.
  ASSERT_TRUE(notifier.PushOnce(absl::Now()).ok()) << alertmanager.Log();
  ASSERT_TRUE(WaitUntil([&] { return alertmanager.Alert(9).has_value(); })) << alertmanager.Log();
}

TEST(WebhookChannel, DeliversEventsInOrderRetryingAfterAFailure) {
  std::string dir = MakeTempDir("devtime-webhook");
  Receiver receiver(dir, "webhook", /*fail_first=*/1);
  // A proxy in the environment must not be used (http_client.h): this one would refuse.
  ScopedEnv proxy("http_proxy", ("http://127.0.0.1:" + std::to_string(FreePort())).c_str());
  ScopedEnv all_proxy("ALL_PROXY", ("http://127.0.0.1:" + std::to_string(FreePort())).c_str());

  MemoryAlertSource source;
  absl::Time now = absl::Now();
  auto first = SampleRegression(7, now - absl::Hours(1));
  auto second = SampleRegression(8, now - absl::Minutes(30));
  source.pending = {
      {1, "opened", first}, {2, "opened", second}, {3, "resolved", Resolved(first, now)}};
  prometheus::Registry registry;
  NotifierOptions options;
  options.webhook_url = receiver.url();
  Notifier notifier(options, source, registry);

  // The receiver refuses the first request: event 1 is marked failed, 2 and 3 wait behind it.
  absl::Status status = notifier.PushOnce(now);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "webhook: event 1 (opened, regression 7): HTTP 500: refused on purpose (1 of 1)")
      << receiver.Log();
  ASSERT_EQ(source.failures.size(), 1u);
  EXPECT_EQ(source.failures[0],
            std::make_pair(int64_t{1}, std::string("HTTP 500: refused on purpose (1 of 1)")));
  EXPECT_TRUE(receiver.Bodies().empty());
  EXPECT_TRUE(source.delivered.empty());

  // The next pass delivers all three, in order, once each.
  ASSERT_TRUE(notifier.PushOnce(now + absl::Minutes(1)).ok()) << receiver.Log();
  EXPECT_EQ(source.delivered, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(source.pending.empty());
  auto bodies = receiver.Bodies();
  ASSERT_EQ(bodies.size(), 3u) << receiver.Log();
  std::vector<std::pair<int64_t, std::string>> seen;
  for (const auto& body : bodies) seen.emplace_back(body.at("event_id"), body.at("event"));
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, std::string>>{
                      {1, "opened"}, {2, "opened"}, {3, "resolved"}}));
  EXPECT_EQ(bodies[2].at("regression").at("state"), "REGRESSION_STATE_RESOLVED");
  v1::Regression received;
  ASSERT_TRUE(wire::ParseJson(bodies[1].at("regression").dump(), "body", &received).ok());
  EXPECT_EQ(received.SerializeAsString(), second.SerializeAsString());

  EXPECT_EQ(Counter(registry, "webhook", "sent"), 3);
  EXPECT_EQ(Counter(registry, "webhook", "failed"), 1);
  EXPECT_TRUE(notifier.PushOnce(now + absl::Minutes(2)).ok());  // nothing pending: no request
  EXPECT_EQ(Counter(registry, "webhook", "sent"), 3);
}

}  // namespace
}  // namespace devtime::collector::notify
