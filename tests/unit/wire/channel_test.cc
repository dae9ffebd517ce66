// Collector addresses as clients take them: one collector or a list of several (round-robin),
// in every gRPC target form, and the token guard: a token travels in plaintext only to
// addresses on this machine. Every refusal here happens before any connection is made —
// ConnectCollector returns an error instead of a channel.
#include "proto/wire/channel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace devtime::wire {
namespace {

using ::testing::HasSubstr;

absl::Status ConnectWithToken(const std::string& target) {
  return ConnectCollector(target, ClientCredentials::WithToken("dt_secret")).status();
}

// The refusal for `target`, which must name `offender`.
void ExpectRefused(const std::string& target, const std::string& offender) {
  absl::Status status = ConnectWithToken(target);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << target << ": " << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("unencrypted to " + offender)) << target;
}

TEST(TokenGuard, RefusesPlaintextTokenToAnyAddressBeyondLoopback) {
  ExpectRefused("192.0.2.10:50051", "192.0.2.10:50051");
  ExpectRefused("collector.example:50051", "collector.example:50051");
  ExpectRefused("collector.example", "collector.example");
  ExpectRefused("[2001:db8::1]:50051", "[2001:db8::1]:50051");
  ExpectRefused("dns:collector.example:50051", "collector.example:50051");
  ExpectRefused("dns:///collector.example:50051", "collector.example:50051");
  ExpectRefused("ipv4:192.0.2.10:50051", "192.0.2.10:50051");
  ExpectRefused("ipv6:[2001:db8::1]:50051", "[2001:db8::1]:50051");
}

TEST(TokenGuard, OneAddressBeyondLoopbackInAListRefusesTheWholeListNamingIt) {
  ExpectRefused("ipv4:127.0.0.1:50051,192.0.2.10:50051", "192.0.2.10:50051");
  ExpectRefused("ipv4:///127.0.0.1:1,127.0.0.2:2,10.1.2.3:3", "10.1.2.3:3");
  ExpectRefused("ipv6:[::1]:1,[2001:db8::7]:2", "[2001:db8::7]:2");
  ExpectRefused("127.0.0.1:1,192.0.2.10:2", "192.0.2.10:2");  // a bare list
  EXPECT_THAT(std::string(ConnectWithToken("ipv4:127.0.0.1:1,192.0.2.10:2").message()),
              HasSubstr("(in ipv4:127.0.0.1:1,192.0.2.10:2)"));
}

TEST(TokenGuard, LocalhostResolvedByAnotherDnsServerIsNotKnownToBeLocal) {
  ExpectRefused("dns://192.0.2.53/localhost:50051", "localhost:50051");
}

TEST(TokenGuard, NamesThatLookLocalButAreNotStayRefused) {
  ExpectRefused("localhost.example:1", "localhost.example:1");
  ExpectRefused("127.example:1", "127.example:1");
  ExpectRefused("[::2]:1", "[::2]:1");
  ExpectRefused("ipv6:[::ffff:10.0.0.1]:1", "[::ffff:10.0.0.1]:1");  // IPv4-mapped, not loopback
}

TEST(TokenGuard, UnknownSchemesMayLeadAnywhere) {
  ExpectRefused("xds:///collector", "xds:///collector");
}

TEST(TokenGuard, AcceptsLoopbackInEveryForm) {
  for (const char* target : {
           "127.0.0.1:50051",
           "127.1.2.3:50051",
           "localhost:50051",
           "localhost",
           "LocalHost:1",
           "[::1]:50051",
           "::1",
           "dns:localhost:50051",
           "dns:///localhost:50051",
           "dns:[::1]:50051",
           "ipv4:127.0.0.1:50051",
           "ipv4:127.0.0.1:50051,127.0.0.1:50052,127.0.0.2:50053",
           "ipv4:///127.0.0.1:1,127.0.0.1:2",
           "ipv6:[::1]:50051",
           "ipv6:[::1]:1,[::ffff:127.0.0.1]:2",
           "127.0.0.1:1,127.0.0.1:2",
           "[::1]:1,[::1]:2",
           "unix:/run/devtime/collector.sock",
           "unix:///run/devtime/collector.sock",
           "unix-abstract:devtime",
       }) {
    EXPECT_TRUE(ConnectWithToken(target).ok()) << target << ": " << ConnectWithToken(target);
  }
}

TEST(TokenGuard, WithoutATokenThereIsNothingToGuard) {
  EXPECT_TRUE(ConnectCollector("ipv4:127.0.0.1:1,192.0.2.10:2", ClientCredentials{}).ok());
  EXPECT_TRUE(ConnectCollector("collector.example:50051", ClientCredentials{}).ok());
}

TEST(TokenGuard, TlsCarriesTheTokenToAnyAddress) {
  ClientCredentials creds = ClientCredentials::WithToken("dt_secret");
  creds.tls_ca = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n";
  EXPECT_TRUE(ConnectCollector("ipv4:127.0.0.1:1,192.0.2.10:2", creds).ok());
  EXPECT_TRUE(ConnectCollector("dns:collector.example:50051", creds).ok());
}

TEST(CollectorTarget, BareListsAreDialledAsAddressLists) {
  auto v4 = ParseTarget("127.0.0.1:1,127.0.0.1:2");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->grpc_target, "ipv4:127.0.0.1:1,127.0.0.1:2");
  ASSERT_EQ(v4->addresses.size(), 2u);
  EXPECT_EQ(v4->addresses[1].address, "127.0.0.1:2");
  EXPECT_TRUE(v4->addresses[1].loopback);
  auto v6 = ParseTarget("[::1]:1,[::1]:2");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->grpc_target, "ipv6:[::1]:1,[::1]:2");
}

TEST(CollectorTarget, OtherFormsAreDialledAsWritten) {
  for (const char* target : {"127.0.0.1:1", "localhost:1", "dns:///localhost:1",
                             "ipv4:127.0.0.1:1,127.0.0.1:2", "ipv6:[::1]:1", "unix:/tmp/c.sock"}) {
    auto parsed = ParseTarget(target);
    ASSERT_TRUE(parsed.ok()) << target << ": " << parsed.status();
    EXPECT_EQ(parsed->grpc_target, target);
  }
  auto list = ParseTarget("ipv4:///127.0.0.1:1,10.0.0.1:2");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->addresses.size(), 2u);
  EXPECT_EQ(list->addresses[0].address, "127.0.0.1:1");
  EXPECT_FALSE(list->addresses[1].loopback);
}

// `target`'s refusal, whether or not a token is given: a slip in the address is named before
// the token guard (or a connection) can say anything about it.
std::string MistakeIn(const std::string& target) {
  for (const ClientCredentials& creds :
       {ClientCredentials::WithToken("dt_secret"), ClientCredentials{}}) {
    absl::Status status = ConnectCollector(target, creds).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << target << ": " << status;
    if (!creds.token.empty()) continue;
    EXPECT_EQ(ParseTarget(target).status(), status) << target;
  }
  return std::string(ParseTarget(target).status().message());
}

TEST(CollectorTarget, AUrlIsNamedWithTheHostPortToGiveInstead) {
  EXPECT_EQ(MistakeIn("http://collector.example:50051"),
            "collector address 'http://collector.example:50051': is a URL; give host:port "
            "(e.g. collector.example:50051)");
  EXPECT_THAT(MistakeIn("grpc://127.0.0.1:7000/"), HasSubstr("is a URL; give host:port (e.g. "
                                                             "127.0.0.1:7000)"));
  EXPECT_THAT(MistakeIn("HTTPS://[::1]:7000"), HasSubstr("(e.g. [::1]:7000)"));
  EXPECT_THAT(MistakeIn("https://collector.example"), HasSubstr("(e.g. collector.example:50051)"));
  EXPECT_THAT(MistakeIn("grpcs://"), HasSubstr("is a URL; give host:port (e.g. 127.0.0.1:50051)"));
}

TEST(CollectorTarget, ABarePortIsNamedWithTheLoopbackAddressItProbablyMeans) {
  EXPECT_EQ(MistakeIn("50051"),
            "collector address '50051': is a bare port; did you mean 127.0.0.1:50051?");
  EXPECT_THAT(MistakeIn(":9000"), HasSubstr("is a bare port; did you mean 127.0.0.1:9000?"));
}

TEST(CollectorTarget, MalformedTargetsAreRefusedNamingThem) {
  for (const char* target : {
           "",
           "ipv4:",
           "ipv4:127.0.0.1",        // no port
           "ipv4:localhost:1",      // names are for dns:
           "ipv4:127.0.0.1:99999",  // no such port
           "ipv4://authority/127.0.0.1:1",
           "ipv6:::1:1",                   // brackets around the address
           "ipv6:127.0.0.1:1",             // the wrong family
           "dns:a.example:1,b.example:1",  // dns: names one host
           "dns://192.0.2.53",
           "127.0.0.1:1,[::1]:2",  // one family per list
           "a.example:1,b.example:1",
           "[::1:1",
           "unix:",
       }) {
    absl::Status status = ConnectWithToken(target);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << target << ": " << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("collector address '" + std::string(target) + "'"));
  }
}

}  // namespace
}  // namespace devtime::wire
