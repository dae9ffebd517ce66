// Issue 24, between the nights: a real devtime-agent runs a fake neuron-monitor
// (tests/fixtures/monitor/fake_neuron_monitor.py) that replays, at speed, five days of a
// generated stream (gen_monitor_stream.py: two applications on a daily cycle, nulls, group and
// entry errors, an application restart, the 2.4-era form, a line that is not JSON) with a
// +15 % device-latency step of llama-serve at hour 100. The agent folds it into hourly
// windows delivered through its spool to a real collector on PostgreSQL, which judges the
// hourly series: exactly one latency regression, at the window of the step, for model llama,
// linked to the nightly profile of llama nearest to it; none for bert, a pure daily cycle. The
// latency regression lives the regression lifecycle: listed, shown, acknowledged, notified.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/time/clock.h"
#include "proto/wire/time.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using ::testing::HasSubstr;

constexpr int kHours = 120;
constexpr int kStepHour = 100;
constexpr int kPeriod = 120;

class MonitorTest : public devtime::testing::CollectorFixture {
 protected:
  std::string Log() const { return devtime::testing::ReadFile(dir_ + "/trn-a.log"); }

  std::string dir_ = devtime::testing::MakeTempDir("monitor");
};

TEST_F(MonitorTest, AStepBetweenTheNightsIsOneLatencyRegressionAtItsWindow) {
  const std::string fixtures = std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/monitor";
  const std::string stream = dir_ + "/stream.ndjson";
  auto generated = devtime::testing::RunCommand(
      {"python3", fixtures + "/gen_monitor_stream.py", stream, "--hours", std::to_string(kHours),
       "--period", std::to_string(kPeriod), "--step-hour", std::to_string(kStepHour),
       "--restart-hour", "30", "--legacy-hours", "2", "--garbage"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  // The stream starts at a UTC midnight a week ago, so hour of day = hour of the stream.
  const long long midnight = (absl::ToUnixSeconds(absl::Now()) / 86400 - 7) * 86400;
  const long long step_at = midnight + kStepHour * 3600LL;

  // The nightly profile of llama nearest to the step, and one further away.
  for (auto [n, at] : {std::pair{1, step_at - 2 * 3600}, std::pair{2, step_at - 30 * 3600}}) {
    v1::RunSummary nightly = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(n));
    nightly.mutable_identity()->set_model("llama");
    nightly.mutable_started_at()->set_seconds(at);
    nightly.mutable_finished_at()->set_seconds(at + 60);
    UploadAnalysed(nightly);
  }

  const int metrics_port = devtime::testing::FreePort();
  auto agent = RunAgent(
      dir_, "trn-a",
      "metrics_listen: 127.0.0.1:" + std::to_string(metrics_port) +
          "\nmonitor:\n  command: \"python3 " + fixtures + "/fake_neuron_monitor.py --stream " +
          stream + "\"\n  period_seconds: " + std::to_string(kPeriod) +
          "\n  window_seconds: 3600\n  replay_start: " + std::to_string(midnight) +
          "\n  environment: {neuron-runtime: \"2.21.0\"}\n  apps:\n"
          "    - {tag: llama-serve, model: llama, workload: decode}\n"
          "    - {tag_regex: \"bert-.*\", model: bert, workload: serving}\n");

  // Every hour but the last (still open) of both applications, stored once.
  const long long windows = 2 * (kHours - 1);
  ASSERT_TRUE(devtime::testing::WaitUntil([&] { return db_.Count("monitor_windows") >= windows; },
                                          std::chrono::seconds(75), std::chrono::milliseconds(200)))
      << db_.Count("monitor_windows") << " windows\n"
      << Log();
  EXPECT_EQ(db_.Count("monitor_windows"), windows);
  EXPECT_EQ(db_.Count("monitor_windows WHERE model = 'llama' AND neff_names = "
                      "ARRAY['llama-7b-decode.neff']"),
            kHours - 1);
  EXPECT_EQ(db_.Query("SELECT environment->>'neuron-runtime' FROM monitor_windows LIMIT 1"),
            "2.21.0");

  // Exactly one latency regression: llama, at the window of the step, linked to the nightly.
  const std::string latency = "regressions WHERE kind = 'latency'";
  EXPECT_EQ(db_.Count(latency), 1)
      << db_.Query("SELECT string_agg(summary, '; ') FROM regressions");
  EXPECT_EQ(
      db_.Query("SELECT model || ' ' || kind || ' ' || extract(epoch FROM first_bad_at)::bigint"
                " || ' ' || (latency->>'window_end') FROM " +
                latency),
      "llama latency " + std::to_string(step_at) + " " +
          absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(step_at + 3600),
                           absl::UTCTimeZone()));
  EXPECT_EQ(db_.Query("SELECT latency->>'nightly_run_id' FROM " + latency),
            devtime::testing::TestRunId(1));
  EXPECT_EQ(db_.Query("SELECT latency->'hosts'->0->>'host' FROM " + latency), "trn-a");
  EXPECT_NEAR(std::stod(db_.Query("SELECT relative_change FROM " + latency)), 0.15, 0.04);
  EXPECT_EQ(db_.Count(latency + " AND model = 'bert'"), 0);

  // In the regression lifecycle: listed, shown and triaged with the same commands.
  auto listed_regressions = ListRegressions("--all");
  ASSERT_EQ(listed_regressions.size(), 1u) << listed_regressions.dump();
  EXPECT_EQ(listed_regressions[0].value("kind", ""), "latency");
  EXPECT_EQ(listed_regressions[0].value("state", ""), "REGRESSION_STATE_OPEN");
  const std::string id = listed_regressions[0]["id"].get<std::string>();
  auto table = Ctl({"regressions", "list"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("latency"));
  EXPECT_THAT(table.out,
              HasSubstr("hosts trn-a; nightly " + devtime::testing::TestRunId(1).substr(0, 8)));
  auto shown = Ctl({"regressions", "show", id});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  google::protobuf::Timestamp step_time;
  step_time.set_seconds(step_at);
  EXPECT_THAT(shown.out, HasSubstr("window      " + wire::FormatTime(step_time)));
  EXPECT_THAT(shown.out, HasSubstr("nightly     " + devtime::testing::TestRunId(1)));
  EXPECT_THAT(shown.out, HasSubstr("trn-a"));
  auto acked = Ctl({"regressions", "ack", id, "--by", "oncall"});
  EXPECT_EQ(acked.exit_code, 0) << acked.err;
  EXPECT_EQ(db_.Query("SELECT state FROM " + latency), "acknowledged");
  EXPECT_EQ(db_.Count("regression_events e JOIN regressions r USING (regression_id) WHERE"
                      " r.kind = 'latency' AND e.kind = 'opened'"),
            1);

  // Seen: the CLI, the agent's and the collector's metrics.
  auto listed = Ctl({"runs", "list", "--source", "monitor", "--model", "llama", "--limit", "3"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("llama-serve"));
  EXPECT_THAT(listed.out, HasSubstr("device p99"));
  const std::string agent_metrics = devtime::testing::HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(
      agent_metrics,
      HasSubstr("devtime_agent_monitor_device_latency_seconds{model=\"llama\",quantile=\"0.99\"}"));
  EXPECT_THAT(agent_metrics,
              HasSubstr("devtime_agent_monitor_lines_total{outcome=\"not_json\"} 1"));
  const std::string collector_metrics =
      devtime::testing::HttpGet(collector_.metrics_port(), "/metrics");
  EXPECT_THAT(collector_metrics, HasSubstr("devtime_monitor_windows_total{outcome=\"stored\"} " +
                                           std::to_string(windows)));
  // The agent said what it could not use, and what the child said.
  EXPECT_THAT(Log(), HasSubstr("line not used: not JSON"));
  EXPECT_THAT(Log(), HasSubstr("runtime not responding"));
  EXPECT_THAT(Log(), HasSubstr("fake neuron-monitor: config period 120s"));
}

}  // namespace
}  // namespace devtime
