#include "proto/wire/job_spec.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <set>
#include <string_view>

#include "absl/strings/numbers.h"
#include "proto/wire/cron.h"
#include "proto/wire/validation.h"

namespace devtime::wire {
namespace {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(field + ": " + problem);
}

bool IsJobName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!ok(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return ok(c) || c == '.' || c == '_' || c == '-'; });
}

bool IsPinKey(const std::string& key) {
  if (key.empty() || key.size() > 128) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

// Every {pin:KEY} names a declared pin, every pin is used somewhere, defaults are plain
// values: a hunt's run can never silently run unpinned.
absl::Status ValidatePins(const v1::JobSpec& job, const std::string& path) {
  if (job.pins_size() > kMaxPins) {
    return Invalid(path + ".pins", "at most " + std::to_string(kMaxPins) + " pins");
  }
  std::set<std::string> declared;
  for (int i = 0; i < job.pins_size(); ++i) {
    const v1::PinSpec& pin = job.pins(i);
    const std::string at = path + ".pins." + pin.key();
    if (!IsPinKey(pin.key())) {
      return Invalid(path + ".pins[" + std::to_string(i) + "]",
                     "'" + pin.key().substr(0, 64) +
                         "' is not a pin key (letters, digits, '.', '_', '-'; <= 128)");
    }
    if (!declared.insert(pin.key()).second) return Invalid(at, "is declared twice");
    if (pin.default_value().empty()) {
      return Invalid(at + ".default",
                     "is required: the value {pin:" + pin.key() + "} takes in a normal run");
    }
    if (!IsPinValue(pin.default_value())) {
      return Invalid(at + ".default", "'" + pin.default_value().substr(0, 64) +
                                          "' is not a plain value ([A-Za-z0-9._+:@/~-])");
    }
    if (pin.source().size() > 4096) return Invalid(at + ".source", "must be <= 4096 bytes");
  }
  std::set<std::string> used;
  auto check = [&](const std::string& text, const std::string& field) -> absl::Status {
    for (const std::string& key : PinPlaceholders(text)) {
      if (!declared.count(key)) {
        return Invalid(field,
                       "{pin:" + key + "} names no pin of this job (declare it under pins:)");
      }
      used.insert(key);
    }
    return absl::OkStatus();
  };
  if (auto s = check(job.command(), path + ".command"); !s.ok()) return s;
  for (const auto& [key, value] : job.env()) {
    if (auto s = check(value, path + ".env." + key); !s.ok()) return s;
  }
  for (const std::string& key : declared) {
    if (!used.count(key)) {
      return Invalid(path + ".pins." + key,
                     "no {pin:" + key + "} in the command or env: pinning it would change nothing");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> PinPlaceholders(const std::string& text) {
  std::vector<std::string> keys;
  for (std::size_t at = text.find("{pin:"); at != std::string::npos;
       at = text.find("{pin:", at + 1)) {
    std::size_t end = text.find('}', at);
    if (end == std::string::npos) break;
    keys.push_back(text.substr(at + 5, end - at - 5));
  }
  return keys;
}

bool IsPinValue(const std::string& value) {
  if (value.empty() || value.size() > 256) return false;
  return std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._+:@/~-", c) != nullptr;
  });
}

constexpr std::string_view kSourceValuesPrefix = "devtime.values.";

std::string SourceValuesEntry(const std::string& key, int n) {
  return std::string(kSourceValuesPrefix) + key + "." + std::to_string(n);
}

std::map<std::string, std::string> SourceValues(
    const google::protobuf::Map<std::string, std::string>& environment) {
  std::map<std::string, std::map<int, std::string>> entries;  // key -> N -> values
  for (const auto& [name, values] : environment) {
    if (!name.starts_with(kSourceValuesPrefix)) continue;
    const std::string rest = name.substr(kSourceValuesPrefix.size());
    const std::size_t dot = rest.rfind('.');
    int n = 0;
    if (dot == std::string::npos || !absl::SimpleAtoi(rest.substr(dot + 1), &n)) continue;
    entries[rest.substr(0, dot)][n] = values;
  }
  std::map<std::string, std::string> ordered;
  for (const auto& [key, by_index] : entries) {
    std::string& joined = ordered[key];
    for (const auto& [n, values] : by_index) joined += (joined.empty() ? "" : " ") + values;
  }
  return ordered;
}

absl::Status ValidateJob(const v1::JobSpec& job, const std::string& path) {
  if (!IsJobName(job.name())) {
    return Invalid(path + ".name", "'" + job.name().substr(0, 64) +
                                       "' is not a job name (lowercase letters, digits, '.', "
                                       "'_', '-'; starting with a letter or digit; <= 128)");
  }
  if (job.model().empty()) return Invalid(path + ".model", "is required");
  if (job.workload().empty()) return Invalid(path + ".workload", "is required");
  if (job.command().empty()) return Invalid(path + ".command", "is required");
  if (auto s = ValidateJobText(job, path); !s.ok()) return s;  // issue 26: ESC, U+202E, NUL
  if (!job.has_schedule() || job.schedule().cron().empty()) {
    return Invalid(path + ".schedule.cron", "is required (e.g. \"0 2 * * *\")");
  }
  if (auto cron = CronSchedule::Parse(job.schedule().cron()); !cron.ok()) {
    return Invalid(path + ".schedule.cron", std::string(cron.status().message()));
  }
  if (!job.schedule().time_zone().empty()) {
    if (auto zone = LoadTimeZone(job.schedule().time_zone()); !zone.ok()) {
      return Invalid(path + ".schedule.time_zone", std::string(zone.status().message()));
    }
  }
  if (job.schedule().jitter_seconds() > 3600) {
    return Invalid(path + ".schedule.jitter_seconds", "must be <= 3600");
  }
  if (job.timeout_seconds() > 86400) return Invalid(path + ".timeout_seconds", "must be <= 86400");
  if (job.capture_steps() > 10000) return Invalid(path + ".capture_steps", "must be <= 10000");
  if (job.retries() > 5) return Invalid(path + ".retries", "must be <= 5");
  for (const auto& [key, value] : job.env()) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return Invalid(path + ".env", "'" + key + "' is not an environment variable name");
    }
  }
  return ValidatePins(job, path);
}

v1::JobSpec WithDefaults(v1::JobSpec job) {
  if (job.timeout_seconds() == 0) job.set_timeout_seconds(kDefaultJobTimeoutSeconds);
  if (job.capture_steps() == 0) job.set_capture_steps(kDefaultCaptureSteps);
  if (job.schedule().time_zone().empty()) job.mutable_schedule()->set_time_zone("UTC");
  return job;
}

std::optional<absl::Time> NextSlot(const v1::JobSpec& job, absl::Time after) {
  auto cron = CronSchedule::Parse(job.schedule().cron());
  auto zone = LoadTimeZone(job.schedule().time_zone().empty() ? "UTC" : job.schedule().time_zone());
  if (!cron.ok() || !zone.ok()) return std::nullopt;
  return cron->Next(after, *zone);
}

absl::Duration JitterFor(const v1::JobSpec& job, const std::string& host) {
  uint32_t jitter = job.schedule().jitter_seconds();
  if (jitter == 0) return absl::ZeroDuration();
  // FNV-1a: stable across processes and versions (std::hash is not).
  uint64_t hash = 1469598103934665603ull;
  for (char c : job.name() + "@" + host) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return absl::Seconds(static_cast<int64_t>(hash % jitter));
}

bool SelectorMatches(const v1::HostSelector& selector, const v1::AgentIdentity& agent) {
  if (!selector.instance_type().empty() && selector.instance_type() != agent.instance_type()) {
    return false;
  }
  if (!selector.hosts().empty() && std::find(selector.hosts().begin(), selector.hosts().end(),
                                             agent.host()) == selector.hosts().end()) {
    return false;
  }
  for (const auto& [key, value] : selector.labels()) {
    auto it = agent.labels().find(key);
    if (it == agent.labels().end() || it->second != value) return false;
  }
  return true;
}

}  // namespace devtime::wire
