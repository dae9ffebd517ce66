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

// The number token at p when it is a plain non-negative time, as Kineto writes every ts and
// most durs ("1212075549008.000", "7933"): returns its end (the first byte at or after p that
// cannot continue a JSON number token, before e) and puts ParseMicrosToNanos(token) in *ns, in
// one pass instead of finding the token's end and then parsing it (the two were 8 % of a
// summary, perf). nullptr for anything else — a sign, an exponent, a '.' without digits, more
// than 16 whole digits, a value past int64 ns, a token that runs to e —: the caller then reads
// the token generically, which decides what it is.
const char* ScanMicrosToNanos(const char* p, const char* e, int64_t* ns);

// a + b and a - b of nanosecond times, or nullopt when the result does not fit int64. Every
// reader combines timestamps and durations only through these, so that a hostile value is an
// error naming its event instead of a signed overflow (undefined behaviour).
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace devtime::trace
