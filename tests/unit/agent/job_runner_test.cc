#include "agents/daemon/job_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "tests/support/fake_env.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

JobProcessSpec Spec(const std::string& command) {
  JobProcessSpec spec;
  spec.command = command;
  spec.work_dir = devtime::testing::MakeTempDir("job") + "/work";
  spec.timeout = std::chrono::seconds(20);
  return spec;
}

TEST(RunJobProcess, RunsInItsFolderWithItsEnvironment) {
  auto spec = Spec("echo \"$DEVTIME_RUN_ID\" > marker; pwd; echo done");
  spec.env["DEVTIME_RUN_ID"] = "r-1";
  auto outcome = RunJobProcess(spec);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->succeeded()) << outcome->Describe();
  EXPECT_THAT(outcome->stdout_tail, HasSubstr(spec.work_dir.string()));
  std::ifstream marker(spec.work_dir / "marker");
  std::string content;
  std::getline(marker, content);
  EXPECT_EQ(content, "r-1");
}

TEST(RunJobProcess, ReportsExitCodeWithTheLastStderrLine) {
  auto outcome = RunJobProcess(Spec("echo warming up >&2; echo 'CUDA out of memory' >&2; exit 3"));
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->succeeded());
  EXPECT_EQ(outcome->exit_code, 3);
  EXPECT_EQ(outcome->Describe(), "exit code 3: CUDA out of memory");
}

TEST(RunJobProcess, KillsAHangingJobAndItsChildrenAtTheTimeout) {
  auto spec = Spec("sleep 300 & echo $! > child.pid; trap '' TERM; sleep 300");
  spec.timeout = std::chrono::milliseconds(500);
  spec.kill_grace = std::chrono::milliseconds(300);
  auto outcome = RunJobProcess(spec);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_FALSE(outcome->succeeded());
  EXPECT_LT(outcome->elapsed, std::chrono::seconds(10));
  EXPECT_THAT(outcome->Describe(), HasSubstr("timed out"));
  std::ifstream pid_file(spec.work_dir / "child.pid");
  int child = 0;
  pid_file >> child;
  ASSERT_GT(child, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(kill(child, 0), 0) << "the job's background child survived";
}

TEST(RunJobProcess, TheTimeoutIsMeasuredOnTheSpecsClock) {
  devtime::testing::FakeEnv clock;
  auto spec = Spec("touch started; sleep 300");
  spec.timeout = std::chrono::seconds(60);
  spec.clock = &clock;
  auto running = std::async(std::launch::async, [&] { return RunJobProcess(spec); });
  ASSERT_TRUE(devtime::testing::WaitUntil([&] { return fs::exists(spec.work_dir / "started"); }));
  clock.Advance(std::chrono::seconds(59));  // a job killed now would say 59 s
  clock.Advance(std::chrono::seconds(2));
  ASSERT_EQ(running.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "not killed at its timeout on the spec's clock";
  auto outcome = running.get();
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->elapsed, std::chrono::seconds(61));
  EXPECT_THAT(outcome->Describe(), HasSubstr("timed out after 61 s (killed)"));
}

TEST(RunJobProcess, KeepsOnlyTheTailOfLongOutput) {
  auto outcome = RunJobProcess(Spec("seq 1 100000"));
  ASSERT_TRUE(outcome.ok());
  EXPECT_LE(outcome->stdout_tail.size(), 4096u);
  EXPECT_THAT(outcome->stdout_tail, HasSubstr("100000"));
}

}  // namespace
}  // namespace devtime::agent
