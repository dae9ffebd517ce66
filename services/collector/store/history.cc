#include "services/collector/store/history.h"

#include <string>
#include <vector>

namespace devtime::store {
namespace {

// The first day of the UTC month `offset` months after the month of `t`, as 'YYYY-MM-01'.
std::string MonthStart(absl::Time t, int offset) {
  absl::CivilMonth month = absl::ToCivilMonth(t, absl::UTCTimeZone()) + offset;
  return absl::FormatCivilTime(absl::CivilDay(month));
}

}  // namespace

const std::vector<std::string>& HistoryTables() {
  static const std::vector<std::string> tables = {"op_stats", "run_steps", "series_points"};
  return tables;
}

absl::Status MonthPartitions::Ensure(absl::Time at) {
  const absl::CivilMonth month = absl::ToCivilMonth(at, absl::UTCTimeZone());
  {
    std::lock_guard lock(mu_);
    if (known_.count(month)) return absl::OkStatus();
  }
  const std::string first_day = MonthStart(at, 0);
  absl::Status ensured =
      db_.Transact("create partitions " + first_day, [&](pqxx::work& tx) -> absl::Status {
        // Most months exist (housekeeping creates the current one and the next two): a
        // catalog lookup finds them without devtime_ensure_month's exclusive lock, which
        // would wait for every ingest in flight.
        if (tx.exec_params1("SELECT bool_and(to_regclass(t || '_' || to_char($2::date,"
                            " 'YYYY\"m\"MM')) IS NOT NULL) FROM unnest($1::text[]) t",
                            BinaryTextArray(tables_), first_day)[0]
                .as<bool>()) {
          return absl::OkStatus();
        }
        for (const std::string& table : tables_) {
          tx.exec_params("SELECT devtime_ensure_month($1, $2::date)", table, first_day);
        }
        return absl::OkStatus();
      });
  if (!ensured.ok()) return ensured;
  std::lock_guard lock(mu_);
  known_.insert(month);
  return absl::OkStatus();
}

absl::StatusOr<int> History::EnsurePartitions(absl::Time now, int months_ahead) {
  return db_.Transact("create partitions", [&](pqxx::work& tx) -> absl::StatusOr<int> {
    int created = 0;
    for (int offset = 0; offset <= months_ahead; ++offset) {
      for (const std::string& table : HistoryTables()) {
        created += tx.exec_params1("SELECT devtime_ensure_month($1, $2::date)", table,
                                   MonthStart(now, offset))[0]
                       .as<bool>();
      }
    }
    return created;
  });
}

absl::StatusOr<int> History::PartitionDefaultRows() {
  return db_.Transact("partition default rows", [&](pqxx::work& tx) -> absl::StatusOr<int> {
    return tx.exec1("SELECT devtime_partition_default_rows()")[0].as<int>();
  });
}

absl::StatusOr<RetentionOutcome> History::ApplyRetention(absl::Time now, int retention_days) {
  const std::string cutoff = absl::FormatTime(
      absl::RFC3339_full, now - absl::Hours(24) * retention_days, absl::UTCTimeZone());
  // The months whose partitions ended before the cutoff, read from op_stats' partitions (the
  // three tables are created and dropped together).
  std::vector<std::string> months;
  absl::Status listed = db_.Run("list old partitions", [&](pqxx::connection_base& c) {
    months.clear();
    pqxx::read_transaction tx{c};
    for (const auto& row : tx.exec_params(
             "SELECT to_char(m, 'YYYY-MM-DD') FROM (SELECT to_date(substring(c.relname from"
             " '(\\d{4}m\\d{2})$'), 'YYYY\"m\"MM') AS m FROM pg_inherits i"
             " JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'op_stats'::regclass"
             " AND c.relname ~ '_\\d{4}m\\d{2}$') p"
             " WHERE (m::timestamp + interval '1 month') AT TIME ZONE 'UTC' <= $1::timestamptz"
             " ORDER BY m",
             cutoff)) {
      months.push_back(row[0].as<std::string>());
    }
    return absl::OkStatus();
  });
  if (!listed.ok()) return listed;
  RetentionOutcome outcome;
  for (const std::string& month : months) {
    auto dropped =
        db_.Transact("drop month " + month, [&](pqxx::work& tx) -> absl::StatusOr<long long> {
          tx.exec("SELECT pg_advisory_xact_lock(hashtext('devtime-partitions'))");
          const std::string bounds =
              " r.started_at >= ($1::date)::timestamp AT TIME ZONE 'UTC'"
              " AND r.started_at < ($1::date + interval '1 month') AT TIME ZONE 'UTC'";
          bool referenced =
              tx.exec_params1(
                    "SELECT EXISTS (SELECT 1 FROM regressions g JOIN runs r ON r.run_id"
                    " IN (g.last_good_run_id, g.first_bad_run_id, g.confirmation_run_id)"
                    " WHERE" +
                        bounds + ")",
                    month)[0]
                  .as<bool>();
          if (referenced) return -1;
          const std::string suffix = month.substr(0, 4) + "m" + month.substr(5, 2);
          for (const std::string& table : HistoryTables()) {
            tx.exec("DROP TABLE IF EXISTS " + std::string(table) + "_" + suffix);
          }
          return tx.exec_params("DELETE FROM runs r WHERE" + bounds, month).affected_rows();
        });
    if (!dropped.ok()) return dropped.status();
    if (*dropped < 0) {
      ++outcome.months_kept;
    } else {
      ++outcome.months_dropped;
      outcome.runs_deleted += *dropped;
    }
  }
  return outcome;
}

}  // namespace devtime::store
