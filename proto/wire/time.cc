#include "proto/wire/time.h"

#include <charconv>

#include "google/protobuf/util/time_util.h"

namespace devtime::wire {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp ToTimestamp(Clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return TimeUtil::NanosecondsToTimestamp(ns);
}

Clock::time_point FromTimestamp(const google::protobuf::Timestamp& t) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(TimeUtil::TimestampToNanoseconds(t))));
}

std::string FormatTime(const google::protobuf::Timestamp& t) {
  google::protobuf::Timestamp whole;
  whole.set_seconds(t.seconds());
  return TimeUtil::ToString(whole);
}

namespace {

absl::StatusOr<Clock::duration> ParseAge(const std::string& text) {
  long long amount = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  if (ec != std::errc() || end + 1 != text.data() + text.size() || amount < 0) {
    return absl::InvalidArgumentError("");
  }
  switch (*end) {
    case 'd':
      return std::chrono::hours(24 * amount);
    case 'h':
      return std::chrono::hours(amount);
    case 'm':
      return std::chrono::minutes(amount);
    case 's':
      return std::chrono::seconds(amount);
    default:
      return absl::InvalidArgumentError("");
  }
}

}  // namespace

absl::StatusOr<Clock::time_point> ParseTimeOrAge(const std::string& text, Clock::time_point now) {
  if (auto age = ParseAge(text); age.ok()) return now - *age;
  std::string rfc3339 = text;
  if (text.size() == 10) rfc3339 += "T00:00:00Z";  // a bare date: midnight UTC
  google::protobuf::Timestamp ts;
  if (!TimeUtil::FromString(rfc3339, &ts)) {
    return absl::InvalidArgumentError("'" + text +
                                      "' is not a time: use RFC 3339 (2026-11-29T02:00:00Z), a "
                                      "date (2026-11-29) or an age (7d, 12h, 30m)");
  }
  return FromTimestamp(ts);
}

}  // namespace devtime::wire
