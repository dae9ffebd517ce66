// History partitioned by month (issue 10 item 4) against a real PostgreSQL: the migration
// converts a database filled by the previous schema in place without losing a row, partitions
// are created ahead, time-bounded reads prune, and retention drops whole old months while
// keeping every run a regression references.
#include "services/collector/store/history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pqxx/pqxx"
#include "services/collector/store/migrations.h"
#include "services/collector/store/run_store.h"
#include "tests/support/sample_runs.h"
#include "tests/support/store_fixture.h"
#include "tests/support/test_database.h"

namespace devtime::store {
namespace {

using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;

constexpr int kPartitionedVersion = 6;

// 2024-01-15, 2024-02-15, 2024-03-15 12:00 UTC, and a day.
constexpr long long kJan = 1705320000, kFeb = 1707998400, kMar = 1710504000;

// A checksum of a table's rows over `columns` (the columns the previous schema had).
std::string Digest(const TestDatabase& db, const std::string& table, const std::string& columns) {
  return db.Query(
      "SELECT count(*) || ' ' || md5(string_agg(t::text, ',' ORDER BY t::text)) FROM"
      " (SELECT " +
      columns + " FROM " + table + ") t");
}

TEST(HistoryMigration, ConvertsAPreviousSchemaDatabaseInPlaceWithoutLosingARow) {
  TestDatabase db;
  {  // The previous collector: every migration before partitioning, and its ingest's rows.
    pqxx::connection c{db.conninfo()};
    pqxx::work tx{c};
    tx.exec(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())");
    for (const Migration& m : AllMigrations()) {
      if (m.version >= kPartitionedVersion) break;
      tx.exec(m.sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version,
                     m.name);
    }
    int n = 0;
    for (long long at : {kJan, kJan + 86400, kFeb, kMar}) {
      const std::string id = TestRunId(++n);
      tx.exec_params(
          "INSERT INTO runs (run_id, model, workload, host, device_kind, status, started_at,"
          " op_count, step_count, device_us_per_step, total_device_us, summary, content_sha256)"
          " VALUES ($1, 'rmsnorm', 'naive', 'h', 'neuron', 'ok', to_timestamp($2), 2, 2, 1, 2,"
          " '\\x00', '\\x00')",
          id, at);
      for (const char* op : {"aten::mul", "aten::add"}) {
        tx.exec_params("INSERT INTO op_stats VALUES ($1, $2, 3, 1.5, 2.5, $3, 4.5, '{1.25,2.5}')",
                       id, op, 100.0 + n);
        tx.exec_params(
            "INSERT INTO series (model, workload, instance_type, metric, op) VALUES"
            " ('rmsnorm', 'naive', '', 'device_us_per_step', $1) ON CONFLICT DO NOTHING",
            op);
        tx.exec_params(
            "INSERT INTO series_points SELECT series_id, $1, to_timestamp($2), $3, NULL"
            " FROM series WHERE op = $4",
            id, at, 10.0 * n, op);
      }
      for (int step = 0; step < 2; ++step) {
        tx.exec_params("INSERT INTO run_steps VALUES ($1, $2, $3, 7)", id, step, 50.0 + step);
      }
    }
    tx.commit();
  }
  const std::string op_columns =
      "run_id, op, calls, self_cpu_us, total_cpu_us, self_device_us, total_device_us,"
      " step_self_device_us";
  const std::string before_ops = Digest(db, "op_stats", op_columns);
  const std::string before_steps = Digest(db, "run_steps", "run_id, step, device_us, cpu_us");
  const std::string before_points = Digest(db, "series_points", "*");
  ASSERT_THAT(before_ops, ::testing::StartsWith("8 "));

  auto database = devtime::testing::OpenStore(db);
  ASSERT_TRUE(database.ok()) << database.status();
  EXPECT_EQ((*database)->schema_version(), AllMigrations().back().version);
  EXPECT_EQ(Digest(db, "op_stats", op_columns), before_ops);
  EXPECT_EQ(Digest(db, "run_steps", "run_id, step, device_us, cpu_us"), before_steps);
  EXPECT_EQ(Digest(db, "series_points", "*"), before_points);
  // Each row went to its run's month; none to the DEFAULT partition.
  EXPECT_EQ(db.Query("SELECT count(*) FROM op_stats_2024m01"), "4");
  EXPECT_EQ(db.Query("SELECT count(*) FROM series_points_2024m03"), "2");
  EXPECT_EQ(db.Query("SELECT count(*) FROM op_stats_default") + " " +
                db.Query("SELECT count(*) FROM run_steps_default") + " " +
                db.Query("SELECT count(*) FROM series_points_default"),
            "0 0 0");
  EXPECT_EQ(db.Query("SELECT count(*) FROM op_stats o JOIN runs r USING (run_id)"
                     " WHERE o.at <> r.started_at"),
            "0");
}

// The store on the test's own database (StoreFixture), and its History.
class HistoryTest : public devtime::testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    if (HasFatalFailure()) return;
    history_ = std::make_unique<History>(*store_);
  }

  void Store(int n, long long at) {
    auto stored = runs_->IngestRun(devtime::testing::NaiveRmsNormRun(TestRunId(n), "naive", at));
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

  std::unique_ptr<History> history_;
};

TEST_F(HistoryTest, PartitionsAreCreatedAheadOnceAndNewRunsLandInTheirMonth) {
  auto created = history_->EnsurePartitions(absl::FromUnixSeconds(kJan), 2);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, 9);  // January to March, three tables
  EXPECT_EQ(*history_->EnsurePartitions(absl::FromUnixSeconds(kJan), 2), 0);
  Store(1, kFeb);
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_2024m02"), "4");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM run_steps_2024m02"), "3");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM series_points_2024m02"), "5");
  // A run dated in a month without partitions gets its month at ingest (issue 26), never
  // DEFAULT; housekeeping finds that month made.
  Store(2, kFeb + 366LL * 86400);
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_default"), "0");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_2025m02"), "4");
  EXPECT_EQ(*history_->EnsurePartitions(absl::FromUnixSeconds(kFeb + 366LL * 86400), 0), 0);
}

TEST_F(HistoryTest, TimeBoundedReadsPruneToTheirMonths) {
  ASSERT_TRUE(history_->EnsurePartitions(absl::FromUnixSeconds(kJan), 2).ok());
  Store(1, kJan);
  Store(2, kMar);
  pqxx::connection c{db_.conninfo()};
  pqxx::nontransaction tx{c};
  std::string explained;
  for (const auto& row : tx.exec("EXPLAIN SELECT value FROM series_points WHERE series_id = 1"
                                 " AND at >= '2024-03-01T00:00:00Z' ORDER BY at DESC LIMIT 200")) {
    explained += row[0].as<std::string>() + "\n";
  }
  EXPECT_THAT(explained, HasSubstr("series_points_2024m03"));
  EXPECT_THAT(explained, ::testing::Not(HasSubstr("series_points_2024m01"))) << explained;
  EXPECT_THAT(explained, ::testing::Not(HasSubstr("series_points_2024m02"))) << explained;
}

TEST_F(HistoryTest, RetentionDropsOldMonthsWholeButKeepsRunsARegressionReferences) {
  ASSERT_TRUE(history_->EnsurePartitions(absl::FromUnixSeconds(kJan), 2).ok());
  Store(1, kJan);
  Store(2, kFeb);
  Store(3, kFeb + 86400);
  Store(4, kMar);
  db_.Query(
      "INSERT INTO regressions (state, severity, model, workload, instance_type, host, metric,"
      " last_good_run_id, first_bad_run_id, first_bad_at, before_us, baseline_sigma_us,"
      " baseline_count, after_us, relative_change, z, confidence, summary) VALUES ('open',"
      " 'warning', 'rmsnorm', 'naive', 'trn1.2xlarge', 'trn-test-01', 'device_us_per_step', '" +
      TestRunId(2) + "', '" + TestRunId(3) +
      "', now(), 2354.9, 10, 5, 2600, 0.104, 24.5, 0.999, 'slower') RETURNING 1");
  // 400 days after 2024-03-31: January, February and March have all ended before the cutoff.
  const absl::Time now = absl::FromUnixSeconds(kMar) + absl::Hours(24 * 420);
  auto outcome = history_->ApplyRetention(now, 400);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->months_dropped, 2);
  EXPECT_EQ(outcome->months_kept, 1);
  EXPECT_EQ(outcome->runs_deleted, 2);
  EXPECT_EQ(db_.Query("SELECT string_agg(run_id::text, ' ' ORDER BY run_id) FROM runs"),
            TestRunId(2) + " " + TestRunId(3));
  EXPECT_EQ(db_.Query("SELECT to_regclass('op_stats_2024m01') IS NULL"), "t");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats"), "8");  // February's runs, whole
  EXPECT_EQ(db_.Query("SELECT count(*) FROM series_points"), "10");
  // Again: nothing more to do.
  auto again = history_->ApplyRetention(now, 400);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->months_dropped, 0);
  EXPECT_EQ(again->months_kept, 1);
  // Inside the retention nothing is touched.
  auto young = history_->ApplyRetention(absl::FromUnixSeconds(kMar), 400);
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(young->months_dropped + young->months_kept, 0);
}

}  // namespace
}  // namespace devtime::store
