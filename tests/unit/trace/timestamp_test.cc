#include "agents/trace/io/timestamp.h"

#include <optional>
#include <string>
#include <string_view>

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

// ScanMicrosToNanos reads `token` followed by `after` (a byte that ends a number token, or none)
// and `pad` more bytes: the value, or nullopt when it declines. With 32 bytes or more from the
// token on it takes its 32-byte path, else the byte-wise one.
std::optional<int64_t> Scan(std::string_view token, std::string_view after = ",", size_t pad = 0) {
  const std::string text = std::string(token) + std::string(after) + std::string(pad, 'x');
  int64_t ns = -1;
  const char* end = ScanMicrosToNanos(text.data(), text.data() + text.size(), &ns);
  if (end == nullptr) return std::nullopt;
  EXPECT_EQ(end, text.data() + token.size()) << token;  // the whole token, nothing after it
  return ns;
}

TEST(TraceTimestamp, ScansKinetoTimesInOnePassAsParseDoes) {
  for (const char* token : {"1212075549008.000", "7933", "0", "57.798", "7.25", "1.23456",
                            "1712195495511766.201", "1712195495511766", "9223372036854775",
                            "00012.5", "12345678.9", "123456789.12", "1.000000000000000000001",
                            "1234567890123456.123456789012345", "12.00000000000000000000009"}) {
    ASSERT_TRUE(Scan(token).has_value()) << token;
    EXPECT_EQ(Scan(token), ParseMicrosToNanos(token)) << token;
    for (const char* after : {"}", " ", "\"", "]"}) {
      for (size_t pad : {0, 8, 40}) EXPECT_EQ(Scan(token, after, pad), Scan(token)) << token;
    }
  }
}

TEST(TraceTimestamp, ScanDeclinesWhatParseDecidesOtherwise) {
  // A sign, an exponent, a bare '.', 17+ whole digits, past int64 ns, junk that continues the
  // number token, and a token that runs to the end of the window: the caller reads these
  // generically (ParseMicrosToNanos accepts some: -5.5, 1.5e3, 12345678901234567).
  for (const char* token :
       {"-5.5", "1.5e3", "1E3", "12.", ".5", "12345678901234567", "99999999999999999999",
        "9223372036854776", "1-2", "1.2.3", "1+", "1.5e", "12345678901234567890123456789012345",
        "1.2345678901234567890123456789012e5"}) {
    for (size_t pad : {0, 8, 40}) EXPECT_FALSE(Scan(token, ",", pad).has_value()) << token;
  }
  EXPECT_FALSE(Scan("1212075549008.000", "").has_value());
  EXPECT_FALSE(Scan("", ",").has_value());
}

}  // namespace
}  // namespace devtime::trace
