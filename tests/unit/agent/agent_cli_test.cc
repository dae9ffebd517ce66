#include "agents/cli/agent_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>

#include "CLI/CLI.hpp"
#include "proto/wire/exit_codes.h"

namespace devtime::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Outcome {
  ParsedCommandLine parsed;
  std::string out, err;
};

// Parses `devtime-agent ARGS...`, keeping what the parser printed.
Outcome Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"devtime-agent"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  Outcome outcome;
  outcome.parsed = ParseAgentCommandLine(static_cast<int>(argv.size()), argv.data(), out, err);
  outcome.out = out.str();
  outcome.err = err.str();
  return outcome;
}

template <typename Command>
Command Get(const Outcome& outcome) {
  EXPECT_TRUE(outcome.parsed.command.has_value()) << outcome.err;
  EXPECT_TRUE(outcome.parsed.command && std::holds_alternative<Command>(*outcome.parsed.command));
  if (!outcome.parsed.command || !std::holds_alternative<Command>(*outcome.parsed.command)) {
    return Command{};
  }
  return std::get<Command>(*outcome.parsed.command);
}

// A usage error: nothing to run, exit code 2 (usage, as for every devtime executable), the
// message on stderr and none on stdout.
void ExpectUsageError(const Outcome& outcome, const std::string& message) {
  EXPECT_FALSE(outcome.parsed.command.has_value());
  EXPECT_EQ(outcome.parsed.exit_code, wire::kExitUsage);
  EXPECT_THAT(outcome.err, HasSubstr(message));
  EXPECT_THAT(outcome.out, IsEmpty());
}

class AgentCommandLine : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("DEVTIME_COLLECTOR"); }
  void TearDown() override { unsetenv("DEVTIME_COLLECTOR"); }
};

TEST_F(AgentCommandLine, SummarizePrintsATableByDefault) {
  auto command = Get<SummarizeCommand>(Parse({"summarize", "trace.json"}));
  EXPECT_EQ(command.trace, "trace.json");
  EXPECT_EQ(command.format, SummarizeCommand::Format::kTable);
  EXPECT_THAT(command.compare_with, IsEmpty());
}

TEST_F(AgentCommandLine, SummarizeTakesTheRunLabelsForJson) {
  auto command = Get<SummarizeCommand>(
      Parse({"summarize", "t.json", "--format", "json", "--model", "llama", "--workload", "rmsnorm",
             "--job", "nightly", "--run-id", "0b9c4c52-8f3e-4a0e-9d1c-2f6e1f0a7b11",
             "--instance-type", "trn1.2xlarge", "--host", "h1"}));
  EXPECT_EQ(command.format, SummarizeCommand::Format::kJson);
  EXPECT_EQ(command.labels.model, "llama");
  EXPECT_EQ(command.labels.workload, "rmsnorm");
  EXPECT_EQ(command.labels.job, "nightly");
  EXPECT_EQ(command.labels.run_id, "0b9c4c52-8f3e-4a0e-9d1c-2f6e1f0a7b11");
  EXPECT_EQ(command.labels.instance_type, "trn1.2xlarge");
  EXPECT_EQ(command.labels.host, "h1");
  EXPECT_THAT(command.labels.fallback_workload, IsEmpty());  // filled from the trace's name later
}

TEST_F(AgentCommandLine, SummarizeCompareNamesTheAfterTrace) {
  auto command = Get<SummarizeCommand>(Parse({"summarize", "before.json", "--compare", "a.json"}));
  EXPECT_EQ(command.trace, "before.json");
  EXPECT_EQ(command.compare_with, "a.json");
}

TEST_F(AgentCommandLine, SummarizeRejectsAnUnknownFormat) {
  ExpectUsageError(Parse({"summarize", "t.json", "--format", "csv"}), "--format");
}

TEST_F(AgentCommandLine, SummarizeNeedsATrace) {
  ExpectUsageError(Parse({"summarize"}), "TRACE is required");
}

TEST_F(AgentCommandLine, UploadDefaultsToTheLocalCollectorAndAMinuteOfRetries) {
  auto command = Get<UploadCommand>(Parse({"upload", "a.json", "b.json"}));
  EXPECT_EQ(command.collector, "127.0.0.1:50051");
  EXPECT_EQ(command.retry_seconds, 60);
  EXPECT_THAT(command.files, ::testing::ElementsAre("a.json", "b.json"));
  EXPECT_THAT(command.token_file, IsEmpty());
  EXPECT_THAT(command.tls_ca, IsEmpty());
}

TEST_F(AgentCommandLine, UploadTakesTheCollectorFromTheEnvironment) {
  setenv("DEVTIME_COLLECTOR", "collector.internal:6000", 1);
  EXPECT_EQ(Get<UploadCommand>(Parse({"upload", "a.json"})).collector, "collector.internal:6000");
  auto flag = Get<UploadCommand>(Parse({"upload", "--collector", "other:1", "a.json"}));
  EXPECT_EQ(flag.collector, "other:1");  // the flag wins over the environment
}

TEST_F(AgentCommandLine, UploadTakesRetriesAndCredentials) {
  auto command = Get<UploadCommand>(
      Parse({"upload", "--retry-for", "5", "--token-file", "tok", "--tls-ca", "ca.pem",
             "--tls-cert", "c.pem", "--tls-key", "k.pem", "run.json"}));
  EXPECT_EQ(command.retry_seconds, 5);
  EXPECT_EQ(command.token_file, "tok");
  EXPECT_EQ(command.tls_ca, "ca.pem");
  EXPECT_EQ(command.tls_cert, "c.pem");
  EXPECT_EQ(command.tls_key, "k.pem");
  EXPECT_THAT(command.files, ::testing::ElementsAre("run.json"));
}

TEST_F(AgentCommandLine, UploadNeedsAFile) {
  ExpectUsageError(Parse({"upload"}), "FILE is required");
}

TEST_F(AgentCommandLine, UploadRejectsANonNumericRetry) {
  ExpectUsageError(Parse({"upload", "--retry-for", "soon", "a.json"}), "--retry-for");
}

TEST_F(AgentCommandLine, RunTakesTheConfigAndAnOptionalCollector) {
  auto plain = Get<DaemonCommand>(Parse({"run", "--config", "agent.yaml"}));
  EXPECT_EQ(plain.config_path, "agent.yaml");
  EXPECT_THAT(plain.collector_override, IsEmpty());
  auto overridden =
      Get<DaemonCommand>(Parse({"run", "--config", "agent.yaml", "--collector", "c:1"}));
  EXPECT_EQ(overridden.collector_override, "c:1");
}

TEST_F(AgentCommandLine, RunNeedsAConfig) {
  ExpectUsageError(Parse({"run"}), "--config is required");
}

TEST_F(AgentCommandLine, NeedsExactlyOneSubcommand) {
  ExpectUsageError(Parse({}), "subcommand");
  ExpectUsageError(Parse({"deploy"}), "unknown command 'deploy'");
}

TEST_F(AgentCommandLine, HelpGoesToStdoutAndExitsZero) {
  auto outcome = Parse({"--help"});
  EXPECT_FALSE(outcome.parsed.command.has_value());
  EXPECT_EQ(outcome.parsed.exit_code, 0);
  EXPECT_THAT(outcome.out, HasSubstr("summarize"));
  EXPECT_THAT(outcome.out, HasSubstr("upload"));
  EXPECT_THAT(outcome.out, HasSubstr("run"));
  EXPECT_THAT(outcome.err, IsEmpty());
}

TEST_F(AgentCommandLine, SubcommandHelpShowsItsFlagsAndDefaults) {
  auto outcome = Parse({"upload", "--help"});
  EXPECT_FALSE(outcome.parsed.command.has_value());
  EXPECT_EQ(outcome.parsed.exit_code, 0);
  EXPECT_THAT(outcome.out, HasSubstr("--retry-for"));
  EXPECT_THAT(outcome.out, HasSubstr("127.0.0.1:50051"));
  EXPECT_THAT(outcome.out, HasSubstr("=60"));
}

}  // namespace
}  // namespace devtime::agent
