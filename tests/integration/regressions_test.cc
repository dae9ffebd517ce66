// Regression detection end to end, on real parts: a devtime-collector on PostgreSQL, a real
// devtime-agent daemon that runs the confirmation job, Debian's Alertmanager delivering to a
// webhook receiver, the collector's own JSON webhook, and devtimectl for triage.
//
// The nightly history is uploaded over gRPC (nights cannot be waited for). The confirmation
// run is real: the collector asks the agent (run-now) to run the job, whose command writes a
// Kineto trace of the TorchNeuron guide's naive RMSNorm (tests/support/rmsnorm_kineto.py: no
// accelerator exists here, the trace stands in for one), and the agent summarizes and
// uploads it like any run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "absl/strings/str_format.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "tests/support/alerting.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/nightly_runs.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

using devtime::testing::Subprocess;
using devtime::testing::WaitUntil;
using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;

constexpr char kHost[] = "trn-e2e";
constexpr char kInstanceType[] = "trn1.2xlarge";
constexpr char kJob[] = "rmsnorm-fused";
constexpr int kSteps = devtime::testing::kNightlySteps;
constexpr int64_t kDay = 86400;

using Op = devtime::testing::NightlyOp;
const std::vector<Op>& kFused = devtime::testing::kFusedRmsNorm;
const std::vector<Op>& kNaive = devtime::testing::kNaiveRmsNorm;

// A nightly run of workload "fused" with `ops`, every step's time scaled by `scale` and by
// +-`noise` (relative, uniform) from `rng`.
v1::RunSummary NightlyRun(int n, int64_t started, const std::vector<Op>& ops,
                          const std::string& compiler, std::mt19937& rng, double noise = 0.005,
                          double scale = 1.0) {
  return devtime::testing::NightlyRmsNormRun({.n = n,
                                              .started = started,
                                              .ops = ops,
                                              .compiler = compiler,
                                              .host = kHost,
                                              .job = kJob,
                                              .noise = noise,
                                              .scale = scale,
                                              .environment = {{"torch", "2.5.1"}}},
                                             rng);
}

// The collector's alert receivers: Alertmanager delivering to a webhook receiver, and the
// receiver of the collector's own webhook. A base of RegressionsTest so that they are up
// before the collector, which is started with their addresses.
class AlertReceivers {
 protected:
  AlertReceivers()
      : dir_(devtime::testing::MakeTempDir("regressions")),
        am_receiver_(dir_, "alertmanager-receiver"),
        webhook_(dir_, "collector-webhook"),
        alertmanager_(dir_, am_receiver_.url()) {}

  std::string dir_;
  devtime::testing::WebhookReceiver am_receiver_;
  devtime::testing::WebhookReceiver webhook_;
  devtime::testing::Alertmanager alertmanager_;
};

class RegressionsTest : public AlertReceivers, public devtime::testing::CollectorFixture {
 protected:
  RegressionsTest()
      : CollectorFixture({"--session-poll-ms", "200", "--alertmanager-url", alertmanager_.url(),
                          "--webhook-url", webhook_.url(), "--notify-every", "1"}),
        now_(time(nullptr)) {}

  // Night k (1..39) of the history, at 02:00-ish k - 40 days from now: night 40 is today.
  int64_t Night(int k) const { return now_ - (40 - k) * kDay; }

  // Nights 1..n of the fused workload, neuronx-cc 2.21.18.
  void UploadFusedHistory(int nights, std::mt19937& rng) {
    for (int k = 1; k <= nights; ++k)
      UploadAnalysed(NightlyRun(k, Night(k), kFused, "2.21.18", rng));
  }

  // Ten fused nights, then two naive ones on neuronx-cc 2.22.4: the fusion is lost from
  // night 11 on.
  void UploadLostFusion(std::mt19937& rng) {
    UploadFusedHistory(10, rng);
    UploadAnalysed(NightlyRun(11, Night(11), kNaive, "2.22.4", rng));
    UploadAnalysed(NightlyRun(12, Night(12), kNaive, "2.22.4", rng));
  }

  nlohmann::json Regression(int64_t id) {
    auto shown = Ctl({"regressions", "show", std::to_string(id), "--format", "json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    return nlohmann::json::parse(shown.out);
  }

  std::string WriteFile(const std::string& name, const std::string& content) {
    return devtime::testing::WriteFile(dir_, name, content);
  }

  // The job whose command stands in for the Trainium profile of the fused workload after
  // the compiler update: the naive five ops, neuronx-cc 2.22.4.
  void ApplyJob() {
    std::string command = absl::StrFormat(
        "/usr/bin/python3 %s/tests/support/rmsnorm_kineto.py --mode naive --out {output_dir} "
        "--steps {steps} --env neuronx-cc=2.22.4 --env torch=2.5.1 --env device=neuron",
        DEVTIME_SOURCE_DIR);
    auto file = WriteFile("jobs.yaml", absl::StrFormat("jobs:\n  - name: %s\n"
                                                       "    model: rmsnorm\n"
                                                       "    workload: fused\n"
                                                       "    command: \"%s\"\n"
                                                       "    schedule: {cron: \"0 2 * * *\"}\n"
                                                       "    selector: {hosts: [%s]}\n"
                                                       "    capture_steps: %d\n",
                                                       kJob, command, kHost, kSteps));
    auto applied = Ctl({"jobs", "apply", "-f", file});
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
  }

  std::unique_ptr<Subprocess> StartAgent() {
    return RunAgent(dir_, kHost, absl::StrFormat("instance_type: %s\n", kInstanceType));
  }

  std::string AgentLog() { return devtime::testing::ReadFile(dir_ + "/" + kHost + ".log"); }

  // Events the collector's webhook delivered, e.g. {"opened", "resolved"}.
  std::vector<std::string> WebhookEvents(int64_t id) {
    std::vector<std::string> events;
    for (const auto& body : webhook_.Bodies()) {
      if (body["regression"].value("id", "") == std::to_string(id)) {
        events.push_back(body.value("event", ""));
      }
    }
    return events;
  }

  int64_t now_;
};

TEST_F(RegressionsTest, LostFusionIsSuspectedConfirmedByARunNowAlertedAndTriaged) {
  ApplyJob();
  auto agent = StartAgent();
  std::mt19937 rng(11);
  UploadFusedHistory(12, rng);
  // Last night the compiler update lost the fusion: 403 us -> 2,355 us per step.
  UploadAnalysed(NightlyRun(13, Night(13), kNaive, "2.22.4", rng));

  // Suspected, or already open: run-now reaches the agent in milliseconds, so its
  // confirmation may be judged before this list is read. The trail at the end shows it was
  // suspected first.
  auto live = ListRegressions();
  ASSERT_EQ(live.size(), 1u) << collector_.Log();
  const int64_t id = std::stoll(live[0]["id"].get<std::string>());
  EXPECT_EQ(live[0]["first_bad_run_id"], "00000000-0000-4000-8000-000000000013");
  EXPECT_EQ(live[0]["last_good_run_id"], "00000000-0000-4000-8000-000000000012");
  EXPECT_TRUE(live[0]["confirmation_requested"].get<bool>());

  // The agent claims the run-now, runs the job, uploads; the regression opens.
  nlohmann::json opened;
  ASSERT_TRUE(WaitUntil(
      [&] {
        opened = Regression(id);
        return opened["state"] == "REGRESSION_STATE_OPEN";
      },
      std::chrono::seconds(90)))
      << opened.dump(2) << AgentLog() << collector_.Log();
  const std::string confirmation = opened["confirmation_run_id"];
  EXPECT_FALSE(confirmation.empty());
  EXPECT_THAT(confirmation, ::testing::Not(HasSubstr("00000000-0000-4000-8000")))
      << "the confirmation must be the agent's run, not an uploaded night";
  EXPECT_EQ(opened["severity"], "critical");
  EXPECT_GT(opened["relative_change"].get<double>(), 4.5);  // 403 -> 2,355 us: +484 %
  EXPECT_NEAR(opened["before"].get<double>(), 403.3, 403.3 * 0.01);
  EXPECT_NEAR(opened["after"].get<double>(), 2354.9, 2354.9 * 0.01);

  // Attribution: aten::mul on top, two calls per step where there were none; the device
  // layer grew; the compiler version named.
  const auto& attribution = opened["attribution"];
  EXPECT_EQ(attribution["ops"][0]["op"], "aten::mul");
  EXPECT_NEAR(attribution["ops"][0]["after_calls"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(attribution["dominant_layer"], "device_execution");
  ASSERT_EQ(attribution["environment"].size(), 1u) << attribution.dump(2);
  EXPECT_EQ(attribution["environment"][0]["key"], "neuronx-cc");
  EXPECT_EQ(attribution["environment"][0]["before"], "2.21.18");
  EXPECT_EQ(attribution["environment"][0]["after"], "2.22.4");
  EXPECT_THAT(opened["summary"].get<std::string>(), HasSubstr("neuronx-cc 2.21.18 -> 2.22.4"));

  // It reaches Alertmanager, which notifies its receiver; the webhook says "opened".
  std::optional<nlohmann::json> fired;
  ASSERT_TRUE(WaitUntil([&] {
    return (fired = devtime::testing::AlertmanagerNotification(am_receiver_, "firing", id))
        .has_value();
  })) << alertmanager_.Log()
      << collector_.Log();
  EXPECT_EQ((*fired)["labels"]["model"], "rmsnorm");
  EXPECT_EQ((*fired)["labels"]["workload"], "fused");
  EXPECT_EQ((*fired)["labels"]["instance_type"], kInstanceType);
  EXPECT_EQ((*fired)["labels"]["severity"], "critical");
  EXPECT_THAT((*fired)["annotations"]["top_operators"].get<std::string>(),
              ::testing::StartsWith("aten::mul"));
  EXPECT_THAT((*fired)["annotations"]["environment_changes"].get<std::string>(),
              HasSubstr("neuronx-cc"));
  EXPECT_THAT((*fired)["annotations"]["runs"].get<std::string>(), HasSubstr(confirmation));
  ASSERT_TRUE(WaitUntil([&] { return !WebhookEvents(id).empty(); })) << collector_.Log();
  EXPECT_EQ(WebhookEvents(id), std::vector<std::string>{"opened"});

  // Triage through devtimectl: acknowledge, then resolve as fixed.
  auto ack = Ctl({"regressions", "ack", std::to_string(id), "--by", "alice", "--reason",
                  "bisecting neuronx-cc"});
  ASSERT_EQ(ack.exit_code, 0) << ack.err;
  EXPECT_THAT(ack.out, HasSubstr("acknowledged"));
  auto bad = Ctl({"regressions", "ack", std::to_string(id), "--by", "alice"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("the regression is acknowledged: it cannot become acknowledged"));
  auto resolve =
      Ctl({"regressions", "resolve", std::to_string(id), "--as", "fixed", "--by", "alice"});
  ASSERT_EQ(resolve.exit_code, 0) << resolve.err;

  auto done = Regression(id);
  EXPECT_EQ(done["state"], "REGRESSION_STATE_RESOLVED");
  EXPECT_EQ(done["resolution"], "RESOLUTION_FIXED");
  std::vector<std::string> trail;
  for (const auto& t : done["transitions"]) {
    trail.push_back(t["to"].get<std::string>() + " by " + t["actor"].get<std::string>());
  }
  EXPECT_THAT(trail, ::testing::ElementsAre("REGRESSION_STATE_SUSPECTED by detector",
                                            "REGRESSION_STATE_OPEN by detector",
                                            "REGRESSION_STATE_ACKNOWLEDGED by alice",
                                            "REGRESSION_STATE_RESOLVED by alice"));

  // The end reaches Alertmanager (a resolved notification) and the webhook.
  ASSERT_TRUE(WaitUntil([&] {
    return devtime::testing::AlertmanagerNotification(am_receiver_, "resolved", id).has_value();
  })) << alertmanager_.Log()
      << collector_.Log();
  ASSERT_TRUE(WaitUntil([&] { return WebhookEvents(id).size() == 2; })) << collector_.Log();
  EXPECT_EQ(WebhookEvents(id), (std::vector<std::string>{"opened", "resolved"}));

  // `show` renders the attribution for people.
  auto shown = Ctl({"regressions", "show", std::to_string(id)});
  EXPECT_THAT(shown.out, HasSubstr("aten::mul"));
  EXPECT_THAT(shown.out, HasSubstr("neuronx-cc"));
  EXPECT_THAT(shown.out, HasSubstr("resolved (fixed)"));
}

TEST_F(RegressionsTest, NoisyHistoryWithSpikesOpensNothing) {
  std::mt19937 rng(5);
  // 40 nights at 3 % noise; three nights are single spikes (+25 %, +60 %, +40 %), each
  // followed by an ordinary night.
  for (int night = 1; night <= 40; ++night) {
    double scale = night == 12 ? 1.25 : night == 23 ? 1.6 : night == 33 ? 1.4 : 1.0;
    UploadAnalysed(NightlyRun(night, Night(night) - kDay, kFused, "2.21.18", rng, 0.03, scale));
  }
  for (const auto& r : ListRegressions()) {
    EXPECT_EQ(r["state"], "REGRESSION_STATE_INVALID") << r.dump(2);
    EXPECT_FALSE(r.contains("fired_at")) << "a spike must never fire: " << r.dump(2);
  }
  EXPECT_EQ(db_.Count("regression_events"), 0);
}

TEST_F(RegressionsTest, ConfirmedByTheNextRunThenResolvedByTheDetectorWhenTheLevelReturns) {
  std::mt19937 rng(3);
  // An ad-hoc history (no job known to the collector): the next run confirms.
  UploadLostFusion(rng);
  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u);
  const int64_t id = std::stoll(regressions[0]["id"].get<std::string>());
  EXPECT_EQ(regressions[0]["state"], "REGRESSION_STATE_OPEN");
  EXPECT_FALSE(regressions[0].value("confirmation_requested", false));
  EXPECT_EQ(regressions[0]["confirmation_run_id"], "00000000-0000-4000-8000-000000000012");

  // The fix lands: one run back is not enough, the second resolves it.
  UploadAnalysed(NightlyRun(13, Night(13), kFused, "2.22.5", rng));
  EXPECT_EQ(Regression(id)["state"], "REGRESSION_STATE_OPEN");
  UploadAnalysed(NightlyRun(14, Night(14), kFused, "2.22.5", rng));
  auto resolved = Regression(id);
  EXPECT_EQ(resolved["state"], "REGRESSION_STATE_RESOLVED");
  EXPECT_EQ(resolved["resolution"], "RESOLUTION_FIXED");
  EXPECT_EQ(resolved["transitions"].back()["actor"], "detector");
  ASSERT_TRUE(WaitUntil([&] { return WebhookEvents(id).size() == 2; })) << collector_.Log();
  EXPECT_EQ(WebhookEvents(id), (std::vector<std::string>{"opened", "resolved"}));
}

TEST_F(RegressionsTest, AcceptedAsTheNewBaselineTheNewLevelOpensNothingMore) {
  std::mt19937 rng(8);
  UploadLostFusion(rng);
  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u);
  const std::string id = regressions[0]["id"];
  auto accepted = Ctl({"regressions", "resolve", id, "--as", "accepted_baseline", "--by", "bob",
                       "--reason", "naive kernels are expected on this compiler"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  for (int night = 13; night <= 16; ++night) {
    UploadAnalysed(NightlyRun(night, Night(night), kNaive, "2.22.4", rng));
  }
  EXPECT_EQ(ListRegressions().size(), 1u) << ListRegressions().dump(2);
  EXPECT_EQ(Regression(std::stoll(id))["resolution"], "RESOLUTION_ACCEPTED_BASELINE");
  // A wrong transition names the states.
  auto reopen = Ctl({"regressions", "ack", id, "--by", "bob"});
  EXPECT_EQ(reopen.exit_code, 1);
  EXPECT_THAT(reopen.err, HasSubstr("the regression is resolved: it cannot become acknowledged"));
}

TEST_F(RegressionsTest, OperatorSeriesThatMovedWithTheRunAreItsChildren) {
  std::mt19937 rng(4);
  UploadFusedHistory(10, rng);
  // The fused kernel itself got 50 % slower: one alert, the whole run and aten::rms_norm's
  // own series as its children.
  UploadAnalysed(NightlyRun(11, Night(11), kFused, "2.22.4", rng, 0.005, 1.5));
  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u);
  const auto& series = regressions[0]["series"];
  ASSERT_EQ(series.size(), 2u) << series.dump(2);
  EXPECT_EQ(series[0]["op"], "");
  EXPECT_EQ(series[1]["op"], "aten::rms_norm");
  EXPECT_NEAR(series[1]["relative_change"].get<double>(), 0.5, 0.02);
  EXPECT_EQ(series[1]["baseline_runs"], 10);
  EXPECT_EQ(regressions[0]["severity"], "critical");
}

}  // namespace
}  // namespace devtime
