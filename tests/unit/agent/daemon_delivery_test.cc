// The daemon's delivery (daemon.h) against a collector on loopback that answers each upload
// as the test says: no run holds the queue, a run the collector keeps failing on is set aside
// and its slot says so, a run the store could not hold is never spooled, and a collector that
// is down loses nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/support/sample_runs.h"
#include "tests/support/wait.h"
#include "tests/unit/agent/daemon_fixture.h"

namespace devtime::agent {
namespace {

using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;
using devtime::testing::WaitUntil;
using ::testing::HasSubstr;

grpc::Status AnswerFor(const std::string& bad_run_id, grpc::Status answer,
                       const v1::RunSummary& run) {
  return run.identity().run_id() == bad_run_id ? answer : grpc::Status::OK;
}

const grpc::Status kInternal(grpc::StatusCode::INTERNAL, "value out of range for type integer");

class DaemonDeliveryTest : public DaemonTest {};

TEST_F(DaemonDeliveryTest, RunsFlowPastARunTheCollectorKeepsFailingOn) {
  const std::string bad = TestRunId(1);  // the oldest in the spool: first in line
  collector_.AnswerWith([&](const v1::RunSummary& run) { return AnswerFor(bad, kInternal, run); });
  policy_.set_aside_after = 1'000'000;  // kept for the whole test
  std::vector<v1::RunSummary> runs;
  for (int n = 1; n <= 11; ++n) runs.push_back(NaiveRmsNormRun(TestRunId(n)));
  Spool(runs);
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Delivered().size() == 10; }))
      << collector_.Delivered().size() << " of the 10 good runs delivered";
  EXPECT_TRUE(Spooled(bad));
  EXPECT_GE(collector_.Attempts(bad), 1);
  for (int n = 2; n <= 11; ++n) EXPECT_FALSE(Spooled(TestRunId(n))) << n;
}

TEST_F(DaemonDeliveryTest, SetsARunAsideAfterTheBoundOfServerErrors) {
  const std::string bad = TestRunId(1);
  collector_.AnswerWith([&](const v1::RunSummary& run) { return AnswerFor(bad, kInternal, run); });
  policy_.set_aside_after = 3;
  Spool({NaiveRmsNormRun(bad), NaiveRmsNormRun(TestRunId(2))});
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return SetAside(bad); }));
  EXPECT_FALSE(Spooled(bad));
  EXPECT_EQ(collector_.Attempts(bad), 3);
  EXPECT_THAT(collector_.Delivered(), ::testing::ElementsAre(TestRunId(2)));
}

TEST_F(DaemonDeliveryTest, NeverSetsARunAsideWhileTheCollectorIsUnavailable) {
  std::atomic<bool> down{true};
  collector_.AnswerWith([&](const v1::RunSummary&) {
    return down ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "database unreachable")
                : grpc::Status::OK;
  });
  policy_.set_aside_after = 2;
  const std::string run_id = TestRunId(1);
  Spool({NaiveRmsNormRun(run_id)});
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Attempts(run_id) >= 10; }));
  EXPECT_TRUE(Spooled(run_id));
  EXPECT_FALSE(SetAside(run_id));
  down = false;  // the collector is back: the run is delivered, nothing was lost
  ASSERT_TRUE(WaitUntil([&] { return !collector_.Delivered().empty(); }));
  // The agent removes the run once the ack reaches it, a moment after the collector stored it.
  EXPECT_TRUE(WaitUntil([&] { return !Spooled(run_id); }));
  EXPECT_FALSE(SetAside(run_id));
}

// Issue 22: a step number the store cannot hold no longer loses the run (it was refused,
// unspooled, before): the agent renumbers the steps and says so in the run.
TEST_F(DaemonDeliveryTest, StepNumbersTheStoreCannotHoldAreRenumberedAndTheRunDelivered) {
  std::optional<v1::RunSummary> received;
  collector_.AnswerWith([&](const v1::RunSummary& run) {
    received = run;  // under the collector's lock
    return grpc::Status::OK;
  });
  // ProfilerStep#3000000001: a step number beyond run_steps.step, a PostgreSQL integer.
  collector_.RunNow(Job("huge-steps", "sed 's/ProfilerStep#/ProfilerStep#300000000/g' " + kTrace +
                                          " > {output_dir}/trace.json"));
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] { return collector_.Finished("huge-steps").has_value(); }));
  auto slot = *collector_.Finished("huge-steps");
  EXPECT_EQ(slot.outcome(), v1::SLOT_OUTCOME_SUCCEEDED) << slot.reason();
  ASSERT_TRUE(WaitUntil([&] { return collector_.Delivered().size() == 1; }));
  ASSERT_TRUE(received.has_value());
  ASSERT_EQ(received->steps_size(), 2);
  EXPECT_EQ(received->steps(0).step(), 0u);
  EXPECT_EQ(received->steps(1).step(), 1u);
  bool warned = false;
  for (const auto& w : received->warnings()) warned |= w.kind() == "steps_renumbered";
  EXPECT_TRUE(warned);
}

TEST_F(DaemonDeliveryTest, ASetAsideRunFailsItsSlotAfterItSucceeded) {
  collector_.AnswerWith([](const v1::RunSummary& run) {
    return run.identity().job() == "poison" ? kInternal : grpc::Status::OK;
  });
  policy_.set_aside_after = 2;
  collector_.RunNow(Job("poison", "cp " + kTrace + " {output_dir}/trace.json"));
  StartAgent();

  ASSERT_TRUE(WaitUntil([&] {
    auto slot = collector_.Finished("poison");
    return slot && slot->outcome() == v1::SLOT_OUTCOME_FAILED;
  }));
  auto slot = *collector_.Finished("poison");
  EXPECT_THAT(collector_.Outcomes("poison"),
              ::testing::ElementsAre(v1::SLOT_OUTCOME_RUNNING, v1::SLOT_OUTCOME_SUCCEEDED,
                                     v1::SLOT_OUTCOME_FAILED));
  EXPECT_THAT(slot.reason(), HasSubstr("run " + slot.run_id() + " was set aside"));
  EXPECT_THAT(slot.reason(), HasSubstr("INTERNAL: value out of range for type integer"));
  EXPECT_TRUE(SetAside(slot.run_id()));
  EXPECT_EQ(collector_.Attempts(slot.run_id()), 2);
}

}  // namespace
}  // namespace devtime::agent
