// Issue 24, latency regressions in the regression lifecycle: the collector's store on a real
// PostgreSQL. Monitor windows of two hosts go through MonitorStore::Ingest (which judges the
// hourly series as the collector does); the latency regression it opens is a row of
// `regressions` (kind latency): listed, read, acknowledged and resolved like a step, its
// 'opened' and 'resolved' events in the outbox, pushed to Alertmanager while it fires; the
// hosts that moved are judged on the regression's own metric; and migration 12 moves the rows
// an older collector left in monitor_regressions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "pqxx/pqxx"
#include "services/collector/store/migrations.h"
#include "services/collector/store/monitor_store.h"
#include "services/collector/store/regression_store.h"
#include "tests/support/store_fixture.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::Property;

constexpr int kHours = 96;
constexpr int kStepHour = 72;
constexpr double kDeviceP99Us = 9000;

std::string RunId(int n) { return absl::StrFormat("00000000-0000-4000-8000-%012d", n); }

// A sketch holding `executions` values of `us` (one bucket; min = max = us, so every quantile
// reads `us` back exactly).
v1::LatencySketch Sketch(double us, double executions) {
  constexpr double kAccuracy = 0.005;
  v1::LatencySketch sketch;
  sketch.set_relative_accuracy(kAccuracy);
  const double gamma = (1 + kAccuracy) / (1 - kAccuracy);
  sketch.set_min_index(static_cast<int>(std::ceil(std::log(us) / std::log(gamma))));
  sketch.add_weights(executions);
  sketch.set_min_us(us);
  sketch.set_max_us(us);
  return sketch;
}

// One host's window at `hour` hours after `start_s`: device p99 flat (with a little noise),
// the error rate `error_rate` of its executions.
v1::RunSummary Window(int n, const std::string& host, int64_t start_s, int hour,
                      double error_rate) {
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(RunId(n));
  id->set_model("llama");
  id->set_workload("decode");
  id->set_instance_type("trn1.32xlarge");
  id->set_host(host);
  id->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.set_source(v1::RUN_SOURCE_MONITOR);
  (*run.mutable_environment())["neuron-runtime"] = "2.21.0";
  auto* m = run.mutable_monitor();
  m->mutable_window_start()->set_seconds(start_s + hour * 3600LL);
  m->mutable_window_end()->set_seconds(start_s + (hour + 1) * 3600LL);
  m->set_runtime_tag("llama-serve");
  constexpr uint64_t kExecutions = 20000;
  m->set_executions(kExecutions);
  (*m->mutable_errors())["transient"] =
      static_cast<uint64_t>(std::llround(error_rate * kExecutions / (1 - error_rate)));
  const double us =
      kDeviceP99Us * (1 + 0.003 * std::sin(hour * 1.7 + static_cast<double>(host.size())));
  *m->mutable_device_latency() = Sketch(us, kExecutions);
  *m->mutable_total_latency() = Sketch(us + 1000, kExecutions);
  m->set_device_p50_us(us / 2);
  m->set_device_p99_us(us);
  m->set_total_p99_us(us + 1000);
  return run;
}

class LatencyRegressionsTest : public devtime::testing::StoreFixture {
 protected:
  // Three days of 1 % errors on both hosts, then trn-b alone at 11 % from kStepHour on;
  // device latency never moves.
  void IngestErrorStep() {
    monitor_ = std::make_unique<store::MonitorStore>(*store_);
    int n = 0;
    for (int hour = 0; hour < kHours; ++hour) {
      for (const std::string host : {"trn-a", "trn-b"}) {
        const double rate = host == "trn-b" && hour >= kStepHour ? 0.11 : 0.01;
        auto stored = monitor_->Ingest(Window(++n, host, start_s_, hour, rate));
        ASSERT_TRUE(stored.ok()) << stored.status();
      }
    }
  }

  const int64_t start_s_ = (absl::ToUnixSeconds(absl::Now()) / 86400 - 5) * 86400;
  std::unique_ptr<store::MonitorStore> monitor_;
};

TEST_F(LatencyRegressionsTest, HostsThatMovedAreJudgedOnTheRegressionsOwnMetric) {
  ASSERT_NO_FATAL_FAILURE(IngestErrorStep());
  store::RegressionStore regressions(*store_);
  auto listed = regressions.List({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u) << db_.Query("SELECT string_agg(summary, '; ') FROM regressions");
  const v1::Regression& r = listed->front();
  EXPECT_EQ(r.metric(), "error_rate");
  EXPECT_EQ(r.latency().window_start().seconds(), start_s_ + kStepHour * 3600LL);
  // trn-b's errors moved; its device p99 (and trn-a's) did not: judged on device p99, no host
  // would be named.
  EXPECT_THAT(r.latency().hosts(), ElementsAre(Property(&v1::HostMove::host, Eq("trn-b"))));
  EXPECT_NEAR(r.latency().hosts(0).before(), 0.01, 0.001);
  EXPECT_NEAR(r.latency().hosts(0).after(), 0.11, 0.001);
}

TEST_F(LatencyRegressionsTest, ALatencyRegressionLivesTheRegressionLifecycle) {
  ASSERT_NO_FATAL_FAILURE(IngestErrorStep());
  store::RegressionStore regressions(*store_);
  // Listed with the live ones, of kind latency, with its window and no runs of its own.
  auto listed = regressions.List({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  const int64_t id = listed->front().id();
  EXPECT_EQ(listed->front().kind(), "latency");
  EXPECT_EQ(listed->front().state(), v1::REGRESSION_STATE_OPEN);
  EXPECT_EQ(listed->front().first_bad_run_id(), "");
  EXPECT_EQ(listed->front().latency().window_end().seconds(), start_s_ + (kStepHour + 1) * 3600LL);
  EXPECT_TRUE(listed->front().has_fired_at());

  // Its 'opened' event is in the outbox; it is pushed to Alertmanager while it fires.
  auto events = regressions.PendingEvents(100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().kind, "opened");
  EXPECT_EQ(events->front().regression.id(), id);
  ASSERT_TRUE(regressions.MarkDelivered(events->front().event_id).ok());
  auto alerts = regressions.AlertsToPush(absl::Now() - absl::Hours(1));
  ASSERT_TRUE(alerts.ok()) << alerts.status();
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ(alerts->front().id(), id);

  // Acknowledged, then resolved, by a person; every transition kept.
  auto acked = regressions.Transition(
      {.regression_id = id, .to = v1::REGRESSION_STATE_ACKNOWLEDGED, .actor = "oncall"});
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_EQ(acked->state(), v1::REGRESSION_STATE_ACKNOWLEDGED);
  auto resolved = regressions.Transition({.regression_id = id,
                                          .to = v1::REGRESSION_STATE_RESOLVED,
                                          .resolution = v1::RESOLUTION_FIXED,
                                          .actor = "oncall",
                                          .reason = "runtime rolled back"});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->state(), v1::REGRESSION_STATE_RESOLVED);
  ASSERT_EQ(resolved->transitions_size(), 3);
  EXPECT_EQ(resolved->transitions(2).actor(), "oncall");
  events = regressions.PendingEvents(100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().kind, "resolved");

  // A re-judgment of the same series opens nothing new over the resolved one.
  auto again = monitor_->Judge({"llama", "decode", "trn1.32xlarge"}, start_s_ + kHours * 3600LL);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(db_.Count("regressions"), 1);
}

// A database at schema 11 (the migrations applied as a collector of that version did), with a
// latency regression of the old table; Open applies migration 12.
TEST(LatencyRegressionsMigration, MonitorRegressionsRowsJoinTheRegressions) {
  devtime::testing::TestDatabase db;
  {
    pqxx::connection c(db.conninfo());
    pqxx::work tx{c};
    tx.exec(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())");
    for (const auto& migration : store::AllMigrations()) {
      if (migration.version > 11) break;
      tx.exec(migration.sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                     migration.version, migration.name);
    }
    tx.exec(
        "INSERT INTO monitor_regressions (model, workload, instance_type, window_start,"
        " window_end, last_good_window, metric, before_us, after_us, relative_change, metrics,"
        " hosts, versions, nightly_run_id, summary, created_at) VALUES ('llama', 'decode',"
        " 'trn1.32xlarge', '2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z',"
        " '2026-11-30T09:00:00Z', 'device_p99', 9000, 10350, 0.15,"
        " '[{\"metric\": \"device_p99\", \"before\": 9000, \"after\": 10350,"
        " \"relative_change\": 0.15, \"p_value\": 0.0001}]',"
        " '[{\"host\": \"trn-a\", \"before_us\": 8900, \"after_us\": 10300}]',"
        " '{\"neuron-runtime\": {\"before\": \"2.20.0\", \"after\": \"2.21.0\"}}',"
        " '00000000-0000-4000-8000-000000000001', 'llama/decode: device_p99 +15.0%', now())");
    tx.commit();
  }
  auto opened = devtime::testing::OpenStore(db);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(db.Query("SELECT max(version) FROM schema_migrations"),
            std::to_string(store::AllMigrations().back().version));
  EXPECT_EQ(db.Query("SELECT to_regclass('monitor_regressions') IS NULL"), "t");

  store::RegressionStore regressions(**opened);
  auto listed = regressions.List({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  auto r = regressions.Get(listed->front().id());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind(), "latency");
  EXPECT_EQ(r->state(), v1::REGRESSION_STATE_OPEN);
  EXPECT_EQ(r->severity(), "warning");
  EXPECT_EQ(r->metric(), "device_p99");
  EXPECT_NEAR(r->confidence(), 0.9999, 1e-9);
  EXPECT_EQ(r->latency().window_start().seconds(), 1796032800);  // 2026-11-30T10:00:00Z
  EXPECT_EQ(r->latency().window_end().seconds(), 1796036400);
  EXPECT_EQ(r->latency().last_good_window().seconds(), 1796029200);
  EXPECT_EQ(r->latency().nightly_run_id(), "00000000-0000-4000-8000-000000000001");
  ASSERT_EQ(r->latency().hosts_size(), 1);
  EXPECT_EQ(r->latency().hosts(0).host(), "trn-a");
  EXPECT_EQ(r->latency().hosts(0).after(), 10300);
  ASSERT_EQ(r->attribution().environment_size(), 1);
  EXPECT_EQ(r->attribution().environment(0).after(), "2.21.0");
  ASSERT_EQ(r->series_size(), 1);
  EXPECT_EQ(r->series(0).metric(), "device_p99");
  ASSERT_EQ(r->transitions_size(), 1);
  EXPECT_EQ(r->transitions(0).to(), v1::REGRESSION_STATE_OPEN);
  // Never notified by the old table: its 'opened' event is queued now.
  auto events = regressions.PendingEvents(10);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().kind, "opened");
}

}  // namespace
}  // namespace devtime
