#include "agents/trace/io/timestamp.h"

#include "gtest/gtest.h"

namespace devtime::trace {
namespace {

TEST(TraceTimestamp, ParsesIntegerMicroseconds) {
  EXPECT_EQ(ParseMicrosToNanos("7933"), 7933000);
  EXPECT_EQ(ParseMicrosToNanos("1708722576381804"), 1708722576381804000);
  EXPECT_EQ(ParseMicrosToNanos("0"), 0);
}

TEST(TraceTimestamp, ParsesThreeDecimalsExactlyWithoutDoubleRounding) {
  // 1712195495511766.201 is not representable as a double (ulp 0.25 µs).
  EXPECT_EQ(ParseMicrosToNanos("1712195495511766.201"), 1712195495511766201);
  EXPECT_EQ(ParseMicrosToNanos("1212075548353.304"), 1212075548353304);
  EXPECT_EQ(ParseMicrosToNanos("57.798"), 57798);
}

TEST(TraceTimestamp, PadsShortFractions) {
  EXPECT_EQ(ParseMicrosToNanos("1712195495511766.2"), 1712195495511766200);
  EXPECT_EQ(ParseMicrosToNanos("7.25"), 7250);
}

TEST(TraceTimestamp, TruncatesBelowOneNanosecond) {
  EXPECT_EQ(ParseMicrosToNanos("1.23456"), 1234);
}

TEST(TraceTimestamp, AcceptsNegativeAndTrailingWhitespace) {
  EXPECT_EQ(ParseMicrosToNanos("-5.5"), -5500);
  EXPECT_EQ(ParseMicrosToNanos("12 \n"), 12000);
}

TEST(TraceTimestamp, AcceptsExponentFormViaDouble) {
  EXPECT_EQ(ParseMicrosToNanos("1.5e3"), 1500000);
}

TEST(TraceTimestamp, RejectsNonNumbersAndOverflow) {
  for (const char* text : {"", "\"12\"", "12.", ".5", "1a", "null", "99999999999999999999",
                           "9223372036854776" /* µs that overflow int64 ns */}) {
    EXPECT_FALSE(ParseMicrosToNanos(text)) << text;
  }
}

}  // namespace
}  // namespace devtime::trace
