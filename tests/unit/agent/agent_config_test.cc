#include "agents/daemon/agent_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/support/files.h"
#include "tests/support/process.h"

namespace devtime::agent {
namespace {

using ::testing::HasSubstr;

// The example works from a clone as it is: paths relative to deploy/, state in the user's
// data folder, the harness of the checkout.
TEST(AgentConfig, ShippedExampleIsValidAndWorksFromAClone) {
  unsetenv("DEVTIME_COLLECTOR");
  const std::filesystem::path source = DEVTIME_SOURCE_DIR;
  auto config = ReadAgentConfig((source / "deploy/agent.example.yaml").string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->labels.at("accelerator"), "trainium");
  EXPECT_EQ(config->collector, "127.0.0.1:50051");
  EXPECT_EQ(config->token_file, (source / ".devtime/agent.token").lexically_normal().string());
  EXPECT_EQ(config->harness, (source / "agents/harness/devtime_harness.py").lexically_normal());
  EXPECT_TRUE(std::filesystem::is_regular_file(config->harness)) << config->harness;
  EXPECT_EQ(config->spool_dir, DefaultDataDir() / "spool");
  EXPECT_FALSE(config->host.empty());
  EXPECT_EQ(config->name, config->host);  // defaults to the host name
}

TEST(AgentConfig, RelativePathsAreRelativeToTheFilesFolder) {
  const std::filesystem::path dir = devtime::testing::MakeTempDir("agent-config");
  auto file = devtime::testing::WriteFile(dir, "agent.yaml",
                                          "work_dir: runs\ntoken_file: ../agent.token\n"
                                          "harness: /abs/harness.py\ntls_ca: ca.pem\n");
  // Named relative to the working directory, as in `--config deploy/agent.example.yaml`: the
  // paths still come out absolute, for job commands that run in their own folders.
  auto config = ReadAgentConfig(std::filesystem::relative(file).string());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->work_dir, dir / "runs");
  EXPECT_EQ(config->token_file, (dir.parent_path() / "agent.token").string());
  EXPECT_EQ(config->harness, "/abs/harness.py");
  EXPECT_EQ(config->tls_ca, (dir / "ca.pem").string());
}

TEST(AgentConfig, DataFolderIsSystemdsStateDirectoryElseByUser) {
  setenv("STATE_DIRECTORY", "/var/lib/devtime-agent:/var/lib/other", 1);
  EXPECT_EQ(DefaultDataDir(), "/var/lib/devtime-agent");
  unsetenv("STATE_DIRECTORY");
  setenv("XDG_STATE_HOME", "/home/u/.state", 1);
  EXPECT_EQ(DefaultDataDir(),
            geteuid() == 0 ? "/var/lib/devtime-agent" : "/home/u/.state/devtime-agent");
  unsetenv("XDG_STATE_HOME");
  if (geteuid() != 0) {
    EXPECT_EQ(DefaultDataDir(),
              std::filesystem::path(std::getenv("HOME")) / ".local/state/devtime-agent");
  }
  auto config = ParseAgentConfig("labels: {a: b}\n", "agent.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->work_dir, DefaultDataDir() / "runs");
  EXPECT_EQ(config->state_dir, DefaultDataDir() / "state");
}

TEST(AgentConfig, CollectorComesFromTheEnvironmentUnlessTheFileNamesOne) {
  setenv("DEVTIME_COLLECTOR", "127.0.0.1:41000", 1);
  auto from_env = ParseAgentConfig("labels: {a: b}\n", "agent.yaml");
  auto from_file = ParseAgentConfig("collector: 10.0.0.2:50051\n", "agent.yaml");
  unsetenv("DEVTIME_COLLECTOR");
  ASSERT_TRUE(from_env.ok() && from_file.ok());
  EXPECT_EQ(from_env->collector, "127.0.0.1:41000");
  EXPECT_EQ(from_file->collector, "10.0.0.2:50051");
}

TEST(AgentConfig, UnknownSettingIsRejectedWithItsLine) {
  auto config = ParseAgentConfig("name: a\ncolector: 1.2.3.4:5\n", "agent.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("agent.yaml:2: colector: unknown"));
}

TEST(AgentConfig, InstanceTypeComesFromTheEnvironmentWhenNotSet) {
  setenv("DEVTIME_INSTANCE_TYPE", "trn1.32xlarge", 1);
  auto config = ParseAgentConfig("labels: {a: b}\n", "agent.yaml");
  unsetenv("DEVTIME_INSTANCE_TYPE");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->instance_type, "trn1.32xlarge");
  auto configured = ParseAgentConfig("instance_type: trn2.48xlarge\n", "agent.yaml");
  EXPECT_EQ(configured->instance_type, "trn2.48xlarge");
}

TEST(AgentConfig, TraceStoreIsADirectoryOrAFileUriKeptThirtyDaysByDefault) {
  auto unset = ParseAgentConfig("name: a\n", "agent.yaml");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_TRUE(unset->trace_store.empty());
  EXPECT_EQ(unset->trace_retention_days, 30u);
  auto uri = ParseAgentConfig("trace_store: file:///srv/traces\ntrace_retention_days: 7\n", "a");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_EQ(uri->trace_store, "/srv/traces");
  EXPECT_EQ(uri->trace_retention_days, 7u);
}

TEST(AgentConfig, TraceStoreRefusesRemoteSchemesRelativePathsAndNoRetention) {
  const std::pair<const char*, const char*> cases[] = {
      {"name: a\ntrace_store: s3://bucket/traces\n", "agent.yaml:2: trace_store: only a local"},
      {"trace_store: traces\n", "agent.yaml:1: trace_store: must be an absolute path"},
      {"trace_retention_days: 0\n", "agent.yaml:1: trace_retention_days: must be 1..36500"},
  };
  for (const auto& [yaml, message] : cases) {
    auto config = ParseAgentConfig(yaml, "agent.yaml");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(message));
  }
}

}  // namespace
}  // namespace devtime::agent
