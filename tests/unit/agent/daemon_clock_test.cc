// The daemon's slots on a clock the test moves (tests/support/fake_env.h): the whole cycle of
// a cron slot (slot -> run -> spool -> upload to a collector on loopback), a wall clock that
// jumps over a slot (it fires once, late) or goes back (nothing fires twice, nothing hangs),
// and a job that outlives its timeout (killed; its slot says it timed out). No test sleeps:
// the daemon's time passes only when the test advances it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "proto/wire/time.h"
#include "tests/unit/agent/daemon_fixture.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using devtime::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::Time At(int day, int hour, int minute, int second = 0) {
  return absl::FromCivil(absl::CivilSecond(2030, 6, day, hour, minute, second),
                         absl::UTCTimeZone());
}

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// A job at 12:00 UTC every day that leaves a profile in its output folder.
v1::JobSpec Noon() {
  v1::JobSpec job = Job("noon", "cp " + kTrace + " {output_dir}/trace.json");
  job.mutable_schedule()->set_cron("0 12 * * *");
  return job;
}

class DaemonClockTest : public DaemonTest {
 protected:
  DaemonClockTest() { UseFakeEnv(); }

  // Starts the agent with `job` assigned (as the last start left it on disk) at `now`.
  void StartWith(const v1::JobSpec& job, absl::Time now) {
    fake_.SetWall(now);
    v1::Assignments assignments;
    *assignments.add_jobs() = job;
    fs::create_directories(config_.state_dir);
    std::ofstream(config_.state_dir / "assignments.pb") << assignments.SerializeAsString();
    StartAgent();
  }
  // The slot times of the finished slots of `job`, in the order they were reported.
  std::vector<absl::Time> FinishedSlotTimes(const std::string& job) {
    std::vector<absl::Time> times;
    for (const auto& slot : collector_.FinishedSlots()) {
      if (slot.job() == job) times.push_back(TimeOf(slot.slot_time()));
    }
    return times;
  }
  bool Finished(const std::string& job, std::size_t slots) {
    return FinishedSlotTimes(job).size() >= slots;
  }
};

TEST_F(DaemonClockTest, ACronSlotRunsSpoolsAndUploadsItsRun) {
  StartWith(Noon(), At(1, 11, 59, 50));
  ASSERT_TRUE(AdvanceUntil([&] { return !collector_.Delivered().empty(); },
                           std::chrono::milliseconds(500)));

  ASSERT_TRUE(WaitUntil([&] { return Finished("noon", 1); }));  // the report travels apart
  auto slots = collector_.SlotsOf("noon");
  ASSERT_GE(slots.size(), 2u);
  EXPECT_EQ(slots.front().outcome(), v1::SLOT_OUTCOME_RUNNING);
  auto slot = *collector_.Finished("noon");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_SUCCEEDED) << slot.reason();
  EXPECT_EQ(TimeOf(slot.slot_time()), At(1, 12, 0));
  EXPECT_GE(TimeOf(slot.started_at()), At(1, 12, 0));  // the daemon's clock, not the host's
  EXPECT_LT(TimeOf(slot.started_at()), At(1, 12, 5));
  EXPECT_EQ(slots.front().run_id(), slot.run_id());
  EXPECT_THAT(collector_.Delivered(), ElementsAre(slot.run_id()));
  EXPECT_TRUE(WaitUntil([&] { return !Spooled(slot.run_id()); }));
  EXPECT_TRUE(WaitUntil([&] { return fs::is_empty(config_.state_dir / "in_flight"); }))
      << "the slot's marker outlived its report";
}

TEST_F(DaemonClockTest, AClockThatJumpsOverASlotFiresItOnceLate) {
  StartWith(Noon(), At(1, 11, 59));
  fake_.SetWall(At(1, 12, 30));  // an NTP step over the slot
  ASSERT_TRUE(AdvanceUntil([&] { return Finished("noon", 1); }, std::chrono::milliseconds(100)));
  // The next day's slot, reached by a second jump, comes after it: the first fired once. The
  // jump comes as soon as the first slot is seen finished, which has freed its job (daemon.h):
  // a runner still ending on a loaded machine once made this slot "still running" (stop 37).
  fake_.SetWall(At(2, 12, 0, 1));
  ASSERT_TRUE(AdvanceUntil([&] { return Finished("noon", 2); }, std::chrono::milliseconds(100)));
  EXPECT_THAT(FinishedSlotTimes("noon"), ElementsAre(At(1, 12, 0), At(2, 12, 0)));
  EXPECT_EQ(collector_.Finished("noon")->outcome(), v1::SLOT_OUTCOME_SUCCEEDED);
}

TEST_F(DaemonClockTest, AClockThatGoesBackNeverFiresASlotTwiceAndDoesNotHang) {
  StartWith(Noon(), At(1, 11, 59, 50));
  ASSERT_TRUE(AdvanceUntil([&] { return Finished("noon", 1); }, std::chrono::milliseconds(500)));
  // Back to before the slot, then through it again.
  fake_.SetWall(At(1, 11, 59, 50));
  ASSERT_TRUE(
      AdvanceUntil([&] { return fake_.Now() > At(1, 12, 1); }, std::chrono::milliseconds(500)));
  // The daemon still keeps time: the next slot fires.
  fake_.SetWall(At(2, 11, 59, 50));
  ASSERT_TRUE(AdvanceUntil([&] { return Finished("noon", 2); }, std::chrono::milliseconds(500)));
  EXPECT_THAT(FinishedSlotTimes("noon"), ElementsAre(At(1, 12, 0), At(2, 12, 0)));
}

TEST_F(DaemonClockTest, AJobThatOutlivesItsTimeoutIsKilledAndItsSlotSaysSo) {
  v1::JobSpec job = Job("stuck", "touch {output_dir}/started; sleep 600");
  job.set_timeout_seconds(60);
  collector_.RunNow(job);
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] {
    auto slots = collector_.SlotsOf("stuck");
    return !slots.empty() &&
           fs::exists(config_.work_dir / "stuck" / slots.front().run_id() / "output" / "started");
  }));
  fake_.Advance(std::chrono::seconds(61));

  ASSERT_TRUE(WaitUntil([&] { return collector_.Finished("stuck").has_value(); }));
  auto slot = *collector_.Finished("stuck");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_FAILED);
  EXPECT_THAT(slot.reason(), HasSubstr("timed out after 61 s (killed)"));
  ASSERT_TRUE(WaitUntil([&] { return !collector_.Delivered().empty(); }));
  EXPECT_THAT(collector_.Delivered(), ElementsAre(slot.run_id()));  // as history
}

}  // namespace
}  // namespace devtime::agent
