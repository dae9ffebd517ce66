#include "services/collector/notify/http_client.h"

#include <gtest/gtest.h>

#include "tests/support/process.h"

namespace devtime::collector::notify {
namespace {

using std::chrono::milliseconds;

TEST(DescribeResponse, IsTheStatusAndTheStartOfTheBody) {
  EXPECT_EQ(DescribeResponse({500, "boom\n"}), "HTTP 500: boom");
  EXPECT_EQ(DescribeResponse({404, ""}), "HTTP 404");
  std::string long_body(300, 'x');
  EXPECT_EQ(DescribeResponse({502, long_body}), "HTTP 502: " + std::string(200, 'x'));
}

TEST(DescribeResponse, CutsOnACharacterBoundary) {
  // 199 ASCII bytes, then a 2-byte "é": it does not fit in 200 bytes, and half of it is not
  // UTF-8 (PostgreSQL would refuse to store the error).
  std::string body = std::string(199, 'a') + "\xC3\xA9" + "tail";
  EXPECT_EQ(DescribeResponse({500, body}), "HTTP 500: " + std::string(199, 'a'));
}

TEST(PrintablePrefix, ReplacesInvalidBytesAndControlCharacters) {
  EXPECT_EQ(PrintablePrefix(std::string("a\0b\tc\x7F", 6), 100), "a b c ");
  EXPECT_EQ(PrintablePrefix("ok \xFF\xC3 \xED\xA0\x80", 100), "ok ?? ???");  // surrogate too
  EXPECT_EQ(PrintablePrefix("\xE2\x82\xAC \xF0\x9F\x98\x80", 100), "\xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(ResponseStatus, RetryableAnswersAreUnavailableOthersFailedPrecondition) {
  EXPECT_TRUE(ResponseStatus({200, ""}).ok());
  EXPECT_TRUE(ResponseStatus({204, ""}).ok());
  EXPECT_EQ(ResponseStatus({503, "x"}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ResponseStatus({503, "x"}).message(), "HTTP 503: x");
  EXPECT_EQ(ResponseStatus({429, ""}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ResponseStatus({400, "bad"}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResponseStatus({301, ""}).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RedactUrl, KeepsOnlySchemeAndHost) {
  EXPECT_EQ(RedactUrl("https://hooks.example.com/services/T000/SECRET?x=1"),
            "https://hooks.example.com/…");
  EXPECT_EQ(RedactUrl("http://user:pw@127.0.0.1:9093/api/v2/alerts"), "http://127.0.0.1:9093/…");
  EXPECT_EQ(RedactUrl("http://127.0.0.1:9093"), "http://127.0.0.1:9093");
  EXPECT_EQ(RedactUrl("http://127.0.0.1:9093/"), "http://127.0.0.1:9093");
  EXPECT_EQ(RedactUrl("no scheme"), "<invalid URL>");
}

TEST(Post, NoAnswerIsUnavailableNamingTheEndpointButNotItsPath) {
  int port = testing::FreePort();  // nobody listens there
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto response = Post(base + "/secret-token", "{}", milliseconds(2000));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  std::string message(response.status().message());
  EXPECT_EQ(message.rfind("POST " + base + "/…: ", 0), 0u) << message;
  EXPECT_EQ(message.find("secret-token"), std::string::npos) << message;
  EXPECT_NE(message.find("onnect"), std::string::npos) << message;  // "Couldn't connect"...
}

TEST(Post, RefusesSchemesOtherThanHttp) {
  auto response = Post("file:///etc/passwd", "{}", milliseconds(1000));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument) << response.status();
}

}  // namespace
}  // namespace devtime::collector::notify
