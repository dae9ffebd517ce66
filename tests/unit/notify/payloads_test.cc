#include "services/collector/notify/payloads.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "tests/unit/notify/sample_regression.h"

namespace devtime::collector::notify {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1795917600);  // 2026-11-29T02:00:00Z
const absl::Duration kFiringFor = absl::Minutes(4);

// The alert for `regression` at kNow, firing for kFiringFor, as the notifier pushes it.
std::optional<nlohmann::json> AlertNow(const v1::Regression& regression,
                                       const std::string& external_url = "") {
  return AlertmanagerAlert(regression, kNow, kFiringFor, external_url);
}

// Regression 7, fired at `fired_at`, in `state`.
v1::Regression InState(v1::RegressionState state, absl::Time fired_at) {
  auto regression = SampleRegression(7, fired_at);
  regression.set_state(state);
  return regression;
}

TEST(AlertmanagerAlert, FiringRegressionCarriesIdentityLabelsAndExpiresAfterFourPasses) {
  auto alert = AlertNow(SampleRegression(7, kNow - absl::Hours(1)), "http://collector:9464");
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("labels"), nlohmann::json({{"alertname", "DevtimeRegression"},
                                                 {"model", "rmsnorm"},
                                                 {"workload", "fused"},
                                                 {"instance_type", "trn1.2xlarge"},
                                                 {"severity", "critical"},
                                                 {"regression_id", "7"}}));
  EXPECT_EQ(alert->at("startsAt"), "2026-11-29T01:00:00Z");
  EXPECT_EQ(alert->at("endsAt"), "2026-11-29T02:04:00Z");
  EXPECT_EQ(alert->at("generatorURL"), "http://collector:9464/regressions/7");
}

// Regression 8: a drift of +3.1 % per 30 runs over 60 runs.
v1::Regression Drift() {
  auto regression = SampleRegression(8, kNow - absl::Hours(1));
  regression.set_kind("drift");
  regression.set_severity("warning");
  regression.set_before(400.0);
  regression.set_after(424.8);
  regression.set_relative_change(0.062);
  regression.mutable_drift()->set_slope_per_30(0.031);
  regression.mutable_drift()->set_start_run_id("run-start");
  regression.mutable_drift()->set_runs(60);
  regression.clear_attribution();
  return regression;
}

TEST(AlertmanagerAlert, ADriftIsLabelledWithItsKind) {
  auto alert = AlertNow(Drift());
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("labels").at("kind"), "drift");
  auto step = SampleRegression(7, kNow);
  step.set_kind("step");
  EXPECT_EQ(AlertNow(step)->at("labels").at("kind"), "step");
}

TEST(Summary, ADriftSaysItsRatePerThirtyRunsAndWhereItStarted) {
  EXPECT_EQ(Summary(Drift()),
            "rmsnorm/fused on trn1.2xlarge: device time per step drifting +3.1 %/30 runs since "
            "run-start (+6.2 % over 60 runs, 400.0 µs -> 424.8 µs)");
  EXPECT_EQ(DriftRate(Drift()), "+3.1 %/30 runs since run-start");
}

TEST(AlertmanagerAlert, AnnotationsSayWhatMovedWhatChangedAndWhichRuns) {
  auto alert = AlertNow(SampleRegression(7, kNow));
  ASSERT_TRUE(alert.has_value());
  const auto& annotations = alert->at("annotations");
  EXPECT_EQ(annotations.at("summary"),
            "rmsnorm/fused on trn1.2xlarge: device time per step +483.9 % (403.3 µs -> 2.355 ms)");
  EXPECT_EQ(annotations.at("top_operators"),
            "aten::mul +1.165 ms/step (new), aten::pow +402.0 µs/step (new), "
            "aten::rms_norm -400.0 µs/step (gone), aten::add +280.2 µs/step (+2 calls), "
            "aten::mean +101.0 µs/step (new)");
  EXPECT_EQ(annotations.at("environment_changes"), "neuronx-cc 2.21 -> 2.22");
  EXPECT_EQ(annotations.at("runs"),
            "last good run-good, first bad run-bad, confirmation run-confirm");
  EXPECT_EQ(annotations.at("state"), "open");
  EXPECT_FALSE(annotations.contains("resolution"));
  EXPECT_FALSE(alert->contains("generatorURL"));
}

TEST(AlertmanagerAlert, TracesAnnotationSaysHowToOpenBothRunsTraceFiles) {
  auto regression = SampleRegression(7, kNow);
  auto add = [](google::protobuf::RepeatedPtrField<v1::Artifact>* traces, const char* kind,
                const char* uri) {
    v1::Artifact* artifact = traces->Add();
    artifact->set_kind(kind);
    artifact->set_uri(uri);
  };
  add(regression.mutable_last_good_traces(), "framework_trace", "file:///t/good/trace.json");
  add(regression.mutable_first_bad_traces(), "ntff", "file:///t/bad/s/a.ntff");
  add(regression.mutable_first_bad_traces(), "neff", "file:///t/bad/s/neffs/a.neff");
  auto alert = AlertNow(regression);
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("annotations").at("traces"),
            "last good: Perfetto UI: trace_processor --httpd '/t/good/trace.json', then open "
            "https://ui.perfetto.dev; or, without trace_processor (not packaged in Debian), "
            "load the file in https://ui.perfetto.dev directly (Open trace file)\n"
            "first bad: Neuron Explorer: neuron-explorer view -d '/t/bad/s'");
  EXPECT_FALSE(AlertNow(SampleRegression(7, kNow))->at("annotations").contains("traces"));
}

TEST(AlertmanagerAlert, AcknowledgedStillFires) {
  auto alert = AlertNow(InState(v1::REGRESSION_STATE_ACKNOWLEDGED, kNow - absl::Hours(1)));
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("endsAt"), "2026-11-29T02:04:00Z");
  EXPECT_EQ(alert->at("annotations").at("state"), "acknowledged");
}

TEST(AlertmanagerAlert, EndedRegressionEndsAtItsEndedAt) {
  auto regression = Resolved(SampleRegression(7, kNow - absl::Hours(2)), kNow - absl::Minutes(10));
  auto alert = AlertNow(regression);
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("startsAt"), "2026-11-29T00:00:00Z");
  EXPECT_EQ(alert->at("endsAt"), "2026-11-29T01:50:00Z");
  EXPECT_EQ(alert->at("annotations").at("state"), "resolved");
  EXPECT_EQ(alert->at("annotations").at("resolution"), "fixed");
  // Same labels as while firing: that is how Alertmanager knows this alert ended.
  EXPECT_EQ(alert->at("labels"), AlertNow(SampleRegression(7, kNow))->at("labels"));
}

TEST(AlertmanagerAlert, InvalidatedAfterFiringEnds) {
  auto regression = InState(v1::REGRESSION_STATE_INVALID, kNow - absl::Hours(2));
  *regression.mutable_ended_at() = ProtoTime(kNow - absl::Minutes(1));
  auto alert = AlertNow(regression);
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("endsAt"), "2026-11-29T01:59:00Z");
}

TEST(AlertmanagerAlert, NeverFiredIsNotAnAlert) {
  auto suspected = InState(v1::REGRESSION_STATE_SUSPECTED, kNow);
  suspected.clear_fired_at();
  EXPECT_FALSE(AlertNow(suspected).has_value());
  auto refuted = suspected;
  refuted.set_state(v1::REGRESSION_STATE_INVALID);
  *refuted.mutable_ended_at() = ProtoTime(kNow);
  EXPECT_FALSE(AlertNow(refuted).has_value());
}

TEST(AlertmanagerAlert, OpenWithoutFiredAtStartsAtCreation) {
  auto regression = SampleRegression(7, kNow);
  regression.clear_fired_at();  // a store bug should not swallow the alert
  auto alert = AlertNow(regression);
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("startsAt"), "2026-11-29T01:30:00Z");
}

TEST(AlertmanagerAlert, NeverEndsBeforeItStarts) {
  // Alertmanager refuses endsAt < startsAt; a fired_at ahead of our clock must not cause that.
  auto alert = AlertNow(SampleRegression(7, kNow + absl::Hours(1)));
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("startsAt"), alert->at("endsAt"));
}

TEST(AlertmanagerAlert, LeavesOutEmptyLabelsAndAnnotations) {
  auto regression = SampleRegression(7, kNow);
  regression.clear_instance_type();
  regression.clear_severity();
  regression.clear_attribution();
  regression.clear_confirmation_run_id();
  auto alert = AlertNow(regression, "http://collector:9464/");
  ASSERT_TRUE(alert.has_value());
  EXPECT_FALSE(alert->at("labels").contains("instance_type"));
  EXPECT_FALSE(alert->at("labels").contains("severity"));
  EXPECT_FALSE(alert->at("annotations").contains("top_operators"));
  EXPECT_FALSE(alert->at("annotations").contains("environment_changes"));
  EXPECT_EQ(alert->at("annotations").at("runs"), "last good run-good, first bad run-bad");
  EXPECT_EQ(alert->at("generatorURL"), "http://collector:9464/regressions/7");
}

TEST(AlertmanagerAlert, WritesASummaryWhenTheStoreHasNone) {
  auto regression = SampleRegression(7, kNow);
  regression.clear_summary();
  auto alert = AlertNow(regression);
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("annotations").at("summary"),
            "rmsnorm/fused on trn1.2xlarge: device_us_per_step +483.9 %");
}

TEST(AlertmanagerAlerts, KeepsOrderAndSkipsWhatIsNotAnAlert) {
  auto suspected = SampleRegression(2, kNow);
  suspected.set_state(v1::REGRESSION_STATE_SUSPECTED);
  suspected.clear_fired_at();
  auto alerts = AlertmanagerAlerts(
      {SampleRegression(3, kNow), suspected, SampleRegression(1, kNow)}, kNow, kFiringFor, "");
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0]["labels"]["regression_id"], "3");
  EXPECT_EQ(alerts[1]["labels"]["regression_id"], "1");
  EXPECT_TRUE(AlertmanagerAlerts({}, kNow, kFiringFor, "").empty());
}

TEST(TopOperators, TakesTheFirstOperatorsOfTheAttribution) {
  auto regression = SampleRegression(7, kNow);
  EXPECT_EQ(TopOperators(regression.attribution(), 2),
            "aten::mul +1.165 ms/step (new), aten::pow +402.0 µs/step (new)");
  EXPECT_EQ(TopOperators(v1::Attribution(), 5), "");
}

TEST(TopOperators, ShowsFractionalCallChangesAndNoneWhenUnchanged) {
  v1::Attribution attribution;
  auto* op = attribution.add_ops();
  op->set_op("aten::copy_");
  op->set_before_us(10);
  op->set_after_us(5);
  op->set_delta_us(-5);
  op->set_before_calls(2);
  op->set_after_calls(1.5);
  auto* same = attribution.add_ops();
  same->set_op("aten::mm");
  same->set_before_us(100);
  same->set_after_us(101);
  same->set_delta_us(1);
  same->set_before_calls(4);
  same->set_after_calls(4);
  EXPECT_EQ(TopOperators(attribution),
            "aten::copy_ -5.0 µs/step (-0.5 calls), aten::mm +1.0 µs/step");
}

TEST(EnvironmentChanges, NamesAbsentValuesAndCountsWhatItLeavesOut) {
  v1::Attribution attribution;
  for (int i = 0; i < 4; ++i) {
    auto* change = attribution.add_environment();
    change->set_key("key" + std::to_string(i));
    change->set_before(i == 1 ? "" : "a,b");
    change->set_after(i == 2 ? "" : "c");
  }
  EXPECT_EQ(EnvironmentChanges(attribution, 3),
            "key0 a,b -> c; key1 (absent) -> c; key2 a,b -> (absent); ... (+1 more)");
  EXPECT_EQ(EnvironmentChanges(attribution, 4),
            "key0 a,b -> c; key1 (absent) -> c; key2 a,b -> (absent); key3 a,b -> c");
}

TEST(EnvironmentChanges, KeepsAnnotationsPrintable) {
  v1::Attribution attribution;
  auto* change = attribution.add_environment();
  change->set_key("FLAGS");
  change->set_before("--a\n--b");
  change->set_after(std::string(500, 'x'));
  std::string text = EnvironmentChanges(attribution);
  EXPECT_EQ(text, "FLAGS --a --b -> " + std::string(200, 'x'));
}

TEST(RunsAnnotation, LeavesOutUnsetRuns) {
  v1::Regression regression;
  EXPECT_EQ(RunsAnnotation(regression), "");
  regression.set_first_bad_run_id("b");
  EXPECT_EQ(RunsAnnotation(regression), "first bad b");
}

TEST(WebhookBody, CarriesTheEventAndTheRegressionInDevtimesJsonForm) {
  auto regression = SampleRegression(7, kNow);
  auto body = WebhookBody(12, "opened", regression, kNow + absl::Milliseconds(250));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->find('\n'), std::string::npos) << "compact, one line";
  auto json = nlohmann::json::parse(*body);
  EXPECT_EQ(json.at("event"), "opened");
  EXPECT_EQ(json.at("event_id"), 12);
  EXPECT_EQ(json.at("sent_at"), "2026-11-29T02:00:00.25Z");
  const auto& r = json.at("regression");
  EXPECT_EQ(r.at("id"), "7");  // int64 is a string in protobuf's JSON mapping
  EXPECT_EQ(r.at("state"), "REGRESSION_STATE_OPEN");
  EXPECT_EQ(r.at("first_bad_run_id"), "run-bad");
  EXPECT_EQ(r.at("fired_at"), "2026-11-29T02:00:00Z");
  v1::Regression parsed;
  ASSERT_TRUE(wire::ParseJson(r.dump(), "body", &parsed).ok());
  EXPECT_EQ(parsed.SerializeAsString(), regression.SerializeAsString());
}

// Issue 25: the culprit hunt's verdict reaches the on-call through both channels.
v1::Regression Hunted(const std::string& verdict) {
  auto regression = SampleRegression(9, kNow - absl::Hours(1));
  auto* hunt = regression.mutable_hunt();
  hunt->set_state(verdict.empty() ? v1::HUNT_STATE_HUNTING : v1::HUNT_STATE_CULPRIT_FOUND);
  hunt->set_verdict(verdict);
  hunt->set_culprit_key("neuronx-cc");
  hunt->set_runs_spent(3);
  return regression;
}

TEST(AlertmanagerAlert, CarriesTheCulpritHuntsVerdict) {
  const std::string verdict =
      "culprit: neuronx-cc 2.21.18 → 2.22.4 — pinned back 403.1 µs (baseline 403.0 µs), "
      "current 2.345 ms; confidence 100.0 %";
  auto alert = AlertNow(Hunted(verdict));
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("annotations").at("culprit"), verdict);
  alert = AlertNow(Hunted(""));
  ASSERT_TRUE(alert.has_value());
  EXPECT_EQ(alert->at("annotations").at("culprit"), "hunting");
  alert = AlertNow(SampleRegression(7, kNow - absl::Hours(1)));
  ASSERT_TRUE(alert.has_value());
  EXPECT_FALSE(alert->at("annotations").contains("culprit")) << "no hunt, no annotation";
}

TEST(WebhookBody, AHuntedEventCarriesTheVerdict) {
  auto body =
      WebhookBody(13, "hunted", Hunted("not the environment: everything pinned back"), kNow);
  ASSERT_TRUE(body.ok()) << body.status();
  auto json = nlohmann::json::parse(*body);
  EXPECT_EQ(json.at("event"), "hunted");
  const auto& hunt = json.at("regression").at("hunt");
  EXPECT_EQ(hunt.at("verdict"), "not the environment: everything pinned back");
  EXPECT_EQ(hunt.at("state"), "HUNT_STATE_CULPRIT_FOUND");
  EXPECT_EQ(hunt.at("culprit_key"), "neuronx-cc");
}

TEST(FormatRfc3339, WritesUtcWithZAndFractionOnlyWhenThereIsOne) {
  EXPECT_EQ(FormatRfc3339(kNow), "2026-11-29T02:00:00Z");
  EXPECT_EQ(FormatRfc3339(kNow + absl::Microseconds(1500)), "2026-11-29T02:00:00.0015Z");
}

TEST(FromProto, KeepsNanoseconds) {
  google::protobuf::Timestamp t;
  t.set_seconds(1795917600);
  t.set_nanos(5);
  EXPECT_EQ(FromProto(t), kNow + absl::Nanoseconds(5));
}

TEST(StateName, NamesEveryState) {
  EXPECT_EQ(wire::RegressionStateName(v1::REGRESSION_STATE_SUSPECTED), "suspected");
  EXPECT_EQ(wire::RegressionStateName(v1::REGRESSION_STATE_INVALID), "invalid");
  EXPECT_EQ(wire::RegressionStateName(v1::REGRESSION_STATE_UNSPECIFIED), "unspecified");
}

}  // namespace
}  // namespace devtime::collector::notify
