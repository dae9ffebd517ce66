// Run ids people can type (issue 15 item 3): every devtimectl command that takes a run
// accepts a unique prefix of its id (at least 8 hex digits, as `compare` prints them) or
// `latest`, resolved by the collector (ResolveRun); `--format ids` lists one id per line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <ctime>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/nightly_runs.h"
#include "tests/support/sample_runs.h"

namespace devtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Two fused nights, as the quickstart's demo names them, and two naive ones whose ids share
// their first 8 hex digits, so that prefix names both.
const std::string kFusedBefore = "08f66244-c1be-511b-a153-caf06a56c0de";
const std::string kFusedAfter = "b87ae65c-1586-5981-9b67-2f63345e092d";
const std::string kNaiveOld = "5eed0001-aaaa-4000-8000-000000000001";
const std::string kNaiveNew = "5eed0001-bbbb-4000-8000-000000000002";

constexpr long long kNight = 1795917600;  // 2026-11-28T02:00:00Z
constexpr long long kDay = 86400;

class RunRefsTest : public devtime::testing::CollectorFixture {
 protected:
  // The naive runs on the first two nights, the fused ones on the next two: the newest run
  // overall is kFusedAfter, the newest naive one kNaiveNew.
  void SetUp() override {
    auto admin = AdminStub();
    for (const auto& [id, workload, night] :
         std::vector<std::tuple<std::string, std::string, int>>{{kNaiveOld, "naive", 0},
                                                                {kNaiveNew, "naive", 1},
                                                                {kFusedBefore, "fused", 2},
                                                                {kFusedAfter, "fused", 3}}) {
      auto run = devtime::testing::NaiveRmsNormRun(id, workload, kNight + night * kDay);
      if (workload == "fused") devtime::testing::FuseRmsNormOps(run);
      auto status = devtime::testing::UploadRun(*admin, run);
      ASSERT_TRUE(status.ok()) << status.error_message();
    }
  }

  // The "run" line of `runs show REF [extra]`: the id it resolved to, or the error.
  std::string ShownRunId(const std::vector<std::string>& args) {
    std::vector<std::string> command = {"runs", "show"};
    command.insert(command.end(), args.begin(), args.end());
    auto shown = Ctl(command);
    if (shown.exit_code != 0) return "exit " + std::to_string(shown.exit_code) + ": " + shown.err;
    auto line = shown.out.substr(0, shown.out.find('\n'));
    return line.substr(line.find_last_of(' ') + 1);
  }
};

TEST_F(RunRefsTest, UniquePrefixNamesItsRun) {
  EXPECT_EQ(ShownRunId({"08f66244"}), kFusedBefore);
  EXPECT_EQ(ShownRunId({"b87ae65c-15"}), kFusedAfter);
  // A whole id is taken as it is, without a lookup first.
  EXPECT_EQ(ShownRunId({kFusedAfter}), kFusedAfter);
}

TEST_F(RunRefsTest, AmbiguousPrefixListsTheRunsItNames) {
  auto shown = Ctl({"runs", "show", "5eed0001"});
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_THAT(shown.err, AllOf(HasSubstr("'5eed0001' names 2 runs"), HasSubstr("type more"),
                               HasSubstr(kNaiveOld), HasSubstr(kNaiveNew)));
  // One more digit tells them apart.
  EXPECT_EQ(ShownRunId({"5eed0001-b"}), kNaiveNew);
  // So does the series: only one of them is a fused run.
  EXPECT_THAT(ShownRunId({"5eed0001", "--workload", "fused"}),
              HasSubstr("no run of workload fused has an id starting with '5eed0001'"));
}

TEST_F(RunRefsTest, PrefixOfManyRunsListsTheFirstFive) {
  auto admin = AdminStub();
  for (int n = 1; n <= 6; ++n) {  // 00000000-0000-4000-8000-00000000000n
    auto status = devtime::testing::UploadRun(
        *admin, devtime::testing::NaiveRmsNormRun(devtime::testing::TestRunId(n)));
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  auto shown = Ctl({"runs", "show", "00000000"});
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_THAT(shown.err, AllOf(HasSubstr("names more than 5 runs"),
                               HasSubstr(devtime::testing::TestRunId(5)), HasSubstr("...")));
  EXPECT_THAT(shown.err, Not(HasSubstr(devtime::testing::TestRunId(6))));
}

TEST_F(RunRefsTest, UnknownPrefixIsNotFoundNamingThePrefix) {
  auto shown = Ctl({"runs", "show", "deadbeef"});
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_THAT(shown.err, AllOf(HasSubstr("NOT_FOUND"), HasSubstr("'deadbeef'")));
}

TEST_F(RunRefsTest, ShortOrMalformedPrefixIsRefusedSayingWhatToType) {
  auto shown = Ctl({"runs", "show", "08f662"});
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_THAT(shown.err, AllOf(HasSubstr("INVALID_ARGUMENT"),
                               HasSubstr("a prefix of 6 hex digits is too short"),
                               HasSubstr("at least 8 hex digits"), HasSubstr("latest")));
  // A prefix without the UUID's dashes is not one.
  EXPECT_THAT(ShownRunId({"08f66244c1be"}), HasSubstr("not the start of a UUID"));
}

TEST_F(RunRefsTest, CapitalsAreTheSameHexDigits) {
  EXPECT_EQ(ShownRunId({"08F66244"}), kFusedBefore);
  std::string whole = kFusedAfter;
  for (char& c : whole) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(ShownRunId({whole}), kFusedAfter);
  auto compare = Ctl({"compare", "08F66244", "B87AE65C"});
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
}

TEST_F(RunRefsTest, LatestIsTheNewestRunOfTheChosenSeries) {
  EXPECT_EQ(ShownRunId({"latest"}), kFusedAfter);
  EXPECT_EQ(ShownRunId({"latest", "--workload", "naive"}), kNaiveNew);
  EXPECT_EQ(ShownRunId({"latest", "--model", "rmsnorm", "--workload", "fused"}), kFusedAfter);
  EXPECT_THAT(ShownRunId({"latest", "--model", "llama"}),
              AllOf(HasSubstr("NOT_FOUND"), HasSubstr("no run of model llama is stored")));
}

TEST_F(RunRefsTest, CompareAndCheckTakePrefixesAndLatest) {
  auto compare = Ctl({"compare", "08f66244", "b87ae65c"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, AllOf(HasSubstr("before rmsnorm/fused"), HasSubstr("(08f66244)"),
                                 HasSubstr("after  rmsnorm/fused"), HasSubstr("(b87ae65c)")));

  // The newest naive run against the older one: the same ops, so no regression.
  auto check = Ctl({"check", "--run", "latest", "--against", "5eed0001-a", "--workload", "naive"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, AllOf(HasSubstr("OK: rmsnorm/naive"), HasSubstr("(5eed0001)")));

  auto refused = Ctl({"compare", "5eed0001", "latest"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("names 2 runs"));
}

TEST_F(RunRefsTest, FormatIdsListsOneRunIdPerLineNewestFirst) {
  auto ids = Ctl({"runs", "list", "--format", "ids"});
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out,
            kFusedAfter + "\n" + kFusedBefore + "\n" + kNaiveNew + "\n" + kNaiveOld + "\n");

  auto naive = Ctl({"runs", "list", "--workload", "naive", "--limit", "1", "--format", "ids"});
  ASSERT_EQ(naive.exit_code, 0) << naive.err;
  EXPECT_EQ(naive.out, kNaiveNew + "\n");

  auto none = Ctl({"runs", "list", "--model", "llama", "--format", "IDS"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "");  // nothing for a script to mistake for an id

  // Only the list commands print ids.
  EXPECT_NE(Ctl({"runs", "show", "latest", "--format", "ids"}).exit_code, 0);
}

using RegressionIdsTest = devtime::testing::CollectorFixture;

TEST_F(RegressionIdsTest, FormatIdsListsOneRegressionIdPerLine) {
  // Ten fused nights, then the fusion lost on two: the detector opens a regression.
  std::mt19937 rng(15);
  int64_t now = time(nullptr);
  for (int n = 1; n <= 12; ++n) {
    UploadAnalysed(devtime::testing::NightlyRmsNormRun(
        {.n = n,
         .started = now - (20 - n) * kDay,
         .ops = n <= 10 ? devtime::testing::kFusedRmsNorm : devtime::testing::kNaiveRmsNorm,
         .compiler = n <= 10 ? "2.21.18" : "2.22.4",
         .host = "trn1-a"},
        rng));
  }
  auto listed = ListRegressions();
  ASSERT_FALSE(listed.empty()) << "the detector opened no regression";
  std::string expected;
  for (const auto& r : listed) expected += r["id"].get<std::string>() + "\n";

  auto ids = Ctl({"regressions", "list", "--all", "--format", "ids"});
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out, expected);
}

}  // namespace
}  // namespace devtime
