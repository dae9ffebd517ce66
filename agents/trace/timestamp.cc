#include "agents/trace/timestamp.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace devtime::trace {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<int64_t> ParseMicrosToNanos(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (token.empty()) return std::nullopt;
  if (token.find_first_of("eE") != std::string_view::npos) {
    // Rare: a writer that used exponent notation. Parse via double; precision is whatever
    // the writer kept.
    double us = 0;
    auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), us);
    if (ec != std::errc() || p != token.data() + token.size() || !std::isfinite(us)) {
      return std::nullopt;
    }
    const double ns = std::round(us * 1000.0);
    if (std::fabs(ns) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(ns);
  }
  bool negative = false;
  if (token.front() == '-') {
    negative = true;
    token.remove_prefix(1);
  }
  const size_t dot = token.find('.');
  std::string_view whole = token.substr(0, dot);
  std::string_view frac =
      dot == std::string_view::npos ? std::string_view() : token.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && frac.empty())) return std::nullopt;
  for (char c : whole) {
    if (!IsDigit(c)) return std::nullopt;
  }
  for (char c : frac) {
    if (!IsDigit(c)) return std::nullopt;
  }
  int64_t us = 0;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), us);
  if (ec != std::errc() || p != whole.data() + whole.size()) return std::nullopt;
  int64_t sub = 0;  // nanoseconds below the microsecond
  for (size_t i = 0; i < 3; ++i) {
    sub = sub * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  }
  if (us > (std::numeric_limits<int64_t>::max() - sub) / 1000) return std::nullopt;
  const int64_t ns = us * 1000 + sub;
  return negative ? -ns : ns;
}

}  // namespace devtime::trace
