// The store (Database, RunStore, RegressionStore) against a real PostgreSQL: idempotent
// ingest, series points, queries, migrations. (deploy/test.sh provides the cluster.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/base/casts.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/message_differencer.h"
#include "services/collector/store/migrations.h"
#include "services/collector/store/regression_store.h"
#include "services/collector/store/run_store.h"
#include "services/collector/store/series.h"
#include "tests/bench/ingest/wide_run.h"
#include "tests/support/sample_runs.h"
#include "tests/support/store_fixture.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime::store {
namespace {

using devtime::testing::NaiveRmsNormRun;
using devtime::testing::OpenStore;
using devtime::testing::TestRunId;

using StoreTest = devtime::testing::StoreFixture;

TEST_F(StoreTest, StoresRunAndReturnsExactlyWhatWasUploaded) {
  auto run = NaiveRmsNormRun(TestRunId(1));
  auto outcome = runs_->IngestRun(run);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->result, IngestResult::kStored);

  auto back = runs_->GetRun(TestRunId(1));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back->run(), run));
  EXPECT_EQ(back->info().op_count(), 4u);
  EXPECT_EQ(back->info().step_count(), 3u);
  EXPECT_NEAR(back->info().total_device_us(), 2354.9 * 3, 1e-6);
  EXPECT_EQ(db_.Count("op_stats"), 4);
  EXPECT_EQ(db_.Count("run_steps"), 3);
  EXPECT_EQ(db_.Query("SELECT environment->>'neuronx-cc' FROM runs"), "2.21.0");
}

TEST_F(StoreTest, SecondUploadOfSameRunIsDuplicateAndStoresNothingNew) {
  auto run = NaiveRmsNormRun(TestRunId(2));
  auto first = runs_->IngestRun(run);
  auto second = runs_->IngestRun(run);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->result, IngestResult::kStored);
  EXPECT_EQ(second->result, IngestResult::kDuplicate);
  EXPECT_EQ(second->received_at.SerializeAsString(), first->received_at.SerializeAsString());
  EXPECT_EQ(db_.Count("runs"), 1);
  EXPECT_EQ(db_.Count("op_stats"), 4);
  EXPECT_EQ(db_.Count("series_points"), 5);
}

TEST_F(StoreTest, ConcurrentUploadsOfOneRunStoreItOnce) {
  auto run = NaiveRmsNormRun(TestRunId(3));
  constexpr int kUploaders = 8;
  std::vector<absl::StatusOr<IngestOutcome>> results(kUploaders, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kUploaders; ++i) {
    threads.emplace_back([&, i] { results[i] = runs_->IngestRun(run); });
  }
  for (auto& t : threads) t.join();
  int stored = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    stored += r->result == IngestResult::kStored;
  }
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(db_.Count("runs"), 1);
  EXPECT_EQ(db_.Count("op_stats"), 4);
}

TEST_F(StoreTest, ConcurrentDifferentRunsOfOneSeriesAllStore) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto r = runs_->IngestRun(NaiveRmsNormRun(TestRunId(100 + i), "naive", 1795917600 + i));
      if (!r.ok() || r->result != IngestResult::kStored) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(db_.Count("runs"), 8);
  EXPECT_EQ(db_.Count("series"), 5);  // whole run + 4 operators, shared by all 8 runs
  EXPECT_EQ(db_.Count("series_points"), 40);
}

// A first run creates its series with one plain INSERT; when another collector's ingest
// created some of them first (here: still uncommitted, so this ingest waits for it), the
// INSERT's unique violation sends it to the careful path, which takes the other's ids.
TEST_F(StoreTest, SeriesCreatedMeanwhileByAnotherIngestAreSharedNotDuplicated) {
  v1::RunSummary run = NaiveRmsNormRun(TestRunId(1), "naive", 1795917600);
  const auto& id = run.identity();
  pqxx::connection other_collector{db_.conninfo()};
  pqxx::work creating{other_collector};
  const long long theirs = creating
                               .exec_params1(
                                   "INSERT INTO series (model, workload, instance_type, metric, op)"
                                   " VALUES ($1, $2, $3, $4, $5) RETURNING series_id",
                                   id.model(), id.workload(), id.instance_type(),
                                   store::MetricOf(run), run.ops(1).name())[0]
                               .as<long long>();
  absl::StatusOr<store::IngestOutcome> outcome;
  std::thread ingest([&] { outcome = runs_->IngestRun(run); });
  const bool waiting = devtime::testing::WaitUntil(
      [&] {
        return db_.Query(
                   "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                   " AND datname = current_database()") != "0";
      },
      std::chrono::seconds(30), std::chrono::milliseconds(20));
  creating.commit();
  ingest.join();
  ASSERT_TRUE(waiting) << "the ingest never waited for the other collector's series";
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->result, store::IngestResult::kStored);
  EXPECT_EQ(db_.Count("series"), 5);  // whole run + 4 operators, one of them the other's
  EXPECT_EQ(
      db_.Query("SELECT count(*) FROM series_points WHERE series_id = " + std::to_string(theirs)),
      "1");

  // A collector that knows none of the group's ids (a restart) finds them in one scan and
  // creates only its new operator's series.
  store::RunStore restarted{*store_};
  v1::RunSummary next = NaiveRmsNormRun(TestRunId(2), "naive", 1795917600 + 86400);
  auto* extra = next.add_ops();
  *extra = next.ops(0);
  extra->set_name("aten::extra");
  auto stored = restarted.IngestRun(next);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(db_.Count("series"), 6);
  EXPECT_EQ(db_.Count("series_points"), 11);

  // With the group cached, a run's one new operator is looked up by name, then created.
  v1::RunSummary third = NaiveRmsNormRun(TestRunId(3), "naive", 1795917600 + 2 * 86400);
  *third.add_ops() = next.ops(next.ops_size() - 1);
  third.mutable_ops(third.ops_size() - 1)->set_name("aten::another");
  stored = restarted.IngestRun(third);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(db_.Count("series"), 7);
  EXPECT_EQ(db_.Count("series_points"), 17);
}

TEST_F(StoreTest, SameRunIdWithDifferentContentIsRejectedAndOriginalKept) {
  auto run = NaiveRmsNormRun(TestRunId(4));
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  auto changed = run;
  changed.mutable_ops(0)->set_self_device_us(1.0);
  auto outcome = runs_->IngestRun(changed);
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(outcome.status().message()), ::testing::HasSubstr("run.identity.run_id"));
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(runs_->GetRun(TestRunId(4))->run(), run));
}

TEST_F(StoreTest, SeriesPointsArePerStepMeansWithWithinRunNoise) {
  ASSERT_TRUE(runs_->IngestRun(NaiveRmsNormRun(TestRunId(5))).ok());
  // aten::mul: step samples 1164.5 * {0.99, 1.00, 1.01}: mean 1164.5, stddev 11.645.
  auto mul = db_.Query(
      "SELECT round(value::numeric, 3) || ' ' || round(noise::numeric, 3) FROM series_points "
      "JOIN series USING (series_id) WHERE op = 'aten::mul' AND metric = 'device_us_per_step'");
  EXPECT_EQ(mul, "1164.500 11.645");
  // The whole run: mean of the step totals 2354.9 * {0.99, 1.00, 1.01}.
  auto total = db_.Query(
      "SELECT round(value::numeric, 3) FROM series_points JOIN series USING (series_id) "
      "WHERE op = ''");
  EXPECT_EQ(total, "2354.900");
}

TEST_F(StoreTest, OperatorPointsEqualPostgresAggregatesOfTheirStepSamples) {
  // Ingest computes the points in C++; they must be what PostgreSQL's avg() and
  // stddev_samp() over the stored samples give (how they were computed before), also for
  // operators with one sample, none, and names that need quoting in an array literal.
  auto run = devtime::bench::WideRun(TestRunId(6), "wide", 1795917600, {.ops = 300, .steps = 10});
  run.mutable_ops(1)->mutable_step_self_device_us()->Truncate(1);
  run.mutable_ops(2)->clear_step_self_device_us();
  run.mutable_ops(3)->set_name("aten::\"odd\", {name}\\ NULL");
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  EXPECT_EQ(db_.Count("series_points"), 301);
  const std::string sql =
      "SELECT count(*) FROM op_stats o JOIN series s ON s.op = o.op"
      " JOIN series_points p ON p.series_id = s.series_id AND p.run_id = o.run_id,"
      " LATERAL (SELECT CASE WHEN cardinality(o.step_self_device_us) > 0"
      "   THEN (SELECT avg(x) FROM unnest(o.step_self_device_us) x)"
      "   ELSE o.self_device_us / 10 END AS value,"
      "  (SELECT stddev_samp(x) FROM unnest(o.step_self_device_us) x) AS noise) q"
      " WHERE abs(p.value - q.value) <= 1e-9 * abs(q.value)"
      " AND ((p.noise IS NULL AND q.noise IS NULL) OR abs(p.noise - q.noise) <= 1e-9 * q.noise)";
  EXPECT_EQ(db_.Query(sql), "300");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM series_points WHERE noise IS NULL"), "2");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM series WHERE op LIKE 'aten::\"odd\", {name}%'"), "1");
}

// Every double as its 64 bits in hex, as PostgreSQL's encode(float8send(x), 'hex') gives it.
std::string Bits(double x) { return absl::StrFormat("%016x", absl::bit_cast<uint64_t>(x)); }

TEST_F(StoreTest, OperatorAndStepRowsHoldEveryUploadedValueExactly) {
  // The rows cross as binary arrays (database.h): every number must arrive bit for bit, each
  // operator with its own slice of the samples, in order, an empty slice as '{}'.
  auto run = devtime::bench::WideRun(TestRunId(7), "exact", 1795917600, {.ops = 40, .steps = 4});
  run.mutable_ops(5)->clear_step_self_device_us();
  run.mutable_ops(6)->mutable_step_self_device_us()->Truncate(1);
  run.mutable_ops(7)->set_name("aten::\"odd\", {name}\\ NULL \u00fc");
  run.mutable_ops(8)->set_calls(9007199254740993ULL);  // not exact in a double
  run.mutable_steps(1)->set_device_us(0.1);
  ASSERT_TRUE(runs_->IngestRun(run).ok());

  std::vector<std::string> ops;
  for (const auto& op : run.ops()) {
    std::string row = op.name() + "|" + std::to_string(op.calls()) + "|" + Bits(op.self_cpu_us()) +
                      "|" + Bits(op.total_cpu_us()) + "|" + Bits(op.self_device_us()) + "|" +
                      Bits(op.total_device_us()) + "|";
    for (int i = 0; i < op.step_self_device_us_size(); ++i) {
      row += (i ? "," : "") + Bits(op.step_self_device_us(i));
    }
    ops.push_back(row + ";");
  }
  std::sort(ops.begin(), ops.end());
  std::string steps;
  for (const auto& step : run.steps()) {
    steps += std::to_string(step.step()) + "|" + Bits(step.device_us()) + "|" +
             Bits(step.cpu_us()) + ";";
  }
  auto hex = [](const std::string& x) { return "encode(float8send(" + x + "), 'hex')"; };
  EXPECT_EQ(
      db_.Query("SELECT string_agg(op || '|' || calls || '|' || " + hex("self_cpu_us") +
                " || '|' || " + hex("total_cpu_us") + " || '|' || " + hex("self_device_us") +
                " || '|' || " + hex("total_device_us") + " || '|' || coalesce((SELECT string_agg(" +
                hex("x") +
                ", ',' ORDER BY i) FROM unnest(step_self_device_us) WITH ORDINALITY u (x, i)),"
                " '') || ';', '' ORDER BY op || '|' COLLATE \"C\") FROM op_stats"),
      absl::StrJoin(ops, ""));
  EXPECT_EQ(db_.Query("SELECT string_agg(step || '|' || " + hex("device_us") + " || '|' || " +
                      hex("cpu_us") + " || ';', '' ORDER BY step) FROM run_steps"),
            steps);
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats WHERE step_self_device_us = '{}'"), "1");
}

TEST_F(StoreTest, InvalidRunIsHistoryButNeverADataPoint) {
  auto run = NaiveRmsNormRun(TestRunId(6));
  run.set_status(v1::RUN_STATUS_INVALID);
  run.set_status_reason("device time is empty although neuron was profiled");
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  EXPECT_EQ(db_.Count("runs"), 1);
  EXPECT_EQ(db_.Count("series_points"), 0);
  auto listed = runs_->ListRuns({});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].status(), v1::RUN_STATUS_INVALID);
  EXPECT_EQ((*listed)[0].status_reason(), run.status_reason());
}

TEST_F(StoreTest, ListRunsFiltersByModelWorkloadSinceAndLimit) {
  const long long night = 1795917600;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        runs_->IngestRun(NaiveRmsNormRun(TestRunId(10 + i), "naive", night + i * 86400)).ok());
    ASSERT_TRUE(
        runs_->IngestRun(NaiveRmsNormRun(TestRunId(20 + i), "fused", night + i * 86400)).ok());
  }
  RunFilter filter;
  filter.workload = "fused";
  auto fused = runs_->ListRuns(filter);
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_EQ(fused->size(), 5u);
  EXPECT_EQ((*fused)[0].identity().run_id(), TestRunId(24));  // newest first

  filter.since = google::protobuf::Timestamp();
  filter.since->set_seconds(night + 3 * 86400);
  EXPECT_EQ(runs_->ListRuns(filter)->size(), 2u);

  RunFilter limited;
  limited.limit = 3;
  EXPECT_EQ(runs_->ListRuns(limited)->size(), 3u);
  RunFilter other_model;
  other_model.model = "llama";
  EXPECT_TRUE(runs_->ListRuns(other_model)->empty());
}

TEST_F(StoreTest, ListModelsGroupsWorkloads) {
  ASSERT_TRUE(runs_->IngestRun(NaiveRmsNormRun(TestRunId(30), "naive")).ok());
  ASSERT_TRUE(runs_->IngestRun(NaiveRmsNormRun(TestRunId(31), "fused")).ok());
  auto run = NaiveRmsNormRun(TestRunId(32), "block");
  run.mutable_identity()->set_model("transformer");
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  auto models = runs_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].model(), "rmsnorm");
  EXPECT_THAT((*models)[0].workloads(), ::testing::ElementsAre("fused", "naive"));
  EXPECT_EQ((*models)[0].run_count(), 2u);
  EXPECT_EQ((*models)[1].model(), "transformer");
}

TEST_F(StoreTest, GetRunOfUnknownOrMalformedId) {
  EXPECT_EQ(runs_->GetRun(TestRunId(999)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runs_->GetRun("not-a-uuid").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, MigrationsApplyOnceAcrossRestarts) {
  auto again = OpenStore(db_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->schema_version(), AllMigrations().back().version);
  EXPECT_EQ(db_.Count("schema_migrations"), static_cast<long long>(AllMigrations().size()));
}

TEST_F(StoreTest, RefusesDatabaseFromANewerCollector) {
  db_.Query(
      "INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future') RETURNING 1");
  auto again = OpenStore(db_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.status().message()), ::testing::HasSubstr("999"));
}

TEST_F(StoreTest, ConnectionsKilledMidStatementAreRetriedNotReportedAsErrors) {
  // A big run keeps the op_stats INSERT busy; meanwhile its backend is terminated (what a
  // PostgreSQL shutdown does: SQLSTATE 57P01 in the middle of the statement).
  auto run = NaiveRmsNormRun(TestRunId(40));
  for (int i = 0; i < 20000 - 4; ++i) {
    auto* op = run.add_ops();
    op->set_name("op" + std::to_string(i));
    op->set_calls(1);
    for (int s = 0; s < 3; ++s) op->add_step_self_device_us(1.0);
  }
  std::atomic<bool> done{false};
  std::thread killer([&] {
    pqxx::connection admin{db_.conninfo()};
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    while (!done && std::chrono::steady_clock::now() < until) {
      pqxx::nontransaction tx{admin};
      tx.exec(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
          "current_database() AND pid <> pg_backend_pid() AND state = 'active'");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  auto outcome = runs_->IngestRun(run);
  done = true;
  killer.join();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(db_.Count("runs"), 1);
  EXPECT_EQ(db_.Count("op_stats"), 20000);
}

TEST_F(StoreTest, ShutdownErrorsMidStatementCountAsLostConnections) {
  pqxx::connection open{db_.conninfo()};
  EXPECT_TRUE(IsConnectionLoss(
      pqxx::sql_error("FATAL:  terminating connection due to administrator command",
                      "COPY op_stats", "57P01"),
      open));
  EXPECT_TRUE(IsConnectionLoss(pqxx::sql_error("connection failure", "SELECT 1", "08006"), open));
  EXPECT_FALSE(IsConnectionLoss(pqxx::sql_error("duplicate key", "INSERT", "23505"), open));
  EXPECT_FALSE(IsConnectionLoss(pqxx::sql_error("syntax error", "SELEKT", "42601"), open));
}

// Under load the killer above sometimes lands inside a COPY, and libpqxx reports that as a
// plain pqxx::failure ("Error writing to table: server closed the connection unexpectedly"),
// neither broken_connection nor sql_error. Here the server goes away deterministically in
// the middle of the first attempt's COPY.
TEST_F(StoreTest, ACopyWhoseServerWentAwayIsRetriedLikeAnyLostConnection) {
  int attempts = 0;
  auto status = store_->Run("copy while the server goes away", [&](pqxx::connection_base& c) {
    ++attempts;
    pqxx::work tx{c};
    tx.exec("CREATE TEMP TABLE copied (n int)");
    const auto pid = tx.exec("SELECT pg_backend_pid()")[0][0].as<int>();
    pqxx::stream_to out{tx, "copied", std::vector<std::string>{"n"}};
    if (attempts == 1) {
      pqxx::connection admin{db_.conninfo()};
      pqxx::nontransaction{admin}.exec_params("SELECT pg_terminate_backend($1)", pid);
    }
    for (int n = 0; n < 1000000; ++n) out << std::make_tuple(n);
    out.complete();
    tx.commit();
    return absl::OkStatus();
  });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(attempts, 2);
}

TEST(StoreOpen, UnreachableDatabaseIsUnavailableWithTheReason) {
  StoreOptions options;
  options.conninfo = "host=127.0.0.1 port=1 dbname=devtime user=devtime";
  options.attempts = 2;
  auto store = Database::Open(options, std::chrono::seconds(0));
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(store.status().message()), ::testing::HasSubstr("port 1"));
}

TEST_F(StoreTest, NotificationOutboxKeepsFailedEventsInOrderAndGivesUpAfterAWeek) {
  ASSERT_TRUE(runs_->IngestRun(devtime::testing::NaiveRmsNormRun(TestRunId(1))).ok());
  ASSERT_TRUE(runs_->IngestRun(devtime::testing::NaiveRmsNormRun(TestRunId(2))).ok());
  RegressionStore regressions(*store_);
  int64_t id = 0;
  ASSERT_TRUE(store_
                  ->Run("create",
                        [&](pqxx::connection_base& c) {
                          pqxx::work tx{c};
                          analyze::NewRegression created;
                          created.series = {.model = "rmsnorm",
                                            .workload = "naive",
                                            .metric = "device_us_per_step"};
                          created.severity = "critical";
                          created.host = "trn-a";
                          created.last_good_run_id = TestRunId(1);
                          created.first_bad_run_id = TestRunId(2);
                          created.reason = "test";
                          id = regression_sql::Insert(tx, created);
                          auto opened =
                              regression_sql::Transition(tx, {.regression_id = id,
                                                              .to = v1::REGRESSION_STATE_OPEN,
                                                              .actor = "detector",
                                                              .reason = "confirmed",
                                                              .confirmation_run_id = TestRunId(2)});
                          if (!opened.ok()) return opened;
                          tx.commit();
                          return absl::OkStatus();
                        })
                  .ok());
  auto pending = regressions.PendingEvents(10);
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].kind, "opened");
  EXPECT_EQ((*pending)[0].regression.id(), id);
  EXPECT_EQ((*pending)[0].regression.confirmation_run_id(), TestRunId(2));
  EXPECT_TRUE((*pending)[0].regression.has_fired_at());
  // A failed delivery stays pending; a delivered one is gone.
  ASSERT_TRUE(regressions.MarkFailed((*pending)[0].event_id, "HTTP 500: nope").ok());
  EXPECT_EQ(regressions.PendingEvents(10)->size(), 1u);
  ASSERT_TRUE(regressions.MarkDelivered((*pending)[0].event_id).ok());
  EXPECT_TRUE(regressions.PendingEvents(10)->empty());
  // Resolving queues the next event; left undelivered for 8 days, it is given up.
  ASSERT_TRUE(regressions
                  .Transition({.regression_id = id,
                               .to = v1::REGRESSION_STATE_RESOLVED,
                               .resolution = v1::RESOLUTION_FIXED,
                               .actor = "alice"})
                  .ok());
  ASSERT_EQ(regressions.PendingEvents(10)->size(), 1u);
  db_.Query(
      "WITH aged AS (UPDATE regression_events SET created_at = now() - interval '8 days'"
      " RETURNING 1) SELECT count(*) FROM aged");
  EXPECT_TRUE(regressions.PendingEvents(10)->empty());
}

TEST_F(StoreTest, OneNotificationPassAtATimeAcrossCollectors) {
  // Two collectors' stores on one database: while one runs a pass, the other's is skipped.
  RegressionStore first(*store_);
  RegressionStore second(*store_);
  absl::StatusOr<bool> inner = false;
  auto outer = first.AsOnlyNotifier([&] {
    inner = second.AsOnlyNotifier([] { return absl::OkStatus(); });
    return absl::OkStatus();
  });
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_TRUE(*outer);
  ASSERT_TRUE(inner.ok()) << inner.status();
  EXPECT_FALSE(*inner) << "a second pass ran while the first held the lock";
  // Released with the first pass: the next one runs, and its error comes back.
  auto next = second.AsOnlyNotifier([] { return absl::UnavailableError("webhook down"); });
  EXPECT_EQ(next.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace devtime::store
