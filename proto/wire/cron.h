// Job schedules: standard 5-field cron expressions evaluated in an IANA time zone.
//
//   minute hour day-of-month month day-of-week      e.g. "0 2 * * *" (02:00 every night)
//
// Fields take *, numbers, ranges (1-5), steps (*/15, 0-30/10), lists (1,15) and names
// (JAN-DEC, SUN-SAT; 0 and 7 are Sunday). As in Vixie cron, when both day fields are
// restricted a day matches if EITHER matches. Macros: @hourly, @daily (= @midnight),
// @weekly, @monthly, @yearly (= @annually). A slot whose local time does not exist (DST
// spring-forward gap) fires when the gap ends; a repeated local time fires once, the first.
//
// Thread-safety: CronSchedule is immutable after Parse; share it freely.
#pragma once

#include <bitset>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devtime::wire {

class CronSchedule {
 public:
  // Errors name the field and the offending text: "day-of-week: 'FRY' is not a day name".
  // An expression that can never fire (e.g. "0 0 30 2 *") is an error too.
  static absl::StatusOr<CronSchedule> Parse(const std::string& expression);

  // The first slot strictly after `after` in `zone`; nullopt only if none within 5 years.
  std::optional<absl::Time> Next(absl::Time after, absl::TimeZone zone) const;

  const std::string& expression() const { return expression_; }

 private:
  CronSchedule() = default;
  bool MatchesDay(const absl::CivilDay& day) const;

  std::string expression_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0 = Sunday
  bool day_of_month_restricted_ = false;
  bool day_of_week_restricted_ = false;
};

// Loads an IANA time zone ("Europe/Berlin", "UTC"); the error names the zone.
absl::StatusOr<absl::TimeZone> LoadTimeZone(const std::string& name);

}  // namespace devtime::wire
