// Issue 22: one contract from agent to collector. A real devtime-agent daemon runs jobs whose
// profiles are past the wire contract's limits (20,000 steps, 20,001 operators, names with
// ESC, C1, bidi and NUL characters or over 2,048 bytes, repeated step numbers); each run is
// repaired by the agent, delivered, acknowledged and stored OK by a real collector on
// PostgreSQL, with a warning per repair. Before, each of these lost the whole night's run.
// Also the exit codes of the one-shot commands: `upload` to an unreachable collector exits 3,
// `summarize` of an INVALID capture exits 1, as README.md's table and --help say.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using devtime::testing::AgentCommand;
using ::testing::HasSubstr;

// One legacy-array (torch 1.13) CPU event.
std::string Event(const std::string& name, long long ts, long long dur) {
  return nlohmann::json{{"name", name},
                        {"ph", "X"},
                        {"ts", ts},
                        {"dur", dur},
                        {"tid", 1},
                        {"pid", "CPU functions"},
                        {"args", nlohmann::json::object()}}
      .dump();
}

// A CPU profile: `steps` ProfilerStep windows (numbered by `number(i)`), each holding one
// call of every name in `ops`; step i's first op takes 40 + i % 7 µs.
std::string Trace(std::size_t steps, const std::vector<std::string>& ops,
                  const std::function<long long(std::size_t)>& number) {
  std::string json = "[";
  long long ts = 0;
  for (std::size_t i = 0; i < steps; ++i) {
    const long long step_start = ts;
    std::string inside;
    ts += 1;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const long long dur = k == 0 ? 40 + static_cast<long long>(i % 7) : 1;
      inside += "," + Event(ops[k], ts, dur);
      ts += dur + 1;
    }
    if (i > 0) json += ",";
    json += Event("ProfilerStep#" + std::to_string(number(i)), step_start, ts - step_start);
    json += inside;
    ts += 1;
  }
  return json + "]";
}

long long Ordinal(std::size_t i) { return static_cast<long long>(i); }

class AgentContractTest : public devtime::testing::CollectorFixture {
 protected:
  AgentContractTest() : CollectorFixture({"--session-poll-ms", "200"}) {}

  // A job `name` whose run copies `trace` into its output folder as trace.json.
  std::string Job(const std::string& name, const std::string& trace) {
    const std::string file = devtime::testing::WriteFile(dir_, name + ".json", trace);
    return "  - name: " + name + "\n    model: contract\n    workload: " + name +
           "\n    command: \"cp " + file + " {output_dir}/trace.json\"\n" +
           "    schedule: {cron: \"0 2 * * *\"}\n";
  }

  // Runs each job once through a real daemon; true once every run is stored.
  bool RunJobs(const std::vector<std::string>& names, const std::string& jobs_yaml) {
    auto file = devtime::testing::WriteFile(dir_, "jobs.yaml", "jobs:\n" + jobs_yaml);
    auto apply = Ctl({"jobs", "apply", "-f", file});
    EXPECT_EQ(apply.exit_code, 0) << apply.err;
    agent_ = RunAgent(dir_, "agent-c", "");
    for (const auto& name : names) {
      Wait([&] { return Ctl({"jobs", "run-now", name}).exit_code == 0; });
    }
    return Wait([&] { return db_.Count("runs") == static_cast<long long>(names.size()); });
  }

  // The stored run of workload `name`: `runs show --format json`'s run.
  nlohmann::json StoredRun(const std::string& name) {
    const std::string run_id =
        db_.Query("SELECT run_id::text FROM runs WHERE workload = '" + name + "'");
    auto shown = Ctl({"runs", "show", run_id, "--format", "json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    if (shown.exit_code != 0) return nlohmann::json::object();
    auto json = nlohmann::json::parse(shown.out);
    return json.contains("run") ? json["run"] : json;
  }

  static std::vector<std::string> WarningKinds(const nlohmann::json& run) {
    std::vector<std::string> kinds;
    for (const auto& w : run.value("warnings", nlohmann::json::array())) {
      kinds.push_back(w.value("kind", ""));
    }
    return kinds;
  }

  std::string Log() const { return devtime::testing::ReadFile(dir_ + "/agent-c.log"); }

  static bool Wait(const std::function<bool()>& condition) {
    return devtime::testing::WaitUntil(condition, std::chrono::seconds(120),
                                       std::chrono::milliseconds(200));
  }

  std::string dir_ = devtime::testing::MakeTempDir("agent-contract");
  std::unique_ptr<devtime::testing::Subprocess> agent_;
};

TEST_F(AgentContractTest, TheDaemonDeliversProfilesPastTheContractsLimits) {
  std::vector<std::string> wide;
  for (int i = 0; i < 20'001; ++i) wide.push_back("op_" + std::to_string(i));
  const std::vector<std::string> bad_names = {"aten::mul",
                                              "esc\x1b[31m",
                                              "c1\xc2\x85",
                                              "bidi\xe2\x80\xae",
                                              std::string("nul\0x", 5),
                                              std::string(3'000, 'T') + "<float>"};
  const std::string jobs =
      Job("steps", Trace(20'000, {"aten::mul"}, Ordinal)) + Job("ops", Trace(1, wide, Ordinal)) +
      Job("names", Trace(2, bad_names, Ordinal)) +
      Job("renumber", Trace(4, {"aten::mul"}, [](std::size_t i) { return i % 2; })) +
      Job("past_int", Trace(2, {"aten::mul"}, [](std::size_t i) { return 3'000'000'000 + i; }));
  ASSERT_TRUE(RunJobs({"steps", "ops", "names", "renumber", "past_int"}, jobs)) << Log();

  // Every slot succeeded: each run was acknowledged, none refused.
  EXPECT_EQ(db_.Query("SELECT string_agg(status, ',') FROM runs"), "ok,ok,ok,ok,ok") << Log();
  // The slot reports travel apart from the runs: wait for them.
  EXPECT_TRUE(Wait([&] { return db_.Count("job_slots WHERE outcome = 'succeeded'") == 5; }))
      << db_.Query(
             "SELECT string_agg(job || ': ' || outcome || ' ' || reason, '; ') "
             "FROM job_slots")
      << Log();

  // 20,000 steps: 10,000 buckets of 2, the series value the exact mean over 20,000 steps.
  const nlohmann::json steps = StoredRun("steps");
  EXPECT_THAT(WarningKinds(steps), ::testing::Contains("steps_bucketed"));
  ASSERT_EQ(steps["steps"].size(), 10'000u);
  EXPECT_EQ(steps["steps"][0].value("steps", 0), 2);
  EXPECT_EQ(db_.Query("SELECT step_count FROM runs WHERE workload = 'steps'"), "10000");

  // 20,001 operators: 19,999 and a remainder row.
  const nlohmann::json ops = StoredRun("ops");
  EXPECT_THAT(WarningKinds(ops), ::testing::Contains("operators_merged"));
  EXPECT_EQ(db_.Query("SELECT op_count FROM runs WHERE workload = 'ops'"), "20000");
  EXPECT_EQ(db_.Count("op_stats WHERE op = '(other operators)'"), 1);

  // Names: escaped, and the long one cut with its marker.
  EXPECT_THAT(WarningKinds(StoredRun("names")),
              ::testing::IsSupersetOf({"operator_names_escaped", "operator_names_cut"}));
  for (const char* name : {"esc\\x1b[31m", "c1\\x85", "bidi\\u202e", "nul\\x00x"}) {
    EXPECT_EQ(db_.Count("op_stats WHERE op = '" + std::string(name) + "'"), 1) << name;
  }
  EXPECT_EQ(db_.Count("op_stats WHERE op LIKE 'TTTT%[cut from 3007 bytes, #%]'"), 1);

  // Repeated step numbers, and numbers past a PostgreSQL integer: renumbered from 0.
  for (const auto& [name, numbers] : {std::pair{"renumber", "0,1,2,3"}, {"past_int", "0,1"}}) {
    EXPECT_THAT(WarningKinds(StoredRun(name)), ::testing::Contains("steps_renumbered"));
    EXPECT_EQ(db_.Query(std::string("SELECT string_agg(step::text, ',' ORDER BY step) FROM ") +
                        "run_steps s JOIN runs r USING (run_id) WHERE r.workload = '" + name + "'"),
              numbers);
  }
}

// A summary the agent printed is one `upload` delivers: the same repairs in one-shot use.
TEST_F(AgentContractTest, SummarizeJsonOfATwentyThousandStepProfileUploads) {
  const std::string trace =
      devtime::testing::WriteFile(dir_, "steps.json", Trace(20'000, {"aten::mul"}, Ordinal));
  auto summarized = AgentCommand({"summarize", trace, "--format", "json", "--model", "m"});
  ASSERT_EQ(summarized.exit_code, 0) << summarized.err;
  EXPECT_THAT(summarized.err, HasSubstr("repaired: the profile has 20000 steps"));
  const std::string file = devtime::testing::WriteFile(dir_, "run.json", summarized.out);
  auto uploaded = AgentUpload({file});
  EXPECT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_THAT(uploaded.out, HasSubstr("stored "));
}

// A port nothing listens on (bound, never listening, so no other test takes it meanwhile).
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~ClosedPort() { ::close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

int Occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(AgentExitCodes, UploadToAnUnreachableCollectorExits3AndSaysTheErrorOnce) {
  const std::string dir = devtime::testing::MakeTempDir("agent-exit");
  const std::string file = devtime::testing::WriteFile(
      dir, "run.json",
      AgentCommand({"summarize",
                    std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/legacy_mlp",
                    "--format", "json"})
          .out);
  ClosedPort closed;
  auto upload = AgentCommand({"upload", "--collector", closed.address(), "--retry-for", "3", file});
  EXPECT_EQ(upload.exit_code, 3) << upload.err;
  // The long description at the first retry and at the end; short lines between.
  EXPECT_EQ(Occurrences(upload.err, "unreachable: is devtime-collector running"), 2) << upload.err;
  EXPECT_THAT(upload.err, HasSubstr("retry 2, the same error"));
}

TEST(AgentExitCodes, SummarizeOfAnInvalidCaptureExits1AsItsHelpSays) {
  auto summarized =
      AgentCommand({"summarize", std::string(DEVTIME_SOURCE_DIR) +
                                     "/tests/fixtures/trace/kineto_neuron_no_device.json"});
  EXPECT_EQ(summarized.exit_code, 1) << summarized.err;
  EXPECT_THAT(summarized.err, HasSubstr("the run is INVALID"));
  auto help = AgentCommand({"summarize", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("1 the capture is INVALID"));
}

}  // namespace
}  // namespace devtime
