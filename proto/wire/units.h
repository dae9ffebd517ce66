// devtime::wire — how devtime writes a time and a relative change, in every table and
// message: times in the unit that reads best ("403.3 µs", "2.355 ms", "1.017 s"), changes
// as "+482.0 %". What a change *is* (baseline, candidate, which statistic) is
// proto/wire/change.h. No protobuf here: agents/trace (summarize) uses it too.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace devtime::wire {

// "+482.0 %", "-3.1 %", "+0.0 %" (a fraction, 0.03 = 3 %).
inline std::string FormatFraction(double fraction) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.1f %%", 100.0 * fraction);
  return buffer;
}

// A time in µs, in the unit that reads best: "0.5 µs", "999.9 µs", "2.355 ms", "1.017 s",
// "-403.3 µs" (about four significant digits). `micro` names microseconds ("us" where only
// ASCII will do).
inline std::string ScaledTime(double us, const char* micro = "µs") {
  char buffer[64];
  const double magnitude = std::fabs(us);
  if (magnitude < 999.95) {
    std::snprintf(buffer, sizeof buffer, "%.1f %s", us, micro);
    return buffer;
  }
  const bool seconds = magnitude >= 999950;
  const double v = us / (seconds ? 1e6 : 1e3), m = std::fabs(v);
  const int decimals = m >= 99.995 ? 1 : m >= 9.9995 ? 2 : 3;
  std::snprintf(buffer, sizeof buffer, "%.*f %s", decimals, v, seconds ? "s" : "ms");
  return buffer;
}

// The same with a sign: "+1.165 ms", "-403.3 µs", "0.0 µs".
inline std::string SignedTime(double us, const char* micro = "µs") {
  return (us > 0 ? "+" : "") + ScaledTime(us, micro);
}

}  // namespace devtime::wire
