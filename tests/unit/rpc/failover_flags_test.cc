// PostgreSQL failover on the collector's side (issue 26 part B): which connection strings are
// sent to the primary (several hosts: target_session_attrs=read-write unless named), and the
// read-replica flags (--read-database, --max-read-lag) in ServerOptions.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "services/collector/rpc/collector_cli.h"
#include "services/collector/store/database.h"

namespace devtime {
namespace {

using store::NamesSeveralHosts;
using store::PrimaryConninfo;

TEST(PrimaryConninfo, SeveralHostsGoToTheReadWriteOne) {
  EXPECT_TRUE(NamesSeveralHosts("host=a,b port=1,2 dbname=x"));
  EXPECT_TRUE(NamesSeveralHosts("dbname=x host = 10.0.0.1,10.0.0.2"));
  EXPECT_TRUE(NamesSeveralHosts("hostaddr=10.0.0.1,10.0.0.2 dbname=x"));
  EXPECT_FALSE(NamesSeveralHosts("host=a port=1 dbname=x"));
  EXPECT_FALSE(NamesSeveralHosts("dbname=x application_name=a,b"));
  EXPECT_FALSE(NamesSeveralHosts("postgresql://a:1,b:2/x"));  // a URI says it itself

  EXPECT_EQ(PrimaryConninfo("host=a,b dbname=x", 5),
            "host=a,b dbname=x target_session_attrs=read-write connect_timeout=5");
  EXPECT_EQ(PrimaryConninfo("host=a,b dbname=x target_session_attrs=any", 0),
            "host=a,b dbname=x target_session_attrs=any");
  EXPECT_EQ(PrimaryConninfo("host=a dbname=x", 5), "host=a dbname=x connect_timeout=5");
  EXPECT_EQ(PrimaryConninfo("host=a dbname=x connect_timeout=2", 5),
            "host=a dbname=x connect_timeout=2");
  EXPECT_EQ(PrimaryConninfo("postgresql://a:1,b:2/x", 5), "postgresql://a:1,b:2/x");
}

collector::ParsedCommandLine Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "devtime-collector");
  std::ostringstream out, err;
  return collector::ParseCommandLine(static_cast<int>(args.size()), args.data(), nullptr, out, err);
}

TEST(ReadReplicaFlags, BecomeStoreOptions) {
  auto parsed = Parse({"--database", "host=a,b dbname=x", "--no-auth", "--read-database",
                       "host=b dbname=x", "--max-read-lag", "2"});
  ASSERT_TRUE(parsed.command);
  EXPECT_EQ(parsed.command->options.store.read_conninfo, "host=b dbname=x");
  EXPECT_EQ(parsed.command->options.store.max_read_lag, std::chrono::seconds(2));

  auto defaults = Parse({"--database", "host=a dbname=x", "--no-auth"});
  ASSERT_TRUE(defaults.command);
  EXPECT_EQ(defaults.command->options.store.read_conninfo, "");
  EXPECT_EQ(defaults.command->options.store.max_read_lag, std::chrono::seconds(5));

  EXPECT_EQ(Parse({"--database", "x", "--no-auth", "--max-read-lag", "-1"}).exit_code, 2);
}

}  // namespace
}  // namespace devtime
