// Acks that mean a standby has the run (issue 26): pg_auto_failover turns synchronous
// replication off while a promoted primary waits for a standby to follow it (wait_primary),
// and commits there return at once, on one node. With --standby-ack-wait the collector
// acknowledges a run only once a standby has flushed its commit (pg_stat_replication), and
// says UNAVAILABLE otherwise, so that the agent retries. Here: a real PostgreSQL with no
// standby at all, the case every such window reduces to. (With standbys, the failover test
// runs its collectors with the flag: every upload there is acknowledged.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "services/collector/store/run_store.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime::store {
namespace {

using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& conninfo,
                                               std::chrono::milliseconds standby_ack_wait) {
  StoreOptions options;
  options.conninfo = conninfo;
  options.standby_ack_wait = standby_ack_wait;
  return Database::Open(options);
}

TEST(StandbyAcksTest, WithoutAStandbyARunIsStoredButNotAcknowledged) {
  TestDatabase db;
  auto store = Open(db.conninfo(), std::chrono::milliseconds(300));
  ASSERT_TRUE(store.ok()) << store.status();
  RunStore runs(**store);
  auto stored = runs.IngestRun(NaiveRmsNormRun(TestRunId(1)));
  EXPECT_TRUE(absl::IsUnavailable(stored.status())) << stored.status();
  EXPECT_THAT(std::string(stored.status().message()),
              HasSubstr("no standby has flushed it within 300 ms"));
  // Committed whole: the agent's retry finds it (and still waits for a standby).
  EXPECT_EQ(db.Count("runs"), 1);
  EXPECT_EQ(db.Count("op_stats"), 4);
  auto retried = runs.IngestRun(NaiveRmsNormRun(TestRunId(1)));
  EXPECT_TRUE(absl::IsUnavailable(retried.status())) << retried.status();
  EXPECT_EQ(db.Count("runs"), 1);
}

TEST(StandbyAcksTest, WithoutTheOptionTheCommitAcknowledges) {
  TestDatabase db;
  auto store = Open(db.conninfo(), std::chrono::milliseconds(0));
  ASSERT_TRUE(store.ok()) << store.status();
  RunStore runs(**store);
  auto stored = runs.IngestRun(NaiveRmsNormRun(TestRunId(1)));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->result, IngestResult::kStored);
}

// A role that cannot read pg_stat_replication's positions (they read as NULL) could never
// acknowledge: the collector refuses to start, saying what to grant.
TEST(StandbyAcksTest, ARoleThatCannotSeeStandbysIsRefusedAtStart) {
  TestDatabase db;
  const std::string role = "devtime_acks_" + std::to_string(getpid());
  db.Query("CREATE ROLE " + role + " LOGIN");
  auto store = Open(db.conninfo() + " user=" + role, std::chrono::milliseconds(300));
  db.Query("DROP ROLE " + role);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("GRANT pg_read_all_stats"));
}

}  // namespace
}  // namespace devtime::store
