#include "services/collector/store/job_store.h"

#include <map>
#include <set>

#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "proto/wire/job_spec.h"
#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

using google::protobuf::util::TimeUtil;

std::optional<std::string> OptionalTime(bool present, const google::protobuf::Timestamp& t) {
  if (!present) return std::nullopt;
  return TimestampText(t);
}

const std::string kSlotColumns = "job, " + EpochMicros("slot_time") +
                                 ", host, outcome, reason, coalesce(run_id::text, ''), "
                                 "run_now, " +
                                 EpochMicros("started_at") + ", " + EpochMicros("finished_at");

v1::JobSlot SlotFromRow(const pqxx::row& row) {
  v1::JobSlot slot;
  slot.set_job(row[0].as<std::string>());
  *slot.mutable_slot_time() = FromMicros(row[1].as<long long>());
  slot.set_host(row[2].as<std::string>());
  slot.set_outcome(wire::SlotOutcomeFromName(row[3].as<std::string>()));
  slot.set_reason(row[4].as<std::string>());
  slot.set_run_id(row[5].as<std::string>());
  slot.set_run_now(row[6].as<bool>());
  if (!row[7].is_null()) *slot.mutable_started_at() = FromMicros(row[7].as<long long>());
  if (!row[8].is_null()) *slot.mutable_finished_at() = FromMicros(row[8].as<long long>());
  return slot;
}

// In the caller's transaction: listeners hear it when (and only if) the transaction commits.
void NotifyJobsChanged(pqxx::transaction_base& tx) {
  tx.exec_params("SELECT pg_notify($1, '')", std::string(kJobsChannel));
}

// A text[] literal for a $n::text[] parameter: every item quoted, quotes and backslashes escaped
// (agent names are free text), so one parameter carries any number of names.
std::string TextArray(const std::vector<std::string>& items) {
  std::string array = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    array += i ? ",\"" : "\"";
    for (char c : items[i]) {
      if (c == '"' || c == '\\') array += '\\';
      array += c;
    }
    array += '"';
  }
  return array + "}";
}

v1::JobSpec ParseSpec(const pqxx::field& field) {
  v1::JobSpec job;
  job.ParseFromString(pqxx::binarystring(field).str());
  return job;
}

}  // namespace

std::string RunNowPayload(const RunNowTarget& target) { return target.job + "\n" + target.host; }

RunNowTarget ParseRunNowPayload(const std::string& payload) {
  auto split = payload.find('\n');
  if (split == std::string::npos) return {payload, ""};
  return {payload.substr(0, split), payload.substr(split + 1)};
}

absl::StatusOr<v1::ApplyJobsResponse> JobStore::ApplyJobs(const std::vector<v1::JobSpec>& jobs,
                                                          std::size_t max_jobs) {
  v1::ApplyJobsResponse response;
  auto status = db_.Run("apply jobs", [&](pqxx::connection_base& c) {
    response.Clear();
    pqxx::work tx{c};
    // Applies take turns (the lock conflicts with itself, not with readers), so two of them
    // cannot each stay under max_jobs and together pass it.
    tx.exec("LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE");
    for (const auto& job : jobs) {
      std::string bytes = DeterministicBytes(job);
      auto existing =
          tx.exec_params("SELECT spec FROM jobs WHERE name = $1 FOR UPDATE", job.name());
      if (existing.empty()) {
        tx.exec_params("INSERT INTO jobs (name, spec, spec_json) VALUES ($1, $2, $3)", job.name(),
                       pqxx::binarystring(bytes), JsonForSql(job));
        response.add_created(job.name());
      } else if (pqxx::binarystring(existing[0][0]).str() != bytes) {
        tx.exec_params(
            "UPDATE jobs SET spec = $2, spec_json = $3, updated_at = now() WHERE name = $1",
            job.name(), pqxx::binarystring(bytes), JsonForSql(job));
        response.add_updated(job.name());
      } else {
        response.add_unchanged(job.name());
      }
    }
    if (response.created_size() > 0) {
      auto stored = tx.exec1("SELECT count(*) FROM jobs")[0].as<std::size_t>();
      if (stored > max_jobs) {
        return absl::ResourceExhaustedError(
            "jobs: " + std::to_string(stored) + " would be stored, at most " +
            std::to_string(max_jobs) + " allowed (every job must fit one agent's assignments)");
      }  // returning without commit rolls the apply back
    }
    if (response.created_size() + response.updated_size() > 0) NotifyJobsChanged(tx);
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<std::vector<v1::JobSpec>> JobStore::ListJobs(const std::string& after,
                                                            unsigned limit) {
  return db_.Transact("list jobs", [&](pqxx::work& tx) -> absl::StatusOr<std::vector<v1::JobSpec>> {
    std::vector<v1::JobSpec> jobs;
    // LIMIT NULL is no limit: a limit of 0 becomes NULL in SQL (a std::optional parameter
    // here makes GCC 12 at -O3 warn of an uninitialised read inside libpqxx).
    for (const auto& row : tx.exec_params("SELECT spec FROM jobs WHERE name > $1 ORDER BY name"
                                          " LIMIT NULLIF($2::bigint, 0)",
                                          after, limit)) {
      jobs.push_back(ParseSpec(row[0]));
    }
    return jobs;
  });
}

int64_t JobStore::InsertRunRequest(pqxx::work& tx, const std::string& job,
                                   const std::string& host) {
  int64_t id =
      tx.exec_params1("INSERT INTO run_requests (job, host) VALUES ($1, $2) RETURNING request_id",
                      job, host)[0]
          .as<int64_t>();
  tx.exec_params("SELECT pg_notify($1, $2)", std::string(kRunNowChannel),
                 RunNowPayload({job, host}));
  return id;
}

std::optional<v1::JobSpec> JobStore::FindJob(pqxx::transaction_base& tx, const std::string& name) {
  auto rows = tx.exec_params("SELECT spec FROM jobs WHERE name = $1", name);
  if (rows.empty()) return std::nullopt;
  return ParseSpec(rows[0][0]);
}

absl::StatusOr<v1::JobSpec> JobStore::GetJob(const std::string& name) {
  std::optional<v1::JobSpec> job;
  auto status = db_.Run("get job " + name, [&](pqxx::connection_base& c) {
    pqxx::read_transaction tx{c};
    job = FindJob(tx, name);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!job) return absl::NotFoundError("job '" + name + "' does not exist");
  return *job;
}

absl::Status JobStore::DeleteJob(const std::string& name) {
  bool deleted = false;
  auto status = db_.Run("delete job " + name, [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    deleted = !tx.exec_params("DELETE FROM jobs WHERE name = $1 RETURNING name", name).empty();
    if (deleted) NotifyJobsChanged(tx);
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return deleted ? absl::OkStatus() : absl::NotFoundError("job '" + name + "' does not exist");
}

absl::Status JobStore::RecordSlot(const v1::JobSlot& slot) {
  return db_.Run("record slot of job " + slot.job(), [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    std::optional<std::string> run_id;
    if (!slot.run_id().empty()) run_id = slot.run_id();
    tx.exec_params(
        "INSERT INTO job_slots (job, slot_time, host, outcome, reason, run_id, run_now, started_at,"
        " finished_at) VALUES ($1, $2, $3, $4, $5, $6::uuid, $7, $8, $9)"
        " ON CONFLICT (job, slot_time, host) DO UPDATE SET outcome = EXCLUDED.outcome,"
        " reason = EXCLUDED.reason, run_id = coalesce(EXCLUDED.run_id, job_slots.run_id),"
        " run_now = EXCLUDED.run_now,"
        " started_at = coalesce(EXCLUDED.started_at, job_slots.started_at),"
        " finished_at = coalesce(EXCLUDED.finished_at, job_slots.finished_at), updated_at = now()",
        slot.job(), TimestampText(slot.slot_time()), slot.host(),
        wire::SlotOutcomeName(slot.outcome()), slot.reason(), run_id, slot.run_now(),
        OptionalTime(slot.has_started_at(), slot.started_at()),
        OptionalTime(slot.has_finished_at(), slot.finished_at()));
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<v1::JobSlot>> JobStore::History(
    const std::string& job, unsigned limit,
    const std::optional<std::pair<long long, std::string>>& after) {
  std::optional<std::string> after_time;
  if (after) after_time = TimestampText(FromMicros(after->first));
  const std::string after_host = after ? after->second : "";
  return db_.Transact(
      "job history " + job, [&](pqxx::work& tx) -> absl::StatusOr<std::vector<v1::JobSlot>> {
        std::vector<v1::JobSlot> slots;
        auto rows =
            tx.exec_params("SELECT " + kSlotColumns +
                               " FROM job_slots WHERE job = $1 AND ($3::timestamptz IS NULL"
                               " OR slot_time < $3::timestamptz OR (slot_time = $3::timestamptz"
                               " AND host > $4)) ORDER BY slot_time DESC, host LIMIT $2",
                           job, limit, after_time, after_host);
        for (const auto& row : rows) slots.push_back(SlotFromRow(row));
        return slots;
      });
}

absl::Status JobStore::UpsertAgent(const v1::AgentIdentity& agent) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : agent.labels()) labels[key] = value;
  return db_.Run("register agent " + agent.name(), [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    tx.exec_params(
        "INSERT INTO agents (name, host, instance_type, labels, version, identity)"
        " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO UPDATE SET host = EXCLUDED.host,"
        " instance_type = EXCLUDED.instance_type, labels = EXCLUDED.labels,"
        " version = EXCLUDED.version, identity = EXCLUDED.identity, last_seen = now()",
        agent.name(), agent.host(), agent.instance_type(), labels.dump(), agent.version(),
        pqxx::binarystring(DeterministicBytes(agent)));
    tx.commit();
    return absl::OkStatus();
  });
}

absl::Status JobStore::TouchAgents(const std::vector<std::string>& names) {
  if (names.empty()) return absl::OkStatus();
  std::string array = TextArray(names);
  return db_.Run(
      "heartbeat of " + std::to_string(names.size()) + " agents", [&](pqxx::connection_base& c) {
        pqxx::work tx{c};
        tx.exec_params("UPDATE agents SET last_seen = now() WHERE name = ANY($1::text[])", array);
        tx.commit();
        return absl::OkStatus();
      });
}

absl::StatusOr<std::vector<AgentRecord>> JobStore::ListAgents() {
  std::vector<AgentRecord> agents;
  auto status = db_.Run("list agents", [&](pqxx::connection_base& c) {
    agents.clear();
    pqxx::read_transaction tx{c};
    for (const auto& row :
         tx.exec("SELECT identity, " + EpochMicros("last_seen") + " FROM agents ORDER BY name")) {
      AgentRecord& record = agents.emplace_back();
      record.identity.ParseFromString(pqxx::binarystring(row[0]).str());
      record.last_seen = FromMicros(row[1].as<long long>());
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return agents;
}

absl::StatusOr<int64_t> JobStore::RequestRunNow(const std::string& job, const std::string& host) {
  int64_t id = 0;
  auto status = db_.Run("request run-now of " + job, [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    id = InsertRunRequest(tx, job, host);
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<std::vector<v1::PendingRunNow>> JobStore::PendingRunNowOf(const std::string& job) {
  std::vector<v1::PendingRunNow> pending;
  auto status = db_.Run("read pending run-now requests of " + job, [&](pqxx::connection_base& c) {
    pending.clear();
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params("SELECT request_id, host, " + EpochMicros("requested_at") +
                                   " FROM run_requests WHERE job = $1 AND delivered_at IS NULL"
                                   " AND requested_at > now() - " +
                                   std::string(kRunNowTtlSql) + " ORDER BY request_id",
                               job);
    for (const auto& row : rows) {
      auto& request = pending.emplace_back();
      request.set_request_id(row[0].as<int64_t>());
      request.set_host(row[1].as<std::string>());
      const long long requested_us = row[2].as<long long>();
      *request.mutable_requested_at() = FromMicros(requested_us);
      *request.mutable_expires_at() =
          FromMicros(requested_us + absl::ToInt64Microseconds(kRunNowTtl));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return pending;
}

absl::StatusOr<std::vector<v1::RunNowRequest>> JobStore::ClaimRunNow(
    const v1::AgentIdentity& agent, const std::vector<std::string>& assigned,
    const std::string& token_sha256) {
  std::vector<v1::RunNowRequest> claimed;
  std::string jobs = TextArray(assigned);
  auto status = db_.Run("claim run-now requests", [&](pqxx::connection_base& c) {
    claimed.clear();
    pqxx::work tx{c};
    // SKIP LOCKED: with several collectors, each request goes to exactly one agent.
    auto rows = tx.exec_params(
        "UPDATE run_requests SET delivered_to = $1, delivered_at = now() WHERE request_id IN ("
        " SELECT request_id FROM run_requests WHERE delivered_at IS NULL"
        " AND requested_at > now() - " +
            std::string(kRunNowTtlSql) +
            " AND job = ANY($3::text[]) AND (host = '' OR host = $2)"
            // In the claiming statement, so that a token replaced before it claims nothing.
            " AND ($4::text = '' OR EXISTS (SELECT 1 FROM agent_tokens WHERE token_sha256 = $4))"
            " ORDER BY request_id FOR UPDATE SKIP LOCKED)"
            " RETURNING request_id, job, coalesce(hunt::text, '')",
        agent.name(), agent.host(), jobs, token_sha256);
    for (const auto& row : rows) {
      auto& request = claimed.emplace_back();
      // A culprit run's pins and tag (issue 25, hunt_store.h), written from this message.
      if (const std::string hunt = row[2].as<std::string>(); !hunt.empty()) {
        (void)wire::ParseJson(hunt, "run request hunt", &request);
      }
      request.set_request_id(row[0].as<int64_t>());
      request.set_job(row[1].as<std::string>());
    }
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return claimed;
}

absl::StatusOr<std::vector<RunNowTarget>> JobStore::PendingRunNow() {
  std::vector<RunNowTarget> pending;
  auto status = db_.Run("read pending run-now requests", [&](pqxx::connection_base& c) {
    pending.clear();
    pqxx::read_transaction tx{c};
    for (const auto& row : tx.exec("SELECT DISTINCT job, host FROM run_requests"
                                   " WHERE delivered_at IS NULL AND requested_at > now() - " +
                                   std::string(kRunNowTtlSql) + " ORDER BY job, host")) {
      pending.push_back({row[0].as<std::string>(), row[1].as<std::string>()});
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return pending;
}

absl::StatusOr<int> JobStore::RecordMissedSlots(absl::Time from, absl::Time now,
                                                absl::Duration grace) {
  auto jobs = ListJobs();
  if (!jobs.ok()) return jobs.status();
  auto agents = ListAgents();
  if (!agents.ok()) return agents.status();
  std::map<std::string, absl::Time> created;
  auto read = db_.Run("read job creation times", [&](pqxx::connection_base& c) {
    pqxx::read_transaction tx{c};
    for (const auto& row : tx.exec("SELECT name, " + EpochMicros("created_at") + " FROM jobs")) {
      created[row[0].as<std::string>()] = absl::FromUnixMicros(row[1].as<long long>());
    }
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  int recorded = 0;
  for (const auto& job : *jobs) {
    absl::Time until = now - grace - absl::Seconds(job.schedule().jitter_seconds());
    absl::Time start = std::max(from, created.count(job.name()) ? created[job.name()] : now);
    std::vector<const AgentRecord*> matching;
    for (const auto& agent : *agents) {
      if (wire::SelectorMatches(job.selector(), agent.identity)) matching.push_back(&agent);
    }
    std::vector<absl::Time> slots;
    for (auto slot = wire::NextSlot(job, start); slot && *slot <= until;
         slot = wire::NextSlot(job, *slot)) {
      slots.push_back(*slot);
    }
    if (slots.empty()) continue;
    int recorded_for_job = 0;
    // One transaction per job: read which slots were reported, record the others.
    auto status = db_.Run("record missed slots of " + job.name(), [&](pqxx::connection_base& c) {
      recorded_for_job = 0;
      pqxx::work tx{c};
      std::set<int64_t> reported;
      for (const auto& row : tx.exec_params(
               "SELECT DISTINCT extract(epoch from slot_time)::bigint FROM job_slots"
               " WHERE job = $1 AND slot_time BETWEEN $2 AND $3",
               job.name(),
               TimestampText(TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(slots.front()))),
               TimestampText(TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(slots.back()))))) {
        reported.insert(row[0].as<int64_t>());
      }
      for (absl::Time slot : slots) {
        if (reported.count(absl::ToUnixSeconds(slot))) continue;
        std::string when = TimestampText(TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(slot)));
        if (matching.empty()) {
          tx.exec_params(
              "INSERT INTO job_slots (job, slot_time, host, outcome, reason) VALUES ($1, $2, '', "
              "$3,"
              " 'no agent matches the job''s selector') ON CONFLICT DO NOTHING",
              job.name(), when, wire::SlotOutcomeName(v1::SLOT_OUTCOME_MISSED_NO_AGENT));
          ++recorded_for_job;
        }
        for (const AgentRecord* agent : matching) {
          tx.exec_params(
              "INSERT INTO job_slots (job, slot_time, host, outcome, reason)"
              " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
              job.name(), when, agent->identity.host(),
              wire::SlotOutcomeName(v1::SLOT_OUTCOME_MISSED_AGENT_DOWN),
              "agent " + agent->identity.name() + " did not run this slot (last seen " +
                  TimeUtil::ToString(agent->last_seen) + ")");
          ++recorded_for_job;
        }
      }
      tx.commit();
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    recorded += recorded_for_job;
  }
  return recorded;
}

}  // namespace devtime::store
