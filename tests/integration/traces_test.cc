// Links to the traces (issue 15 item 8), on real parts: a devtime-agent daemon with a
// trace_store keeps a job's trace files and uploads where they are; devtimectl `runs traces`,
// `regressions show` and the report say where both runs of a regression keep theirs and how to
// open them; the regression the notifier sends carries them (the collector's JSON webhook).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "absl/strings/str_format.h"
#include "agents/daemon/trace_store.h"
#include "nlohmann/json.hpp"
#include "tests/support/alerting.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/nightly_runs.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::WaitUntil;
using ::testing::HasSubstr;

constexpr char kHost[] = "trn-traces";
constexpr int64_t kDay = 86400;

// The collector's JSON webhook receiver, up before the collector that is given its address.
class WebhookBase {
 protected:
  WebhookBase() : dir_(devtime::testing::MakeTempDir("traces")), webhook_(dir_, "webhook") {}

  std::string dir_;
  devtime::testing::WebhookReceiver webhook_;
};

class TracesTest : public WebhookBase, public devtime::testing::CollectorFixture {
 protected:
  TracesTest()
      : CollectorFixture(
            {"--session-poll-ms", "200", "--webhook-url", webhook_.url(), "--notify-every", "1"}) {}

  std::string Store() const { return dir_ + "/traces"; }
  // Where the store keeps `file` of run `run_id` of rmsnorm/fused.
  std::string Kept(const std::string& run_id, const std::string& file) const {
    return Store() + "/rmsnorm/fused/" + run_id + "/" + file;
  }

  // A night whose Kineto trace the agent's trace store kept, as a daemon does before upload.
  v1::RunSummary WithKeptTrace(v1::RunSummary run) {
    const std::string output = dir_ + "/output-" + run.identity().run_id();
    fs::create_directories(output);
    devtime::testing::WriteFile(output, "trace.json", "{\"traceEvents\": []}");
    v1::Artifact* trace = run.add_artifacts();
    trace->set_kind("framework_trace");
    trace->set_uri("file://" + output + "/trace.json");
    EXPECT_TRUE(agent::KeepTraceFiles(Store(), output, &run).ok());
    return run;
  }
};

TEST_F(TracesTest, TheAgentKeepsAJobsTraceAndRunsTracesSaysWhereAndHowToOpenIt) {
  const std::string command = absl::StrFormat(
      "/usr/bin/python3 %s/tests/support/rmsnorm_kineto.py --mode naive --out {output_dir} "
      "--steps {steps} --env device=neuron",
      DEVTIME_SOURCE_DIR);
  const std::string jobs = devtime::testing::WriteFile(
      dir_, "jobs.yaml",
      absl::StrFormat("jobs:\n  - name: fused\n    model: rmsnorm\n    workload: fused\n"
                      "    command: \"%s\"\n    schedule: {cron: \"0 2 * * *\"}\n"
                      "    selector: {hosts: [%s]}\n",
                      command, kHost));
  ASSERT_EQ(Ctl({"jobs", "apply", "-f", jobs}).exit_code, 0);
  auto agent = RunAgent(dir_, kHost, "trace_store: file://" + Store() + "\n");
  // run-now is refused until the agent has said hello (no agent would match the job).
  ASSERT_TRUE(WaitUntil([&] {
    return Ctl({"jobs", "run-now", "fused"}).exit_code == 0;
  })) << devtime::testing::ReadFile(dir_ + "/" + kHost + ".log");
  std::string run_id;
  ASSERT_TRUE(WaitUntil(
      [&] {
        run_id = Ctl({"runs", "list", "--model", "rmsnorm", "--format", "ids"}).out;
        return !run_id.empty();
      },
      std::chrono::seconds(90)))
      << devtime::testing::ReadFile(dir_ + "/" + kHost + ".log");
  run_id.resize(run_id.find('\n'));

  auto listed = Ctl({"runs", "traces", "latest", "--model", "rmsnorm", "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto json = nlohmann::json::parse(listed.out);
  EXPECT_EQ(json["run_id"], run_id);
  const nlohmann::json* trace = nullptr;
  for (const auto& file : json["files"]) {
    if (file["kind"] == "framework_trace") trace = &file;
  }
  ASSERT_NE(trace, nullptr) << listed.out;
  const std::string uri = (*trace)["uri"];
  ASSERT_THAT(uri, ::testing::StartsWith("file://" + Store() + "/rmsnorm/fused/" + run_id + "/"));
  const std::string path = uri.substr(std::string("file://").size());
  // The stored bytes are those the sha256 names (sha256sum from coreutils, not our code).
  auto summed = devtime::testing::RunCommand({"sha256sum", path});
  ASSERT_EQ(summed.exit_code, 0) << summed.err;
  EXPECT_EQ((*trace)["sha256"], summed.out.substr(0, 64));
  EXPECT_EQ((*trace)["viewer"], "Perfetto UI");
  EXPECT_EQ((*trace)["command"], "trace_processor --httpd '" + path + "'");

  auto text = Ctl({"runs", "traces", run_id.substr(0, 8)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Perfetto UI: trace_processor --httpd '" + path +
                                  "', then open https://ui.perfetto.dev"));
}

TEST_F(TracesTest, ARegressionGivesBothRunsTracesInShowTheReportAndItsNotification) {
  std::mt19937 rng(5);
  const int64_t start = time(nullptr) - 20 * kDay;
  for (int k = 1; k <= 12; ++k) {
    UploadAnalysed(WithKeptTrace(devtime::testing::NightlyRmsNormRun(
        {.n = k,
         .started = start + k * kDay,
         .ops = k <= 10 ? devtime::testing::kFusedRmsNorm : devtime::testing::kNaiveRmsNorm,
         .compiler = k <= 10 ? "2.21.18" : "2.22.4",
         .host = kHost,
         .job = ""},
        rng)));
  }
  auto regressions = ListRegressions("--all");
  ASSERT_EQ(regressions.size(), 1u) << collector_.Log();
  const std::string id = regressions[0]["id"];
  const std::string good = regressions[0]["last_good_run_id"];
  const std::string bad = regressions[0]["first_bad_run_id"];

  auto shown = Ctl({"regressions", "show", id});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("traces      last good: Perfetto UI: trace_processor --httpd '" +
                                   Kept(good, "trace.json") + "'"));
  EXPECT_THAT(shown.out, HasSubstr("            first bad: Perfetto UI: trace_processor --httpd '" +
                                   Kept(bad, "trace.json") + "'"));

  const std::string page = dir_ + "/report.html";
  auto report = Ctl({"report", "--model", "rmsnorm", "--html", page});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string html = devtime::testing::ReadFile(page);
  EXPECT_THAT(html, HasSubstr("<a href=\"file://" + Kept(good, "trace.json") + "\""));
  EXPECT_THAT(html, HasSubstr("<a href=\"file://" + Kept(bad, "trace.json") + "\""));

  // The notifier reads the regression with the traces: the webhook's body carries them.
  nlohmann::json sent;
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& body : webhook_.Bodies()) {
      if (body["regression"].value("id", "") == id) sent = body["regression"];
    }
    return !sent.is_null();
  })) << collector_.Log();
  ASSERT_EQ(sent["first_bad_traces"].size(), 1u) << sent.dump(2);
  EXPECT_EQ(sent["first_bad_traces"][0]["uri"], "file://" + Kept(bad, "trace.json"));
  EXPECT_EQ(sent["last_good_traces"][0]["uri"], "file://" + Kept(good, "trace.json"));
}

}  // namespace
}  // namespace devtime
