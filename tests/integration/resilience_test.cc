// Nothing acknowledged is ever lost: the collector is SIGKILLed and restarted, and
// PostgreSQL is restarted, while runs are being uploaded.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "agents/uploader.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/wire/channel.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

using devtime::testing::CollectorProcess;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;

constexpr int kRuns = 40;

// Uploads runs 0..kRuns-1 in order on its own thread, retrying transient failures, and
// records which were acknowledged.
class Uploader {
 public:
  Uploader(const std::string& address, const std::string& token)
      : stub_(v1::Collector::NewStub(
            *wire::ConnectCollector(address, wire::ClientCredentials::WithToken(token)))),
        thread_([this] { Loop(); }) {}
  ~Uploader() { Join(); }

  int acked() const { return acked_count_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  std::set<std::string> acked_ids() const { return acked_; }
  std::vector<std::string> errors() const { return errors_; }

 private:
  void Loop() {
    agent::UploadOptions options;
    options.retry_for = std::chrono::seconds(90);
    options.attempt_timeout = std::chrono::seconds(10);
    options.first_backoff = std::chrono::milliseconds(50);
    options.max_backoff = std::chrono::milliseconds(1000);
    for (int i = 0; i < kRuns; ++i) {
      auto ack = agent::Upload(
          *stub_, NaiveRmsNormRun(TestRunId(i), "naive", 1795917600 + i * 86400), options);
      if (ack.ok()) {
        acked_.insert(ack->run_id());
        ++acked_count_;
      } else {
        errors_.push_back(std::string(ack.status().message()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::unique_ptr<v1::Collector::Stub> stub_;
  std::set<std::string> acked_;
  std::vector<std::string> errors_;
  std::atomic<int> acked_count_{0};
  std::thread thread_;
};

void WaitUntil(const std::function<bool()>& condition, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(wire::MakeCollectorChannel(address));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("devtime.v1.Collector");
  grpc::health::v1::HealthCheckResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(5));
  if (!stub->Check(context.get(), request, &response).ok()) {
    return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  }
  return response.status();
}

void ExpectEveryRunStoredOnce(const TestDatabase& db, const std::set<std::string>& acked) {
  EXPECT_EQ(acked.size(), static_cast<std::size_t>(kRuns));
  EXPECT_EQ(db.Count("runs"), kRuns);
  EXPECT_EQ(db.Count("op_stats"), kRuns * 4);
  EXPECT_EQ(db.Count("series_points"), kRuns * 5);
  for (const auto& id : acked) {
    EXPECT_EQ(db.Query("SELECT count(*) FROM runs WHERE run_id = '" + id + "'"), "1") << id;
  }
}

TEST(Resilience, CollectorKilledAndRestartedWhileUploadingLosesNothing) {
  TestDatabase db;
  CollectorProcess collector(db.conninfo());
  std::set<std::string> acked;
  std::vector<std::string> errors;
  {
    Uploader uploader(collector.address(), collector.admin_token());
    for (int kill = 1; kill <= 3; ++kill) {
      WaitUntil([&] { return uploader.acked() >= kill * 8; }, std::chrono::seconds(60));
      collector.Kill();  // SIGKILL: a crash, mid-stream
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      collector.Start();
    }
    uploader.Join();
    acked = uploader.acked_ids();
    errors = uploader.errors();
  }
  EXPECT_TRUE(errors.empty()) << errors.front();
  ExpectEveryRunStoredOnce(db, acked);
}

TEST(Resilience, DatabaseRestartedWhileUploadingLosesNothingAndCollectorRecovers) {
  TestDatabase db;
  CollectorProcess collector(db.conninfo());
  std::set<std::string> acked;
  std::vector<std::string> errors;
  {
    Uploader uploader(collector.address(), collector.admin_token());
    WaitUntil([&] { return uploader.acked() >= 8; }, std::chrono::seconds(60));
    TestDatabase::RestartCluster();  // fast shutdown: every connection dies

    WaitUntil([&] { return uploader.acked() >= 16; }, std::chrono::seconds(60));
    TestDatabase::StopCluster();  // a longer outage: health must say so
    WaitUntil(
        [&] {
          return Health(collector.address()) == grpc::health::v1::HealthCheckResponse::NOT_SERVING;
        },
        std::chrono::seconds(20));
    EXPECT_EQ(Health(collector.address()), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    EXPECT_NE(devtime::testing::HttpGet(collector.metrics_port(), "/metrics")
                  .find("devtime_database_up 0"),
              std::string::npos);
    TestDatabase::StartCluster();
    uploader.Join();
    acked = uploader.acked_ids();
    errors = uploader.errors();
  }
  EXPECT_TRUE(errors.empty()) << errors.front();
  ExpectEveryRunStoredOnce(db, acked);
  WaitUntil(
      [&] { return Health(collector.address()) == grpc::health::v1::HealthCheckResponse::SERVING; },
      std::chrono::seconds(20));
  EXPECT_EQ(Health(collector.address()), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(collector.Stop(), 0) << collector.Log();  // the same process, never restarted
}

}  // namespace
}  // namespace devtime
