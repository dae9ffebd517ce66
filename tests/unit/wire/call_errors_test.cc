// What devtimectl and devtime-agent say when a call to the collector fails: the fix first,
// where the cause is known, then gRPC's own words. The two common causes are driven for
// real: a port nobody listens on, and a plain HTTP/1 server (what the collector's
// Prometheus /metrics port is) dialled as if it were the gRPC port.
#include "proto/wire/call_errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"

namespace devtime::wire {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A listening TCP socket on 127.0.0.1 at an ephemeral port.
int ListenOnLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot listen on 127.0.0.1";
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// An HTTP/1.1 server that answers every request with 404 and closes, as an HTTP/1 metrics
// endpoint answers gRPC's HTTP/2 preface.
class Http1Server {
 public:
  Http1Server() : fd_(ListenOnLoopback(&port_)), thread_([this] { Serve(); }) {}
  ~Http1Server() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept() with an error
    thread_.join();
    close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve() {
    for (int conn; (conn = accept(fd_, nullptr, nullptr)) >= 0; close(conn)) {
      char request[1024];
      if (read(conn, request, sizeof request) <= 0) continue;
      static constexpr char kAnswer[] =
          "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      if (write(conn, kAnswer, sizeof kAnswer - 1) < 0) continue;
    }
  }

  int port_ = 0;
  int fd_;
  std::thread thread_;
};

// A loopback address where nothing listens: a port the kernel handed out, then closed.
std::string ClosedPort() {
  int port = 0;
  close(ListenOnLoopback(&port));
  return "127.0.0.1:" + std::to_string(port);
}

// The status of one real call to `address`, failing at once rather than waiting to connect.
grpc::Status CallCollector(const std::string& address) {
  auto stub = v1::Collector::NewStub(MakeCollectorChannel(address));
  auto context = MakeContext(std::chrono::seconds(10));
  context->set_wait_for_ready(false);
  v1::ListRunsResponse response;
  return stub->ListRuns(context.get(), v1::ListRunsRequest(), &response);
}

TEST(DescribeCallError, AnHttp1AnswerNamesTheMetricsPortAndTheGrpcPort) {
  Http1Server metrics;
  grpc::Status status = CallCollector(metrics.address());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(DescribeCallError(status, metrics.address()),
              StartsWith(metrics.address() +
                         " answers HTTP/1 — is it the metrics port? the gRPC port is --listen "
                         "(default 50051)"))
      << Describe(status);
}

TEST(DescribeCallError, UnreachableSaysWhatToCheck) {
  const std::string address = ClosedPort();
  grpc::Status status = CallCollector(address);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << Describe(status);
  const std::string message = DescribeCallError(status, address);
  EXPECT_THAT(message, StartsWith("collector " + address +
                                  " unreachable: is devtime-collector running and listening "
                                  "there (deploy/quickstart.sh status)? is DEVTIME_COLLECTOR"));
  EXPECT_THAT(message, HasSubstr("(UNAVAILABLE: ")) << "gRPC's own words stay";
}

TEST(DescribeCallError, ACollectorWhoseDatabaseIsAwayIsReachable) {
  grpc::Status status(grpc::StatusCode::UNAVAILABLE,
                      "store run: database unavailable after 3 attempts");
  EXPECT_THAT(DescribeCallError(status, "127.0.0.1:50051"),
              StartsWith("collector 127.0.0.1:50051 answers, but its database is unavailable"));
}

TEST(DescribeCallError, WithoutATargetSpeaksOfTheCollector) {
  grpc::Status status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses");
  EXPECT_THAT(DescribeCallError(status, ""), StartsWith("collector unreachable: "));
}

TEST(DescribeCallError, OtherErrorsAreDescribedAsTheyCame) {
  grpc::Status status(grpc::StatusCode::NOT_FOUND, "run 0f3c… not found");
  EXPECT_EQ(DescribeCallError(status, "127.0.0.1:50051"), "NOT_FOUND: run 0f3c… not found");
}

}  // namespace
}  // namespace devtime::wire
