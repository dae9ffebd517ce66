// devtime::collector — the bounds of what the collector accepts for jobs and agents, chosen
// so that whatever it accepts it can send again: every stored job can go to one agent in
// one Assignments message (the static_assert in job_limits.cc), and a page of any list fits
// a client's receive limit (paging.h).
//
// A string field over its limit is INVALID_ARGUMENT naming the field; a repeated field over
// its count, a job or selector over its encoded size, or more jobs than kMaxJobs is
// RESOURCE_EXHAUSTED naming the limit. wire::ValidateJob checks what the values mean; these
// check only sizes.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "devtime/v1/jobs.pb.h"

namespace devtime::collector {

inline constexpr std::size_t kMaxJobs = 500;  // stored, and so per agent and per ApplyJobs
inline constexpr std::size_t kMaxJobBytes = 32 * 1024;  // one JobSpec encoded, defaults filled
inline constexpr std::size_t kMaxCommandBytes = 16 * 1024;
inline constexpr std::size_t kMaxCronBytes = 256;
inline constexpr std::size_t kMaxTimeZoneBytes = 64;
inline constexpr std::size_t kMaxJobEnvEntries = 128;
inline constexpr std::size_t kMaxEnvValueBytes = 4'096;
inline constexpr std::size_t kMaxSelectorBytes = 16 * 1024;  // one HostSelector encoded
inline constexpr std::size_t kMaxSelectorLabels = 64;
inline constexpr std::size_t kMaxSelectorHosts = 512;
inline constexpr std::size_t kMaxLabelKeyBytes = 128;  // also environment keys
inline constexpr std::size_t kMaxLabelValueBytes = 256;
inline constexpr std::size_t kMaxAgentNameBytes = 128;
inline constexpr std::size_t kMaxAgentLabels = 64;  // an agent's identity (its hello)

// The sizes of `job` (as stored: wire::WithDefaults applied), its fields under `path`.
absl::Status CheckJobSize(const v1::JobSpec& job, const std::string& path);

// RESOURCE_EXHAUSTED when `count` jobs are more than kMaxJobs; `what` says whose count.
absl::Status CheckJobCount(std::size_t count, const std::string& what);

// The sizes of an agent's identity, its fields under `path` ("hello.identity").
absl::Status CheckAgentIdentitySize(const v1::AgentIdentity& agent, const std::string& path);

}  // namespace devtime::collector
