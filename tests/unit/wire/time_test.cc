#include "proto/wire/time.h"

#include <gtest/gtest.h>

namespace devtime::wire {
namespace {

using std::chrono::hours;

Clock::time_point At(long long seconds) { return Clock::time_point(std::chrono::seconds(seconds)); }

TEST(ParseTimeOrAge, AcceptsRfc3339InUtcAndWithOffset) {
  auto utc = ParseTimeOrAge("2026-11-29T02:00:00Z", Clock::now());
  ASSERT_TRUE(utc.ok()) << utc.status();
  EXPECT_EQ(*utc, At(1795917600));
  auto offset = ParseTimeOrAge("2026-11-29T03:00:00+01:00", Clock::now());
  ASSERT_TRUE(offset.ok()) << offset.status();
  EXPECT_EQ(*offset, *utc);
}

TEST(ParseTimeOrAge, ReadsBareDateAsMidnightUtc) {
  auto date = ParseTimeOrAge("2026-11-29", Clock::now());
  ASSERT_TRUE(date.ok()) << date.status();
  EXPECT_EQ(*date, At(1795910400));
}

TEST(ParseTimeOrAge, ReadsAgesRelativeToNow) {
  auto now = At(1'800'000'000);
  EXPECT_EQ(*ParseTimeOrAge("7d", now), now - hours(24 * 7));
  EXPECT_EQ(*ParseTimeOrAge("12h", now), now - hours(12));
  EXPECT_EQ(*ParseTimeOrAge("30m", now), now - std::chrono::minutes(30));
}

TEST(ParseTimeOrAge, RejectsGarbageWithAHint) {
  for (const char* bad : {"yesterday", "7x", "-3d", "", "2026-13-45"}) {
    auto parsed = ParseTimeOrAge(bad, Clock::now());
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(std::string(parsed.status().message()).find("RFC 3339"), std::string::npos);
    }
  }
}

TEST(FormatTime, PrintsWholeSecondsUtc) {
  EXPECT_EQ(FormatTime(ToTimestamp(At(1795917600) + std::chrono::milliseconds(250))),
            "2026-11-29T02:00:00Z");
}

}  // namespace
}  // namespace devtime::wire
