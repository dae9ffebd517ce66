#include "agents/trace/io/timestamp.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>

namespace devtime::trace {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The value of the eight decimal digits at p, or false when one of them is not a digit (SWAR:
// Kineto timestamps have 13-16 whole digits, and the byte loop was a twentieth of a summary).
bool EightDigits(const char* p, uint64_t* out) {
  if constexpr (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) return false;  // the byte loop then
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  // Every byte is 0x30..0x39: its high nibble is 3, and adding 6 does not carry out of it.
  if (((v & 0xF0F0F0F0F0F0F0F0ULL) |
       (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL) {
    return false;
  }
  v = ((v & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;                // pairs of digits
  v = ((v & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;            // fours
  v = ((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;  // eight
  *out = v & 0xFFFFFFFFULL;
  return true;
}

// A byte that may continue a JSON number token (json_scanner.h IsNumberChar; not included
// here: timestamps sit below the scanner).
bool IsNumberByte(char c) {
  return IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

}  // namespace

const char* ScanMicrosToNanos(const char* p, const char* e, int64_t* ns) {
  constexpr ptrdiff_t kMaxWholeDigits = 16;  // < 1e16 µs: the overflow check below suffices
  const char* q = p;
  uint64_t us = 0;
  uint64_t eight = 0;
  while (e - q >= 8 && q - p + 8 <= kMaxWholeDigits && EightDigits(q, &eight)) {
    us = us * 100000000 + eight;
    q += 8;
  }
  for (; q < e && IsDigit(*q); ++q) {
    if (q - p >= kMaxWholeDigits) return nullptr;
    us = us * 10 + static_cast<uint64_t>(*q - '0');
  }
  if (q == p) return nullptr;
  int64_t sub = 0;  // nanoseconds below the microsecond: the first 3 fraction digits
  if (q < e && *q == '.') {
    const char* const frac = ++q;
    for (; q < e && IsDigit(*q); ++q) {
      if (q - frac < 3) sub = sub * 10 + (*q - '0');
    }
    if (q == frac) return nullptr;
    for (ptrdiff_t k = q - frac; k < 3; ++k) sub *= 10;
  }
  if (q == e || IsNumberByte(*q)) return nullptr;
  if (us > static_cast<uint64_t>((std::numeric_limits<int64_t>::max() - sub) / 1000)) {
    return nullptr;
  }
  *ns = static_cast<int64_t>(us) * 1000 + sub;
  return q;
}

std::optional<int64_t> ParseMicrosToNanos(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (token.empty()) return std::nullopt;
  // One pass: [-]digits[.digits]; anything else falls through to the exponent path.
  size_t i = 0;
  const bool negative = token[0] == '-';
  if (negative) ++i;
  const size_t whole_begin = i;
  uint64_t us = 0;
  uint64_t eight = 0;
  while (token.size() - i >= 8 && i - whole_begin + 8 <= 19 &&
         EightDigits(token.data() + i, &eight)) {
    us = us * 100000000 + eight;
    i += 8;
  }
  while (i < token.size() && IsDigit(token[i])) {
    if (i - whole_begin >= 19) return std::nullopt;  // beyond int64 microseconds
    us = us * 10 + static_cast<uint64_t>(token[i] - '0');
    ++i;
  }
  const size_t whole_digits = i - whole_begin;
  int64_t sub = 0;  // nanoseconds below the microsecond
  bool plain = whole_digits > 0;
  if (plain && i < token.size()) {
    if (token[i] != '.') {
      plain = false;
    } else {
      ++i;
      size_t frac_digits = 0;
      while (i < token.size() && IsDigit(token[i])) {
        if (frac_digits < 3) sub = sub * 10 + (token[i] - '0');
        ++frac_digits;
        ++i;
      }
      for (size_t k = frac_digits; k < 3; ++k) sub *= 10;
      if (frac_digits == 0 || i != token.size()) plain = false;
    }
  }
  if (plain) {
    if (us > static_cast<uint64_t>((std::numeric_limits<int64_t>::max() - sub) / 1000)) {
      return std::nullopt;
    }
    const int64_t ns = static_cast<int64_t>(us) * 1000 + sub;
    return negative ? -ns : ns;
  }
  if (token.find_first_of("eE") == std::string_view::npos) return std::nullopt;
  // Rare: a writer that used exponent notation. Parse via double; precision is whatever the
  // writer kept.
  double v = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  const double ns = std::round(v * 1000.0);
  if (std::fabs(ns) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(ns);
}

}  // namespace devtime::trace
