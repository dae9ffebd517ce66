// devtime::store — runs in PostgreSQL: ingest, and the reads people and dashboards make.
//
// Speaks protobuf at its edge (it is the storage adapter of the wire's RunSummary) and
// reports failures as absl::Status: UNAVAILABLE when the database cannot be reached after
// retries, ALREADY_EXISTS for a run id stored with different content, NOT_FOUND for unknown
// runs, INVALID_ARGUMENT for a malformed run id, FAILED_PRECONDITION for an ambiguous prefix.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "devtime/v1/collector.pb.h"
#include "services/collector/store/database.h"
#include "services/collector/store/history.h"
#include "services/collector/store/monitor_store.h"
#include "services/collector/store/series.h"

namespace devtime::store {

// The fewest hex digits of a run id prefix: 8, the first group, as compare prints it.
inline constexpr int kMinRunIdPrefix = 8;

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
  // Keyset paging: only runs after (started_at in microseconds, run_id) in the list's order
  // (started_at newest first, then run_id).
  std::optional<std::pair<long long, std::string>> after;
  // Issue 24: "monitor" lists neuron-monitor windows (monitor_store.h) instead.
  std::string source;
};

// A run as a person names it (collector.proto ResolveRun): a whole run id, a unique prefix
// of one or "latest", among the runs of the series identity given (each part when set).
struct RunRef {
  std::string ref;
  std::string model;                         // "" = any
  std::string workload;                      // "" = any
  std::optional<std::string> instance_type;  // nullopt = any; "" = only runs of unknown type
  std::string device_kind;                   // wire::DeviceKindName; "" = any
  std::string except_run_id;                 // latest: the newest run but this one ("" = none)
};

class RunStore {
 public:
  explicit RunStore(Database& db);
  ~RunStore();

  // Stores a validated run and its operator stats, steps and series points in one
  // transaction; returns only after COMMIT. The same run id with the same content is
  // kDuplicate (nothing written); with different content it is ALREADY_EXISTS. The month
  // partitions the run's rows need are created first (MonthPartitions), so a run of any date
  // lands in its month, never in a DEFAULT partition (issue 26).
  absl::StatusOr<IngestOutcome> IngestRun(const v1::RunSummary& run);

  absl::StatusOr<std::vector<v1::RunInfo>> ListRuns(const RunFilter& filter);
  absl::StatusOr<v1::GetRunResponse> GetRun(const std::string& run_id);
  // The one run `ref` names ("latest": the newest by start time): NOT_FOUND when none,
  // FAILED_PRECONDITION listing up to 5 when a prefix names several, INVALID_ARGUMENT for a
  // prefix shorter than kMinRunIdPrefix hex digits or not the start of a lowercase UUID.
  absl::StatusOr<v1::RunInfo> ResolveRun(const RunRef& ref);
  absl::StatusOr<std::vector<v1::ModelInfo>> ListModels();
  // neuron-monitor windows (issue 24): IngestRun and ListRuns route MONITOR runs there.
  MonitorStore& monitor() { return *monitor_; }

 private:
  absl::StatusOr<v1::RunInfo> ResolveLatest(const RunRef& ref);
  class SeriesCache;
  // `group`: SeriesKeyOf(run), the series cache's key for the run's series.
  std::vector<std::pair<std::string, long long>> WriteSeriesPoints(pqxx::work& tx,
                                                                   const v1::RunSummary& run,
                                                                   const std::string& group,
                                                                   const std::string& at,
                                                                   const SeriesValue& point);

  Database& db_;
  std::unique_ptr<SeriesCache> series_;  // ids of the series already stored
  std::unique_ptr<MonitorStore> monitor_;
  // The months of op_stats, run_steps and series_points, created before the ingest
  // transaction of a run dated in one not created yet (MonthPartitions says why).
  MonthPartitions months_;
};

}  // namespace devtime::store
