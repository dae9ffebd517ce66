#include "services/collector/notify/notifier.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/collector/notify/http_client.h"
#include "services/collector/notify/payloads.h"

namespace devtime::collector::notify {
namespace {

// Firing alerts are stamped to end after this many missed passes (Prometheus uses 4 too).
constexpr int kFiringPasses = 4;

absl::Status Prefixed(const absl::Status& status, const std::string& prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

std::string AlertsUrl(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/api/v2/alerts";
}

absl::Status CheckUrl(const std::string& name, const std::string& url) {
  if (url.empty() || absl::StartsWithIgnoreCase(url, "http://") ||
      absl::StartsWithIgnoreCase(url, "https://")) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": must be an http:// or https:// URL, got \"", url, "\""));
}

}  // namespace

absl::Status ValidateOptions(const NotifierOptions& options) {
  absl::Status status;
  status.Update(CheckUrl("alertmanager_url", options.alertmanager_url));
  status.Update(CheckUrl("webhook_url", options.webhook_url));
  status.Update(CheckUrl("external_url", options.external_url));
  if (options.resend_every.count() <= 0) {
    status.Update(absl::InvalidArgumentError("resend_every: must be positive"));
  }
  if (options.ended_window.count() < 0) {
    status.Update(absl::InvalidArgumentError("ended_window: must not be negative"));
  }
  if (options.request_timeout.count() <= 0) {
    status.Update(absl::InvalidArgumentError("request_timeout: must be positive"));
  }
  return status;
}

void RunPasses(wire::Env& env, std::mutex& mu, std::condition_variable& changed,
               std::chrono::milliseconds period, const std::function<bool()>& stop,
               const std::function<void(absl::Time)>& pass) {
  while (true) {
    {
      std::lock_guard lock(mu);
      if (stop()) return;
    }
    pass(env.Now());
    std::unique_lock lock(mu);
    if (!env.SleepUnless(lock, changed, period, stop)) return;
  }
}

Notifier::Notifier(NotifierOptions options, AlertSource& source, prometheus::Registry& registry)
    : options_(std::move(options)),
      source_(source),
      alertmanager_metrics_(RegisterChannel(registry, "alertmanager")),
      webhook_metrics_(RegisterChannel(registry, "webhook")) {}

Notifier::ChannelMetrics Notifier::RegisterChannel(prometheus::Registry& registry,
                                                   const std::string& name) {
  auto& total = prometheus::BuildCounter()
                    .Name("devtime_notifications_total")
                    .Help("Notification requests by channel and outcome (sent = 2xx answer)")
                    .Register(registry);
  auto& duration = prometheus::BuildHistogram()
                       .Name("devtime_notification_duration_seconds")
                       .Help("Time of one notification request, connection included")
                       .Register(registry);
  return ChannelMetrics{&total.Add({{"channel", name}, {"outcome", "sent"}}),
                        &total.Add({{"channel", name}, {"outcome", "failed"}}),
                        &duration.Add({{"channel", name}}, prometheus::Histogram::BucketBoundaries{
                                                               0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5, 1, 2.5, 5, 10, 30})};
}

absl::Status Notifier::PushOnce(absl::Time now) {
  absl::Status first;  // Update keeps the first error
  if (!options_.alertmanager_url.empty()) {
    first.Update(Prefixed(PushAlerts(now), "alertmanager: "));
  }
  if (!options_.webhook_url.empty()) {
    first.Update(Prefixed(DeliverEvents(now), "webhook: "));
  }
  return first;
}

absl::Status Notifier::PushAlerts(absl::Time now) {
  auto regressions = source_.AlertsToPush(now - absl::FromChrono(options_.ended_window));
  if (!regressions.ok()) return Prefixed(regressions.status(), "cannot read the alerts: ");
  nlohmann::json alerts =
      AlertmanagerAlerts(*regressions, now, kFiringPasses * absl::FromChrono(options_.resend_every),
                         options_.external_url);
  if (alerts.empty()) return absl::OkStatus();
  return PostCounted(alertmanager_metrics_, AlertsUrl(options_.alertmanager_url),
                     CompactJson(alerts));
}

absl::Status Notifier::DeliverEvents(absl::Time now) {
  auto events = source_.PendingEvents(kEventsPerPass);
  if (!events.ok()) return Prefixed(events.status(), "cannot read the pending events: ");
  for (const auto& event : *events) {
    std::string what = absl::StrCat("event ", event.event_id, " (", event.kind, ", regression ",
                                    event.regression.id(), "): ");
    auto body = WebhookBody(event.event_id, event.kind, event.regression, now);
    absl::Status sent =
        body.ok() ? PostCounted(webhook_metrics_, options_.webhook_url, *body) : body.status();
    if (!sent.ok()) {
      // Stop here: delivering the events behind this one would reorder them.
      absl::Status marked = source_.MarkFailed(event.event_id, std::string(sent.message()));
      if (!marked.ok()) {
        return Prefixed(
            sent, absl::StrCat(what, "cannot record the failure (", marked.message(), ") of: "));
      }
      return Prefixed(sent, what);
    }
    if (absl::Status marked = source_.MarkDelivered(event.event_id); !marked.ok()) {
      return Prefixed(marked, absl::StrCat(what,
                                           "delivered, but cannot be marked so "
                                           "(it will be sent again): "));
    }
  }
  return absl::OkStatus();
}

absl::Status Notifier::PostCounted(const ChannelMetrics& metrics, const std::string& url,
                                   const std::string& body) {
  auto start = std::chrono::steady_clock::now();
  auto response = Post(url, body, options_.request_timeout);
  absl::Status status = response.ok() ? ResponseStatus(*response) : response.status();
  metrics.duration->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  (status.ok() ? metrics.sent : metrics.failed)->Increment();
  return status;
}

}  // namespace devtime::collector::notify
