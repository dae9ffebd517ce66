// The notifier's pass schedule (RunPasses in notifier.h) on a clock the test moves: a pass at
// once, the next one a period later on the env's steady clock (not before), each stamped with
// the env's wall time, and a prompt end once stopping. No test sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "services/collector/notify/notifier.h"
#include "tests/support/fake_env.h"
#include "tests/support/wait.h"

namespace devtime::collector::notify {
namespace {

using devtime::testing::FakeEnv;
using devtime::testing::WaitUntil;

class PassScheduleTest : public ::testing::Test {
 protected:
  PassScheduleTest()
      : start_(env_.Now()), passes_thread_([this] {
          RunPasses(
              env_, mu_, changed_, std::chrono::seconds(60), [this] { return stopping_; },
              [this](absl::Time now) {
                std::lock_guard lock(mu_);
                passes_.push_back(now);
              });
          std::lock_guard lock(mu_);
          returned_ = true;
        }) {}
  ~PassScheduleTest() override {
    Stop();
    passes_thread_.join();
  }

  std::vector<absl::Time> Passes() {
    std::lock_guard lock(mu_);
    return passes_;
  }
  void Stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  bool Returned() {
    std::lock_guard lock(mu_);
    return returned_;
  }

  FakeEnv env_;
  const absl::Time start_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;           // guarded by mu_
  bool returned_ = false;           // guarded by mu_
  std::vector<absl::Time> passes_;  // guarded by mu_
  std::thread passes_thread_;       // last: started once the rest is built
};

TEST_F(PassScheduleTest, PassesAtOnceThenEachPeriodOfTheEnvsClock) {
  const auto steady_start = env_.SteadyNow();
  // After the first pass the schedule waits for the period's end, on the env's clock.
  ASSERT_TRUE(WaitUntil([&] {
    return Passes().size() == 1 &&
           env_.Deadlines() == std::vector{steady_start + std::chrono::seconds(60)};
  }));
  env_.Advance(std::chrono::seconds(60));
  ASSERT_TRUE(WaitUntil([&] { return Passes().size() == 2; }));
  // Each pass is stamped with the env's wall clock.
  EXPECT_THAT(Passes(), ::testing::ElementsAre(start_, start_ + absl::Seconds(60)));
}

TEST_F(PassScheduleTest, EndsPromptlyOnceStoppingEvenWhileTheClockStandsStill) {
  ASSERT_TRUE(WaitUntil([&] { return Passes().size() == 1; }));
  Stop();
  EXPECT_TRUE(WaitUntil([&] { return Returned(); }));
  EXPECT_EQ(Passes().size(), 1u);
}

}  // namespace
}  // namespace devtime::collector::notify
