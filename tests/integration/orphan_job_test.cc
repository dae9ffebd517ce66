// A SIGKILLed agent leaves no job running (issue 26): its job's process group is recorded in the
// agent's state directory (job_runner.h), and the restarted agent kills what is left before it
// reports or retries anything, so two copies of a job never run at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <optional>

#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::Subprocess;

bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0; }

class OrphanJobTest : public devtime::testing::CollectorFixture {
 protected:
  OrphanJobTest() : CollectorFixture({"--session-poll-ms", "200"}) {
    // Says its process group in its run folder, then runs until killed (a child `sleep`, so the
    // group has more than the shell in it).
    auto file = devtime::testing::WriteFile(
        dir_, "jobs.yaml",
        "jobs:\n  - name: forever\n    model: mlp\n    workload: forever\n"
        "    command: \"echo $$ > pid; while true; do sleep 0.05; done\"\n"
        "    schedule: {cron: \"0 2 * * *\"}\n");
    auto apply = Ctl({"jobs", "apply", "-f", file});
    EXPECT_EQ(apply.exit_code, 0) << apply.err;
  }

  // The process groups of the job's copies so far (one run folder each).
  std::vector<pid_t> Copies() const {
    std::vector<pid_t> groups;
    std::error_code ec;
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path(dir_) / "agent-o" / "runs" / "forever", ec)) {
      if (entry.path().filename() != "pid") continue;
      std::string text = devtime::testing::ReadFile(entry.path().string());
      if (!text.empty() && text.back() == '\n') groups.push_back(std::stoi(text));
    }
    return groups;
  }
  void RunNow() {
    Wait([&] { return Ctl({"jobs", "run-now", "forever"}).exit_code == 0; });
  }
  std::string Log() const {
    return devtime::testing::ReadFile(dir_ + "/agent-o.log") +
           devtime::testing::ReadFile(dir_ + "/agent-o.restarted.log");
  }
  static bool Wait(const std::function<bool()>& condition) {
    return devtime::testing::WaitUntil(condition, std::chrono::seconds(60),
                                       std::chrono::milliseconds(100));
  }

  std::string dir_ = devtime::testing::MakeTempDir("orphan-job");
  std::unique_ptr<Subprocess> agent_;
};

TEST_F(OrphanJobTest, TheRestartedAgentKillsTheOrphanBeforeRunningTheJobAgain) {
  agent_ = RunAgent(dir_, "agent-o", "");
  RunNow();
  ASSERT_TRUE(Wait([&] { return Copies().size() == 1; })) << Log();
  const pid_t orphan = Copies().front();
  ASSERT_TRUE(GroupAlive(orphan));

  agent_->Signal(SIGKILL);
  agent_->Wait();
  EXPECT_TRUE(GroupAlive(orphan)) << "the job's group died with its agent: nothing to test";

  agent_ = std::make_unique<Subprocess>(
      std::vector<std::string>{devtime::testing::BinaryPath("devtime-agent"), "run", "--config",
                               dir_ + "/agent-o.yaml", "--collector", collector_.address()},
      dir_ + "/agent-o.restarted.log");
  // Gone within a bound (before the agent connects); today it runs on for good.
  EXPECT_TRUE(
      devtime::testing::WaitUntil([&] { return !GroupAlive(orphan); }, std::chrono::seconds(20)))
      << Log();
  // The agent says so once the groups are gone: wait for the line, not only for the group.
  EXPECT_TRUE(Wait([&] {
    return Log().find("killed 1 job process group(s) left running") != std::string::npos;
  })) << Log();

  // The job again: one copy at a time.
  RunNow();
  ASSERT_TRUE(Wait([&] { return Copies().size() == 2; })) << Log();
  EXPECT_FALSE(GroupAlive(orphan));
  for (pid_t group : Copies()) {
    if (group != orphan) {
      EXPECT_TRUE(GroupAlive(group));
    }
  }

  // SIGTERM ends the running copy with the agent.
  const pid_t second = Copies().back() == orphan ? Copies().front() : Copies().back();
  agent_->Signal(SIGTERM);
  agent_->Wait();
  EXPECT_TRUE(
      devtime::testing::WaitUntil([&] { return !GroupAlive(second); }, std::chrono::seconds(20)));
}

}  // namespace
}  // namespace devtime
