// Nothing is lost at the daemon's edges (daemon.h): a slot in flight when the agent stopped
// is reported by the next start, temporary files a crash left are removed, and stopping while
// a job and uploads run is clean (this test also runs under ASan and TSan). A full disk and
// the other faults of the filesystem: daemon_faults_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/sample_runs.h"
#include "tests/support/wait.h"
#include "tests/unit/agent/daemon_fixture.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;
using devtime::testing::WaitUntil;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class DaemonEdgesTest : public DaemonTest {
 protected:
  // The last report of `job` that has a run id, if its slot started.
  std::optional<std::string> RunIdOf(const std::string& job) {
    ScriptedCollector::Slots slots = collector_.SlotsOf(job);
    if (slots.empty()) return std::nullopt;
    return slots.back().run_id();
  }
};

TEST_F(DaemonEdgesTest, RemovesTheTemporaryFilesACrashLeftAtStart) {
  for (const fs::path& dir : {config_.state_dir / "in_flight", config_.spool_dir}) {
    fs::create_directories(dir);
  }
  std::ofstream(config_.state_dir / "assignments.pb.tmp") << "partial";
  std::ofstream(config_.state_dir / "in_flight" / "run.0.slot.tmp") << "partial";
  std::ofstream(config_.spool_dir / (TestRunId(1) + ".pb.tmp")) << "partial";
  StartAgent();

  EXPECT_THAT(devtime::testing::FakeEnv::TempFiles(config_.state_dir), IsEmpty());
  EXPECT_THAT(devtime::testing::FakeEnv::TempFiles(config_.spool_dir), IsEmpty());
}

TEST_F(DaemonEdgesTest, ASlotInFlightWhenTheAgentStoppedIsReportedByTheNextStart) {
  collector_.RunNow(Job("long", "sleep 600"));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return RunIdOf("long").has_value(); }));
  const std::string run_id = *RunIdOf("long");
  daemon_.reset();  // the job is ended; its slot is not reported before the agent is gone

  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return collector_.Finished("long").has_value(); }));
  auto slot = *collector_.Finished("long");
  EXPECT_EQ(slot.run_id(), run_id);
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_FAILED);
  EXPECT_THAT(slot.reason(), HasSubstr("agent restarted during the run"));
  ASSERT_TRUE(WaitUntil([&] { return !collector_.Delivered().empty(); }));
  EXPECT_THAT(collector_.Delivered(), ::testing::ElementsAre(run_id));  // as history
}

TEST_F(DaemonEdgesTest, ARestartedSlotIsRetriedWhenItsJobAllowsIt) {
  v1::JobSpec job = Job("flaky", "sleep 600");
  job.set_retries(1);
  collector_.RunNow(job);
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return RunIdOf("flaky").has_value(); }));
  const std::string first = *RunIdOf("flaky");
  daemon_.reset();

  StartAgent();  // reports the first attempt failed and starts the retry
  ASSERT_TRUE(WaitUntil([&] { return RunIdOf("flaky") != first; }));
  EXPECT_EQ(collector_.SlotsOf("flaky").back().outcome(), v1::SLOT_OUTCOME_RUNNING);
  EXPECT_THAT(collector_.Outcomes("flaky"), Contains(v1::SLOT_OUTCOME_FAILED));
}

// Start, a session, a job running and uploads failing and retried, then Stop, many times:
// under ASan and TSan this is the agent's shutdown test.
TEST_F(DaemonEdgesTest, StopsCleanlyWhileAJobRunsAndUploadsAreInFlight) {
  collector_.AnswerWith([](const v1::RunSummary&) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "database unreachable");
  });
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Spool({NaiveRmsNormRun(TestRunId(2 * round + 1)), NaiveRmsNormRun(TestRunId(2 * round + 2))});
    const std::string job = "long-" + std::to_string(round);
    collector_.RunNow(Job(job, "sleep 600"));
    const int uploads = collector_.Uploads();
    StartAgent();
    ASSERT_TRUE(WaitUntil([&] { return RunIdOf(job) && collector_.Uploads() > uploads + 2; }));
    const auto stop_started = std::chrono::steady_clock::now();
    daemon_->Stop();
    daemon_->Wait();
    daemon_.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(10));
  }
}

}  // namespace
}  // namespace devtime::agent
