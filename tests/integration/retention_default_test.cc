// Retention and the DEFAULT partitions (issue 26): runs dated before the first month partition
// (backfill imports, demo history) landed in op_stats_default and friends, where
// --retention-days never dropped them. Now their months are created and the rows moved in
// (History::PartitionDefaultRows, run by the collector's housekeeping and once by migration 11),
// and retention drops them with their month. A real PostgreSQL and the collector's store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/collector/store/history.h"
#include "services/collector/store/run_store.h"
#include "tests/support/sample_runs.h"
#include "tests/support/store_fixture.h"
#include "tests/support/test_database.h"

namespace devtime::store {
namespace {

using devtime::testing::TestRunId;

// 2019-03-15 and 2019-04-15 12:00 UTC: years before any month the collector creates; and now.
constexpr long long kMar2019 = 1552651200, kApr2019 = 1555329600;

class RetentionDefaultTest : public devtime::testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    if (HasFatalFailure()) return;
    history_ = std::make_unique<History>(*store_);
    ASSERT_TRUE(history_->EnsurePartitions(absl::Now()).ok());  // as the collector at start
  }

  void Store(int n, long long at) {
    auto stored = runs_->IngestRun(devtime::testing::NaiveRmsNormRun(TestRunId(n), "naive", at));
    ASSERT_TRUE(stored.ok()) << stored.status();
  }
  std::string DefaultRows() const {
    return db_.Query(
        "SELECT (SELECT count(*) FROM op_stats_default) + (SELECT count(*) FROM"
        " run_steps_default) + (SELECT count(*) FROM series_points_default)");
  }

  std::unique_ptr<History> history_;
};

TEST_F(RetentionDefaultTest, RunsDatedBeforeTheFirstPartitionAreDroppedByRetention) {
  Store(1, kMar2019);
  Store(2, kApr2019);
  Store(3, absl::ToUnixSeconds(absl::Now()));
  // Ingest made their months (MonthPartitions): nothing for housekeeping to move.
  EXPECT_EQ(DefaultRows(), "0");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_2019m03"), "4");
  EXPECT_EQ(*history_->PartitionDefaultRows(), 0);

  auto outcome = history_->ApplyRetention(absl::Now(), 400);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->months_dropped, 2);
  EXPECT_EQ(outcome->runs_deleted, 2);
  EXPECT_EQ(db_.Query("SELECT string_agg(run_id::text, ' ') FROM runs"), TestRunId(3));
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats"), "4");
}

// Rows an older collector left in DEFAULT (ingest made no months then): housekeeping moves
// them into their months, once.
TEST_F(RetentionDefaultTest, RowsLeftInDefaultAreMovedToTheirMonthsOnce) {
  db_.Query(
      "INSERT INTO run_steps (run_id, at, step, device_us, cpu_us) VALUES"
      " ('00000000-0000-4000-8000-00000000ffff', to_timestamp(" +
      std::to_string(kMar2019) + "), 0, 1, 1)");
  ASSERT_EQ(DefaultRows(), "1");  // where it lands: no month of 2019 exists
  auto moved = history_->PartitionDefaultRows();
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(*moved, 3);  // March 2019, three tables
  EXPECT_EQ(DefaultRows(), "0");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM run_steps_2019m03"), "1");
  EXPECT_EQ(*history_->PartitionDefaultRows(), 0);  // once
}

TEST_F(RetentionDefaultTest, AFailedRunWithoutRowsGetsItsMonthAndIsDroppedToo) {
  auto run = devtime::testing::NaiveRmsNormRun(TestRunId(4), "naive", kMar2019);
  run.set_status(v1::RUN_STATUS_FAILED);
  run.set_status_reason("the job exited with code 1");
  run.clear_ops();
  run.clear_steps();
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  ASSERT_TRUE(history_->PartitionDefaultRows().ok());
  auto outcome = history_->ApplyRetention(absl::Now(), 400);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->runs_deleted, 1);
  EXPECT_EQ(db_.Count("runs"), 0);
}

}  // namespace
}  // namespace devtime::store
