// What the notifier puts on the wire, built from a devtime.v1.Regression: the Alertmanager v2
// alert (POST /api/v2/alerts takes a JSON array of these, "postableAlerts" in Alertmanager's
// api/v2/openapi.yaml) and the webhook event body. Pure functions, no I/O.
//
// An Alertmanager alert:
//   labels       alertname="DevtimeRegression", model, workload, instance_type, severity,
//                kind ("step" or "drift"), regression_id (decimal string). Alertmanager identifies
//                an alert by its whole label set, so these never change over a regression's life;
//                empty ones are left out (Alertmanager drops empty labels anyway).
//   annotations  summary, top_operators, environment_changes, runs, traces, state (+ resolution
//                when resolved); empty ones are left out. Annotations may change between pushes.
//   startsAt     fired_at (created_at when the store left fired_at unset)
//   endsAt       ended_at once the regression ended (resolved/invalid, or ended_at set);
//                while firing, now + `firing_for` so the alert ends by itself if the collector
//                stops pushing. Never before startsAt (Alertmanager rejects that).
//   generatorURL external_url + "/regressions/<id>" when external_url is set.
//
// A webhook body:
//   {"event": "opened"|"resolved"|"invalidated", "event_id": 12, "sent_at": RFC 3339,
//    "regression": <the Regression in devtime's JSON form (proto/wire/json.h): snake_case
//                   field names, int64 as strings, enums by name, every field present>}
// event_id is there so a receiver can drop the duplicates that at-least-once delivery brings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devtime/v1/regressions.pb.h"
#include "nlohmann/json.hpp"

namespace devtime::collector::notify {

inline constexpr char kAlertName[] = "DevtimeRegression";

// The Alertmanager alert for `regression`, or nullopt when it is not to be pushed: a regression
// that neither fires (open, acknowledged) nor has ended after firing (suspected, or invalid
// without having fired) is not an alert.
std::optional<nlohmann::json> AlertmanagerAlert(const v1::Regression& regression, absl::Time now,
                                                absl::Duration firing_for,
                                                const std::string& external_url);

// The JSON array of the alerts for `regressions` (those AlertmanagerAlert pushes), in order.
nlohmann::json AlertmanagerAlerts(const std::vector<v1::Regression>& regressions, absl::Time now,
                                  absl::Duration firing_for, const std::string& external_url);

// "aten::mul +1.165 ms/step (+2 calls), aten::add -3.1 µs/step (new), ...": the first `limit`
// operators of the attribution (it lists the largest |delta| first).
std::string TopOperators(const v1::Attribution& attribution, std::size_t limit = 5);

// "neuronx-cc 2.21 -> 2.22; NEURON_RT_VERSION (absent) -> 2.20": at most `limit` changes, then
// "; ... (+N more)". Semicolons, because values (compiler flags) often hold commas.
std::string EnvironmentChanges(const v1::Attribution& attribution, std::size_t limit = 10);

// "last good <id>, first bad <id>, confirmation <id>", without the parts that are unset.
std::string RunsAnnotation(const v1::Regression& regression);
// How to open the last good and the first bad run's trace files (proto/wire/trace_links.h),
// one line each: "last good: Perfetto UI: trace_processor --httpd '/traces/m/w/<id>/trace.json',
// then open https://ui.perfetto.dev\nfirst bad: ..."; "" when neither run has any.
std::string TracesAnnotation(const v1::Regression& regression);
// The regression in one line, stored as its summary and shown in lists, e.g.
// "rmsnorm/fused on trn1.2xlarge: device time per step +484.0 % (403.3 µs -> 2.355 ms);
//  top: aten::mul +1.165 ms/step (new), ...; changed: neuronx-cc 2.21 -> 2.22"; a drift:
// "... device time per step drifting +3.1 %/30 runs since <run> (+6.2 % over 60 runs,
//  400.0 µs -> 424.8 µs); top: ...". Change and times as proto/wire/change.h writes them:
// the change is the stored one, the first bad run against the detector's baseline.
std::string Summary(const v1::Regression& regression);

// A drift's rate: "+3.1 %/30 runs since <start run>".
std::string DriftRate(const v1::Regression& regression);

// The webhook body described above (compact JSON).
absl::StatusOr<std::string> WebhookBody(int64_t event_id, const std::string& kind,
                                        const v1::Regression& regression, absl::Time sent_at);

// `json` as compact text; invalid UTF-8 (which should never occur) becomes U+FFFD.
std::string CompactJson(const nlohmann::json& json);

// RFC 3339 in UTC with a "Z", fractional seconds only when there are any.
std::string FormatRfc3339(absl::Time t);
absl::Time FromProto(const google::protobuf::Timestamp& t);

}  // namespace devtime::collector::notify
