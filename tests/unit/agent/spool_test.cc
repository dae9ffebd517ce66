#include "agents/daemon/spool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/fake_env.h"
#include "tests/support/process.h"
#include "tests/support/sample_runs.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using devtime::testing::FakeEnv;
using devtime::testing::NaiveRmsNormRun;
using devtime::testing::TestRunId;

class SpoolTest : public ::testing::Test {
 protected:
  std::string dir_ = devtime::testing::MakeTempDir("spool");
};

TEST_F(SpoolTest, KeepsRunsAcrossReopenUntilRemoved) {
  {
    auto spool = *Spool::Open(dir_, 1 << 20);
    ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(1))).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(2))).ok());
  }
  auto spool = *Spool::Open(dir_, 1 << 20);  // an agent restart
  EXPECT_THAT(spool->Pending(), ::testing::ElementsAre(TestRunId(1), TestRunId(2)));
  auto run = spool->Load(TestRunId(2));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->identity().run_id(), TestRunId(2));
  ASSERT_TRUE(spool->Remove(TestRunId(1)).ok());
  EXPECT_THAT(spool->Pending(), ::testing::ElementsAre(TestRunId(2)));
  EXPECT_EQ(spool->Stats().runs, 1u);
}

TEST_F(SpoolTest, PutOfSpooledRunIdIsANoOp) {
  auto spool = *Spool::Open(dir_, 1 << 20);
  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(1))).ok());
  auto bytes = spool->Stats().bytes;
  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(1))).ok());
  EXPECT_EQ(spool->Stats().runs, 1u);
  EXPECT_EQ(spool->Stats().bytes, bytes);
}

TEST_F(SpoolTest, RefusesRunsBeyondItsBoundWithAClearError) {
  auto one = NaiveRmsNormRun(TestRunId(1)).ByteSizeLong();
  auto spool = *Spool::Open(dir_, one * 2 + one / 2);
  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(1))).ok());
  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(2))).ok());
  auto full = spool->Put(NaiveRmsNormRun(TestRunId(3)));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(full.message()), ::testing::HasSubstr("is full"));
  EXPECT_EQ(spool->Stats().runs, 2u);
}

TEST_F(SpoolTest, DiscardsHalfWrittenFilesFromACrash) {
  std::ofstream(dir_ + "/" + TestRunId(9) + ".tmp") << "partial";
  auto spool = *Spool::Open(dir_, 1 << 20);
  EXPECT_TRUE(spool->Pending().empty());
  EXPECT_FALSE(fs::exists(dir_ + "/" + TestRunId(9) + ".tmp"));
}

// A filesystem fault while a run is stored: the run is refused with an error naming the
// step, nothing of it stays (no temporary file, no run), and the next try stores it.
struct StoreFault {
  std::string name;
  FakeEnv::Fault fault;
  absl::StatusCode code;
  std::string message;
};

class SpoolFaultTest : public SpoolTest, public ::testing::WithParamInterface<StoreFault> {};

TEST_P(SpoolFaultTest, RefusesTheRunLeavesNoTemporaryFileAndTheNextTryStoresIt) {
  FakeEnv env;
  env.Inject(GetParam().fault, dir_);
  auto spool = *Spool::Open(dir_, 1 << 20, env);
  auto put = spool->Put(NaiveRmsNormRun(TestRunId(1)));
  EXPECT_EQ(put.code(), GetParam().code);
  EXPECT_THAT(std::string(put.message()), ::testing::HasSubstr(GetParam().message));
  EXPECT_TRUE(spool->Pending().empty());
  EXPECT_TRUE(fs::is_empty(dir_)) << "a temporary file was left behind";

  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(1))).ok());
  EXPECT_THAT(spool->Pending(), ::testing::ElementsAre(TestRunId(1)));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, SpoolFaultTest,
    ::testing::Values(
        // The zero-byte file a real ENOSPC leaves is removed.
        StoreFault{"NoSpace", FakeEnv::Fault::kNoSpace, absl::StatusCode::kResourceExhausted,
                   "No space left on device"},
        StoreFault{"Fsync", FakeEnv::Fault::kFsync, absl::StatusCode::kInternal, "cannot fsync"},
        StoreFault{"Rename", FakeEnv::Fault::kRename, absl::StatusCode::kInternal,
                   "cannot rename"}),
    [](const ::testing::TestParamInfo<StoreFault>& fault) { return fault.param.name; });

TEST_F(SpoolTest, RefusesARunTheDiskHasNoRoomForBeforeWritingIt) {
  FakeEnv env;
  env.SetFreeBytes(100);
  auto spool = *Spool::Open(dir_, 1 << 20, env);
  auto put = spool->Put(NaiveRmsNormRun(TestRunId(1)));
  EXPECT_EQ(put.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(put.message()), ::testing::HasSubstr("100 bytes free"));
  EXPECT_THAT(env.Writes(dir_), ::testing::IsEmpty());
}

TEST_F(SpoolTest, CorruptFileIsReportedNotSilentlyDropped) {
  auto spool = *Spool::Open(dir_, 1 << 20);
  std::ofstream(dir_ + "/" + TestRunId(5) + ".pb") << "\xff\xff\xff not protobuf";
  auto run = spool->Load(TestRunId(5));
  EXPECT_EQ(run.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(SpoolTest, SetAsideKeepsTheRunOutOfTheQueue) {
  auto spool = *Spool::Open(dir_, 1 << 20);
  ASSERT_TRUE(spool->Put(NaiveRmsNormRun(TestRunId(7))).ok());
  auto where = spool->SetAside(TestRunId(7));
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_TRUE(spool->Pending().empty());
  EXPECT_EQ(spool->Stats().runs, 0u);
  EXPECT_EQ(*where, fs::path(dir_) / "rejected" / (TestRunId(7) + ".pb"));
  EXPECT_TRUE(fs::exists(*where));
}

}  // namespace
}  // namespace devtime::agent
