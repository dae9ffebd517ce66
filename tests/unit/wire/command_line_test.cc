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
    auto* check = app.add_subcommand("check", "a gate");
    check->add_option("--run", run);
    check->add_option("--format", format);
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
  std::string run, format;
  std::ostringstream out, err;
};

// What a command line gives: the exit code and both streams.
struct Outcome {
  int code;
  std::string out, err;
};

Outcome Parse(std::vector<std::string> args) {
  Tree tree;
  const int code = tree.Parse(std::move(args));
  return {code, tree.out.str(), tree.err.str()};
}

TEST(CommandLine, AMistypedSubcommandIsNamedWithTheClosestOneAndIsUsage) {
  const Outcome typo = Parse({"runs", "lst"});
  EXPECT_EQ(typo.code, kExitUsage);
  EXPECT_EQ(typo.err,
            "tool runs: unknown command 'lst'; did you mean 'list'?\n"
            "Run 'tool runs --help' for the commands.\n");
}

TEST(CommandLine, AnUnknownTopLevelCommandGetsASuggestionOnlyWhenOneIsClose) {
  const Outcome close = Parse({"chek"}), far = Parse({"frobnicate"});
  EXPECT_EQ(close.code, kExitUsage);
  EXPECT_NE(close.err.find("did you mean 'check'?"), std::string::npos);
  EXPECT_EQ(far.code, kExitUsage);
  EXPECT_NE(far.err.find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos);
}

TEST(CommandLine, ABadFlagIsUsageNotCli11sOwnCode) {
  const Outcome bad = Parse({"check", "--nope"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_FALSE(bad.err.empty());
}

TEST(CommandLine, AnUnknownOptionIsNamedWithTheClosestOne) {
  const Outcome typo = Parse({"check", "--rnu", "a"});
  EXPECT_EQ(typo.code, kExitUsage);
  EXPECT_EQ(typo.err,
            "tool check: unknown option '--rnu'; did you mean '--run'?\n"
            "Run 'tool check --help' for the options.\n");
}

TEST(CommandLine, KubectlsOutputFlagMeansFormat) {
  const Outcome o = Parse({"check", "-o", "json"}), output = Parse({"check", "--output=json"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_EQ(o.err,
            "tool check: unknown option '-o'; did you mean '--format'?\n"
            "Run 'tool check --help' for the options.\n");
  EXPECT_NE(output.err.find("unknown option '--output=json'; did you mean '--format'?"),
            std::string::npos)
      << output.err;
}

TEST(CommandLine, HelpAndVersionExitZeroOnStandardOutput) {
  const Outcome help = Parse({"--help"}), version = Parse({"--version"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_NE(help.out.find("runs"), std::string::npos);
  EXPECT_EQ(version.code, kExitOk);
  EXPECT_EQ(version.out, VersionText("tool") + "\n");
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
