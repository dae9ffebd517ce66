// Who may do what: tokens (admin, per-agent), and TLS / mutual TLS on the gRPC port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/exit_codes.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

using devtime::testing::CollectorProcess;
using devtime::testing::Ctl;  // (collector, args, auth flags): each test says who it is
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::RunCommand;
using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;
using ::testing::HasSubstr;

grpc::Status Upload(const std::string& address, const std::string& token,
                    const v1::RunSummary& run) {
  return devtime::testing::UploadRun(*devtime::testing::CollectorStub(address, token), run,
                                     std::chrono::seconds(10));
}

TEST(Auth, MissingOrUnknownTokenIsUnauthenticatedCountedAndStoresNothing) {
  TestDatabase db;
  CollectorProcess collector(db.conninfo());
  auto none = Upload(collector.address(), "", NaiveRmsNormRun(TestRunId(1)));
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED) << none.error_message();
  auto wrong = Upload(collector.address(), "dt_not-a-real-token", NaiveRmsNormRun(TestRunId(1)));
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED) << wrong.error_message();
  auto list = Ctl(collector, {"runs", "list"}, {});
  EXPECT_EQ(list.exit_code, wire::kExitPermission);
  EXPECT_THAT(list.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_EQ(db.Count("runs"), 0);
  auto metrics = devtime::testing::HttpGet(collector.metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("devtime_auth_failures_total{reason=\"missing\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("devtime_auth_failures_total{reason=\"invalid\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("devtime_ingest_runs_total{outcome=\"unauthorized\"} 2"));
}

TEST(Auth, AgentTokenWritesOnlyForItsHostAndCannotAdminister) {
  TestDatabase db;
  CollectorProcess collector(db.conninfo());
  std::vector<std::string> admin{"--token-file", collector.admin_token_file()};
  auto issued = Ctl(collector, {"agents", "add", "trn-a", "--host", "trn-test-01"}, admin);
  ASSERT_EQ(issued.exit_code, 0) << issued.err;
  std::string token = issued.out.substr(0, issued.out.find('\n'));
  EXPECT_EQ(token.rfind("dt_", 0), 0u);
  EXPECT_EQ(db.Query("SELECT count(*) FROM agent_tokens WHERE token_sha256 LIKE '%" + token + "%'"),
            "0")
      << "the token must not be stored in clear";

  EXPECT_TRUE(Upload(collector.address(), token, NaiveRmsNormRun(TestRunId(1))).ok());
  auto other = NaiveRmsNormRun(TestRunId(2));
  other.mutable_identity()->set_host("trn-test-02");
  auto denied = Upload(collector.address(), token, other);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("run.identity.host"));

  std::string token_file = devtime::testing::MakeTempDir("auth") + "/agent.token";
  std::ofstream(token_file) << token << "\n";
  std::vector<std::string> agent{"--token-file", token_file};
  EXPECT_EQ(Ctl(collector, {"runs", "list"}, agent).exit_code, 0);
  auto admin_only = Ctl(collector, {"agents", "add", "trn-b", "--host", "x"}, agent);
  EXPECT_EQ(admin_only.exit_code, wire::kExitPermission);
  EXPECT_THAT(admin_only.err, HasSubstr("PERMISSION_DENIED"));
  EXPECT_EQ(db.Count("runs"), 1);

  // A re-issued token replaces the old one.
  ASSERT_EQ(Ctl(collector, {"agents", "add", "trn-a", "--host", "trn-test-01"}, admin).exit_code,
            0);
  EXPECT_EQ(Upload(collector.address(), token, NaiveRmsNormRun(TestRunId(3))).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  auto metrics = devtime::testing::HttpGet(collector.metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("devtime_auth_failures_total{reason=\"forbidden\"} 2"));
}

TEST(Auth, TokensAreNeverSentInPlaintextBeyondLoopback) {
  auto channel =
      wire::ConnectCollector("192.0.2.10:50051", wire::ClientCredentials::WithToken("dt_secret"));
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(channel.status().message()), HasSubstr("unencrypted"));
  EXPECT_TRUE(
      wire::ConnectCollector("127.0.0.1:50051", wire::ClientCredentials::WithToken("dt_secret"))
          .ok());
  EXPECT_TRUE(
      wire::ConnectCollector("localhost:50051", wire::ClientCredentials::WithToken("dt_secret"))
          .ok());
}

// A throwaway CA, a server certificate for 127.0.0.1 and a client certificate.
std::string MakeCertificates() {
  std::string dir = devtime::testing::MakeTempDir("tls");
  std::string script =
      "set -e; cd " + dir +
      "\n"
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
      "-subj /CN=devtime-test-ca 2>/dev/null\n"
      "for who in server client; do\n"
      "  openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who "
      "2>/dev/null\n"
      "done\n"
      "echo subjectAltName=IP:127.0.0.1,DNS:localhost > san.ext\n"
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem "
      "-days 2 -extfile san.ext 2>/dev/null\n"
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem "
      "-days 2 2>/dev/null\n";
  auto made = RunCommand({"/bin/sh", "-c", script});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return dir;
}

TEST(Tls, CollectorServesTlsAndCanRequireClientCertificates) {
  TestDatabase db;
  std::string certs = MakeCertificates();
  CollectorProcess tls(db.conninfo(), 0,
                       {"--tls-cert", certs + "/server.pem", "--tls-key", certs + "/server.key"});
  std::vector<std::string> admin{"--token-file", tls.admin_token_file()};
  auto plaintext = Ctl(tls, {"--timeout", "3", "runs", "list"}, admin);
  EXPECT_NE(plaintext.exit_code, 0) << "a plaintext client reached a TLS-only port";
  std::vector<std::string> with_ca = admin;
  with_ca.insert(with_ca.end(), {"--tls-ca", certs + "/ca.pem"});
  auto secure = Ctl(tls, {"runs", "list"}, with_ca);
  EXPECT_EQ(secure.exit_code, 0) << secure.err;

  CollectorProcess mutual(db.conninfo(), 0,
                          {"--tls-cert", certs + "/server.pem", "--tls-key", certs + "/server.key",
                           "--tls-client-ca", certs + "/ca.pem"});
  std::vector<std::string> mutual_admin{"--token-file", mutual.admin_token_file(), "--tls-ca",
                                        certs + "/ca.pem"};
  EXPECT_NE(Ctl(mutual, {"--timeout", "3", "runs", "list"}, mutual_admin).exit_code, 0)
      << "mutual TLS let a client without a certificate in";
  mutual_admin.insert(mutual_admin.end(),
                      {"--tls-cert", certs + "/client.pem", "--tls-key", certs + "/client.key"});
  auto with_cert = Ctl(mutual, {"runs", "list"}, mutual_admin);
  EXPECT_EQ(with_cert.exit_code, 0) << with_cert.err;
}

}  // namespace
}  // namespace devtime
