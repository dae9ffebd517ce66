#include "agents/daemon/pins.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "agents/daemon/job_runner.h"
#include "proto/wire/job_spec.h"

namespace devtime::agent {
namespace {

constexpr std::size_t kValuesEntryBytes = 1000;
constexpr int kMaxValuesEntries = 64;

absl::Status PinError(const std::string& what) {
  return absl::FailedPreconditionError("pins: " + what);
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

const v1::PinSpec* FindPin(const v1::JobSpec& job, const std::string& key) {
  for (const auto& pin : job.pins()) {
    if (pin.key() == key) return &pin;
  }
  return nullptr;
}

absl::StatusOr<std::string> Substitute(std::string text,
                                       const std::map<std::string, std::string>& values) {
  for (const std::string& key : wire::PinPlaceholders(text)) {
    auto it = values.find(key);
    if (it == values.end()) return PinError("{pin:" + key + "} names no pin of the job");
    text = ReplaceAll(text, "{pin:" + key + "}", it->second);
  }
  return text;
}

std::string DeclaredKeys(const v1::JobSpec& job) {
  std::string keys;
  for (const auto& pin : job.pins()) keys += (keys.empty() ? "" : ", ") + pin.key();
  return keys.empty() ? "none" : keys;
}

}  // namespace

absl::StatusOr<v1::JobSpec> ApplyPins(const v1::JobSpec& job,
                                      const std::map<std::string, std::string>& pins) {
  std::map<std::string, std::string> values;
  for (const auto& pin : job.pins()) values[pin.key()] = pin.default_value();
  for (const auto& [key, value] : pins) {
    if (!FindPin(job, key)) {
      return PinError("job " + job.name() + " cannot pin " + key +
                      " (its pins: " + DeclaredKeys(job) + ")");
    }
    if (!wire::IsPinValue(value)) {
      return PinError("'" + value.substr(0, 64) + "' is not a value " + key +
                      " can be pinned to ([A-Za-z0-9._+:@/~-], <= 256 bytes)");
    }
    values[key] = value;
  }
  v1::JobSpec pinned = job;
  auto command = Substitute(job.command(), values);
  if (!command.ok()) return command.status();
  pinned.set_command(*command);
  for (auto& [key, value] : *pinned.mutable_env()) {
    auto text = Substitute(value, values);
    if (!text.ok()) return text.status();
    value = *text;
  }
  return pinned;
}

std::map<std::string, std::string> HuntEnvironment(const v1::RunNowRequest& request) {
  std::map<std::string, std::string> env;
  if (request.hunt_tag().empty()) return env;
  env["devtime.hunt"] = request.hunt_tag();
  for (const auto& [key, value] : request.pins()) env["devtime.pin." + key] = value;
  return env;
}

absl::StatusOr<std::map<std::string, std::string>> ResolveSources(
    const v1::JobSpec& job, const v1::RunNowRequest& request, const std::filesystem::path& dir,
    std::chrono::milliseconds timeout) {
  std::map<std::string, std::string> entries;
  for (const v1::PinRange& range : request.resolve()) {
    const v1::PinSpec* pin = FindPin(job, range.key());
    if (!pin || pin->source().empty()) {
      return PinError(range.key() + " has no value source in job " + job.name() +
                      ": it can be pinned back, not bisected");
    }
    if (!wire::IsPinValue(range.good()) || !wire::IsPinValue(range.bad())) {
      return PinError("the range of " + range.key() + " is not two plain values");
    }
    JobProcessSpec process;
    process.command =
        ReplaceAll(ReplaceAll(pin->source(), "{good}", range.good()), "{bad}", range.bad());
    process.work_dir = dir / ("source-" + range.key());
    process.timeout = timeout;
    auto outcome = RunJobProcess(process);
    if (!outcome.ok())
      return PinError("source of " + range.key() + ": " + std::string(outcome.status().message()));
    if (!outcome->succeeded()) {
      return PinError("source of " + range.key() + " (" + process.command +
                      "): " + outcome->Describe());
    }
    std::ifstream in(process.work_dir / "stdout.log");
    std::vector<std::string> values;
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty()) continue;
      if (!wire::IsPinValue(line)) {
        return PinError("source of " + range.key() + " printed '" + line.substr(0, 64) +
                        "', not a plain value");
      }
      values.push_back(line);
    }
    if (values.empty()) return PinError("source of " + range.key() + " printed no values");
    int n = 0;
    std::string chunk;
    auto flush = [&]() -> absl::Status {
      if (chunk.empty()) return absl::OkStatus();
      if (n >= kMaxValuesEntries) {
        return PinError("source of " + range.key() + " printed more values than fit (" +
                        std::to_string(values.size()) + ")");
      }
      entries[wire::SourceValuesEntry(range.key(), n++)] = chunk;
      chunk.clear();
      return absl::OkStatus();
    };
    for (const std::string& value : values) {
      if (chunk.size() + value.size() + 1 > kValuesEntryBytes) {
        if (auto s = flush(); !s.ok()) return s;
      }
      chunk += (chunk.empty() ? "" : " ") + value;  // plain values have no spaces
    }
    if (auto s = flush(); !s.ok()) return s;
  }
  return entries;
}

}  // namespace devtime::agent
