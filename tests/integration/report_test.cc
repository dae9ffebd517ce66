// devtimectl report against a real collector process: a demo-like RMSNorm history (the
// "fused" workload loses its fusion halfway) uploaded over gRPC, then the text summary and
// the HTML page. The regression part needs the collector's ListRegressions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/exit_codes.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using devtime::testing::ReadFile;
using devtime::testing::TestRunId;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr long long kFirstNight = 1794708000;  // 2026-11-15T02:00:00Z
constexpr int kNights = 12;
constexpr int kFusionLost = 6;  // the "fused" workload's first bad night

// One night of a workload; "fused" runs one fused op until kFusionLost, the naive ops after.
v1::RunSummary NightlyRun(int id, const std::string& workload, int night) {
  auto run =
      devtime::testing::NaiveRmsNormRun(TestRunId(id), workload, kFirstNight + night * 86400);
  double noise = 1 + 0.002 * std::sin(night * 1.3 + id);
  bool fused = workload == "fused" && night < kFusionLost;
  if (fused) {
    devtime::testing::FuseRmsNormOps(run);
  } else if (workload == "fused") {
    (*run.mutable_environment())["neuronx-cc"] = "2.22.4";
  }
  double per_step = fused ? 403.3 : 2354.9;
  for (auto& op : *run.mutable_ops()) {
    op.clear_step_self_device_us();
    op.set_self_device_us(op.self_device_us() * noise);
    op.set_total_device_us(op.total_device_us() * noise);
  }
  for (int i = 0; i < run.steps_size(); ++i) run.mutable_steps(i)->set_device_us(per_step * noise);
  run.mutable_layers(0)->set_time_us(per_step * noise * 3);
  return run;
}

class ReportTest : public devtime::testing::CollectorFixture {
 protected:
  ReportTest() : dir_(devtime::testing::MakeTempDir("report")) {}

  void SetUp() override {
    auto stub = AdminStub();
    int id = 1;
    for (const char* workload : {"naive", "fused"}) {
      for (int night = 0; night < kNights; ++night) {
        auto status = devtime::testing::UploadRun(*stub, NightlyRun(id++, workload, night));
        ASSERT_TRUE(status.ok()) << wire::Describe(status) << "\ncollector log:\n"
                                 << collector_.Log();
      }
    }
    // Detection is off the ack path: wait until the analysis queue judged every run.
    ASSERT_TRUE(WaitUntilAllAnalysed()) << collector_.Log();
  }

  std::string dir_;
};

TEST_F(ReportTest, TextSummaryShowsEveryWorkloadAgainstItsBaseline) {
  auto report = Ctl({"report", "--model", "rmsnorm"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("model rmsnorm: 24 runs in 2 series"));
  EXPECT_THAT(report.out, HasSubstr("naive"));
  EXPECT_THAT(report.out, HasSubstr("fused"));
  EXPECT_THAT(report.out, HasSubstr("trn1.2xlarge"));
  EXPECT_THAT(report.out, HasSubstr("2026-11-26T02:00:00Z"));  // the last night
}

TEST_F(ReportTest, HtmlPageIsWrittenSelfContainedAndItsPathPrinted) {
  std::string path = dir_ + "/rmsnorm.html";
  auto report = Ctl({"report", "--model", "rmsnorm", "--html", path});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(report.out, path + "\n");
  std::string html = ReadFile(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("devtime report: rmsnorm"));
  EXPECT_THAT(html, HasSubstr("<svg class=\"chart\""));
  EXPECT_THAT(html, HasSubstr("<td class=\"op\">aten::mul</td>"));
  EXPECT_THAT(html, HasSubstr("device execution"));
  // The fetched summaries: threshold, per-run noise band, the compiler change of "fused" on
  // its first bad night, and the operator history.
  EXPECT_THAT(html, HasSubstr("class=\"threshold\""));
  EXPECT_THAT(html, HasSubstr("<polygon class=\"noise\""));
  EXPECT_THAT(html, HasSubstr(">neuronx-cc 2.21.0 → 2.22.4</text>"));
  EXPECT_THAT(html, HasSubstr("<svg class=\"op-chart\""));
  // Self-contained: nothing is fetched from the network (the trace files' "open
  // https://ui.perfetto.dev" is text to read, not a resource).
  EXPECT_THAT(html, Not(ContainsRegex("(src|href)=\"https?:")));
  EXPECT_THAT(html, Not(HasSubstr("url(http")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST_F(ReportTest, UnknownModelAndBadArgumentsAreErrors) {
  auto unknown = Ctl({"report", "--model", "nope"});
  EXPECT_EQ(unknown.exit_code, wire::kExitNotFound);
  EXPECT_THAT(unknown.err, HasSubstr("no runs of model 'nope' (models: rmsnorm)"));
  auto since = Ctl({"report", "--model", "rmsnorm", "--since", "last tuesday"});
  EXPECT_EQ(since.exit_code, 2);
  EXPECT_THAT(since.err, HasSubstr("--since"));
  for (std::vector<std::string> bad : {std::vector<std::string>{"--history-runs", "101"},
                                       std::vector<std::string>{"--min-change", "2"}}) {
    std::vector<std::string> args = {"report", "--model", "rmsnorm"};
    args.insert(args.end(), bad.begin(), bad.end());
    auto out_of_range = Ctl(args);
    EXPECT_EQ(out_of_range.exit_code, 2) << bad[0];
    EXPECT_THAT(out_of_range.err, HasSubstr(bad[0]));
  }
  auto unwritable = Ctl({"report", "--model", "rmsnorm", "--html", dir_ + "/no/such/dir/x.html"});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_THAT(unwritable.err, HasSubstr("cannot write"));
}

// Needs the collector's ListRegressions. Uses the regression the collector's detector
// opened, if it did, else one written into the table as the detector would.
TEST_F(ReportTest, LiveRegressionIsMarkedListedAndItsLastGoodRunIsTheBaseline) {
  std::string fused_first_bad = TestRunId(kNights + kFusionLost + 1);
  std::string fused_last_good = TestRunId(kNights + kFusionLost);
  if (db_.Count("regressions") == 0) {
    db_.Query(
        "INSERT INTO regressions (state, severity, model, workload, instance_type, host, metric,"
        " last_good_run_id, first_bad_run_id, first_bad_at, before_us, baseline_sigma_us,"
        " baseline_count, after_us, relative_change, z, confidence, summary) VALUES ('open',"
        " 'critical', 'rmsnorm', 'fused', 'trn1.2xlarge', 'trn-test-01', 'device_us_per_step', '" +
        fused_last_good + "', '" + fused_first_bad + "', to_timestamp(" +
        std::to_string(kFirstNight + kFusionLost * 86400) +
        "), 403.3, 1.2, 6, 2354.9, 4.839, 150, 0.9999, 'rmsnorm/fused lost its fusion')"
        " RETURNING 1");
  }
  std::string id = db_.Query(
      "SELECT regression_id FROM regressions WHERE workload = 'fused'"
      " AND state IN ('suspected', 'open', 'acknowledged') ORDER BY regression_id DESC LIMIT 1");
  ASSERT_FALSE(id.empty()) << "no live regression of rmsnorm/fused";
  std::string state = db_.Query("SELECT state FROM regressions WHERE regression_id = " + id);
  std::string last_good =
      db_.Query("SELECT last_good_run_id FROM regressions WHERE regression_id = " + id);

  auto text = Ctl({"report", "--model", "rmsnorm"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("last good run of regression " + id));
  EXPECT_THAT(text.out, Not(HasSubstr("does not serve regressions")));

  std::string path = dir_ + "/regressed.html";
  ASSERT_EQ(Ctl({"report", "--model", "rmsnorm", "--html", path}).exit_code, 0);
  std::string html = ReadFile(path);
  EXPECT_THAT(html, HasSubstr("#" + id + " " + state));
  EXPECT_THAT(html, HasSubstr("<table class=\"regressions\""));
  EXPECT_THAT(html, HasSubstr("<code>" + last_good + "</code>"));
}

}  // namespace
}  // namespace devtime
