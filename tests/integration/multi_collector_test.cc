// A tier of three collector processes on one PostgreSQL, reached through one address list
// (round-robin): one of them is SIGKILLed mid-ingest and stays dead. Nothing acknowledged is
// lost or stored twice, uploads carry on through the others, the agent daemon whose session
// was on the dead collector reconnects to another one, and the tier's duty (missed slots)
// moves to a surviving collector.
//
// Admin tokens are per collector (--admin-token-file); agent tokens live in the database, so
// one agent token is good on every collector, as in a fleet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "agents/daemon/uploader.h"
#include "nlohmann/json.hpp"
#include "proto/wire/channel.h"
#include "tests/support/collector_client.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::BinaryPath;
using devtime::testing::CollectorProcess;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::RunCommand;
using devtime::testing::Subprocess;
using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;

constexpr int kUploaders = 4;  // concurrent, so that some upload is in flight at the kill
constexpr int kRunsEach = 20;
constexpr int kRuns = kUploaders * kRunsEach;
const std::string kHost = "trn-test-01";  // the host NaiveRmsNormRun writes for
const std::string kFixture = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/legacy_mlp";

// testing::WaitUntil with this file's patience (three collectors starting on a slow machine).
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  return devtime::testing::WaitUntil(condition, limit);
}

// Uploads runs first..first+kRunsEach-1 in order through `target` on its own thread,
// retrying transient failures (UNAVAILABLE when a collector dies), and records what was
// acknowledged.
class Uploader {
 public:
  // Uploads its first half, then waits until `*second_half` is true.
  Uploader(const std::string& target, const std::string& token, int first,
           const std::atomic<bool>* second_half)
      : stub_(v1::Collector::NewStub(
            *wire::ConnectCollector(target, wire::ClientCredentials::WithToken(token)))),
        first_(first),
        second_half_(second_half),
        thread_([this] { Loop(); }) {}
  ~Uploader() { Join(); }

  int acked() const { return acked_count_; }
  bool at_gate() const { return at_gate_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // After Join().
  const std::vector<std::string>& acked_ids() const { return acked_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void Loop() {
    const agent::UploadOptions options = devtime::testing::RetryingUploadOptions();
    for (int i = first_; i < first_ + kRunsEach; ++i) {
      auto ack = agent::Upload(
          *stub_, NaiveRmsNormRun(TestRunId(i), "naive", 1795917600 + i * 86400), options);
      if (ack.ok()) {
        acked_.push_back(ack->run_id());
        ++acked_count_;
      } else {
        errors_.push_back(TestRunId(i) + ": " + std::string(ack.status().message()));
      }
      // Halfway, wait for the test to open the second half, so that the kill is sure to
      // come while uploads still go (on a fast machine they would otherwise all be done).
      if (i == first_ + kRunsEach / 2 - 1) {
        at_gate_ = true;
        if (!WaitFor([&] { return second_half_->load(); })) {
          errors_.push_back("the second half was never opened");
          return;
        }
      }
    }
  }

  std::unique_ptr<v1::Collector::Stub> stub_;
  const int first_;
  const std::atomic<bool>* second_half_;  // before thread_, which reads it
  std::vector<std::string> acked_;
  std::vector<std::string> errors_;
  std::atomic<int> acked_count_{0};
  std::atomic<bool> at_gate_{false};
  std::thread thread_;
};

// Runs stored through this collector, from its /metrics (0 when it does not answer).
long long StoredBy(const CollectorProcess& collector) {
  std::string metrics = devtime::testing::HttpGet(collector.metrics_port(), "/metrics");
  std::smatch match;
  static const std::regex stored(R"re(devtime_ingest_runs_total\{outcome="stored"\} (\d+))re");
  return std::regex_search(metrics, match, stored) ? std::stoll(match[1]) : 0;
}

const char* kTierDuties = "doing the tier's missed-slot duty";

bool DoesTheTiersDuties(const CollectorProcess& collector) {
  return collector.Log().find(kTierDuties) != std::string::npos;
}

bool LeavesTheDutiesToAnother(const CollectorProcess& collector) {
  return collector.Log().find("another collector is doing the tier's duties") != std::string::npos;
}

class MultiCollectorTest : public ::testing::Test {
 protected:
  MultiCollectorTest()
      : dir_(devtime::testing::MakeTempDir("multi-collector")),
        ports_{devtime::testing::FreePort(), devtime::testing::FreePort(),
               devtime::testing::FreePort()} {}

  // Session polls and slot checks fast enough for a test.
  static std::vector<std::string> Fast() {
    return {"--session-poll-ms", "200", "--slot-check-ms", "500"};
  }

  std::unique_ptr<CollectorProcess> StartCollector(int index) {
    return std::make_unique<CollectorProcess>(db_.conninfo(), ports_[index], Fast());
  }

  // The whole tier as one gRPC target, started or not.
  std::string Target() const {
    return "ipv4:127.0.0.1:" + std::to_string(ports_[0]) +
           ",127.0.0.1:" + std::to_string(ports_[1]) + ",127.0.0.1:" + std::to_string(ports_[2]);
  }

  devtime::testing::CommandResult Ctl(const CollectorProcess& collector,
                                      std::vector<std::string> args) {
    args.insert(args.begin(), {BinaryPath("devtimectl"), "--collector", collector.address(),
                               "--token-file", collector.admin_token_file()});
    return RunCommand(args);
  }

  std::string WriteFile(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  TestDatabase db_;
  std::string dir_;
  std::vector<int> ports_;
};

TEST_F(MultiCollectorTest, CollectorKilledMidIngestLosesNothingAndItsAgentMovesToAnother) {
  // Collector A alone at first, so that the agent's session is certainly on A.
  auto a = StartCollector(0);
  auto token = Ctl(*a, {"agents", "add", "fleet-agent", "--host", kHost});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  std::string token_file = WriteFile("agent.token", token.out);
  auto jobs = WriteFile("jobs.yaml",
                        "jobs:\n  - name: probe\n    model: mlp\n    workload: legacy\n"
                        "    command: \"cp " +
                            kFixture + "/* {output_dir}/\"\n    schedule: {cron: \"0 2 * * *\"}\n");
  ASSERT_EQ(Ctl(*a, {"jobs", "apply", "-f", jobs}).exit_code, 0);
  std::string home = dir_ + "/agent";
  std::string config = WriteFile(
      "agent.yaml", "name: fleet-agent\nhost: " + kHost + "\ntoken_file: " + token_file +
                        "\nlabels: {pool: a}\nwork_dir: " + home + "/runs\nspool_dir: " + home +
                        "/spool\nstate_dir: " + home + "/state\n");
  Subprocess agent(
      {BinaryPath("devtime-agent"), "run", "--config", config, "--collector", Target()},
      dir_ + "/agent.log");
  auto agent_log = [&] {
    std::ifstream in(dir_ + "/agent.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(WaitFor([&] { return fs::exists(home + "/state/assignments.pb"); }))
      << agent_log() << a->Log();

  auto b = StartCollector(1);
  auto c = StartCollector(2);
  std::atomic<bool> second_half{false};
  std::vector<std::unique_ptr<Uploader>> uploaders;
  for (int i = 0; i < kUploaders; ++i) {
    uploaders.push_back(std::make_unique<Uploader>(
        Target(), token.out.substr(0, token.out.find('\n')), i * kRunsEach, &second_half));
  }
  auto acked = [&] {
    int sum = 0;
    for (const auto& uploader : uploaders) sum += uploader->acked();
    return sum;
  };
  // Round-robin: every collector of the list takes uploads.
  ASSERT_TRUE(WaitFor([&] { return StoredBy(*a) > 0 && StoredBy(*b) > 0 && StoredBy(*c) > 0; }))
      << "stored by a, b, c: " << StoredBy(*a) << ", " << StoredBy(*b) << ", " << StoredBy(*c);
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& uploader : uploaders) {
      if (!uploader->at_gate()) return false;
    }
    return true;
  })) << "the uploaders did not reach their halfway mark";
  second_half = true;  // the second halves start: the kill lands among them
  ASSERT_LT(acked(), kRuns) << "the uploads finished before the kill";

  a->Kill();  // SIGKILL mid-ingest: uploads in flight on A fail with UNAVAILABLE
  int acked_at_kill = acked();
  std::vector<std::string> acked_ids;
  for (auto& uploader : uploaders) {
    uploader->Join();
    EXPECT_TRUE(uploader->errors().empty()) << uploader->errors().front();
    acked_ids.insert(acked_ids.end(), uploader->acked_ids().begin(), uploader->acked_ids().end());
  }
  EXPECT_GT(acked(), acked_at_kill) << "no upload went through B or C after the kill";

  // Every acknowledged run is in the database exactly once.
  ASSERT_EQ(acked_ids.size(), static_cast<std::size_t>(kRuns));
  EXPECT_EQ(db_.Query("SELECT count(*) FROM runs WHERE job = 'rmsnorm-nightly'"),
            std::to_string(kRuns));
  EXPECT_EQ(db_.Query("SELECT count(DISTINCT run_id) FROM runs"), std::to_string(kRuns));
  for (const std::string& id : acked_ids) {
    EXPECT_EQ(db_.Query("SELECT count(*) FROM runs WHERE run_id = '" + id + "'"), "1") << id;
  }

  // The agent's session was on A: a run-now asked of B reaches it only once it has
  // reconnected to B or C.
  auto now = Ctl(*b, {"jobs", "run-now", "probe"});
  ASSERT_EQ(now.exit_code, 0) << now.err;
  EXPECT_TRUE(WaitFor([&] { return db_.Count("runs") == kRuns + 1; }, std::chrono::seconds(90)))
      << agent_log();
  EXPECT_EQ(db_.Query("SELECT job || ' ' || host FROM runs WHERE job = 'probe'"), "probe " + kHost);
  EXPECT_THAT(agent_log(), ::testing::HasSubstr("session with collector"));
}

TEST_F(MultiCollectorTest, OneCollectorDoesTheTiersDutiesAndAnotherTakesOverWhenItDies) {
  auto a = StartCollector(0);
  ASSERT_TRUE(WaitFor([&] { return DoesTheTiersDuties(*a); })) << a->Log();
  auto b = StartCollector(1);
  auto c = StartCollector(2);
  // B and C find the duties taken at their first slot check.
  ASSERT_TRUE(WaitFor([&] { return LeavesTheDutiesToAnother(*b) && LeavesTheDutiesToAnother(*c); }))
      << b->Log() << c->Log();
  EXPECT_FALSE(DoesTheTiersDuties(*b)) << b->Log();
  EXPECT_FALSE(DoesTheTiersDuties(*c)) << c->Log();

  a->Kill();  // its session ends, and PostgreSQL releases the lock with it
  ASSERT_TRUE(WaitFor([&] { return DoesTheTiersDuties(*b) || DoesTheTiersDuties(*c); }))
      << b->Log() << c->Log();
  EXPECT_NE(DoesTheTiersDuties(*b), DoesTheTiersDuties(*c)) << "exactly one takes over";
}

}  // namespace
}  // namespace devtime
