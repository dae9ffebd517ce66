#include "proto/wire/cron.h"

#include <array>
#include <charconv>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/civil_time.h"

namespace devtime::wire {
namespace {

struct FieldSpec {
  const char* name;
  int min;
  int max;
  const char* const* names;  // nullptr, or names for min..max (for months: 1..12)
  int names_offset;          // value of names[0]
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

constexpr std::array<FieldSpec, 5> kFields = {{
    {"minute", 0, 59, nullptr, 0},
    {"hour", 0, 23, nullptr, 0},
    {"day-of-month", 1, 31, nullptr, 0},
    {"month", 1, 12, kMonthNames, 1},
    {"day-of-week", 0, 7, kDayNames, 0},
}};

absl::Status FieldError(const FieldSpec& field, const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(std::string(field.name) + ": '" + text + "' " + why);
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

absl::StatusOr<int> ParseValue(const FieldSpec& field, const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size()) {
    if (value < field.min || value > field.max) {
      return FieldError(
          field, text,
          "is out of range " + std::to_string(field.min) + "-" + std::to_string(field.max));
    }
    return value;
  }
  if (field.names != nullptr) {
    std::string upper = Upper(text);
    int count = field.names == kMonthNames ? 12 : 7;
    for (int i = 0; i < count; ++i) {
      if (upper == field.names[i]) return i + field.names_offset;
    }
    return FieldError(field, text,
                      field.names == kMonthNames ? "is not a month name (JAN-DEC)"
                                                 : "is not a day name (SUN-SAT)");
  }
  return FieldError(field, text, "is not a number");
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

// Parses one field into the values it allows (bit i = value i). `restricted` is false for '*'.
absl::Status ParseField(const FieldSpec& field, const std::string& text, std::bitset<64>* bits,
                        bool* restricted) {
  *restricted = text != "*";
  for (const std::string& item : Split(text, ',')) {
    if (item.empty()) return FieldError(field, text, "has an empty list item");
    std::string range = item;
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string::npos) {
      range = item.substr(0, slash);
      std::string step_text = item.substr(slash + 1);
      auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (ec != std::errc() || end != step_text.data() + step_text.size() || step <= 0) {
        return FieldError(field, item, "has a bad step (want a positive number after '/')");
      }
    }
    int low = field.min, high = field.max;
    if (range != "*") {
      auto dash = range.find('-');
      auto first = ParseValue(field, range.substr(0, dash));
      if (!first.ok()) return first.status();
      low = high = *first;
      if (dash != std::string::npos) {
        auto last = ParseValue(field, range.substr(dash + 1));
        if (!last.ok()) return last.status();
        high = *last;
        if (high < low) return FieldError(field, item, "is a range that runs backwards");
      } else if (item.find('/') != std::string::npos) {
        high = field.max;  // "5/15" means from 5 to the end, every 15
      }
    }
    for (int v = low; v <= high; v += step) bits->set(static_cast<std::size_t>(v));
  }
  return absl::OkStatus();
}

// The @-macros (crontab(5)) and the five fields each stands for.
constexpr std::pair<std::string_view, const char*> kMacros[] = {
    {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"}};

std::string ExpandMacro(const std::string& expression) {
  for (const auto& [macro, fields] : kMacros) {
    if (expression == macro) return fields;
  }
  return expression;
}

template <std::size_t N>
std::bitset<N> Narrow(const std::bitset<64>& bits) {
  std::bitset<N> out;
  for (std::size_t i = 0; i < N; ++i) out[i] = bits[i];
  return out;
}

// absl's weekdays in cron's numbering: Sunday is 0 (kDayNames' order).
constexpr absl::Weekday kCronWeekdays[] = {absl::Weekday::sunday,   absl::Weekday::monday,
                                           absl::Weekday::tuesday,  absl::Weekday::wednesday,
                                           absl::Weekday::thursday, absl::Weekday::friday,
                                           absl::Weekday::saturday};

int DayOfWeekIndex(absl::Weekday weekday) {
  for (int i = 0; i < 7; ++i) {
    if (kCronWeekdays[i] == weekday) return i;
  }
  return 0;
}

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(const std::string& expression) {
  std::istringstream in(ExpandMacro(expression));
  std::vector<std::string> fields;
  for (std::string field; in >> field;) fields.push_back(field);
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(
        "'" + expression + "' has " + std::to_string(fields.size()) +
        " fields; a cron expression has 5: minute hour day-of-month month day-of-week");
  }
  CronSchedule schedule;
  schedule.expression_ = expression;
  std::array<std::bitset<64>, 5> bits;
  std::array<bool, 5> restricted{};
  for (std::size_t i = 0; i < 5; ++i) {
    if (auto s = ParseField(kFields[i], fields[i], &bits[i], &restricted[i]); !s.ok()) return s;
  }
  if (bits[4][7]) bits[4].set(0);  // 7 is Sunday too
  schedule.minutes_ = Narrow<60>(bits[0]);
  schedule.hours_ = Narrow<24>(bits[1]);
  schedule.days_of_month_ = Narrow<32>(bits[2]);
  schedule.months_ = Narrow<13>(bits[3]);
  schedule.days_of_week_ = Narrow<7>(bits[4]);
  schedule.day_of_month_restricted_ = restricted[2];
  schedule.day_of_week_restricted_ = restricted[4];
  if (!schedule.Next(absl::FromCivil(absl::CivilMinute(2000, 1, 1), absl::UTCTimeZone()),
                     absl::UTCTimeZone())) {
    return absl::InvalidArgumentError("'" + expression + "' never fires (no such date)");
  }
  return schedule;
}

bool CronSchedule::MatchesDay(const absl::CivilDay& day) const {
  bool dom = days_of_month_[static_cast<std::size_t>(day.day())];
  bool dow = days_of_week_[static_cast<std::size_t>(DayOfWeekIndex(absl::GetWeekday(day)))];
  if (day_of_month_restricted_ && day_of_week_restricted_) return dom || dow;
  return dom && dow;
}

std::optional<absl::Time> CronSchedule::Next(absl::Time after, absl::TimeZone zone) const {
  absl::CivilMinute start = absl::ToCivilMinute(after, zone) + 1;
  const absl::CivilDay last_day = absl::CivilDay(start) + 5 * 366;
  for (absl::CivilDay day(start); day <= last_day; ++day) {
    if (!months_[static_cast<std::size_t>(day.month())] || !MatchesDay(day)) continue;
    for (int hour = 0; hour < 24; ++hour) {
      if (!hours_[static_cast<std::size_t>(hour)]) continue;
      for (int minute = 0; minute < 60; ++minute) {
        if (!minutes_[static_cast<std::size_t>(minute)]) continue;
        absl::CivilMinute slot(day.year(), day.month(), day.day(), hour, minute);
        if (slot < start) continue;
        absl::Time t = absl::FromCivil(slot, zone);
        if (t > after) return t;
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<absl::TimeZone> LoadTimeZone(const std::string& name) {
  absl::TimeZone zone;
  if (name.empty() || !absl::LoadTimeZone(name, &zone)) {
    return absl::InvalidArgumentError("'" + name +
                                      "' is not a known IANA time zone (e.g. UTC, Europe/Berlin)");
  }
  return zone;
}

}  // namespace devtime::wire
