// devtime::collector — jobs, agents and job slots in PostgreSQL (schema migration 2).
//
// Shares the Database's connection pool and retry discipline; every method is one
// transaction. Errors: NOT_FOUND for unknown jobs, UNAVAILABLE when the database stays
// unreachable.
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

struct AgentRecord {
  v1::AgentIdentity identity;
  google::protobuf::Timestamp last_seen;
};

class JobStore {
 public:
  explicit JobStore(Database& db) : db_(db) {}

  // Stores validated jobs (all or nothing); says which were created, updated, unchanged.
  absl::StatusOr<v1::ApplyJobsResponse> ApplyJobs(const std::vector<v1::JobSpec>& jobs);
  absl::StatusOr<std::vector<v1::JobSpec>> ListJobs();
  absl::StatusOr<v1::JobSpec> GetJob(const std::string& name);
  absl::Status DeleteJob(const std::string& name);

  // Inserts or updates the slot (job, slot_time, host): a later report replaces an earlier
  // one, so a "missed" record is corrected when the agent's late report arrives.
  absl::Status RecordSlot(const v1::JobSlot& slot);
  absl::StatusOr<std::vector<v1::JobSlot>> History(const std::string& job, unsigned limit);

  absl::Status UpsertAgent(const v1::AgentIdentity& agent);
  absl::Status TouchAgent(const std::string& name);
  absl::StatusOr<std::vector<AgentRecord>> ListAgents();

  absl::StatusOr<int64_t> RequestRunNow(const std::string& job, const std::string& host);
  // The same inside the caller's transaction (the analyzer asks for a confirmation run in
  // the transaction that opens the regression). Returns the request id.
  static int64_t InsertRunRequest(pqxx::work& tx, const std::string& job, const std::string& host);
  // The job's spec read inside the caller's transaction; nullopt when there is no such job.
  static std::optional<v1::JobSpec> FindJob(pqxx::transaction_base& tx, const std::string& name);
  // Claims the undelivered run-now requests this agent may serve (its host, or any host for
  // a job in `assigned`); each request is delivered to exactly one agent.
  absl::StatusOr<std::vector<v1::RunNowRequest>> ClaimRunNow(
      const v1::AgentIdentity& agent, const std::vector<std::string>& assigned);

  // Records as missed every slot of every job, after the job was created and after `from`,
  // that nobody reported by `now` - `grace` - the job's jitter: MISSED_NO_AGENT when no known
  // agent matches the selector, else MISSED_AGENT_DOWN per matching host. Idempotent.
  // Returns how many slots were recorded.
  absl::StatusOr<int> RecordMissedSlots(absl::Time from, absl::Time now, absl::Duration grace);

 private:
  Database& db_;
};

}  // namespace devtime::store
