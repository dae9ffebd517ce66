// devtime::store — the collector's run history in PostgreSQL.
//
// Owns the schema (migrations.h), a small pool of connections, and every SQL statement the
// collector runs. Speaks protobuf at its edge (it is the storage adapter) and reports
// failures as absl::Status: UNAVAILABLE when the database cannot be reached after retries
// (nothing was written; the caller may retry), ALREADY_EXISTS for a run id stored with
// different content, NOT_FOUND for unknown runs.
//
// Losing the database connection is expected (restarts, failovers): each unit of work runs
// in one transaction and is retried on a fresh connection, which is safe because ingest is
// idempotent on run_id.
//
// Thread-safety: a Store is safe for concurrent use; each call borrows its own connection.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devtime/v1/collector.pb.h"
#include "pqxx/pqxx"

namespace devtime::collector {

struct StoreOptions {
  std::string conninfo;  // libpq connection string, e.g. "host=127.0.0.1 port=5432 dbname=devtime"
  std::size_t max_connections = 8;
  int attempts = 5;                              // per unit of work
  std::chrono::milliseconds first_backoff{100};  // doubles per attempt
  std::chrono::seconds connect_timeout{5};       // per connection attempt
};

enum class IngestResult { kStored, kDuplicate };

struct IngestOutcome {
  IngestResult result;
  google::protobuf::Timestamp received_at;
};

struct RunFilter {
  std::string model;     // "" = any
  std::string workload;  // "" = any
  std::optional<google::protobuf::Timestamp> since;
  unsigned limit = 100;
};

// True when `error` means the connection was lost rather than that the statement was wrong:
// PostgreSQL shutting down or terminating the backend reports SQLSTATE 57P01/57P02 in the
// middle of a statement (even a COPY), connection failures are class 08. Such work is retried.
bool IsConnectionLoss(const pqxx::sql_error& error, const pqxx::connection_base& connection);

class Store {
 public:
  // Connects (retrying for up to `wait_for_database`) and applies pending migrations.
  static absl::StatusOr<std::unique_ptr<Store>> Open(
      const StoreOptions& options,
      std::chrono::seconds wait_for_database = std::chrono::seconds(30));

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  // Stores a validated run and its operator stats, steps and series points in one
  // transaction; returns only after COMMIT. The same run id with the same content is
  // kDuplicate (nothing written); with different content it is ALREADY_EXISTS.
  absl::StatusOr<IngestOutcome> IngestRun(const v1::RunSummary& run);

  absl::StatusOr<std::vector<v1::RunInfo>> ListRuns(const RunFilter& filter);
  absl::StatusOr<v1::GetRunResponse> GetRun(const std::string& run_id);
  absl::StatusOr<std::vector<v1::ModelInfo>> ListModels();

  // A cheap round trip (SELECT 1); false when the database is unreachable.
  bool Ping();

  int schema_version() const { return schema_version_; }

  // Runs `work` on a pooled connection, retrying on lost connections and on
  // serialization failures / deadlocks with exponential backoff. `work` must be idempotent
  // (one transaction); the collector's other stores (job_store.h) share the pool this way.
  absl::Status Run(const std::string& what,
                   const std::function<absl::Status(pqxx::connection_base&)>& work);

 private:
  class Pool;
  explicit Store(StoreOptions options);

  StoreOptions options_;
  std::unique_ptr<Pool> pool_;
  int schema_version_ = 0;
};

}  // namespace devtime::collector
