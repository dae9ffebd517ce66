// The gate compares like with like (issue 22): `devtimectl check` and `compare` judge a run
// only against runs of its own series (model, workload, instance type, device kind), so a
// CPU fallback on a Trainium runner is never "OK, 98.8 % faster" and a Trainium run never a
// "+3,794 % regression" against a CPU run. Crossing a series is refused with its own exit
// code (6) unless --allow-different names the keys, and then both sides say what they are.
// Every exit code of `check` is asserted here, and its Markdown and JUnit outputs are
// parsed when it could not check, as a CI step would post and read them.
//
// The real stack: a devtime-collector on PostgreSQL, devtimectl as a user runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr long long kNight = 1795917600;  // 2026-11-29T02:00:00Z
constexpr long long kDay = 86400;

// The nightly history on trn1 (Neuron): two fused nights and two naive ones; then the
// quickstart's CPU job profiles the naive RMSNorm on a CPU box (no instance type); then two
// pull-request runs stored under the workload fused-pr: one on Trainium, and one whose
// runner silently fell back to the CPU (still a trn1.2xlarge host).
const std::string kFusedOld = "f0000000-0000-4000-8000-000000000001";
const std::string kFusedNew = "f0000000-0000-4000-8000-000000000002";
const std::string kNaiveOld = "a1111111-0000-4000-8000-000000000001";
const std::string kNaiveNew = "a2222222-0000-4000-8000-000000000002";
const std::string kCpuNaive = "c0000000-0000-4000-8000-000000000001";
const std::string kPullRequest = "e0000000-0000-4000-8000-000000000001";
const std::string kCpuFallback = "e0000000-0000-4000-8000-000000000002";
const std::string kLostFusion = "b0000000-0000-4000-8000-000000000001";

// The fused RMSNorm (403.3 µs of device time per step) on trn1.2xlarge.
v1::RunSummary FusedRun(const std::string& id, const std::string& workload, long long at) {
  auto run = devtime::testing::NaiveRmsNormRun(id, workload, at);
  devtime::testing::FuseRmsNormOps(run);
  for (double f : {0.99, 1.0, 1.01}) run.mutable_ops(0)->add_step_self_device_us(403.3 * f);
  for (int i = 0; i < run.steps_size(); ++i) {
    run.mutable_steps(i)->set_device_us(403.3 * (0.99 + 0.01 * i));
  }
  return run;
}

// `run` as a CPU-only profile: self CPU time is all it measured (60 µs per step).
v1::RunSummary OnCpu(v1::RunSummary run, const std::string& instance_type) {
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  run.mutable_identity()->set_instance_type(instance_type);
  for (auto& op : *run.mutable_ops()) {
    op.set_self_device_us(0);
    op.set_total_device_us(0);
    op.clear_step_self_device_us();
    for (int step = 0; step < 3; ++step) op.add_step_self_device_us(op.self_cpu_us() / 3);
  }
  for (auto& step : *run.mutable_steps()) step.set_device_us(0);
  run.clear_layers();
  return run;
}

// What python3's xml.etree reads in a JUnit report: {"suites": [{"name", "tests",
// "failures", "errors", "properties": {name: value}, "cases": [{"name", "failure",
// "error"}]}]}, or {"invalid": why} when it is not well-formed XML.
nlohmann::json ParseJunit(const std::string& xml) {
  const std::string dir = devtime::testing::MakeTempDir("junit");
  const std::string path = devtime::testing::WriteFile(dir, "report.xml", xml);
  const char* script = R"py(
import json, sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except ET.ParseError as e:
    print(json.dumps({"invalid": str(e)})); sys.exit(0)
suites = []
for s in root.iter("testsuite"):
    cases = []
    for c in s.iter("testcase"):
        f, e = c.find("failure"), c.find("error")
        cases.append({"name": c.get("name"),
                      "failure": None if f is None else f.get("message"),
                      "error": None if e is None else {"type": e.get("type"),
                                                       "message": e.get("message"),
                                                       "text": e.text or ""}})
    suites.append({"name": s.get("name"), "tests": int(s.get("tests")),
                   "failures": int(s.get("failures")), "errors": int(s.get("errors", "0")),
                   "properties": {p.get("name"): p.get("value") for p in s.iter("property")},
                   "cases": cases})
print(json.dumps({"root": root.tag, "suites": suites}))
)py";
  auto parsed = devtime::testing::RunCommand({"/usr/bin/python3", "-c", script, path});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.err;
  return nlohmann::json::parse(parsed.out.empty() ? "{}" : parsed.out);
}

class CheckGateTest : public devtime::testing::CollectorFixture {
 protected:
  void SetUp() override {
    auto admin = AdminStub();
    std::vector<v1::RunSummary> runs = {
        FusedRun(kFusedOld, "fused", kNight),
        FusedRun(kFusedNew, "fused", kNight + kDay),
        devtime::testing::NaiveRmsNormRun(kNaiveOld, "naive", kNight),
        devtime::testing::NaiveRmsNormRun(kNaiveNew, "naive", kNight + kDay),
        OnCpu(devtime::testing::NaiveRmsNormRun(kCpuNaive, "naive", kNight + 2 * kDay), ""),
        FusedRun(kPullRequest, "fused-pr", kNight + 3 * kDay),
        OnCpu(FusedRun(kCpuFallback, "fused-pr", kNight + 3 * kDay), "trn1.2xlarge"),
        // The fused workload losing its fusion: the naive ops under the fused name.
        devtime::testing::NaiveRmsNormRun(kLostFusion, "fused-pr", kNight + 4 * kDay),
    };
    for (const auto& run : runs) {
      auto status = devtime::testing::UploadRun(*admin, run);
      ASSERT_TRUE(status.ok()) << run.identity().run_id() << ": " << status.error_message();
    }
  }

  // The README's pull-request gate (README.md, "A device-time gate in a pull request"), for
  // the pull request's run `run`, in `format`.
  devtime::testing::CommandResult Gate(const std::string& run, const std::string& format) {
    return Ctl({"check", "--run", run, "--against", "latest", "--model", "rmsnorm", "--workload",
                "fused", "--device", "neuron", "--allow-different", "workload", "--format",
                format});
  }
};

TEST_F(CheckGateTest, LatestIsTheNewestOtherRunOfTheJudgedRunsSeries) {
  // The CPU job ran last, but the trn1 run is judged against the trn1 run before it.
  auto check = Ctl({"check", "--run", kNaiveNew, "--against", "latest", "--model", "rmsnorm",
                    "--workload", "naive"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out,
              AllOf(HasSubstr("OK: rmsnorm/naive trn1.2xlarge neuron"),
                    HasSubstr("against rmsnorm/naive trn1.2xlarge neuron 2026-11-29T02:00:00Z "
                              "(a1111111)"),
                    HasSubstr("device time per step: 2.355 ms -> 2.355 ms")));
  EXPECT_THAT(check.out, Not(HasSubstr("c0000000")));

  // And the CPU run against the CPU runs: there is none other, so it is refused, not compared
  // with a Trainium run.
  auto cpu = Ctl({"check", "--run", kCpuNaive, "--against", "latest", "--model", "rmsnorm",
                  "--workload", "naive"});
  EXPECT_EQ(cpu.exit_code, 6) << cpu.out << cpu.err;
  EXPECT_THAT(cpu.err, HasSubstr("no other run of model rmsnorm, workload naive, instance type "
                                 "unknown, device cpu is stored"));
}

TEST_F(CheckGateTest, TheReadmeGateRefusesACpuFallbackAgainstTrainiumHistory) {
  for (const char* format : {"text", "markdown", "junit"}) {
    auto gate = Gate(kCpuFallback, format);
    EXPECT_EQ(gate.exit_code, 6) << format << ": " << gate.out << gate.err;
    EXPECT_THAT(gate.err, AllOf(HasSubstr("different series (device neuron vs cpu)"),
                                HasSubstr("self CPU time, not device time"),
                                HasSubstr("--allow-different device")))
        << format;
    EXPECT_THAT(gate.out, Not(HasSubstr("OK"))) << format;
  }
  // Without --device neuron too: the CPU fallback's own series has no history, and the newest
  // fused run is a Trainium one, so it is refused as well.
  auto implicit = Ctl({"check", "--run", kCpuFallback, "--against", "latest", "--model", "rmsnorm",
                       "--workload", "fused", "--allow-different", "workload"});
  EXPECT_EQ(implicit.exit_code, 6) << implicit.out << implicit.err;
  EXPECT_THAT(implicit.err,
              AllOf(HasSubstr("device neuron vs cpu"),
                    HasSubstr("no other run of model rmsnorm, workload fused, instance type "
                              "trn1.2xlarge, device cpu is stored")));

  // Named as the baseline, the Trainium run is refused as well (no flags: today's gate said
  // "OK", -85.1 %, here: 60 µs of self CPU time against 403.3 µs of device time).
  auto named = Ctl({"check", "--run", kCpuFallback, "--against", kFusedNew});
  EXPECT_EQ(named.exit_code, 6) << named.out << named.err;
  EXPECT_THAT(named.err, HasSubstr("workload fused vs fused-pr, device neuron vs cpu"));
  EXPECT_THAT(named.out, Not(HasSubstr("OK")));

  // The Trainium pull-request run passes the same gate, labelled as crossing workloads.
  auto pass = Gate(kPullRequest, "text");
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  EXPECT_THAT(pass.out,
              AllOf(HasSubstr("OK: rmsnorm/fused-pr trn1.2xlarge neuron"),
                    HasSubstr("against rmsnorm/fused trn1.2xlarge neuron"), HasSubstr("(f0000000)"),
                    HasSubstr("across series (--allow-different): workload fused vs "
                              "fused-pr")));
}

TEST_F(CheckGateTest, ATrainiumRunAgainstACpuBaselineIsRefused) {
  auto check = Ctl({"check", "--run", kNaiveNew, "--against", kCpuNaive});
  EXPECT_EQ(check.exit_code, 6) << check.out << check.err;
  EXPECT_THAT(check.err,
              AllOf(HasSubstr("instance-type unknown vs trn1.2xlarge, device cpu vs neuron"),
                    HasSubstr("baseline rmsnorm/naive cpu"),
                    HasSubstr("run      rmsnorm/naive trn1.2xlarge neuron"),
                    HasSubstr("--allow-different instance-type --allow-different device")));
  EXPECT_EQ(check.out, "");

  // Asked for explicitly, it compares, and says on both sides what the time is.
  auto crossed = Ctl({"check", "--run", kNaiveNew, "--against", kCpuNaive, "--allow-different",
                      "instance-type,device"});
  EXPECT_EQ(crossed.exit_code, 1) << crossed.out << crossed.err;
  EXPECT_THAT(crossed.out,
              AllOf(HasSubstr("across series (--allow-different): instance-type unknown vs "
                              "trn1.2xlarge, device cpu vs neuron"),
                    HasSubstr("time per step (self CPU before, device after): 60.0 µs -> "
                              "2.355 ms")));
  EXPECT_THAT(crossed.out, Not(HasSubstr("device time per step")));
}

TEST_F(CheckGateTest, CompareRefusesAcrossSeriesUnlessAllowed) {
  auto refused = Ctl({"compare", kCpuNaive, kNaiveNew});
  EXPECT_EQ(refused.exit_code, 6) << refused.out << refused.err;
  EXPECT_THAT(refused.err, AllOf(HasSubstr("compare: the runs are of different series"),
                                 HasSubstr("before rmsnorm/naive cpu"),
                                 HasSubstr("after  rmsnorm/naive trn1.2xlarge neuron")));

  auto allowed = Ctl({"compare", kCpuNaive, kNaiveNew, "--allow-different", "device",
                      "--allow-different", "instance-type"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_THAT(allowed.out, AllOf(HasSubstr("before rmsnorm/naive cpu"),
                                 HasSubstr("after  rmsnorm/naive trn1.2xlarge neuron"),
                                 HasSubstr("across series (--allow-different)"),
                                 HasSubstr("self CPU before, device after")));

  // Within one series, latest is the other run's series too.
  auto within = Ctl({"compare", "latest", kNaiveNew});
  EXPECT_EQ(within.exit_code, 0) << within.err;
  EXPECT_THAT(
      within.out,
      HasSubstr("before rmsnorm/naive trn1.2xlarge neuron 2026-11-29T02:00:00Z (a1111111)"));
}

TEST_F(CheckGateTest, EveryDocumentedExitCodeOfCheck) {
  auto exit_of = [this](const std::vector<std::string>& args) {
    auto result = Ctl(args);
    return result.exit_code;
  };
  // 0: no significant slowdown; 1: a significant one (the fusion lost, +483.9 %).
  EXPECT_EQ(exit_of({"check", "--run", kFusedNew, "--against", kFusedOld}), 0);
  EXPECT_EQ(exit_of({"check", "--run", kLostFusion, "--against", kPullRequest}), 1);
  // 2: usage: an unknown flag, a run prefix too short to look up.
  EXPECT_EQ(exit_of({"check", "--run", kFusedNew, "--against", kFusedOld, "--bogus"}), 2);
  EXPECT_EQ(exit_of({"check", "--run", "f000", "--against", kFusedOld}), 2);
  // 4: not found.
  EXPECT_EQ(exit_of({"check", "--run", "deadbeef", "--against", kFusedOld}), 4);
  EXPECT_EQ(exit_of({"check", "--run", kFusedNew, "--against", "latest", "--model", "llama",
                     "--allow-different", "model"}),
            4);
  // 5: permission: a token the collector does not know.
  const std::string dir = devtime::testing::MakeTempDir("check-exit");
  const std::string bad_token = devtime::testing::WriteFile(dir, "bad.token", "not-a-token\n");
  EXPECT_EQ(devtime::testing::Ctl(collector_, {"check", "--run", kFusedNew, "--against", kFusedOld},
                                  {"--token-file", bad_token})
                .exit_code,
            5);
  // 6: different series.
  EXPECT_EQ(exit_of({"check", "--run", kNaiveNew, "--against", kFusedNew}), 6);
  // 3: unavailable: the collector is gone.
  collector_.Stop();
  EXPECT_EQ(exit_of({"--timeout", "3", "check", "--run", kFusedNew, "--against", kFusedOld}), 3);
}

TEST_F(CheckGateTest, JunitNamesTestsBySeriesAndKeepsRunIdsInProperties) {
  auto check = Ctl({"check", "--run", kLostFusion, "--against", kPullRequest, "--format", "junit"});
  ASSERT_EQ(check.exit_code, 1) << check.err;
  const nlohmann::json report = ParseJunit(check.out);
  ASSERT_FALSE(report.contains("invalid")) << report.dump() << "\n" << check.out;
  ASSERT_EQ(report["suites"].size(), 1u) << report.dump();
  const auto& suite = report["suites"][0];
  EXPECT_EQ(suite["name"], "devtime check rmsnorm/fused-pr trn1.2xlarge neuron");
  EXPECT_EQ(suite["properties"]["run"], kLostFusion);
  EXPECT_EQ(suite["properties"]["baseline"], kPullRequest);
  ASSERT_FALSE(suite["cases"].empty());
  EXPECT_EQ(suite["cases"][0]["name"],
            "rmsnorm/fused-pr trn1.2xlarge neuron: device time per step");
  for (const auto& c : suite["cases"]) {
    const std::string name = c["name"];
    EXPECT_THAT(name, StartsWith("rmsnorm/fused-pr trn1.2xlarge neuron: "));
    EXPECT_THAT(name, AllOf(Not(HasSubstr("b0000000")), Not(HasSubstr("e0000000")),
                            Not(HasSubstr("2026-"))));
  }
}

// What a CI step posts and reads when check has no verdict: a comment saying so and a
// well-formed report with one error, for every way it can fail.
TEST_F(CheckGateTest, MarkdownAndJunitSayCouldNotCheckWhenThereIsNoVerdict) {
  struct Failure {
    std::vector<std::string> args;  // after check --format F
    int exit_code;
    std::string error_type;
    std::string series;  // the JUnit suite's subject
  };
  const std::vector<Failure> failures = {
      {{"--run", "deadbeef", "--against", kFusedOld}, 4, "not found", "run deadbeef"},
      {{"--run", kFusedNew, "--against", "latest", "--model", "llama", "--allow-different",
        "model"},
       4,
       "not found",
       "rmsnorm/fused trn1.2xlarge neuron"},
      {{"--run", kCpuFallback, "--against", "latest", "--model", "rmsnorm", "--workload", "fused",
        "--device", "neuron", "--allow-different", "workload"},
       6,
       "different series",
       "rmsnorm/fused-pr trn1.2xlarge cpu"},
      {{"--run", "f000", "--against", kFusedOld}, 2, "usage", "run f000"},
  };
  auto run_check = [this](const std::string& format, const std::vector<std::string>& args) {
    std::vector<std::string> command = {"--timeout", "3", "check", "--format", format};
    command.insert(command.end(), args.begin(), args.end());
    return Ctl(command);
  };
  auto expect_documents = [&](const Failure& f) {
    auto markdown = run_check("markdown", f.args);
    EXPECT_EQ(markdown.exit_code, f.exit_code) << markdown.err;
    EXPECT_THAT(
        markdown.out,
        AllOf(StartsWith("### devtime check: ⚠️ could not check (exit " +
                         std::to_string(f.exit_code) + ": " + f.error_type + ")"),
              HasSubstr("**" + f.series + "**"), HasSubstr("```text\n"), HasSubstr("no verdict")))
        << markdown.out;
    EXPECT_FALSE(markdown.err.empty());  // the error still goes to stderr

    auto junit = run_check("junit", f.args);
    EXPECT_EQ(junit.exit_code, f.exit_code) << junit.err;
    const nlohmann::json report = ParseJunit(junit.out);
    ASSERT_FALSE(report.contains("invalid")) << report.dump() << "\n" << junit.out;
    ASSERT_EQ(report["suites"].size(), 1u) << junit.out;
    const auto& suite = report["suites"][0];
    EXPECT_EQ(suite["name"], "devtime check " + f.series);
    EXPECT_EQ(suite["errors"], 1);
    EXPECT_EQ(suite["properties"]["exit_code"], std::to_string(f.exit_code));
    ASSERT_EQ(suite["cases"].size(), 1u);
    EXPECT_EQ(suite["cases"][0]["error"]["type"], f.error_type);
    EXPECT_THAT(suite["cases"][0]["error"]["message"].get<std::string>(),
                HasSubstr("could not check"));
    EXPECT_FALSE(suite["cases"][0]["error"]["text"].get<std::string>().empty());
  };
  for (const Failure& f : failures) expect_documents(f);

  // 3: the collector is gone.
  collector_.Stop();
  expect_documents(
      {{"--run", kFusedNew, "--against", kFusedOld}, 3, "unavailable", "run " + kFusedNew});
}

// The report's "vs baseline" is within one series too: a second CPU fallback on the trn1
// host is compared with the first, not with the Trainium run before it (−97 %).
TEST_F(CheckGateTest, TheReportComparesEachLatestRunWithItsOwnSeries) {
  auto admin = AdminStub();
  auto status = devtime::testing::UploadRun(
      *admin, OnCpu(FusedRun("e0000000-0000-4000-8000-000000000003", "fused-pr", kNight + 5 * kDay),
                    "trn1.2xlarge"));
  ASSERT_TRUE(status.ok()) << status.error_message();
  auto report = Ctl({"report", "--model", "rmsnorm"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::vector<std::string> fused_pr;
  for (std::size_t at = 0, end; at < report.out.size(); at = end + 1) {
    end = report.out.find('\n', at);
    if (end == std::string::npos) end = report.out.size();
    const std::string line = report.out.substr(at, end - at);
    if (line.starts_with("fused-pr ")) fused_pr.push_back(line);
  }
  ASSERT_EQ(fused_pr.size(), 2u) << report.out;  // a series per device kind
  EXPECT_THAT(fused_pr[0], AllOf(HasSubstr("self CPU"), HasSubstr("+0.0 %"))) << report.out;
  EXPECT_THAT(fused_pr[1], AllOf(HasSubstr("device"), HasSubstr("+483.9 %"))) << report.out;
}

}  // namespace
}  // namespace devtime
