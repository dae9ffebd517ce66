// Scheduled jobs on real processes: a devtime-collector, devtime-agent daemons and
// devtimectl, PostgreSQL underneath. Jobs copy a real torch 1.13 profile (a committed
// fixture) into their output folder, so they finish in milliseconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agents/daemon/spool.h"
#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/matchers.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::RunCommand;
using devtime::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixture = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/legacy_mlp";

class JobsTest : public devtime::testing::CollectorFixture {
 protected:
  JobsTest() : CollectorFixture(Fast()), dir_(devtime::testing::MakeTempDir("jobs")) {}

  static std::vector<std::string> Fast() {
    return {"--session-poll-ms", "200", "--slot-check-ms", "1000", "--missed-slot-grace", "3"};
  }

  std::string WriteFile(const std::string& name, const std::string& content) {
    return devtime::testing::WriteFile(dir_, name, content);
  }

  // Starts an agent named `name` with the given labels and waits until the collector lists
  // it; returns its process.
  std::unique_ptr<Subprocess> StartAgent(const std::string& name, const std::string& labels,
                                         int metrics_port = 0) {
    std::string config = "labels: " + labels + "\n";
    if (metrics_port) config += "metrics_listen: 127.0.0.1:" + std::to_string(metrics_port) + "\n";
    auto agent = RunAgent(dir_, name, config);
    WaitFor([&] { return Ctl({"agents", "list"}).out.find(name + " ") != std::string::npos; });
    return agent;
  }

  std::string AgentLog(const std::string& name) {
    return devtime::testing::ReadFile(dir_ + "/" + name + ".log");
  }

  // Most conditions here run devtimectl, so they are tried every 200 ms, not faster; what
  // did not come true by `limit` is what the test's next expectation reports.
  static void WaitFor(const std::function<bool()>& condition,
                      std::chrono::seconds limit = std::chrono::seconds(90)) {
    devtime::testing::WaitUntil(condition, limit, std::chrono::milliseconds(200));
  }

  nlohmann::json History(const std::string& job) {
    auto result = Ctl({"jobs", "history", job, "--format", "json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto json = nlohmann::json::parse(result.out);
    return json.contains("slots") ? json["slots"] : nlohmann::json::array();
  }

  static bool HasOutcome(const nlohmann::json& slots, const std::string& outcome) {
    for (const auto& slot : slots) {
      if (slot.value("outcome", "") == outcome) return true;
    }
    return false;
  }

  std::string dir_;
};

std::string CopyFixtureCommand() { return "cp " + kFixture + "/* {output_dir}/"; }

TEST_F(JobsTest, ApplyRejectsABadFileNamingLineAndFieldAndStoresNothing) {
  auto file = WriteFile("bad.yaml",
                        "jobs:\n  - name: a\n    model: m\n    workload: w\n"
                        "    command: c\n    schedule: {cron: \"0 2 * * MOON\"}\n");
  auto apply = Ctl({"jobs", "apply", "-f", file});
  EXPECT_EQ(apply.exit_code, 2);
  EXPECT_THAT(apply.err, HasSubstr("bad.yaml:2: jobs[0].schedule.cron: day-of-week: 'MOON'"));
  EXPECT_EQ(db_.Count("jobs"), 0);
}

TEST_F(JobsTest, SlotFiresOnTimeWithTheCollectorAwayAndUnrunSlotsAreReportedMissed) {
  auto file = WriteFile(
      "jobs.yaml",
      "jobs:\n"
      "  - name: every-minute\n    model: mlp\n    workload: legacy\n"
      "    command: \"" +
          CopyFixtureCommand() +
          "\"\n"
          "    schedule: {cron: \"* * * * *\"}\n    selector: {labels: {pool: a}}\n"
          "  - name: nobody-runs-me\n    model: mlp\n    workload: orphan\n    command: \"true\"\n"
          "    schedule: {cron: \"* * * * *\"}\n    selector: {labels: {pool: none}}\n"
          "  - name: host-is-down\n    model: mlp\n    workload: down\n    command: \"true\"\n"
          "    schedule: {cron: \"* * * * *\"}\n    selector: {labels: {pool: gone}}\n");
  auto apply = Ctl({"jobs", "apply", "-f", file});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_THAT(apply.out, HasSubstr("created   every-minute"));
  auto agent = StartAgent("agent-a", "{pool: a}");
  StartAgent("agent-gone", "{pool: gone}")->Signal(SIGKILL);  // known, then down for good
  WaitFor([&] { return fs::exists(dir_ + "/agent-a/state/assignments.pb"); });

  // The collector is away across the next slot: the agent runs it from its last known
  // schedule and delivers the run and the slot report when the collector is back.
  absl::Time slot = absl::FromUnixSeconds((absl::ToUnixSeconds(absl::Now()) / 60 + 1) * 60);
  if (slot - absl::Now() < absl::Seconds(8)) slot += absl::Minutes(1);
  collector_.Kill();
  absl::SleepFor(slot + absl::Seconds(5) - absl::Now());
  collector_.Start();

  std::string slot_text = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", slot, absl::UTCTimeZone());
  auto succeeded_slot = [&] {
    for (const auto& s : History("every-minute")) {
      if (s["slot_time"] == slot_text && s["outcome"] == "SLOT_OUTCOME_SUCCEEDED") return s;
    }
    return nlohmann::json();
  };
  WaitFor([&] { return !succeeded_slot().is_null(); });
  auto done = succeeded_slot();
  ASSERT_FALSE(done.is_null()) << History("every-minute").dump() << AgentLog("agent-a");
  absl::Time started;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, done["started_at"].get<std::string>(), &started,
                              nullptr));
  EXPECT_GE(started, slot);
  EXPECT_LT(started - slot, absl::Seconds(5)) << "the slot did not fire on time";
  std::string run_id = done["run_id"];
  WaitFor([&] { return Ctl({"runs", "show", run_id}).exit_code == 0; }, std::chrono::seconds(30));
  auto show = Ctl({"runs", "show", run_id});
  ASSERT_EQ(show.exit_code, 0) << show.err << AgentLog("agent-a");
  EXPECT_THAT(show.out, HasSubstr("job       every-minute"));
  EXPECT_THAT(show.out, HasSubstr("mlp / legacy"));

  WaitFor([&] { return HasOutcome(History("nobody-runs-me"), "SLOT_OUTCOME_MISSED_NO_AGENT"); });
  EXPECT_TRUE(HasOutcome(History("nobody-runs-me"), "SLOT_OUTCOME_MISSED_NO_AGENT"));
  EXPECT_THAT(Ctl({"jobs", "history", "nobody-runs-me"}).out, HasSubstr("no agent matches"));
  WaitFor([&] { return HasOutcome(History("host-is-down"), "SLOT_OUTCOME_MISSED_AGENT_DOWN"); });
  EXPECT_TRUE(HasOutcome(History("host-is-down"), "SLOT_OUTCOME_MISSED_AGENT_DOWN"));
  EXPECT_THAT(Ctl({"jobs", "history", "host-is-down"}).out,
              HasSubstr("agent agent-gone did not run this slot"));
}

TEST_F(JobsTest, RunNowRunsAtOnceAndAHangingJobIsKilledAtItsTimeout) {
  auto file = WriteFile(
      "jobs.yaml",
      "jobs:\n"
      "  - name: nightly\n    model: mlp\n    workload: legacy\n"
      "    command: \"" +
          CopyFixtureCommand() +
          "\"\n    schedule: {cron: \"0 2 * * *\"}\n"
          "  - name: hangs\n    model: mlp\n    workload: hang\n    command: \"sleep 600\"\n"
          "    schedule: {cron: \"0 2 * * *\"}\n    timeout_seconds: 2\n");
  ASSERT_EQ(Ctl({"jobs", "apply", "-f", file}).exit_code, 0);
  int metrics_port = devtime::testing::FreePort();
  auto agent = StartAgent("agent-b", "{pool: b}", metrics_port);

  auto now = Ctl({"jobs", "run-now", "nightly"});
  ASSERT_EQ(now.exit_code, 0) << now.err;
  WaitFor([&] { return HasOutcome(History("nightly"), "SLOT_OUTCOME_SUCCEEDED"); },
          std::chrono::seconds(30));
  auto slots = History("nightly");
  ASSERT_TRUE(HasOutcome(slots, "SLOT_OUTCOME_SUCCEEDED")) << slots.dump() << AgentLog("agent-b");
  EXPECT_TRUE(slots[0].value("run_now", false));
  WaitFor([&] { return db_.Count("runs") == 1; });
  EXPECT_EQ(db_.Query("SELECT job || ' ' || status FROM runs"), "nightly ok");

  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(Ctl({"jobs", "run-now", "hangs"}).exit_code, 0);
  WaitFor([&] { return HasOutcome(History("hangs"), "SLOT_OUTCOME_FAILED"); },
          std::chrono::seconds(30));
  auto hung = History("hangs");
  ASSERT_TRUE(HasOutcome(hung, "SLOT_OUTCOME_FAILED")) << hung.dump();
  EXPECT_THAT(hung[0]["reason"].get<std::string>(), HasSubstr("timed out after 2 s"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  WaitFor([&] { return db_.Count("runs") == 2; });
  EXPECT_EQ(db_.Query("SELECT status || ': ' || status_reason FROM runs WHERE job = 'hangs'"),
            "failed: timed out after 2 s (killed)");
  EXPECT_EQ(RunCommand({"pgrep", "-f", "^sleep 600"}).exit_code, 1) << "the hanging job survived";

  // The agent's own metrics tell the same story.
  WaitFor([&] {
    return devtime::testing::HttpGet(metrics_port, "/metrics").find("devtime_agent_spool_runs 0") !=
           std::string::npos;
  });
  EXPECT_THAT(devtime::testing::HttpGet(metrics_port, "/metrics"),
              devtime::testing::ContainsEach(
                  {"devtime_agent_jobs_total{job=\"nightly\",outcome=\"succeeded\"} 1",
                   "devtime_agent_jobs_total{job=\"hangs\",outcome=\"failed\"} 1",
                   "devtime_agent_last_success_timestamp_seconds{job=\"nightly\"}",
                   "devtime_agent_job_duration_seconds_count{job=\"hangs\"} 1",
                   "devtime_agent_collector_connected 1", "devtime_agent_spool_bytes 0"}));
}

TEST_F(JobsTest, FailedRunIsRetriedAndAJobNeverRunsTwiceAtOnce) {
  // Fails on its first attempt (no marker yet in the job's folder), succeeds on the retry.
  auto file = WriteFile("jobs.yaml",
                        "jobs:\n"
                        "  - name: flaky\n    model: mlp\n    workload: flaky\n"
                        "    command: \"if [ -f ../tried ]; then " +
                            CopyFixtureCommand() +
                            "; else touch ../tried; echo first attempt fails >&2; exit 1; fi\"\n"
                            "    schedule: {cron: \"0 2 * * *\"}\n    retries: 1\n"
                            "  - name: slow\n    model: mlp\n    workload: slow\n"
                            "    command: \"sleep 3; " +
                            CopyFixtureCommand() + "\"\n    schedule: {cron: \"0 2 * * *\"}\n");
  ASSERT_EQ(Ctl({"jobs", "apply", "-f", file}).exit_code, 0);
  auto agent = StartAgent("agent-e", "{pool: e}");

  ASSERT_EQ(Ctl({"jobs", "run-now", "flaky"}).exit_code, 0);
  WaitFor([&] { return HasOutcome(History("flaky"), "SLOT_OUTCOME_SUCCEEDED"); },
          std::chrono::seconds(30));
  auto text = Ctl({"jobs", "history", "flaky"}).out;
  EXPECT_THAT(text, HasSubstr("succeeded"));
  WaitFor([&] { return db_.Count("runs") == 2; });
  EXPECT_EQ(db_.Query("SELECT string_agg(status || ':' || status_reason, ',' ORDER BY status)"
                      " FROM runs WHERE job = 'flaky'"),
            "failed:exit code 1: first attempt fails,ok:");

  ASSERT_EQ(Ctl({"jobs", "run-now", "slow"}).exit_code, 0);
  WaitFor([&] { return HasOutcome(History("slow"), "SLOT_OUTCOME_RUNNING"); },
          std::chrono::seconds(20));
  ASSERT_EQ(Ctl({"jobs", "run-now", "slow"}).exit_code, 0);  // while the first still runs
  WaitFor([&] { return HasOutcome(History("slow"), "SLOT_OUTCOME_SKIPPED_STILL_RUNNING"); },
          std::chrono::seconds(20));
  EXPECT_TRUE(HasOutcome(History("slow"), "SLOT_OUTCOME_SKIPPED_STILL_RUNNING"));
  WaitFor([&] { return HasOutcome(History("slow"), "SLOT_OUTCOME_SUCCEEDED"); },
          std::chrono::seconds(30));
  EXPECT_TRUE(HasOutcome(History("slow"), "SLOT_OUTCOME_SUCCEEDED"));
  WaitFor([&] { return db_.Count("runs") == 3; });
  EXPECT_EQ(db_.Query("SELECT count(*) FROM runs WHERE job = 'slow'"), "1");
}

// Fills an agent's spool as finished jobs would, before the agent starts.
void FillSpool(const std::string& spool_dir, int runs, const std::string& host) {
  auto spool = *agent::Spool::Open(spool_dir, 1ull << 32);
  for (int i = 0; i < runs; ++i) {
    auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(i), "naive",
                                                 1795917600 + i * 60);
    run.mutable_identity()->set_host(host);
    ASSERT_TRUE(spool->Put(run).ok());
  }
}

TEST_F(JobsTest, AgentKilledMidUploadResumesItsSpoolWithNoLossNoDuplicates) {
  FillSpool(dir_ + "/agent-c/spool", 200, "agent-c");
  auto agent = StartAgent("agent-c", "{pool: c}");
  WaitFor([&] { return db_.Count("runs") >= 20; });
  agent->Signal(SIGKILL);  // mid-upload: some runs acked, some not yet deleted
  agent->Wait();
  long long before = db_.Count("runs");
  EXPECT_LT(before, 200) << "the agent finished before it could be killed";
  agent = StartAgent("agent-c", "{pool: c}");
  WaitFor([&] { return db_.Count("runs") == 200 && fs::is_empty(dir_ + "/agent-c/spool"); });
  EXPECT_EQ(db_.Count("runs"), 200);
  EXPECT_EQ(db_.Count("op_stats"), 200 * 4);
  EXPECT_TRUE(fs::is_empty(dir_ + "/agent-c/spool")) << AgentLog("agent-c");
}

TEST_F(JobsTest, CollectorKilledRepeatedlyWhileAnAgentUploads500RunsStoresEachOnce) {
  FillSpool(dir_ + "/agent-d/spool", 500, "agent-d");
  auto agent = StartAgent("agent-d", "{pool: d}");
  for (int kill = 1; kill <= 4; ++kill) {
    WaitFor([&] { return db_.Count("runs") >= kill * 80; });
    collector_.Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    collector_.Start();
  }
  WaitFor([&] { return fs::is_empty(dir_ + "/agent-d/spool"); }, std::chrono::seconds(180));
  EXPECT_EQ(db_.Count("runs"), 500) << AgentLog("agent-d");
  EXPECT_EQ(db_.Query("SELECT count(DISTINCT run_id) FROM runs"), "500");
  EXPECT_TRUE(fs::is_empty(dir_ + "/agent-d/spool"));
}

TEST_F(JobsTest, RunNowThatNoAgentCouldTakeIsRefusedAndAWaitingOneShowsUntilItExpires) {
  WriteFile("waiting.yaml",
            "jobs:\n  - {name: waiting, model: m, workload: w, command: \"true\",\n"
            "    schedule: {cron: \"0 3 * * *\"}, selector: {labels: {pool: w}}}\n");
  ASSERT_EQ(Ctl({"jobs", "apply", "-f", dir_ + "/waiting.yaml"}).exit_code, 0);

  auto refused = Ctl({"jobs", "run-now", "waiting"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("no agent matches job waiting"));
  EXPECT_THAT(refused.err, HasSubstr("known agents: none"));
  EXPECT_EQ(db_.Count("run_requests"), 0) << "a refused request stores nothing";

  // An agent that matches but has gone away: the request waits for it, visibly.
  auto agent = StartAgent("agent-w", "{pool: w}");
  agent->Signal(SIGKILL);
  agent->Wait();
  WaitFor([&] {  // its row in `agents list` says connected: no
    const std::string list = Ctl({"agents", "list"}).out;
    const auto row = list.find("agent-w");
    return row != std::string::npos &&
           list.substr(row, list.find('\n', row) - row).find(" no ") != std::string::npos;
  });
  auto queued = Ctl({"jobs", "run-now", "waiting"});
  EXPECT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_THAT(queued.out, HasSubstr("for agent-w"));
  EXPECT_THAT(queued.out, HasSubstr("none of them is connected now"));
  EXPECT_THAT(Ctl({"jobs", "show", "waiting"}).out, HasSubstr("run-now   request "));

  // A day later it is gone: no agent takes it, and jobs show no longer lists it.
  db_.Query("UPDATE run_requests SET requested_at = now() - interval '25 hours'");
  EXPECT_THAT(Ctl({"jobs", "show", "waiting"}).out, Not(HasSubstr("run-now   request ")));
}

}  // namespace
}  // namespace devtime
