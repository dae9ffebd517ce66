// The agent-session flags: sessions are pushed to, so only the heartbeat, the full re-sync
// and the token cache have intervals; --session-poll-ms is --heartbeat-ms's old name.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "services/collector/rpc/collector_cli.h"
#include "services/collector/store/job_store.h"

namespace devtime::collector {
namespace {

ParsedCommandLine Parse(std::vector<const char*> args) {
  args.insert(args.begin(), {"devtime-collector", "--database", "dbname=x", "--no-auth"});
  std::ostringstream out, err;
  return ParseCommandLine(static_cast<int>(args.size()), args.data(), nullptr, out, err);
}

TEST(SessionFlags, DefaultsAreTheDocumentedOnes) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.command);
  const ServerOptions& o = parsed.command->options;
  EXPECT_EQ(o.session.poll_interval, std::chrono::milliseconds(1000));  // the heartbeat
  EXPECT_EQ(o.session.resync_interval, std::chrono::minutes(5));
  EXPECT_EQ(o.token_cache_ttl, std::chrono::seconds(10));
  EXPECT_EQ(kTokenCacheTtl, std::chrono::seconds(10));
}

TEST(SessionFlags, HeartbeatResyncAndTokenTtlAreSet) {
  auto parsed =
      Parse({"--heartbeat-ms", "5000", "--session-resync-s", "60", "--token-cache-ttl-ms", "0"});
  ASSERT_TRUE(parsed.command);
  const ServerOptions& o = parsed.command->options;
  EXPECT_EQ(o.session.poll_interval, std::chrono::milliseconds(5000));
  EXPECT_EQ(o.session.resync_interval, std::chrono::seconds(60));
  EXPECT_EQ(o.token_cache_ttl, std::chrono::milliseconds(0));
  auto old_name = Parse({"--session-poll-ms", "200"});
  ASSERT_TRUE(old_name.command);
  EXPECT_EQ(old_name.command->options.session.poll_interval, std::chrono::milliseconds(200));
}

TEST(SessionFlags, AHeartbeatOfZeroIsRefused) {
  EXPECT_FALSE(Parse({"--heartbeat-ms", "0"}).command);
  EXPECT_FALSE(Parse({"--session-resync-s", "0"}).command);
}

TEST(RunNowPayload, CarriesJobAndHostAndAnyHost) {
  auto target = store::ParseRunNowPayload(store::RunNowPayload({"nightly", "trn-01 a\nb"}));
  EXPECT_EQ(target.job, "nightly");
  EXPECT_EQ(target.host, "trn-01 a\nb");  // only the first newline splits
  auto any = store::ParseRunNowPayload(store::RunNowPayload({"nightly", ""}));
  EXPECT_EQ(any.job, "nightly");
  EXPECT_EQ(any.host, "");
}

}  // namespace
}  // namespace devtime::collector
