// devtimectl's command line: the global flags land in GlobalOptions, $DEVTIME_COLLECTOR sets
// the default address, and the subcommand that was parsed is the one left to run.
#include "services/ctl/cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "services/ctl/commands.h"
#include "services/ctl/job_commands.h"
#include "services/ctl/regression_commands.h"
#include "services/ctl/report.h"

namespace devtime::ctl {
namespace {

// Parses `args` (without the program name) into options; CLI11's exit code on an error.
int Parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code();
  }
  return 0;
}

// Every field on one line, so a test states them all at once.
std::string Fields(const GlobalOptions& o) {
  return o.collector + " timeout=" + std::to_string(o.timeout_seconds) +
         " token-file=" + o.token_file + " tls-ca=" + o.tls_ca + " tls-cert=" + o.tls_cert +
         " tls-key=" + o.tls_key;
}

TEST(GlobalOptions, DefaultsToTheLocalCollector) {
  CLI::App app;
  GlobalOptions options;
  AddGlobalOptions(app, nullptr, &options);
  ASSERT_EQ(Parse(app, {}), 0);
  EXPECT_EQ(Fields(options), "127.0.0.1:50051 timeout=30 token-file= tls-ca= tls-cert= tls-key=");
}

TEST(GlobalOptions, EnvironmentSetsTheDefaultAddressAndTheFlagWins) {
  CLI::App app;
  GlobalOptions options;
  AddGlobalOptions(app, "collector.example:443", &options);
  ASSERT_EQ(Parse(app, {}), 0);
  EXPECT_EQ(options.collector, "collector.example:443");
  EXPECT_NE(app.help().find("--collector TEXT=collector.example:443"), std::string::npos)
      << app.help();

  CLI::App again;
  GlobalOptions flagged;
  AddGlobalOptions(again, "collector.example:443", &flagged);
  ASSERT_EQ(Parse(again, {"--collector", "10.0.0.2:50051"}), 0);
  EXPECT_EQ(flagged.collector, "10.0.0.2:50051");
}

TEST(GlobalOptions, ParsesEveryFlag) {
  CLI::App app;
  GlobalOptions options;
  AddGlobalOptions(app, nullptr, &options);
  ASSERT_EQ(Parse(app, {"--collector", "c:1", "--timeout", "5", "--token-file", "t", "--tls-ca",
                        "ca.pem", "--tls-cert", "cert.pem", "--tls-key", "key.pem"}),
            0);
  EXPECT_EQ(Fields(options),
            "c:1 timeout=5 token-file=t tls-ca=ca.pem tls-cert=cert.pem tls-key=key.pem");
}

TEST(GlobalOptions, RejectsATimeoutThatIsNotANumber) {
  CLI::App app;
  GlobalOptions options;
  AddGlobalOptions(app, nullptr, &options);
  EXPECT_NE(Parse(app, {"--timeout", "soon"}), 0);
}

TEST(FormatOption, AcceptsTableAndJsonInAnyCase) {
  CLI::App app;
  Format format = Format::kTable;
  AddFormatOption(&app, &format);
  ASSERT_EQ(Parse(app, {"--format", "JSON"}), 0);
  EXPECT_EQ(format, Format::kJson);
  EXPECT_NE(Parse(app, {"--format", "xml"}), 0);
}

// CLI11's message for `args`, "" when they parse.
std::string ParseError(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(FormatOption, AnUnknownFormatNamesTheFlagAndTheFormats) {
  CLI::App app;
  Format format = Format::kTable;
  AddListFormatOption(&app, &format);
  EXPECT_EQ(ParseError(app, {"--format", "yaml"}),
            "--format: 'yaml' is not one of table, json or ids");
  // --help lists them as shell completion reads them, with the default.
  EXPECT_NE(app.help().find("--format TEXT:{table,json,ids}=table"), std::string::npos)
      << app.help();
}

// Every command group registered as devtimectl's main does it.
struct Devtimectl {
  CLI::App app;
  GlobalOptions options;
  CommandContext context;

  Devtimectl() {
    app.require_subcommand(1);
    AddGlobalOptions(app, nullptr, &options);
    AddRunCommands(app, context);
    AddModelCommands(app, context);
    AddJobCommands(app, context);
    AddAgentCommands(app, context);
    AddCompareCommand(app, context);
    AddCheckCommand(app, context);
    AddRegressionCommands(app, context);
    AddReportCommand(app, context);
  }
};

TEST(Commands, EveryLeafSubcommandLeavesItsCommand) {
  const std::vector<std::vector<std::string>> leaves = {
      {"runs", "list"},
      {"runs", "show", "r"},
      {"runs", "traces", "r"},
      {"models", "list"},
      {"jobs", "apply", "-f", "jobs.yaml"},
      {"jobs", "list"},
      {"jobs", "show", "j"},
      {"jobs", "delete", "j"},
      {"jobs", "run-now", "j"},
      {"jobs", "history", "j"},
      {"agents", "list"},
      {"agents", "add", "a", "--host", "h"},
      {"agents", "revoke", "a"},
      {"compare", "a", "b"},
      {"check", "--run", "a", "--against", "b"},
      {"regressions", "list"},
      {"regressions", "show", "1"},
      {"regressions", "ack", "1"},
      {"regressions", "resolve", "1", "--as", "accepted_baseline"},
      {"regressions", "invalid", "1"},
      {"report", "--model", "m"},
  };
  for (const auto& args : leaves) {
    Devtimectl ctl;
    ASSERT_EQ(Parse(ctl.app, args), 0) << args[0] << " " << args[1];
    EXPECT_TRUE(ctl.context.command) << args[0] << " " << args[1];
  }
}

TEST(Commands, GlobalFlagsComeBeforeTheSubcommand) {
  Devtimectl ctl;
  ASSERT_EQ(Parse(ctl.app, {"--collector", "c:1", "--timeout", "2", "runs", "list"}), 0);
  EXPECT_EQ(ctl.options.collector, "c:1");
  EXPECT_EQ(ctl.options.timeout_seconds, 2);
  EXPECT_TRUE(ctl.context.command);
}

TEST(Commands, ARegressionIdIsANumberOrARunAndElseSaysSo) {
  for (const std::string id : {"12", "b87ae65c", "B87AE65C-1586", "latest"}) {
    Devtimectl ctl;
    EXPECT_EQ(ParseError(ctl.app, {"regressions", "show", id}), "") << id;
  }
  Devtimectl ctl;
  const std::string error = ParseError(ctl.app, {"regressions", "ack", "fusion-lost"});
  EXPECT_NE(error.find("'fusion-lost' is not a regression: a regression id is a number"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("convert"), std::string::npos) << error;
}

TEST(Commands, AGroupWithoutItsSubcommandIsAUsageError) {
  Devtimectl ctl;
  EXPECT_NE(Parse(ctl.app, {"runs"}), 0);
  EXPECT_FALSE(ctl.context.command);
}

}  // namespace
}  // namespace devtime::ctl
