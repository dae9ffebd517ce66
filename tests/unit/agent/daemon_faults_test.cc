// The daemon (daemon.h) on a disk that fails, through a FakeEnv (tests/support/fake_env.h):
// a full disk is waited out with backoff, the run delivered and the job's output kept; a
// failing fsync fails the slot, naming it, and leaves nothing half-written; a failing
// rename of a slot's marker costs only its recovery, not the run. Time moves only when the
// test moves the fake clock: no test sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/unit/agent/daemon_fixture.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using devtime::testing::FakeEnv;
using ::testing::HasSubstr;

class DaemonFaultsTest : public DaemonTest {
 protected:
  DaemonFaultsTest() { UseFakeEnv(); }

  fs::path OutputOf(const v1::JobSlot& slot) const {
    return config_.work_dir / slot.job() / slot.run_id() / "output";
  }
  v1::JobSpec Capture() const {
    return Job("capture", "cp " + kTrace + " {output_dir}/trace.json");
  }
};

TEST_F(DaemonFaultsTest, ARunThatFindsTheDiskFullWaitsForRoomWithBackoffAndIsDelivered) {
  // The spool's first three writes fail with ENOSPC, leaving the zero-byte temporary file a
  // real full disk leaves.
  fake_.Inject(FakeEnv::Fault::kNoSpace, config_.spool_dir, 3);
  config_.metrics_listen = "127.0.0.1:0";
  collector_.RunNow(Capture());
  StartAgent();

  // The run and its slot's report travel apart (upload, session): both arrive.
  ASSERT_TRUE(AdvanceUntil([&] {
    return !collector_.Delivered().empty() && collector_.Finished("capture").has_value();
  }));
  auto slot = *collector_.Finished("capture");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_SUCCEEDED) << slot.reason();
  EXPECT_THAT(collector_.Delivered(), ::testing::ElementsAre(slot.run_id()));
  EXPECT_EQ(fake_.Pending(FakeEnv::Fault::kNoSpace), 0);
  // Retried with backoff: each try waits at least twice as long as the one before, from
  // first_backoff up to max_backoff (10, 20, 40 ms here), measured on the daemon's clock.
  std::vector<FakeEnv::Write> tries = fake_.Writes(config_.spool_dir);
  ASSERT_EQ(tries.size(), 4u);
  auto expected = policy_.first_backoff;
  for (std::size_t i = 1; i < tries.size(); ++i) {
    EXPECT_GE(tries[i].at - tries[i - 1].at, expected) << "try " << i;
    expected = std::min(expected * 2, policy_.max_backoff);
  }
  EXPECT_TRUE(fs::exists(OutputOf(slot) / "trace.json")) << "the job's output was not kept";
  EXPECT_THAT(devtime::testing::HttpGet(daemon_->metrics_port(), "/metrics"),
              HasSubstr("devtime_agent_spool_full_total 1"));
  EXPECT_THAT(FakeEnv::TempFiles(config_.spool_dir), ::testing::IsEmpty());
}

TEST_F(DaemonFaultsTest, AFailedFsyncFailsTheSlotNamingItAndLeavesNothingHalfWritten) {
  fake_.Inject(FakeEnv::Fault::kFsync, config_.spool_dir);
  collector_.RunNow(Capture());
  StartAgent();

  ASSERT_TRUE(
      devtime::testing::WaitUntil([&] { return collector_.Finished("capture").has_value(); }));
  auto slot = *collector_.Finished("capture");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_FAILED);
  EXPECT_THAT(slot.reason(), HasSubstr("cannot fsync"));
  EXPECT_THAT(slot.reason(), HasSubstr(config_.spool_dir.string()));
  EXPECT_TRUE(fs::exists(OutputOf(slot) / "trace.json")) << "the job's output was not kept";
  EXPECT_FALSE(Spooled(slot.run_id())) << "a run whose fsync failed is not durable";
  EXPECT_THAT(FakeEnv::TempFiles(config_.spool_dir), ::testing::IsEmpty());
}

TEST_F(DaemonFaultsTest, AFailedRenameOfASlotMarkerCostsItsRecoveryNotTheRun) {
  fake_.Inject(FakeEnv::Fault::kRename, config_.state_dir / "in_flight");
  collector_.RunNow(Capture());
  StartAgent();

  ASSERT_TRUE(devtime::testing::WaitUntil([&] { return !collector_.Delivered().empty(); }));
  ASSERT_TRUE(
      devtime::testing::WaitUntil([&] { return collector_.Finished("capture").has_value(); }));
  auto slot = *collector_.Finished("capture");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_SUCCEEDED) << slot.reason();
  EXPECT_THAT(collector_.Delivered(), ::testing::ElementsAre(slot.run_id()));
  EXPECT_EQ(fake_.Pending(FakeEnv::Fault::kRename), 0);
  EXPECT_THAT(FakeEnv::TempFiles(config_.state_dir), ::testing::IsEmpty());
}

}  // namespace
}  // namespace devtime::agent
