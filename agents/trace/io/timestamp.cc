#include "agents/trace/io/timestamp.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "agents/trace/io/words.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace devtime::trace {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The number the 8 bytes of `v` (in memory order) spell, each a digit '0'-'9' or 0 (a leading
// zero: bytes shifted in from below).
uint64_t DigitsValue(uint64_t v) {
  v = ((v & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;                // pairs of digits
  v = ((v & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;            // fours
  v = ((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;  // eight
  return v & 0xFFFFFFFFULL;
}

// The value of the eight decimal digits at p, or false when one of them is not a digit (SWAR:
// Kineto timestamps have 13-16 whole digits, and the byte loop was a twentieth of a summary).
bool EightDigits(const char* p, uint64_t* out) {
  if constexpr (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) return false;  // the byte loop then
  const uint64_t v = LoadWord<uint64_t>(p);
  // Every byte is 0x30..0x39: its high nibble is 3, and adding 6 does not carry out of it.
  if (((v & 0xF0F0F0F0F0F0F0F0ULL) |
       (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL) {
    return false;
  }
  *out = DigitsValue(v);
  return true;
}

// A byte that may continue a JSON number token (json_scanner.h IsNumberChar; not included
// here: timestamps sit below the scanner).
bool IsNumberByte(char c) {
  return IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

constexpr ptrdiff_t kMaxWholeDigits = 16;  // < 1e16 µs: ScanMicrosToNanos's overflow check suffices

// ns = us * 1000 + sub when it fits int64 (as ParseMicrosToNanos checks it).
bool ToNanos(uint64_t us, int64_t sub, int64_t* ns) {
  if (us > static_cast<uint64_t>((std::numeric_limits<int64_t>::max() - sub) / 1000)) return false;
  *ns = static_cast<int64_t>(us) * 1000 + sub;
  return true;
}

#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
// ScanMicrosToNanos with 32 bytes readable at p, where the token ends within them: the digit
// runs found from one digit mask instead of byte by byte (whose branches on run lengths that
// differ from ts to dur mispredicted: 15 % of the reader, perf), the whole part converted 8
// digits at a time. Sets *done to false (nothing else) where the token may run past the 32
// bytes or has more than kMaxWholeDigits whole digits, for the byte-wise scan.
const char* ScanMicros32(const char* p, int64_t* ns, bool* done) {
  auto digits = [](const char* at) {
    const __m128i d =
        _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)), _mm_set1_epi8('0'));
    return static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d)));
  };
  const uint32_t mask = digits(p) | digits(p + 16) << 16;  // bit i: p[i] is a digit
  const int whole = __builtin_ctz(~mask | (uint32_t{1} << 31));
  *done = whole <= kMaxWholeDigits;
  if (!*done || whole == 0) return nullptr;
  uint64_t us = 0;
  if (whole <= 8) {
    us = DigitsValue(LoadWord<uint64_t>(p) << (8 * (8 - whole)));
  } else {
    us = DigitsValue(LoadWord<uint64_t>(p) << (8 * (16 - whole))) * 100000000 +
         DigitsValue(LoadWord<uint64_t>(p + whole - 8));
  }
  const char* end = p + whole;
  int64_t sub = 0;
  if (*end == '.') {
    const int frac = __builtin_ctz(~(mask >> (whole + 1)));
    if (whole + 1 + frac >= 31) {  // may go on past the 32 bytes
      *done = false;
      return nullptr;
    }
    if (frac == 0) return nullptr;
    const char* f = end + 1;
    sub = (f[0] - '0') * 100 + (frac > 1 ? (f[1] - '0') * 10 : 0) + (frac > 2 ? f[2] - '0' : 0);
    end = f + frac;
  }
  if (IsNumberByte(*end) || !ToNanos(us, sub, ns)) return nullptr;
  return end;
}
#endif

}  // namespace

const char* ScanMicrosToNanos(const char* p, const char* e, int64_t* ns) {
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (e - p >= 32) {
    bool done = false;
    const char* end = ScanMicros32(p, ns, &done);
    if (done) return end;
  }
#endif
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
  if (q == e || IsNumberByte(*q) || !ToNanos(us, sub, ns)) return nullptr;
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
