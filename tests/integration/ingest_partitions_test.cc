// Partitions created at insert time (issue 26): a run dated outside the months created so far —
// an upload of last year's run, an import of old captures — used to land in the *_default
// partitions and stay there until the next hourly housekeeping pass. Now ingest creates the
// month it needs first, so its rows go straight to their month. A real collector process and
// PostgreSQL; the uploads come after the collector's first housekeeping pass, and the next
// one is an hour away, so only ingest can have created the months.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "services/collector/store/run_store.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/sample_runs.h"
#include "tests/support/store_fixture.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using devtime::testing::TestRunId;

// "2025m10": the partitions' suffix for the UTC month of `t`.
std::string Suffix(absl::Time t) {
  const absl::CivilMonth month = absl::ToCivilMonth(t, absl::UTCTimeZone());
  char text[16];
  std::snprintf(text, sizeof text, "%04dm%02d", static_cast<int>(month.year()), month.month());
  return text;
}

std::string DefaultRows(const devtime::testing::TestDatabase& db) {
  return db.Query(
      "SELECT (SELECT count(*) FROM op_stats_default) || ' ' || (SELECT count(*) FROM"
      " run_steps_default) || ' ' || (SELECT count(*) FROM series_points_default)");
}

bool MonthExists(const devtime::testing::TestDatabase& db, const std::string& suffix) {
  return db.Query("SELECT to_regclass('op_stats_" + suffix +
                  "') IS NOT NULL AND to_regclass('run_steps_" + suffix +
                  "') IS NOT NULL AND to_regclass('series_points_" + suffix + "') IS NOT NULL") ==
         "t";
}

class IngestPartitionsTest : public devtime::testing::CollectorFixture {
 protected:
  // Retention off: its pass would drop the old months this test looks for.
  IngestPartitionsTest() : CollectorFixture({"--retention-days", "0"}) {}

  void SetUp() override {
    // A row of a run from January 1995 waits in DEFAULT while the collector is down; its
    // month appears when the restarted collector's first housekeeping pass has run
    // (PartitionDefaultRows). The next pass is an hour later.
    ASSERT_EQ(collector_.Stop(), 0);
    db_.Query(
        "INSERT INTO run_steps (run_id, at, step, device_us, cpu_us) VALUES"
        " ('00000000-0000-4000-8000-00000000ffff', '1995-01-15T00:00:00Z', 0, 1, 1)");
    collector_.Start();
    ASSERT_TRUE(devtime::testing::WaitUntil([&] { return MonthExists(db_, "1995m01"); },
                                            std::chrono::seconds(30)))
        << "the collector's housekeeping did not pass\n"
        << collector_.Log();
    ASSERT_EQ(DefaultRows(db_), "0 0 0");
  }
};

TEST_F(IngestPartitionsTest, OldRunsLandInTheirMonthWithoutAHousekeepingPass) {
  const absl::Time now = absl::Now();
  const absl::Time fourteen_months_ago = now - absl::Hours(24 * 427);
  const absl::Time three_years_ago = now - absl::Hours(24 * 1096);
  ASSERT_FALSE(MonthExists(db_, Suffix(fourteen_months_ago)));
  ASSERT_FALSE(MonthExists(db_, Suffix(three_years_ago)));

  auto stub = AdminStub();
  int n = 1;
  for (absl::Time at : {fourteen_months_ago, three_years_ago}) {
    auto status = devtime::testing::UploadRun(
        *stub, devtime::testing::NaiveRmsNormRun(TestRunId(n++), "naive", absl::ToUnixSeconds(at)));
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  EXPECT_EQ(DefaultRows(db_), "0 0 0");
  for (absl::Time at : {fourteen_months_ago, three_years_ago}) {
    const std::string suffix = Suffix(at);
    EXPECT_TRUE(MonthExists(db_, suffix)) << suffix;
    EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_" + suffix), "4") << suffix;
    EXPECT_EQ(db_.Query("SELECT count(*) FROM run_steps_" + suffix), "3") << suffix;
    EXPECT_EQ(db_.Query("SELECT count(*) FROM series_points_" + suffix), "5") << suffix;
  }
  // The runs read back, their ops and steps with them.
  for (int i = 1; i <= 2; ++i) {
    grpc::ClientContext context;
    v1::GetRunRequest request;
    request.set_run_id(TestRunId(i));
    v1::GetRunResponse response;
    auto status = stub->GetRun(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.run().ops_size(), 4);
    EXPECT_EQ(response.run().steps_size(), 3);
  }
}

// The store alone: ingests of runs in months not created yet, from many threads at once,
// each beside other ingests holding the partitions lock shared, all finish (creating a month
// takes that lock exclusively, outside the ingest's transaction) and land in their months.
class IngestPartitionsStoreTest : public devtime::testing::StoreFixture {};

TEST_F(IngestPartitionsStoreTest, ConcurrentIngestsIntoNewMonthsAllLandInTheirMonths) {
  constexpr int kThreads = 8, kRunsEach = 4;
  // 2019-01-15 12:00 UTC, and a month apart after it: months no one created.
  constexpr long long kJan2019 = 1547553600;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRunsEach; ++i) {
        const int n = t * kRunsEach + i + 1;
        // Two threads per month, so months are created while other ingests are in flight.
        const long long at = kJan2019 + (n % (kThreads * kRunsEach / 2)) * 31LL * 86400;
        auto stored =
            runs_->IngestRun(devtime::testing::NaiveRmsNormRun(TestRunId(n), "naive", at));
        if (!stored.ok()) errors[t] = std::string(stored.status().message());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) EXPECT_EQ(error, "");
  EXPECT_EQ(db_.Count("runs"), kThreads * kRunsEach);
  EXPECT_EQ(DefaultRows(db_), "0 0 0");
  EXPECT_EQ(db_.Query("SELECT count(*) FROM op_stats_2019m01"), "8");  // runs 16 and 32
}

}  // namespace
}  // namespace devtime
