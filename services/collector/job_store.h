// devtime::collector — jobs, agents and job slots in PostgreSQL (schema migration 2).
//
// Shares the Store's connection pool and retry discipline; every method is one
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
#include "services/collector/store.h"

namespace devtime::collector {

struct AgentRecord {
  v1::AgentIdentity identity;
  google::protobuf::Timestamp last_seen;
};

class JobStore {
 public:
  explicit JobStore(Store& store) : store_(store) {}

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
  Store& store_;
};

}  // namespace devtime::collector
