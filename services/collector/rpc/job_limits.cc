#include "services/collector/rpc/job_limits.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "proto/wire/limits.h"

namespace devtime::collector {
namespace {

// Encoded bytes around one message of `bytes` in a repeated or singular message field: the
// tag (field numbers below 16) and the length as a varint.
constexpr std::size_t Framed(std::size_t bytes) {
  std::size_t varint = 1;
  for (std::size_t rest = bytes >> 7; rest != 0; rest >>= 7) ++varint;
  return 1 + varint + bytes;
}

// Assignments holds every job an agent runs: at most every stored job. Framed twice: each
// job in Assignments.jobs, then Assignments in CollectorMessage.assignments.
constexpr std::size_t kMaxAssignmentsBytes = Framed(kMaxJobs * Framed(kMaxJobBytes));
static_assert(kMaxAssignmentsBytes <= wire::kMaxMessageBytes,
              "the largest assignment must fit an agent's receive limit");
// ApplyJobsRequest has the same shape: the largest allowed apply fits the server's limit.

absl::Status TooLong(const std::string& field, std::size_t size, std::size_t limit) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", size, " bytes, at most ", limit, " allowed"));
}

absl::Status TooMany(const std::string& field, std::size_t count, std::size_t limit,
                     const char* what) {
  return absl::ResourceExhaustedError(
      absl::StrCat(field, ": ", count, " ", what, ", at most ", limit, " allowed"));
}

absl::Status CheckLength(const std::string& field, const std::string& value, std::size_t limit) {
  return value.size() <= limit ? absl::OkStatus() : TooLong(field, value.size(), limit);
}

struct Bounded {
  const char* field;  // under the message's path
  const std::string& value;
  std::size_t limit;
};

absl::Status CheckLengths(const std::string& path, std::initializer_list<Bounded> fields) {
  for (const Bounded& f : fields) {
    if (auto s = CheckLength(path + f.field, f.value, f.limit); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A map of strings: its entry count, then every key and value.
absl::Status CheckMap(const std::string& field,
                      const google::protobuf::Map<std::string, std::string>& map,
                      std::size_t max_entries, std::size_t max_value_bytes) {
  if (map.size() > max_entries) return TooMany(field, map.size(), max_entries, "entries");
  for (const auto& [key, value] : map) {
    if (auto s = CheckLength(field + " key '" + key.substr(0, 64) + "'", key, kMaxLabelKeyBytes);
        !s.ok()) {
      return s;
    }
    if (auto s = CheckLength(field + "['" + key + "']", value, max_value_bytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckSelector(const v1::HostSelector& selector, const std::string& path) {
  if (auto s =
          CheckMap(path + ".labels", selector.labels(), kMaxSelectorLabels, kMaxLabelValueBytes);
      !s.ok()) {
    return s;
  }
  if (auto s =
          CheckLength(path + ".instance_type", selector.instance_type(), wire::kMaxIdentityBytes);
      !s.ok()) {
    return s;
  }
  if (static_cast<std::size_t>(selector.hosts_size()) > kMaxSelectorHosts) {
    return TooMany(path + ".hosts", selector.hosts_size(), kMaxSelectorHosts, "hosts");
  }
  for (int i = 0; i < selector.hosts_size(); ++i) {
    if (auto s = CheckLength(absl::StrCat(path, ".hosts[", i, "]"), selector.hosts(i),
                             wire::kMaxIdentityBytes);
        !s.ok()) {
      return s;
    }
  }
  if (std::size_t bytes = selector.ByteSizeLong(); bytes > kMaxSelectorBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": ", bytes, " bytes encoded, at most ",
                                                     kMaxSelectorBytes, " per selector"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckJobSize(const v1::JobSpec& job, const std::string& path) {
  if (auto s = CheckLengths(
          path, {{".model", job.model(), wire::kMaxIdentityBytes},
                 {".workload", job.workload(), wire::kMaxIdentityBytes},
                 {".command", job.command(), kMaxCommandBytes},
                 {".schedule.cron", job.schedule().cron(), kMaxCronBytes},
                 {".schedule.time_zone", job.schedule().time_zone(), kMaxTimeZoneBytes}});
      !s.ok()) {
    return s;
  }
  if (auto s = CheckMap(path + ".env", job.env(), kMaxJobEnvEntries, kMaxEnvValueBytes); !s.ok()) {
    return s;
  }
  if (auto s = CheckSelector(job.selector(), path + ".selector"); !s.ok()) return s;
  if (std::size_t bytes = job.ByteSizeLong(); bytes > kMaxJobBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", bytes, " bytes encoded, at most ", kMaxJobBytes, " per job"));
  }
  return absl::OkStatus();
}

absl::Status CheckJobCount(std::size_t count, const std::string& what) {
  if (count <= kMaxJobs) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(what, ": ", count, " jobs, at most ", kMaxJobs,
                   " allowed (every job must fit one agent's assignments)"));
}

absl::Status CheckAgentIdentitySize(const v1::AgentIdentity& agent, const std::string& path) {
  if (auto s =
          CheckLengths(path, {{".name", agent.name(), kMaxAgentNameBytes},
                              {".host", agent.host(), wire::kMaxIdentityBytes},
                              {".instance_type", agent.instance_type(), wire::kMaxIdentityBytes},
                              {".version", agent.version(), wire::kMaxIdentityBytes}});
      !s.ok()) {
    return s;
  }
  return CheckMap(path + ".labels", agent.labels(), kMaxAgentLabels, kMaxLabelValueBytes);
}

}  // namespace devtime::collector
