// One lost fusion, one percent: compare, check (text, markdown, junit), regressions list and
// show, the regression's stored summary (the alert's summary annotation) and the report (text
// and HTML) all print the change the collector stored, because they compute it by one
// definition (proto/wire/change.h): each run's time per step is its series value, the change
// is candidate / baseline - 1, written "+483.9 %".
//
// The fused nights alternate 0.3 % either side of 403.3 µs and the last good night sits at
// 403.3 µs, the median of the eleven: so the detector's baseline (the median of the runs
// since the last change point) is the last good run, and compare of the last good and the
// first bad run must print exactly the stored figure.
#include "proto/wire/change.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <random>

#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/files.h"
#include "tests/support/nightly_runs.h"
#include "tests/support/process.h"

namespace devtime {
namespace {

using ::testing::HasSubstr;

constexpr int kFusedNights = 11;  // then one naive night, the first bad

// Night n of the history, n days before yesterday's last one (the report lists recent runs).
v1::RunSummary Night(int n, double scale, bool fused, std::mt19937& rng) {
  return devtime::testing::NightlyRmsNormRun(
      {.n = n,
       .started = time(nullptr) - (kFusedNights + 2 - n) * 86400,
       .ops = fused ? devtime::testing::kFusedRmsNorm : devtime::testing::kNaiveRmsNorm,
       .compiler = fused ? "2.21.18" : "2.22.4",
       .host = "trn-change",
       .noise = 0.0,
       .scale = scale},
      rng);
}

class ChangeTest : public devtime::testing::CollectorFixture {
 protected:
  ChangeTest() : dir_(devtime::testing::MakeTempDir("change")) {}
  std::string dir_;
};

TEST_F(ChangeTest, ALostFusionIsTheSamePercentInEveryCommandAndTheReport) {
  std::mt19937 rng(15);
  for (int n = 1; n < kFusedNights; ++n) UploadAnalysed(Night(n, n % 2 ? 0.997 : 1.003, true, rng));
  const v1::RunSummary last_good = Night(kFusedNights, 1.0, true, rng);  // the median
  const v1::RunSummary first_bad = Night(kFusedNights + 1, 1.0, false, rng);
  UploadAnalysed(last_good);
  UploadAnalysed(first_bad);
  const std::string good = last_good.identity().run_id(), bad = first_bad.identity().run_id();

  // The collector's stored figure: the first bad run against the detector's baseline.
  const nlohmann::json regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u) << regressions.dump();
  const nlohmann::json& r = regressions[0];
  EXPECT_EQ(r.value("last_good_run_id", ""), good);
  EXPECT_EQ(r.value("first_bad_run_id", ""), bad);
  const std::string percent = wire::FormatFraction(r.value("relative_change", 0.0));
  ASSERT_EQ(percent, "+483.9 %");  // 403.3 µs -> 2,354.9 µs per step
  EXPECT_THAT(r.value("summary", ""),
              HasSubstr("device time per step +483.9 % (403.3 µs -> 2.355 ms)"));
  const std::string id = r.value("id", "");

  const auto list = Ctl({"regressions", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(percent)) << list.out;
  const auto show = Ctl({"regressions", "show", id});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("403.3 µs -> 2.355 ms per step (" + percent + ",")) << show.out;
  EXPECT_THAT(show.out, HasSubstr("against the median of 11 baseline runs")) << show.out;

  const auto compare = Ctl({"compare", good, bad});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out,
              HasSubstr("device time per step: 403.3 µs -> 2.355 ms (" + percent + ")"))
      << compare.out;
  for (const char* format : {"text", "markdown", "junit"}) {
    const auto check = Ctl({"check", "--run", bad, "--against", good, "--format", format});
    EXPECT_EQ(check.exit_code, 1) << format << ": " << check.out << check.err;
    EXPECT_THAT(check.out, HasSubstr(percent)) << format << ": " << check.out;
  }

  // The report: the latest run (the first bad) against the last good run of the regression,
  // and the regression's own row.
  const auto text = Ctl({"report", "--model", "rmsnorm"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("last good run of regression " + id)) << text.out;
  const std::string html_path = dir_ + "/report.html";
  const auto html = Ctl({"report", "--model", "rmsnorm", "--html", html_path});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  for (const std::string& page : {text.out, devtime::testing::ReadFile(html_path)}) {
    std::size_t count = 0;
    for (auto at = page.find(percent); at != std::string::npos; at = page.find(percent, at + 1)) {
      ++count;
    }
    EXPECT_GE(count, 2u) << "the series' change and the regression's row\n" << page;
  }
}

}  // namespace
}  // namespace devtime
