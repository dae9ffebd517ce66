// FleetMetrics against a real PostgreSQL: runs stored through the RunStore, regressions, job
// slots and agents written as the collector writes them; the registry serialized as a
// scrape would see it, and that text checked by `promtool check metrics`.
#include "services/collector/metrics/fleet_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "prometheus/text_serializer.h"
#include "services/collector/metrics/collector_metrics.h"
#include "services/collector/store/job_store.h"
#include "services/collector/store/run_store.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/store_fixture.h"
#include "tests/support/test_database.h"

namespace devtime::collector {
namespace {

using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr long long kNight = 1795917600;  // NaiveRmsNormRun's default start
constexpr char kPromtool[] = "/usr/bin/promtool";

// A scrape's text as {"name{label=\"value\",...}" -> value}.
std::map<std::string, double> ParseExposition(const std::string& text) {
  std::map<std::string, double> series;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    series[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return series;
}

// The series name as the text format writes it: labels sorted by name.
std::string Series(const std::string& name, const std::map<std::string, std::string>& labels) {
  std::string out = name + "{";
  for (const auto& [key, value] : labels) {
    if (out.back() != '{') out += ",";
    out += key + "=\"" + value + "\"";
  }
  return out + "}";
}

std::map<std::string, std::string> Triple(const std::string& workload,
                                          const std::string& model = "rmsnorm") {
  return {{"model", model}, {"workload", workload}, {"instance_type", "trn1.2xlarge"}};
}

std::map<std::string, std::string> With(std::map<std::string, std::string> labels,
                                        const std::string& key, const std::string& value) {
  labels[key] = value;
  return labels;
}

// Exit status and output of `promtool check metrics < file`.
std::pair<int, std::string> Promtool(const std::string& exposition) {
  std::string path = devtime::testing::MakeTempDir("fleet-metrics") + "/metrics.txt";
  std::ofstream(path) << exposition;
  std::string command = std::string(kPromtool) + " check metrics < '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class FleetMetricsTest : public devtime::testing::StoreFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreFixture::SetUp());
    jobs_ = std::make_unique<store::JobStore>(*store_);
    registry_ = std::make_shared<prometheus::Registry>();
    collector_metrics_ = std::make_unique<CollectorMetrics>(registry_);
    FleetMetricsOptions fleet_options;
    fleet_options.top_ops = 2;
    fleet_ = std::make_unique<FleetMetrics>(*store_, *registry_, fleet_options);
  }

  void Ingest(const v1::RunSummary& run) {
    auto outcome = runs_->IngestRun(run);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
  }

  std::string Scrape() { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

  // Refreshes as of `now` and returns the scrape.
  std::map<std::string, double> RefreshAt(long long now) {
    auto status = fleet_->Refresh(absl::FromUnixSeconds(now));
    EXPECT_TRUE(status.ok()) << status;
    return ParseExposition(Scrape());
  }

  void InsertRegression(int bad_run, const std::string& state, const std::string& severity,
                        const std::string& workload = "naive") {
    db_.Query(
        "INSERT INTO regressions (state, severity, model, workload, instance_type, host, metric,"
        " last_good_run_id, first_bad_run_id, first_bad_at, before_us, baseline_sigma_us,"
        " baseline_count, after_us, relative_change, z, confidence, summary) VALUES ('" +
        state + "', '" + severity + "', 'rmsnorm', '" + workload +
        "', 'trn1.2xlarge', 'trn-test-01', 'device_us_per_step', '" + TestRunId(1) + "', '" +
        TestRunId(bad_run) +
        "', now(), 2354.9, 10, 5, 2600, 0.104, 24.5, 0.999, 'slower') RETURNING 1");
  }

  void RecordSlot(const std::string& job, long long slot_time, v1::SlotOutcome outcome,
                  long long finished = 0) {
    v1::JobSlot slot;
    slot.set_job(job);
    slot.mutable_slot_time()->set_seconds(slot_time);
    slot.set_host("trn-test-01");
    slot.set_outcome(outcome);
    if (finished) slot.mutable_finished_at()->set_seconds(finished);
    auto status = jobs_->RecordSlot(slot);
    ASSERT_TRUE(status.ok()) << status;
  }

  void AddAgent(const std::string& name, long long last_seen) {
    v1::AgentIdentity agent;
    agent.set_name(name);
    agent.set_host(name + ".example");
    ASSERT_TRUE(jobs_->UpsertAgent(agent).ok());
    db_.Query("UPDATE agents SET last_seen = to_timestamp(" + std::to_string(last_seen) +
              ") WHERE name = '" + name + "' RETURNING 1");
  }

  std::unique_ptr<store::JobStore> jobs_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<CollectorMetrics> collector_metrics_;
  std::unique_ptr<FleetMetrics> fleet_;
};

TEST_F(FleetMetricsTest, LatestOkRunGivesStepTimesTopOpsLayersAndTimestamp) {
  auto older = NaiveRmsNormRun(TestRunId(1), "naive", kNight - 86400);
  older.mutable_ops(0)->set_self_device_us(9999.0 * 3);  // must not be what is exported
  Ingest(older);
  Ingest(NaiveRmsNormRun(TestRunId(2), "naive", kNight));
  auto failed = NaiveRmsNormRun(TestRunId(3), "naive", kNight + 3600);  // newer, not OK
  failed.set_status(v1::RUN_STATUS_FAILED);
  failed.set_status_reason("exit code 1");
  Ingest(failed);

  auto m = RefreshAt(kNight + 86400);
  auto naive = Triple("naive");
  // Steps 2354.9 × {0.99, 1.00, 1.01}: mean 2354.9 µs; CPU 60 µs per step.
  EXPECT_NEAR(m.at(Series("devtime_step_seconds", With(naive, "time", "device"))), 2354.9e-6,
              1e-12);
  EXPECT_NEAR(m.at(Series("devtime_step_seconds", With(naive, "time", "cpu"))), 60e-6, 1e-12);
  EXPECT_DOUBLE_EQ(m.at(Series("devtime_latest_run_timestamp_seconds", naive)), kNight);
  // Top 2 by self device time per step (3 steps), the rest summed.
  auto op = [&](const std::string& name) {
    return m.at(Series("devtime_op_self_seconds_per_step", With(naive, "op", name)));
  };
  EXPECT_NEAR(op("aten::mul"), 1164.5e-6, 1e-12);
  EXPECT_NEAR(op("aten::add"), 434.6e-6, 1e-12);
  EXPECT_NEAR(op("other"), (415.0 + 340.8) * 1e-6, 1e-12);
  EXPECT_EQ(m.count(Series("devtime_op_self_seconds_per_step", With(naive, "op", "aten::rsqrt"))),
            0u);
  // The layer total (2354.9 × 3 µs over the captured steps) per step.
  EXPECT_NEAR(
      m.at(Series("devtime_layer_seconds_per_step", With(naive, "layer", "device_execution"))),
      2354.9e-6, 1e-12);
  EXPECT_EQ(m.count(Series("devtime_layer_seconds_per_step", With(naive, "layer", "idle"))), 0u);
}

TEST_F(FleetMetricsTest, CpuOnlyRunsUseSelfCpuTime) {
  auto run = NaiveRmsNormRun(TestRunId(1));
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_CPU);
  for (auto& op : *run.mutable_ops()) op.set_self_device_us(0);
  Ingest(run);
  auto m = RefreshAt(kNight + 60);
  // aten::mul: NaiveRmsNormRun gives it 24 µs of self CPU time over the 3 steps.
  EXPECT_NEAR(
      m.at(Series("devtime_op_self_seconds_per_step", With(Triple("naive"), "op", "aten::mul"))),
      24e-6 / 3, 1e-12);
  // The series basis of a CPU-only profile is its CPU time per step (60 µs), exported once:
  // no time="device" twin, so a sum over `time` counts it once.
  EXPECT_NEAR(m.at(Series("devtime_step_seconds", With(Triple("naive"), "time", "cpu"))), 60e-6,
              1e-12);
  EXPECT_EQ(m.count(Series("devtime_step_seconds", With(Triple("naive"), "time", "device"))), 0u);
  double sum = 0;
  for (const auto& [series, value] : m) {
    if (series.rfind("devtime_step_seconds{", 0) == 0) sum += value;
  }
  EXPECT_NEAR(sum, 60e-6, 1e-12);
}

TEST_F(FleetMetricsTest, DroppedOperatorAndStaleModelDisappear) {
  Ingest(NaiveRmsNormRun(TestRunId(1), "naive", kNight));
  auto other_model = NaiveRmsNormRun(TestRunId(2), "block", kNight + 20 * 86400);
  other_model.mutable_identity()->set_model("transformer");
  Ingest(other_model);
  auto add_series =
      Series("devtime_op_self_seconds_per_step", With(Triple("naive"), "op", "aten::add"));
  auto m = RefreshAt(kNight + 86400);
  ASSERT_EQ(m.count(add_series), 1u);

  // The next night aten::add is fused away: rsqrt moves into the top 2, add is gone.
  auto fused = NaiveRmsNormRun(TestRunId(3), "naive", kNight + 86400);
  fused.mutable_ops()->erase(fused.mutable_ops()->begin() + 1);
  ASSERT_EQ(fused.ops(1).name(), "aten::rsqrt");
  Ingest(fused);
  m = RefreshAt(kNight + 2 * 86400);
  EXPECT_EQ(m.count(add_series), 0u);
  EXPECT_NEAR(
      m.at(Series("devtime_op_self_seconds_per_step", With(Triple("naive"), "op", "aten::rsqrt"))),
      415.0e-6, 1e-12);
  EXPECT_NEAR(
      m.at(Series("devtime_op_self_seconds_per_step", With(Triple("naive"), "op", "other"))),
      340.8e-6, 1e-12);

  // 31 days after its last run rmsnorm is stale: every rmsnorm series goes, transformer stays.
  m = RefreshAt(kNight + 86400 + 31 * 86400);
  for (const auto& [series, value] : m) {
    EXPECT_THAT(series, Not(HasSubstr("model=\"rmsnorm\""))) << "stale series kept: " << series;
  }
  EXPECT_EQ(m.count(Series("devtime_latest_run_timestamp_seconds", Triple("block", "transformer"))),
            1u);
  EXPECT_THAT(Scrape(), Not(HasSubstr("rmsnorm")));
}

TEST_F(FleetMetricsTest, CountsLiveRegressionsByStateAndSeverity) {
  for (int i = 1; i <= 5; ++i) Ingest(NaiveRmsNormRun(TestRunId(i), "naive", kNight + i));
  Ingest(NaiveRmsNormRun(TestRunId(6), "fused", kNight));
  InsertRegression(2, "open", "warning");
  InsertRegression(3, "acknowledged", "warning");
  InsertRegression(4, "suspected", "critical");
  InsertRegression(5, "resolved", "critical");

  auto m = RefreshAt(kNight + 86400);
  auto naive = With(Triple("naive"), "kind", "step");
  auto fused = With(Triple("fused"), "kind", "step");
  EXPECT_EQ(m.at(Series("devtime_regressions_open", With(naive, "severity", "warning"))), 2);
  EXPECT_EQ(m.at(Series("devtime_regressions_open", With(naive, "severity", "critical"))), 0);
  EXPECT_EQ(m.at(Series("devtime_regressions_suspected", naive)), 1);
  // A workload with runs but no regression reads 0, not absent.
  EXPECT_EQ(m.at(Series("devtime_regressions_suspected", fused)), 0);
  EXPECT_EQ(m.at(Series("devtime_regressions_open", With(fused, "severity", "info"))), 0);
  EXPECT_EQ(m.at(Series("devtime_regressions_suspected", With(Triple("naive"), "kind", "drift"))),
            0);

  db_.Query("UPDATE regressions SET state = 'resolved', resolution = 'fixed' RETURNING 1");
  m = RefreshAt(kNight + 86400);
  EXPECT_EQ(m.at(Series("devtime_regressions_open", With(naive, "severity", "warning"))), 0);
  EXPECT_EQ(m.at(Series("devtime_regressions_suspected", naive)), 0);
}

TEST_F(FleetMetricsTest, JobSuccessAndRecentSlotsByOutcome) {
  db_.Query(
      "INSERT INTO jobs (name, spec, spec_json) VALUES ('nightly', '', '{}'),"
      " ('idle', '', '{}') RETURNING 1");
  const long long now = kNight + 86400;
  RecordSlot("nightly", now - 3 * 86400, v1::SLOT_OUTCOME_SUCCEEDED, now - 3 * 86400 + 90);
  RecordSlot("nightly", now - 2 * 86400, v1::SLOT_OUTCOME_SUCCEEDED, now - 2 * 86400 + 60);
  RecordSlot("nightly", now - 3600, v1::SLOT_OUTCOME_FAILED, now - 3500);
  RecordSlot("nightly", now - 1800, v1::SLOT_OUTCOME_MISSED_AGENT_DOWN);
  RecordSlot("deleted", now - 600, v1::SLOT_OUTCOME_SUCCEEDED, now - 500);  // job since removed
  RecordSlot("long-gone", now - 5 * 86400, v1::SLOT_OUTCOME_FAILED);

  auto m = RefreshAt(now);
  EXPECT_EQ(m.at(Series("devtime_job_last_success_timestamp_seconds", {{"job", "nightly"}})),
            now - 2 * 86400 + 60);
  EXPECT_EQ(m.count(Series("devtime_job_last_success_timestamp_seconds", {{"job", "idle"}})), 0u);
  auto recent = [&](const std::string& job, const std::string& outcome) {
    return m.at(Series("devtime_job_slots_recent", {{"job", job}, {"outcome", outcome}}));
  };
  EXPECT_EQ(recent("nightly", "failed"), 1);
  EXPECT_EQ(recent("nightly", "missed_agent_down"), 1);
  EXPECT_EQ(recent("nightly", "succeeded"), 0);  // both successes are older than 24 h
  EXPECT_EQ(recent("nightly", "missed_no_agent"), 0);
  EXPECT_EQ(recent("idle", "running"), 0);
  EXPECT_EQ(recent("deleted", "succeeded"), 1);
  std::string text = Scrape();
  EXPECT_THAT(text, Not(HasSubstr("long-gone")));
  EXPECT_THAT(text, Not(HasSubstr("unspecified")));
}

TEST_F(FleetMetricsTest, AgentsConnectedWithinFivePollsAndStaleOnesDropped) {
  const long long now = kNight;
  AddAgent("fresh", now - 2);
  AddAgent("away", now - 3600);
  AddAgent("decommissioned", now - 40 * 86400);
  auto m = RefreshAt(now);
  auto agent = [](const std::string& name) {
    return std::map<std::string, std::string>{{"agent", name}, {"host", name + ".example"}};
  };
  EXPECT_EQ(m.at(Series("devtime_agent_connected", agent("fresh"))), 1);
  EXPECT_EQ(m.at(Series("devtime_agent_connected", agent("away"))), 0);
  EXPECT_EQ(m.at(Series("devtime_agent_last_seen_timestamp_seconds", agent("away"))), now - 3600);
  EXPECT_EQ(m.count(Series("devtime_agent_connected", agent("decommissioned"))), 0u);
  // Six seconds later "fresh" is past 5 polls of 1 s.
  m = RefreshAt(now + 6);
  EXPECT_EQ(m.at(Series("devtime_agent_connected", agent("fresh"))), 0);
}

TEST_F(FleetMetricsTest, ExpositionPassesPromtool) {
  for (int i = 1; i <= 3; ++i) Ingest(NaiveRmsNormRun(TestRunId(i), "naive", kNight + i));
  InsertRegression(2, "open", "critical");
  db_.Query("INSERT INTO jobs (name, spec, spec_json) VALUES ('nightly', '', '{}') RETURNING 1");
  RecordSlot("nightly", kNight, v1::SLOT_OUTCOME_SUCCEEDED, kNight + 60);
  AddAgent("trn-agent", kNight);
  collector_metrics_->RecordDetection(analyze::Verdict::kSuspected, 0.02);
  ASSERT_TRUE(fleet_->Refresh(absl::FromUnixSeconds(kNight + 3600)).ok());
  std::string text = Scrape();
  for (const char* family :
       {"devtime_step_seconds", "devtime_op_self_seconds_per_step",
        "devtime_layer_seconds_per_step", "devtime_latest_run_timestamp_seconds",
        "devtime_regressions_open", "devtime_regressions_suspected",
        "devtime_job_last_success_timestamp_seconds", "devtime_job_slots_recent",
        "devtime_agent_last_seen_timestamp_seconds", "devtime_agent_connected",
        "devtime_detection_runs_total", "devtime_detection_duration_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
  ASSERT_EQ(access(kPromtool, X_OK), 0)
      << kPromtool << " is missing: install Debian's prometheus package (deploy/install-deps.sh)";
  auto [code, output] = Promtool(text);
  EXPECT_EQ(code, 0) << output;
  EXPECT_THAT(output, IsEmpty());
}

TEST_F(FleetMetricsTest, FailedRefreshKeepsPreviousValues) {
  Ingest(NaiveRmsNormRun(TestRunId(1)));
  ASSERT_TRUE(fleet_->Refresh(absl::FromUnixSeconds(kNight + 60)).ok());
  std::string before = Scrape();
  // A database the refresh cannot read: drop a table it queries.
  db_.Query("ALTER TABLE agents RENAME TO agents_gone; SELECT 1");
  EXPECT_FALSE(fleet_->Refresh(absl::FromUnixSeconds(kNight + 120)).ok());
  EXPECT_EQ(Scrape(), before);
}

}  // namespace
}  // namespace devtime::collector
