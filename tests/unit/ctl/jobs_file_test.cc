#include "services/ctl/jobs_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace devtime::ctl {
namespace {

using ::testing::HasSubstr;

constexpr const char* kGood = R"(jobs:
  - name: rmsnorm-naive
    model: rmsnorm
    workload: naive
    command: "{python} agents/harness/devtime_harness.py --workload rmsnorm-naive --out {output_dir}"
    schedule: {cron: "0 2 * * *", time_zone: Europe/Berlin, jitter_seconds: 600}
    selector:
      labels: {accelerator: trainium}
      instance_type: trn1.2xlarge
    timeout_seconds: 1800
    capture_steps: 5
    env: {NEURON_RT_LOG_LEVEL: ERROR}
  - name: transformer-block
    model: transformer
    workload: block
    command: run-block.sh
    schedule: {cron: "@daily"}
    skip_confirmation_runs: true
)";

std::string MessageOf(const std::string& yaml) {
  auto jobs = ParseJobs(yaml, "jobs.yaml");
  EXPECT_FALSE(jobs.ok());
  return std::string(jobs.status().message());
}

TEST(ParseJobs, ReadsEveryField) {
  auto jobs = ParseJobs(kGood, "jobs.yaml");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const auto& job = (*jobs)[0];
  EXPECT_EQ(job.name(), "rmsnorm-naive");
  EXPECT_EQ(job.schedule().cron(), "0 2 * * *");
  EXPECT_EQ(job.schedule().time_zone(), "Europe/Berlin");
  EXPECT_EQ(job.schedule().jitter_seconds(), 600u);
  EXPECT_EQ(job.selector().labels().at("accelerator"), "trainium");
  EXPECT_EQ(job.selector().instance_type(), "trn1.2xlarge");
  EXPECT_EQ(job.timeout_seconds(), 1800u);
  EXPECT_EQ(job.env().at("NEURON_RT_LOG_LEVEL"), "ERROR");
  EXPECT_EQ((*jobs)[1].schedule().cron(), "@daily");
  EXPECT_FALSE(job.skip_confirmation_runs());
  EXPECT_TRUE((*jobs)[1].skip_confirmation_runs());
}

TEST(ParseJobs, SkipConfirmationRunsMustBeABoolean) {
  std::string yaml = kGood;
  yaml.replace(yaml.find("skip_confirmation_runs: true"), 28, "skip_confirmation_runs: maybe");
  EXPECT_THAT(MessageOf(yaml),
              HasSubstr("jobs.yaml:18: jobs[1].skip_confirmation_runs: must be true or false"));
}

TEST(ParseJobs, BadCronNamesLineAndField) {
  std::string yaml = kGood;
  yaml.replace(yaml.find("0 2 * * *"), 9, "0 25 * * *");
  EXPECT_THAT(MessageOf(yaml), HasSubstr("jobs.yaml:2: jobs[0].schedule.cron: hour: '25'"));
}

TEST(ParseJobs, UnknownFieldNamesLineAndKnownFields) {
  std::string yaml = kGood;
  yaml.replace(yaml.find("capture_steps"), 13, "capture_stepz");
  std::string message = MessageOf(yaml);
  EXPECT_THAT(message, HasSubstr("jobs.yaml:11: jobs[0].capture_stepz: unknown field"));
  EXPECT_THAT(message, HasSubstr("capture_steps"));
  yaml = kGood;
  yaml.replace(yaml.find("jitter_seconds"), 14, "jiter");
  EXPECT_THAT(MessageOf(yaml), HasSubstr("jobs.yaml:6: jobs[0].schedule.jiter: unknown field"));
}

TEST(ParseJobs, DuplicateNameNamesBothLines) {
  std::string yaml = kGood;
  yaml.replace(yaml.find("name: transformer-block"), 23, "name: rmsnorm-naive");
  EXPECT_THAT(
      MessageOf(yaml),
      HasSubstr("jobs.yaml:13: jobs[1].name: 'rmsnorm-naive' is already defined at line 2"));
}

TEST(ParseJobs, BadTimeZoneMissingFieldsAndBrokenYaml) {
  std::string yaml = kGood;
  yaml.replace(yaml.find("Europe/Berlin"), 13, "Europe/Atlantis");
  EXPECT_THAT(MessageOf(yaml), HasSubstr("jobs[0].schedule.time_zone: 'Europe/Atlantis'"));
  EXPECT_THAT(MessageOf("jobs:\n  - name: x\n    model: m\n"),
              HasSubstr("jobs[0].workload: is required"));
  EXPECT_THAT(MessageOf("jobs: [\n"), HasSubstr("not valid YAML"));
  EXPECT_THAT(MessageOf("job:\n  - name: x\n"), HasSubstr("top-level 'jobs' list"));
  EXPECT_THAT(MessageOf(std::string(kGood) + "extra: 1\n"), HasSubstr("extra: unknown field"));
  std::string bad_number = kGood;
  bad_number.replace(bad_number.find("1800"), 4, "half an hour");
  EXPECT_THAT(MessageOf(bad_number),
              HasSubstr("jobs.yaml:10: jobs[0].timeout_seconds: 'half an hour'"));
}

}  // namespace
}  // namespace devtime::ctl

namespace devtime::ctl {
namespace {

TEST(ParseJobs, ShippedExampleIsValid) {
  auto jobs = ReadJobsFile(std::string(DEVTIME_SOURCE_DIR) + "/deploy/jobs.example.yaml");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), 4u);
  for (const auto& job : *jobs) {
    EXPECT_EQ(job.schedule().cron(), "0 2 * * *") << job.name();
    EXPECT_GT(job.schedule().jitter_seconds(), 0u) << job.name();
  }
}

}  // namespace
}  // namespace devtime::ctl
