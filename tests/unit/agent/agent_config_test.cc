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

}  // namespace
}  // namespace devtime::agent
