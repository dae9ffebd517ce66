// What a JobSpec means, shared by everyone who handles jobs: validation (devtimectl before
// sending, the collector before storing), schedule evaluation with per-host jitter (the
// agent to run slots, the collector to account for missed ones) and host selection.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devtime/v1/jobs.pb.h"

namespace devtime::wire {

inline constexpr uint32_t kDefaultJobTimeoutSeconds = 3600;
inline constexpr uint32_t kDefaultCaptureSteps = 5;

// OK, or INVALID_ARGUMENT naming the field under `path` ("jobs[2].schedule.cron: ...").
absl::Status ValidateJob(const v1::JobSpec& job, const std::string& path);

// Pins (issue 25). The keys named by `{pin:KEY}` placeholders in `text`, in order.
std::vector<std::string> PinPlaceholders(const std::string& text);
// True for a value a pin may take: it is put into a shell command, so only
// [A-Za-z0-9._+:@/~-], 1..256 bytes.
bool IsPinValue(const std::string& value);
inline constexpr int kMaxPins = 32;
// A value source's ordered values travel in the environment of the culprit run that ran it
// (agents/daemon/pins.h), as entries devtime.values.KEY.N, N = 0, 1, ..., each a run of the
// values, space-separated. The name of entry N of `key`:
std::string SourceValuesEntry(const std::string& key, int n);
// Each key's values from those entries, space-separated, joined in N's order: neither a
// protobuf map's iteration order nor the names' text order ("KEY.10" < "KEY.2") is that order.
std::map<std::string, std::string> SourceValues(
    const google::protobuf::Map<std::string, std::string>& environment);

// The job with defaults filled in (timeout, capture steps, time zone).
v1::JobSpec WithDefaults(v1::JobSpec job);

// The first scheduled slot strictly after `after` (before jitter), or nullopt.
std::optional<absl::Time> NextSlot(const v1::JobSpec& job, absl::Time after);

// The deterministic delay of `job` on `host`, in [0, jitter_seconds).
absl::Duration JitterFor(const v1::JobSpec& job, const std::string& host);

// True when the agent satisfies every condition of the job's selector.
bool SelectorMatches(const v1::HostSelector& selector, const v1::AgentIdentity& agent);

}  // namespace devtime::wire
