// Validation gaps found against the landed main (issue 26): each input below was accepted, or
// refused with INTERNAL and no useful message; each must be INVALID_ARGUMENT naming its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

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

class ValidationGapsTest : public devtime::testing::CollectorFixture {
 protected:
  ValidationGapsTest() : dir_(devtime::testing::MakeTempDir("validation-gaps")) {}

  // `jobs apply` of one job whose `field: value` line is given (the YAML text as written).
  devtime::testing::CommandResult ApplyJobWith(const std::string& line) {
    std::string yaml = "jobs:\n  - name: j\n    schedule: {cron: \"0 2 * * *\"}\n";
    for (std::string field : {"model", "workload", "command"}) {
      if (line.rfind(field + ":", 0) != 0) yaml += "    " + field + ": x\n";
    }
    yaml += "    " + line + "\n";
    return Ctl({"jobs", "apply", "-f", devtime::testing::WriteFile(dir_, "jobs.yaml", yaml)});
  }

  grpc::Status Upload(const v1::RunSummary& run) {
    auto stub = AdminStub();
    return devtime::testing::UploadRun(*stub, run);
  }

  std::string dir_;
};

TEST_F(ValidationGapsTest, JobsApplyRefusesEscAndBidiControlsInModelAndWorkload) {
  auto esc = ApplyJobWith("model: \"llama\\e[31m\"");
  EXPECT_EQ(esc.exit_code, 2) << esc.err;
  EXPECT_THAT(esc.err, AllOf(HasSubstr("jobs[0].model"), HasSubstr("U+001B")));
  auto bidi = ApplyJobWith("workload: \"train\\u202Egnp\"");
  EXPECT_EQ(bidi.exit_code, 2) << bidi.err;
  EXPECT_THAT(bidi.err, AllOf(HasSubstr("jobs[0].workload"), HasSubstr("U+202E")));
  EXPECT_EQ(db_.Count("jobs"), 0);
}

TEST_F(ValidationGapsTest, NulInACommandNamesTheFieldAndLeaksNoSql) {
  auto apply = ApplyJobWith("command: \"python3 train.py\\0--steps 3\"");
  EXPECT_EQ(apply.exit_code, 2) << apply.err;
  EXPECT_THAT(apply.err, AllOf(HasSubstr("jobs[0].command"), HasSubstr("NUL"),
                               Not(HasSubstr("INSERT")), Not(HasSubstr("0x00"))));
  // The same job sent by another client straight to the collector.
  v1::ApplyJobsRequest request;
  auto* job = request.add_jobs();
  job->set_name("j");
  job->set_model("m");
  job->set_workload("w");
  job->set_command(std::string("python3 a.py\0b", 14));
  job->mutable_schedule()->set_cron("0 2 * * *");
  v1::ApplyJobsResponse response;
  grpc::ClientContext context;
  auto status = AdminStub()->ApplyJobs(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), AllOf(HasSubstr("command"), Not(HasSubstr("INSERT"))));
  EXPECT_EQ(db_.Count("jobs"), 0);
}

TEST_F(ValidationGapsTest, InvalidUtf8InTheJobsFileSaysWhereAndThatItIsNotUtf8) {
  std::string yaml =
      "jobs:\n  - name: j\n    model: caf\xe9\n    workload: w\n    command: c\n"
      "    schedule: {cron: \"0 2 * * *\"}\n";
  auto apply = Ctl({"jobs", "apply", "-f", devtime::testing::WriteFile(dir_, "latin1.yaml", yaml)});
  EXPECT_EQ(apply.exit_code, 2) << apply.err;
  EXPECT_THAT(apply.err, AllOf(HasSubstr("latin1.yaml:3"), HasSubstr("not valid UTF-8")));
}

TEST_F(ValidationGapsTest, AnOkRunWithDroppedEventsIsRefused) {
  auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(1));
  run.mutable_capture()->set_events_dropped(5);
  auto status = Upload(run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("run.capture.events_dropped"));
  EXPECT_EQ(db_.Count("runs"), 0);
  // INVALID with a reason: stored, as the contract says.
  run.set_status(v1::RUN_STATUS_INVALID);
  run.set_status_reason("the profiler dropped 5 events");
  EXPECT_TRUE(Upload(run).ok());
}

TEST_F(ValidationGapsTest, StepSamplesWhoseCountDoesNotMatchTheStepsAreRefused) {
  auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(2));
  ASSERT_GT(run.steps_size(), 1);
  ASSERT_EQ(run.ops(0).step_self_device_us_size(), run.steps_size());
  run.mutable_ops(0)->mutable_step_self_device_us()->RemoveLast();
  auto status = Upload(run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("run.ops[0].step_self_device_us"));
  EXPECT_EQ(db_.Count("runs"), 0);
}

TEST_F(ValidationGapsTest, AWorldReadableTokenFileIsWarnedAboutAndAWorldWritableOneRefused) {
  const std::string token =
      devtime::testing::WriteFile(dir_, "admin.token", collector_.admin_token());
  auto list = [&] {
    return devtime::testing::RunCommand({devtime::testing::BinaryPath("devtimectl"), "--collector",
                                         collector_.address(), "--token-file", token, "agents",
                                         "list"});
  };
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  auto quiet = list();
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_THAT(quiet.err, Not(HasSubstr("warning")));
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  auto readable = list();
  EXPECT_EQ(readable.exit_code, 0) << readable.err;
  EXPECT_THAT(readable.err, AllOf(HasSubstr("world-readable"), HasSubstr("chmod 600")));
  ASSERT_EQ(::chmod(token.c_str(), 0666), 0);
  auto writable = list();
  EXPECT_NE(writable.exit_code, 0);
  EXPECT_THAT(writable.err, HasSubstr("world-writable"));
}

}  // namespace
}  // namespace devtime
