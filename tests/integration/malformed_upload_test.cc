// Malformed UploadRun bytes (issue 26): a request that is not a devtime.v1.UploadRunRequest —
// truncated, with invalid UTF-8 in a string field, or garbage — used to fail in gRPC's own parse
// before any handler ran, answered INTERNAL with no message, and agents retried it for 54
// minutes. Now it is INVALID_ARGUMENT saying what is wrong, which an agent sets aside as a
// poison run, and nothing is stored. The bytes are sent as they are, with gRPC's generic stub,
// to a real collector over loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <random>
#include <string>

#include "agents/daemon/delivery_errors.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/wire/channel.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kUploadRun[] = "/devtime.v1.Collector/UploadRun";

class MalformedUploadTest : public devtime::testing::CollectorFixture {
 protected:
  // `bytes` sent as UploadRun's request with `token`; the collector's answer, and its response
  // bytes in `*response` when there is one.
  grpc::Status Send(const std::string& bytes, const std::string& token,
                    std::string* response = nullptr) {
    auto channel =
        wire::ConnectCollector(collector_.address(), wire::ClientCredentials::WithToken(token));
    if (!channel.ok()) return grpc::Status(grpc::StatusCode::UNKNOWN, "no channel");
    grpc::GenericStub stub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer reply;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, kUploadRun, grpc::StubOptions(), &request, &reply,
                   [&](grpc::Status status) { done.set_value(std::move(status)); });
    auto answered = done.get_future();
    // The call's own deadline ends it; this bound only guards against a hang of the test.
    if (answered.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      context.TryCancel();
      answered.wait();
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no answer in 60 s");
    }
    grpc::Status status = answered.get();
    if (status.ok() && response != nullptr) {
      grpc::Slice flat;
      if (reply.DumpToSingleSlice(&flat).ok()) {
        response->assign(reinterpret_cast<const char*>(flat.begin()), flat.size());
      }
    }
    return status;
  }
  grpc::Status SendAsAdmin(const std::string& bytes, std::string* response = nullptr) {
    return Send(bytes, collector_.admin_token(), response);
  }

  // A valid request for run `n`, serialized.
  static std::string ValidRequest(int n, const std::string& model = "rmsnorm") {
    v1::UploadRunRequest request;
    *request.mutable_run() = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(n));
    request.mutable_run()->mutable_identity()->set_model(model);
    return request.SerializeAsString();
  }

  // The answer to a malformed request: INVALID_ARGUMENT that names the request type and
  // `problem`, which the agent refuses for good (never retried).
  void ExpectRefused(const grpc::Status& status, const std::string& problem) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_code() << " " << status.error_message();
    EXPECT_THAT(
        status.error_message(),
        AllOf(HasSubstr("UploadRun: the request is not a valid devtime.v1.UploadRunRequest"),
              HasSubstr(problem)));
    EXPECT_EQ(agent::DeliveryOf(static_cast<absl::StatusCode>(status.error_code())),
              agent::Delivery::kRefusedForGood);
  }
};

TEST_F(MalformedUploadTest, ATruncatedRequestIsInvalidArgumentAndStoresNothing) {
  const std::string whole = ValidRequest(1);
  const std::string cut = whole.substr(0, whole.size() / 2);
  ASSERT_FALSE(v1::UploadRunRequest().ParseFromString(cut));
  auto status = SendAsAdmin(cut);
  ExpectRefused(status, "(" + std::to_string(cut.size()) + " bytes): run");
  EXPECT_THAT(status.error_message(), HasSubstr("breaks off"));
  EXPECT_EQ(db_.Count("runs"), 0);
}

TEST_F(MalformedUploadTest, InvalidUtf8InAStringFieldNamesTheField) {
  // The model's bytes replaced on the wire: protobuf would not serialize them from a message.
  std::string bytes = ValidRequest(2, "rmsnormXmodel");
  const auto at = bytes.find("rmsnormXmodel");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 7] = '\xff';
  ASSERT_FALSE(v1::UploadRunRequest().ParseFromString(bytes));
  auto status = SendAsAdmin(bytes);
  ExpectRefused(status, "run.identity.model: invalid UTF-8 at byte 7 of the string");
  EXPECT_EQ(db_.Count("runs"), 0);
}

TEST_F(MalformedUploadTest, GarbageIsInvalidArgument) {
  std::mt19937 random(26);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(random() & 0xff);
  ASSERT_FALSE(v1::UploadRunRequest().ParseFromString(garbage));
  ExpectRefused(SendAsAdmin(garbage), "(4096 bytes): ");
  ExpectRefused(SendAsAdmin(std::string("\xff\xff\xff\xff", 4)), "(4 bytes): ");
  EXPECT_EQ(db_.Count("runs"), 0);
}

TEST_F(MalformedUploadTest, AValidRequestAsBytesIsStoredAndAnsweredAsBefore) {
  std::string reply;
  auto status = SendAsAdmin(ValidRequest(3), &reply);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  v1::UploadRunResponse response;
  ASSERT_TRUE(response.ParseFromString(reply));
  EXPECT_EQ(response.run_id(), devtime::testing::TestRunId(3));
  EXPECT_FALSE(response.duplicate());
  EXPECT_EQ(db_.Count("runs"), 1);
  ASSERT_TRUE(SendAsAdmin(ValidRequest(3), &reply).ok());
  ASSERT_TRUE(response.ParseFromString(reply));
  EXPECT_TRUE(response.duplicate());
  // An empty request parses (every field has its default): the run is required.
  auto empty = SendAsAdmin("");
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(empty.error_message(), "run: is required");
}

TEST_F(MalformedUploadTest, ACallerWithoutATokenIsUnauthenticatedWhateverItSends) {
  auto status = Send(std::string("\xff\xff\xff\xff", 4), "");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_EQ(db_.Count("runs"), 0);
}

}  // namespace
}  // namespace devtime
