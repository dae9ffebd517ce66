// The trace store (trace_store.h): a run's files are copied under model/workload/run id with
// their SHA-256, the artifacts then name the copies, a failed copy changes nothing, and run
// folders older than the retention are pruned.
#include "agents/daemon/trace_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "proto/wire/validation.h"
#include "tests/support/fake_env.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace devtime::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kRunId[] = "0b3c5a1e-7d2f-4e6a-9b8c-1d2e3f4a5b6c";
// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
constexpr char kSha256OfAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

class TraceStoreTest : public ::testing::Test {
 protected:
  // A run of rmsnorm/fused whose output holds a Kineto trace and a Neuron session.
  void SetUp() override {
    fs::create_directories(output_ / "i-0_pid_7" / "neffs");
    testing::WriteFile(output_.string(), "trace.json", "abc");
    testing::WriteFile((output_ / "i-0_pid_7").string(), "profile_nc_0_session_0.ntff", "ntff");
    testing::WriteFile((output_ / "i-0_pid_7" / "neffs").string(), "graph_1.neff", "neff");
    run_.mutable_identity()->set_run_id(kRunId);
    run_.mutable_identity()->set_model("rmsnorm");
    run_.mutable_identity()->set_workload("fused");
    AddArtifact("framework_trace", output_ / "trace.json");
    AddArtifact("ntff", output_ / "i-0_pid_7" / "profile_nc_0_session_0.ntff");
    AddArtifact("neff", output_ / "i-0_pid_7" / "neffs" / "graph_1.neff");
  }

  // KeepTraceFiles of run_, its status printed when it fails.
  ::testing::AssertionResult Keep() {
    absl::Status kept = KeepTraceFiles(store_, output_, &run_);
    if (kept.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << kept;
  }

  void AddArtifact(const std::string& kind, const fs::path& path) {
    v1::Artifact* artifact = run_.add_artifacts();
    artifact->set_kind(kind);
    artifact->set_uri("file://" + path.string());
    artifact->set_size_bytes(3);
  }

  fs::path dir_ = testing::MakeTempDir("trace-store");
  fs::path output_ = dir_ / "work" / "output";
  fs::path store_ = dir_ / "store";
  v1::RunSummary run_;
};

TEST_F(TraceStoreTest, CopiesEachFileUnderModelWorkloadAndRunWithItsSha256) {
  ASSERT_TRUE(Keep());
  const fs::path folder = store_ / "rmsnorm" / "fused" / kRunId;
  EXPECT_EQ(run_.artifacts(0).uri(), "file://" + (folder / "trace.json").string());
  EXPECT_EQ(run_.artifacts(0).sha256(), kSha256OfAbc);
  EXPECT_EQ(run_.artifacts(0).kind(), "framework_trace");
  EXPECT_EQ(testing::ReadFile((folder / "trace.json").string()), "abc");
  // The Neuron session keeps its layout: Neuron Explorer opens the folder as a whole.
  EXPECT_EQ(run_.artifacts(2).uri(),
            "file://" + (folder / "i-0_pid_7" / "neffs" / "graph_1.neff").string());
  EXPECT_EQ(run_.artifacts(2).size_bytes(), 4u);
  EXPECT_EQ(testing::ReadFile((folder / "i-0_pid_7" / "profile_nc_0_session_0.ntff").string()),
            "ntff");
  EXPECT_FALSE(fs::exists(folder.string() + ".tmp"));
}

TEST_F(TraceStoreTest, TheKeptRunStillPassesTheCollectorsValidation) {
  run_.set_status(v1::RUN_STATUS_FAILED);  // the smallest run the validator accepts
  run_.set_status_reason("job failed");
  run_.mutable_identity()->set_host("h");
  run_.mutable_started_at()->set_seconds(1'700'000'000);
  ASSERT_TRUE(Keep());
  EXPECT_TRUE(wire::ValidateRun(run_).ok()) << wire::ValidateRun(run_);
}

TEST_F(TraceStoreTest, AFileOutsideTheOutputKeepsOnlyItsName) {
  testing::WriteFile(dir_.string(), "elsewhere.json", "x");
  AddArtifact("framework_trace", dir_ / "elsewhere.json");
  ASSERT_TRUE(Keep());
  EXPECT_EQ(run_.artifacts(3).uri(),
            "file://" + (store_ / "rmsnorm" / "fused" / kRunId / "elsewhere.json").string());
}

TEST_F(TraceStoreTest, NamesCannotLeadOutOfTheStore) {
  run_.mutable_identity()->set_model("../..");
  run_.mutable_identity()->set_workload("a/b");
  EXPECT_EQ(RunTraceFolder(store_, run_), store_ / "_.._.." / "a_b" / kRunId);
}

TEST_F(TraceStoreTest, AFailedCopyLeavesTheRunAndTheStoreAsTheyWere) {
  AddArtifact("ntff", output_ / "gone.ntff");  // named by the summary, removed since
  const v1::RunSummary before = run_;
  absl::Status kept = KeepTraceFiles(store_, output_, &run_);
  ASSERT_FALSE(kept.ok());
  EXPECT_THAT(std::string(kept.message()), HasSubstr("gone.ntff"));
  EXPECT_EQ(run_.SerializeAsString(), before.SerializeAsString());
  EXPECT_FALSE(fs::exists(store_ / "rmsnorm" / "fused" / kRunId));
  EXPECT_FALSE(fs::exists(store_ / "rmsnorm" / "fused" / (std::string(kRunId) + ".tmp")));
}

// The folders are synced through the daemon's env: a failed fsync of the copy's folder is
// a failed copy, the run keeps naming its own files and nothing of it stays in the store.
TEST_F(TraceStoreTest, AFolderThatCannotBeSyncedIsAFailedCopy) {
  testing::FakeEnv env;
  env.Inject(testing::FakeEnv::Fault::kSyncDirectory, store_);
  const v1::RunSummary before = run_;
  absl::Status kept = KeepTraceFiles(store_, output_, &run_, env);
  ASSERT_FALSE(kept.ok());
  EXPECT_THAT(std::string(kept.message()), HasSubstr("cannot fsync"));
  EXPECT_EQ(env.Pending(testing::FakeEnv::Fault::kSyncDirectory), 0);
  EXPECT_EQ(run_.SerializeAsString(), before.SerializeAsString());
  EXPECT_FALSE(fs::exists(store_ / "rmsnorm" / "fused" / kRunId));
  EXPECT_FALSE(fs::exists(store_ / "rmsnorm" / "fused" / (std::string(kRunId) + ".tmp")));
}

TEST_F(TraceStoreTest, KeepingARunAgainReplacesItsFolder) {
  ASSERT_TRUE(Keep());
  v1::RunSummary again;
  *again.mutable_identity() = run_.identity();
  testing::WriteFile(output_.string(), "second.json", "2");
  AddArtifact("framework_trace", output_ / "second.json");
  *again.add_artifacts() = run_.artifacts(3);
  ASSERT_TRUE(KeepTraceFiles(store_, output_, &again).ok());
  EXPECT_FALSE(fs::exists(store_ / "rmsnorm" / "fused" / kRunId / "trace.json"));
  EXPECT_TRUE(fs::exists(store_ / "rmsnorm" / "fused" / kRunId / "second.json"));
}

TEST_F(TraceStoreTest, PruneRemovesOnlyRunFoldersOlderThanTheCutoff) {
  ASSERT_TRUE(Keep());
  const fs::path old_run = store_ / "rmsnorm" / "fused" / "old";
  fs::create_directories(old_run);
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(old_run, now - std::chrono::hours(24 * 31));
  EXPECT_EQ(PruneTraceStore(store_, now - std::chrono::hours(24 * 30)), 1);
  EXPECT_FALSE(fs::exists(old_run));
  EXPECT_TRUE(fs::exists(store_ / "rmsnorm" / "fused" / kRunId / "trace.json"));
}

TEST_F(TraceStoreTest, KeepRunTracesKeepsAndPrunesByTheConfiguration) {
  AgentConfig config;
  config.trace_retention_days = 2;
  const v1::RunSummary before = run_;
  ASSERT_TRUE(KeepRunTraces(config, output_, &run_).ok());  // no trace_store: nothing kept
  EXPECT_EQ(run_.SerializeAsString(), before.SerializeAsString());
  EXPECT_FALSE(fs::exists(store_));

  config.trace_store = store_;
  const fs::path expired = store_ / "m" / "w" / "expired";
  fs::create_directories(expired);
  fs::last_write_time(expired, fs::file_time_type::clock::now() - std::chrono::hours(49));
  ASSERT_TRUE(KeepRunTraces(config, output_, &run_).ok());
  EXPECT_EQ(run_.artifacts(0).sha256(), kSha256OfAbc);
  EXPECT_FALSE(fs::exists(expired));
}

}  // namespace
}  // namespace devtime::agent
