// Culprit hunts (issue 25), end to end without a device: a real devtime-agent runs a CPU
// workload (hunt_workload.py) whose speed depends on the "compiler" it imports — versions of a
// Python module on disk, some with the naive five-op RMSNorm — chosen by a pinned path
// (compiler-{pin:compiler}); a real collector on a real PostgreSQL detects the regression,
// confirms it, and hunts. Each scenario prints the culprit runs spent and the time to verdict.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>

#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::ReadFile;
using devtime::testing::WaitUntil;
using devtime::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kSources = std::string(DEVTIME_SOURCE_DIR) + "/tests/integration/";

class HuntTest : public devtime::testing::CollectorFixture {
 protected:
  HuntTest()
      : CollectorFixture(
            {"--session-poll-ms", "200", "--hunt-poll-ms", "200", "--hunt-run-timeout-s", "60"}) {}

  // compiler-VERSION/rmsnorm_impl.py, naive or fused.
  void Compiler(const std::string& version, bool naive) {
    std::string text = ReadFile(kSources + "hunt_compiler.py");
    text.replace(text.find("@VERSION@"), 9, version);
    text.replace(text.find("@NAIVE@"), 7, naive ? "True" : "False");
    fs::create_directories(dir_ + "/compiler-" + version);
    WriteFile(dir_ + "/compiler-" + version, "rmsnorm_impl.py", text);
  }
  void Runtime(const std::string& version) {
    fs::create_directories(dir_ + "/runtime-" + version);
    WriteFile(dir_ + "/runtime-" + version, "VERSION", version + "\n");
  }
  // What the host's "current" compiler and runtime are (as an upgrade would move them).
  void Current(const std::string& key, const std::string& version) {
    const fs::path link = dir_ + "/" + key + "-current";
    fs::remove(link);
    fs::create_directory_symlink(dir_ + "/" + key + "-" + version, link);
  }

  void ApplyJob(const std::string& compiler_source) {
    const std::string command =
        "PYTHONPATH=" + dir_ + "/compiler-{pin:compiler} python3 " + kSources +
        "hunt_workload.py --out {output_dir} --steps {steps} --runtime-dir " + dir_ +
        "/runtime-{pin:runtime} --model-code " + dir_ + "/model_code";
    auto file = WriteFile(dir_, "jobs.yaml",
                          "jobs:\n  - name: nightly\n    model: rmsnorm\n    workload: fused\n"
                          "    command: \"" +
                              command +
                              "\"\n"
                              "    schedule: {cron: \"0 2 * * *\"}\n    capture_steps: 12\n"
                              "    pins:\n      compiler: {default: current" +
                              compiler_source + "}\n      runtime: {default: current}\n");
    auto apply = Ctl({"jobs", "apply", "-f", file});
    ASSERT_EQ(apply.exit_code, 0) << apply.err;
  }

  // Compiler 1.0 (fused) and 2.0 (naive RMSNorm), runtimes 1.0 and 1.1, the job applied: the
  // host is on 1.0 / 1.0 until MoveCompilerAndRuntime() upgrades both in one night.
  void CompilerAndRuntimeCanMove() {
    Compiler("1.0", false);
    Compiler("2.0", true);
    Runtime("1.0");
    Runtime("1.1");
    Current("compiler", "1.0");
    Current("runtime", "1.0");
    WriteFile(dir_, "model_code", "fused\n");
    ApplyJob("");
  }
  void MoveCompilerAndRuntime() {
    Current("compiler", "2.0");
    Current("runtime", "1.1");
  }

  int Succeeded() const {
    return std::stoi("0" + db_.Query("SELECT count(*) FROM runs WHERE status = 'ok'"));
  }

  // One night: the job run now, stored and judged.
  void Night() {
    const int before = Succeeded();
    ASSERT_TRUE(WaitUntil([&] { return Ctl({"jobs", "run-now", "nightly"}).exit_code == 0; }));
    ASSERT_TRUE(WaitUntil([&] { return Succeeded() > before; }, std::chrono::seconds(30)))
        << ReadFile(dir_ + "/agent-h.log");
    ASSERT_TRUE(WaitUntilAllAnalysed());
  }

  // Five good nights, then the night of `change`; returns the regression's hunt once it has
  // a verdict (printing its runs and time to verdict). `mid_hunt`, when given, runs once the
  // hunt has started; the verdict is awaited for `verdict_within`.
  nlohmann::json HuntAfter(const std::function<void()>& change,
                           const std::function<void()>& mid_hunt = {},
                           std::chrono::seconds verdict_within = std::chrono::seconds(80)) {
    agent_ = RunAgent(dir_, "agent-h", "");
    for (int i = 0; i < 5; ++i) {
      Night();
      if (HasFatalFailure()) return {};
    }
    change();
    const auto started = std::chrono::steady_clock::now();
    Night();
    if (HasFatalFailure()) return {};
    if (mid_hunt) {
      EXPECT_TRUE(WaitUntil([&] { return db_.Query("SELECT count(*) FROM hunts") == "1"; },
                            std::chrono::seconds(30)));
      mid_hunt();
    }
    const bool done = WaitUntil(
        [&] {
          const std::string state = db_.Query("SELECT string_agg(state, ',') FROM hunts");
          return !state.empty() && state.find("hunting") == std::string::npos;
        },
        verdict_within, std::chrono::milliseconds(200));
    EXPECT_TRUE(done) << db_.Query("SELECT hunt::text FROM hunts") << "\n"
                      << ReadFile(dir_ + "/agent-h.log");
    const std::string id = db_.Query("SELECT max(regression_id) FROM regressions");
    auto show = Ctl({"regressions", "show", id, "--format", "json"});
    EXPECT_EQ(show.exit_code, 0) << show.err;
    auto json = nlohmann::json::parse(show.out, nullptr, false);
    if (!json.is_object()) return {};
    auto hunt = json.value("hunt", nlohmann::json::object());
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cout << "hunt: " << hunt.value("runs_spent", 0) << " culprit runs, verdict "
              << hunt.value("finished_at", "") << " after " << hunt.value("started_at", "") << " ("
              << wall << " s from the bad night's run-now)\n  " << hunt.value("verdict", "")
              << std::endl;
    auto text = Ctl({"regressions", "show", id});
    EXPECT_THAT(text.out, HasSubstr("culprit hunt"));
    return hunt;
  }

  std::string dir_ = devtime::testing::MakeTempDir("hunt");
  std::unique_ptr<devtime::testing::Subprocess> agent_;
};

// The compiler (naive RMSNorm in 2.0) and the runtime move the same night: the hunt says it
// was the compiler, and not the runtime.
TEST_F(HuntTest, FindsTheCompilerAndNotTheRuntimeThatMovedTheSameNight) {
  CompilerAndRuntimeCanMove();
  auto hunt = HuntAfter([&] { MoveCompilerAndRuntime(); });
  EXPECT_EQ(hunt.value("state", ""), "HUNT_STATE_CULPRIT_FOUND") << hunt.dump(1);
  EXPECT_EQ(hunt.value("culprit_key", ""), "compiler");
  EXPECT_THAT(hunt.value("verdict", ""), StartsWith("culprit: compiler 1.0 → 2.0 — pinned back"));
  EXPECT_THAT(hunt.value("verdict", ""), HasSubstr("not runtime 1.0 → 1.1"));
  EXPECT_LE(hunt.value("runs_spent", 99), 3);
}

// The model's own code goes naive the night the (harmless) compiler moves: everything pinned
// back is still slow.
TEST_F(HuntTest, SaysNotTheEnvironmentWhenEverythingPinnedBackIsStillSlow) {
  Compiler("1.0", false);
  Compiler("1.1", false);
  Runtime("1.0");
  Current("compiler", "1.0");
  Current("runtime", "1.0");
  WriteFile(dir_, "model_code", "fused\n");
  ApplyJob("");
  auto hunt = HuntAfter([&] {
    Current("compiler", "1.1");
    WriteFile(dir_, "model_code", "naive\n");
  });
  EXPECT_EQ(hunt.value("state", ""), "HUNT_STATE_NO_CULPRIT") << hunt.dump(1);
  EXPECT_THAT(hunt.value("verdict", ""), StartsWith("not the environment: everything pinned back"));
  EXPECT_EQ(hunt.value("runs_spent", 0), 1);
}

// 16 compiler builds v01..v16 (v10 on naive): a bisection over the ordered source finds v10
// in at most 5 culprit runs.
TEST_F(HuntTest, BisectsSixteenOrderedValuesInAtMostFiveRuns) {
  std::string versions;
  for (int i = 1; i <= 16; ++i) {
    const std::string v = (i < 10 ? "v0" : "v") + std::to_string(i);
    Compiler(v, i >= 10);
    versions += v + "\n";
  }
  WriteFile(dir_, "compiler-versions", versions);
  Runtime("1.0");
  Current("compiler", "v01");
  Current("runtime", "1.0");
  WriteFile(dir_, "model_code", "fused\n");
  ApplyJob(", source: \"sed -n '/^{good}$/,/^{bad}$/p' " + dir_ + "/compiler-versions\"");
  auto hunt = HuntAfter([&] { Current("compiler", "v16"); });
  EXPECT_EQ(hunt.value("state", ""), "HUNT_STATE_CULPRIT_FOUND") << hunt.dump(1);
  EXPECT_EQ(hunt.value("first_bad_value", ""), "v10");
  EXPECT_EQ(hunt.value("last_good_value", ""), "v09");
  EXPECT_LE(hunt.value("runs_spent", 99), 5);
}

// The hunt lives in PostgreSQL, not in a process: the collector SIGKILLed and restarted and the
// agent lost (SIGKILL) while it hunts, a new agent process on the same host carries on, and the
// verdict is the same. A culprit run lost with the agent comes back as a failed slot or after
// --hunt-run-timeout-s (60 s here), and is re-queued (bounded by kMaxAttempts).
TEST_F(HuntTest, CarriesOnWhenTheCollectorRestartsAndTheAgentIsLostMidHunt) {
  CompilerAndRuntimeCanMove();
  std::string interrupted_after;
  auto hunt = HuntAfter([&] { MoveCompilerAndRuntime(); },
                        [&] {
                          agent_.reset();  // SIGKILL, as when the host goes away
                          collector_.Kill();
                          // Nothing moves the hunt now: it must really have been interrupted.
                          EXPECT_EQ(db_.Query("SELECT state FROM hunts"), "hunting");
                          interrupted_after = db_.Query("SELECT hunt->>'runs_spent' FROM hunts");
                          collector_.Start();
                          agent_ = RunAgent(dir_, "agent-h", "");
                        },
                        std::chrono::seconds(200));
  EXPECT_EQ(hunt.value("state", ""), "HUNT_STATE_CULPRIT_FOUND") << hunt.dump(1);
  EXPECT_EQ(hunt.value("culprit_key", ""), "compiler");
  EXPECT_LE(hunt.value("runs_spent", 99), 8);
  std::cout << "interrupted after " << (interrupted_after.empty() ? "0" : interrupted_after)
            << " culprit runs came back" << std::endl;
}

// What cannot be pinned is refused at apply, naming the field.
TEST_F(HuntTest, JobsApplyRefusesPinsThatWouldRunUnpinned) {
  auto file = WriteFile(dir_, "bad.yaml",
                        "jobs:\n  - name: nightly\n    model: m\n    workload: w\n"
                        "    command: \"run --cc {pin:compiler} --rt {pin:runtime}\"\n"
                        "    schedule: {cron: \"0 2 * * *\"}\n"
                        "    pins:\n      compiler: {default: '2.0'}\n");
  auto apply = Ctl({"jobs", "apply", "-f", file});
  EXPECT_EQ(apply.exit_code, 2) << apply.out;
  EXPECT_THAT(apply.err, HasSubstr("{pin:runtime} names no pin of this job"));
  file = WriteFile(dir_, "unused.yaml",
                   "jobs:\n  - name: nightly\n    model: m\n    workload: w\n"
                   "    command: \"run\"\n    schedule: {cron: \"0 2 * * *\"}\n"
                   "    pins:\n      compiler: {default: '2.0'}\n");
  apply = Ctl({"jobs", "apply", "-f", file});
  EXPECT_EQ(apply.exit_code, 2);
  EXPECT_THAT(apply.err, HasSubstr("jobs[0].pins.compiler: no {pin:compiler}"));
}

}  // namespace
}  // namespace devtime
