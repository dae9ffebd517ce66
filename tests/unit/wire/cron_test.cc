#include "proto/wire/cron.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/civil_time.h"

namespace devtime::wire {
namespace {

using ::testing::HasSubstr;

absl::CivilMinute M(int y, int mo, int d, int h, int mi) {
  return absl::CivilMinute(y, mo, d, h, mi);
}

absl::TimeZone Zone(const std::string& name) { return *LoadTimeZone(name); }

absl::Time At(const absl::CivilMinute& minute, const std::string& zone = "UTC") {
  return absl::FromCivil(minute, Zone(zone));
}

absl::CivilMinute NextCivil(const std::string& expression, absl::CivilMinute after,
                            const std::string& zone = "UTC") {
  auto schedule = CronSchedule::Parse(expression);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  auto next = schedule->Next(At(after, zone), Zone(zone));
  EXPECT_TRUE(next.has_value());
  return absl::ToCivilMinute(*next, Zone(zone));
}

TEST(CronSchedule, NightlyAtTwoFiresTheNextNightStrictlyAfter) {
  EXPECT_EQ(NextCivil("0 2 * * *", M(2026, 11, 29, 1, 59)), absl::CivilMinute(2026, 11, 29, 2, 0));
  EXPECT_EQ(NextCivil("0 2 * * *", M(2026, 11, 29, 2, 0)), absl::CivilMinute(2026, 11, 30, 2, 0));
}

TEST(CronSchedule, StepsRangesListsAndNames) {
  EXPECT_EQ(NextCivil("*/15 * * * *", M(2026, 11, 29, 10, 7)),
            absl::CivilMinute(2026, 11, 29, 10, 15));
  EXPECT_EQ(NextCivil("0 9-17/4 * * MON-FRI", M(2026, 11, 28, 12, 0)),  // Saturday
            absl::CivilMinute(2026, 11, 30, 9, 0));
  EXPECT_EQ(NextCivil("30 1 1,15 * *", M(2026, 11, 2, 0, 0)),
            absl::CivilMinute(2026, 11, 15, 1, 30));
  EXPECT_EQ(NextCivil("0 0 * FEB sun", M(2026, 11, 29, 0, 0)), absl::CivilMinute(2027, 2, 7, 0, 0));
  EXPECT_EQ(NextCivil("0 0 * * 7", M(2026, 11, 26, 0, 0)), absl::CivilMinute(2026, 11, 29, 0, 0));
}

TEST(CronSchedule, BothDayFieldsRestrictedMeansEither) {
  // The 1st of the month OR any Monday, as in Vixie cron.
  EXPECT_EQ(NextCivil("0 3 1 * 1", M(2026, 11, 24, 0, 0)), absl::CivilMinute(2026, 11, 30, 3, 0));
  EXPECT_EQ(NextCivil("0 3 1 * 1", M(2026, 11, 30, 4, 0)), absl::CivilMinute(2026, 12, 1, 3, 0));
}

TEST(CronSchedule, MacrosAndLeapDays) {
  EXPECT_EQ(NextCivil("@daily", M(2026, 11, 29, 10, 0)), absl::CivilMinute(2026, 11, 30, 0, 0));
  EXPECT_EQ(NextCivil("@weekly", M(2026, 11, 29, 10, 0)), absl::CivilMinute(2026, 12, 6, 0, 0));
  EXPECT_EQ(NextCivil("0 0 29 2 *", M(2026, 11, 29, 0, 0)), absl::CivilMinute(2028, 2, 29, 0, 0));
}

TEST(CronSchedule, EvaluatesInTheJobsTimeZone) {
  auto schedule = *CronSchedule::Parse("0 2 * * *");
  auto next = *schedule.Next(At(M(2026, 11, 29, 0, 0)), Zone("Europe/Berlin"));
  EXPECT_EQ(absl::ToCivilMinute(next, absl::UTCTimeZone()), absl::CivilMinute(2026, 11, 29, 1, 0));
}

TEST(CronSchedule, SpringForwardGapFiresAfterTheTransition) {
  // 2027-03-28 02:30 does not exist in Berlin (clocks jump 02:00 -> 03:00): fire at 03:00.
  auto schedule = *CronSchedule::Parse("30 2 * * *");
  auto next = *schedule.Next(At(M(2027, 3, 28, 0, 0), "Europe/Berlin"), Zone("Europe/Berlin"));
  EXPECT_EQ(absl::ToCivilMinute(next, Zone("Europe/Berlin")), absl::CivilMinute(2027, 3, 28, 3, 0));
}

TEST(CronSchedule, RejectsBadExpressionsNamingTheField) {
  struct Case {
    const char* expression;
    const char* message;
  };
  for (Case c :
       {Case{"0 2 * *", "has 4 fields"}, Case{"61 * * * *", "minute: '61' is out of range"},
        Case{"0 24 * * *", "hour: '24'"}, Case{"0 2 * * FRY", "day-of-week: 'FRY'"},
        Case{"0 2 * JANUARY *", "month: 'JANUARY'"}, Case{"*/0 * * * *", "bad step"},
        Case{"0 5-1 * * *", "runs backwards"}, Case{"0 0 30 2 *", "never fires"},
        Case{"0 2 1,,2 * *", "empty list item"}}) {
    auto parsed = CronSchedule::Parse(c.expression);
    ASSERT_FALSE(parsed.ok()) << c.expression;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message)) << c.expression;
  }
}

TEST(LoadTimeZone, KnowsIanaNamesAndRejectsOthers) {
  EXPECT_TRUE(LoadTimeZone("America/Los_Angeles").ok());
  EXPECT_TRUE(LoadTimeZone("UTC").ok());
  auto bad = LoadTimeZone("Mars/Olympus_Mons");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("Mars/Olympus_Mons"));
}

}  // namespace
}  // namespace devtime::wire
