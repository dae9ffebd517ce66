// Timestamps on the wire (google.protobuf.Timestamp) and in text (RFC 3339, UTC).
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/timestamp.pb.h"

namespace devtime::wire {

using Clock = std::chrono::system_clock;

google::protobuf::Timestamp ToTimestamp(Clock::time_point t);
Clock::time_point FromTimestamp(const google::protobuf::Timestamp& t);

// "2026-11-29T02:00:00Z" (seconds precision, UTC).
std::string FormatTime(const google::protobuf::Timestamp& t);

// Accepts RFC 3339 ("2026-11-29T02:00:00Z", "2026-11-29T02:00:00.5+01:00"), a date
// ("2026-11-29", midnight UTC) or a relative age ("7d", "12h", "30m" before `now`).
absl::StatusOr<Clock::time_point> ParseTimeOrAge(const std::string& text, Clock::time_point now);

}  // namespace devtime::wire
