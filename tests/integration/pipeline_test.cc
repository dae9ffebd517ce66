// The whole path on real parts: devtime-agent and devtimectl as processes, a
// devtime-collector process, gRPC over loopback and PostgreSQL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "devtime/v1/collector.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "proto/wire/channel.h"
#include "proto/wire/exit_codes.h"
#include "proto/wire/json.h"
#include "proto/wire/limits.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/matchers.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

using devtime::testing::AgentCommand;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::RunCommand;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;

class PipelineTest : public devtime::testing::CollectorFixture {
 protected:
  PipelineTest() : dir_(devtime::testing::MakeTempDir("pipeline")) {}

  std::string WriteRunFile(const v1::RunSummary& run, const std::string& name) {
    return devtime::testing::WriteFile(dir_, name, wire::ToJson(run));
  }

  // A stub whose channel sends messages of any size, to reach the server's own limit.
  std::unique_ptr<v1::Collector::Stub> UnlimitedStub() {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    return v1::Collector::NewStub(
        grpc::CreateCustomChannel(collector_.address(), grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status UploadDirect(const v1::RunSummary& run) {
    auto stub = UnlimitedStub();
    v1::UploadRunRequest request;
    *request.mutable_run() = run;
    v1::UploadRunResponse response;
    auto context = wire::MakeContext(std::chrono::seconds(30));
    context->AddMetadata("authorization", "Bearer " + collector_.admin_token());
    return stub->UploadRun(context.get(), request, &response);
  }

  std::string dir_;
};

TEST_F(PipelineTest, UploadedRunIsStoredAndShownByDevtimectl) {
  auto file = WriteRunFile(NaiveRmsNormRun(TestRunId(1)), "night1.json");
  auto upload = AgentUpload({file});
  ASSERT_EQ(upload.exit_code, 0) << upload.err;
  EXPECT_THAT(upload.out, HasSubstr("stored " + TestRunId(1)));

  auto list = Ctl({"runs", "list", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto runs = nlohmann::json::parse(list.out).at("runs");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["identity"]["run_id"], TestRunId(1));
  EXPECT_EQ(runs[0]["status"], "RUN_STATUS_OK");
  EXPECT_EQ(runs[0]["op_count"], 4);

  auto table = Ctl({"runs", "list", "--model", "rmsnorm"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr(TestRunId(1)));
  EXPECT_THAT(table.out, HasSubstr("trn1.2xlarge"));

  auto show = Ctl({"runs", "show", TestRunId(1)});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  // Operators sorted by self device time; aten::mul is 49.5% of the naive RMSNorm.
  auto mul = show.out.find("aten::mul");
  ASSERT_NE(mul, std::string::npos) << show.out;
  EXPECT_LT(mul, show.out.find("aten::add"));
  EXPECT_THAT(show.out, HasSubstr("49.5%"));
  EXPECT_THAT(show.out, HasSubstr("neuronx-cc=2.21.0"));

  auto models = Ctl({"models", "list"});
  ASSERT_EQ(models.exit_code, 0) << models.err;
  EXPECT_THAT(models.out, HasSubstr("rmsnorm"));
  EXPECT_THAT(models.out, HasSubstr("naive"));
}

TEST_F(PipelineTest, CompareAndCheckExplainAndGateALostFusion) {
  auto fused = NaiveRmsNormRun(TestRunId(20), "fused");
  devtime::testing::FuseRmsNormOps(fused);
  for (int i = 0; i < fused.steps_size(); ++i) {
    fused.mutable_steps(i)->set_device_us(403.3 * (0.99 + 0.01 * i));
  }
  auto naive = NaiveRmsNormRun(TestRunId(21), "fused", 1795917600 + 86400);
  (*naive.mutable_environment())["neuronx-cc"] = "2.22.4";
  ASSERT_EQ(AgentUpload({WriteRunFile(fused, "a.json"), WriteRunFile(naive, "b.json")}).exit_code,
            0);

  auto compare = Ctl({"compare", TestRunId(20), TestRunId(21)});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, HasSubstr("aten::mul"));
  EXPECT_THAT(compare.out, HasSubstr("neuronx-cc: 2.21.0 -> 2.22.4"));
  auto gate = Ctl({"check", "--run", TestRunId(21), "--against", TestRunId(20)});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_THAT(gate.out, HasSubstr("REGRESSION"));
  auto fixed = Ctl({"check", "--run", TestRunId(20), "--against", TestRunId(21)});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_THAT(fixed.out, HasSubstr("OK"));
}

TEST_F(PipelineTest, SecondUploadIsAcknowledgedAsAlreadyStored) {
  auto file = WriteRunFile(NaiveRmsNormRun(TestRunId(2)), "run.json");
  ASSERT_EQ(AgentUpload({file}).exit_code, 0);
  auto again = AgentUpload({file});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already stored " + TestRunId(2)));
  EXPECT_EQ(db_.Count("runs"), 1);
}

TEST_F(PipelineTest, SinceFilterAndUnknownRunErrors) {
  auto file = WriteRunFile(NaiveRmsNormRun(TestRunId(3)), "run.json");
  ASSERT_EQ(AgentUpload({file}).exit_code, 0);
  EXPECT_THAT(Ctl({"runs", "list", "--since", "2026-11-28"}).out, HasSubstr(TestRunId(3)));
  EXPECT_THAT(Ctl({"runs", "list", "--since", "2026-11-30"}).out, HasSubstr("no runs match"));
  auto bad_since = Ctl({"runs", "list", "--since", "last tuesday"});
  EXPECT_EQ(bad_since.exit_code, 2);
  EXPECT_THAT(bad_since.err, HasSubstr("--since"));
  auto missing = Ctl({"runs", "show", TestRunId(404)});
  EXPECT_EQ(missing.exit_code, wire::kExitNotFound);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
}

TEST_F(PipelineTest, MalformedJsonFileIsRefusedByTheAgentNamingFileAndField) {
  std::string path = dir_ + "/broken.json";
  std::ofstream(path) << R"({"identity": {"run_id": "x", "modell": "typo"}})";
  auto upload = AgentUpload({path});
  EXPECT_EQ(upload.exit_code, 1);
  EXPECT_THAT(upload.err, HasSubstr("broken.json"));
  EXPECT_THAT(upload.err, HasSubstr("modell"));
  EXPECT_EQ(db_.Count("runs"), 0);
}

TEST_F(PipelineTest, InvalidRunsAreRejectedNamingTheFieldAndStoreNothing) {
  struct Case {
    std::string field;
    std::function<void(v1::RunSummary&)> spoil;
    grpc::StatusCode code;
  };
  std::vector<Case> cases = {
      {"run.identity.run_id", [](v1::RunSummary& r) { r.mutable_identity()->clear_run_id(); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"run.ops[1].self_device_us",
       [](v1::RunSummary& r) { r.mutable_ops(1)->set_self_device_us(std::nan("")); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"run.steps[0].cpu_us", [](v1::RunSummary& r) { r.mutable_steps(0)->set_cpu_us(-5); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"run.identity.device_kind",
       [](v1::RunSummary& r) {
         r.mutable_identity()->set_device_kind(static_cast<v1::DeviceKind>(17));
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"run.ops",
       [](v1::RunSummary& r) {
         for (std::size_t i = 0; i <= wire::kMaxOps; ++i)
           r.add_ops()->set_name("x" + std::to_string(i));
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED},
  };
  for (const auto& c : cases) {
    auto run = NaiveRmsNormRun(TestRunId(7));
    c.spoil(run);
    auto status = UploadDirect(run);
    EXPECT_EQ(status.error_code(), c.code) << c.field << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.field));
  }
  // Over the whole-message limit: gRPC itself refuses it before any handler runs.
  auto huge = NaiveRmsNormRun(TestRunId(8));
  (*huge.mutable_environment())["blob"] = std::string(wire::kMaxMessageBytes + 64 * 1024, 'x');
  auto status = UploadDirect(huge);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();

  EXPECT_EQ(db_.Count("runs"), 0);
  EXPECT_EQ(db_.Count("op_stats"), 0);
  EXPECT_THAT(devtime::testing::HttpGet(collector_.metrics_port(), "/metrics"),
              devtime::testing::ContainsEach({"devtime_ingest_runs_total{outcome=\"invalid\"} 5",
                                              "devtime_ingest_runs_total{outcome=\"stored\"} 0"}));
}

TEST_F(PipelineTest, ConflictingContentUnderOneRunIdIsAlreadyExists) {
  ASSERT_TRUE(UploadDirect(NaiveRmsNormRun(TestRunId(9))).ok());
  auto changed = NaiveRmsNormRun(TestRunId(9));
  changed.mutable_identity()->set_workload("fused");
  auto status = UploadDirect(changed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS) << status.error_message();
  EXPECT_EQ(db_.Query("SELECT workload FROM runs"), "naive");
}

TEST_F(PipelineTest, ServesHealthAndMetrics) {
  auto channel = wire::MakeCollectorChannel(collector_.address());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("devtime.v1.Collector");
  grpc::health::v1::HealthCheckResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(10));
  ASSERT_TRUE(health->Check(context.get(), request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  ASSERT_TRUE(UploadDirect(NaiveRmsNormRun(TestRunId(10))).ok());
  ASSERT_TRUE(UploadDirect(NaiveRmsNormRun(TestRunId(10))).ok());
  EXPECT_THAT(devtime::testing::HttpGet(collector_.metrics_port(), "/metrics"),
              devtime::testing::ContainsEach({"devtime_ingest_runs_total{outcome=\"stored\"} 1",
                                              "devtime_ingest_runs_total{outcome=\"duplicate\"} 1",
                                              "devtime_ingest_duration_seconds_count 2",
                                              "devtime_database_up 1",
                                              "devtime_build_info{component=\"collector\""}));
}

TEST_F(PipelineTest, RealTorchProfileIsSummarizedUploadedAndShown) {
  // A real CPU profile made now by Debian's python3-torch through the harness.
  std::string out = dir_ + "/profile";
  auto harness = RunCommand(
      {"/usr/bin/python3", std::string(DEVTIME_SOURCE_DIR) + "/agents/harness/devtime_harness.py",
       "--workload", "rmsnorm-naive", "--steps", "3", "--out", out},
      std::chrono::seconds(300));
  ASSERT_EQ(harness.exit_code, 0) << harness.err;

  auto table = AgentCommand({"summarize", out});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("aten::mul"));

  // The op-by-op diff of two captures (here: a fixture MLP against this RMSNorm profile).
  auto diff = AgentCommand({"summarize",
                            std::string(DEVTIME_SOURCE_DIR) + "/tests/fixtures/trace/legacy_mlp",
                            "--compare", out});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_THAT(diff.out, HasSubstr("added"));
  EXPECT_THAT(diff.out, HasSubstr("aten::rsqrt"));
  EXPECT_THAT(diff.out, HasSubstr("removed"));

  auto json = AgentCommand(
      {"summarize", out, "--format", "json", "--model", "rmsnorm", "--run-id", TestRunId(11)});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::string file = dir_ + "/summary.json";
  std::ofstream(file) << json.out;
  auto upload = AgentUpload({file});
  ASSERT_EQ(upload.exit_code, 0) << upload.err;

  auto show = Ctl({"runs", "show", TestRunId(11)});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("rmsnorm / rmsnorm-naive"));
  EXPECT_THAT(show.out, HasSubstr("aten::rsqrt"));
  EXPECT_THAT(show.out, HasSubstr("device cpu"));
  EXPECT_EQ(db_.Query("SELECT step_count FROM runs"), "3");
}

}  // namespace
}  // namespace devtime
