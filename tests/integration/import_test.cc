// devtimectl import against a real collector: an archive of harness outputs laid out as
// model/workload/date, with a capture copied twice and broken entries among them. Everything
// good is stored once with the labels and times its path gives; a re-import stores nothing;
// the broken ones are named with their reasons; a dry run needs no collector.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "grpcpp/client_context.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace devtime {
namespace {

namespace fs = std::filesystem;
using devtime::testing::WriteFile;
using ::testing::HasSubstr;

const fs::path kFixtures = fs::path(DEVTIME_SOURCE_DIR) / "tests/fixtures/trace";

class ImportTest : public devtime::testing::CollectorFixture {
 protected:
  ImportTest() {
    archive_ = fs::temp_directory_path() /
               ("devtime-import-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    copy_ = archive_.string() + "-copy";
    fs::remove_all(archive_);
    fs::remove_all(copy_);
    Capture("legacy_mlp", "mlp/cpu/2026-11-20");  // harness outputs: their run.json has the time
    Capture("legacy_conv", "mlp/cpu/2026-11-21");
    // Lone trace files: the path has the time.
    File("kineto_int_ts.json", "conv/cpu/20261123T0200.json");
    File("kineto_cuda_basic.json", "cuda/basic/2026-11-24.json");
    // Broken entries: a trace cut off mid-write, a file that is not JSON.
    fs::create_directories(archive_ / "mlp/cpu/2026-11-25");
    WriteFile((archive_ / "mlp/cpu/2026-11-25").string(), "trace.json", "{\"traceEvents\": [");
    WriteFile((archive_ / "cuda/basic").string(), "2026-11-26.json", "junk");
    // A second copy of the first night, laid out the same way: one run, not two.
    fs::create_directories(copy_ / "mlp/cpu");
    fs::copy(archive_ / "mlp/cpu/2026-11-20", copy_ / "mlp/cpu/2026-11-20");
  }
  ~ImportTest() override {
    fs::remove_all(archive_);
    fs::remove_all(copy_);
  }

  void File(const std::string& fixture, const std::string& where) {
    fs::create_directories((archive_ / where).parent_path());
    fs::copy_file(kFixtures / fixture, archive_ / where);
  }

  void Capture(const std::string& fixture, const std::string& where) {
    fs::create_directories(archive_ / where);
    fs::copy(kFixtures / fixture, archive_ / where, fs::copy_options::recursive);
  }

  devtime::testing::CommandResult Import(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"import", archive_.string(), copy_.string(), "--layout",
                                     "model/workload/when"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Ctl(args);
  }

  std::vector<v1::RunInfo> StoredRuns() const {
    auto stub = AdminStub();
    grpc::ClientContext context;
    v1::ListRunsRequest request;
    v1::ListRunsResponse response;
    EXPECT_TRUE(stub->ListRuns(&context, request, &response).ok());
    return {response.runs().begin(), response.runs().end()};
  }

  fs::path archive_;
  fs::path copy_;
};

TEST_F(ImportTest, StoresEveryGoodCaptureOnceAndNamesTheBrokenOnes) {
  auto first = Import({});
  EXPECT_EQ(first.exit_code, 1) << first.out << first.err;  // 1: some were invalid
  EXPECT_THAT(first.out, HasSubstr("7 captures: 4 stored, 1 already stored, 2 invalid"));
  EXPECT_THAT(first.out, HasSubstr("mlp/cpu/2026-11-25  ("));
  EXPECT_THAT(first.out, HasSubstr("truncated JSON"));
  EXPECT_THAT(first.out, HasSubstr("2026-11-26.json  ("));
  EXPECT_THAT(first.out, HasSubstr("not JSON"));
  EXPECT_THAT(first.err, HasSubstr("importing [")) << "progress on stderr";

  const auto runs = StoredRuns();
  ASSERT_EQ(runs.size(), 4u);
  std::map<std::string, int> per_series;
  for (const auto& run : runs) {
    ++per_series[run.identity().model() + "/" + run.identity().workload()];
    EXPECT_EQ(run.identity().job(), "import");
  }
  EXPECT_EQ(per_series["mlp/cpu"], 2);
  EXPECT_EQ(per_series["conv/cpu"], 1);
  EXPECT_EQ(per_series["cuda/basic"], 1);

  auto again = Import({});
  EXPECT_THAT(again.out, HasSubstr("7 captures: 0 stored, 5 already stored, 2 invalid"));
  EXPECT_EQ(StoredRuns().size(), 4u);
}

TEST_F(ImportTest, TakesTheTimeFromThePathAndFlagsOverTheLayout) {
  auto result = Import({"--model", "archived"});
  ASSERT_NE(result.exit_code, -1) << result.err;
  bool saw_compact_time = false;
  for (const auto& run : StoredRuns()) {
    EXPECT_EQ(run.identity().model(), "archived");
    if (run.identity().workload() == "cpu" && run.started_at().seconds() == 1795399200) {
      saw_compact_time = true;  // conv/cpu/20261123T0200.json = 2026-11-23T02:00:00Z
    }
  }
  EXPECT_TRUE(saw_compact_time) << result.out;
}

TEST_F(ImportTest, ADryRunListsWhatItWouldStoreWithoutACollector) {
  auto result = devtime::testing::RunCommand({devtime::testing::BinaryPath("devtimectl"),
                                              "--collector", "127.0.0.1:1", "import",
                                              archive_.string(), copy_.string(), "--dry-run"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("would store"));
  EXPECT_THAT(result.out, HasSubstr("7 captures: 4 to store, 1 repeated, 2 invalid"));
  EXPECT_TRUE(StoredRuns().empty());
}

TEST_F(ImportTest, AModelFolderWhoseDatesWouldBecomeWorkloadsIsRefusedSayingWhy) {
  // archive/mlp holds cpu/2026-11-20: read as model/workload/when, a date is the workload.
  auto refused = Ctl({"import", (archive_ / "mlp").string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("makes '2026-11-20' the workload, but it reads as a date"));
  EXPECT_THAT(refused.err, HasSubstr("--layout workload/when"));
  EXPECT_TRUE(StoredRuns().empty());

  // Said the way the folder is laid out, it imports with the dates as times.
  auto imported =
      Ctl({"import", (archive_ / "mlp").string(), "--model", "mlp", "--layout", "workload/when"});
  EXPECT_EQ(imported.exit_code, 1) << imported.out << imported.err;  // 2026-11-25 is broken
  EXPECT_THAT(imported.out, HasSubstr("3 captures: 2 stored"));
  for (const auto& run : StoredRuns()) EXPECT_EQ(run.identity().workload(), "cpu");
}

TEST_F(ImportTest, ATimeTakenFromTheFilesIsAWarning) {
  // One capture as the root: no date in its path, and its run.json has no started_at.
  auto result = devtime::testing::RunCommand(
      {devtime::testing::BinaryPath("devtimectl"), "--collector", "127.0.0.1:1", "import",
       (archive_ / "mlp/cpu/2026-11-20").string(), "--model", "mlp", "--dry-run"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("(warning: time from the file's modification time"));
  EXPECT_THAT(result.out, HasSubstr("--at sets one"));
}

TEST_F(ImportTest, AFolderThatDoesNotExistIsBadUsage) {
  auto result = Ctl({"import", (archive_ / "nope").string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("nope"));
}

}  // namespace
}  // namespace devtime
