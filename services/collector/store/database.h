// devtime::store — the collector's PostgreSQL: a small pool of connections, the schema
// (migrations.h, applied by Open), and Run(), the one place where pqxx exceptions become
// absl::Status: UNAVAILABLE when the database cannot be reached after retries (nothing was
// written; the caller may retry), INTERNAL for a statement PostgreSQL refused. The stores
// built on it (run_store.h, job_store.h, regression_store.h, analysis_repository.h) run
// their SQL inside Run() and let pqxx exceptions reach it; their own errors are Status values.
//
// Losing the database connection is expected (restarts, failovers): each unit of work runs
// in one transaction and is retried on a fresh connection, which is safe because every unit
// is idempotent (ingest is idempotent on run_id).
//
// Failover: the connection string may name every node of a replicated PostgreSQL
// ("host=a,b,c port=p1,p2,p3"); each new connection then goes to whichever is primary now
// (target_session_attrs=read-write, added by PrimaryConninfo when the string names several
// hosts and no target). A dead primary's connections fail, are dropped with the idle ones,
// and the retries find the promoted standby; work that outlives the failover's first
// seconds returns UNAVAILABLE, which agents retry. A run is one transaction, so it is stored
// whole or not at all.
//
// Thread-safety: a Database is safe for concurrent use; each call borrows its own connection.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "pqxx/pqxx"

namespace devtime::store {

struct StoreOptions {
  std::string conninfo;  // libpq connection string, e.g. "host=127.0.0.1 port=5432 dbname=devtime"
  std::size_t max_connections = 8;
  int attempts = 5;                              // per unit of work
  std::chrono::milliseconds first_backoff{100};  // doubles per attempt
  std::chrono::seconds connect_timeout{5};       // per connection attempt
  // A replica for reads that may lag a little (Database::Read): "" = every read on the
  // primary. A multi-host string with target_session_attrs=prefer-standby follows failovers.
  std::string read_conninfo;
  // Reads go back to the primary while the replica is further behind than this (or
  // unreachable, or no longer streaming).
  std::chrono::milliseconds max_read_lag{5000};
  // > 0: an ingest is acknowledged only once a standby has flushed its commit, waiting this
  // long at most (then UNAVAILABLE: the agent retries, and the retry finds the run stored).
  // For a replicated PostgreSQL: pg_auto_failover turns synchronous replication off while a
  // promoted primary waits for a standby to follow it (wait_primary), and commits there
  // return at once, on one node. 0: the commit alone acknowledges (synchronous_commit's
  // guarantee, whatever it is at that moment). Needs pg_read_all_stats (pg_stat_replication).
  std::chrono::milliseconds standby_ack_wait{0};
};

// True when `error` means the connection was lost rather than that the statement was wrong:
// PostgreSQL shutting down or terminating the backend reports SQLSTATE 57P01/57P02 in the
// middle of a statement (even a COPY), connection failures are class 08. Such work is retried.
// A demoted primary that is still up answers writes with SQLSTATE 25006 (read-only
// transaction): its connection is as good as lost for a writer, and is treated so.
bool IsConnectionLoss(const pqxx::sql_error& error, const pqxx::connection_base& connection);

// `conninfo` for a connection that must reach the primary: a key=value string whose host
// names several servers ("host=a,b") gets target_session_attrs=read-write unless it names a
// target itself, so that libpq skips the standbys; with `connect_timeout` (seconds, 0: none)
// unless it names one, so that an unreachable host costs that long at most. URIs
// ("postgresql://...") are returned as they are: appending would change their meaning.
std::string PrimaryConninfo(const std::string& conninfo, int connect_timeout_seconds);

// True when `conninfo` (key=value) names more than one host.
bool NamesSeveralHosts(const std::string& conninfo);

// Arrays in PostgreSQL's binary format, for binary parameters: pqxx sends a binarystring in
// binary format, and the statement's cast ($3::float8[], $4::text[], ...) tells the server
// the type, whose element type must be the one encoded. A run's thousands of numbers then
// reach the tables without being printed here and parsed again by PostgreSQL (float8in and
// array_in were a quarter of its CPU per run). An empty vector is an empty array ('{}').
pqxx::binarystring BinaryInt4Array(const std::vector<std::int32_t>& values);
pqxx::binarystring BinaryInt8Array(const std::vector<std::int64_t>& values);
pqxx::binarystring BinaryFloat8Array(const std::vector<double>& values);
pqxx::binarystring BinaryFloat8Array(const std::vector<std::optional<double>>& values);  // NULLs
pqxx::binarystring BinaryTextArray(const std::vector<std::string>& values);  // valid UTF-8

class Database {
 public:
  // Connects (retrying for up to `wait_for_database`) and applies pending migrations.
  static absl::StatusOr<std::unique_ptr<Database>> Open(
      const StoreOptions& options,
      std::chrono::seconds wait_for_database = std::chrono::seconds(30));

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // A cheap round trip (SELECT 1); false when the database is unreachable.
  bool Ping();

  int schema_version() const { return schema_version_; }

  // Runs `work` on a pooled connection, retrying on lost connections and on
  // serialization failures / deadlocks with exponential backoff. `work` must be idempotent
  // (one transaction); every store shares the pool this way.
  absl::Status Run(const std::string& what,
                   const std::function<absl::Status(pqxx::connection_base&)>& work);

  // Run() for a read that may be served from the replica (StoreOptions::read_conninfo):
  // there when it is reachable and no further behind than max_read_lag (asked on the same
  // connection, just before), else on the primary through Run(). `work` must only read.
  absl::Status Read(const std::string& what,
                    const std::function<absl::Status(pqxx::connection_base&)>& work);

  // The replica's replication lag in seconds, asked now: 0 when it has replayed all it
  // received, +inf when it does not stream from a primary; nullopt without a replica or when
  // it cannot be reached. The last answer is also kept for read_lag_seconds().
  std::optional<double> MeasureReadLag();
  bool has_read_replica() const { return read_pool_ != nullptr; }

  // With StoreOptions::standby_ack_wait > 0, on `connection` right after it committed: waits
  // until a standby has flushed all the WAL this server had flushed (so that commit too),
  // UNAVAILABLE naming `run_id` when none has within the wait. OK at once when the option is 0.
  absl::Status AwaitStandbyFlush(pqxx::connection_base& connection, const std::string& run_id);

  // Run() with one read-write transaction: `body(pqxx::work&)` returns a Status or a
  // StatusOr; the transaction commits only when it is OK, so a refused request writes
  // nothing. Returns the body's result, or Run()'s error.
  template <typename Body>
  std::invoke_result_t<Body&, pqxx::work&> Transact(const std::string& what, Body&& body) {
    std::optional<std::invoke_result_t<Body&, pqxx::work&>> result;
    absl::Status status = Run(what, [&](pqxx::connection_base& c) {
      pqxx::work tx{c};
      result.emplace(body(tx));
      if (result->ok()) tx.commit();
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    return std::move(*result);
  }

 private:
  class Pool;
  explicit Database(StoreOptions options);

  StoreOptions options_;
  // On `connection` (to the replica): its lag in seconds (MeasureReadLag's meaning).
  static double ReplicaLag(pqxx::connection_base& connection);
  // FAILED_PRECONDITION when standby_ack_wait is set and this role cannot read standbys'
  // positions in pg_stat_replication (they read as NULL: no ack could ever be given).
  // (Before the migrations: such a role may not be able to run them either.)
  absl::Status CheckStandbyAckRole(pqxx::connection_base& connection) const;

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Pool> read_pool_;  // null without a replica
  int schema_version_ = 0;
};

}  // namespace devtime::store
