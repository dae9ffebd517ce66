// Nothing acknowledged is ever lost: the collector is SIGKILLed and restarted, and
// PostgreSQL is restarted, while runs are being uploaded.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "agents/daemon/uploader.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/wire/channel.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using devtime::testing::TestDatabase;
using devtime::testing::WaitUntil;

constexpr int kRuns = 40;

// Uploads runs 0..kRuns-1 in order on its own thread, retrying transient failures, and
// records which were acknowledged.
class Uploader {
 public:
  Uploader(const std::string& address, const std::string& token)
      : stub_(devtime::testing::CollectorStub(address, token)), thread_([this] { Loop(); }) {}
  ~Uploader() { Join(); }

  int acked() const { return acked_count_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  std::set<std::string> acked_ids() const { return acked_; }
  std::vector<std::string> errors() const { return errors_; }

 private:
  void Loop() {
    const agent::UploadOptions options = devtime::testing::RetryingUploadOptions();
    for (int i = 0; i < kRuns; ++i) {
      auto run = devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(i), "naive",
                                                   1795917600 + i * 86400);
      auto ack = agent::Upload(*stub_, run, options);
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

class Resilience : public devtime::testing::CollectorFixture {
 protected:
  // Uploads runs 0..kRuns-1 while `disturb` breaks things (it is given the uploader, to
  // wait for its progress), then expects that no upload failed for good and that every run
  // is stored exactly once.
  void UploadAllWhile(const std::function<void(const Uploader&)>& disturb) {
    std::set<std::string> acked;
    std::vector<std::string> errors;
    {
      Uploader uploader(collector_.address(), collector_.admin_token());
      disturb(uploader);
      uploader.Join();
      acked = uploader.acked_ids();
      errors = uploader.errors();
    }
    EXPECT_TRUE(errors.empty()) << errors.front();
    ExpectEveryRunStoredOnce(db_, acked);
  }
};

TEST_F(Resilience, CollectorKilledAndRestartedWhileUploadingLosesNothing) {
  UploadAllWhile([&](const Uploader& uploader) {
    for (int kill = 1; kill <= 3; ++kill) {
      WaitUntil([&] { return uploader.acked() >= kill * 8; }, std::chrono::seconds(60));
      collector_.Kill();  // SIGKILL: a crash, mid-stream
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      collector_.Start();
    }
  });
}

TEST_F(Resilience, DatabaseRestartedWhileUploadingLosesNothingAndCollectorRecovers) {
  UploadAllWhile([&](const Uploader& uploader) {
    WaitUntil([&] { return uploader.acked() >= 8; }, std::chrono::seconds(60));
    TestDatabase::RestartCluster();  // fast shutdown: every connection dies

    WaitUntil([&] { return uploader.acked() >= 16; }, std::chrono::seconds(60));
    TestDatabase::StopCluster();  // a longer outage: health must say so
    WaitUntil(
        [&] {
          return Health(collector_.address()) == grpc::health::v1::HealthCheckResponse::NOT_SERVING;
        },
        std::chrono::seconds(20));
    EXPECT_EQ(Health(collector_.address()), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    EXPECT_NE(devtime::testing::HttpGet(collector_.metrics_port(), "/metrics")
                  .find("devtime_database_up 0"),
              std::string::npos);
    TestDatabase::StartCluster();
  });
  WaitUntil(
      [&] {
        return Health(collector_.address()) == grpc::health::v1::HealthCheckResponse::SERVING;
      },
      std::chrono::seconds(20));
  EXPECT_EQ(Health(collector_.address()), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(collector_.Stop(), 0) << collector_.Log();  // the same process, never restarted
}

}  // namespace
}  // namespace devtime
