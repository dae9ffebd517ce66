// One neuron-monitor line, read with care (REF = perfetto-neuron-monitor.md part B).
#include "agents/monitor/monitor_report.h"

#include <gtest/gtest.h>

namespace devtime::agent::monitor {
namespace {

const char* kLatency =
    R"({"p0":0.001,"p1":0.002,"p100":0.02,"p25":0.004,"p50":0.005,"p75":0.006,"p99":0.01})";

std::string App(const std::string& tag, const std::string& stats_group,
                const std::string& latency_device, const std::string& group_error = "",
                const std::string& summary = "execution_summary") {
  return R"({"pid":7,"neuron_runtime_tag":")" + tag + R"(","error":"","report":{")" + stats_group +
         R"(":{"period":10.0,"error":")" + group_error +
         R"(","error_summary":{"generic":0,"numerical":3},")" + summary +
         R"(":{"completed":100,"timed_out":1},"latency_stats":{"total_latency":)" + kLatency +
         R"(,"device_latency":)" + latency_device +
         R"(}},"neuroncore_counters":{"period":10.0,"error":"","neuroncores_in_use":{"0":)"
         R"({"neuroncore_utilization":40.0,"flops":1},"1":{"neuroncore_utilization":60.0,)"
         R"("effective_flops":2}}},"memory_used":{"loaded_models":[{"name":"m.neff","uuid":"ab",)"
         R"("model_id":1}]},"unknown_group":{"x":[1]}}})";
}

std::string Report(const std::string& apps) {
  return R"({"neuron_runtime_data":[)" + apps +
         R"(],"system_data":null,"instance_info":{"instance_type":"trn1.2xlarge","error":""},)"
         R"("neuron_hardware_info":{"neuron_device_count":1,"neuroncore_version":"v2"}})";
}

TEST(MonitorReportTest, ReadsAnApplicationsPeriod) {
  auto report = ParseMonitorLine(Report(App("serve", "execution_stats", kLatency)));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->apps.size(), 1u);
  const AppReport& app = report->apps[0];
  EXPECT_EQ(app.tag, "serve");
  ASSERT_TRUE(app.execution.has_value());
  EXPECT_EQ(app.execution->outcomes.at("completed"), 100u);
  EXPECT_EQ(app.execution->errors.at("numerical"), 3u);  // REF B6.2: "numerical"
  ASSERT_TRUE(app.execution->device_latency.has_value());
  EXPECT_DOUBLE_EQ(app.execution->device_latency->seconds[5], 0.01);  // p99
  EXPECT_DOUBLE_EQ(*app.utilization_pct, 50.0);  // flops and effective_flops both accepted
  EXPECT_EQ(app.neff_names, std::vector<std::string>{"m.neff"});
  EXPECT_EQ(report->instance.at("instance_type"), "trn1.2xlarge");
  EXPECT_TRUE(app.problems.empty());
}

TEST(MonitorReportTest, NullLatencyIsIdleNotAProblem) {
  auto report = ParseMonitorLine(Report(App("serve", "execution_stats", "null")));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->apps[0].execution->device_latency.has_value());
  EXPECT_TRUE(report->apps[0].problems.empty());
}

TEST(MonitorReportTest, ReadsTheLegacyInferenceStatsForm) {
  auto report =
      ParseMonitorLine(Report(App("old", "inference_stats", kLatency, "", "inference_summary")));
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE(report->apps[0].execution.has_value());
  EXPECT_TRUE(report->apps[0].execution->legacy_name);
  EXPECT_EQ(report->apps[0].execution->outcomes.at("completed"), 100u);
}

TEST(MonitorReportTest, AGroupErrorMakesItsValuesUnusable) {
  auto report = ParseMonitorLine(Report(App("serve", "execution_stats", kLatency, "no stats")));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->apps[0].execution.has_value());
  EXPECT_EQ(report->apps[0].execution_error, "no stats");
}

TEST(MonitorReportTest, AnEntryErrorHasNoReport) {
  auto report = ParseMonitorLine(
      Report(R"({"pid":9,"neuron_runtime_tag":"9","error":"runtime not responding","report":{}})"));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->apps[0].error, "runtime not responding");
  EXPECT_FALSE(report->apps[0].execution.has_value());
}

TEST(MonitorReportTest, BadPercentilesAreAProblemNamingTheField) {
  auto report = ParseMonitorLine(Report(App(
      "serve", "execution_stats",
      R"({"p0":0.001,"p1":0.002,"p100":0.02,"p25":0.004,"p50":0.003,"p75":0.006,"p99":0.01})")));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->apps[0].execution->device_latency.has_value());
  ASSERT_EQ(report->apps[0].problems.size(), 1u);
  EXPECT_NE(report->apps[0].problems[0].find("device_latency.p50"), std::string::npos);
}

TEST(MonitorReportTest, RefusesWhatIsNotAReportWithoutThrowing) {
  EXPECT_FALSE(ParseMonitorLine("neuron-monitor: starting").ok());
  EXPECT_FALSE(ParseMonitorLine("[1,2]").ok());
  EXPECT_FALSE(ParseMonitorLine(R"({"neuron_runtime_data":{"a":1}})").ok());
  EXPECT_FALSE(ParseMonitorLine(R"({"neuron_runtime_data":[{"report":)").ok());
  auto empty = ParseMonitorLine(R"({"neuron_runtime_data":null,"instance_info":{}})");
  ASSERT_TRUE(empty.ok());  // REF B3: no application running
  EXPECT_TRUE(empty->apps.empty());
}

}  // namespace
}  // namespace devtime::agent::monitor
