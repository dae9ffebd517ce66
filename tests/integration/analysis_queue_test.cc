// The analysis queue (issue 10 item 2) against a real PostgreSQL: detection is off the ack
// path, stored runs wait in runs.analyzed_at IS NULL, workers claim them with SKIP LOCKED and
// judge every one of them — also a run uploaded after a newer run of its series was judged.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "services/collector/analyze/analyzer.h"
#include "services/collector/store/analysis_repository.h"
#include "services/collector/store/run_store.h"
#include "tests/bench/ingest/wide_run.h"
#include "tests/support/alerting.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"

namespace devtime::store {
namespace {

using devtime::bench::WideRun;
using devtime::testing::TestDatabase;
using devtime::testing::TestRunId;
using devtime::testing::WaitUntil;

constexpr long long kNight = 86400;
constexpr long long kFirstNight = 1795917600;

class AnalysisQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.conninfo = db_.conninfo();
    auto database = Database::Open(options);
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = std::move(*database);
    runs_ = std::make_unique<RunStore>(*database_);
    repository_ = std::make_unique<SqlAnalysisRepository>(*database_);
    analyze::AnalyzerOptions analysis;
    analysis.confirmation_runs = false;
    analyzer_ = std::make_unique<analyze::RegressionAnalyzer>(*repository_, analysis);
  }

  void StartWorkers(int workers) {
    analyzer_->StartWorkers(
        {.workers = workers,
         .poll = absl::Seconds(30),  // a test passing needs the wake-ups
         .on_verdict = [&](const std::string&, const absl::StatusOr<analyze::Verdict>& v, double) {
           if (!v.ok()) ++errors_;
         }});
  }

  void Store(int night, double scale) {
    auto run = WideRun(TestRunId(night), "queue", kFirstNight + kNight * night,
                       {.ops = 20, .steps = 5, .seed = uint32_t(night), .scale = scale});
    auto stored = runs_->IngestRun(run);
    ASSERT_TRUE(stored.ok()) << stored.status();
    analyzer_->Wake();  // what UploadRun does after the commit
  }

  bool AllAnalysed() {
    return db_.Query("SELECT count(*) FROM runs WHERE analyzed_at IS NULL") == "0";
  }

  TestDatabase db_;
  std::unique_ptr<Database> database_;
  std::unique_ptr<RunStore> runs_;
  std::unique_ptr<SqlAnalysisRepository> repository_;
  std::unique_ptr<analyze::RegressionAnalyzer> analyzer_;
  std::atomic<int> errors_{0};
};

TEST_F(AnalysisQueueTest, StoringDoesNotAnalyseTheWorkersDo) {
  Store(1, 1.0);
  EXPECT_EQ(db_.Query("SELECT count(*) FROM runs WHERE analyzed_at IS NULL"), "1");
  StartWorkers(2);
  ASSERT_TRUE(WaitUntil([&] { return AllAnalysed(); }));
  EXPECT_EQ(errors_, 0);
}

TEST_F(AnalysisQueueTest, ConcurrentUploadsOfOneSeriesAreAllJudgedInOrder) {
  StartWorkers(3);
  std::vector<std::thread> uploaders;
  for (int t = 0; t < 4; ++t) {
    uploaders.emplace_back([&, t] {
      for (int night = 1 + t; night <= 24; night += 4) Store(night, night == 24 ? 1.6 : 1.0);
    });
  }
  for (auto& u : uploaders) u.join();
  ASSERT_TRUE(WaitUntil([&] { return AllAnalysed(); }, std::chrono::seconds(60)));
  EXPECT_EQ(errors_, 0);
  // The slow last night is the one regression, whatever order the uploads committed in.
  EXPECT_EQ(db_.Query("SELECT count(*) FROM regressions"), "1");
  EXPECT_EQ(db_.Query("SELECT first_bad_run_id::text FROM regressions"), TestRunId(24));
}

TEST_F(AnalysisQueueTest, ALateRunIsJudgedAgainstThePointsBeforeIt) {
  StartWorkers(2);
  for (int night = 1; night <= 10; ++night) Store(night, 1.0);
  Store(12, 1.0);
  ASSERT_TRUE(WaitUntil([&] { return AllAnalysed(); }));
  // Night 11 ran before night 12 but arrives after it was judged: it is still judged, against
  // nights 1-10, and its slowdown opens a regression.
  Store(11, 1.6);
  ASSERT_TRUE(WaitUntil([&] { return db_.Count("regressions") == 1; }))
      << "the late run was not judged";
  EXPECT_EQ(db_.Query("SELECT first_bad_run_id::text FROM regressions"), TestRunId(11));
  EXPECT_EQ(db_.Query("SELECT last_good_run_id::text FROM regressions"), TestRunId(10));
  EXPECT_TRUE(AllAnalysed());
  EXPECT_EQ(errors_, 0);
}

TEST_F(AnalysisQueueTest, RunsStoredElsewhereArePickedUpByThePoll) {
  analyzer_->StartWorkers({.workers = 1, .poll = absl::Milliseconds(100)});
  // Stored through another collector: nobody wakes this one.
  auto run = WideRun(TestRunId(1), "queue", kFirstNight, {.ops = 20, .steps = 5});
  ASSERT_TRUE(runs_->IngestRun(run).ok());
  EXPECT_TRUE(WaitUntil([&] { return AllAnalysed(); }));
}

}  // namespace
}  // namespace devtime::store
