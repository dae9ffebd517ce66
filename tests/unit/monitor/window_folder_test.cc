// Folding a stream into windows, and the window as a run the collector accepts.
#include "agents/monitor/window_folder.h"

#include <gtest/gtest.h>

#include "agents/monitor/window_run.h"
#include "proto/wire/validation.h"

namespace devtime::agent::monitor {
namespace {

MonitorConfig Config() {
  MonitorConfig config;
  config.enabled = true;
  config.period_seconds = 600;
  config.window_seconds = 3600;
  config.apps.push_back({.tag = "serve", .model = "llama", .workload = "decode"});
  AppMapping regex{.tag_regex = "bert-.*", .model = "bert", .workload = "serving"};
  regex.regex = std::regex(regex.tag_regex);
  config.apps.push_back(regex);
  return config;
}

AppReport App(const std::string& tag, int64_t pid, uint64_t completed, double p50_s) {
  AppReport app;
  app.tag = tag;
  app.pid = pid;
  ExecutionPeriod e;
  e.period_seconds = 600;
  e.outcomes["completed"] = completed;
  e.errors["transient"] = 1;
  Percentiles p;
  const double f[7] = {0.5, 0.6, 0.9, 1, 1.1, 1.5, 2};
  for (int i = 0; i < 7; ++i) p.seconds[i] = p50_s * f[i];
  e.device_latency = p;
  e.total_latency = p;
  app.execution = e;
  app.utilization_pct = 50;
  app.neff_names = {tag + ".neff"};
  return app;
}

MonitorReport Report(std::vector<AppReport> apps) {
  MonitorReport r;
  r.apps = std::move(apps);
  r.instance["instance_type"] = "trn1.32xlarge";
  return r;
}

const absl::Time kMidnight = absl::FromUnixSeconds(1'764'547'200);  // 2025-12-01T00:00:00Z

TEST(WindowFolderTest, FoldsPeriodsIntoHourlyWindowsByTheStreamsOwnTime) {
  MonitorConfig config = Config();
  WindowFolder folder(config, kMidnight);
  FoldStats stats;
  std::vector<WindowSummary> closed;
  for (int i = 0; i < 13; ++i) {  // 13 periods of 10 min: two whole hours and one more period
    auto out = folder.Add(Report({App("serve", i < 8 ? 10 : 11, 100, 0.01),
                                  App("bert-1", 20, 50, 0.002), App("unknown", 30, 5, 0.1)}),
                          stats);
    closed.insert(closed.end(), out.begin(), out.end());
  }
  ASSERT_EQ(closed.size(), 4u);  // two apps x two hours; unknown is skipped
  EXPECT_EQ(stats.apps_unmapped, 13);
  const WindowSummary& first = closed[0].model == "bert" ? closed[1] : closed[0];
  EXPECT_EQ(first.model, "llama");
  EXPECT_EQ(first.start, kMidnight);
  EXPECT_EQ(first.end, kMidnight + absl::Hours(1));
  EXPECT_EQ(first.periods, 6u);
  EXPECT_EQ(first.executions, 600u);
  EXPECT_EQ(first.errors.at("transient"), 6u);
  EXPECT_NEAR(first.device.Quantile(0.5), 10'000, 10'000 * 0.01);
  const WindowSummary& second = closed[2].model == "llama" ? closed[2] : closed[3];
  EXPECT_EQ(second.restarts, 1u);  // the PID changed in the second hour
  EXPECT_EQ(folder.stream_time(), kMidnight + absl::Minutes(130));
}

TEST(WindowFolderTest, AWindowIsAValidRunWithAStableId) {
  MonitorConfig config = Config();
  WindowFolder folder(config, kMidnight);
  FoldStats stats;
  for (int i = 0; i < 6; ++i) folder.Add(Report({App("serve", 10, 100, 0.01)}), stats);
  auto closed = folder.Add(Report({App("serve", 10, 100, 0.01)}), stats);
  ASSERT_EQ(closed.size(), 1u);
  RunContext context{
      .host = "trn-a", .instance_type = "", .environment = {{"neuron-runtime", "2.21"}}};
  const v1::RunSummary run = ToRunSummary(closed[0], context);
  EXPECT_TRUE(wire::ValidateRun(run).ok()) << wire::ValidateRun(run);
  EXPECT_EQ(run.source(), v1::RUN_SOURCE_MONITOR);
  EXPECT_EQ(run.identity().instance_type(), "trn1.32xlarge");  // from instance_info
  EXPECT_EQ(run.environment().at("neuron-runtime"), "2.21");
  EXPECT_TRUE(wire::IsCanonicalUuid(run.identity().run_id()));
  EXPECT_EQ(run.identity().run_id(), ToRunSummary(closed[0], context).identity().run_id());
  RunContext other = context;
  other.host = "trn-b";
  EXPECT_NE(run.identity().run_id(), ToRunSummary(closed[0], other).identity().run_id());
  EXPECT_NEAR(run.monitor().device_p99_us(), 15'000, 15'000 * 0.01);

  // A profile may not carry monitor figures; a monitor run needs them.
  v1::RunSummary profile = run;
  profile.set_source(v1::RUN_SOURCE_PROFILE);
  EXPECT_NE(wire::ValidateRun(profile).message().find("run.monitor"), std::string::npos);
  v1::RunSummary bad = run;
  bad.mutable_monitor()->set_neuroncore_utilization_pct(101);
  EXPECT_NE(wire::ValidateRun(bad).message().find("run.monitor.neuroncore_utilization_pct"),
            std::string::npos);
  bad = run;
  bad.mutable_monitor()->mutable_device_latency()->add_weights(-1);
  EXPECT_NE(wire::ValidateRun(bad).message().find("run.monitor.device_latency.weights"),
            std::string::npos);
}

TEST(WindowFolderTest, ACheckpointContinuesTheOpenWindowsWithoutCountingTwice) {
  MonitorConfig config = Config();
  RunContext context{.host = "trn-a"};
  WindowFolder before(config, kMidnight);
  FoldStats stats;
  for (int i = 0; i < 3; ++i) before.Add(Report({App("serve", 10, 100, 0.01)}), stats);
  const std::string bytes = EncodeCheckpoint(before.stream_time(), before.Open(), context);

  WindowFolder after(config, absl::UnixEpoch());
  absl::Time time;
  std::vector<WindowSummary> open;
  ASSERT_TRUE(DecodeCheckpoint(bytes, time, open).ok());
  after.Restore(std::move(open), time);
  std::vector<WindowSummary> closed;
  for (int i = 0; i < 4; ++i) {
    auto out = after.Add(Report({App("serve", 10, 100, 0.01)}), stats);
    closed.insert(closed.end(), out.begin(), out.end());
  }
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].periods, 6u);  // 3 before the restart, 3 after: each once
  EXPECT_EQ(closed[0].executions, 600u);
  EXPECT_FALSE(DecodeCheckpoint("garbage", time, open).ok());
}

}  // namespace
}  // namespace devtime::agent::monitor
