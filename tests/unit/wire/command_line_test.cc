#include "proto/wire/command_line.h"

#include <gtest/gtest.h>

#include <sstream>

namespace devtime::wire {
namespace {

// A small command tree like devtimectl's: runs {list, show}, check.
struct Tree {
  Tree() {
    app.require_subcommand(1);
    auto* runs = app.add_subcommand("runs", "stored runs");
    runs->require_subcommand(1);
    runs->add_subcommand("list", "list them");
    runs->add_subcommand("show", "show one");
    app.add_subcommand("check", "a gate")->add_option("--run", run);
    AddVersionFlag(app, "tool");
  }

  int Parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return ExitForParseError(app, e, "tool", out, err);
    }
    return kExitOk;
  }

  CLI::App app{"tool"};
  std::string run;
  std::ostringstream out, err;
};

TEST(CommandLine, AMistypedSubcommandIsNamedWithTheClosestOneAndIsUsage) {
  Tree tree;
  EXPECT_EQ(tree.Parse({"runs", "lst"}), kExitUsage);
  EXPECT_EQ(tree.err.str(),
            "tool runs: unknown command 'lst'; did you mean 'list'?\n"
            "Run 'tool runs --help' for the commands.\n");
}

TEST(CommandLine, AnUnknownTopLevelCommandGetsASuggestionOnlyWhenOneIsClose) {
  Tree tree;
  EXPECT_EQ(tree.Parse({"chek"}), kExitUsage);
  EXPECT_NE(tree.err.str().find("did you mean 'check'?"), std::string::npos);
  Tree other;
  EXPECT_EQ(other.Parse({"frobnicate"}), kExitUsage);
  EXPECT_NE(other.err.str().find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_EQ(other.err.str().find("did you mean"), std::string::npos);
}

TEST(CommandLine, ABadFlagIsUsageNotCli11sOwnCode) {
  Tree tree;
  EXPECT_EQ(tree.Parse({"check", "--nope"}), kExitUsage);
  EXPECT_FALSE(tree.err.str().empty());
}

TEST(CommandLine, HelpAndVersionExitZeroOnStandardOutput) {
  Tree help;
  EXPECT_EQ(help.Parse({"--help"}), kExitOk);
  EXPECT_NE(help.out.str().find("runs"), std::string::npos);
  Tree version;
  EXPECT_EQ(version.Parse({"--version"}), kExitOk);
  EXPECT_EQ(version.out.str(), VersionText("tool") + "\n");
  EXPECT_NE(VersionText("tool").find(std::string("schema ") + std::to_string(kSchemaVersion)),
            std::string::npos);
  EXPECT_NE(VersionText("tool").find(kGitCommit), std::string::npos);
}

TEST(ExitCodes, FollowTheCallsStatus) {
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::OK), kExitOk);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::UNAVAILABLE), kExitUnavailable);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::DEADLINE_EXCEEDED), kExitUnavailable);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::NOT_FOUND), kExitNotFound);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::UNAUTHENTICATED), kExitPermission);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::PERMISSION_DENIED), kExitPermission);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::INVALID_ARGUMENT), kExitUsage);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::INTERNAL), kExitFailed);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kNotFound), kExitNotFound);
}

}  // namespace
}  // namespace devtime::wire
