#include "services/ctl/import_scan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "absl/time/time.h"
#include "services/ctl/progress.h"
#include "tests/support/files.h"

namespace devtime::ctl {
namespace {

namespace fs = std::filesystem;
using devtime::testing::WriteFile;

std::string Iso(std::chrono::system_clock::time_point t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromChrono(t), absl::UTCTimeZone());
}

class ImportScanTest : public ::testing::Test {
 protected:
  ImportScanTest() {
    root_ = fs::temp_directory_path() /
            ("devtime-import-scan-" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~ImportScanTest() override { fs::remove_all(root_); }

  // A harness-like capture folder: a trace and the files around it.
  fs::path HarnessOutput(const std::string& relative, const std::string& trace = "[]") {
    const fs::path dir = root_ / relative;
    fs::create_directories(dir);
    WriteFile(dir.string(), "trace.json", trace);
    WriteFile(dir.string(), "environment.json", "{}");
    return dir;
  }

  ImportLayout Layout(const std::string& text) {
    auto layout = ParseImportLayout(text);
    EXPECT_TRUE(layout.ok()) << layout.status();
    return layout.ok() ? *layout : ImportLayout{};
  }

  fs::path root_;
};

TEST(ParsePathTime, ReadsDatesTimesAndTheCompactFormsArchiveScriptsWrite) {
  EXPECT_EQ(Iso(*ParsePathTime("2026-11-24")), "2026-11-24T00:00:00Z");
  EXPECT_EQ(Iso(*ParsePathTime("2026-11-24T02:03:04Z")), "2026-11-24T02:03:04Z");
  EXPECT_EQ(Iso(*ParsePathTime("20261124")), "2026-11-24T00:00:00Z");
  EXPECT_EQ(Iso(*ParsePathTime("20261124T0203")), "2026-11-24T02:03:00Z");
  EXPECT_EQ(Iso(*ParsePathTime("20261124T020304")), "2026-11-24T02:03:04Z");
  EXPECT_EQ(Iso(*ParsePathTime("20261124-020304")), "2026-11-24T02:03:04Z");
  EXPECT_FALSE(ParsePathTime("fused"));
  EXPECT_FALSE(ParsePathTime("run-001"));
  EXPECT_FALSE(ParsePathTime("2026-13-40"));
  EXPECT_FALSE(ParsePathTime("12345678901"));
  EXPECT_FALSE(ParsePathTime("20261340"));
  EXPECT_FALSE(ParsePathTime("20261124T2599"));
}

TEST(ParseImportLayout, NamesTheUnknownOrRepeatedField) {
  EXPECT_EQ(ParseImportLayout("model/workload/when")->fields.size(), 3u);
  EXPECT_EQ(ParseImportLayout("-/workload/when")->fields.front(), ImportLayout::Field::kSkip);
  auto unknown = ParseImportLayout("model/night");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'night'"), std::string::npos);
  auto twice = ParseImportLayout("model/model");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("twice"), std::string::npos);
}

TEST_F(ImportScanTest, FindsEachCaptureOnceWithTheLayoutsLabels) {
  HarnessOutput("rmsnorm/fused/2026-11-24");
  HarnessOutput("rmsnorm/fused/2026-11-25");
  fs::create_directories(root_ / "rmsnorm/naive");
  WriteFile((root_ / "rmsnorm/naive").string(), "20261124T0200.json.gz", "x");
  WriteFile((root_ / "rmsnorm/naive").string(), "notes.txt", "not a trace");
  // A folder a capture keeps inside itself is not a capture of its own.
  HarnessOutput("rmsnorm/fused/2026-11-25/inner");

  auto captures = FindCaptures({root_}, Layout("model/workload/when"));
  ASSERT_TRUE(captures.ok()) << captures.status();
  ASSERT_EQ(captures->size(), 3u);
  EXPECT_EQ((*captures)[0].path, root_ / "rmsnorm/fused/2026-11-24");
  EXPECT_EQ((*captures)[0].model, "rmsnorm");
  EXPECT_EQ((*captures)[0].workload, "fused");
  EXPECT_EQ(Iso(*(*captures)[0].when), "2026-11-24T00:00:00Z");
  EXPECT_EQ((*captures)[2].path, root_ / "rmsnorm/naive/20261124T0200.json.gz");
  EXPECT_EQ((*captures)[2].workload, "naive");
  EXPECT_EQ(Iso(*(*captures)[2].when), "2026-11-24T02:00:00Z");
}

TEST_F(ImportScanTest, AShortPathLeavesTheRestToFlagsAndARootCaptureCountsAsOne) {
  const fs::path one = HarnessOutput("only");
  auto captures = FindCaptures({one}, Layout("model/workload/when"));
  ASSERT_TRUE(captures.ok()) << captures.status();
  ASSERT_EQ(captures->size(), 1u);
  EXPECT_EQ((*captures)[0].model, "");
  EXPECT_FALSE((*captures)[0].when);
}

TEST_F(ImportScanTest, AComponentThatIsNotATimeWhereTheLayoutWantsOneIsNamed) {
  HarnessOutput("rmsnorm/fused/latest");
  auto captures = FindCaptures({root_}, Layout("model/workload/when"));
  ASSERT_FALSE(captures.ok());
  EXPECT_NE(captures.status().message().find("'latest'"), std::string::npos);
  EXPECT_NE(captures.status().message().find("--layout"), std::string::npos);
}

TEST_F(ImportScanTest, ADateReadAsAModelOrWorkloadIsRefusedUnlessAFlagSetsIt) {
  HarnessOutput("fused/2026-11-24");  // a model's folder imported as if it were the root
  auto captures = FindCaptures({root_}, Layout("model/workload/when"));
  ASSERT_TRUE(captures.ok()) << captures.status();
  ASSERT_EQ(captures->size(), 1u);
  EXPECT_EQ((*captures)[0].workload, "2026-11-24");
  absl::Status refused = CheckLabels(*captures, "model/workload/when", false, false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("fused/2026-11-24: --layout model/workload/when makes "
                                   "'2026-11-24' the workload, but it reads as a date"),
            std::string::npos)
      << refused.message();
  EXPECT_TRUE(CheckLabels(*captures, "model/workload/when", false, true).ok());

  auto as_model = FindCaptures({root_ / "fused"}, Layout("model/when"));
  ASSERT_TRUE(as_model.ok()) << as_model.status();
  EXPECT_NE(CheckLabels(*as_model, "model/when", false, false).message().find("the model"),
            std::string::npos);
  // Names that merely hold digits are names.
  HarnessOutput("rmsnorm/bs1024/2026-11-24");
  auto good = FindCaptures({root_ / "rmsnorm"}, Layout("workload/when"));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(CheckLabels(*good, "workload/when", true, false).ok());
}

TEST_F(ImportScanTest, AMissingRootIsNotFound) {
  auto captures = FindCaptures({root_ / "nope"}, Layout("model"));
  EXPECT_EQ(captures.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ImportScanTest, ContentRunIdFollowsTheBytesAndWhatTheyAreStoredAs) {
  const fs::path a = HarnessOutput("a", "[1]");
  const fs::path b = HarnessOutput("b", "[1]");
  const fs::path c = HarnessOutput("c", "[2]");
  const auto night = *ParsePathTime("2026-11-24"), next = *ParsePathTime("2026-11-25");
  auto id_a = ContentRunId(a, "m", "w", night);
  ASSERT_TRUE(id_a.ok()) << id_a.status();
  EXPECT_EQ(*id_a, *ContentRunId(b, "m", "w", night));  // same content elsewhere: the same run
  EXPECT_NE(*id_a, *ContentRunId(c, "m", "w", night));
  EXPECT_NE(*id_a, *ContentRunId(a, "m", "other", night));
  EXPECT_NE(*id_a, *ContentRunId(a, "m", "w", next));
  EXPECT_NE(*ContentRunId(a, "mw", "", night), *ContentRunId(a, "m", "w", night));
  ASSERT_EQ(id_a->size(), 36u);
  EXPECT_EQ((*id_a)[14], '8');                                          // RFC 9562 version 8
  EXPECT_NE(std::string("89ab").find((*id_a)[19]), std::string::npos);  // variant 10
}

TEST(FormatProgress, ShowsBarCountRateAndTimeLeft) {
  EXPECT_EQ(FormatProgress(0, 4, std::chrono::seconds(0), 8), "[>       ] 0/4");
  EXPECT_EQ(FormatProgress(2, 4, std::chrono::seconds(1), 8), "[====>   ] 2/4  2.0/s  ETA 0:01");
  EXPECT_EQ(FormatProgress(4, 4, std::chrono::seconds(2), 8), "[========] 4/4  2.0/s  ETA 0:00");
}

// What a Progress writes for `total` items done one by one, then Finish().
std::string ProgressOf(std::size_t total, bool terminal) {
  std::ostringstream out;
  Progress progress(out, total, terminal, "importing");
  for (std::size_t i = 0; i < total; ++i) progress.Advance();
  progress.Finish();
  return out.str();
}

TEST(Progress, WritesAPlainLineAtEachTenthWhenNotOnATerminal) {
  const std::string text = ProgressOf(20, /*terminal=*/false);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10);
  EXPECT_NE(text.find("importing [====="), std::string::npos);
  EXPECT_NE(text.find("20/20"), std::string::npos);
}

TEST(Progress, RedrawsOneLineInPlaceOnATerminal) {
  const std::string text = ProgressOf(3, /*terminal=*/true);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace devtime::ctl
