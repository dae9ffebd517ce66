// devtimectl and devtime-agent at their edges (issue 22): a slow link gets the whole
// --timeout to connect, a regression is found by the run that opened it, the collector
// serves reflection for grpcurl, and `devtimectl version` is --version.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/json.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/files.h"
#include "tests/support/nightly_runs.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using devtime::testing::CommandResult;
using devtime::testing::DelayProxy;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// 0.6 s each way: connecting (TCP, then the HTTP/2 SETTINGS of both sides) takes over a
// second, as on a link across the world.
constexpr std::chrono::milliseconds kSlowLink{600};

class CliEdgesTest : public devtime::testing::CollectorFixture {
 protected:
  // devtimectl through `proxy`, as the admin.
  CommandResult CtlVia(const DelayProxy& proxy, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {devtime::testing::BinaryPath("devtimectl"), "--collector",
                                     proxy.address(), "--token-file",
                                     collector_.admin_token_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    return devtime::testing::RunCommand(argv);
  }

  // Ten fused nights, then two naive ones: one regression, opened by the first naive run.
  void UploadLostFusion() {
    std::mt19937 rng(22);
    const int64_t first_night = time(nullptr) - 20 * 86400;
    for (int n = 1; n <= 12; ++n) {
      UploadAnalysed(devtime::testing::NightlyRmsNormRun(
          {.n = n,
           .started = first_night + n * 86400,
           .ops = n <= 10 ? devtime::testing::kFusedRmsNorm : devtime::testing::kNaiveRmsNorm,
           .compiler = n <= 10 ? "2.21.18" : "2.22.4",
           .host = "trn-01"},
          rng));
    }
  }
};

TEST_F(CliEdgesTest, ASlowLinkConnectsWithinTheTimeout) {
  DelayProxy proxy(collector_.grpc_port(), kSlowLink);
  auto listed = CtlVia(proxy, {"--timeout", "60", "models", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("no models yet"));
}

TEST_F(CliEdgesTest, ATimeoutShorterThanTheLinkFailsWithExit3SayingSo) {
  DelayProxy proxy(collector_.grpc_port(), kSlowLink);
  auto listed = CtlVia(proxy, {"--timeout", "1", "models", "list"});
  EXPECT_EQ(listed.exit_code, 3);
  EXPECT_THAT(
      listed.err,
      AllOf(HasSubstr("no answer from collector " + proxy.address() + " within --timeout 1 s"),
            HasSubstr("give a longer --timeout"), HasSubstr("DEADLINE_EXCEEDED")));
}

TEST_F(CliEdgesTest, AgentUploadOverASlowLinkSucceedsAtTheFirstAttempt) {
  DelayProxy proxy(collector_.grpc_port(), kSlowLink);
  const std::string dir = devtime::testing::MakeTempDir("cli-edges");
  const std::string file = devtime::testing::WriteFile(
      dir, "run.json",
      wire::ToJson(devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(1))));
  auto uploaded =
      devtime::testing::AgentCommand({"upload", "--collector", proxy.address(), "--token-file",
                                      collector_.admin_token_file(), "--retry-for", "60", file});
  EXPECT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_THAT(uploaded.err, Not(HasSubstr("retrying")));
}

TEST_F(CliEdgesTest, RegressionsShowTakesTheRunThatOpenedIt) {
  UploadLostFusion();
  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u);
  const std::string id = regressions[0]["id"].get<std::string>();
  const std::string first_bad = regressions[0]["first_bad_run_id"].get<std::string>();

  auto by_run = Ctl({"regressions", "show", first_bad});
  EXPECT_EQ(by_run.exit_code, 0) << by_run.err;
  EXPECT_THAT(by_run.out, StartsWith("regression " + id + " "));
  // In capitals, as someone may copy it; a run id of digits is no regression number.
  std::string capitals = first_bad;
  for (char& c : capitals) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto by_prefix = Ctl({"regressions", "show", capitals});
  EXPECT_EQ(by_prefix.exit_code, 0) << by_prefix.err;
  EXPECT_THAT(by_prefix.out, StartsWith("regression " + id + " "));
  // Triage takes it too.
  auto acked = Ctl({"regressions", "ack", first_bad, "--by", "tester"});
  EXPECT_EQ(acked.exit_code, 0) << acked.err;
  EXPECT_THAT(acked.out, HasSubstr("regression " + id + " is now acknowledged"));

  // A run that opened none is not found, and says what a regression id is.
  auto none = Ctl({"regressions", "show", regressions[0]["last_good_run_id"].get<std::string>()});
  EXPECT_EQ(none.exit_code, 4);
  EXPECT_THAT(none.err, AllOf(HasSubstr("opened no regression"), HasSubstr("a number")));
}

TEST_F(CliEdgesTest, ARegressionIdThatIsNeitherANumberNorARunIsAUsageError) {
  auto shown = Ctl({"regressions", "show", "fusion-lost"});
  EXPECT_EQ(shown.exit_code, 2);
  EXPECT_THAT(shown.err, AllOf(HasSubstr("'fusion-lost'"), HasSubstr("a number"),
                               HasSubstr("regressions list"), Not(HasSubstr("convert"))));
}

TEST_F(CliEdgesTest, ServesReflectionSoGrpcurlNeedsNoProtoFiles) {
  auto channel = wire::MakeCollectorChannel(collector_.address());
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  auto context = wire::MakeContext(std::chrono::seconds(30));
  auto stream = stub->ServerReflectionInfo(context.get());

  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  grpc::reflection::v1alpha::ServerReflectionResponse services;
  ASSERT_TRUE(stream->Read(&services));
  std::vector<std::string> names;
  for (const auto& service : services.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, AllOf(Contains("devtime.v1.Collector"), Contains("grpc.health.v1.Health")));

  grpc::reflection::v1alpha::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("devtime.v1.Collector");
  ASSERT_TRUE(stream->Write(symbol));
  grpc::reflection::v1alpha::ServerReflectionResponse file;
  ASSERT_TRUE(stream->Read(&file));
  ASSERT_GT(file.file_descriptor_response().file_descriptor_proto_size(), 0);
  google::protobuf::FileDescriptorProto descriptor;
  ASSERT_TRUE(descriptor.ParseFromString(file.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(descriptor.name(), "devtime/v1/collector.proto");
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(DevtimectlVersion, IsAnAliasOfTheVersionFlag) {
  auto flag =
      devtime::testing::RunCommand({devtime::testing::BinaryPath("devtimectl"), "--version"});
  auto word = devtime::testing::RunCommand({devtime::testing::BinaryPath("devtimectl"), "version"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(word.exit_code, 0) << word.err;
  EXPECT_EQ(word.out, flag.out);
}

}  // namespace
}  // namespace devtime
