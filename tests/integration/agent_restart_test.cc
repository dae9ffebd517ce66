// An agent killed in the middle of a job (SIGKILL: no chance to clean up) reports the slot
// when it comes back: summarized and stored if the job finished while the agent was away,
// else failed, "agent restarted during the run" (issue 11 item 6). A real devtime-agent on a
// real collector; the job waits for a file, so the kill lands mid-job every time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::Subprocess;
using ::testing::HasSubstr;

const std::string kFixture = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/legacy_mlp";

class AgentRestartTest : public devtime::testing::CollectorFixture {
 protected:
  AgentRestartTest() : CollectorFixture({"--session-poll-ms", "200"}) {
    // Runs in its run folder: says its process group, waits for ../go (in the job's folder),
    // then leaves a complete capture (run.json among it).
    auto file = devtime::testing::WriteFile(
        dir_, "jobs.yaml",
        "jobs:\n  - name: waits\n    model: mlp\n    workload: waits\n"
        "    command: \"echo $$ > pid; while [ ! -e ../go ]; do sleep 0.05; done; cp " +
            kFixture + "/* {output_dir}/\"\n    schedule: {cron: \"0 2 * * *\"}\n");
    auto apply = Ctl({"jobs", "apply", "-f", file});
    EXPECT_EQ(apply.exit_code, 0) << apply.err;
  }

  // Starts the agent, runs the job now and returns once the job is running; its run id.
  std::string StartMidJob() {
    agent_ = RunAgent(dir_, "agent-r", "");
    Wait([&] { return Ctl({"jobs", "run-now", "waits"}).exit_code == 0; });
    Wait([&] { return JobFile("pid").has_value(); });
    EXPECT_TRUE(JobFile("pid")) << Log();
    return JobFile("pid") ? JobFile("pid")->parent_path().filename().string() : "";
  }

  // `name` in the (one) run folder of the job, once it exists.
  std::optional<fs::path> JobFile(const std::string& name) const {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(JobDir(), ec)) {
      if (entry.path().filename() == name) return entry.path();
    }
    return std::nullopt;
  }
  fs::path JobDir() const { return fs::path(dir_) / "agent-r" / "runs" / "waits"; }

  void KillAgent() {
    agent_->Signal(SIGKILL);
    agent_->Wait();
  }
  void RestartAgent() {  // with the same files, as systemd would
    agent_ = std::make_unique<Subprocess>(
        std::vector<std::string>{devtime::testing::BinaryPath("devtime-agent"), "run", "--config",
                                 dir_ + "/agent-r.yaml", "--collector", collector_.address()},
        dir_ + "/agent-r.restarted.log");
  }

  // The job's slot with `run_id`, once its outcome is final ("" until then).
  std::string FinalOutcome(const std::string& run_id) {
    auto history = Ctl({"jobs", "history", "waits", "--format", "json"});
    if (history.exit_code != 0) return "";
    auto json = nlohmann::json::parse(history.out);
    for (const auto& slot : json.value("slots", nlohmann::json::array())) {
      if (slot.value("run_id", "") != run_id) continue;
      const std::string outcome = slot.value("outcome", "");
      if (outcome == "SLOT_OUTCOME_RUNNING") return "";
      return outcome + ": " + slot.value("reason", "");
    }
    return "";
  }

  std::string Log() const {
    return devtime::testing::ReadFile(dir_ + "/agent-r.log") +
           devtime::testing::ReadFile(dir_ + "/agent-r.restarted.log");
  }
  static void Wait(const std::function<bool()>& condition) {
    devtime::testing::WaitUntil(condition, std::chrono::seconds(60),
                                std::chrono::milliseconds(200));
  }

  std::string dir_ = devtime::testing::MakeTempDir("agent-restart");
  std::unique_ptr<Subprocess> agent_;
};

TEST_F(AgentRestartTest, ASlotRunningWhenTheAgentWasKilledIsReportedFailedOnRestart) {
  const std::string run_id = StartMidJob();
  KillAgent();
  // The job's process group outlives a SIGKILLed agent; here it dies with it.
  auto pid = devtime::testing::ReadFile(JobFile("pid")->string());
  ASSERT_EQ(::kill(-std::stoi(pid), SIGKILL), 0);

  RestartAgent();
  Wait([&] { return !FinalOutcome(run_id).empty(); });
  EXPECT_EQ(FinalOutcome(run_id), "SLOT_OUTCOME_FAILED: agent restarted during the run") << Log();
  Wait([&] { return db_.Count("runs") == 1; });
  EXPECT_EQ(db_.Query("SELECT run_id || ' ' || status || ': ' || status_reason FROM runs"),
            run_id + " failed: agent restarted during the run");
}

TEST_F(AgentRestartTest, AJobThatFinishedWhileItsAgentWasDownIsStoredOnRestart) {
  const std::string run_id = StartMidJob();
  KillAgent();
  std::ofstream(JobDir() / "go").flush();  // the job goes on without its agent and finishes
  Wait([&] { return JobFile("run.json").has_value(); });
  ASSERT_TRUE(JobFile("run.json"));

  RestartAgent();
  Wait([&] { return !FinalOutcome(run_id).empty(); });
  EXPECT_EQ(FinalOutcome(run_id), "SLOT_OUTCOME_SUCCEEDED: ") << Log();
  Wait([&] { return db_.Count("runs") == 1; });
  EXPECT_EQ(db_.Query("SELECT run_id || ' ' || status FROM runs"), run_id + " ok");
}

}  // namespace
}  // namespace devtime
