#include "services/collector/notify/payloads.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/wire/change.h"
#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "proto/wire/trace_links.h"
#include "services/collector/notify/http_client.h"

namespace devtime::collector::notify {
namespace {

// Annotation values come from uploaded data (operator names, environment values); keep each
// piece readable in a chat message.
constexpr std::size_t kMaxPieceBytes = 200;

// "+2", "-0.5", "+1024": one decimal, without a useless ".0".
std::string Signed(double value) {
  std::string text = absl::StrFormat("%+.1f", value);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text;
}

std::string OperatorDelta(const v1::OpDelta& op) {
  std::string text = absl::StrCat(PrintablePrefix(op.op(), kMaxPieceBytes), " ",
                                  wire::SignedTime(op.delta_us()), "/step");
  bool absent_before = op.before_us() == 0 && op.before_calls() == 0;
  bool absent_after = op.after_us() == 0 && op.after_calls() == 0;
  double calls = op.after_calls() - op.before_calls();
  if (absent_before && !absent_after) {
    absl::StrAppend(&text, " (new)");
  } else if (absent_after && !absent_before) {
    absl::StrAppend(&text, " (gone)");
  } else if (std::abs(calls) >= 0.05) {
    absl::StrAppend(&text, " (", Signed(calls), " calls)");
  }
  return text;
}

std::string FallbackSummary(const v1::Regression& r) {
  return absl::StrFormat("%s/%s on %s: %s %s", r.model(), r.workload(),
                         r.instance_type().empty() ? "unknown instance" : r.instance_type(),
                         r.metric().empty() ? "device time per step" : r.metric(),
                         wire::FormatFraction(r.relative_change()));
}

std::string ResolutionName(v1::Resolution resolution) {
  switch (resolution) {
    case v1::RESOLUTION_FIXED:
      return "fixed";
    case v1::RESOLUTION_ACCEPTED_BASELINE:
      return "accepted as the new baseline";
    default:
      return "";
  }
}

void SetIfNotEmpty(nlohmann::json& object, const char* key, const std::string& value) {
  if (!value.empty()) object[key] = value;
}

}  // namespace

std::string CompactJson(const nlohmann::json& json) {
  // Invalid UTF-8 should never reach here, but a notification is not worth an exception.
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

std::string FormatRfc3339(absl::Time t) {
  // %Ez would print "+00:00"; "Z" is what everyone else (Alertmanager included) writes.
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

std::string TopOperators(const v1::Attribution& attribution, std::size_t limit) {
  std::vector<std::string> pieces;
  for (const auto& op : attribution.ops()) {
    if (pieces.size() == limit) break;
    pieces.push_back(OperatorDelta(op));
  }
  return absl::StrJoin(pieces, ", ");
}

std::string EnvironmentChanges(const v1::Attribution& attribution, std::size_t limit) {
  std::vector<std::string> pieces;
  auto value = [](const std::string& v) {
    return v.empty() ? std::string("(absent)") : PrintablePrefix(v, kMaxPieceBytes);
  };
  for (const auto& change : attribution.environment()) {
    if (pieces.size() == limit) {
      pieces.push_back(absl::StrCat("... (+", attribution.environment_size() - limit, " more)"));
      break;
    }
    pieces.push_back(absl::StrCat(PrintablePrefix(change.key(), kMaxPieceBytes), " ",
                                  value(change.before()), " -> ", value(change.after())));
  }
  return absl::StrJoin(pieces, "; ");
}

std::string RunsAnnotation(const v1::Regression& regression) {
  std::vector<std::string> pieces;
  if (!regression.last_good_run_id().empty()) {
    pieces.push_back("last good " + regression.last_good_run_id());
  }
  if (!regression.first_bad_run_id().empty()) {
    pieces.push_back("first bad " + regression.first_bad_run_id());
  }
  if (!regression.confirmation_run_id().empty()) {
    pieces.push_back("confirmation " + regression.confirmation_run_id());
  }
  // A latency regression has no runs of its own: the nightly profile it links to.
  if (!regression.latency().nightly_run_id().empty()) {
    pieces.push_back("nightly " + regression.latency().nightly_run_id());
  }
  return absl::StrJoin(pieces, ", ");
}

std::string TracesAnnotation(const v1::Regression& regression) {
  std::vector<std::string> lines;
  for (const auto& [which, traces] : {std::pair{"last good: ", &regression.last_good_traces()},
                                      std::pair{"first bad: ", &regression.first_bad_traces()}}) {
    for (const std::string& opening : wire::OpeningLines(*traces)) {
      lines.push_back(which + PrintablePrefix(opening, 2 * kMaxPieceBytes));
    }
  }
  return absl::StrJoin(lines, "\n");
}

std::optional<nlohmann::json> AlertmanagerAlert(const v1::Regression& regression, absl::Time now,
                                                absl::Duration firing_for,
                                                const std::string& external_url) {
  bool firing = wire::IsFiring(regression.state()) && !regression.has_ended_at();
  bool ended = !firing &&
               (regression.has_ended_at() || regression.state() == v1::REGRESSION_STATE_RESOLVED ||
                regression.state() == v1::REGRESSION_STATE_INVALID);
  // Ending an alert that never fired would only make Alertmanager store a resolved alert.
  if (!firing && !(ended && regression.has_fired_at())) return std::nullopt;

  absl::Time starts = regression.has_fired_at()     ? FromProto(regression.fired_at())
                      : regression.has_created_at() ? FromProto(regression.created_at())
                                                    : now;
  absl::Time ends = firing                      ? now + firing_for
                    : regression.has_ended_at() ? FromProto(regression.ended_at())
                                                : now;
  ends = std::max(ends, starts);

  nlohmann::json labels = {{"alertname", kAlertName},
                           {"regression_id", std::to_string(regression.id())}};
  SetIfNotEmpty(labels, "model", regression.model());
  SetIfNotEmpty(labels, "workload", regression.workload());
  SetIfNotEmpty(labels, "instance_type", regression.instance_type());
  SetIfNotEmpty(labels, "severity", regression.severity());
  SetIfNotEmpty(labels, "kind", regression.kind());

  nlohmann::json annotations = nlohmann::json::object();
  SetIfNotEmpty(annotations, "summary",
                regression.summary().empty() ? FallbackSummary(regression) : regression.summary());
  SetIfNotEmpty(annotations, "top_operators", TopOperators(regression.attribution()));
  SetIfNotEmpty(annotations, "environment_changes", EnvironmentChanges(regression.attribution()));
  SetIfNotEmpty(annotations, "runs", RunsAnnotation(regression));
  SetIfNotEmpty(annotations, "traces", TracesAnnotation(regression));
  if (regression.kind() == "latency") {  // issue 24: where between the nights, which hosts
    const v1::LatencyWindow& window = regression.latency();
    SetIfNotEmpty(annotations, "window",
                  FormatRfc3339(FromProto(window.window_start())) + " .. " +
                      FormatRfc3339(FromProto(window.window_end())));
    std::vector<std::string> hosts;
    constexpr int kListedHosts = 10;  // a fleet-wide change moves thousands
    for (const auto& host : window.hosts()) {
      if (static_cast<int>(hosts.size()) == kListedHosts) {
        hosts.push_back(absl::StrCat("... (+", window.hosts_size() - kListedHosts, " more)"));
        break;
      }
      hosts.push_back(PrintablePrefix(host.host(), kMaxPieceBytes));
    }
    SetIfNotEmpty(annotations, "hosts_moved", absl::StrJoin(hosts, ", "));
  }
  // Issue 25: the culprit hunt's verdict ("culprit: ...", "not the environment: ...").
  if (regression.has_hunt()) {
    SetIfNotEmpty(
        annotations, "culprit",
        regression.hunt().verdict().empty() ? std::string("hunting") : regression.hunt().verdict());
  }
  SetIfNotEmpty(annotations, "state", wire::RegressionStateName(regression.state()));
  if (regression.state() == v1::REGRESSION_STATE_RESOLVED) {
    SetIfNotEmpty(annotations, "resolution", ResolutionName(regression.resolution()));
  }

  nlohmann::json alert = {{"labels", labels},
                          {"annotations", annotations},
                          {"startsAt", FormatRfc3339(starts)},
                          {"endsAt", FormatRfc3339(ends)}};
  if (!external_url.empty()) {
    std::string base = external_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    alert["generatorURL"] = absl::StrCat(base, "/regressions/", regression.id());
  }
  return alert;
}

nlohmann::json AlertmanagerAlerts(const std::vector<v1::Regression>& regressions, absl::Time now,
                                  absl::Duration firing_for, const std::string& external_url) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const auto& regression : regressions) {
    if (auto alert = AlertmanagerAlert(regression, now, firing_for, external_url)) {
      alerts.push_back(std::move(*alert));
    }
  }
  return alerts;
}

absl::StatusOr<std::string> WebhookBody(int64_t event_id, const std::string& kind,
                                        const v1::Regression& regression, absl::Time sent_at) {
  auto json = nlohmann::json::parse(wire::ToJson(regression), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(
        absl::StrCat("regression ", regression.id(), ": its JSON form does not parse"));
  }
  nlohmann::json body = {{"event", kind},
                         {"event_id", event_id},
                         {"sent_at", FormatRfc3339(sent_at)},
                         {"regression", std::move(json)}};
  return CompactJson(body);
}

std::string DriftRate(const v1::Regression& regression) {
  return absl::StrFormat("%+.1f %%/30 runs since %s", 100.0 * regression.drift().slope_per_30(),
                         regression.drift().start_run_id());
}

std::string Summary(const v1::Regression& regression) {
  std::string what = regression.metric() == "cpu_us_per_step" ? "CPU" : "device";
  std::string where =
      absl::StrCat(regression.model(), "/", regression.workload(),
                   regression.instance_type().empty() ? "" : " on " + regression.instance_type());
  std::string text =
      regression.kind() == "drift"
          ? absl::StrFormat("%s: %s time per step drifting %s (%s over %d runs, %s -> %s)", where,
                            what, DriftRate(regression),
                            wire::FormatFraction(regression.relative_change()),
                            regression.drift().runs(), wire::ScaledTime(regression.before()),
                            wire::ScaledTime(regression.after()))
          : absl::StrFormat("%s: %s time per step %s (%s -> %s)", where, what,
                            wire::FormatFraction(regression.relative_change()),
                            wire::ScaledTime(regression.before()),
                            wire::ScaledTime(regression.after()));
  std::string top = TopOperators(regression.attribution(), 3);
  if (!top.empty()) text += "; top: " + top;
  std::string env = EnvironmentChanges(regression.attribution());
  if (!env.empty()) text += "; changed: " + env;
  return text;
}

}  // namespace devtime::collector::notify
