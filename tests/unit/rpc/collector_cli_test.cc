// devtime-collector's command line: flags become ServerOptions in the units the server uses;
// combinations that cannot work are refused with exit code 2 and a message naming the flags.
#include "services/collector/rpc/collector_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "proto/wire/version.h"
#include "services/collector/store/migrations.h"

namespace devtime::collector {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  ParsedCommandLine result;
  std::string out, err;
};

Parsed Parse(std::vector<const char*> args, const char* env_database = nullptr) {
  args.insert(args.begin(), "devtime-collector");
  std::ostringstream out, err;
  Parsed p{ParseCommandLine(static_cast<int>(args.size()), args.data(), env_database, out, err)};
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(CollectorCommandLine, FlagsBecomeServerOptions) {
  Parsed p = Parse({"--database", "host=/tmp dbname=x", "--no-auth", "--listen", "127.0.0.1:0",
                    "--session-poll-ms", "250", "--missed-slot-grace", "30", "--notify-every", "5",
                    "--no-confirmation-runs", "--resolve-runs", "3", "--ready-file", "r.json"});
  ASSERT_TRUE(p.result.command) << p.err;
  const ServerOptions& o = p.result.command->options;
  EXPECT_EQ(o.store.conninfo, "host=/tmp dbname=x");
  EXPECT_EQ(o.grpc_listen, "127.0.0.1:0");
  EXPECT_EQ(o.session.poll_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(o.missed_slot_grace, std::chrono::seconds(30));
  EXPECT_EQ(o.notify.resend_every, std::chrono::seconds(5));
  EXPECT_FALSE(o.analysis.confirmation_runs);
  EXPECT_EQ(o.analysis.resolve_runs, 3);
  EXPECT_EQ(p.result.command->ready_file, "r.json");
  EXPECT_TRUE(p.result.command->no_auth);
}

TEST(CollectorCommandLine, DefaultsAreTheDocumentedOnes) {
  Parsed p = Parse({"--no-auth"}, "dbname=devtime");
  ASSERT_TRUE(p.result.command) << p.err;
  const ServerOptions& o = p.result.command->options;
  EXPECT_EQ(o.store.conninfo, "dbname=devtime");  // from DEVTIME_DATABASE
  EXPECT_EQ(o.grpc_listen, "127.0.0.1:50051");
  EXPECT_EQ(o.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(o.wait_for_database, std::chrono::seconds(30));
  EXPECT_TRUE(o.analysis.confirmation_runs);
  EXPECT_EQ(o.analysis.resolve_runs, 2);
}

TEST(CollectorCommandLine, RefusesWhatCannotWork) {
  Parsed no_db = Parse({"--no-auth"});
  EXPECT_FALSE(no_db.result.command);
  EXPECT_EQ(no_db.result.exit_code, 2);
  EXPECT_THAT(no_db.err, HasSubstr("no database: pass --database or set DEVTIME_DATABASE"));

  Parsed no_auth_choice = Parse({"--database", "x"});
  EXPECT_EQ(no_auth_choice.result.exit_code, 2);
  EXPECT_THAT(no_auth_choice.err, HasSubstr("choose --admin-token-file PATH"));

  Parsed half_tls = Parse({"--database", "x", "--no-auth", "--tls-cert", "c.pem"});
  EXPECT_EQ(half_tls.result.exit_code, 2);
  EXPECT_THAT(half_tls.err, HasSubstr("--tls-cert and --tls-key go together"));

  Parsed out_of_range = Parse({"--database", "x", "--no-auth", "--resolve-runs", "0"});
  EXPECT_FALSE(out_of_range.result.command);
  EXPECT_NE(out_of_range.result.exit_code, 0);
  EXPECT_THAT(out_of_range.err, HasSubstr("--resolve-runs"));
}

TEST(CollectorCommandLine, HelpIsPrintedAndExitsZero) {
  Parsed p = Parse({"--help"});
  EXPECT_FALSE(p.result.command);
  EXPECT_EQ(p.result.exit_code, 0);
  EXPECT_THAT(p.out, HasSubstr("--admin-token-file"));
  EXPECT_THAT(p.out, HasSubstr("Regressions and notifications"));
}

TEST(CollectorCommandLine, CredentialsNameTheMissingFile) {
  Parsed p = Parse({"--database", "x", "--admin-token-file", "/nonexistent/dir/token"});
  ASSERT_TRUE(p.result.command);
  std::ostringstream err;
  absl::Status loaded = LoadCredentials(*p.result.command, err);
  EXPECT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.message()), HasSubstr("/nonexistent/dir/token"));
}

// --version names the schema version; it must be the newest migration this build applies.
TEST(CollectorVersion, NamesTheNewestMigration) {
  EXPECT_EQ(store::AllMigrations().back().version, wire::kSchemaVersion);
}

}  // namespace
}  // namespace devtime::collector
