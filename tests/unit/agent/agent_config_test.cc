#include "agents/agent_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace devtime::agent {
namespace {

using ::testing::HasSubstr;

TEST(AgentConfig, ShippedExampleIsValid) {
  auto config = ReadAgentConfig(std::string(DEVTIME_SOURCE_DIR) + "/deploy/agent.example.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->labels.at("accelerator"), "trainium");
  EXPECT_EQ(config->collector, "127.0.0.1:50051");
  EXPECT_EQ(config->token_file, "/etc/devtime/agent.token");
  EXPECT_FALSE(config->host.empty());
  EXPECT_EQ(config->name, config->host);  // defaults to the host name
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
