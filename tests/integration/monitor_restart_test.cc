// Issue 24, between the nights, when things stop: a real devtime-agent runs the fake
// neuron-monitor (tests/fixtures/monitor/fake_neuron_monitor.py) against a real collector on
// PostgreSQL, and
//  - the child dies every 40 reports: the agent restarts it with a growing backoff, logs what
//    it said on stderr, and no window is counted twice;
//  - the agent itself is stopped (SIGTERM, as systemd stops it) in the middle of a window and
//    started again: the window checkpoint makes the resumed agent neither lose nor double any
//    of that window's executions.
// The fake goes on where the last one stopped (--position), as a real neuron-monitor reports
// the time that follows. Every stored window's executions must equal what the stream holds
// (tests/fixtures/monitor/expected_windows.py computes that from the stream, by the format's
// rules, without the agent).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using ::testing::HasSubstr;

constexpr int kHours = 4;
constexpr int kPeriod = 120;                      // 30 reports an hour
constexpr int kLines = kHours * 3600 / kPeriod;   // 120
constexpr long long kWindows = 2 * (kHours - 1);  // both apps; the last hour stays open

class MonitorRestartTest : public devtime::testing::CollectorFixture {
 protected:
  void SetUp() override {
    auto generated = devtime::testing::RunCommand({"python3", fixtures_ + "/gen_monitor_stream.py",
                                                   stream_, "--hours", std::to_string(kHours),
                                                   "--period", std::to_string(kPeriod)});
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
  }

  // agent.yaml's monitor section running the fake with `fake_args`.
  std::string MonitorConfig(const std::string& fake_args) const {
    return "monitor:\n  command: \"python3 " + fixtures_ + "/fake_neuron_monitor.py --stream " +
           stream_ + " --position " + position_ + " " + fake_args +
           "\"\n  period_seconds: " + std::to_string(kPeriod) +
           "\n  window_seconds: 3600\n  max_backoff_seconds: 4\n  replay_start: " +
           std::to_string(midnight_) +
           "\n  apps:\n    - {tag: llama-serve, model: llama, workload: decode}\n"
           "    - {tag_regex: \"bert-.*\", model: bert, workload: serving}\n";
  }

  // "TAG WINDOW_START EXECUTIONS" per closed window, as the stream says they must be.
  std::string Expected() const {
    auto expected = devtime::testing::RunCommand({"python3", fixtures_ + "/expected_windows.py",
                                                  stream_, "--start", std::to_string(midnight_),
                                                  "--period", std::to_string(kPeriod)});
    EXPECT_EQ(expected.exit_code, 0) << expected.err;
    // The last hour is still open: the agent has not delivered it.
    const std::string open = " " + std::to_string(midnight_ + (kHours - 1) * 3600LL) + " ";
    std::string closed;
    std::istringstream lines(expected.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(open) == std::string::npos) closed += line + "\n";
    }
    return closed;
  }

  // The same, as stored.
  std::string Stored() const {
    return db_.Query(
               "SELECT string_agg(runtime_tag || ' ' || extract(epoch FROM at)::bigint || ' ' ||"
               " executions, E'\\n' ORDER BY runtime_tag COLLATE \"C\", at) FROM monitor_windows") +
           "\n";
  }

  int Position() const {
    std::ifstream in(position_);
    int lines = 0;
    in >> lines;
    return lines;
  }

  std::string Log(const std::string& name = "trn-a.log") const {
    return devtime::testing::ReadFile(dir_ + "/" + name);
  }

  std::string dir_ = devtime::testing::MakeTempDir("monitor-restart");
  const std::string fixtures_ = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/monitor";
  const std::string stream_ = dir_ + "/stream.ndjson";
  const std::string position_ = dir_ + "/position";
  // The stream starts at a UTC midnight two days ago.
  const long long midnight_ = (absl::ToUnixSeconds(absl::Now()) / 86400 - 2) * 86400;
};

TEST_F(MonitorRestartTest, ADyingNeuronMonitorIsRestartedWithBackoffAndNoWindowCountsTwice) {
  auto agent = RunAgent(dir_, "trn-a", MonitorConfig("--exit-after 40"));
  // Three runs of 40 reports, each ending in exit status 3; the fourth has nothing left.
  ASSERT_TRUE(devtime::testing::WaitUntil(
      [&] {
        return db_.Count("monitor_windows") >= kWindows &&
               Log().find("restarting in 4 s") != std::string::npos;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(200)))
      << db_.Count("monitor_windows") << " windows\n"
      << Log();
  EXPECT_EQ(Position(), kLines);
  EXPECT_EQ(Stored(), Expected()) << Log();

  // Restarted each time, after 1 s, 2 s, then 4 s (the configured maximum).
  const std::string log = Log();
  const auto first = log.find("neuron-monitor exited with status 3; restarting in 1 s");
  const auto second = log.find("neuron-monitor exited with status 3; restarting in 2 s");
  const auto third = log.find("neuron-monitor exited with status 3; restarting in 4 s");
  ASSERT_NE(first, std::string::npos) << log;
  ASSERT_NE(second, std::string::npos) << log;
  ASSERT_NE(third, std::string::npos) << log;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  // Its stderr is in the agent's log, from every run.
  EXPECT_THAT(log, HasSubstr("neuron-monitor: fake neuron-monitor: going on after line 40"));
  EXPECT_THAT(log, HasSubstr("neuron-monitor: fake neuron-monitor: going on after line 80"));
}

TEST_F(MonitorRestartTest, AnAgentStoppedMidWindowNeitherLosesNorDoublesItsExecutions) {
  // 10 reports a second: hour 1 (reports 30..59) is read for 3 s.
  auto agent = RunAgent(dir_, "trn-a", MonitorConfig("--rate 10"));
  ASSERT_TRUE(devtime::testing::WaitUntil([&] { return Position() >= 40; },
                                          std::chrono::seconds(30), std::chrono::milliseconds(20)))
      << Log();
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->Wait(), 0) << Log();
  const int stopped_at = Position();
  ASSERT_LT(stopped_at, 60) << "the agent stopped after the window ended: nothing to test";
  agent.reset();

  // Started again with the same files, as systemd would.
  agent = std::make_unique<devtime::testing::Subprocess>(
      std::vector<std::string>{devtime::testing::BinaryPath("devtime-agent"), "run", "--config",
                               dir_ + "/trn-a.yaml", "--collector", collector_.address()},
      dir_ + "/trn-a.restarted.log");
  ASSERT_TRUE(devtime::testing::WaitUntil([&] { return db_.Count("monitor_windows") >= kWindows; },
                                          std::chrono::seconds(60), std::chrono::milliseconds(200)))
      << db_.Count("monitor_windows") << " windows\n"
      << Log("trn-a.restarted.log");
  EXPECT_THAT(Log("trn-a.restarted.log"),
              HasSubstr("monitor: continuing 2 open windows from the checkpoint"));
  EXPECT_THAT(Log("trn-a.restarted.log"),
              HasSubstr("going on after line " + std::to_string(stopped_at)));
  EXPECT_EQ(Stored(), Expected()) << Log() << Log("trn-a.restarted.log");
}

}  // namespace
}  // namespace devtime
