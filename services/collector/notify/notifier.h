// devtime::notify — tells people about regressions, over two channels:
//
//  Alertmanager (stateless). Each pass POSTs every alert that is firing or ended recently to
//    {alertmanager_url}/api/v2/alerts, as Prometheus does with its rules. Alertmanager
//    deduplicates by label set, groups, routes, silences and repeats; resending the full set
//    every pass is what keeps it right after either side restarts. Firing alerts carry
//    endsAt = now + 4 × resend_every, so they end by themselves if the collector stops; ended
//    ones are resent with their real endsAt for ended_window, so an Alertmanager that missed
//    the end still learns it. payloads.h says what one alert holds.
//
//  Webhook (at-least-once, in order). Each state change of a regression is an outbox event in
//    the database (opened, resolved, invalidated). Each pass POSTs the pending ones, oldest
//    first, one request each; a 2xx marks the event delivered, anything else marks it failed
//    and ends the pass, so a later event never overtakes an earlier one. A crash between the
//    POST and MarkDelivered sends the event again: receivers deduplicate on event_id.
//
// Usage (the collector's notification thread):
//   Notifier notifier(options, regression_store, *registry);
//   RunPasses(env, mu, stop_cv, options.resend_every, stopping, [&](absl::Time now) {
//     if (auto s = notifier.PushOnce(now); !s.ok()) log(s);
//   });
//
// Metrics, one observation per HTTP request:
//   devtime_notifications_total{channel="alertmanager"|"webhook",outcome="sent"|"failed"}
//   devtime_notification_duration_seconds{channel}   histogram of request time
//
// Thread-safety: PushOnce must not run concurrently with itself, nor with another Notifier on
// the same AlertSource (both would deliver the same events). Call it from one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devtime/v1/regressions.pb.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/wire/env.h"

namespace devtime::collector::notify {

struct NotifierOptions {
  // Alertmanager base URL, e.g. "http://127.0.0.1:9093"; alerts go to {url}/api/v2/alerts.
  // "" turns the channel off.
  std::string alertmanager_url;
  // The webhook's full URL; "" turns the channel off.
  std::string webhook_url;
  // Base of the links in alerts (generatorURL), e.g. "http://collector:9464"; "" = no link.
  std::string external_url;
  // How often the caller calls PushOnce; firing alerts expire after 4 × this if not resent.
  std::chrono::seconds resend_every{60};
  // Ended alerts are resent with their endsAt for this long after they ended.
  std::chrono::seconds ended_window{3600};
  // Limit for one HTTP request, connection included.
  std::chrono::seconds request_timeout{10};
};

// INVALID_ARGUMENT naming the option when a URL is neither "" nor http(s)://, or a duration is
// not positive. For the collector to check its flags at startup.
absl::Status ValidateOptions(const NotifierOptions& options);

// What the notifier needs from the database (RegressionStore implements it). Methods may fail
// with any status (UNAVAILABLE when the database is away); the notifier reports the error and
// tries again on the next pass.
class AlertSource {
 public:
  virtual ~AlertSource() = default;

  // Regressions in state open or acknowledged, plus resolved/invalid ones whose
  // ended_at >= ended_since. fired_at must be set on every regression that fired, ended_at on
  // every one that ended.
  virtual absl::StatusOr<std::vector<v1::Regression>> AlertsToPush(absl::Time ended_since) = 0;

  struct Event {
    int64_t event_id = 0;  // increasing in the order the events happened
    std::string kind;      // "opened", "resolved" or "invalidated"
    v1::Regression regression;
  };
  // Undelivered events, oldest first, at most `limit`. An event marked failed stays pending
  // (it comes back on the next call, still in its place); the source may give up on an event
  // after many failures, which lets the ones behind it go.
  virtual absl::StatusOr<std::vector<Event>> PendingEvents(int limit) = 0;
  virtual absl::Status MarkDelivered(int64_t event_id) = 0;
  // `error` is short printable UTF-8 ("HTTP 500: <body start>" or why no answer came).
  virtual absl::Status MarkFailed(int64_t event_id, const std::string& error) = 0;
};

// The pass schedule: pass(env.Now()) at once, then again each `period` of env's steady clock
// after the previous pass ended, until `stop()` holds (read under `mu`; whoever makes it hold
// notifies `changed`). Returns once stopping; a pass under way is finished first.
void RunPasses(wire::Env& env, std::mutex& mu, std::condition_variable& changed,
               std::chrono::milliseconds period, const std::function<bool()>& stop,
               const std::function<void(absl::Time)>& pass);

class Notifier {
 public:
  // Registers the metrics in `registry`. `source` and `registry` must outlive the Notifier.
  Notifier(NotifierOptions options, AlertSource& source, prometheus::Registry& registry);
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // One pass over both channels (those switched on). Always tries both; returns the first
  // error (prefixed "alertmanager: " or "webhook: "), OK when everything due was delivered.
  // `now` is the time the alerts are stamped with (endsAt, sent_at), normally absl::Now().
  absl::Status PushOnce(absl::Time now);

  // Events delivered per pass at most; the rest wait for the next pass.
  static constexpr int kEventsPerPass = 100;

 private:
  struct ChannelMetrics {
    prometheus::Counter* sent;
    prometheus::Counter* failed;
    prometheus::Histogram* duration;
  };

  // The channel's series; registering the families again returns the same ones.
  static ChannelMetrics RegisterChannel(prometheus::Registry& registry, const std::string& name);

  absl::Status PushAlerts(absl::Time now);
  absl::Status DeliverEvents(absl::Time now);
  // Posts `body` and counts the request in `metrics`; OK only for a 2xx answer.
  absl::Status PostCounted(const ChannelMetrics& metrics, const std::string& url,
                           const std::string& body);

  NotifierOptions options_;
  AlertSource& source_;
  ChannelMetrics alertmanager_metrics_;
  ChannelMetrics webhook_metrics_;
};

}  // namespace devtime::collector::notify
