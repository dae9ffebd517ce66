// devtime::store — history partitioned by month (migration 6): partitions created ahead, and
// retention that drops whole old months.
//
// op_stats, run_steps and series_points are range-partitioned by the run's started_at, one
// partition per UTC month (named <table>_<YYYY>m<MM>, e.g. op_stats_2026m12), plus a DEFAULT
// partition for runs dated outside the months created. The collector creates the current
// month and `months_ahead` more at start and in housekeeping, and ingest creates the month of
// a run dated outside them before writing it (RunStore::IngestRun, issue 26), so rows reach
// the DEFAULT partition only from collectors older than that, or for a month retention dropped
// after a collector had seen it (PartitionDefaultRows moves them).
//
// Retention: a month that ended more than `retention_days` ago is dropped whole — its three
// partitions and its runs rows — unless a regression references one of its runs (last good,
// first bad or confirmation run): such a month is kept whole, so every alert keeps the runs
// and figures it was judged on. Several collectors may run this at once: each month's drop is
// one transaction under the partition advisory lock, and dropping is idempotent.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "services/collector/store/database.h"

namespace devtime::store {

struct RetentionOutcome {
  int months_dropped = 0;
  int months_kept = 0;  // older than the retention but referenced by a regression
  long long runs_deleted = 0;
};

// The month-partitioned history tables: op_stats, run_steps, series_points.
const std::vector<std::string>& HistoryTables();

// The partitions of `tables` for the UTC month a row is dated in, created on first need
// (ingest: RunStore's history tables, MonitorStore's windows) and remembered per process, so
// that the common case costs no round trip. Call it before the transaction that writes the
// rows, never inside it: devtime_ensure_month takes the partitions lock exclusively and ingest
// holds it shared, so two ingests would deadlock. A month retention drops later stays
// remembered: a row dated in it (older than the retention) lands in DEFAULT, and
// housekeeping's PartitionDefaultRows moves it.
//
// Thread-safety: safe for concurrent use.
class MonthPartitions {
 public:
  MonthPartitions(Database& db, std::vector<std::string> tables)
      : db_(db), tables_(std::move(tables)) {}

  absl::Status Ensure(absl::Time at);

 private:
  Database& db_;
  const std::vector<std::string> tables_;
  std::mutex mu_;
  std::set<absl::CivilMonth> known_;  // guarded by mu_
};

class History {
 public:
  explicit History(Database& db) : db_(db) {}

  // Creates the partitions of the month of `now` and the `months_ahead` after it (those that
  // exist are left alone); returns how many partitions were created.
  absl::StatusOr<int> EnsurePartitions(absl::Time now, int months_ahead = 2);

  // Drops the months that ended before `now - retention_days` (see above).
  absl::StatusOr<RetentionOutcome> ApplyRetention(absl::Time now, int retention_days);
  // Creates the month partitions that rows in the DEFAULT partitions (runs dated outside the
  // months created so far: imports, backfills) and runs without rows need, moving the rows
  // in, so that retention drops them with their month (issue 26). Partitions created.
  absl::StatusOr<int> PartitionDefaultRows();

 private:
  Database& db_;
};

}  // namespace devtime::store
