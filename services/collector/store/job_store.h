// devtime::collector — jobs, agents and job slots in PostgreSQL (schema migration 2).
//
// Shares the Database's connection pool and retry discipline; every method is one
// transaction. Errors: NOT_FOUND for unknown jobs, UNAVAILABLE when the database stays
// unreachable.
//
// Changes are announced: every writer of jobs (ApplyJobs, DeleteJob) sends NOTIFY on
// kJobsChannel, and every writer of run-now requests (RequestRunNow, InsertRunRequest) on
// kRunNowChannel, in the writing transaction itself, so a listener hears of a change exactly
// when it becomes visible (PostgreSQL delivers notifications at commit, never for a rollback).
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devtime/v1/jobs.pb.h"
#include "pqxx/pqxx"
#include "services/collector/store/database.h"

namespace devtime::store {

// NOTIFY channels (change_listener.h listens). Jobs: empty payload, "re-read the jobs".
// Run-now: RunNowPayload(job, host); host "" = any agent assigned the job.
inline constexpr char kJobsChannel[] = "devtime_jobs";
inline constexpr char kRunNowChannel[] = "devtime_run_now";

struct RunNowTarget {
  std::string job;
  std::string host;  // "" = any agent the job is assigned to
};
// "job\nhost": job names cannot hold a newline (wire::ValidateJob), so the first one splits.
std::string RunNowPayload(const RunNowTarget& target);
RunNowTarget ParseRunNowPayload(const std::string& payload);

struct AgentRecord {
  v1::AgentIdentity identity;
  google::protobuf::Timestamp last_seen;
};

// How long a run-now request waits for an agent before it is dropped: long enough for a host
// that reboots or an agent that restarts, short enough that a forgotten request does not run
// a day later by surprise.
inline constexpr absl::Duration kRunNowTtl = absl::Hours(24);
inline constexpr char kRunNowTtlSql[] = "interval '24 hours'";

class JobStore {
 public:
  explicit JobStore(Database& db) : db_(db) {}

  // Stores validated jobs (all or nothing); says which were created, updated, unchanged.
  // RESOURCE_EXHAUSTED (nothing stored) when more than `max_jobs` would then be stored.
  absl::StatusOr<v1::ApplyJobsResponse> ApplyJobs(const std::vector<v1::JobSpec>& jobs,
                                                  std::size_t max_jobs);
  // By name: those after `after`, at most `limit` (0 = all).
  absl::StatusOr<std::vector<v1::JobSpec>> ListJobs(const std::string& after = "",
                                                    unsigned limit = 0);
  absl::StatusOr<v1::JobSpec> GetJob(const std::string& name);
  absl::Status DeleteJob(const std::string& name);

  // Inserts or updates the slot (job, slot_time, host): a later report replaces an earlier
  // one, so a "missed" record is corrected when the agent's late report arrives.
  absl::Status RecordSlot(const v1::JobSlot& slot);
  // Newest first (slot_time, then host): at most `limit`, after (slot_time in microseconds,
  // host) when given (keyset paging).
  absl::StatusOr<std::vector<v1::JobSlot>> History(
      const std::string& job, unsigned limit,
      const std::optional<std::pair<long long, std::string>>& after = std::nullopt);

  absl::Status UpsertAgent(const v1::AgentIdentity& agent);
  // The heartbeat of every session a collector holds: one statement for all `names`.
  absl::Status TouchAgents(const std::vector<std::string>& names);
  absl::StatusOr<std::vector<AgentRecord>> ListAgents();

  // A run-now request, taken by the first matching agent, or dropped after kRunNowTtl.
  absl::StatusOr<int64_t> RequestRunNow(const std::string& job, const std::string& host);
  // The requests of `job` no agent took yet and that have not expired, oldest first.
  absl::StatusOr<std::vector<v1::PendingRunNow>> PendingRunNowOf(const std::string& job);
  // The same inside the caller's transaction (the analyzer asks for a confirmation run in
  // the transaction that opens the regression). Returns the request id.
  static int64_t InsertRunRequest(pqxx::work& tx, const std::string& job, const std::string& host);
  // The job's spec read inside the caller's transaction; nullopt when there is no such job.
  static std::optional<v1::JobSpec> FindJob(pqxx::transaction_base& tx, const std::string& name);
  // Claims the undelivered run-now requests this agent may serve (its host, or any host for
  // a job in `assigned`); each request is delivered to exactly one agent. With
  // `token_sha256` (a session's token digest), none while no agent token has that digest
  // any more (replaced or revoked: issue 26).
  absl::StatusOr<std::vector<v1::RunNowRequest>> ClaimRunNow(
      const v1::AgentIdentity& agent, const std::vector<std::string>& assigned,
      const std::string& token_sha256 = "");
  // The (job, host) of every undelivered run-now request, each pair once: what a session
  // hub re-offers after it may have missed notifications.
  absl::StatusOr<std::vector<RunNowTarget>> PendingRunNow();

  // Records as missed every slot of every job, after the job was created and after `from`,
  // that nobody reported by `now` - `grace` - the job's jitter: MISSED_NO_AGENT when no known
  // agent matches the selector, else MISSED_AGENT_DOWN per matching host. Idempotent.
  // Returns how many slots were recorded.
  absl::StatusOr<int> RecordMissedSlots(absl::Time from, absl::Time now, absl::Duration grace);

 private:
  Database& db_;
};

}  // namespace devtime::store
