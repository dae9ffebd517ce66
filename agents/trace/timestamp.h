// Exact parsing of trace timestamps: a JSON number in microseconds ("1712195495511766.2",
// "7933", "1212075548353.304") becomes int64 nanoseconds without passing through double, so
// that 16-digit epoch timestamps keep their nanoseconds (profiler-formats.md §7.2).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace devtime::trace {

// Returns nanoseconds for a JSON number token of microseconds: an optional '-', digits, and
// optionally '.' with up to 3 fraction digits (more digits are truncated towards zero; they
// are below a nanosecond). Exponent forms ("1e3") are accepted via double as a last resort.
// Returns nullopt when the token is not a number or overflows int64 nanoseconds.
std::optional<int64_t> ParseMicrosToNanos(std::string_view token);

}  // namespace devtime::trace
